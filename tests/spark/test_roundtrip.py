"""Round trips through the paimon_py data source: append, primary key, overwrite, time travel, SQL."""

from __future__ import annotations

import datetime as dt
import decimal
import os

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from spark_helpers import intents_left, orphans  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.errors import SchemaMismatchError  # noqa: E402

ALL_TYPES = T.StructType([
    T.StructField("id", T.LongType(), False),
    T.StructField("i", T.IntegerType()),
    T.StructField("s", T.ShortType()),
    T.StructField("b", T.ByteType()),
    T.StructField("f", T.FloatType()),
    T.StructField("d", T.DoubleType()),
    T.StructField("flag", T.BooleanType()),
    T.StructField("name", T.StringType()),
    T.StructField("raw", T.BinaryType()),
    T.StructField("day", T.DateType()),
    T.StructField("ts", T.TimestampType()),
    T.StructField("ntz", T.TimestampNTZType()),
    T.StructField("amount", T.DecimalType(12, 3)),
    T.StructField("tags", T.ArrayType(T.StringType())),
])


def _rows(n):
    out = []
    for k in range(n):
        null = k % 5 == 4
        out.append((
            k, None if null else k * 7, k % 100, k % 50, float(k) / 4, k * 1.5, k % 2 == 0,
            None if null else f"name-{k}", bytes([k % 256, 1]), dt.date(2024, 1, 1) + dt.timedelta(days=k),
            dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=k),
            dt.datetime(2024, 2, 1, 8) + dt.timedelta(minutes=k), decimal.Decimal(k) / 1000,
            None if null else [f"t{k}", "x"],
        ))
    return out


def test_append_round_trip_all_types(spark, table_path, warehouse):
    df = spark.createDataFrame(_rows(50), ALL_TYPES)
    df.write.format("paimon_py").mode("append").save(table_path)

    back = spark.read.format("paimon_py").load(table_path)
    assert back.schema == ALL_TYPES  # types and nullability
    got = sorted(back.collect(), key=lambda r: r.id)
    want = sorted(df.collect(), key=lambda r: r.id)
    assert got == want
    table = impl.Catalog(warehouse).get_table("db.t")
    assert not table.is_primary_key_table
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND"]
    assert table.to_arrow().num_rows == 50
    assert orphans(table_path) == [] and intents_left(warehouse) == []


def test_second_append_and_time_travel(spark, table_path):
    spark.range(0, 10).write.format("paimon_py").mode("append").save(table_path)
    spark.range(10, 25).write.format("paimon_py").mode("append").save(table_path)
    latest = spark.read.format("paimon_py").load(table_path)
    assert sorted(r.id for r in latest.collect()) == list(range(25))
    first = spark.read.format("paimon_py").option("snapshot-id", "1").load(table_path)
    assert sorted(r.id for r in first.collect()) == list(range(10))
    with pytest.raises(Exception, match="snapshot 7"):
        spark.read.format("paimon_py").option("snapshot-id", "7").load(table_path).collect()


def test_scan_version_option_reads_the_tag_else_the_snapshot(spark, table_path, warehouse):
    """.option("scan.version", ...) (Paimon's VERSION AS OF) used to read the latest snapshot."""
    spark.range(0, 10).write.format("paimon_py").mode("append").save(table_path)
    spark.range(10, 25).write.format("paimon_py").mode("append").save(table_path)
    impl.Catalog(warehouse).get_table("db.t").create_tag("tag1", 1)
    tagged = spark.read.format("paimon_py").option("scan.version", "tag1").load(table_path)
    assert sorted(r.id for r in tagged.collect()) == list(range(10))
    by_id = spark.read.format("paimon_py").option("scan.version", "2").load(table_path)
    assert sorted(r.id for r in by_id.collect()) == list(range(25))
    with pytest.raises(Exception, match="nope"):
        spark.read.format("paimon_py").option("scan.version", "nope").load(table_path).collect()


def test_primary_key_round_trip_with_upserts_and_deletes(spark, table_path, warehouse):
    schema = "dt string, id long, v string"
    first = spark.createDataFrame([(f"d{k % 3}", k, f"a{k}") for k in range(30)], schema)
    impl.spark.write_dataframe(first, table_path, primary_keys=["dt", "id"], partition_keys=["dt"],
                               options={"bucket": "3"})
    # update every even key, delete every key divisible by 5, insert 30..34
    changes = ([(f"d{k % 3}", k, f"b{k}", "+U") for k in range(0, 30, 2) if k % 5]
               + [(f"d{k % 3}", k, None, "-D") for k in range(0, 30, 5)]
               + [(f"d{k % 3}", k, f"c{k}", "+I") for k in range(30, 35)])
    cdf = spark.createDataFrame(changes, schema + ", op string")
    res = impl.spark.write_dataframe(cdf, table_path, row_kind_column="op")
    assert len(res.snapshot_ids) == 1

    expected = {}
    for k in range(30):
        expected[(f"d{k % 3}", k)] = f"a{k}"
    for d, k, v, op in changes:
        if op == "-D":
            expected.pop((d, k), None)
        else:
            expected[(d, k)] = v
    got = {(r.dt, r.id): r.v for r in spark.read.format("paimon_py").load(table_path).collect()}
    assert got == expected
    table = impl.Catalog(warehouse).get_table("db.t")
    assert table.is_primary_key_table and table.primary_keys == ["dt", "id"]
    assert table.options.bucket == 3
    # the same rows through impl directly
    direct = table.to_arrow()
    assert {(r["dt"], r["id"]): r["v"] for r in direct.to_pylist()} == expected
    # the non-nullable key columns come back as non-nullable Spark fields
    sch = spark.read.format("paimon_py").load(table_path).schema
    assert [f.nullable for f in sch.fields] == [False, False, True]
    assert orphans(table_path) == [] and intents_left(warehouse) == []


def test_primary_key_table_created_by_df_write(spark, table_path):
    df = spark.createDataFrame([(k, k * 2) for k in range(20)], "id long, v long").coalesce(1)
    (df.write.format("paimon_py").option("primary-key", "id").option("bucket", "2")
       .mode("append").save(table_path))
    df2 = spark.createDataFrame([(k, -k) for k in range(10, 25)], "id long, v long").coalesce(1)
    df2.write.format("paimon_py").mode("append").save(table_path)
    got = {r.id: r.v for r in spark.read.format("paimon_py").load(table_path).collect()}
    assert got == {**{k: k * 2 for k in range(20)}, **{k: -k for k in range(10, 25)}}


def test_primary_key_write_from_several_tasks(spark, table_path, warehouse):
    """Several tasks may write one bucket (distinct keys); a key written by two is refused cleanly."""
    df = spark.createDataFrame([(k, k) for k in range(40)], "id long, v long")
    impl.spark.write_dataframe(df, table_path, primary_keys=["id"], options={"bucket": "2"})
    df.selectExpr("id", "-v as v").repartition(4).write.format("paimon_py").mode("append").save(table_path)
    assert {r.id: r.v for r in spark.read.format("paimon_py").load(table_path).collect()} == \
        {k: -k for k in range(40)}
    before = sorted(os.listdir(os.path.join(table_path, "bucket-0")))
    shared = spark.range(0, 40, numPartitions=2).selectExpr("id % 30 as id", "id as v")  # 0..9 from both tasks
    with pytest.raises(Exception, match="written by two Spark tasks"):
        shared.write.format("paimon_py").mode("append").save(table_path)
    assert sorted(os.listdir(os.path.join(table_path, "bucket-0"))) == before
    assert len(impl.Catalog(warehouse).get_table("db.t").snapshots()) == 2
    assert orphans(table_path) == [] and intents_left(warehouse) == []


def test_overwrite_unpartitioned_and_partitioned(spark, warehouse):
    p = os.path.join(warehouse, "db.db", "plain")
    spark.range(0, 10).write.format("paimon_py").mode("append").save(p)
    spark.range(100, 103).write.format("paimon_py").mode("overwrite").save(p)
    assert sorted(r.id for r in spark.read.format("paimon_py").load(p).collect()) == [100, 101, 102]
    t = impl.Catalog(warehouse).get_table("db.plain")
    assert [s.commit_kind.value for s in t.snapshots()] == ["APPEND", "OVERWRITE"]

    q = os.path.join(warehouse, "db.db", "parts")
    base = spark.createDataFrame([(d, k) for d in ("a", "b") for k in range(3)], "dt string, k long")
    base.write.format("paimon_py").option("partition", "dt").mode("append").save(q)
    spark.createDataFrame([("a", 9)], "dt string, k long").write.format("paimon_py").mode("overwrite").save(q)
    got = sorted((r.dt, r.k) for r in spark.read.format("paimon_py").load(q).collect())
    assert got == [("a", 9), ("b", 0), ("b", 1), ("b", 2)]  # dynamic partition overwrite, as Paimon
    assert orphans(p) == [] and orphans(q) == []


def test_sql_temporary_view(spark, table_path):
    spark.createDataFrame([(k, f"n{k}") for k in range(8)], "id long, name string") \
        .write.format("paimon_py").mode("append").save(table_path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW paimon_view USING paimon_py OPTIONS (path '{table_path}')")
    rows = spark.sql("SELECT name FROM paimon_view WHERE id >= 6 ORDER BY id").collect()
    assert [r.name for r in rows] == ["n6", "n7"]
    assert spark.sql("SELECT count(*) AS c FROM paimon_view").collect()[0].c == 8


def test_schema_mismatch_and_bad_modes_are_clear_errors(spark, table_path):
    spark.createDataFrame([(1, "a")], "id long, name string").write.format("paimon_py").mode("append") \
        .save(table_path)
    with pytest.raises(Exception, match="missing columns \\['name'\\]"):
        spark.createDataFrame([(1,)], "id long").write.format("paimon_py").mode("append").save(table_path)
    with pytest.raises(Exception, match="column 'name' is int"):
        spark.createDataFrame([(1, 2)], "id long, name int").write.format("paimon_py").mode("append") \
            .save(table_path)
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        spark.createDataFrame([(1, "a")], "id long, name string").write.format("paimon_py").mode("error") \
            .save(table_path)
    with pytest.raises(Exception, match="unknown option"):
        spark.read.format("paimon_py").option("bukcet", "2").load(table_path).collect()
    with pytest.raises(impl.spark.SparkConnectorError, match="save mode"):
        impl.spark.write_dataframe(spark.createDataFrame([(1, "a")], "id long, name string"), table_path,
                                   mode="ignore")
    with pytest.raises(SchemaMismatchError):
        impl.spark.write_dataframe(spark.createDataFrame([(1, 2.0)], "id long, name double"), table_path)
    # column order and case may differ
    spark.createDataFrame([("b", 2)], "NAME string, ID long").write.format("paimon_py").mode("append") \
        .save(table_path)
    assert sorted((r.id, r.name) for r in spark.read.format("paimon_py").load(table_path).collect()) == \
        [(1, "a"), (2, "b")]
    assert len(impl.Catalog(os.path.dirname(os.path.dirname(table_path))).get_table("db.t").snapshots()) == 2


def test_missing_table_read_names_it(spark, warehouse):
    with pytest.raises(Exception, match="db.nope"):
        spark.read.format("paimon_py").load(os.path.join(warehouse, "db.db", "nope")).collect()


def test_write_dataframe_routes_one_task_per_bucket(spark, table_path):
    df = spark.range(0, 3000).select((F.col("id") % 4).cast("string").alias("dt"), "id",
                                     (F.col("id") * 3).alias("v")).repartition(5)
    res = impl.spark.write_dataframe(df, table_path, primary_keys=["dt", "id"], partition_keys=["dt"],
                                     options={"bucket": "4"}, num_tasks=3)
    keys = [(m.partition, m.bucket) for m in res.messages]
    assert len(keys) == len(set(keys)) == 16  # 4 partitions x 4 buckets, each from exactly one task
    # the bucket each row landed in is Paimon's: impl's own writer puts the rows in the same buckets
    from impl.bucket.routing import compute_buckets
    t = impl.Catalog(os.path.dirname(os.path.dirname(table_path))).get_table("db.t")
    arrow = t.to_arrow()
    assert arrow.num_rows == 3000
    for m in res.messages:
        for f in m.new_files:
            assert f.row_count > 0
    want = compute_buckets([pa.array(range(3000), pa.int64())], [t.schema.field("id").type], 4)
    got = {}
    for s in t.new_read_builder().new_scan().plan().splits():
        rows = t.new_read_builder().new_read().to_arrow([s])
        for k in rows.column("id").to_pylist():
            got[k] = s.bucket
    assert all(got[k] == want[k] for k in range(3000))


def test_spark_write_into_a_dynamic_bucket_table_is_refused_before_any_file(spark, warehouse, table_path):
    cat = impl.Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())]),
                         primary_keys=["id"])
    t.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    before = sorted(os.listdir(table_path))
    df = spark.createDataFrame([(2, "b")], "id long, name string")
    with pytest.raises(impl.spark.SparkConnectorError, match="dynamic bucket table.*TableWrite"):
        impl.spark.write_dataframe(df, table_path)
    with pytest.raises(Exception, match="dynamic bucket table"):
        df.write.format("paimon_py").mode("append").save(table_path)
    assert sorted(os.listdir(table_path)) == before and len(t.snapshots()) == 1


def test_data_evolution_table_reads_merged_rows(spark, table_path, warehouse):
    """A data-evolution table's column-update files are read with the files they update (one
    unit per split), never alone; Spark's appends get row ids at commit."""
    cat = impl.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
                         options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    for lo in (0, 3):
        t.write_arrow(pa.table({"id": pa.array(range(lo, lo + 3), pa.int64()), "v": [f"a{i}" for i in range(lo, lo + 3)]}))
    wb = t.new_batch_write_builder()
    wb.new_commit().commit(wb.new_update().with_update_type(["v"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([1, 4], pa.int64()), "v": ["u1", "u4"]})))
    spark.createDataFrame([(6, "s6")], "id long, v string").write.format("paimon_py").mode("append").save(table_path)
    got = sorted((r.id, r.v) for r in spark.read.format("paimon_py").load(table_path).collect())
    assert got == [(0, "a0"), (1, "u1"), (2, "a2"), (3, "a3"), (4, "u4"), (5, "a5"), (6, "s6")]
    rb = cat.get_table("db.t").new_read_builder().with_projection(["_ROW_ID", "id"])
    assert sorted((r["_ROW_ID"], r["id"]) for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()) \
        == [(i, i) for i in range(7)]


def test_index_files_the_spark_jobs_write_survive_their_cleanup(spark, table_path, warehouse):
    """A write's cleanup keeps every file its committed messages name: deletion-vector index files
    (the writer's and the compaction job's) and data files' separate ``.index`` files. It once kept
    data file names only, so the snapshot named deleted vectors (CorruptMetadataError on the next
    read or compaction)."""
    from impl.store.core import bucket_index_files

    opts = {"bucket": "2", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "v",
            "file-index.in-manifest-threshold": "1 b"}

    def rows(lo, hi):
        return spark.range(lo, hi).select("id", (F.col("id") * 2).alias("v"))

    impl.spark.write_dataframe(rows(0, 2000), table_path, primary_keys=["id"], options=opts)
    impl.spark.write_dataframe(rows(100, 600), table_path)
    impl.spark.compact(spark, table_path, full=True)
    impl.spark.write_dataframe(rows(300, 900).select("id", (F.col("v") + 1).alias("v")), table_path)
    t = impl.Catalog(warehouse).get_table("db.t")
    latest = t.latest_snapshot()
    vectors = [f for fs in bucket_index_files(t.core, latest).values() for f in fs]
    assert vectors, "the writes should have produced deletion vectors"
    assert all(os.path.exists(t.core.paths.index_file_path(f.file_name)) for f in vectors)
    extra = {n for s in t.new_read_builder().new_scan().plan().splits() for f in s.files for n in f.extra_files}
    assert extra, "the bloom filters should sit in .index files beside their data files"
    assert extra <= {n for _, _, names in os.walk(table_path) for n in names}
    got = sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist())
    assert got == [(i, 2 * i + 1 if 300 <= i < 900 else 2 * i) for i in range(2000)]
    impl.spark.compact(spark, table_path, full=True)  # reads every vector the snapshot names
    assert sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == got

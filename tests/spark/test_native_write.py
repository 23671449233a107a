"""``write_dataframe`` through Spark's own Parquet writer (impl/spark/native_write.py): the JVM
writes the files, impl places them, gathers their metadata and commits once.

The same rows written by both writers give the same rows, layout and column statistics; impl,
pypaimon 2.1.0 and Paimon Java read what the native path wrote; failed tasks and bad input leave
nothing behind.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from spark_helpers import data_files, intents_left, orphans  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.datafile.stats import FileStats  # noqa: E402
from impl.errors import SchemaMismatchError  # noqa: E402
from impl.mergetree.kv import KeyCodec  # noqa: E402
from impl.spark.errors import NativeWriteUnsupportedError  # noqa: E402

SCHEMA = T.StructType([
    T.StructField("id", T.LongType(), False), T.StructField("b", T.ByteType()), T.StructField("s", T.StringType()),
    T.StructField("d", T.DecimalType(10, 2)), T.StructField("day", T.DateType()), T.StructField("f", T.DoubleType()),
    T.StructField("bin", T.BinaryType()), T.StructField("ts", T.TimestampNTZType()), T.StructField("p", T.StringType()),
])
BUCKETED = {"partition_keys": ["p"], "options": {"bucket": "3", "bucket-key": "id"}}


def _rows(n=240):
    return [(i, i % 100 - 50, None if i % 7 == 0 else f"name-{i}-a-string-longer-than-sixteen",
             decimal.Decimal(i) / 4, dt.date(2024, 1, 1) + dt.timedelta(days=i % 30), i * 0.5 - 3,
             bytes([i % 256]), dt.datetime(2024, 1, 1, 0, 0, i % 60, 123456), f"p{i % 3}")
            for i in range(n)]


def _read(warehouse, name):
    rows = impl.Catalog(warehouse).get_table(name).to_arrow().to_pylist()
    return sorted((tuple(r[c] for c in SCHEMA.names) for r in rows), key=lambda r: r[0])


def _files_by_bucket(warehouse, name):
    t = impl.Catalog(warehouse).get_table(name)
    fields = {f.name: f for f in t.schema.fields}
    out = {}
    for s in t.new_read_builder().new_scan().plan().splits():
        for m in s.files:
            stats = FileStats.of_values(m, fields, t.schema.field_names)
            out.setdefault((s.partition_path, s.bucket), []).append(
                (m.row_count, m.level, m.min_sequence_number, m.max_sequence_number,
                 [stats.get(n) for n in t.schema.field_names]))
    return out


def _staging_left(warehouse):
    root = os.path.join(warehouse, ".paimon_py_spark", "staging")
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


def test_native_write_matches_the_python_writer(spark, warehouse):
    """Bucketed, partitioned: one file per (partition, bucket) from
    either writer, with the same rows, layout, file names and statistics."""
    df = spark.createDataFrame(_rows(), SCHEMA)
    native = impl.spark.write_dataframe(df, os.path.join(warehouse, "db.db", "native"), writer="spark", **BUCKETED)
    impl.spark.write_dataframe(df, os.path.join(warehouse, "db.db", "py"), writer="python", **BUCKETED)
    assert native.snapshot_ids == [1]
    expected = sorted(_rows(), key=lambda r: r[0])
    assert _read(warehouse, "db.native") == _read(warehouse, "db.py") == expected
    ours, theirs = _files_by_bucket(warehouse, "db.native"), _files_by_bucket(warehouse, "db.py")
    assert ours == theirs and len(ours) == 9  # 3 partitions x 3 buckets
    table_dir = os.path.join(warehouse, "db.db", "native")
    names = data_files(table_dir)
    assert all(re.fullmatch(r"p=[^/]+/bucket-[0-2]/data-[0-9a-f-]{36}-\d+\.parquet", n) for n in names), names
    assert orphans(table_dir) == [] and intents_left(warehouse) == [] and _staging_left(warehouse) == []


def test_primary_key_write_matches_the_python_writer(spark, warehouse):
    """Primary-key table, partitioned, 3 buckets: a first write, then upserts and deletes by row
    kind; the same rows as impl's writers give, each file one sorted run with its key and
    sequence ranges, the second write's sequence numbers after the first's."""
    first = spark.createDataFrame(_rows(), SCHEMA).drop("bin")
    upserts = spark.createDataFrame(
        [(k, 1, "new", None, None, -1.0, None, f"p{k % 3}", "+U") for k in range(0, 240, 7)]
        + [(k, None, None, None, None, None, None, f"p{k % 3}", "-D") for k in range(1, 240, 10)],
        "id long, b tinyint, s string, d decimal(10,2), day date, f double, ts timestamp_ntz, p string, op string")
    for writer in ("spark", "python"):
        path = os.path.join(warehouse, "db.db", writer)
        impl.spark.write_dataframe(first, path, writer=writer, primary_keys=["p", "id"], partition_keys=["p"],
                                   options={"bucket": "3"})
        impl.spark.write_dataframe(upserts, path, writer=writer, row_kind_column="op")
    names = [n for n in SCHEMA.names if n != "bin"]
    ours, theirs = (sorted(tuple(r[c] for c in names) for r in
                           impl.Catalog(warehouse).get_table(f"db.{w}").to_arrow().to_pylist())
                    for w in ("spark", "python"))
    assert ours == theirs and len(ours) == 240 - 24
    t = impl.Catalog(warehouse).get_table("db.spark")
    table_dir = os.path.join(warehouse, "db.db", "spark")
    firsts, seconds = [], []
    for s in t.new_read_builder().new_scan().plan().splits():
        metas = sorted(s.files, key=lambda m: m.min_sequence_number)
        assert len(metas) == 2 and all(m.level == 0 for m in metas)
        firsts.append(metas[0])
        seconds.append(metas[1])
        for m in metas:
            keys = pq.read_table(os.path.join(table_dir, s.partition_path, f"bucket-{s.bucket}", m.file_name),
                                 columns=["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND"])
            ids = keys.column("_KEY_id").to_pylist()
            assert ids == sorted(set(ids)) and len(ids) == m.row_count  # one sorted run, one row per key
            codec = KeyCodec([t.schema.field("id").type])
            assert (m.min_key, m.max_key) == (codec.encode([ids[0]]), codec.encode([ids[-1]]))
            assert keys.schema.field("_SEQUENCE_NUMBER").type == pa.int64()  # BIGINT, as Paimon Java reads it
            seqs = keys.column("_SEQUENCE_NUMBER").to_pylist()
            assert (min(seqs), max(seqs)) == (m.min_sequence_number, m.max_sequence_number)
            assert m.delete_row_count == keys.column("_VALUE_KIND").to_pylist().count(3)
    assert max(m.max_sequence_number for m in firsts) < min(m.min_sequence_number for m in seconds)
    assert sum(m.delete_row_count for m in seconds) == 24 and orphans(table_dir) == []


def test_thin_mode_primary_key_write_matches_the_python_writer(spark, warehouse):
    """``data-file.thin-mode``: Spark's files lack the ``_KEY_`` copies as impl's writer's do,
    and hold the same rows with the same key ranges and statistics, file by file; a Spark
    compaction job (impl's writers in Spark tasks) reads them and writes thin files too."""
    first = spark.createDataFrame(_rows(), SCHEMA).drop("bin")
    upserts = spark.createDataFrame(
        [(k, 1, "new", None, None, -1.0, None, f"p{k % 3}", "+U") for k in range(0, 240, 7)],
        "id long, b tinyint, s string, d decimal(10,2), day date, f double, ts timestamp_ntz, p string, op string")
    opts = {"bucket": "3", "data-file.thin-mode": "true"}
    for writer in ("spark", "python"):
        path = os.path.join(warehouse, "db.db", f"thin_{writer}")
        impl.spark.write_dataframe(first, path, writer=writer, primary_keys=["p", "id"], partition_keys=["p"],
                                   options=opts)
        impl.spark.write_dataframe(upserts, path, writer=writer, row_kind_column="op")
    names = [n for n in SCHEMA.names if n != "bin"]
    tables = {w: impl.Catalog(warehouse).get_table(f"db.thin_{w}") for w in ("spark", "python")}
    ours, theirs = (sorted(tuple(r[c] for c in names) for r in tables[w].to_arrow().to_pylist())
                    for w in ("spark", "python"))
    assert ours == theirs and len(ours) == 240

    def metas(t):
        return sorted((s.partition_path, s.bucket, m.row_count, m.min_key, m.max_key, m.key_stats)
                      for s in t.new_read_builder().new_scan().plan().splits() for m in s.files)

    assert metas(tables["spark"]) == metas(tables["python"])
    table_dir = os.path.join(warehouse, "db.db", "thin_spark")
    impl.spark.compact(spark, table_dir, full=True)
    compacted = impl.Catalog(warehouse).get_table("db.thin_spark")
    assert compacted.latest_snapshot().commit_kind.value == "COMPACT"
    assert sorted(tuple(r[c] for c in names) for r in compacted.to_arrow().to_pylist()) == theirs
    files = data_files(table_dir)
    assert files
    for name in files:
        columns = pq.read_schema(os.path.join(table_dir, name)).names
        assert columns[:2] == ["_SEQUENCE_NUMBER", "_VALUE_KIND"] and "id" in columns, (name, columns)
        assert not [c for c in columns if c.startswith("_KEY_")]


def test_last_row_of_a_key_wins(spark, warehouse, table_path):
    """Several rows of one key in one write: the last in the DataFrame's order is kept, as
    impl's writers keep the last row written."""
    rows = [(k % 5, f"v{k}") for k in range(40)]
    df = spark.createDataFrame(rows, "id long, v string")  # in order across its partitions
    impl.spark.write_dataframe(df, table_path, writer="spark", primary_keys=["id"], options={"bucket": "2"})
    got = {r["id"]: r["v"] for r in impl.Catalog(warehouse).get_table("db.t").to_arrow().to_pylist()}
    assert got == {k: f"v{35 + k}" for k in range(5)}


def test_pypaimon_and_paimon_java_read_what_the_native_path_wrote(spark, warehouse, tmp_path):
    from pypaimon_env import READ_TABLE, pypaimon_python, run_pypaimon

    df = spark.createDataFrame(_rows(60), SCHEMA).drop("bin", "ts")  # the types every reader's JSON carries
    impl.spark.write_dataframe(df, os.path.join(warehouse, "db.db", "t"), writer="spark", partition_keys=["p"])
    impl.spark.write_dataframe(df.where("id < 10"), os.path.join(warehouse, "db.db", "t"), writer="spark")
    pk = os.path.join(warehouse, "db.db", "pk")
    impl.spark.write_dataframe(df, pk, writer="spark", primary_keys=["p", "id"], partition_keys=["p"],
                               options={"bucket": "2"})
    impl.spark.write_dataframe(df.where("id % 4 = 0").withColumn("s", F.lit("new")).withColumn(
        "op", F.when(F.col("id") % 8 == 0, "-D").otherwise("+U")), pk, writer="spark", row_kind_column="op")
    names = [n for n in SCHEMA.names if n not in ("bin", "ts")]

    def norm(rows):
        return sorted(tuple(None if r[c] is None else str(r[c]) for c in names) for r in rows)

    pypaimon_python()
    java = _java()
    try:
        for name, count in (("db.t", 70), ("db.pk", 60 - 8)):
            ours = impl.Catalog(warehouse).get_table(name).to_arrow().to_pylist()
            assert len(ours) == count, name
            assert norm(run_pypaimon(READ_TABLE, warehouse=warehouse, table=name, sort_by=["id"])) == norm(ours)
            if java is not None:
                out = tmp_path / f"{name}.parquet"
                java.call("read", warehouse=warehouse, table=name, out=str(out))
                assert norm(pq.read_table(out).to_pylist()) == norm(ours), name
    finally:
        if java is not None:
            java.close()


def _java():
    """Paimon Java's harness server (None when no JDK / Maven is here: the Java reads are skipped)."""
    from paimon_java import JavaServer, harness_classpath, tools_missing

    return None if tools_missing() else JavaServer(harness_classpath())


def test_bad_input_is_refused_before_any_task(spark, warehouse, table_path):
    df = spark.createDataFrame(_rows(20), SCHEMA)
    impl.spark.write_dataframe(df, table_path, writer="spark", **BUCKETED)
    wrong = df.withColumn("d", F.col("d").cast("string"))
    with pytest.raises(SchemaMismatchError, match="'d'"):
        impl.spark.write_dataframe(wrong, table_path, writer="spark")
    pk = os.path.join(warehouse, "db.db", "pk")
    partial = {"bucket": "2", "merge-engine": "partial-update"}
    with pytest.raises(NativeWriteUnsupportedError, match="merge-engine 'partial-update'"):
        impl.spark.write_dataframe(df, pk, writer="spark", primary_keys=["id"], options=partial)
    impl.spark.write_dataframe(df, pk, primary_keys=["id"], options=partial)  # auto: impl's writers
    assert len(impl.Catalog(warehouse).get_table("db.pk").to_arrow()) == 20
    assert len(impl.Catalog(warehouse).get_table("db.t").to_arrow()) == 20  # one snapshot, the first write's
    assert _staging_left(warehouse) == [] and intents_left(warehouse) == []


def test_failed_tasks_leave_nothing(spark, warehouse, table_path):
    """A task attempt that fails halfway is retried: its files never reach the table. A job
    that fails (a task that dies in every attempt) commits nothing and leaves nothing."""
    from pyspark import TaskContext

    def flaky(i):
        tc = TaskContext.get()
        if tc.partitionId() == 0 and tc.attemptNumber() == 0 and i > 30:
            raise RuntimeError("first attempt dies")
        return i

    df = spark.createDataFrame(_rows(120), SCHEMA).repartition(2)
    bumpy = df.withColumn("id", F.udf(flaky, "long")(F.col("id")))
    impl.spark.write_dataframe(bumpy, table_path, writer="spark", **BUCKETED)
    assert _read(warehouse, "db.t") == sorted(_rows(120), key=lambda r: r[0])
    assert orphans(table_path) == [] and _staging_left(warehouse) == []

    before = data_files(table_path)

    def doomed(i):
        if i == 7:
            raise RuntimeError("every attempt dies")
        return i

    failing = df.withColumn("id", F.udf(doomed, "long")(F.col("id")))
    with pytest.raises(Exception, match="every attempt dies"):
        impl.spark.write_dataframe(failing, table_path, writer="spark")
    assert data_files(table_path) == before and orphans(table_path) == []
    assert _staging_left(warehouse) == [] and intents_left(warehouse) == []
    assert impl.Catalog(warehouse).get_table("db.t").snapshot_manager().latest_snapshot_id() == 1


@pytest.mark.parametrize("key_type", ["bigint", "int"])
def test_bucket_expression_is_paimons_bucket_function(spark, warehouse, key_type):
    """The JVM-side bucket of a one-field INT / BIGINT key equals impl's (Paimon's) bucket."""
    import numpy as np

    from impl.bucket.routing import compute_buckets
    from impl.spark.native_write import with_bucket_expression

    rng = np.random.default_rng(7)
    edges = [0, 1, -1, 255, 256, 2**31 - 1, -2**31] + ([2**63 - 1, -2**63, 2**32] if key_type == "bigint" else [])
    at = pa.int64() if key_type == "bigint" else pa.int32()
    info = np.iinfo(np.int64 if key_type == "bigint" else np.int32)
    keys = pa.array(np.concatenate([rng.integers(info.min, info.max, 500), edges]).astype(at.to_pandas_dtype()), at)
    cat = impl.Catalog(warehouse)
    cat.create_database("db")
    df = spark.createDataFrame(pa.table({"k": keys}).to_pandas())
    for buckets in (1, 4, 7):
        t = cat.create_table(f"db.t{buckets}", schema=pa.schema([pa.field("k", at, nullable=False), ("v", pa.string())]),
                             primary_keys=["k"], options={"bucket": str(buckets)})
        got = [r.b for r in with_bucket_expression(df, t, [("k", "k"), ("v", "v")], "b").select("b").collect()]
        assert got == list(compute_buckets([keys], [t.schema.field("k").type], buckets)), buckets

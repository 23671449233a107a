"""``impl.spark.read_table``: Spark's own Parquet reader where no merge is needed, the Python
reader for the rest, and the same rows as impl's own read in every case."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import pyarrow as pa  # noqa: E402

import impl  # noqa: E402
from impl.datafile.meta import DataFileMeta  # noqa: E402
from impl.options.values import MergeEngine  # noqa: E402
from impl.read.scan import DataSplit  # noqa: E402
from impl.spark.fast_read import _no_merge_bucket, plan_native  # noqa: E402
from impl.spark.only_files import decode_only_files, encode_only_files, restrict_splits  # noqa: E402

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int32())])


def _batch(lo: int, hi: int, offset: int = 0) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({"dt": [("a", "b", "c")[i % 3] for i in ids], "id": pa.array(ids, pa.int64()),
                     "v": pa.array([None if i % 7 == 3 else i + offset for i in ids], pa.int32())}, schema=SCHEMA)


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _truth(table, columns=None, keep=None) -> list[tuple]:
    rows = table.to_arrow().to_pylist()
    rows = [r for r in rows if keep is None or keep(r)]
    return sorted((tuple(r[c] for c in (columns or table.schema.field_names)) for r in rows), key=repr)


def _plan(table):
    plan = table.new_read_builder().new_scan().plan()
    return plan_native(table, plan.splits(), plan.snapshot_id)


@pytest.fixture
def catalog(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _path(cat, name: str) -> str:
    return os.path.join(cat.warehouse, "db.db", name)


def test_no_merge_rule_is_paimons_raw_convertible():
    one = DataFileMeta("f1", 10, 5, level=5, delete_row_count=0)
    two = DataFileMeta("f2", 10, 5, level=5, delete_row_count=0)
    assert _no_merge_bucket([one, two], MergeEngine.DEDUPLICATE)
    assert _no_merge_bucket([one], MergeEngine.FIRST_ROW)
    assert not _no_merge_bucket([one, two.upgrade(4)], MergeEngine.DEDUPLICATE)  # two runs
    assert not _no_merge_bucket([one.upgrade(0)], MergeEngine.DEDUPLICATE)  # level 0: may hold a key twice
    assert not _no_merge_bucket([one, DataFileMeta("f3", 1, 1, level=5, delete_row_count=1)], MergeEngine.DEDUPLICATE)
    assert not _no_merge_bucket([DataFileMeta("f4", 1, 1, level=5, delete_row_count=None)], MergeEngine.DEDUPLICATE)
    assert not _no_merge_bucket([one], MergeEngine.AGGREGATION)
    assert not _no_merge_bucket([one], MergeEngine.PARTIAL_UPDATE)


def test_only_files_option_keeps_every_named_file():
    f = [DataFileMeta(f"f{i}", 10, 5) for i in range(5)]
    # an append bucket planned as two splits: both halves of it stay named
    left = [DataSplit(1, b"p", 0, 1, "dt=a", (f[0], f[1])), DataSplit(1, b"p", 0, 1, "dt=a", (f[2],)),
            DataSplit(1, b"q", 1, 1, "dt=b", (f[3],))]
    only = decode_only_files(encode_only_files(left))
    plan = [DataSplit(1, b"p", 0, 1, "dt=a", (f[0], f[1], f[4])), DataSplit(1, b"p", 0, 1, "dt=a", (f[2],)),
            DataSplit(1, b"q", 1, 1, "dt=b", (f[3], f[4])), DataSplit(1, b"r", 0, 1, "dt=c", (f[4],))]
    got = restrict_splits(plan, only)
    assert [(s.partition, [x.file_name for x in s.files]) for s in got] == \
        [(b"p", ["f0", "f1"]), (b"p", ["f2"]), (b"q", ["f3"])]
    assert restrict_splits(plan, None) == plan
    with pytest.raises(impl.spark.SparkConnectorError, match="malformed"):
        decode_only_files("[[1]]")


def test_partitioned_append_table(spark, catalog):
    t = catalog.create_table("db.app", schema=SCHEMA, partition_keys=["dt"])
    empty = impl.spark.read_table(spark, _path(catalog, "app"))  # no snapshot yet
    assert empty.columns == ["dt", "id", "v"] and empty.count() == 0
    for lo in (0, 30, 60):
        t.write_arrow(_batch(lo, lo + 30))
    t = catalog.get_table("db.app")
    cut = _plan(t)
    assert cut.native_files >= 9 and not cut.slow
    path = _path(catalog, "app")
    assert _rows(impl.spark.read_table(spark, path)) == _truth(t)
    got = impl.spark.read_table(spark, path, columns=["v", "id"], filter="dt = 'b' and id >= 40")
    assert got.columns == ["v", "id"]
    assert _rows(got) == _truth(t, ["v", "id"], lambda r: r["dt"] == "b" and r["id"] >= 40)
    from pyspark.sql import functions as F

    got = impl.spark.read_table(spark, path, filter=F.col("v").isNull())
    assert _rows(got) == _truth(t, keep=lambda r: r["v"] is None)
    with pytest.raises(impl.spark.SparkConnectorError, match="no column"):
        impl.spark.read_table(spark, path, columns=["nope"])


def test_deletion_vector_table(spark, catalog):
    t = catalog.create_table("db.dv", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(_batch(0, 60))
    t.compact(full=True)
    t.write_arrow(_batch(10, 30, offset=1000))
    t.compact()  # marks the replaced rows in deletion vectors
    t = catalog.get_table("db.dv")
    cut = _plan(t)
    assert not cut.slow and any(g.deletions for g in cut.native)
    path = _path(catalog, "dv")
    assert _rows(impl.spark.read_table(spark, path)) == _truth(t)
    assert _rows(impl.spark.read_table(spark, path, filter="id < 20")) == _truth(t, keep=lambda r: r["id"] < 20)
    # two uses of one DataFrame, one filtered (the shapes of tests/spark/test_query_shapes.py)
    df = impl.spark.read_table(spark, path)
    assert df.union(df.filter("id < 5")).count() == len(_truth(t)) + len(_truth(t, keep=lambda r: r["id"] < 5))
    joined = df.alias("a").join(df.filter("dt = 'b'").alias("b"), "id").select("id", "a.v", "b.dt")
    assert _rows(joined) == _truth(t, ["id", "v", "dt"], lambda r: r["dt"] == "b")


def test_compacted_and_mixed_primary_key_table(spark, catalog):
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write_arrow(_batch(0, 60))
    t.write_arrow(_batch(0, 20, offset=500))
    t.compact(full=True)
    path = _path(catalog, "pk")
    compacted = catalog.get_table("db.pk")
    first = compacted.snapshot_manager().latest_snapshot_id()
    cut = _plan(compacted)
    assert cut.native_files and not cut.slow
    compacted_rows = _truth(compacted)
    assert _rows(impl.spark.read_table(spark, path)) == compacted_rows
    # one more write into partition 'a' only: its buckets need a merge, the others do not
    extra = _batch(0, 12, offset=900)
    t.write_arrow(extra.filter(pa.compute.equal(extra.column("dt"), "a")))
    mixed = catalog.get_table("db.pk")
    cut = _plan(mixed)
    assert cut.native_files and cut.slow and {s.partition_path for s in cut.slow} == {"dt=a"}
    assert _rows(impl.spark.read_table(spark, path)) == _truth(mixed)
    assert _rows(impl.spark.read_table(spark, path, filter="dt <> 'b'", columns=["id", "v"])) == \
        _truth(mixed, ["id", "v"], lambda r: r["dt"] != "b")
    # time travel: the compacted snapshot, every bucket native again
    assert _rows(impl.spark.read_table(spark, path, options={"snapshot-id": str(first)})) == compacted_rows


def test_schema_evolution_and_other_formats(spark, catalog):
    t = catalog.create_table("db.evo", schema=SCHEMA, partition_keys=["dt"])
    t.write_arrow(_batch(0, 30))
    catalog.alter_table("db.evo", [impl.SchemaChange.rename_column("v", "w"),
                                   impl.SchemaChange.update_column_type("w", pa.int64()),
                                   impl.SchemaChange.add_column("n", pa.string())])
    t = catalog.get_table("db.evo")
    t.write_arrow(pa.table({"dt": ["a", "b"], "id": pa.array([100, 101], pa.int64()),
                            "w": pa.array([1 << 40, None], pa.int64()), "n": ["x", None]}))
    t = catalog.get_table("db.evo")
    cut = _plan(t)
    assert not cut.slow and {g.schema_id for g in cut.native} == {0, t.schema.id}
    path = _path(catalog, "evo")
    df = impl.spark.read_table(spark, path)
    assert df.columns == ["dt", "id", "w", "n"] and dict(df.dtypes)["w"] == "bigint"
    assert _rows(df) == _truth(t)
    assert _rows(impl.spark.read_table(spark, path, filter="w > 20")) == \
        _truth(t, keep=lambda r: r["w"] is not None and r["w"] > 20)
    # ORC files are left to the Python reader, in the same read as Parquet ones; a tiny split
    # size plans the bucket's files as one split each: the Python reader gets both ORC ones
    catalog.create_table("db.orc", schema=SCHEMA, options={"file.format": "orc", "source.split.target-size": "1b"})
    o = catalog.get_table("db.orc")
    o.write_arrow(_batch(0, 20))
    o.write_arrow(_batch(40, 45))
    o.copy({"file.format": "parquet"}).write_arrow(_batch(20, 30))
    o = catalog.get_table("db.orc")
    cut = _plan(o)
    assert cut.native_files == 1 and len(cut.slow) == 2
    assert _rows(impl.spark.read_table(spark, _path(catalog, "orc"))) == _truth(o)


def _dv_layout_table(catalog, name: str):
    """A deletion-vector table whose level >= 1 files hold: some rows deleted (partition a, in
    both buckets), none deleted (partition b); partition c's rows all deleted (its files dropped
    by the compaction: a file whose vector deletes every row is in the test below)."""
    t = catalog.create_table(f"db.{name}", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(_batch(0, 90))
    t.compact(full=True)
    base = _batch(0, 90)
    a_rows = base.filter(pa.compute.equal(base["dt"], "a")).slice(5, 12)  # 12 keys of partition a
    a_rows = a_rows.set_column(2, "v", pa.array([None, *range(11)], pa.int32()))
    c_rows = base.filter(pa.compute.equal(base["dt"], "c"))  # every key of partition c, deleted
    builder = t.new_batch_write_builder()
    w = builder.new_write()
    w.write_arrow(a_rows)
    w.write_arrow(c_rows, row_kinds=[3] * c_rows.num_rows)
    builder.new_commit().commit(w.prepare_commit())
    w.close()
    t.compact()  # the replaced and deleted rows marked in deletion vectors
    return catalog.get_table(f"db.{name}")


def test_deletion_vectors_filtered_in_the_scan(spark, catalog):
    import numpy as np

    t = _dv_layout_table(catalog, "dvscan")
    cut = _plan(t)
    assert not cut.slow
    deletions = {n: d for g in cut.native for n, d in g.deletions.items()}
    sizes = {f.file_name: f.row_count for s in t.new_read_builder().new_scan().plan().splits() for f in s.files}
    assert len(deletions) >= 2  # several files carry vectors
    assert all(0 < len(d) < sizes[n] for n, d in deletions.items())
    assert any(n not in deletions for n in sizes)  # and some file none
    path = _path(catalog, "dvscan")
    df = impl.spark.read_table(spark, path)
    assert _rows(df) == _truth(t)
    assert not any(r[0] == "c" for r in _rows(df))
    # the vectors are applied by a filter in the scan's own stage, not by a join
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "Join" not in plan and "shiftright" in plan, plan
    assert _rows(impl.spark.read_table(spark, path, filter="id < 20 and v is not null")) == \
        _truth(t, keep=lambda r: r["id"] < 20 and r["v"] is not None)
    # the packed bitmap deletes exactly the positions it was given
    from impl.spark.dv_filter import is_deleted, pack_positions

    positions = [np.array([0, 63, 64, 200]), np.array([], np.int64), np.arange(0, 130, 3)]
    words, offsets, counts = pack_positions(positions)
    for p, off, n in zip(positions, offsets, counts, strict=True):
        got = np.flatnonzero(is_deleted(words, int(off), int(n), np.arange(300)))
        assert got.tolist() == sorted(p.tolist())


def test_deletion_vector_filter_over_many_files(spark):
    """More files than one search tree holds: several trees, AND-ed; each row tested against its
    own file's bitmap (a frame standing in for the tagged scan)."""
    import numpy as np
    from pyspark.sql import functions as F

    from impl.spark.dv_filter import FILES_PER_TREE, drop_deleted

    files = FILES_PER_TREE * 2 + 3
    names = [f"data-{i:04d}.parquet" for i in range(files)]
    rng = np.random.default_rng(7)
    deletions = {n: np.unique(rng.integers(0, 100, 5)) for n in names[:-1]}  # the last file: none
    deletions[names[1]] = np.arange(100)  # every row of a file deleted
    df = spark.range(files * 100).select((F.col("id") % 100).alias("i"), (F.col("id") / 100).cast("int").alias("f"))
    df = df.select(F.col("i"), F.format_string("data-%04d.parquet", F.col("f")).alias("f"))
    kept = drop_deleted(spark, df, deletions, file_name_column="f", row_index_column="i")
    got = sorted((r.f, r.i) for r in kept.collect())
    want = sorted((n, i) for n in names for i in range(100) if i not in set(deletions.get(n, np.array([])).tolist()))
    assert got == want
    # a bitmap beyond the bound: declined (read_table then takes its broadcast join)
    assert drop_deleted(spark, df, deletions, file_name_column="f", row_index_column="i", max_words=100) is None

"""``impl.spark.compact`` of append tables through Spark's own Parquet reader and writer
(impl/spark/native_compact.py): impl picks the files, Spark reads them (deletion vectors applied)
and rewrites them in order, one COMPACT snapshot; impl, pypaimon and Paimon Java read the rows
the table held before. File rolling at ``target-file-size`` on the native write paths.
"""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from spark_helpers import data_files, intents_left, orphans  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
import impl.spark.compaction as compaction  # noqa: E402
from impl.datafile.meta import FileSource  # noqa: E402
from impl.spark.errors import NativeWriteUnsupportedError  # noqa: E402
from impl.store.core import bucket_index_files  # noqa: E402

SCHEMA = "id long, name string, score double, dt string"


def _rows(lo, hi):
    return [(i, f"name-{i}", i * 0.25, f"d{i % 2}") for i in range(lo, hi)]


def _fill(spark, path, **kw):
    """Four small writes (the first creates the table), then a DELETE as deletion vectors."""
    for k in range(4):
        impl.spark.write_dataframe(spark.createDataFrame(_rows(k * 50, k * 50 + 50), SCHEMA).repartition(2), path, **kw)
        kw = {}
    impl.spark.delete(spark, path, "id % 7 = 0")


def _table(warehouse, name):
    return impl.Catalog(warehouse).get_table(f"db.{name}")


def _live(t):
    return [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]


def _spark_written(t):
    out = set()
    for s in t.new_read_builder().new_scan().plan().splits():
        for f in s.files:
            path = t.core.paths.data_file_path(s.partition_path, s.bucket, f.file_name, f.external_path)
            out.add(pq.ParquetFile(path).metadata.created_by.split(" ")[0])
    return out


@pytest.mark.parametrize("layout", [
    {"partition_keys": ["dt"], "options": {"deletion-vectors.enabled": "true"}},
    {"options": {"bucket": "2", "bucket-key": "id", "deletion-vectors.enabled": "true"}},
], ids=["unaware", "fixed-bucket"])
def test_spark_rewrites_append_buckets_keeping_rows_and_order(spark, warehouse, layout, tmp_path):
    from pypaimon_env import read_with_pypaimon
    from test_native_write import _java

    path = os.path.join(warehouse, "db.db", "t")
    _fill(spark, path, **layout)
    t = _table(warehouse, "t")
    before = t.to_arrow().to_pylist()  # impl's order: per bucket, files in manifest order
    assert len(before) == 200 - 29 and any(bucket_index_files(t.core, t.latest_snapshot()).values())
    res = impl.spark.compact(spark, path, full=True, writer="spark")
    t = _table(warehouse, "t")
    assert t.latest_snapshot().commit_kind.value == "COMPACT" and res.snapshot_ids == [t.latest_snapshot().id]
    assert res.files_after == len(_live(t)) == res.compacted_buckets  # one file per bucket
    assert {f.file_source for f in _live(t)} == {FileSource.COMPACT} and _spark_written(t) == {"parquet-mr"}
    assert t.to_arrow().to_pylist() == before  # the same rows, in the same order
    assert not any(bucket_index_files(t.core, t.latest_snapshot()).values())  # vectors applied, dropped
    assert orphans(path) == [] and intents_left(warehouse) == []
    if layout["options"].get("bucket") == "2":
        return  # the readers' checks once: they read what the rewrite wrote the same way in both layouts
    key = sorted((r["id"], r["name"], r["score"], r["dt"]) for r in before)
    theirs = read_with_pypaimon(warehouse, "db.t", sort_by=["id"])
    assert sorted((r["id"], r["name"], r["score"], r["dt"]) for r in theirs) == key
    java = _java()
    if java is not None:
        try:
            out = tmp_path / "java.parquet"
            java.call("read", warehouse=warehouse, table="db.t", out=str(out))
            assert sorted(tuple(r.values()) for r in pq.read_table(out).select(["id", "name", "score", "dt"])
                          .to_pylist()) == key
        finally:
            java.close()


def test_a_compaction_losing_the_race_leaves_nothing(spark, warehouse, monkeypatch):
    """Another compaction commits the same files between Spark's rewrite and the commit: the
    commit is refused, the rewrite's files and intents are gone."""
    path = os.path.join(warehouse, "db.db", "t")
    for k in range(3):
        impl.spark.write_dataframe(spark.createDataFrame(_rows(k * 10, k * 10 + 10), SCHEMA), path)
    real = compaction.rewrite_natively

    def racing(*args, **kwargs):
        out = real(*args, **kwargs)
        assert _table(warehouse, "t").compact(full=True) is not None  # impl's compaction wins
        return out

    monkeypatch.setattr(compaction, "rewrite_natively", racing)
    before = None
    with pytest.raises(Exception, match=r"(?i)conflict|no longer|not live|removed"):
        before = data_files(path)
        impl.spark.compact(spark, path, full=True, writer="spark")
    assert before is not None
    assert orphans(path) == [] and intents_left(warehouse) == []
    assert sorted(r["id"] for r in _table(warehouse, "t").to_arrow().to_pylist()) == list(range(30))
    with pytest.raises(NativeWriteUnsupportedError, match="primary-key"):
        pk = os.path.join(warehouse, "db.db", "pk")
        impl.spark.write_dataframe(spark.createDataFrame(_rows(0, 5), SCHEMA), pk, primary_keys=["id"],
                                   options={"bucket": "1"})
        impl.spark.compact(spark, pk, writer="spark")


def test_native_files_roll_at_target_file_size(spark, warehouse, table_path):
    """Spark's writer rolls by rows: the rows per file come from the bytes per row of the files
    the table holds (a first write guesses from the schema, rolling early). Writes and
    compactions then give files of about target-file-size."""
    from pyspark.sql import functions as F

    target = 64 * 1024  # far above a file's fixed overhead (footer, schema), which the estimate ignores
    df = spark.range(0, 12000, numPartitions=1).select(  # 64 hex digits a row: about 32 bytes compressed
        "id", F.sha2(F.col("id").cast("string"), 256).alias("name"), (F.col("id") * 0.25).alias("score"),
        F.concat(F.lit("d"), (F.col("id") % 2).cast("string")).alias("dt"))
    impl.spark.write_dataframe(df, table_path, writer="spark", options={"target-file-size": "64 kb"})
    first = _live(_table(warehouse, "t"))
    assert len(first) > 1 and all(f.file_size < target for f in first)  # the schema's guess: early
    impl.spark.write_dataframe(df, table_path, writer="spark")
    second = [f for f in _live(_table(warehouse, "t")) if f not in first]
    total = sum(f.file_size for f in second)
    assert abs(len(second) - total / target) <= 1.5, [f.file_size for f in second]
    assert all(f.file_size < 1.3 * target for f in second)

    res = impl.spark.compact(spark, table_path, full=True, options={"target-file-size": "256 kb"}, writer="spark")
    after = _live(_table(warehouse, "t"))
    total = sum(f.file_size for f in after)
    assert res.files_after == len(after) and abs(len(after) - total / (4 * target)) <= 1.5
    assert all(f.file_size < 1.3 * 4 * target for f in after), [f.file_size for f in after]
    assert len(_table(warehouse, "t").to_arrow()) == 24000

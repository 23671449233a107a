"""Failed jobs, retried task attempts and failed commits leave no snapshot and no file behind."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from spark_helpers import crash_first_attempt_fs, data_files, intents_left, orphans, table_files  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.spark.tracking import WriteIntent, clean_after_failure  # noqa: E402


@F.udf(T.LongType())
def _explode_on_13(v):
    if v == 13:
        raise ValueError("bad row 13")
    return v


def _seed(spark, table_path, **options):
    df = spark.createDataFrame([(k, k) for k in range(10)], "id long, v long")
    impl.spark.write_dataframe(df, table_path, **options)


def test_failing_df_write_leaves_no_snapshot_and_no_file(spark, table_path, warehouse):
    _seed(spark, table_path)
    before = table_files(table_path)
    # two partitions: the first writes its files and succeeds, the second fails every attempt
    df = spark.createDataFrame([(k, k) for k in range(20)], "id long, v long").repartition(2, "id") \
        .withColumn("v", _explode_on_13("v"))
    with pytest.raises(Exception, match="bad row 13"):
        df.write.format("paimon_py").mode("append").save(table_path)
    assert table_files(table_path) == before
    assert len(impl.Catalog(warehouse).get_table("db.t").snapshots()) == 1
    assert intents_left(warehouse) == []


def test_failing_routed_write_leaves_no_snapshot_and_no_file(spark, table_path, warehouse):
    _seed(spark, table_path, primary_keys=["id"], options={"bucket": "4"})
    before = table_files(table_path)
    df = spark.createDataFrame([(k, k) for k in range(40)], "id long, v long").withColumn("v", _explode_on_13("v"))
    with pytest.raises(Exception, match="bad row 13"):
        impl.spark.write_dataframe(df, table_path, num_tasks=2)
    assert table_files(table_path) == before
    assert len(impl.Catalog(warehouse).get_table("db.t").snapshots()) == 1
    assert intents_left(warehouse) == []


def test_retried_task_attempt_leaves_no_orphans(spark, table_path, warehouse):
    """Attempt 0 of task 0 dies right after writing a data file; attempt 1 redoes the work.
    The commit must publish only attempt 1's files and delete attempt 0's."""
    _seed(spark, table_path, primary_keys=["id"], options={"bucket": "4"})
    df = spark.createDataFrame([(k, -k) for k in range(200)], "id long, v long")
    res = impl.spark.write_dataframe(df, table_path, num_tasks=2, fs_factory=crash_first_attempt_fs)
    assert res.outcome.leftovers_removed, "the first attempt's file should have been found and removed"
    assert all(os.path.basename(p).endswith(".parquet") for p in res.outcome.leftovers_removed)
    got = {r.id: r.v for r in spark.read.format("paimon_py").load(table_path).collect()}
    assert got == {k: -k for k in range(200)}
    assert orphans(table_path) == []
    assert intents_left(warehouse) == []
    # every data file on disk is one the table uses
    t = impl.Catalog(warehouse).get_table("db.t")
    live = {f for s in t.new_read_builder().new_scan().plan().splits() for f in (x.file_name for x in s.files)}
    assert {os.path.basename(f) for f in data_files(table_path)} == live


def test_retried_df_write_task_gives_complete_data(spark, table_path, warehouse):
    """Attempt 0 of one task dies in the middle of the stream; the retry completes the write."""

    @F.udf(T.LongType())
    def die_once(v):
        from pyspark import TaskContext

        tc = TaskContext.get()
        if v == 77 and tc.attemptNumber() == 0:
            os._exit(3)
        return v

    df = spark.createDataFrame([(k, k) for k in range(150)], "id long, v long").repartition(2) \
        .withColumn("v", die_once("v"))
    df.write.format("paimon_py").mode("append").save(table_path)
    got = sorted((r.id, r.v) for r in spark.read.format("paimon_py").load(table_path).collect())
    assert got == [(k, k) for k in range(150)]
    assert orphans(table_path) == [] and intents_left(warehouse) == []


def test_clean_after_failure_keeps_what_a_published_snapshot_uses(tmp_path):
    """The abort path: files of a commit that did land are kept, all others go (no Spark needed)."""
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    user = "spark-abc"
    intent = WriteIntent.for_table(t, "abc")
    # a published commit of `user` ...
    wb = t.new_batch_write_builder()
    wb.commit_user = user
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": [1, 2]}))
    msgs = w.prepare_commit()
    c.commit(msgs)
    w.close()
    published = [f.file_name for m in msgs for f in m.new_files]
    # ... and a stray file of the same write that no message names
    stray = os.path.join(t.path, "bucket-0", "data-stray-0.parquet")
    with open(stray, "wb") as fh:
        fh.write(b"x")
    for name in published + ["data-stray-0.parquet"]:
        intent.mark("p0-a0-t0", os.path.join(t.path, "bucket-0", name))
    removed = clean_after_failure(t, intent, user, since_snapshot_id=0)
    assert [os.path.basename(p) for p in removed] == ["data-stray-0.parquet"]
    assert t.to_arrow().column("id").to_pylist() == [1, 2]
    assert not os.path.exists(intent.dir)

    # when a snapshot after the write's start has been expired, the outcome is unknown: keep all
    intent2 = WriteIntent.for_table(t, "def")
    with open(stray, "wb") as fh:
        fh.write(b"x")
    intent2.mark("p0-a0-t0", stray)
    t.write_arrow(pa.table({"id": [3]}))
    t.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)
    assert [s.id for s in t.snapshots()] == [2]
    assert clean_after_failure(t, intent2, "spark-def", since_snapshot_id=0) == []
    assert os.path.exists(stray) and os.path.exists(intent2.dir)

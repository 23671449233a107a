"""Failed jobs, retried task attempts and failed commits leave no snapshot and no file behind."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from spark_helpers import crash_first_attempt_fs, data_files, explode_on_13, intents_left, orphans, table_files  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.jobs.tracking import WriteIntent, clean_after_failure  # noqa: E402

_explode_on_13 = F.udf(explode_on_13, T.LongType())


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


class _FakeTime:
    """monotonic/sleep for the driver's wait; ``on_sleep`` runs what a straggler does meanwhile."""

    def __init__(self, on_sleep=None):
        self.now = 0.0
        self.sleeps = 0
        self.on_sleep = on_sleep

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(self.sleeps)


def _intent_on_table(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    return t, WriteIntent.for_table(t, "w1")


def _straggler_write(intent, key, path):
    """What a task attempt does for one file: log it, then write it (the PUT lands)."""
    intent.mark(key, path)
    with open(path, "wb") as fh:
        fh.write(b"x")


def test_abort_waits_for_an_attempt_killed_after_its_write_landed(tmp_path):
    """Spark aborts without waiting for the job's other running tasks; one is killed after its
    PUT landed but before it could see the write was closed. The driver saw it start and never
    end, so it waits out the grace period and sweeps again."""
    t, intent = _intent_on_table(tmp_path)
    late = os.path.join(t.path, "bucket-0", "data-late-0.parquet")
    os.makedirs(os.path.dirname(late))
    intent.begin("p0-a0-t1")
    # the write lands while the driver waits, after its first sweep; the attempt never ends
    clock = _FakeTime(lambda n: _straggler_write(intent, "p0-a0-t1", late) if n == 1 else None)
    removed = clean_after_failure(t, intent, "spark-w1", since_snapshot_id=0, monotonic=clock.monotonic,
                                  sleep=clock.sleep, grace_seconds=5.0, settle_seconds=1.0)
    assert removed == [late] and not os.path.exists(late)
    assert clock.now >= 6.0  # the whole grace period, then the settle time
    assert not os.path.exists(intent.dir) and not os.path.exists(intent.attempts_dir)


def test_abort_stops_waiting_when_the_running_attempts_end(tmp_path):
    t, intent = _intent_on_table(tmp_path)
    late = os.path.join(t.path, "bucket-0", "data-late-0.parquet")
    os.makedirs(os.path.dirname(late))
    intent.begin("p1-a0-t2")

    def straggler(n):
        if n == 2:
            _straggler_write(intent, "p1-a0-t2", late)
            intent.drop_if_closed("p1-a0-t2", late)  # it sees the closed marker: removes its own file
            intent.end("p1-a0-t2")

    clock = _FakeTime(straggler)
    intent.delete_unreferenced(set(), monotonic=clock.monotonic, sleep=clock.sleep, grace_seconds=60.0)
    assert not os.path.exists(late)
    assert clock.sleeps == 2 and clock.now < 1.0  # no grace period once it ended
    assert intent.unfinished_attempts() == set()


def test_attempt_starting_after_the_write_closed_writes_nothing(tmp_path):
    from impl.jobs.tracking import WriteClosedError

    t, intent = _intent_on_table(tmp_path)
    assert intent.delete_unreferenced(set()) == []
    with pytest.raises(WriteClosedError, match="already committed or aborted"):
        with intent.task_attempt("p0-a1-t3", t.file_io.fs):
            raise AssertionError("the attempt must not start")
    # it leaves no trace the driver would have to wait for
    assert intent.unfinished_attempts() == set()
    assert not os.path.exists(intent.attempts_dir) or os.listdir(intent.attempts_dir) == []

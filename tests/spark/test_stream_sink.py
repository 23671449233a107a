"""The Structured Streaming sink: one commit per micro-batch, exactly once across crashes and restarts.

The input is a directory of Parquet files read with ``maxFilesPerTrigger`` 1 and
``trigger(availableNow=True)``: file ``i`` is micro-batch ``i``, and a batch Spark runs again
after a restart reads the same rows (its offsets are in the checkpoint).
"""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import stream_helpers  # noqa: E402
from pypaimon_env import READ_TABLE, run_pypaimon  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from spark_helpers import data_files, intents_left, orphans, store_files, table_files  # noqa: E402
from stream_helpers import CRASH_POINTS, add_input_file, rows_of_file, user_snapshots  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.spark.stream_writer import (  # noqa: E402
    BatchRun,
    StreamSinkError,
    already_committed,
    resolve_checkpoint,
    stream_commit_user,
    stream_key,
)

SCHEMA = "id long, v string, dt string"


@pytest.fixture(scope="module")
def crash_source(spark):
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(stream_helpers)
    spark.dataSource.register(stream_helpers.CrashingSinkSource)
    return stream_helpers.CrashingSinkSource.name()


@pytest.fixture(scope="module")
def pypaimon_python():
    from pypaimon_env import pypaimon_python as build

    return build()  # built once per machine (cached, file-locked)


def _run(spark, src, table_path, checkpoint, *, fmt="paimon_py", options=None, transform=None,
         mode="append") -> str:
    """Run the query over what is in ``src`` (availableNow), wait for it; its query id."""
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    if transform is not None:
        df = transform(df)
    w = df.writeStream.format(fmt).outputMode(mode).option("checkpointLocation", checkpoint)
    for k, v in (options or {}).items():
        w = w.option(k, v)
    q = w.trigger(availableNow=True).start(table_path)
    q.awaitTermination()
    return q.id


def _ids(spark, table_path) -> list[int]:
    return sorted(r.id for r in spark.read.format("paimon_py").load(table_path).collect())


def _closed_markers(warehouse) -> list[str]:
    d = os.path.join(warehouse, ".paimon_py_spark", "closed", "db.t")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


# ====================================================================== pure rules


def test_commit_user_is_derived_from_the_resolved_checkpoint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_checkpoint("ck") == resolve_checkpoint(str(tmp_path / "ck") + "/") == str(tmp_path / "ck")
    assert resolve_checkpoint(f"file://{tmp_path}/ck") == resolve_checkpoint(f"file:{tmp_path}/ck/")
    assert resolve_checkpoint("s3a://bucket/ck/") == "s3a://bucket/ck"
    key = stream_key("ck")
    assert len(key) == 16 and key != stream_key("ck2")
    query = "6544c90d-4976-4bae-b1c4-61449fadcdb5"
    assert stream_commit_user(query) == stream_commit_user(query.replace("-", "")) == f"spark-stream-{query}"
    assert stream_commit_user(query, "etl") == f"etl_spark-stream-{query}"  # Paimon's commit.user-prefix


def test_batch_run_names_round_trip_and_reject_other_intents():
    run = BatchRun("0123456789abcdef", "6544c90d49764bae" * 2, 42, 7, "18eae6dfb4552ee13dce0fa2")
    assert BatchRun.parse(run.name) == run
    assert BatchRun.parse("5f0c7e0d9a0b4c3e8f1a2b3c4d5e6f70") is None  # a batch write's intent
    assert already_committed(None, 0) is False
    assert already_committed(3, 3) and already_committed(4, 3) and not already_committed(2, 3)


# ====================================================================== commits


def test_each_micro_batch_commits_once_with_its_batch_id(spark, tmp_path, warehouse, table_path):
    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    for i in range(3):
        add_input_file(src, i, rows_of_file(i))

    def without_file_1(df):  # micro-batch 1 is empty: it commits nothing
        return df.filter((df.id < 10) | (df.id >= 20))

    query = _run(spark, src, table_path, ck, options={"partition": "dt", "file.compression": "zstd"},
                 transform=without_file_1)
    t = impl.Catalog(warehouse).get_table("db.t")
    assert list(t.partition_keys) == ["dt"] and t.options.raw["file.compression"] == "zstd"
    assert user_snapshots(warehouse, query) == [(0, "APPEND"), (2, "APPEND")]
    assert _ids(spark, table_path) == [*range(10), *range(20, 30)]

    assert _run(spark, src, table_path, ck, transform=without_file_1) == query  # restart, nothing new
    assert len(impl.Catalog(warehouse).get_table("db.t").snapshots()) == 2
    add_input_file(src, 3, rows_of_file(3))
    _run(spark, src, table_path, ck, transform=without_file_1)
    assert user_snapshots(warehouse, query)[-1] == (3, "APPEND")
    assert _ids(spark, table_path) == [*range(10), *range(20, 40)]
    assert orphans(table_path) == [] and intents_left(warehouse) == []
    # one closed marker per run is kept only for the last two batches
    assert {BatchRun.parse(n).batch_id for n in _closed_markers(warehouse)} <= {2, 3}


@pytest.mark.parametrize("point", sorted(CRASH_POINTS))
def test_committer_crash_then_restart_lands_every_row_exactly_once(spark, crash_source, pypaimon_python, tmp_path,
                                                                   warehouse, table_path, point):
    """Batch 1's committer dies (see CRASH_POINTS); Spark has not recorded the batch, so the
    restarted query runs it again with the same rows. Whether or not its snapshot had landed,
    each row is in the table once, and no data file of either run is left over."""
    src, ck, arm = str(tmp_path / "in"), str(tmp_path / "ck"), str(tmp_path / "arm")
    opts = {"crash.arm": arm, "crash.point": point}
    add_input_file(src, 0, rows_of_file(0))
    query = _run(spark, src, table_path, ck, fmt=crash_source, options=opts)
    for i in (1, 2):
        add_input_file(src, i, rows_of_file(i))
    open(arm, "w").close()
    with pytest.raises(Exception, match="Python worker exited unexpectedly"):
        _run(spark, src, table_path, ck, fmt=crash_source, options=opts)
    assert not os.path.exists(arm), "the committer should have died"
    landed = [i for i, _ in user_snapshots(warehouse, query)]
    assert landed == ([0, 1] if point == "after_publish" else [0])

    assert _run(spark, src, table_path, ck, fmt=crash_source, options=opts) == query  # restart
    assert user_snapshots(warehouse, query) == [(0, "APPEND"), (1, "APPEND"), (2, "APPEND")]
    assert _ids(spark, table_path) == list(range(30))
    theirs = run_pypaimon(READ_TABLE, warehouse=warehouse, table="db.t", sort_by=["id"])
    assert sorted(r["id"] for r in theirs) == list(range(30))
    # the dead committer's manifests may be left (orphans of metadata); no data file is
    assert [p for p in orphans(table_path) if "/bucket-" in p] == []
    assert intents_left(warehouse) == []


def test_a_deleted_checkpoint_starts_a_new_stream_whose_batches_all_commit(spark, tmp_path, warehouse, table_path):
    """Deleting the checkpoint restarts the query from batch 0 under a new query id: its batches
    are new input, not re-runs, and must not be taken for batches the old query committed."""
    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    for i in range(2):
        add_input_file(src, i, rows_of_file(i))
    first = _run(spark, src, table_path, ck)
    shutil.rmtree(ck)
    second = _run(spark, src, table_path, ck)
    assert first != second
    assert user_snapshots(warehouse, first) == user_snapshots(warehouse, second) == [(0, "APPEND"), (1, "APPEND")]
    assert _ids(spark, table_path) == sorted([*range(20)] * 2)  # the input replayed in full, as Spark does


def test_primary_key_stream_takes_upserts_and_deletes(spark, pypaimon_python, tmp_path, warehouse, table_path):
    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    ops = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "v": ["a", "b", "c", "d"], "dt": ["x"] * 4,
                    "op": ["+I"] * 4})
    add_input_file(src, 0, ops)
    add_input_file(src, 1, pa.table({"id": pa.array([2, 3, 5], pa.int64()), "v": ["B", None, "e"],
                                                "dt": ["x"] * 3, "op": ["+U", "-D", "+I"]}))
    add_input_file(src, 2, pa.table({"id": pa.array([5, 1], pa.int64()), "v": ["E", None],
                                                "dt": ["x", "x"], "op": ["+U", "-D"]}))

    q = (spark.readStream.schema(SCHEMA + ", op string").option("maxFilesPerTrigger", 1).parquet(src)
         .writeStream.format("paimon_py").option("checkpointLocation", ck)
         .option("primary-key", "dt,id").option("partition", "dt").option("bucket", "2")
         .option("row-kind-column", "op").trigger(availableNow=True).start(table_path))
    q.awaitTermination()
    t = impl.Catalog(warehouse).get_table("db.t")
    assert list(t.primary_keys) == ["dt", "id"] and t.options.bucket == 2
    assert "op" not in t.schema.field_names
    expected = {2: "B", 4: "d", 5: "E"}
    assert {r.id: r.v for r in spark.read.format("paimon_py").load(table_path).collect()} == expected
    assert [i for i, _ in user_snapshots(warehouse, q.id)] == [0, 1, 2]
    theirs = run_pypaimon(READ_TABLE, warehouse=warehouse, table="db.t", sort_by=["id"])
    assert {r["id"]: r["v"] for r in theirs} == expected


def test_micro_batch_writing_a_key_from_two_tasks_is_refused_with_the_fix(spark, tmp_path, warehouse, table_path):
    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    impl.spark.write_dataframe(spark.createDataFrame([(0, "seed", "x")], SCHEMA), table_path,
                               primary_keys=["id"], options={"bucket": "2"})
    before = table_files(table_path)
    # key 7 twice; round-robin repartitioning puts the two rows in different tasks
    add_input_file(src, 0, pa.table({"id": pa.array([7, 7], pa.int64()), "v": ["a", "b"],
                                                "dt": ["x", "x"]}))
    with pytest.raises(Exception, match=r"df\.repartition\('id'\)\.writeStream"):
        _run(spark, src, table_path, ck, transform=lambda df: df.repartition(2))
    assert table_files(table_path) == before
    assert intents_left(warehouse) == []


def test_primary_key_stream_partitioned_by_its_key_over_two_tasks(spark, tmp_path, warehouse, table_path):
    """The fix the refusal names: with the stream hash-partitioned by the key, two tasks write
    each bucket but never one key, so every micro-batch commits and upserts land."""
    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    add_input_file(src, 0, rows_of_file(0, 40))
    updated = rows_of_file(0, 40).slice(10, 20)
    add_input_file(src, 1, updated.set_column(1, "v", pa.array([f"new{k}" for k in range(10, 30)])))
    q = _run(spark, src, table_path, ck, options={"primary-key": "id", "bucket": "2"},
             transform=lambda df: df.repartition(2, "id"))
    assert [i for i, _ in user_snapshots(warehouse, q)] == [0, 1]
    got = {r.id: r.v for r in spark.read.format("paimon_py").load(table_path).collect()}
    assert got == {k: (f"new{k}" if 10 <= k < 30 else f"v{k}") for k in range(40)}
    # the two tasks did share buckets: more than one level-0 file per bucket after batch 0
    t = impl.Catalog(warehouse).get_table("db.t")
    first = t.copy({"scan.snapshot-id": "1"})
    files = [f for s in first.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert len(files) > 2
    assert orphans(table_path) == [] and intents_left(warehouse) == []


@F.udf(T.StringType())
def _explode_on_13(v):
    if v == "v13":
        raise ValueError("bad row 13")
    return v


def test_failed_micro_batch_is_aborted_and_its_files_removed(spark, tmp_path, warehouse, table_path):
    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    add_input_file(src, 0, rows_of_file(0))
    query = _run(spark, src, table_path, ck)
    before = table_files(table_path)
    add_input_file(src, 1, rows_of_file(1))  # ids 10..19: the task with 13 fails every attempt
    with pytest.raises(Exception, match="bad row 13"):
        _run(spark, src, table_path, ck,
             transform=lambda df: df.repartition(2).withColumn("v", _explode_on_13("v")))
    assert table_files(table_path) == before
    assert intents_left(warehouse) == []
    assert user_snapshots(warehouse, query) == [(0, "APPEND")]


def test_complete_mode_overwrites_the_table_each_micro_batch(spark, tmp_path, warehouse, table_path):
    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    for i in range(2):
        add_input_file(src, i, rows_of_file(i))
    query = _run(spark, src, table_path, ck, mode="complete",
         transform=lambda df: df.groupBy("dt").agg(F.count("*").alias("n")))
    got = {r.dt: r.n for r in spark.read.format("paimon_py").load(table_path).collect()}
    assert got == {"d0": 10, "d1": 10}  # the running counts, not the sum of both batches' results
    assert user_snapshots(warehouse, query) == [(0, "OVERWRITE"), (1, "OVERWRITE")]


def test_sink_without_a_checkpoint_option_is_refused(spark, tmp_path, table_path):
    src = str(tmp_path / "in")
    add_input_file(src, 0, rows_of_file(0))
    spark.conf.set("spark.sql.streaming.checkpointLocation", str(tmp_path / "ck-conf"))
    try:
        with pytest.raises(Exception, match=r"option\('checkpointLocation'"):
            (spark.readStream.schema(SCHEMA).parquet(src).writeStream.format("paimon_py")
             .trigger(availableNow=True).start(table_path).awaitTermination())
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    assert not os.path.exists(table_path) or data_files(table_path) == set()
    with pytest.raises(StreamSinkError):
        from impl.spark.stream_writer import make_stream_sink

        make_stream_sink({"path": table_path}, None, False)


def test_stream_into_a_table_on_s3(spark, s3_server, s3_bucket, tmp_path):
    opts = s3_server.options()
    path = f"s3://{s3_bucket}/wh/db.db/t"
    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    for i in range(2):
        add_input_file(src, i, rows_of_file(i))
    query = _run(spark, src, path, ck, options={**opts, "primary-key": "id", "bucket": "2",
                                                "commit.user-prefix": "etl"})
    t = impl.Catalog(f"s3://{s3_bucket}/wh", options=opts).get_table("db.t")
    user = stream_commit_user(query, "etl")
    assert [(s.commit_user, s.commit_identifier) for s in t.snapshots()] == [(user, 0), (user, 1)]
    assert "fs.s3.endpoint" not in t.options.raw  # storage options are never stored in the table
    rows = spark.read.format("paimon_py").options(**opts).load(path).collect()
    assert sorted(r.id for r in rows) == list(range(20))
    assert store_files(opts, f"{s3_bucket}/wh/.paimon_py_spark/writes") == set()

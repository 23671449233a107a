"""``impl.spark.write_stream``: micro-batches written by Spark's own Parquet writer (append tables)
or routed impl writers (primary-key tables), committed exactly once by the ``paimon_py`` sink's
rules (impl/spark/stream_batches.py over impl/spark/stream_writer.py).

Input as in test_stream_sink.py: file ``i`` is micro-batch ``i`` (``maxFilesPerTrigger`` 1).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from spark_helpers import intents_left, orphans  # noqa: E402
from stream_helpers import add_input_file, rows_of_file, user_snapshots  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
import impl.spark.stream_writer as sw  # noqa: E402

SCHEMA = "id long, v string, dt string"


def _run(spark, src, table_path, ck, **kw):
    df = spark.readStream.schema(kw.pop("schema", SCHEMA)).option("maxFilesPerTrigger", 1).parquet(src)
    q = impl.spark.write_stream(df, table_path, checkpoint_location=ck, trigger={"availableNow": True}, **kw)
    q.awaitTermination()
    return q.id


def _ids(warehouse) -> list[int]:
    return sorted(impl.Catalog(warehouse).get_table("db.t").to_arrow().column("id").to_pylist())


def _writers(table_path) -> set[str]:
    """Who wrote the table's data files (Parquet's created_by: parquet-mr is Spark's writer)."""
    out = set()
    for d, _, files in os.walk(table_path):
        for f in files:
            if f.endswith(".parquet") and "/bucket-" in os.path.join(d, f):
                out.add(pq.ParquetFile(os.path.join(d, f)).metadata.created_by.split(" ")[0])
    return out


def test_append_stream_spark_writes_each_batch_once(spark, tmp_path, warehouse, table_path):
    from pypaimon_env import read_with_pypaimon

    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    for i in range(3):
        add_input_file(src, i, rows_of_file(i))
    query = _run(spark, src, table_path, ck, partition_keys=["dt"])
    assert user_snapshots(warehouse, query) == [(0, "APPEND"), (1, "APPEND"), (2, "APPEND")]
    assert _writers(table_path) == {"parquet-mr"}
    assert _run(spark, src, table_path, ck) == query  # restart, nothing new: nothing committed
    assert len(impl.Catalog(warehouse).get_table("db.t").snapshots()) == 3
    assert _ids(warehouse) == list(range(30))
    assert sorted(r["id"] for r in read_with_pypaimon(warehouse, "db.t", sort_by=["id"])) == list(range(30))
    assert orphans(table_path) == [] and intents_left(warehouse) == []


def test_killed_driver_then_restart_loses_and_doubles_no_batch(spark, tmp_path, warehouse, table_path, monkeypatch):
    """1. A driver process dies as batch 1's commit starts (its files written and logged): the
    restarted query runs batch 1 again, the dead run's files are removed. 2. A commit fails right
    after its snapshot landed (before Spark recorded the batch): the restarted query sees the
    batch published and does not write it again."""
    src, ck, arm = str(tmp_path / "in"), str(tmp_path / "ck"), str(tmp_path / "arm")
    add_input_file(src, 0, rows_of_file(0))
    query = _run(spark, src, table_path, ck)
    for i in (1, 2):
        add_input_file(src, i, rows_of_file(i))
    open(arm, "w").close()
    job = os.path.join(os.path.dirname(__file__), "stream_native_job.py")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, job, src, table_path, ck, arm], env=env, capture_output=True, timeout=600)
    assert done.returncode == 7, done.stderr.decode()[-3000:]
    assert user_snapshots(warehouse, query) == [(0, "APPEND")]
    assert [p for p in orphans(table_path) if "/bucket-" in p] != []  # the dead run's files
    assert _run(spark, src, table_path, ck) == query
    assert user_snapshots(warehouse, query) == [(0, "APPEND"), (1, "APPEND"), (2, "APPEND")]
    assert _ids(warehouse) == list(range(30))
    assert orphans(table_path) == [] and intents_left(warehouse) == []

    real_commit = sw.commit_write

    def fails_after_publishing(*args, **kwargs):
        real_commit(*args, **kwargs)
        raise RuntimeError("lost after publishing")

    add_input_file(src, 3, rows_of_file(3))
    monkeypatch.setattr(sw, "commit_write", fails_after_publishing)
    with pytest.raises(Exception, match="lost after publishing"):
        _run(spark, src, table_path, ck)
    monkeypatch.setattr(sw, "commit_write", real_commit)
    files = orphans(table_path), sorted(os.listdir(table_path))
    assert _run(spark, src, table_path, ck) == query
    assert [i for i, _ in user_snapshots(warehouse, query)] == [0, 1, 2, 3]
    assert _ids(warehouse) == list(range(40))
    assert (orphans(table_path), sorted(os.listdir(table_path))) == files
    assert intents_left(warehouse) == []


def test_primary_key_stream_is_routed_without_repartition(spark, tmp_path, warehouse, table_path):
    """write_stream routes each batch's rows one task per bucket (the paimon_py sink needs the
    stream repartitioned by the key); upserts and deletes land, the last row of a key wins."""
    src, ck = str(tmp_path / "in"), str(tmp_path / "ck")
    add_input_file(src, 0, rows_of_file(0, 20).append_column("op", pa.array(["+I"] * 20)))
    add_input_file(src, 1, pa.table({"id": pa.array([3, 3, 5], pa.int64()), "v": ["x", "y", None],
                                     "dt": ["d1", "d1", "d1"], "op": ["+U", "+U", "-D"]}))
    query = _run(spark, src, table_path, ck, schema=SCHEMA + ", op string", primary_keys=["id"],
                 options={"bucket": "2"}, row_kind_column="op")
    assert [i for i, _ in user_snapshots(warehouse, query)] == [0, 1]
    got = {r["id"]: r["v"] for r in impl.Catalog(warehouse).get_table("db.t").to_arrow().to_pylist()}
    assert got == {**{k: f"v{k}" for k in range(20) if k != 5}, 3: "y"}
    assert orphans(table_path) == [] and intents_left(warehouse) == []

"""``paimon-py compact --spark``: the compaction runs as impl.spark.compact's Spark job (on the
test run's session) and publishes one COMPACT snapshot, as the local compaction does."""

from __future__ import annotations

import json

import pyarrow as pa

import impl
from impl.cli import EXIT_OK, main


def test_compact_on_spark(spark, tmp_path, capsys):
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                         options={"bucket": "2"})
    for i in range(3):
        t.write_arrow(pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "v": [f"c{i}"] * 4}))
    files_before = cat.get_table("db.t$files").to_arrow().num_rows
    rows_before = t.to_arrow().sort_by("id")
    assert main(["--warehouse", str(tmp_path), "--json", "compact", "db.t", "--full", "--spark"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    latest = t.latest_snapshot()
    assert latest.commit_kind.value == "COMPACT" and doc["snapshot_ids"] == [latest.id]
    assert doc["engine"] == "spark" and doc["files_before"] == files_before == 6
    assert doc["files_after"] == cat.get_table("db.t$files").to_arrow().num_rows == 2
    assert t.to_arrow().sort_by("id") == rows_before

"""``paimon-py iceberg``: the Iceberg view of a table (what pyiceberg reads), behind after a
crash between the Paimon commit and the Iceberg write, brought level by ``--sync``; a table
without Iceberg metadata is a user error (exit 1) naming the option."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from iceberg_views import TABLE_LOCATION

import impl
from impl.cli import EXIT_OK, EXIT_USER_ERROR, main
from impl.schema.changes import SchemaChange

pyiceberg_table = pytest.importorskip("pyiceberg.table")

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])


def _rows(ids, dt="a") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64())}, schema=SCHEMA)


def _cli(capsys, wh, *argv) -> tuple[int, dict]:
    code = main(["--warehouse", wh, "--json", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out if code == EXIT_OK else err)


def test_behind_then_sync(capsys, wh):
    t = impl.Catalog(wh).create_table("db.t", SCHEMA, partition_keys=["dt"], options=TABLE_LOCATION)
    t.write_arrow(_rows([1, 2]))
    # the Iceberg write of the second commit did not happen (written with the option off)
    t.copy({"metadata.iceberg.storage": "disabled"}).write_arrow(_rows([3], "b"))
    code, doc = _cli(capsys, wh, "iceberg", "db.t")
    assert code == EXIT_OK
    assert doc["behind"] is True and doc["synced"] is False
    assert doc["current_snapshot_id"] == doc["mirrors_paimon_snapshot_id"] == 1
    assert doc["latest_paimon_snapshot_id"] == 2
    # behind, never wrong: the metadata it names reads snapshot 1's rows
    ice = pyiceberg_table.StaticTable.from_metadata(doc["metadata_location"])
    assert sorted(ice.scan().to_arrow().column("id").to_pylist()) == [1, 2]

    code, doc = _cli(capsys, wh, "iceberg", "db.t", "--sync")
    assert code == EXIT_OK and doc["synced"] is True and doc["behind"] is False
    assert doc["current_snapshot_id"] == 2 and [s["snapshot_id"] for s in doc["snapshots"]] == [1, 2]
    ice = pyiceberg_table.StaticTable.from_metadata(doc["metadata_location"])
    assert sorted(ice.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    # level: a second --sync writes nothing
    code, doc = _cli(capsys, wh, "iceberg", "db.t", "--sync")
    assert code == EXIT_OK and doc["synced"] is False and doc["current_snapshot_id"] == 2
    # the text form names the metadata file and the mirrored snapshot
    assert main(["--warehouse", wh, "iceberg", "db.t", "--style", "plain"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "v2.metadata.json" in text and "mirrors_paimon_snapshot_id: 2" in text


def test_turned_on_later_sync_writes_the_first_view(capsys, wh):
    cat = impl.Catalog(wh)
    t = cat.create_table("db.t", SCHEMA)
    t.write_arrow(_rows([1]))
    t.write_arrow(_rows([2]))
    cat.alter_table("db.t", [SchemaChange.set_option("metadata.iceberg.storage", "table-location")])
    code, doc = _cli(capsys, wh, "iceberg", "db.t")
    assert code == EXIT_USER_ERROR
    assert doc["error"]["type"] == "IcebergMetadataNotExistError" and "--sync" in doc["error"]["message"]
    code, doc = _cli(capsys, wh, "iceberg", "db.t", "--sync")
    assert code == EXIT_OK and doc["synced"] is True and doc["current_snapshot_id"] == 2
    assert [s["snapshot_id"] for s in doc["snapshots"]] == [2]  # earlier snapshots were never mirrored


def test_no_iceberg_metadata_is_a_user_error(capsys, wh):
    impl.Catalog(wh).create_table("db.plain", SCHEMA).write_arrow(_rows([1]))
    for argv in (("iceberg", "db.plain"), ("iceberg", "db.plain", "--sync")):
        code, doc = _cli(capsys, wh, *argv)
        assert code == EXIT_USER_ERROR
        assert doc["error"]["type"] == "IcebergMetadataNotExistError"
        assert "metadata.iceberg.storage" in doc["error"]["message"] and "db.plain" in doc["error"]["message"]
    code, doc = _cli(capsys, wh, "iceberg", "db.missing")
    assert code == EXIT_USER_ERROR and doc["error"]["type"] == "TableNotExistError"

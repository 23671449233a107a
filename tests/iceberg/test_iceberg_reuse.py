"""Iceberg metadata written incrementally (issue 48 items 1-3): per commit only what changed is
written (earlier manifests carried over by path, manifests merged as Java merges them), Iceberg
snapshots expire with Paimon's and leave no manifest list or manifest behind, and a
primary-key table's Iceberg view is its compacted (highest-level) files' rows. pyiceberg, a
reader from outside the project, reads every step with equal rows."""

from __future__ import annotations

import json
import os

import fastavro
import pyarrow as pa
import pytest
from iceberg_views import TABLE_LOCATION, hinted_version, iceberg_at_hint, write

pytest.importorskip("pyiceberg.table")

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64())])


def _data(ids, dt="a", scale=1.0) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [i * scale for i in ids]},
                    schema=SCHEMA)


def _rows(t: pa.Table) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.to_pylist())


def _dir(table) -> str:
    return os.path.join(table.path, "metadata")


def _doc(directory: str) -> dict:
    with open(os.path.join(directory, f"v{hinted_version(directory)}.metadata.json")) as f:
        return json.load(f)


def _manifests(list_path: str) -> list[str]:
    with open(list_path, "rb") as f:
        return [r["manifest_path"] for r in fastavro.reader(f)]


def _current_manifests(directory: str) -> list[str]:
    doc = _doc(directory)
    snap = next(s for s in doc["snapshots"] if s["snapshot-id"] == doc["current-snapshot-id"])
    return _manifests(snap["manifest-list"])


def _avro_files(directory: str) -> set[str]:
    return {os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".avro")}


def test_manifests_carried_over_and_merged_as_the_table_grows(catalog):
    """30 appends: each commit writes one manifest (plus one merged one now and then) and
    carries the previous ones over by path; the manifests per snapshot stay bounded by Java's
    merge rule (min 3 / max 5 here); pyiceberg reads equal rows at every step."""
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options={
        **TABLE_LOCATION, "metadata.iceberg.compaction.min.file-num": "3", "metadata.iceberg.compaction.max.file-num": "5"})
    directory = _dir(t)
    expected: list[tuple] = []
    before: list[str] = []
    counts = []
    carried = 0
    for i in range(30):
        ids = [2 * i, 2 * i + 1]
        write(t, _data(ids, dt=f"p{i % 4}"))
        expected += _rows(_data(ids, dt=f"p{i % 4}"))
        now = _current_manifests(directory)
        new = [m for m in now if m not in before]
        counts.append(len(now))
        # one new manifest for the added files, or one merged manifest holding them too
        assert len(new) == 1, (i, new)
        carried += bool(before) and set(before) <= set(now)  # unchanged manifests kept, same paths
        before = now
        if i % 7 == 0 or i == 29:
            assert _rows(iceberg_at_hint(directory).scan().to_arrow()) == sorted(expected), i
    # carried over on most commits, merged (5 small manifests -> 1) on the others: bounded
    assert carried >= 20 and max(counts) <= 5 and min(counts[5:]) >= 1, (carried, counts)
    assert 1 in counts[4:], counts  # a merge happened
    ice = iceberg_at_hint(directory)
    assert _rows(ice.scan(row_filter="dt = 'p1'").to_arrow()) == sorted(r for r in expected if r[0] == "p1")
    # time travel to an early snapshot through carried-over manifests
    assert _rows(ice.scan(snapshot_id=2).to_arrow()) == _rows(pa.concat_tables([_data([0, 1], "p0"),
                                                                              _data([2, 3], "p1")]))
    summary = ice.current_snapshot().summary
    assert summary["total-data-files"] == "30" and summary["total-records"] == "60"


def test_overwrite_and_compaction_rewrite_only_the_manifests_holding_removed_files(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=TABLE_LOCATION)
    directory = _dir(t)
    write(t, _data([1, 2], dt="a"))
    write(t, _data([3, 4], dt="b"))
    b_manifest = [m for m in _current_manifests(directory)]
    write(t, _data([5], dt="a"))
    write(t, _data([9], dt="a"), overwrite={"dt": "a"})
    now = _current_manifests(directory)
    # partition b's manifest is not touched by the overwrite of a: carried over
    assert b_manifest[1] in now
    ice = iceberg_at_hint(directory)
    assert ice.current_snapshot().summary.operation.value == "overwrite"
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow()) == _rows(
        pa.concat_tables([_data([3, 4], "b"), _data([9], "a")]))
    for _ in range(3):
        write(t, _data([7, 8], dt="b"))
    catalog.get_table("db.t").compact(full=True)
    table = catalog.get_table("db.t")
    ice = iceberg_at_hint(directory)
    assert ice.metadata.current_snapshot_id == table.latest_snapshot().id
    assert _rows(ice.scan().to_arrow()) == _rows(table.to_arrow())
    # the snapshot before the compaction still reads its rows (its DELETED entries are live there)
    before = table.latest_snapshot().id - 1
    assert _rows(ice.scan(snapshot_id=before).to_arrow()) == _rows(
        table.copy({"scan.snapshot-id": str(before)}).to_arrow())
    assert ice.current_snapshot().summary["total-data-files"] == str(len(ice.scan().plan_files()))


def test_expired_snapshots_leave_no_manifest_behind(catalog):
    """Paimon expires all but two snapshots: the next commit's Iceberg metadata lists those
    and the new one only, and the metadata directory holds exactly the manifest lists and
    manifests they name (Java's expireManifestList), nothing of the expired ones."""
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options={
        **TABLE_LOCATION, "metadata.iceberg.compaction.min.file-num": "2", "metadata.iceberg.compaction.max.file-num": "3"})
    directory = _dir(t)
    for i in range(8):
        write(t, _data([i], dt=f"p{i % 2}"))
    write(t, _data([0], dt="p0"), overwrite={"dt": "p0"})
    t.expire_snapshots(retain_min=1, retain_max=2)
    assert [s.id for s in t.core.snapshot_manager.snapshots()] == [8, 9]
    write(t, _data([20], dt="p1"))
    doc = _doc(directory)
    assert [s["snapshot-id"] for s in doc["snapshots"]] == [8, 9, 10]
    named = set()
    for s in doc["snapshots"]:
        named.add(s["manifest-list"])
        named.update(_manifests(s["manifest-list"]))
    assert _avro_files(directory) == named
    ice = iceberg_at_hint(directory)
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow())
    assert _rows(ice.scan(snapshot_id=8).to_arrow()) == _rows(t.copy({"scan.snapshot-id": "8"}).to_arrow())


def test_commits_of_a_writer_without_iceberg_are_folded_in(catalog):
    """A writer with the Iceberg metadata off commits twice (an overwrite among them): the
    next Iceberg commit folds those Paimon snapshots' changes into the carried-over manifests
    and reads Paimon's rows exactly."""
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=TABLE_LOCATION)
    directory = _dir(t)
    write(t, _data([1, 2], dt="a"))
    write(t, _data([3], dt="b"))
    first = _current_manifests(directory)
    off = t.copy({"metadata.iceberg.storage": "disabled"})
    write(off, _data([4], dt="c"))
    write(off, _data([5], dt="a"), overwrite={"dt": "a"})
    assert _doc(directory)["current-snapshot-id"] == 2
    write(t, _data([6], dt="b"))
    ice = iceberg_at_hint(directory)
    assert [s.snapshot_id for s in ice.snapshots()] == [1, 2, 5]
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow())
    assert first[-1] in _current_manifests(directory)  # b's manifest: untouched, carried over


def test_primary_key_table_is_its_compacted_files(catalog):
    """A primary-key table's Iceberg view lists its highest-level files only (Java's rule):
    before a full compaction no row a merge could replace shows; after one, the view equals
    the table's rows; an update then shows once compacted again."""
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={**TABLE_LOCATION, "bucket": "2"})
    directory = _dir(t)
    write(t, _data([1, 2, 3], dt="a"))
    write(t, _data([2, 3, 4], dt="a", scale=10.0))
    write(t, _data([1], dt="b"))
    assert _rows(iceberg_at_hint(directory).scan().to_arrow()) == []  # level-0 files only: none shown
    catalog.get_table("db.pk").compact(full=True)
    table = catalog.get_table("db.pk")
    compacted = table.latest_snapshot().id
    ice = iceberg_at_hint(directory)
    assert _rows(ice.scan().to_arrow()) == _rows(table.to_arrow())
    assert len(_rows(table.to_arrow())) == 5
    assert [f.name for f in ice.schema().fields] == ["dt", "id", "v"]
    write(table, _data([1, 4], dt="a", scale=100.0))
    ice = iceberg_at_hint(directory)
    assert _rows(ice.scan().to_arrow()) == _rows(table.copy({"scan.snapshot-id": str(compacted)}).to_arrow())
    catalog.get_table("db.pk").compact(full=True)
    table = catalog.get_table("db.pk")
    ice = iceberg_at_hint(directory)
    assert _rows(ice.scan().to_arrow()) == _rows(table.to_arrow())
    assert ("a", 1, 100.0) in _rows(ice.scan().to_arrow())
    assert _rows(ice.scan(snapshot_id=compacted).to_arrow()) == _rows(
        table.copy({"scan.snapshot-id": str(compacted)}).to_arrow())


def test_hostile_manifest_paths_reach_nothing_outside_the_metadata_directory(catalog, tmp_path):
    """A metadata file naming manifest lists and manifests outside its directory: impl reads
    and deletes Iceberg files by their name in the metadata directory (as Java reads them), so
    the outside files stay untouched; the view is rebuilt from the Paimon snapshot, equal rows."""
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=TABLE_LOCATION)
    directory = _dir(t)
    write(t, _data([1], dt="a"))
    outside = tmp_path / "outside.avro"
    outside.write_bytes(b"not yours")
    path = os.path.join(directory, "v1.metadata.json")
    doc = json.loads(open(path).read())
    doc["snapshots"][0]["manifest-list"] = str(outside)
    with open(path, "w") as f:
        json.dump(doc, f)
    t.expire_snapshots(retain_min=1, retain_max=1)
    write(t, _data([2], dt="b"))
    t.expire_snapshots(retain_min=1, retain_max=1)
    write(t, _data([3], dt="b"))
    assert outside.read_bytes() == b"not yours"
    assert _rows(iceberg_at_hint(directory).scan().to_arrow()) == _rows(t.to_arrow())

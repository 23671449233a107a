"""Snapshot expiration, orphan-file removal and rollback."""

from __future__ import annotations

import os
import posixpath
import time

import pyarrow as pa
import pytest
from table_helpers import data_files, sort_rows, write

from impl.errors import SnapshotNotExistError
from impl.fs.paths import EARLIEST_HINT, LATEST_HINT
from impl.maintenance.cleanup import used_file_names
from impl.read.scan import SnapshotReader

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def batch(lo: int, hi: int, dt: str = "a") -> pa.Table:
    return pa.table({"dt": [dt] * (hi - lo), "id": pa.array(range(lo, hi), pa.int64()),
                     "v": [f"v{i}" for i in range(lo, hi)]})


def build_history(t) -> dict[int, list]:
    """Appends, an overwrite and compactions; returns the rows of every snapshot."""
    write(t, batch(0, 10, "a"))
    write(t, batch(10, 20, "b"))
    write(t, batch(20, 30, "a"))
    write(t, batch(30, 40, "a"))
    write(t, batch(40, 45, "b"), overwrite={"dt": "b"})  # drops 10..19
    write(t, batch(45, 50, "a"))
    write(t, batch(50, 55, "a"))
    write(t, batch(55, 60, "b"))
    t.compact(full=True)  # rewrites both partitions
    write(t, batch(60, 70, "a"))
    write(t, batch(70, 80, "c"))
    write(t, batch(80, 85, "a"))
    return {s.id: sort_rows(t.copy({"scan.snapshot-id": str(s.id)}).to_arrow()) for s in t.snapshots()}


def live_data_names(t, snapshot) -> set[str]:
    return {e.file.file_name for e in SnapshotReader(t.core).live_entries(snapshot)}


def manifest_dir_names(t) -> set[str]:
    return {posixpath.basename(f.path) for f in t.file_io.walk_files(t.paths.manifest_dir)}


def test_expire_keeps_what_retained_snapshots_need(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    rows = build_history(t)
    latest = t.latest_snapshot().id
    assert latest == 12
    res = t.expire_snapshots(retain_min=4, time_retained_ms=0, max_deletes=100)
    assert res.expired_snapshot_ids == tuple(range(1, latest - 3))
    retained = t.snapshots()
    assert [s.id for s in retained] == list(range(latest - 3, latest + 1))
    # every retained snapshot reads exactly what it read before
    for s in retained:
        assert sort_rows(t.copy({"scan.snapshot-id": str(s.id)}).to_arrow()) == rows[s.id]
    # files on storage are exactly those retained snapshots use
    on_disk = {posixpath.basename(p) for p in data_files(t)}
    needed = set().union(*(live_data_names(t, s) for s in retained))
    assert on_disk == needed
    assert res.deleted_data_files and all(posixpath.basename(p) not in needed for p in res.deleted_data_files)
    used = used_file_names(t.core)
    assert manifest_dir_names(t) == {n for n in used if n.startswith(("manifest-", "index-manifest-"))}
    assert t.file_io.read_bytes(t.paths.hint_path(EARLIEST_HINT)) == str(latest - 3).encode()
    assert t.snapshot_manager().earliest_snapshot_id() == latest - 3
    # writing and expiring again still works
    write(t, batch(100, 101, "z"))
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert [s.id for s in t.snapshots()] == [latest + 1]
    assert sort_rows(t.to_arrow()) == sorted(rows[latest] + sort_rows(batch(100, 101, "z")),
                                             key=lambda r: tuple((r[k] is None, r[k]) for k in r))
    assert {posixpath.basename(p) for p in data_files(t)} == live_data_names(t, t.latest_snapshot())


def test_expire_rules(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    for i in range(15):
        write(t, batch(i, i + 1))
    # default retention: min 10 and 1 hour: nothing is old enough
    assert t.expire_snapshots().expired_snapshot_ids == ()
    # old enough, but snapshot.num-retained.min = 10 keeps 6..15 and expire.limit caps a run at 3
    res = t.expire_snapshots(time_retained_ms=0, max_deletes=3)
    assert res.expired_snapshot_ids == (1, 2, 3)
    res = t.expire_snapshots(time_retained_ms=0)
    assert res.expired_snapshot_ids == (4, 5)
    # num-retained.max forces expiry of young snapshots too
    res = t.copy({"snapshot.num-retained.max": "7", "snapshot.num-retained.min": "2"}).expire_snapshots()
    assert res.expired_snapshot_ids == (6, 7, 8)
    # time: only snapshots older than the threshold go, oldest first, stopping at the first young one
    snaps = t.snapshots()
    res = t.expire_snapshots(retain_min=1, time_retained_ms=0, now_millis=snaps[2].time_millis)
    assert all(s < snaps[2].id for s in res.expired_snapshot_ids)
    # the latest snapshot always stays
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=1000)
    assert [s.id for s in t.snapshots()] == [15]
    assert t.to_arrow().num_rows == 15


def test_expire_with_options_from_table(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, options={
        "snapshot.num-retained.min": "2", "snapshot.time-retained": "0 ms"})
    for i in range(5):
        write(t, batch(i, i + 1))
    assert t.expire_snapshots().expired_snapshot_ids == (1, 2, 3)


def test_remove_orphan_files(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    write(t, batch(0, 10, "a"))
    write(t, batch(10, 20, "b"))
    rows = sort_rows(t.to_arrow())
    bucket_dir = t.paths.bucket_dir("dt=a", 0)
    strays = [posixpath.join(bucket_dir, "data-11111111-2222-3333-4444-555555555555-0.parquet"),
              t.paths.manifest_path("manifest-deadbeef-0"),
              posixpath.join(t.paths.snapshot_dir, ".snapshot-3.abc.tmp")]
    young = posixpath.join(bucket_dir, "data-young-0.parquet")
    keep = [posixpath.join(t.path, "README"), posixpath.join(t.paths.schema_dir, "schema-7")]
    old = time.time() - 3 * 86400
    for p in strays + keep + [young]:
        t.file_io.write_bytes(p, b"junk")
        if p != young:
            os.utime(p, (old, old))
    deleted = t.remove_orphan_files()
    assert sorted(deleted) == sorted(strays)
    for p in keep + [young]:
        assert t.file_io.exists(p)
    assert sort_rows(t.to_arrow()) == rows
    # with a threshold in the future the young one goes too, referenced files never do
    deleted = t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 60_000)
    assert deleted == [young]
    assert sort_rows(t.to_arrow()) == rows
    assert t.latest_snapshot().id == 2


def test_remove_orphans_after_failed_write(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    write(t, batch(0, 5))
    w = t.new_batch_write_builder().new_write()
    w.write_arrow(batch(5, 10))
    msgs = w.prepare_commit()  # files written, never committed
    assert len(data_files(t)) == 2
    deleted = t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 60_000)
    assert [posixpath.basename(p) for p in deleted] == [f.file_name for f in msgs[0].new_files]
    assert len(data_files(t)) == 1
    assert t.to_arrow().num_rows == 5


def test_rollback(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    rows = build_history(t)
    files_at_3 = live_data_names(t, t.snapshot(3))
    meta_at_3 = {n for n in used_file_names(t.core, [t.snapshot(s) for s in (1, 2, 3)])}
    deleted = t.rollback_to(3)
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    assert t.file_io.read_bytes(t.paths.hint_path(LATEST_HINT)) == b"3"
    assert sort_rows(t.to_arrow()) == rows[3]
    assert deleted
    on_disk = {posixpath.basename(p) for p in data_files(t)}
    assert on_disk == set().union(*(live_data_names(t, t.snapshot(s)) for s in (1, 2, 3)))
    assert files_at_3 <= on_disk
    assert manifest_dir_names(t) == {n for n in meta_at_3 if n.startswith("manifest")}
    for s in (1, 2):
        assert sort_rows(t.copy({"scan.snapshot-id": str(s)}).to_arrow()) == rows[s]
    # the table keeps working after a rollback
    write(t, batch(200, 201, "q"))
    assert t.latest_snapshot().id == 4
    assert t.to_arrow().num_rows == len(rows[3]) + 1
    with pytest.raises(SnapshotNotExistError):
        t.rollback_to(99)

"""``repair`` and ``rollback_to`` of a table whose newest snapshots are damaged, crashed at EVERY
one of their storage operations (before it lands, and just after).

The table: the shared 9-snapshot history of tests/fault/fault_scenarios.py, tagged ``t3``, then
damaged: ``snapshot-9`` torn in half (not JSON any more) and the delta manifest list of snapshot 8
gone. The newest readable snapshot is 7. The work: ``repair()`` (sets 8 and 9 aside, LATEST -> 7)
or ``rollback_to(5)`` (drops 6 and 7, sets 8 and 9 aside).

After each crash, through a healthy FileIO over the same storage:
- the table is either as damaged as before (the crash came before the first set-aside landed:
  the same snapshot files are there) or its latest snapshot reads exactly what the model's
  snapshot of that id reads, every data file present;
- the tag still reads what it read;
- no file outside the snapshot directory that snapshots 1..7 or the tag need is gone;
- re-running the work, then ``remove_orphan_files`` (which must keep everything the remaining
  snapshots and the tag read) completes it: the same snapshot ids, the same files (hints aside)
  as a run without a crash, each damaged file's bytes kept under ``damaged-snapshot-<id>-<hash>``.
"""

from __future__ import annotations

import posixpath

import pytest
from fault_scenarios import FAR_FUTURE_MILLIS, SCENARIOS, model_facts, record_summary, table_path

from fault_injection import (
    FaultyFileSystem,
    crash_after,
    crash_at,
    enumerate_crash_points,
    fresh_memory_storage,
    record_operations,
    remove_storage,
)
from impl.errors import CorruptMetadataError
from impl.fs.file_io import FileIO
from impl.maintenance.repair import QUARANTINE_PREFIX
from impl.read.scan import SnapshotReader
from impl.table.table import FileStoreTable

SCN = SCENARIOS["append"]
DAMAGED = (8, 9)


def open_table(fs, root) -> FileStoreTable:
    return FileStoreTable(FileIO(fs), table_path(root), SCN.schema)


def damage(fs, root) -> None:
    """Tear snapshot-9 and delete snapshot 8's delta manifest list."""
    t = open_table(fs, root)
    eight = t.snapshot(8)
    fs.rm(t.paths.manifest_path(eight.delta_manifest_list))
    nine = t.paths.snapshot_path(9)
    data = fs.cat_file(nine)
    fs.pipe_file(nine, data[: len(data) // 2])


def setup(fs, root) -> None:
    SCN.setup(fs, root)
    open_table(fs, root).create_tag("t3", 3)
    damage(fs, root)


def repair(fs, root):
    return open_table(fs, root).repair()


def rollback(fs, root):
    return open_table(fs, root).rollback_to(5)


def files(inner, root) -> dict[str, bytes]:
    tp = table_path(root)
    return {posixpath.relpath(p, tp): inner.cat_file(p) for p in inner.find(tp)
            if posixpath.basename(p) not in ("LATEST", "EARLIEST")}


def snapshot_names(inner, root) -> set[str]:
    return {n for n in files(inner, root) if n.startswith("snapshot/snapshot-")}


def after_setup_and(work) -> dict[str, bytes]:
    inner, root = fresh_memory_storage()
    try:
        fs = FaultyFileSystem(inner)
        setup(fs, root)
        if work is not None:
            work(fs, root)
            clean(inner, root)
        return files(inner, root)
    finally:
        remove_storage(inner, root)


def clean(inner, root) -> None:
    """Orphan removal after the work: what a crashed rollback left behind goes, nothing any
    remaining snapshot or the tag needs does (checked: every one of them still reads)."""
    t = open_table(inner, root)
    t.remove_orphan_files(older_than_millis=FAR_FUTURE_MILLIS)
    for snap in t.snapshots():
        check_reads(t, snap, snap.id, "after orphan removal")
    check_reads(t, t.tag_manager().get("t3").snapshot, 3, "tag t3 after orphan removal")


def check_reads(t: FileStoreTable, snap, sid: int, where: str) -> None:
    want = {s.id: s for s in SCN.history_model().snapshots}[sid]
    live = SnapshotReader(t.core).live_entries(snap)
    assert model_facts(live) == dict(want.live), f"{where}: snapshot {sid} reads differently"
    for e in live:
        path = t.paths.data_file_path(t.partition_cache.path(e.partition), e.bucket, e.file.file_name)
        assert t.file_io.exists(path), f"{where}: snapshot {sid} needs {e.file.file_name}, which is gone"


def _check(outcome, work, before: dict[str, bytes], healthy: dict[str, bytes], want_ids: list[int]) -> None:
    where = f"{work.__name__} {outcome.describe()}"
    assert not outcome.diverged and not outcome.crash_swallowed, where
    t = open_table(outcome.inner_fs, outcome.root)
    present = snapshot_names(outcome.inner_fs, outcome.root)
    assert present <= {n for n in before if n.startswith("snapshot/snapshot-")}, f"{where}: {sorted(present)}"
    newest = max(int(n.rsplit("-", 1)[1]) for n in present)
    if newest in DAMAGED:
        # not done yet: what is left above the newest readable snapshot is damaged as before, and
        # only newest-first set-asides landed (a re-run finishes them)
        assert all(outcome.inner_fs.cat_file(posixpath.join(table_path(outcome.root), n)) == before[n]
                   for n in present), where
        with pytest.raises((CorruptMetadataError, FileNotFoundError)):
            check_reads(t, t.latest_snapshot(), newest, where)
    else:
        latest = t.latest_snapshot()
        assert latest is not None and latest.id == newest, f"{where}: no snapshot to read"
        check_reads(t, latest, latest.id, where)
    check_reads(t, t.tag_manager().get("t3").snapshot, 3, f"{where}, tag t3")
    # re-running completes it, as a run without a crash
    work(FaultyFileSystem(outcome.inner_fs), outcome.root)
    clean(outcome.inner_fs, outcome.root)
    t = open_table(outcome.inner_fs, outcome.root)
    assert [s.id for s in t.snapshots()] == want_ids, where
    final = files(outcome.inner_fs, outcome.root)
    assert final == healthy, f"{where}: extra {sorted(set(final) - set(healthy))}, missing {sorted(set(healthy) - set(final))}"
    check_reads(t, t.latest_snapshot(), want_ids[-1], f"{where}, after re-run")
    assert t.doctor().healthy, where


@pytest.mark.parametrize("fault", [crash_at, crash_after], ids=["crash_at", "crash_after"])
@pytest.mark.parametrize("work", [repair, rollback], ids=["repair", "rollback_past_damage"])
def test_crash_at_every_op(work, fault):
    before = after_setup_and(None)
    healthy = after_setup_and(work)
    want_ids = list(range(1, 8)) if work is repair else list(range(1, 6))
    # the damaged bytes are kept, under names no reader lists
    aside = {n: b for n, b in healthy.items() if posixpath.basename(n).startswith(QUARANTINE_PREFIX)}
    # (a rollback drops snapshot 8, whose own file reads, as any newer snapshot; only 9 cannot be read)
    kept = ["8", "9"] if work is repair else ["9"]
    assert sorted(posixpath.basename(n).split("-")[2] for n in aside) == kept
    assert set(aside.values()) == {before[f"snapshot/snapshot-{i}"] for i in kept}
    tried, failures = 0, []
    for outcome in enumerate_crash_points(work, setup=setup, fault_at=fault):
        tried += 1
        try:
            _check(outcome, work, before, healthy, want_ids)
        except AssertionError as e:
            failures.append(str(e).split("\n")[0])
    assert tried == len(record_operations(work, setup=setup)) and tried > 5
    record_summary(f"{work.__name__}_damaged_{fault.__name__}_every_op", work.__name__, "Crash, memory", tried,
                   failing_points=len(failures))
    assert not failures, f"{len(failures)} of {tried} crash points fail:\n" + "\n".join(failures[:8])


def test_repair_deletes_nothing_but_the_snapshot_files_it_moves():
    inner, root = fresh_memory_storage()
    try:
        setup(FaultyFileSystem(inner), root)
        before = files(inner, root)
        repair(FaultyFileSystem(inner), root)
        after = files(inner, root)
        assert set(before) - set(after) == {"snapshot/snapshot-8", "snapshot/snapshot-9"}
        assert all(after[n] == b for n, b in before.items() if n in after)
        assert len(set(after) - set(before)) == 2  # the two set-aside copies
    finally:
        remove_storage(inner, root)

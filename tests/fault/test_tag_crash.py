"""Rollback to a tag and tag deletion, crashed at EVERY one of their storage operations.

The table: the shared 9-snapshot history of tests/fault/fault_scenarios.py, tagged ``t3``
(snapshot 3) and ``t7`` (snapshot 7), then expired down to snapshots 8 and 9, so both tagged
snapshots exist only in their tags. The work: ``rollback_to("t3")`` (writes snapshot 3 back
from the tag, drops 8, 9 and tag t7 and the files only they used) and ``delete_tag("t3")``
(drops the tag and the files only it kept). The model: ``model.Model`` with the same tags.

After each crash, through a healthy FileIO over the same storage:
- the table has a latest snapshot, and it reads exactly what the model's snapshot of that id
  reads, with every data file present (a crash never leaves an unreadable table);
- every tag still present reads what its snapshot read, every data file present;
- re-running the work completes it (the model's result), and ``remove_orphan_files`` then
  leaves exactly the files of a healthy run.
"""

from __future__ import annotations

import posixpath

import pytest
from fault_scenarios import FAR_FUTURE_MILLIS, SCENARIOS, model_facts, record_summary, table_path

from fault_injection import (
    FaultyFileSystem,
    crash_at,
    enumerate_crash_points,
    fresh_memory_storage,
    record_operations,
    remove_storage,
)
from impl.fs.file_io import FileIO
from impl.read.scan import SnapshotReader
from impl.table.table import FileStoreTable
from model import Model

SCN = SCENARIOS["append"]


def open_table(fs, root) -> FileStoreTable:
    return FileStoreTable(FileIO(fs), table_path(root), SCN.schema)


def setup(fs, root) -> None:
    SCN.setup(fs, root)
    t = open_table(fs, root)
    t.create_tag("t3", 3)
    t.create_tag("t7", 7)
    t.expire_snapshots(retain_min=2, retain_max=2)


def rollback(fs, root):
    return open_table(fs, root).rollback_to("t3")


def delete(fs, root):
    return open_table(fs, root).delete_tag("t3")


def model_after_setup() -> Model:
    m = Model(primary_key=True)
    m.snapshots = list(SCN.history_model().snapshots)
    m.create_tag("t3", 3)
    m.create_tag("t7", 7)
    m.expire(2, 2)
    return m


def files(inner, root) -> set[str]:
    tp = table_path(root)
    return {posixpath.relpath(p, tp) for p in inner.find(tp)} - {"snapshot/LATEST", "snapshot/EARLIEST"}


def healthy_files(work) -> set[str]:
    inner, root = fresh_memory_storage()
    try:
        setup(FaultyFileSystem(inner), root)
        work(FaultyFileSystem(inner), root)
        return files(inner, root)
    finally:
        remove_storage(inner, root)


def check_reads(t: FileStoreTable, snap, want: Model, sid: int, where: str) -> None:
    live = SnapshotReader(t.core).live_entries(snap)
    assert model_facts(live) == dict(want.snapshots_by_id[sid].live), f"{where}: snapshot {sid} reads differently"
    for e in live:
        path = t.paths.data_file_path(t.partition_cache.path(e.partition), e.bucket, e.file.file_name)
        assert t.file_io.exists(path), f"{where}: snapshot {sid} needs {e.file.file_name}, which is gone"


class History:
    """Model snapshots by id, expired ones included (the tags read them)."""

    def __init__(self):
        self.snapshots_by_id = {s.id: s for s in SCN.history_model().snapshots}


def _check(outcome, work, complete: Model, healthy: set[str], history: History) -> None:
    where = f"{work.__name__} {outcome.describe()}"
    assert not outcome.diverged and not outcome.crash_swallowed, where
    t = open_table(outcome.inner_fs, outcome.root)
    latest = t.latest_snapshot()
    assert latest is not None, f"{where}: no snapshot to read"
    check_reads(t, latest, history, latest.id, where)
    for tag in t.tags():
        check_reads(t, tag.snapshot, history, tag.snapshot.id, f"{where}, tag {tag.name}")
    # re-running completes it
    if work is rollback or t.tag_manager().try_get("t3") is not None:
        work(FaultyFileSystem(outcome.inner_fs), outcome.root)
    t = open_table(outcome.inner_fs, outcome.root)
    assert [s.id for s in t.snapshots()] == [s.id for s in complete.snapshots], where
    assert sorted(g.name for g in t.tags()) == sorted(complete.tags), where
    t.remove_orphan_files(older_than_millis=FAR_FUTURE_MILLIS)
    final = files(outcome.inner_fs, outcome.root)
    assert final == healthy, f"{where}: extra {sorted(final - healthy)}, missing {sorted(healthy - final)}"
    check_reads(t, t.latest_snapshot(), history, t.latest_snapshot().id, f"{where}, after re-run")


@pytest.mark.parametrize("work", [rollback, delete], ids=["rollback_to_tag", "delete_tag"])
def test_crash_at_every_op(work):
    history = History()
    complete = model_after_setup()
    if work is rollback:
        complete.rollback_to(3)
    else:
        complete.delete_tag("t3")
    healthy = healthy_files(work)
    tried, failures = 0, []
    for outcome in enumerate_crash_points(work, setup=setup, fault_at=crash_at):
        tried += 1
        try:
            _check(outcome, work, complete, healthy, history)
        except AssertionError as e:
            failures.append(str(e).split("\n")[0])
    assert tried == len(record_operations(work, setup=setup)) and tried > 5
    record_summary(f"{work.__name__}_tag_crash_at_every_op", work.__name__, "Crash, memory", tried,
                   failing_points=len(failures))
    assert not failures, f"{len(failures)} of {tried} crash points fail:\n" + "\n".join(failures[:8])

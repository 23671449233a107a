"""Snapshot expiration (``table.expire_snapshots`` / impl.snapshot.expire), crashed at EVERY
one of its storage operations, and with a transient I/O error at every one.

The table: the shared 9-snapshot history of tests/fault/fault_scenarios.py. The work:
``expire_snapshots(retain_min=3, retain_max=3)``, which removes snapshots 1..6 with the
data files only they used (two compactions in the history deleted files) and their
manifests. The model: ``Model.expire(3, 3)`` on the same history.

After each fault, through a healthy FileIO over the same storage:
- snapshot ids are contiguous, end at 9, and start anywhere from 1 to 7 (expiration removes
  the oldest first); the LATEST/EARLIEST resolution agrees with the listing;
- every snapshot the model retains (7, 8, 9) is intact and reads what the model reads;
- re-running the expiration completes it: exactly the model's snapshots remain, intact;
- whatever the interrupted run left behind is found by ``remove_orphan_files`` (and only
  files a healthy expiration deletes), after which the table's files are exactly those of
  a healthy expiration.

And the strict property (test_expire_crash_never_leaves_a_damaged_snapshot): no snapshot
that is still present (listed, reachable as ``earliest``) references a deleted file.
"""

from __future__ import annotations

import posixpath

import pytest
from fault_scenarios import (
    FAR_FUTURE_MILLIS,
    SCENARIOS,
    audit,
    model_facts,
    open_table,
    record_summary,
    table_path,
)

from fault_injection import (
    FaultyFileSystem,
    IOErrorAt,
    crash_at,
    enumerate_crash_points,
    fresh_memory_storage,
    record_operations,
    remove_storage,
)
from impl.fs.file_io import FileIO
from impl.table.table import FileStoreTable
from model import Model

SCN = SCENARIOS["append"]  # its history and schema; its commit is not used here
RETAIN = 3


def expire(fs, root):
    return FileStoreTable(FileIO(fs), table_path(root), SCN.schema).expire_snapshots(
        retain_min=RETAIN, retain_max=RETAIN)


def _relative_files(inner, root) -> set[str]:
    """Files of the table, relative to it; the LATEST / EARLIEST hints are left out (optional
    by design: a re-run with nothing left to expire does not rewrite EARLIEST)."""
    tp = table_path(root)
    rel = {posixpath.relpath(p, tp) for p in inner.find(tp)}
    return {r for r in rel if r not in ("snapshot/LATEST", "snapshot/EARLIEST")}


class Healthy:
    """What a fault-free expiration does, computed once."""

    def __init__(self):
        inner, root = fresh_memory_storage()
        try:
            SCN.setup(FaultyFileSystem(inner), root)
            self.before = _relative_files(inner, root)
            result = expire(FaultyFileSystem(inner), root)
            self.after = _relative_files(inner, root)
        finally:
            remove_storage(inner, root)
        self.expired = list(result.expired_snapshot_ids)
        self.deleted = self.before - self.after
        self.model_before = SCN.history_model()
        m = Model(primary_key=True)
        m.snapshots = list(self.model_before.snapshots)
        self.model_expired = m.expire(RETAIN, RETAIN)
        self.model_after = m


@pytest.fixture(scope="module")
def healthy() -> Healthy:
    h = Healthy()
    # the healthy run is what the model says, and it really deletes data files
    assert h.expired == h.model_expired == [1, 2, 3, 4, 5, 6]
    assert any("/bucket-" in p for p in h.deleted), h.deleted
    return h


def _check(outcome, h: Healthy, *, strict: bool) -> int:
    """Checks of one faulty expiration run; returns how many snapshots it had removed."""
    where = f"expire {outcome.describe()}"
    assert not outcome.diverged, where
    assert not outcome.crash_swallowed, where
    a = audit(outcome.inner_fs, outcome.root)
    assert not a.table_problems, f"{where}: {a.table_problems}"
    present = a.snapshot_ids
    kept = [s.id for s in h.model_after.snapshots]
    assert present[-1] == 9 and 1 <= present[0] <= kept[0], f"{where}: snapshots {present}"
    for sid in present:
        damaged = a.snapshot_problems.get(sid)
        if strict or sid in kept:
            assert not damaged, f"{where}: snapshot {sid} (present, earliest is {present[0]}) is damaged: {damaged}"
        if not damaged:
            assert model_facts(a.views[sid].live) == dict(h.model_before.snapshot(sid).live), (
                f"{where}: snapshot {sid} reads differently")
    if outcome.error is None and not outcome.crashed:
        assert present == kept, f"{where}: returned but snapshots {present} remain"

    # re-running the expiration completes it
    expire(FaultyFileSystem(outcome.inner_fs), outcome.root)
    a2 = audit(outcome.inner_fs, outcome.root)
    assert a2.ok, f"{where}: after re-running: {a2.problems}"
    assert a2.snapshot_ids == kept, f"{where}: after re-running: {a2.snapshot_ids}"
    for sid in kept:
        assert model_facts(a2.views[sid].live) == dict(h.model_after.snapshot(sid).live), where

    # leftovers are files a healthy expiration deletes, and orphan removal finds them all
    removed = open_table(outcome.inner_fs, outcome.root, SCN.schema).remove_orphan_files(
        older_than_millis=FAR_FUTURE_MILLIS)
    tp = table_path(outcome.root)
    rel_removed = {posixpath.relpath(p, tp) for p in removed}
    assert rel_removed <= h.deleted, f"{where}: orphan removal deleted {sorted(rel_removed - h.deleted)}"
    final = _relative_files(outcome.inner_fs, outcome.root)
    assert final == h.after, (f"{where}: files differ from a healthy expiration: extra {sorted(final - h.after)}, "
                              f"missing {sorted(h.after - final)}")
    a3 = audit(outcome.inner_fs, outcome.root)
    assert a3.ok and {s: model_facts(v.live) for s, v in a3.views.items()} == \
        {s: model_facts(v.live) for s, v in a2.views.items()}, f"{where}: orphan removal changed a read"
    return kept[0] - present[0] if present[0] <= kept[0] else 0


def _run_all(healthy, fault_at, *, expect_crash: bool) -> tuple[int, list[str]]:
    """Check every faulty run; collect the failures (to report them all at once)."""
    tried = 0
    failures = []
    for outcome in enumerate_crash_points(expire, setup=SCN.setup, fault_at=fault_at):
        tried += 1
        assert outcome.crashed == expect_crash, outcome.describe()
        try:
            _check(outcome, healthy, strict=False)
        except AssertionError as e:
            failures.append(str(e).split("\n")[0])
    return tried, failures


def test_expire_crash_at_every_op(healthy):
    """Crash at every op: retained snapshots intact, the re-run completes it, leftovers are
    orphans, and after orphan removal the table equals a healthy expiration's."""
    tried, failures = _run_all(healthy, crash_at, expect_crash=True)
    assert tried == len(record_operations(expire, setup=SCN.setup))
    record_summary("expire_crash_at_every_op", "expire", "Crash, memory", tried, failing_points=len(failures))
    assert not failures, f"{len(failures)} of {tried} crash points fail:\n" + "\n".join(failures[:8])


def test_expire_io_error_at_every_op(healthy):
    """IOErrorAt at every op: the run completes or raises; the same checks hold. In
    particular a data file whose delete failed must not outlive the expiration for good
    (after a re-run and orphan removal the files equal a healthy expiration's)."""
    tried, failures = _run_all(healthy, lambda r: IOErrorAt(r.op), expect_crash=False)
    record_summary("expire_io_error_at_every_op", "expire", "IOErrorAt, memory", tried, failing_points=len(failures))
    assert not failures, f"{len(failures)} of {tried} I/O error points fail:\n" + "\n".join(failures[:8])


def test_expire_crash_never_leaves_a_damaged_snapshot(healthy):
    """Strict: after a crash anywhere in an expiration, every snapshot still present (and
    reachable: ``earliest_snapshot()`` returns the oldest of them) is intact, i.e. the
    table shows the state before or after expiring each snapshot, never a snapshot whose
    data files or manifests are already gone."""
    damaged = []
    tried = 0
    for outcome in enumerate_crash_points(expire, setup=SCN.setup, fault_at=crash_at):
        tried += 1
        a = audit(outcome.inner_fs, outcome.root)
        if a.snapshot_problems:
            sid = min(a.snapshot_problems)
            damaged.append(f"op {outcome.op} ({outcome.kind} {posixpath.basename(outcome.path or '')}): "
                           f"snapshot {sid} present but {a.snapshot_problems[sid][0]}")
    record_summary("expire_crash_strict", "expire", "Crash, memory (strict)", tried, damaged_points=len(damaged))
    assert not damaged, f"{len(damaged)} of {tried} crash points leave a damaged snapshot present:\n" + \
        "\n".join(damaged[:8])

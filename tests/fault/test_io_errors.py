"""Transient I/O errors (IOErrorAt) at every operation of every commit scenario, the
unknown-outcome path of publication, and file systems without an atomic create.

The contract (impl/commit/file_store_commit.py, DESIGN.md section 4, invariant 10):
- a commit either succeeds (each of its parts published exactly once) or raises;
- if it raised with a known outcome, nothing it wrote remains: no manifest, manifest
  list or snapshot temp file (data files are the writer's, deleted by ``abort``);
- if the publish call itself failed and the outcome is still unknown
  (CommitOutcomeUnknownError), nothing was deleted, and retrying through
  ``filter_committed`` completes the commit exactly once;
- ``IOErrorAt(n, landed=True)`` at the publish op (the snapshot landed, the caller got an
  error) must not publish twice: the retry finds its own snapshot.
"""

from __future__ import annotations

import posixpath

import pytest
from fault_scenarios import (
    SCENARIO_NAMES,
    SCENARIOS,
    check_orphans_and_remove,
    check_table,
    published_parts,
    record_summary,
    recover_and_check,
    table_path,
)

from fault_injection import (
    FaultyFileSystem,
    IOErrorAt,
    enumerate_crash_points,
    fresh_memory_storage,
    record_operations,
    remove_storage,
)
from fault_injection.orphans import find_orphans
from impl.errors import CommitOutcomeUnknownError, UnsupportedFileSystemError
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths

WRITE_OR_DELETE = {"pipe_file", "open_write", "copy", "link_if_absent", "touch", "rm_file", "rm"}


def _scenario_fn(scn):
    return lambda fs, root: scn.run(fs, root)


def _is_data_file(tp: str, path: str) -> bool:
    rel = posixpath.relpath(path, tp)
    return not (rel.startswith("manifest/") or rel.startswith("snapshot/") or rel.startswith("schema/"))


def _metadata_orphans(outcome) -> list[str]:
    tp = table_path(outcome.root)
    return [s.path for s in find_orphans(FileIO(outcome.inner_fs), tp) if not _is_data_file(tp, s.path)]


def _failed_delete_targets(outcome) -> set[str]:
    """Paths of failed deletes (best-effort cleanup may leave exactly those behind)."""
    faulted = {f.at_op for f in outcome.faults if isinstance(f, IOErrorAt)}
    return {o.path for o in outcome.ops if o.op in faulted and o.kind in ("rm_file", "rm")}


def _competitor_outcome_unknown(scn) -> bool:
    """In the race scenario the competitor may itself end with an unknown outcome (its
    error is swallowed, the scenario goes on): then its files rightly stay behind."""
    return scn.race and any(isinstance(e, CommitOutcomeUnknownError) for e in scn.last_competitor_errors)


def _check_io_outcome(outcome, scn) -> str:
    """Checks for one run with transient I/O errors; returns "ok", "raised" or "unknown"."""
    where = f"{scn.name} {outcome.describe()}"
    competitor_unknown = _competitor_outcome_unknown(scn)
    assert not outcome.crashed and not outcome.fs.crashed, where
    a, _ = check_table(outcome.inner_fs, outcome.root, scn, where)
    parts = published_parts(a, scn.history_snapshots())
    if outcome.error is None:
        assert all(p in parts for p in scn.own_parts), f"{where}: succeeded but published {parts}"
        leftovers = [p for p in _metadata_orphans(outcome) if p not in _failed_delete_targets(outcome)]
        assert competitor_unknown or not leftovers, f"{where}: a successful commit left files behind: {leftovers}"
        check_orphans_and_remove(outcome.inner_fs, outcome.root, scn, where, outcome.ops)
        recover_and_check(outcome.inner_fs, outcome.root, scn, where)
        return "ok"
    if isinstance(outcome.error, CommitOutcomeUnknownError):
        # nothing was deleted: the files the attempt with the unknown outcome wrote (between
        # the previous publication attempt and its own) are all still there, and no delete
        # of a manifest or list was even attempted after it
        mdir = TablePaths(table_path(outcome.root)).manifest_dir + "/"
        links = [o.op for o in outcome.ops if o.kind == "link_if_absent"]
        faulted = {f.at_op for f in outcome.faults}
        p = max(op for op in links if op in faulted)
        prev = max([op for op in links if op < p], default=-1)
        deletes = [o for o in outcome.ops if o.op > p and o.kind in ("rm_file", "rm") and o.path.startswith(mdir)]
        assert not deletes, f"{where}: outcome unknown, yet the commit deleted {deletes}"
        written = [o.path for o in outcome.ops if prev < o.op < p and o.kind == "pipe_file"
                   and o.path.startswith(mdir) and o.op not in faulted]
        missing = [q for q in written if not outcome.inner_fs.exists(q)]
        assert not missing, f"{where}: outcome unknown, yet written files are gone: {missing}"
        recover_and_check(outcome.inner_fs, outcome.root, scn, where, expect_no_orphans=False)
        check_orphans_and_remove(outcome.inner_fs, outcome.root, scn, where, outcome.ops)
        return "unknown"
    # a known failure: nothing the commit wrote remains
    leftovers = [p for p in _metadata_orphans(outcome) if p not in _failed_delete_targets(outcome)]
    assert competitor_unknown or not leftovers, f"{where}: raised {outcome.error!r} but left {leftovers}"
    check_orphans_and_remove(outcome.inner_fs, outcome.root, scn, where, outcome.ops)
    recover_and_check(outcome.inner_fs, outcome.root, scn, where)
    return "raised"


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_io_error_at_every_op(name):
    """IOErrorAt(i) (the op does not land) at every op: succeed or raise, never half."""
    scn = SCENARIOS[name]
    seen: dict[str, int] = {}
    for outcome in enumerate_crash_points(_scenario_fn(scn), setup=scn.setup,
                                          fault_at=lambda r: IOErrorAt(r.op)):
        result = _check_io_outcome(outcome, scn)
        seen[result] = seen.get(result, 0) + 1
    assert seen.get("raised", 0) > 0 and seen.get("ok", 0) > 0, seen
    record_summary("io_error_every_op", name, "IOErrorAt (not landed), memory", sum(seen.values()), **seen)


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_io_error_landed_at_every_write_op(name):
    """IOErrorAt(i, landed=True) at every write and delete: the write reached storage but
    the caller saw an error. A file whose write "failed" this way is still the commit's to
    clean up if it gives up."""
    scn = SCENARIOS[name]
    seen: dict[str, int] = {}
    failures: list[str] = []
    for outcome in enumerate_crash_points(
        _scenario_fn(scn), setup=scn.setup,
        fault_at=lambda r: IOErrorAt(r.op, landed=True) if r.kind in WRITE_OR_DELETE else None,
    ):
        try:
            result = _check_io_outcome(outcome, scn)
        except AssertionError as e:
            result = "failing"
            failures.append(str(e).split("\n")[0][:400])
        seen[result] = seen.get(result, 0) + 1
    record_summary("io_error_landed_every_write", name, "IOErrorAt(landed=True) at writes/deletes",
                   sum(seen.values()), **seen)
    assert not failures, f"{len(failures)} of {sum(seen.values())} points fail:\n" + "\n".join(failures[:6])


def _publish_ops(ops) -> list:
    return [o for o in ops if o.kind == "link_if_absent" and posixpath.basename(o.path).startswith("snapshot-")]


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_unknown_outcome_at_publication(name):
    """IOErrorAt at each publication (landed or not), alone and followed by a second error
    at every op of the retry's learning phase. Alone: the retry learns the outcome (finds its own
    snapshot, or cleans up and publishes again), exactly once. With the second error: a
    CommitOutcomeUnknownError deletes nothing, and filter_committed completes it once."""
    scn = SCENARIOS[name]
    reference = record_operations(_scenario_fn(scn), setup=scn.setup)
    seen: dict[str, int] = {}
    tried = 0
    for pub in _publish_ops(reference):
        for landed in (False, True):
            first = IOErrorAt(pub.op, landed=landed)
            # alone
            single = list(enumerate_crash_points(_scenario_fn(scn), setup=scn.setup, cleanup=False,
                                                 fault_at=lambda r, first=first, pub=pub: first if r.op == pub.op else None))
            assert len(single) == 1
            outcome = single[0]
            try:
                assert outcome.error is None, f"{name} {outcome.describe()}: one transient error failed the commit"
                assert _check_io_outcome(outcome, scn) == "ok"
                # the retry's learning phase: every op after the failed publication up to
                # the first write of the next attempt (reading LATEST, looking for its own
                # snapshot, cleaning up), where a second error leaves the outcome unknown
                later = []
                for o in outcome.ops:
                    if o.op <= pub.op:
                        continue
                    if o.kind == "pipe_file" and "/manifest/" in o.path:
                        break
                    later.append(o.op)
            finally:
                remove_storage(outcome.inner_fs, outcome.root)
            tried += 1
            # with a second error at every later op
            for q in later:
                for outcome in enumerate_crash_points(
                    _scenario_fn(scn), setup=scn.setup,
                    fault_at=lambda r, q=q, first=first, pub=pub: (first, IOErrorAt(q)) if r.op == pub.op else None,
                ):
                    result = _check_io_outcome(outcome, scn)
                    seen[result] = seen.get(result, 0) + 1
                    tried += 1
    assert seen.get("unknown", 0) > 0, f"{name}: the unknown-outcome path was never taken: {seen}"
    record_summary("unknown_outcome_at_publication", name, "IOErrorAt(publish, landed?) [+ IOErrorAt later]",
                   tried, **seen)


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_without_atomic_create_the_commit_refuses_and_leaves_nothing(name):
    """A file system with no atomic create-if-absent (atomic_create=False: an object store
    without conditional put) cannot publish a snapshot safely: the commit must raise
    UnsupportedFileSystemError before it writes any metadata, and leave the table as it was."""
    scn = SCENARIOS[name]
    inner, root = fresh_memory_storage()
    try:
        scn.setup(FaultyFileSystem(inner), root)
        tp = table_path(root)
        before = set(inner.find(tp))
        fs = FaultyFileSystem(inner, atomic_create=False)
        with pytest.raises(UnsupportedFileSystemError):
            scn.run(fs, root)
        mdir = TablePaths(tp).manifest_dir
        sdir = TablePaths(tp).snapshot_dir
        metadata_writes = [o for o in fs.recorder.ops if o.is_write and (o.path.startswith(mdir) or
                                                                          o.path.startswith(sdir))]
        assert metadata_writes == [], f"{name}: wrote metadata before refusing: {metadata_writes[:5]}"
        after = {p for p in inner.find(tp) if not _is_data_file(tp, p)}
        assert after == {p for p in before if not _is_data_file(tp, p)}, sorted(after - before)
    finally:
        remove_storage(inner, root)


@pytest.mark.parametrize("landed", [False, True])
@pytest.mark.parametrize("name", ["first_commit", "append_compact", "overwrite"])
def test_calling_commit_again_after_unknown_outcome_never_duplicates(name, landed):
    """After a CommitOutcomeUnknownError the same committer's ``commit`` / ``overwrite`` is
    called again with the same committable (what the error message invites). Whether the
    first publication landed or not, the table ends with each part exactly once: either the
    second call publishes what is missing, or it refuses with a conflict (never a second
    copy of the snapshot)."""
    from fault_scenarios import new_committer, write_data_files

    from impl.errors import CommitConflictError

    scn = SCENARIOS[name]
    spec = scn.commits[0]
    reference = record_operations(_scenario_fn(scn), setup=scn.setup)
    pub = _publish_ops(reference)[0].op
    inner, root = fresh_memory_storage()
    try:
        scn.setup(FaultyFileSystem(inner), root)
        # pub + 1 deletes the temp file, pub + 2 is the retry's first read (LATEST)
        fs = FaultyFileSystem(inner, [IOErrorAt(pub, landed=landed), IOErrorAt(pub + 2)])
        fio = FileIO(fs)
        write_data_files(fio, root, spec.written_files)
        committer = new_committer(fio, root, scn.schema, spec.user)
        run = (lambda: committer.overwrite(spec.overwrite, spec.committable())) if spec.overwrite is not None \
            else (lambda: committer.commit(spec.committable()))
        with pytest.raises(CommitOutcomeUnknownError):
            run()
        assert fs.recorder.ops[pub + 2].kind == "cat_file", fs.recorder.ops[pub:pub + 3]
        try:
            run()
        except CommitConflictError:
            assert landed, "the first publication did not land, yet the retry conflicts"
        a, _ = check_table(inner, root, scn, f"{name} landed={landed}")
        parts = published_parts(a, scn.history_snapshots())
        assert len(parts) == len(set(parts)), parts
        recover_and_check(inner, root, scn, f"{name} landed={landed}", expect_no_orphans=False)
    finally:
        remove_storage(inner, root)

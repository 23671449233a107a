"""Every commit scenario, crashed at EVERY one of its storage operations.

Scenarios (tests/fault/fault_scenarios.py): the first commit of a table; an APPEND on a
table with history; APPEND + COMPACT in one commit; a commit that triggers a full
manifest merge; an overwrite of a partition; a commit that loses a race to a competing
committer and retries. Each is recorded once, then run again per operation with a fault
there, on fresh storage holding the same history. After each run the table is reopened
through a healthy FileIO over the same storage and checked (fault_scenarios.full_check):

- it reads exactly the state before, after, or (APPEND + COMPACT) between, as the model
  says, snapshot by snapshot (the model applies exactly the parts impl published);
- snapshot ids are contiguous, every snapshot file parses, the LATEST/EARLIEST resolution
  agrees with the listing (a torn or empty hint must fall back to listing);
- no reachable snapshot references a missing or damaged file (manifest lists, manifests,
  data files: size as recorded, Parquet with the recorded row count);
- the orphan finder flags only files the faulty run wrote, misses none of them, and
  removing them changes no read;
- re-running the commits with the same user and identifier through filter_committed
  completes each exactly once (final state = the model's after-state, no duplicate
  snapshot, no orphan left), and a second recovery publishes nothing.

Durability guarantees tested with LoseUnsynced (what a power cut loses):
- ``FileIO(sync_on_write=True)`` with ``barrier="source"`` (only explicit syncs and the
  link itself make data durable): the strong guarantee, every reachable snapshot intact;
- ``sync_on_write=False`` with ``barrier="global"`` (publishing by link_if_absent is a
  global fsync barrier): the same guarantees hold;
- ``sync_on_write=False`` with ``barrier="source"``: NOT safe, and the checks must say so
  (a test proves the checker sees the dangling references, so the two above are meaningful).
"""

from __future__ import annotations

import posixpath

import pytest
from fault_scenarios import (
    SCENARIO_NAMES,
    SCENARIOS,
    audit,
    check_table,
    full_check,
    new_committer,
    published_parts,
    record_summary,
    table_path,
    write_data_files,
)

from fault_injection import (
    Crash,
    CrashAfter,
    FaultyFileSystem,
    LoseUnsynced,
    NonAtomicRename,
    TornWrite,
    crash_after,
    crash_at,
    enumerate_crash_points,
    local_storage,
    record_operations,
    remove_storage,
    torn_writes,
)
from fault_injection.orphans import OrphanScanRefused, find_orphans
from impl.errors import CorruptMetadataError
from impl.fs.file_io import FileIO


def _scenario_fn(scn, sync_on_write=False):
    return lambda fs, root: scn.run(fs, root, sync_on_write=sync_on_write)


def _enumerate(scn, fault_at, *, make_storage=None, base_faults=(), sync_on_write=False):
    kwargs = {"setup": scn.setup, "fault_at": fault_at, "base_faults": base_faults}
    if make_storage is not None:
        kwargs["make_storage"] = make_storage
    return enumerate_crash_points(_scenario_fn(scn, sync_on_write), **kwargs)


# =============================================================================== Crash


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_crash_at_every_op(name):
    """Crash(at_op=i) for every op i: the op does not land, nothing after it does."""
    scn = SCENARIOS[name]
    tried = 0
    published = set()
    for outcome in _enumerate(scn, crash_at):
        assert outcome.crashed, outcome.describe()
        facts = full_check(outcome, scn)
        published.add(facts["published"])
        tried += 1
    assert tried == len(record_operations(_scenario_fn(scn), setup=scn.setup))
    # the enumeration saw both sides of every publication: nothing, each part, everything
    assert published == set(range(len(scn.orders[0]) + 1)), (name, published)
    record_summary("crash_at_every_op", name, "Crash, memory", tried)


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_crash_after_every_op_with_non_atomic_rename(name):
    """CrashAfter(i) (op i lands, the process dies before learning it: the unknown outcome)
    with NonAtomicRename in every run: publication never renames, so copy-then-delete
    renames change nothing; a crash right after the link leaves the commit published."""
    scn = SCENARIOS[name]
    reference = record_operations(_scenario_fn(scn), setup=scn.setup, base_faults=[NonAtomicRename()])
    renames = [o for o in reference if o.kind in ("mv", "mv.copy", "mv.delete")]
    assert renames == [], f"{name}: the commit renamed: {renames}"
    tried = 0
    published_after_link = 0
    for outcome in _enumerate(scn, crash_after, base_faults=[NonAtomicRename()]):
        assert outcome.crashed, outcome.describe()
        assert not [o for o in outcome.ops if o.kind.startswith("mv")], outcome.describe()
        facts = full_check(outcome, scn)
        if outcome.kind == "link_if_absent" and "/snapshot/" in outcome.path:
            published_after_link += facts["published"] > 0
        tried += 1
    assert published_after_link > 0, f"{name}: no CrashAfter at a publication left a published snapshot"
    record_summary("crash_after_every_op", name, "CrashAfter + NonAtomicRename, memory", tried)


# =============================================================================== torn writes


def _is_snapshot_link(record) -> bool:
    return record.kind == "link_if_absent" and posixpath.basename(record.path).startswith("snapshot-")


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_torn_write_at_every_write_op(name):
    """TornWrite at every write op (half the bytes land, then the process dies).

    Writes before publication (data files, manifests, lists, the snapshot's temp file) are
    never reachable, and the LATEST hint is never trusted: all checks hold. The snapshot
    itself is published by link_if_absent of a *finished* temp file: a hard link (or a
    conditional put) cannot tear, the target is all or nothing. The fault injector can
    still tear it (it models a primitive without that guarantee); then the half snapshot
    must be *reported* as corrupt, naming the file, never read as a valid one
    (test_torn_snapshot_link_is_reported_never_trusted).
    """
    scn = SCENARIOS[name]
    tried = 0
    for outcome in _enumerate(scn, lambda r: None if _is_snapshot_link(r) else torn_writes()(r)):
        assert outcome.crashed, outcome.describe()
        full_check(outcome, scn)
        tried += 1
    assert tried > 0
    record_summary("torn_write_every_write_op", name, "TornWrite(size/2), memory", tried)


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_torn_or_empty_hint_and_snapshot_temp_file(name):
    """keep_bytes 0 and 1 at every hint and snapshot temp-file write: an empty hint, a hint
    "1" torn from "10" (a stale hint naming an old snapshot) and an empty temp snapshot."""
    scn = SCENARIOS[name]
    tried = 0
    for keep in (0, 1):
        def factory(r, keep=keep):
            if r.kind != "pipe_file":
                return None
            base = posixpath.basename(r.path)
            if base in ("LATEST", "EARLIEST") or base.startswith(".snapshot-"):
                return TornWrite(r.op, keep)
            return None

        for outcome in _enumerate(scn, factory):
            assert outcome.crashed, outcome.describe()
            full_check(outcome, scn)
            tried += 1
    assert tried > 0
    record_summary("torn_hint_and_temp", name, "TornWrite(0|1) at hints and temp snapshots", tried)


@pytest.mark.parametrize("name", ["first_commit", "append", "append_compact"])
def test_torn_snapshot_link_is_reported_never_trusted(name):
    """A torn snapshot-N (outside what link_if_absent can produce on a real file system):
    the reader reports CorruptMetadataError naming the file and the orphan finder refuses
    to delete anything, instead of reading a half snapshot or guessing."""
    scn = SCENARIOS[name]
    tried = 0
    for outcome in _enumerate(scn, lambda r: torn_writes()(r) if _is_snapshot_link(r) else None):
        tried += 1
        fio = FileIO(outcome.inner_fs)
        tp = table_path(outcome.root)
        snap_path = outcome.path
        assert outcome.inner_fs.exists(snap_path), outcome.describe()
        a = audit(outcome.inner_fs, outcome.root)
        sid = int(posixpath.basename(snap_path).split("-")[1])
        assert any(p.startswith("unreadable") for p in a.snapshot_problems.get(sid, ())), \
            (outcome.describe(), a.problems)
        committer = new_committer(fio, outcome.root, scn.schema, "reader")
        with pytest.raises(CorruptMetadataError) as err:
            committer.snapshot_manager.latest_snapshot()
        assert snap_path in str(err.value)
        with pytest.raises(OrphanScanRefused):
            find_orphans(fio, tp)
    assert tried == len(SCENARIOS[name].commits[0].parts)
    record_summary("torn_snapshot_link", name, "TornWrite at link_if_absent of snapshot-N", tried)


# =============================================================================== power cut


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_power_cut_with_sync_on_write(name):
    """Crash at every op + LoseUnsynced(barrier="source"): only fsync'd files and the link
    survive. With FileIO(sync_on_write=True) every reachable snapshot is intact and names
    only existing, whole files; unsynced leftovers are orphans."""
    scn = SCENARIOS[name]
    tried = lost = 0
    for outcome in _enumerate(
        scn,
        lambda r: (Crash(r.op), LoseUnsynced(seed=r.op, mode=("mixed", "vanish", "empty")[r.op % 3],
                                             barrier="source")),
        sync_on_write=True,
    ):
        full_check(outcome, scn, sync_on_write=True)
        lost += len(outcome.lost_files)
        tried += 1
    assert lost > 0, f"{name}: no crash point lost any data: the power cut was not exercised"
    record_summary("power_cut_sync_on_write", name, "Crash + LoseUnsynced(source), sync_on_write", tried,
                   lost_files=lost)


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_power_cut_global_barrier_without_sync(name):
    """Crash at every op + LoseUnsynced(barrier="global"), sync_on_write=False: publishing
    by link_if_absent makes everything written before it durable, so the guarantees hold."""
    scn = SCENARIOS[name]
    tried = lost = 0
    for outcome in _enumerate(scn, lambda r: (Crash(r.op), LoseUnsynced(seed=r.op, barrier="global"))):
        full_check(outcome, scn)
        lost += len(outcome.lost_files)
        tried += 1
    assert lost > 0, f"{name}: no crash point lost any data"
    record_summary("power_cut_global_barrier", name, "Crash + LoseUnsynced(global), no sync", tried,
                   lost_files=lost)


def test_power_cut_without_any_sync_is_caught_by_the_checks():
    """Control: with neither fsync nor a global barrier, a crash after publication loses
    manifests the snapshot names. The checks must see it, or the two tests above prove
    nothing."""
    scn = SCENARIOS["append"]
    damaged = 0
    for outcome in _enumerate(scn, lambda r: (Crash(r.op), LoseUnsynced(seed=0, mode="vanish", barrier="source"))):
        a = audit(outcome.inner_fs, outcome.root)
        if any("missing" in p for p in a.problems):
            damaged += 1
    assert damaged > 0


# =============================================================================== local disk


@pytest.mark.parametrize("name", ["first_commit", "append_compact", "race"])
def test_crash_on_local_disk(name, tmp_path):
    """A subset of crash points on a real disk (os.link publication): every 3rd op plus
    every publication and hint write, Crash and CrashAfter alternating."""
    scn = SCENARIOS[name]

    def factory(r):
        interesting = r.kind == "link_if_absent" or posixpath.basename(r.path) in ("LATEST", "EARLIEST")
        if not interesting and r.op % 3:
            return None
        return CrashAfter(r.op) if r.op % 2 else Crash(r.op)

    tried = 0
    for outcome in _enumerate(scn, factory, make_storage=local_storage(tmp_path)):
        assert outcome.crashed, outcome.describe()
        full_check(outcome, scn)
        tried += 1
    assert tried > 0
    record_summary("crash_on_local_disk", name, "Crash/CrashAfter subset, local disk", tried)


# =============================================================================== facts about the scenarios


def test_scenarios_do_what_they_claim():
    """The recording runs really exercise what the scenarios are named after."""
    from fault_injection import fresh_memory_storage

    # the full merge happens in the scenario commit, not before
    scn = SCENARIOS["manifest_full_merge"]
    inner, root = fresh_memory_storage()
    fio = FileIO(inner)
    merges = []
    for spec in (*scn.history, *scn.commits):
        write_data_files(fio, root, spec.written_files)
        merges.append(new_committer(fio, root, scn.schema, spec.user).commit(spec.committable()).manifest_merges)
    remove_storage(inner, root)
    assert merges[-1] == ["full"] and not any(merges[:-1]), merges

    # the race scenario loses exactly one race and retries
    scn = SCENARIOS["race"]
    inner, root = fresh_memory_storage()
    scn.setup(FaultyFileSystem(inner), root)
    from fault_scenarios import RacingFileIO, run_commit

    ours, theirs = scn.commits
    fs = FaultyFileSystem(inner)
    committer = new_committer(RacingFileIO(fs, before_first_publish=lambda: run_commit(FileIO(fs), root, scn.schema,
                                                                                         theirs)),
                              root, scn.schema, ours.user)
    write_data_files(committer.file_io, root, ours.written_files)
    stats = committer.commit(ours.committable())
    assert stats.lost_races == 1 and stats.attempts == 2, stats
    a, _ = check_table(inner, root, scn, "race", complete=True)
    remove_storage(inner, root)
    assert published_parts(a, scn.history_snapshots()) == scn.orders[0]

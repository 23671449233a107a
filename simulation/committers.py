"""Concurrent committers on one local table, and their checker.

``run_simulation(CommitterSimConfig(...))`` starts N committers, as OS processes
(multiprocessing ``spawn``) or as threads, on one table directory. Each committer is a commit
user with its own FileStoreCommit and makes M commits. Every commit APPENDs new files with names
no one else uses; compacting committers (the first ``compactors`` ones) also COMPACT files they
read from the latest snapshot (and then take up to ``compaction_millis`` to "rewrite" them),
picking among the same few (partition, bucket) groups as every other compactor, so two of them
often compact the same files or produce overlapping level-1 files: real conflicts
(FileNotLiveError, KeyRangeOverlapError), not staged ones. No data files are written: the commit
path handles metadata only.

Each committer records every commit call: the plan (in model terms), the latest snapshot id it
saw just before calling and just after a refusal, and the outcome: the snapshot ids it published,
and the error class if it raised.

``check_simulation`` then verifies, from storage and those records:

1. Snapshot ids are 1..latest without a gap (nothing expires here).
2. Every snapshot belongs to exactly one commit call (by commit user + identifier + kind) and
   its delta entries are exactly that call's entries for that part; the ids each call reported
   (``CommitStats.snapshot_ids``, or ``error.published_snapshot_ids``) are exactly the snapshots
   of its user + identifier. So no successful commit is lost and none is applied twice.
3. Replaying the snapshots in id order through ``model.Model`` raises nothing: every published
   change was legal against its predecessor. The final live set on storage equals the replay's.
4. Every reported conflict is real: the committer checked its part against some latest snapshot
   s with ``seen_before <= s <= seen_after`` (the latest it read right before the call and right
   after the refusal; for a COMPACT part refused after its APPEND landed as snapshot a, s >= a).
   The check passes if the model, applied to the replayed state of at least one such s, raises
   the same conflict class for the same part. Why that window is sound: impl reads the latest
   snapshot *after* the call starts and before it raises, ids only grow, and each check is
   against one snapshot it read. It cannot be narrower without instrumenting impl; in practice
   the window is a handful of snapshots.

``race_publish`` races OS processes for the same snapshot file, round after round.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Iterable, Mapping, Sequence

from impl.commit import FileStoreCommit
from impl.errors import PaimonError
from impl.fs.file_io import FileIO
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import CommitKind, Snapshot
from model import (
    ADD,
    APPEND,
    COMPACT,
    DELETE,
    CommitConflictError,
    Entry,
    FileFacts,
    Identity,
    Model,
    check_conflicts,
)
from simulation.bridge import ModelFactsReader, facts_of, sim_schema, to_committable

PARTITIONS = 2
BUCKETS = 2
KEY_SPACE = 400

# What a committer may report as a refusal the model must reproduce (check 4); a committer that
# ran out of retries is allowed too (nothing to reproduce); anything else is a problem.
CONFLICT_ERRORS = frozenset({"BucketCountChangedError", "FileAlreadyLiveError", "FileNotLiveError",
                             "KeyRangeOverlapError"})
RETRIES_EXHAUSTED = "CommitRetriesExhaustedError"


class CommitterMode(StrEnum):
    """How the committers run."""

    THREAD = "thread"
    PROCESS = "process"


@dataclass(frozen=True)
class CommitterSimConfig:
    """One run of :func:`run_simulation`: N committers x M commits on one local table."""

    table_path: str  # a local directory (created if missing)
    committers: int = 4
    commits_per_committer: int = 25
    mode: CommitterMode = CommitterMode.THREAD  # a plain "thread" / "process" is accepted
    compactors: int | None = None  # how many committers also compact (default: half, at least 2)
    compact_probability: float = 0.7
    compaction_millis: float = 20.0  # a compactor waits up to this long between reading and committing
    seed: int = 0
    options: tuple[tuple[str, str], ...] = (
        ("manifest.target-file-size", "5 kb"),
        ("manifest.full-compaction-threshold-size", "10 kb"),
        ("manifest.merge-min-count", "3"),
        ("commit.max-retries", "400"),
        ("commit.min-retry-wait", "1 ms"),
        ("commit.max-retry-wait", "50 ms"),
    )

    def __post_init__(self) -> None:
        try:
            mode = CommitterMode(self.mode)
        except ValueError:
            raise ValueError(f"mode must be 'thread' or 'process', not {self.mode!r}") from None
        object.__setattr__(self, "mode", mode)  # frozen: normalize the accepted string once

    @property
    def compacting(self) -> int:
        """How many committers also compact."""
        return self.compactors if self.compactors is not None else max(2, self.committers // 2)


@dataclass(frozen=True)
class CommitRecord:
    """One commit call of one committer."""

    user: str
    identifier: int
    new_files: tuple[FileFacts, ...] = ()
    compact_before: tuple[FileFacts, ...] = ()
    compact_after: tuple[FileFacts, ...] = ()
    seen_before: int = 0  # latest snapshot id read right before the call (0: none)
    seen_after: int = 0  # latest snapshot id read right after it raised
    error: str | None = None  # class name of what it raised, None if it succeeded
    message: str = ""
    published: tuple[int, ...] = ()  # snapshot ids it published (also when it raised)
    lost_races: int = 0


@dataclass
class CommitterSimResult:
    """The records of a run and what the checker found (filled in by :func:`check_simulation`)."""

    config: CommitterSimConfig
    records: list[CommitRecord] = field(default_factory=list)
    snapshots: int = 0
    elapsed_s: float = 0.0
    problems: list[str] = field(default_factory=list)  # what the checker found; empty = correct
    conflicts_checked: int = 0

    @property
    def commits(self) -> int:
        return len(self.records)

    @property
    def succeeded(self) -> int:
        return sum(1 for r in self.records if r.error is None)

    @property
    def conflicts(self) -> dict[str, int]:
        return dict(Counter(r.error for r in self.records if r.error is not None))

    @property
    def lost_races(self) -> int:
        return sum(r.lost_races for r in self.records)

    @property
    def compactions(self) -> int:
        return sum(1 for r in self.records if r.compact_before)

    def summary(self) -> str:
        c = self.config
        return (f"{c.mode}: {c.committers} committers x {c.commits_per_committer} commits -> "
                f"{self.commits} calls, {self.succeeded} succeeded, {self.snapshots} snapshots, "
                f"{self.compactions} with compaction, conflicts {self.conflicts or {}}, "
                f"{self.lost_races} lost races (retried), {self.conflicts_checked} conflicts re-checked, "
                f"{self.elapsed_s:.1f} s, {len(self.problems)} problems")


# ------------------------------------------------------------------------------ the committers


def _new_files(rng: random.Random, index: int, j: int) -> list[FileFacts]:
    """One or two level-0 files with names no other call uses."""
    new = []
    for k in range(rng.randint(1, 2)):
        lo = rng.randrange(KEY_SPACE)
        new.append(FileFacts(rng.randrange(PARTITIONS), rng.randrange(BUCKETS), BUCKETS, 0,
                             f"w{index}-{j}-{k}", lo, lo + rng.randint(0, 40), rng.randint(1, 100)))
    return new


def _pick_group(rng: random.Random, live: Sequence[FileFacts]) -> tuple[Any, int]:
    """Half the time the (partition, bucket) with the most level-0 files, which every compactor
    then wants too; otherwise any group."""
    groups = sorted({(f.partition, f.bucket) for f in live})
    level0_count = Counter((f.partition, f.bucket) for f in live if f.level == 0)
    if rng.random() < 0.5:
        return max(groups, key=lambda g: (level0_count[g], g))
    return groups[rng.randrange(len(groups))]


def _compaction(rng: random.Random, live: Sequence[FileFacts], index: int,
                j: int) -> tuple[list[FileFacts], list[FileFacts]]:
    """A compaction of one (partition, bucket) of ``live``: (files before, files after)."""
    p, b = group = _pick_group(rng, live)
    files = sorted((f for f in live if (f.partition, f.bucket) == group), key=lambda f: f.file_name)
    level0 = [f for f in files if f.level == 0]
    # the oldest level-0 files (what others pick too), or a random few of them (disjoint inputs
    # whose outputs may still overlap at level 1)
    if level0:
        picked = level0[:4] if rng.random() < 0.5 else rng.sample(level0, min(len(level0), 2))
    else:
        picked = rng.sample(files, 1)
    chosen = {f.file_name: f for f in picked}
    # take in every level-1 file the output would overlap, as an LSM does
    lo, hi = absorb_overlapping(chosen, files, 1)
    before = list(chosen.values())
    rows = sum(f.row_count for f in before)
    if hi > lo and rng.random() < 0.5:
        mid = (lo + hi) // 2
        after = [FileFacts(p, b, BUCKETS, 1, f"c{index}-{j}-0", lo, mid, max(1, rows // 2)),
                 FileFacts(p, b, BUCKETS, 1, f"c{index}-{j}-1", mid + 1, hi, max(1, rows - rows // 2))]
    else:
        after = [FileFacts(p, b, BUCKETS, 1, f"c{index}-{j}-0", lo, hi, rows)]
    return before, after


def _plan(rng: random.Random, commit: FileStoreCommit, index: int, j: int,
          compact: bool) -> tuple[list[FileFacts], list[FileFacts], list[FileFacts]]:
    """New files (unique names) and maybe a compaction of one (partition, bucket) of the latest."""
    new = _new_files(rng, index, j)
    latest = commit.snapshot_manager.latest_snapshot()
    if not compact or latest is None:
        return new, [], []
    live = [facts_of(e) for e in commit.read_live_entries(latest)]
    if not live:
        return new, [], []
    before, after = _compaction(rng, live, index, j)
    return new, before, after


def run_committer(config: CommitterSimConfig, index: int, barrier: Any = None) -> list[CommitRecord]:
    """Body of one committer (a thread, or the target of a spawned process)."""
    rng = random.Random(config.seed * 1000 + index)
    user = f"sim-{index}"
    commit = FileStoreCommit(FileIO(), config.table_path, sim_schema(dict(config.options)), commit_user=user)
    compactor = index < config.compacting
    records = []
    if barrier is not None:
        barrier.wait()
    for j in range(1, config.commits_per_committer + 1):
        new, before, after = _plan(rng, commit, index, j, compactor and rng.random() < config.compact_probability)
        if before and config.compaction_millis:
            time.sleep(rng.uniform(0, config.compaction_millis) / 1000)  # rewriting takes a while
        planned = CommitRecord(user, j, tuple(new), tuple(before), tuple(after),
                               seen_before=commit.snapshot_manager.latest_snapshot_id() or 0)
        try:
            stats = commit.commit(to_committable(j, new_files=new, compact_before=before, compact_after=after))
        except PaimonError as e:
            records.append(replace(planned, error=type(e).__name__, message=str(e),
                                   published=tuple(getattr(e, "published_snapshot_ids", ())),
                                   seen_after=commit.snapshot_manager.latest_snapshot_id() or 0))
        else:
            records.append(replace(planned, published=tuple(stats.snapshot_ids), lost_races=stats.lost_races))
    return records


def _process_main(config: CommitterSimConfig, index: int, barrier: Any, queue: Any) -> None:
    try:
        queue.put((index, run_committer(config, index, barrier), None))
    except BaseException as e:  # noqa: BLE001 - report it to the parent instead of dying silently
        queue.put((index, [], f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def _run_threads(config: CommitterSimConfig, failures: list[str]) -> list[CommitRecord]:
    barrier = threading.Barrier(config.committers)
    results: dict[int, list[CommitRecord]] = {}

    def body(i: int) -> None:
        try:
            results[i] = run_committer(config, i, barrier)
        except BaseException as e:  # noqa: BLE001 - a dying committer is a finding, not a hang
            failures.append(f"committer {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=body, args=(i,), name=f"sim-committer-{i}") for i in range(config.committers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for i in sorted(results) for r in results[i]]


def _run_spawned(config: CommitterSimConfig, failures: list[str]) -> list[CommitRecord]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(config.committers)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_process_main, args=(config, i, barrier, queue), name=f"sim-committer-{i}")
             for i in range(config.committers)]
    got = _run_processes(procs, queue, "committer", failures)
    return [r for i in sorted(got) for r in got[i]]


def run_simulation(config: CommitterSimConfig) -> CommitterSimResult:
    """Run the committers concurrently, then check the table (see the module docstring)."""
    os.makedirs(config.table_path, exist_ok=True)
    started = time.monotonic()
    failures: list[str] = []
    if config.mode is CommitterMode.THREAD:
        records = _run_threads(config, failures)
    else:
        records = _run_spawned(config, failures)
    result = CommitterSimResult(config, records, elapsed_s=time.monotonic() - started)
    result.problems.extend(failures)
    check_simulation(result)
    return result


def _run_processes(procs: Sequence[Any], queue: Any, role: str, failures: list[str]) -> dict[int, Any]:
    """Start ``procs``, collect the ``(index, result, failure)`` each puts on ``queue``, join them.

    Failures (reported, or a non-zero exit) are appended to ``failures``; returns index -> result.
    """
    for p in procs:
        p.start()
    results = {}
    for _ in procs:
        index, result, failure = queue.get()
        results[index] = result
        if failure:
            failures.append(f"{role} {index}: {failure}")
    for p in procs:
        p.join()
        if p.exitcode != 0:
            failures.append(f"{p.name} exited with {p.exitcode}")
    return results


def absorb_overlapping(chosen: dict[str, FileFacts], files: Iterable[FileFacts], level: int) -> tuple[Any, Any]:
    """Add to ``chosen`` (file name -> file) every file of ``level`` whose key range touches the
    key range of the chosen files, until none does; return the final (min_key, max_key).

    What an LSM compaction must do so that its output at ``level`` overlaps nothing there.
    """
    files = list(files)
    lo = min(f.min_key for f in chosen.values())
    hi = max(f.max_key for f in chosen.values())
    while True:
        more = [f for f in files if f.level == level and f.file_name not in chosen
                and f.min_key <= hi and lo <= f.max_key]
        if not more:
            return lo, hi
        for f in more:
            chosen[f.file_name] = f
        lo, hi = min(lo, *(f.min_key for f in more)), max(hi, *(f.max_key for f in more))


# ------------------------------------------------------------------------------ the checker


def _part_entries(rec: CommitRecord, kind: str) -> list[Entry]:
    if kind == APPEND:
        return [Entry(ADD, f) for f in rec.new_files]
    return [Entry(DELETE, f) for f in rec.compact_before] + [Entry(ADD, f) for f in rec.compact_after]


def _ownership_problems(records: Sequence[CommitRecord], snapshots: Mapping[int, Snapshot]) -> list[str]:
    """Check 2, first half: each snapshot belongs to exactly one call and part; each call's ids
    are its snapshots."""
    problems = []
    by_call = {(r.user, r.identifier) for r in records}
    owned: dict[tuple[str, int], list[int]] = {}
    for sid, snap in snapshots.items():
        key = (snap.commit_user, snap.commit_identifier)
        owned.setdefault(key, []).append(sid)
        if key not in by_call:
            problems.append(f"snapshot {sid} ({key}, {snap.commit_kind.value}) belongs to no commit call")
    for key, sids in owned.items():
        kinds = [snapshots[s].commit_kind.value for s in sids]
        if len(set(kinds)) != len(kinds):
            problems.append(f"commit {key} is applied more than once: snapshots {sids} of kinds {kinds}")
    for rec in records:
        mine = owned.get((rec.user, rec.identifier), [])
        if tuple(mine) != rec.published:
            problems.append(f"commit {rec.user}#{rec.identifier} reported snapshots {list(rec.published)} "
                            f"({rec.error or 'success'}), storage has {mine}")
        if rec.error is None and not rec.published:
            problems.append(f"commit {rec.user}#{rec.identifier} succeeded without publishing anything")
    return problems


def _replay(reader: ModelFactsReader, records: Sequence[CommitRecord], snapshots: Mapping[int, Snapshot],
            model: Model) -> str | None:
    """Check 2, second half, and check 3: replay the snapshots in id order into ``model``; each
    delta must be the call's part and each change legal. Returns why the replay stopped, if it did."""
    by_call = {(r.user, r.identifier): r for r in records}
    for sid, snap in snapshots.items():
        kind = snap.commit_kind.value
        rec = by_call[(snap.commit_user, snap.commit_identifier)]
        want = _part_entries(rec, kind)
        got = reader.delta_entries(snap)
        if sorted(map(repr, got)) != sorted(map(repr, want)):
            return f"snapshot {sid} ({kind} of {rec.user}#{rec.identifier}) holds other entries than the call's"
        try:
            if kind == APPEND:
                model.commit(rec.user, rec.identifier, new_files=rec.new_files)
            else:
                model.commit(rec.user, rec.identifier, compact_before=rec.compact_before,
                             compact_after=rec.compact_after)
        except CommitConflictError as e:
            return (f"snapshot {sid} ({kind} of {rec.user}#{rec.identifier}) was published although it "
                    f"conflicts with snapshot {sid - 1}: {type(e).__name__}: {e}")
    return None


def _refusal_problem(rec: CommitRecord, model: Model) -> str | None:
    """Check 4 for one refused call: some snapshot it could have read explains its conflict."""
    if rec.new_files and not rec.published:
        kind, lo = APPEND, rec.seen_before
    else:
        kind, lo = COMPACT, max([rec.seen_before, *rec.published])
    entries = _part_entries(rec, kind)
    raised = set()
    for s in range(lo, rec.seen_after + 1):
        state: Mapping[Identity, FileFacts] = model.read(s) if s >= 1 else {}
        try:
            check_conflicts(state, entries, kind, True)
        except CommitConflictError as e:
            raised.add(type(e).__name__)
    if rec.error in raised:
        return None
    return (f"commit {rec.user}#{rec.identifier} was refused with {rec.error} ({rec.message}), but "
            f"its {kind} part conflicts with none of snapshots {lo}..{rec.seen_after} that way "
            f"(model raises {sorted(raised) or 'nothing'})")


def check_simulation(result: CommitterSimResult) -> None:
    """Append every violation found to ``result.problems`` (see the module docstring)."""
    problems = result.problems
    reader = ModelFactsReader(FileIO(), result.config.table_path)
    ids = reader.snapshot_ids()
    result.snapshots = len(ids)
    # 1. contiguous from 1: nothing expires here
    if ids != list(range(1, len(ids) + 1)):
        problems.append(f"snapshot ids are not 1..{len(ids)} without gaps: {ids}")
        return
    snapshots = {sid: reader.snapshot(sid) for sid in ids}
    problems.extend(_ownership_problems(result.records, snapshots))
    if problems:
        return
    model = Model(primary_key=True)
    stopped = _replay(reader, result.records, snapshots, model)
    if stopped:
        problems.append(stopped)
        return
    if ids and reader.live(snapshots[ids[-1]]) != dict(model.live()):
        problems.append("the final live files on storage differ from the model replay")
    # 4. every reported conflict is a conflict against some snapshot the call could have read
    for rec in result.records:
        if rec.error is None:
            continue
        if rec.error not in CONFLICT_ERRORS:
            if rec.error != RETRIES_EXHAUSTED:
                problems.append(f"commit {rec.user}#{rec.identifier} raised {rec.error}: {rec.message}")
            continue
        result.conflicts_checked += 1
        problem = _refusal_problem(rec, model)
        if problem:
            problems.append(problem)


# ------------------------------------------------------------------------------ publish race


def _publish_contender(directory: str, rounds: int, index: int, barrier: Any, queue: Any) -> None:
    """Race for ``snapshot-<r>`` in every round r: try_write_atomic in odd rounds, and
    SnapshotManager.try_publish (the real publish path) in even ones."""
    io = FileIO()
    manager = SnapshotManager(io, directory)
    wins = []
    try:
        for r in range(1, rounds + 1):
            barrier.wait()
            if r % 2:
                won = io.try_write_atomic(manager.snapshot_path(r), f"contender {index} round {r}".encode())
            else:
                won = manager.try_publish(Snapshot(r, 0, "base", "delta", f"contender-{index}", r,
                                                   CommitKind.APPEND, 0))
            wins.append(bool(won))
        queue.put((index, wins, None))
    except BaseException as e:  # noqa: BLE001 - report it to the parent instead of dying silently
        queue.put((index, wins, f"{type(e).__name__}: {e}"))


def race_publish(table_path: str, rounds: int = 200, contenders: int = 2) -> list[list[int]]:
    """OS processes race to create the same snapshot file, at a barrier, round after round.

    Returns, per round, the indexes of the contenders that were told they won; the caller checks
    that there is exactly one per round and that the file holds the winner's content.
    """
    os.makedirs(os.path.join(table_path, "snapshot"), exist_ok=True)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(contenders)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_publish_contender, args=(table_path, rounds, i, barrier, queue))
             for i in range(contenders)]
    errors: list[str] = []
    wins = _run_processes(procs, queue, "contender", errors)
    if errors:
        raise RuntimeError("; ".join(errors))
    return [[i for i in range(contenders) if wins[i][r]] for r in range(rounds)]


__all__ = ["CommitterMode", "CommitterSimConfig", "CommitterSimResult", "CommitRecord", "run_simulation",
           "run_committer", "check_simulation", "race_publish", "absorb_overlapping"]

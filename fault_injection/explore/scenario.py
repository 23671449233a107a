"""The configurations the explorer runs: a table seeded with one snapshot, and actors over it.

Actors (each its own process in spirit: its own FileIO, FileStoreCommit and seeded seams):

- committer ``c<i>``: writes its new data file, then commits identifier 1: an APPEND of that
  file and, with ``compact``, a COMPACT of a seeded level-0 file into a level-1 file (all
  committers compact the same file when ``conflicting``, else each its own);
- ``overwrite``: replaces partition 0 with one new file;
- ``expire``: expires every snapshot but the latest;
- ``reader``: reads the latest snapshot's live files, then time-travels to snapshot 1;
- ``compactor``: a dedicated compaction job: reads the latest snapshot, picks the (up to two)
  first level-0 files of partition 0 and commits only a COMPACT of them into one level-1 file;
- ``orphans``: orphan-file removal with a cut-off between set-up and the run: it may delete
  the unreferenced files set-up left (one data file, one manifest), never a file a snapshot or
  an in-flight commit uses (the store stamps set-up writes with time 0, run writes later, so
  file ages do not depend on the order of operations).

A crashed committer or overwriter restarts as a new process (new FileStoreCommit, new ids)
and recovers through ``filter_committed`` before committing the rest. What every actor saw
and reported goes into an :class:`ActorReport` for the oracle.
"""

from __future__ import annotations

import enum
import functools
import itertools
import posixpath
import random
from dataclasses import dataclass, field
from typing import Callable

from fault_injection.explore.scheduler import ActorBody, ActorContext, ActorCrashed
from fault_injection.explore.store import UNGATED, SimStore, SnapshotWrite
from impl.commit.file_store_commit import FileStoreCommit
from impl.commit.messages import ManifestCommittable
from impl.commit.options import CommitOptions
from impl.data.binary_row import decode_row
from impl.data.partition_names import PartitionNaming
from impl.errors import CommitConflictError, CommitOutcomeUnknownError, PaimonError
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.maintenance.cleanup import remove_orphan_files
from impl.snapshot.expire import ExpireConfig, SnapshotExpiration
from impl.snapshot.manager import SnapshotManager
from impl.table.table import FileStoreTable
from model.rules import FileFacts
from simulation.bridge import PARTITION_TYPE, ModelFactsReader, sim_schema, to_committable

TABLE = "/warehouse/db.db/t"
SEED_USER = "seed"
IDENTIFIER = 1
MAX_RESTARTS = 2


class Status(enum.Enum):
    OK = "ok"
    CONFLICT = "conflict"
    UNKNOWN = "unknown"  # CommitOutcomeUnknownError
    FAILED = "failed"  # another typed error (I/O error, retries exhausted)
    DIED = "died"  # crashed more often than it may restart


class Role(enum.Enum):
    COMMITTER = "committer"
    OVERWRITE = "overwrite"
    EXPIRE = "expire"
    READER = "reader"
    COMPACTOR = "compactor"
    ORPHANS = "orphans"


# files set-up leaves unreferenced, for orphan removal; and the cut-off between set-up and run
SETUP_ORPHANS = ("p=0/bucket-0/data-orphan.parquet", "manifest/manifest-orphan-0")
RUN_EPOCH_SECONDS = 1_000_000.0
ORPHAN_CUTOFF_MILLIS = 1  # older than this: written during set-up


@dataclass(frozen=True)
class Scenario:
    committers: int = 2
    compact: bool = True
    conflicting: bool = False
    overwrite: bool = False
    expire: bool = False
    readers: int = 0
    compactor: bool = False
    orphans: bool = False

    @property
    def actors(self) -> int:
        return self.committers + self.overwrite + self.expire + self.readers + self.compactor + self.orphans

    def label(self) -> str:
        parts = [f"{self.committers} committer(s) x " + ("APPEND+COMPACT" if self.compact else "APPEND")]
        if self.compact:
            parts[0] += " (conflicting)" if self.conflicting else " (disjoint)"
        if self.overwrite:
            parts.append("1 overwrite")
        if self.expire:
            parts.append("1 expiration")
        if self.readers:
            parts.append(f"{self.readers} reader(s)")
        if self.compactor:
            parts.append("1 dedicated compactor")
        if self.orphans:
            parts.append("1 orphan removal")
        return " + ".join(parts)


@dataclass(frozen=True)
class Plan:
    """What a writing actor commits, in model terms, per kind."""

    user: str
    append: tuple[FileFacts, ...] = ()
    compact_before: tuple[FileFacts, ...] = ()
    compact_after: tuple[FileFacts, ...] = ()
    overwrite_partition: int | None = None  # set for the overwriter: its append files replace it

    def committable(self) -> ManifestCommittable:
        if self.overwrite_partition is not None:
            return to_committable(IDENTIFIER, new_files=self.append)
        return to_committable(IDENTIFIER, new_files=self.append, compact_before=self.compact_before,
                              compact_after=self.compact_after)


@dataclass(frozen=True)
class ReadObservation:
    snapshot_id: int | None  # None: the snapshot was gone
    live: frozenset[tuple] | None
    started_step: int
    latest: bool  # a read of "the latest", as opposed to time travel to a fixed id


@dataclass
class ActorReport:
    name: str
    role: Role
    plan: Plan | None = None
    status: Status | None = None
    snapshot_ids: list[int] = field(default_factory=list)
    conflict: str | None = None  # class name
    latest_at_start: int | None = None  # latest snapshot id when its (last) commit started
    finished_step: int | None = None
    restarts: int = 0
    reads: list[ReadObservation] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # orphan removal: what it deleted
    files_written: bool = False  # a writer's data files are durable (its checkpoint)
    error: str | None = None


def seed_files(scenario: Scenario) -> list[FileFacts]:
    """The level-0 files of snapshot 1: one per committer, in its own partition."""
    return [FileFacts(i, 0, 1, 0, f"data-seed-{i}.parquet", 0, 9, 10) for i in range(max(scenario.committers, 1))]


def plans(scenario: Scenario) -> list[Plan]:
    seeds = seed_files(scenario)
    out = []
    for i in range(scenario.committers):
        new = (FileFacts(i, 0, 1, 0, f"data-c{i}-new.parquet", 20, 29, 5),)
        if not scenario.compact:
            out.append(Plan(f"c{i}", append=new))
            continue
        victim = seeds[0] if scenario.conflicting else seeds[i]
        after = FileFacts(victim.partition, 0, 1, 1, f"data-c{i}-compact.parquet", 0, 9, 10)
        out.append(Plan(f"c{i}", append=new, compact_before=(victim,), compact_after=(after,)))
    if scenario.overwrite:
        out.append(Plan("overwrite", append=(FileFacts(0, 0, 1, 0, "data-ow-new.parquet", 0, 9, 3),),
                        overwrite_partition=0))
    return out


class IdSource:
    """Deterministic ids for one process of one actor: ``<name>r<restart>-<n>``."""

    def __init__(self, prefix: str):
        self._prefix = prefix
        self._n = itertools.count()

    def __call__(self) -> str:
        return f"{self._prefix}-{next(self._n)}"


class Clock:
    """A logical clock of one actor's machine. Each actor has its own (as separate machines
    do), so no state outside the store is shared and the explorer's partial-order reduction,
    which sees only storage operations, is sound."""

    def __init__(self, start: int = 1_700_000_000_000):
        self._now = start

    def millis(self) -> int:
        self._now += 1
        return self._now

    def seconds(self) -> float:
        return self._now / 1000

    def sleep(self, seconds: float) -> None:
        self._now += int(seconds * 1000)


@dataclass
class Factories:
    """How actors build their parts; the planted bugs replace some of them (fault_injection.explore.plants)."""

    file_io: Callable[[SimStore], FileIO] = FileIO
    commit: Callable[..., FileStoreCommit] = FileStoreCommit
    snapshot_manager: Callable[[FileIO, str], SnapshotManager] = SnapshotManager
    expiration: Callable[..., SnapshotExpiration] = SnapshotExpiration


@dataclass(frozen=True)
class _StoreImage:
    """The keys, times and snapshot log of a simulated store (bytes are immutable: shared)."""

    files: dict[str, bytes]
    mtimes: dict[str, float]
    snapshot_writes: tuple[SnapshotWrite, ...]
    epoch_seconds: float

    @staticmethod
    def of(store: SimStore) -> _StoreImage:
        return _StoreImage(dict(store.files), dict(store.mtimes), tuple(store.snapshot_writes), store.epoch_seconds)

    def restore(self, store: SimStore) -> None:
        store.files, store.mtimes = dict(self.files), dict(self.mtimes)
        store.snapshot_writes, store.epoch_seconds = list(self.snapshot_writes), self.epoch_seconds


_SETUP_IMAGES: dict[Scenario, _StoreImage] = {}


@dataclass
class World:
    scenario: Scenario
    store: SimStore
    seed: int
    factories: Factories
    clocks: dict[str, Clock] = field(default_factory=dict)
    reports: list[ActorReport] = field(default_factory=list)

    # --------------------------------------------------------------- setup
    def setup(self) -> None:
        """Snapshot 1 with the seed files (outside the schedule). Set-up depends on the
        configuration only, so the store it leaves is built once and copied afterwards."""
        image = _SETUP_IMAGES.get(self.scenario)
        if image is None:
            self._build()
            _SETUP_IMAGES[self.scenario] = _StoreImage.of(self.store)
        else:
            image.restore(self.store)

    def _build(self) -> None:
        io = FileIO(self.store)
        for f in seed_files(self.scenario):
            io.write_bytes(self.data_path(f), b"seed")
        commit = FileStoreCommit(io, TABLE, sim_schema(), commit_user=SEED_USER, id_factory=IdSource("seed"),
                                 clock_millis=self.clock(SEED_USER).millis)
        commit.commit(to_committable(0, new_files=seed_files(self.scenario)))
        if self.scenario.orphans:
            for rel in SETUP_ORPHANS:
                io.write_bytes(posixpath.join(TABLE, rel), b"left by a crash before the run")
        self.store.epoch_seconds = RUN_EPOCH_SECONDS

    def clock(self, actor: str) -> Clock:
        return self.clocks.setdefault(actor, Clock())

    def data_path(self, f: FileFacts) -> str:
        return posixpath.join(TABLE, PartitionNaming(("p",), tuple(PARTITION_TYPE)).path([f.partition]), f"bucket-{f.bucket}", f.file_name)

    def _file_io(self) -> FileIO:
        io = self.factories.file_io(self.store)
        # the once-per-FileIO probe of conditional writes happens outside the schedule: it
        # touches only its own keys, and would add three steps per actor to every schedule
        saved, self.store.gate = self.store.gate, UNGATED
        try:
            io.ensure_atomic_create(posixpath.join(TABLE, "snapshot"))
        finally:
            self.store.gate = saved
        return io

    def _commit(self, plan: Plan, process: int) -> FileStoreCommit:
        name = f"{plan.user}r{process}"
        io = self._file_io()
        commit = self.factories.commit(
            io, TABLE, sim_schema(), commit_user=plan.user, options=CommitOptions(max_retries=6),
            clock_millis=self.clock(plan.user).millis, sleep=self.clock(plan.user).sleep,
            monotonic=self.clock(plan.user).seconds,
            jitter=random.Random(f"{self.seed}-{name}"), id_factory=IdSource(name))
        commit.snapshot_manager = self.factories.snapshot_manager(io, TABLE)
        return commit

    # --------------------------------------------------------------- actors
    def bodies(self) -> list[ActorBody]:
        out: list[ActorBody] = []
        for plan in plans(self.scenario):
            report = ActorReport(plan.user, Role.OVERWRITE if plan.overwrite_partition is not None else Role.COMMITTER,
                                 plan)
            self.reports.append(report)
            out.append(self._writer_body(report, functools.partial(_same, plan)))
        if self.scenario.expire:
            report = ActorReport("expire", Role.EXPIRE)
            self.reports.append(report)
            out.append(self._expire_body(report))
        for r in range(self.scenario.readers):
            report = ActorReport(f"reader{r}", Role.READER)
            self.reports.append(report)
            out.append(self._reader_body(report))
        if self.scenario.compactor:
            report = ActorReport("compactor", Role.COMPACTOR)
            self.reports.append(report)
            out.append(self._writer_body(report, self._compaction_plan))
        if self.scenario.orphans:
            report = ActorReport("orphans", Role.ORPHANS)
            self.reports.append(report)
            out.append(self._orphans_body(report))
        return out

    def _writer_body(self, report: ActorReport, plan_of: Callable[[], Plan]) -> ActorBody:
        """A committing actor; ``plan_of`` gives its plan (read from the table, for the compactor)."""
        def body(ctx: ActorContext) -> None:
            process = 0
            while True:
                try:
                    if report.plan is None:
                        try:
                            report.plan = plan_of()
                        except (PaimonError, FileNotFoundError) as e:
                            report.status, report.error = Status.FAILED, f"{type(e).__name__}: {e}"
                            break
                    self._write_and_commit(report.plan, report, process)
                    break
                except ActorCrashed:
                    if process >= MAX_RESTARTS:
                        report.status = Status.DIED
                        return
                    process += 1
                    report.restarts = process
                    ctx.restart()
            report.finished_step = ctx.step

        return body

    def _write_and_commit(self, plan: Plan, report: ActorReport, process: int) -> None:
        commit = self._commit(plan, process)
        committable = plan.committable()
        rest: list[ManifestCommittable] = []
        try:
            if not report.files_written:
                for f in (*plan.append, *plan.compact_after):
                    commit.file_io.write_bytes(self.data_path(f), f.file_name.encode())
                # as a streaming job's checkpoint does: a restarted process recovers its
                # committable with these files instead of writing them again
                report.files_written = True
            if process:
                # a restarted process: recover what its crashed predecessor may have published
                rest = commit.filter_committed([committable])
                committable = rest[0] if rest else ManifestCommittable(IDENTIFIER, ())
            report.latest_at_start = commit.snapshot_manager.latest_snapshot_id()
            if plan.overwrite_partition is not None:
                if committable.messages or process == 0 or rest:
                    stats = commit.overwrite({"p": plan.overwrite_partition}, committable)
                    report.snapshot_ids = list(stats.snapshot_ids)
            elif committable.messages:
                stats = commit.commit(committable)
                report.snapshot_ids = list(stats.snapshot_ids)
            report.status = Status.OK
        except CommitConflictError as e:
            report.status, report.conflict = Status.CONFLICT, type(e).__name__
            report.snapshot_ids = list(e.published_snapshot_ids)
        except CommitOutcomeUnknownError as e:
            report.status, report.error = Status.UNKNOWN, str(e)
            report.snapshot_ids = list(e.published_snapshot_ids)
        except PaimonError as e:
            report.status, report.error = Status.FAILED, f"{type(e).__name__}: {e}"
            # an error before the commit call (writing its data file) has no published ids
            report.snapshot_ids = list(getattr(e, "published_snapshot_ids", None) or [])

    def _compaction_plan(self) -> Plan:
        """What the dedicated compactor compacts: the first two level-0 files of partition 0 in
        the latest snapshot, into one level-1 file over their key range."""
        io = self._file_io()
        latest = self.factories.snapshot_manager(io, TABLE).latest_snapshot()
        live = _reader(io).live(latest) if latest is not None else {}
        picked = tuple(sorted((f for f in live.values() if f.partition == 0 and f.level == 0),
                              key=lambda f: f.file_name)[:2])
        if not picked:
            return Plan("compactor")
        after = FileFacts(0, 0, 1, 1, "data-compactor-compact.parquet", min(f.min_key for f in picked),
                          max(f.max_key for f in picked), sum(f.row_count for f in picked))
        return Plan("compactor", compact_before=picked, compact_after=(after,))

    def _orphans_body(self, report: ActorReport) -> ActorBody:
        def work(ctx: ActorContext) -> None:
            table = FileStoreTable(self._file_io(), TABLE, sim_schema())
            report.removed = sorted(remove_orphan_files(table.core, ORPHAN_CUTOFF_MILLIS))

        return _one_shot(report, work, (PaimonError, FileNotFoundError))

    def _expire_body(self, report: ActorReport) -> ActorBody:
        def work(ctx: ActorContext) -> None:
            io = self._file_io()
            expiration = self.factories.expiration(io, TablePaths(TABLE), _reader(io).table.core.manifest_file,
                                                   lambda p: PartitionNaming(("p",), tuple(PARTITION_TYPE)).path([_partition(p)]))
            expiration.expire(ExpireConfig(retain_min=1, older_than_millis=2**62))

        # an interrupted expiration leaves only orphans; a bare FileNotFoundError is a finding
        return _one_shot(report, work, (PaimonError,))

    def _reader_body(self, report: ActorReport) -> ActorBody:
        def work(ctx: ActorContext) -> None:
            io = self._file_io()
            reader = _reader(io)
            started = ctx.step
            latest = self.factories.snapshot_manager(io, TABLE).latest_snapshot()
            report.reads.append(ReadObservation(
                latest.id if latest else None,
                frozenset(reader.live(latest)) if latest else None, started, latest=True))
            started = ctx.step
            try:
                snap = reader.snapshot(1)
                report.reads.append(ReadObservation(1, frozenset(reader.live(snap)), started, latest=False))
            except (PaimonError, FileNotFoundError):
                report.reads.append(ReadObservation(None, None, started, latest=False))

        return _one_shot(report, work, (PaimonError, FileNotFoundError))


def _one_shot(report: ActorReport, work: ActorBody, expected: tuple[type[BaseException], ...]) -> ActorBody:
    """An actor that does ``work`` once: OK, DIED when it crashed (no restart), FAILED on an
    ``expected`` error; anything else escapes to the oracle as the actor's failure."""
    def body(ctx: ActorContext) -> None:
        try:
            work(ctx)
            report.status = Status.OK
        except ActorCrashed:
            report.status = Status.DIED
        except expected as e:
            report.status, report.error = Status.FAILED, f"{type(e).__name__}: {e}"
        report.finished_step = ctx.step

    return body


def _same(plan: Plan) -> Plan:
    return plan


def _reader(io: FileIO) -> ModelFactsReader:
    return ModelFactsReader(io, TABLE)


def _partition(p: bytes) -> int:
    (value,) = decode_row(p, PARTITION_TYPE)
    return int(value)



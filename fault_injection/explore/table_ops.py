"""Whole table operations under the deterministic scheduler, and their oracle.

The configurations of :mod:`fault_injection.explore.scenario` drive ``FileStoreCommit`` with
model-made files. These drive the table API end to end, each actor its own process in spirit:
its own :class:`impl.Catalog` over the shared simulated store, with its own seeded
:class:`impl.environment.Environment` (clock, ids, randomness), so nothing but the store is
shared and a run is a pure function of the scheduler's decisions.

Table: ``p`` (partition), ``k`` (primary key with ``p``), ``v``, ``ver`` (the
``sequence.field``: every writer writes its own version, so the latest value of a key does not
depend on which of two racing commits lands first). Set-up writes keys 0..7 at version 0 in two
commits. Writer ``w<i>`` (a batch ``TableWrite`` + ``TableCommit``, compaction synchronous
through :class:`impl.mergetree.writer.InlineExecutor`) upserts the shared key 0, its own seed
key ``1 + i``, a new key ``100 + i``, and deletes seed key ``7 - i``, at version ``i + 1``.

Configurations (:class:`TableOp`):

- ``pk-compact``: fixed bucket, ``num-sorted-run.compaction-trigger`` = 2: every writer compacts
  the same seed files, so COMPACT parts race;
- ``deletion-vectors``: the same with ``deletion-vectors.enabled``;
- ``dynamic-bucket``: ``bucket`` = -1, ``dynamic-bucket.target-row-num`` = 4, all in partition 0:
  the writers' new keys race for the same bucket slots and HASH index files;
- ``schema-change``: the writers (tables opened before the run, on schema 0) race an
  ``alter_table`` adding a column;
- ``tag-expire``: the writers, a ``create_tag`` of the latest snapshot and an expiration keeping
  one snapshot.

Actors run once (a crash ends one: no restart). The oracle (:func:`check`) reads the table
after the run, outside the schedule: ids contiguous and no part twice; every acknowledged
writer's APPEND published; every retained snapshot and tag complete on storage and reading
the rows of the APPENDs landed by it (with deletion vectors, which hide level 0: landed
versions, one per key, and after a full compaction exactly the merge); per configuration, one
bucket per key with its HASH index, old-schema rows with the new column null, an
acknowledged tag present. :class:`TablePlant` are its planted bugs.
"""

from __future__ import annotations

import argparse
import enum
import io
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, cast

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fault_injection.explore.oracle import Violation
from fault_injection.explore.plants import NoRecheckCommit
from fault_injection.explore.scenario import Scenario
from fault_injection.explore.scheduler import ActorBody, ActorContext, ActorCrashed
from fault_injection.explore.search import exhaustive, format_schedule, random_mode
from fault_injection.explore.store import UNGATED, SimStore
from impl.bucket.routing import row_hashes
from impl.catalog.filesystem import FileSystemCatalog
from impl.environment import Environment
from impl.errors import CommitConflictError, CommitOutcomeUnknownError, PaimonError
from impl.maintenance.cleanup import snapshot_file_reader
from impl.mergetree.writer import InlineExecutor
from impl.read.scan import SnapshotReader
from impl.schema.changes import SchemaChange
from impl.snapshot.expire import ExpireConfig, SnapshotExpiration
from impl.snapshot.records import CommitKind, Snapshot
from impl.snapshot.references import Missing
from impl.table.table import FileStoreTable
from impl.write.dynamic_bucket import HashIndexFile, hash_index_entries

WAREHOUSE = "simstore://warehouse"
IDENT = "db.t"
TAG = "t1"
NEW_COLUMN = "extra"
SEED_KEYS = range(8)
MAX_WRITERS = 3  # writer i upserts seed key 1 + i and deletes seed key 7 - i: distinct for i < 3
SCHEMA = pa.schema([pa.field("p", pa.int32(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                    pa.field("v", pa.string()), pa.field("ver", pa.int64())])
COLUMNS = ("p", "k", "v", "ver")
INSERT, DELETE = 0, 3  # row kinds +I and -D


class TableOp(enum.Enum):
    PK_COMPACT = "pk-compact"
    DELETION_VECTORS = "deletion-vectors"
    DYNAMIC_BUCKET = "dynamic-bucket"
    SCHEMA_CHANGE = "schema-change"
    TAG_EXPIRE = "tag-expire"


class TablePlant(enum.Enum):
    """Planted bugs of the table configurations (they live here, never in impl)."""

    EXPIRE_IGNORES_TAGS = "expire-ignores-tags"  # expiration deletes what tags keep
    # the table commit reuses, after a lost race, the conflict check made against the older
    # snapshot (fault_injection.explore.plants.NoRecheckCommit under TableCommit)
    NO_RECHECK_AFTER_LOST_RACE = "no-recheck-after-lost-race"


class Outcome(enum.Enum):
    OK = "ok"
    CONFLICT = "conflict"
    UNKNOWN = "unknown"
    FAILED = "failed"  # a typed error, or a storage error
    DIED = "died"  # crashed (no restart)


@dataclass
class TableReport:
    name: str
    outcome: Outcome | None = None
    commit_user: str | None = None  # writers
    error: str | None = None
    finished_step: int | None = None
    tag_snapshot: int | None = None  # the tag actor: the snapshot it tagged


@dataclass(frozen=True)
class TableScenario:
    """One table configuration; ``writers`` concurrent writers plus the configuration's other actors."""

    op: TableOp
    writers: int = 2
    plant: TablePlant | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.writers <= MAX_WRITERS:
            raise ValueError(f"{self.op.value} takes 0 to {MAX_WRITERS} writers, got {self.writers}")

    @property
    def actors(self) -> int:
        return self.writers + {TableOp.SCHEMA_CHANGE: 1, TableOp.TAG_EXPIRE: 2}.get(self.op, 0)

    def label(self) -> str:
        extra = {TableOp.SCHEMA_CHANGE: " + 1 alter_table", TableOp.TAG_EXPIRE: " + 1 create_tag + 1 expiration"}
        return f"{self.op.value}: {self.writers} writer(s){extra.get(self.op, '')}" + (
            f", planted {self.plant.value}" if self.plant else "")

    @property
    def deletion_vectors(self) -> bool:
        return self.op is TableOp.DELETION_VECTORS

    def table_options(self) -> dict[str, str]:
        options = {"bucket": "1", "num-sorted-run.compaction-trigger": "2", "sequence.field": "ver"}
        if self.op is TableOp.DELETION_VECTORS:
            options["deletion-vectors.enabled"] = "true"
        if self.op is TableOp.DYNAMIC_BUCKET:
            options.update({"bucket": "-1", "dynamic-bucket.target-row-num": "4"})
        return options

    def new_world(self, store: SimStore, seed: int, factories: Any = None) -> "TableWorld":
        """The hook :func:`fault_injection.explore.search.run_schedule` runs this configuration by."""
        return TableWorld(self, store, seed)


@dataclass(frozen=True)
class Row:
    key: int
    value: str
    ver: int
    kind: int = INSERT


def seed_rows() -> list[Row]:
    return [Row(k, "seed", 0) for k in SEED_KEYS]


def writer_rows(i: int) -> list[Row]:
    ver = i + 1
    return [Row(0, f"w{i}", ver), Row(1 + i, f"w{i}", ver), Row(100 + i, f"w{i}", ver),
            Row(7 - i, f"w{i}", ver, DELETE)]


def _arrow(rows: Sequence[Row]) -> tuple[pa.Table, Any]:
    t = pa.table({"p": pa.array([0] * len(rows), pa.int32()), "k": [r.key for r in rows],
                  "v": [r.value for r in rows], "ver": [r.ver for r in rows]}, schema=SCHEMA)
    return t, np.array([r.kind for r in rows], dtype=np.int8)


@dataclass
class TableWorld:
    scenario: TableScenario
    store: SimStore
    seed: int
    reports: list[TableReport] = field(default_factory=list)
    seed_users: dict[str, list[Row]] = field(default_factory=dict)  # set-up's commit users and their rows

    # --------------------------------------------------------------- set-up (outside the schedule)
    def catalog(self, actor: str) -> FileSystemCatalog:
        return FileSystemCatalog(WAREHOUSE, filesystem=self.store, env=Environment.seeded(f"{self.seed}-{actor}"))

    def setup(self) -> None:
        cat = self.catalog("setup")
        cat.create_database("db")
        table = cat.create_table(IDENT, SCHEMA, primary_keys=["p", "k"], partition_keys=["p"],
                                 options=self.scenario.table_options())
        rows = seed_rows()
        # two level-0 files, left uncompacted: every writer then compacts both, so COMPACTs race
        seeding = table.copy({"num-sorted-run.compaction-trigger": "10"})
        for part in (rows[:4], rows[4:]):
            wb = seeding.new_batch_write_builder()
            w = wb.new_write(compaction_executor=InlineExecutor())
            w.write_arrow(*_arrow(part))
            wb.new_commit().commit(w.prepare_commit())
            self.seed_users[wb.commit_user] = part

    def _open(self, actor: str) -> tuple[FileSystemCatalog, FileStoreTable]:
        """An actor's catalog and table, opened outside the schedule (with the conditional-write
        probe, which touches only its own keys)."""
        saved, self.store.gate = self.store.gate, UNGATED
        try:
            cat = self.catalog(actor)
            table = cat.get_table(IDENT)
            assert isinstance(table, FileStoreTable)
            table.file_io.ensure_atomic_create(table.paths.snapshot_dir)
        finally:
            self.store.gate = saved
        return cat, table

    # --------------------------------------------------------------- actors
    def bodies(self) -> list[ActorBody]:
        out = [self._writer(i) for i in range(self.scenario.writers)]
        if self.scenario.op is TableOp.SCHEMA_CHANGE:
            out.append(self._alter())
        if self.scenario.op is TableOp.TAG_EXPIRE:
            out += [self._tag(), self._expire()]
        return out

    def _report(self, name: str) -> TableReport:
        report = TableReport(name)
        self.reports.append(report)
        return report

    def _writer(self, i: int) -> ActorBody:
        report = self._report(f"w{i}")
        _, table = self._open(report.name)

        def work(ctx: ActorContext) -> None:
            wb = table.new_batch_write_builder()
            report.commit_user = wb.commit_user
            w = wb.new_write(compaction_executor=InlineExecutor())
            try:
                w.write_arrow(*_arrow(writer_rows(i)))
                commit = wb.new_commit()
                if self.scenario.plant is TablePlant.NO_RECHECK_AFTER_LOST_RACE:
                    c = table.core
                    commit.file_store_commit = NoRecheckCommit(
                        c.file_io, c.path, c.schema, commit_user=wb.commit_user, options=c.options.commit,
                        table_name=c.identifier, manifest_file=c.manifest_file, branch=c.branch, env=c.env)
                commit.commit(w.prepare_commit())
            finally:
                w.close()

        return _one_shot(report, work)

    def _alter(self) -> ActorBody:
        report = self._report("alter")
        cat, _ = self._open(report.name)
        return _one_shot(report, lambda ctx: cat.alter_table(IDENT, [SchemaChange.add_column(NEW_COLUMN, "STRING")]))

    def _tag(self) -> ActorBody:
        report = self._report("tag")
        _, table = self._open(report.name)

        def work(ctx: ActorContext) -> None:
            report.tag_snapshot = table.create_tag(TAG).snapshot.id

        return _one_shot(report, work)

    def _expire(self) -> ActorBody:
        report = self._report("expire")
        _, table = self._open(report.name)

        def work(ctx: ActorContext) -> None:
            if self.scenario.plant is TablePlant.EXPIRE_IGNORES_TAGS:
                SnapshotExpiration(table.file_io, table.paths, table.manifest_file, table.partition_cache.path
                                   ).expire(ExpireConfig(retain_min=1, retain_max=1, older_than_millis=2**62))
            else:
                table.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)

        return _one_shot(report, work)

    # --------------------------------------------------------------- the oracle
    def check(self, *, faults: bool) -> list[Violation]:
        saved, self.store.gate = self.store.gate, UNGATED
        try:
            return check(self, faults=faults)
        finally:
            self.store.gate = saved


def _one_shot(report: TableReport, work: Callable[[ActorContext], None]) -> ActorBody:
    """Runs ``work`` once and records its outcome; an error that is neither typed nor a storage
    error escapes to the oracle as the actor's failure."""
    def body(ctx: ActorContext) -> None:
        try:
            work(ctx)
            report.outcome = Outcome.OK
        except ActorCrashed:
            report.outcome = Outcome.DIED
        except CommitConflictError as e:
            report.outcome, report.error = Outcome.CONFLICT, f"{type(e).__name__}: {e}"
        except CommitOutcomeUnknownError as e:
            report.outcome, report.error = Outcome.UNKNOWN, str(e)
        except (PaimonError, OSError) as e:
            report.outcome, report.error = Outcome.FAILED, f"{type(e).__name__}: {e}"
        report.finished_step = ctx.step

    return body


# ------------------------------------------------------------------ the oracle


def merged(rows: Sequence[Row]) -> list[tuple]:
    """What a read returns of ``rows``: per key the highest version (deduplicate with
    ``sequence.field``), unless that is a delete."""
    state: dict[int, Row] = {}
    for r in rows:
        if r.key not in state or state[r.key].ver < r.ver:
            state[r.key] = r
    return sorted((0, r.key, r.value, r.ver) for r in state.values() if r.kind == INSERT)


def landed_rows(published: Mapping[int, Sequence[Row]], upto: int) -> list[Row]:
    """The rows of every APPEND that landed by snapshot ``upto`` (``published``: snapshot id ->
    the rows its APPEND wrote)."""
    return [r for sid, rows in published.items() if sid <= upto for r in rows]


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(row[c] for c in COLUMNS) for row in t.select(list(COLUMNS)).to_pylist())


def check(world: TableWorld, *, faults: bool) -> list[Violation]:
    out: list[Violation] = []
    store = world.store
    table = world.catalog("oracle").get_table(IDENT)
    assert isinstance(table, FileStoreTable)
    core = table.core

    # ---- publication: one landed write per id, contiguous ids
    history: dict[int, Snapshot] = {}
    for w in store.snapshot_writes:
        snap = Snapshot.from_json_bytes(w.data, w.path)
        if snap.id in history and store.files.get(w.path) == w.data:
            out.append(Violation("invariant 6", f"snapshot-{snap.id} written twice"))
        history.setdefault(snap.id, snap)
    ids = sorted(history)
    if ids != list(range(1, len(ids) + 1)):
        out.append(Violation("invariant 1", f"published ids are not contiguous from 1: {ids}"))
    rows_of = dict(world.seed_users)
    rows_of.update({r.commit_user: writer_rows(int(r.name[1:])) for r in world.reports if r.commit_user is not None})
    published: dict[int, list[Row]] = {}  # snapshot id of an APPEND -> its rows
    appended: set[str] = set()
    for sid in ids:
        s = history[sid]
        if s.commit_user not in rows_of:
            out.append(Violation("linearizability", f"snapshot {sid} by unknown user {s.commit_user}"))
        elif s.commit_kind is CommitKind.APPEND:
            if s.commit_user in appended:
                out.append(Violation("invariant 5", f"{s.commit_user}'s APPEND published twice"))
            appended.add(s.commit_user)
            published[sid] = rows_of[s.commit_user]

    # ---- actors: acknowledged means published; no unexpected failure without faults
    for r in world.reports:
        if r.commit_user is not None and r.outcome is Outcome.OK and r.commit_user not in appended:
            out.append(Violation("durability", f"{r.name} was acknowledged but no APPEND of it was published"))
        # Racing an expiration that keeps one snapshot, a writer may lose its base: its
        # compaction reads restored files another writer compacted away and the expiration
        # deleted (DataFileError, nothing published), or its snapshot's base expired before it
        # could tell whether it joined (an unknown outcome, invariant 21). Both are typed, as in
        # Paimon; the retention assumption of protocol.md section 8 rules them out.
        base_expired = (world.scenario.op is TableOp.TAG_EXPIRE and r.commit_user is not None
                        and (r.outcome is Outcome.UNKNOWN or (r.error or "").startswith("DataFileError")))
        if not faults and r.outcome in (Outcome.FAILED, Outcome.UNKNOWN) and not base_expired:
            out.append(Violation("actor", f"{r.name} failed without a fault: {r.error}"))
        if r.outcome is Outcome.CONFLICT and r.commit_user is None:
            out.append(Violation("actor", f"{r.name} reported a commit conflict: {r.error}"))

    # ---- every retained snapshot and tag: complete on storage, reads what was published
    retained = [s for s in ids if core.paths.snapshot_path(s) in store.files]
    views: list[tuple[str, Snapshot, dict[str, str]]] = []
    for sid in retained:
        views.append((f"snapshot {sid}", history[sid], {"scan.snapshot-id": str(sid)}))
    for tag in core.tag_manager.tags():
        views.append((f"tag {tag.name}", tag.snapshot, {"scan.tag-name": tag.name}))
    reader = snapshot_file_reader(core)
    for what, snap, options in views:
        try:
            files = reader.files(snap, Missing.RAISE).paths(core.paths, core.partition_cache.path)
        except (PaimonError, FileNotFoundError) as e:
            out.append(Violation("invariant 4", f"{what}'s metadata cannot be read: {type(e).__name__}: {e}"))
            continue
        missing = sorted(n for n, p in files.items() if p not in store.files)
        if missing:
            out.append(Violation("invariant 4", f"{what} references missing files {missing}"))
            continue
        try:
            got = _rows(table.copy(options).to_arrow())
        except (PaimonError, OSError) as e:
            out.append(Violation("invariant 4", f"{what} cannot be read: {type(e).__name__}: {e}"))
            continue
        landed = landed_rows(published, snap.id)
        if not world.scenario.deletion_vectors:
            if got != merged(landed):
                out.append(Violation("invariant 3", f"{what} reads {got}, the published commits give {merged(landed)}"))
            continue
        # deletion vectors: a read skips level-0 files, so it sees the state of the last
        # compaction; still one row per key, each a version that landed by this snapshot
        candidates = {(0, r.key, r.value, r.ver) for r in landed if r.kind == INSERT}
        keys = [row[1] for row in got]
        if len(set(keys)) != len(keys) or not set(got) <= candidates:
            out.append(Violation("invariant 3", f"{what} reads {got}: a key twice or a row not landed by it"))

    # ---- per configuration
    latest = core.snapshot_manager.latest_snapshot()
    if world.scenario.op is TableOp.DYNAMIC_BUCKET and latest is not None:
        out.extend(_check_dynamic_buckets(table, latest))
    if world.scenario.op is TableOp.SCHEMA_CHANGE:
        out.extend(_check_schemas(world, table, history))
    if world.scenario.op is TableOp.TAG_EXPIRE:
        out.extend(_check_tag(world, table))
    if world.scenario.deletion_vectors and latest is not None and not out:
        # last, as it commits: a full compaction makes every landed row visible
        table.compact(full=True)
        got, want = _rows(table.to_arrow()), merged(landed_rows(published, ids[-1] + 1))
        if got != want:
            out.append(Violation("invariant 3", f"after a full compaction the table reads {got}, the published "
                                                f"commits give {want}"))
    return out


def _check_dynamic_buckets(table: FileStoreTable, latest: Snapshot) -> list[Violation]:
    """Every key lives in one bucket, and that bucket's HASH index holds its hash, no other's."""
    out: list[Violation] = []
    core = table.core
    keys_of: dict[int, set[int]] = {}
    for e in SnapshotReader(core).live_entries(latest):
        path = core.paths.data_file_path(core.partition_cache.path(e.partition), e.bucket, e.file.file_name,
                                         e.file.external_path)
        data = pq.read_table(io.BytesIO(table.file_io.read_bytes(path)))
        column = "_KEY_k" if "_KEY_k" in data.column_names else "k"
        keys_of.setdefault(e.bucket, set()).update(data.column(column).to_pylist())
    owners: dict[int, list[int]] = {}
    for bucket, keys in keys_of.items():
        for k in keys:
            owners.setdefault(k, []).append(bucket)
    split = {k: sorted(b) for k, b in owners.items() if len(b) > 1}
    if split:
        out.append(Violation("dynamic bucket", f"keys in more than one bucket: {split}"))
    files = HashIndexFile(core.file_io, core.paths)
    index: dict[int, set[int]] = {}
    for ie in hash_index_entries(core, latest):
        if ie.bucket in index:
            out.append(Violation("dynamic bucket", f"bucket {ie.bucket} has two HASH index files"))
        index.setdefault(ie.bucket, set()).update(int(h) for h in files.read(ie.index_file))
    key_type = core.schema.field("k").type
    for bucket, keys in keys_of.items():
        hashes = row_hashes([pa.array(sorted(keys), pa.int64())], [key_type])
        lost = sorted(k for k, h in zip(sorted(keys), hashes, strict=True) if int(h) not in index.get(bucket, set()))
        if lost:
            out.append(Violation("dynamic bucket", f"bucket {bucket}'s HASH index lacks keys {lost}"))
        for other, others in index.items():
            clash = sorted(k for k, h in zip(sorted(keys), hashes, strict=True) if other != bucket and int(h) in others)
            if clash:
                out.append(Violation("dynamic bucket", f"keys {clash} of bucket {bucket} indexed in bucket {other}"))
    return out


def _check_schemas(world: TableWorld, table: FileStoreTable, history: Mapping[int, Snapshot]) -> list[Violation]:
    out: list[Violation] = []
    alter = next(r for r in world.reports if r.name == "alter")
    names = table.schema.field_names
    if alter.outcome is Outcome.OK and NEW_COLUMN not in names:
        out.append(Violation("schema", f"alter_table was acknowledged, the latest schema has {names}"))
    if NEW_COLUMN in names:
        column = table.to_arrow().column(NEW_COLUMN).to_pylist()
        if any(v is not None for v in column):
            out.append(Violation("schema", f"rows written under schema 0 read {NEW_COLUMN} = {column}"))
    ids = table.schema_manager.list_ids()
    for sid, snap in history.items():
        if table.core.paths.schema_path(snap.schema_id) not in world.store.files:
            out.append(Violation("schema", f"snapshot {sid} names schema {snap.schema_id}, not on storage ({ids})"))
    return out


def _check_tag(world: TableWorld, table: FileStoreTable) -> list[Violation]:
    tag = next(r for r in world.reports if r.name == "tag")
    if tag.outcome is not Outcome.OK:
        return []
    stored = table.tag_manager().try_get(TAG)
    if stored is None:
        return [Violation("tag", f"create_tag was acknowledged (snapshot {tag.tag_snapshot}) but no tag {TAG} exists")]
    if stored.snapshot.id != tag.tag_snapshot:
        return [Violation("tag", f"tag {TAG} keeps snapshot {stored.snapshot.id}, create_tag reported "
                                 f"{tag.tag_snapshot}")]
    return []


def main(argv: list[str] | None = None) -> int:
    """``python -m fault_injection.explore.table_ops``: random or exhaustive schedules of one
    table configuration; the last line is ``explored N schedules, K violations`` (exit 1 if K > 0)."""
    p = argparse.ArgumentParser(prog="python -m fault_injection.explore.table_ops",
                                description="Explore schedules of whole table operations racing on one table.")
    p.add_argument("op", choices=[o.value for o in TableOp], help="the configuration")
    p.add_argument("--writers", type=int, default=2, help="concurrent writers (TableWrite + TableCommit)")
    p.add_argument("--plant", choices=[x.value for x in TablePlant], default=None, help="swap in a planted bug")
    p.add_argument("--exhaustive", action="store_true", help="every distinct interleaving (DPOR with sleep sets)")
    p.add_argument("--max-schedules", type=int, default=None, help="exhaustive: stop after this many")
    p.add_argument("--max-faults", type=int, default=0,
                   help="exhaustive: also branch on up to K failed or lost-response operations per schedule")
    p.add_argument("--schedules", type=int, default=100, help="random mode: number of schedules")
    p.add_argument("--seed", type=int, default=0, help="random mode: seed of the first schedule")
    p.add_argument("--no-faults", action="store_true", help="random mode without crashes and storage faults")
    args = p.parse_args(argv)
    logging.disable(logging.WARNING)  # impl logs every simulated fault
    table_scenario = TableScenario(TableOp(args.op), args.writers, TablePlant(args.plant) if args.plant else None)
    # the search takes a Scenario; a table configuration runs through run_schedule's new_world hook
    scenario = cast(Scenario, table_scenario)
    print(f"configuration: {table_scenario.label()}")
    if args.exhaustive:
        ex = exhaustive(scenario, max_schedules=args.max_schedules, max_faults=args.max_faults)
        print(f"exhaustive: {ex.schedules} schedules (+{ex.blocked} cut by sleep sets) in {ex.seconds:.1f} s; "
              f"complete: {ex.complete}")
        found, schedules = ex.findings, ex.schedules
    else:
        rm = random_mode(scenario, schedules=args.schedules, seed=args.seed, faults=not args.no_faults)
        print(f"random: {rm.schedules} schedules in {rm.seconds:.1f} s")
        found, schedules = rm.findings, rm.schedules
    for finding in found[:1]:
        print(f"counterexample (seed {finding.seed}, schedule #{finding.schedules}): {format_schedule(finding.steps)}")
        for v in finding.violations:
            print(f"VIOLATION {v}")
    print(f"explored {schedules} schedules, {len(found)} violations")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())

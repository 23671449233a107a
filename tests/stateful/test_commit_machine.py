"""Stateful tests: the model and FileStoreCommit driven by the same random step sequences.

One state machine instance is one table in fsspec's memory file system (a fresh root per
instance, removed in teardown) with 2-4 committers, each a commit user with its own
FileStoreCommit. A committer plans against the snapshot it last saw (its *view*, possibly
stale); conflict rules are evaluated against the latest snapshot, by the model and by impl.

Each rule runs the same plan through ``model.Model`` and through impl and asserts the same
outcome: the same published snapshot ids, or the same conflict class (and the same ids already
published when only the COMPACT part conflicts). The invariants then compare storage with the
model after every step (see ``TableMachine.storage_matches_model``).

A failing example prints as a list of rule calls with small integer arguments, followed by
the notes each step wrote ("c1 #4 commit: APPEND[...] COMPACT[...] -> ok [5, 6]").
"""

from __future__ import annotations

import math
import os
import posixpath
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable

import fsspec
from hypothesis import event as hypothesis_event
from hypothesis import note as hypothesis_note
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import impl.errors as impl_errors
from impl.commit import FileStoreCommit
from impl.commit.options import CommitOptions
from impl.data.types import INT, DataField
from impl.format import avro
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.maintenance.cleanup import delete_tag as impl_delete_tag
from impl.maintenance.cleanup import protected_names
from impl.manifest.merger import MergeOptions
from impl.schema.records import TableSchema
from impl.snapshot.expire import ExpireConfig, SnapshotExpiration
from impl.snapshot.records import Snapshot as ImplSnapshot
from impl.table.table import FileStoreTable
from impl.tag.manager import TagManager
from model import (
    ADD,
    APPEND,
    COMPACT,
    DELETE,
    HASH,
    CommitConflictError,
    Entry,
    FieldFacts,
    FileFacts,
    IndexFacts,
    Model,
    ModelError,
    SchemaFacts,
    SnapshotNotExistError,
    check_conflicts,
    identity,
)
from simulation.bridge import ModelFactsReader, sim_schema, to_committable
from simulation.committers import absorb_overlapping

PROFILE = settings.get_profile("stateful-" + os.environ.get("HYPOTHESIS_PROFILE", "ci"))

N_PARTITIONS = 3
TAG_NAMES = ["t0", "t1", "t2"]
DEFAULT_BUCKETS = 2
MAX_LEVEL = 4

# (target file size, full-compaction threshold, minimum count of a minor merge), in bytes.
# A manifest is an Avro container whose header alone is ~2.2 kB, so with a 2 kB target every
# manifest holds one entry and only full merges fire; with 5 kB / 3 kB targets, 2-3 small
# manifests reach the target and minor merges fire too.
MERGE_CONFIGS = [
    (2 * 1024, 4 * 1024, 3),
    (5 * 1024, 10 * 1024, 3),
    (3 * 1024, 12 * 1024, 2),
]

# Size of a manifest container holding no entry: every real manifest is strictly larger.
EMPTY_MANIFEST_SIZE = len(avro.write_avro(avro.MANIFEST_ENTRY_SCHEMA, []))




def note(text: str) -> None:
    """hypothesis.note, or print when a step is driven by hand outside of a Hypothesis test."""
    try:
        hypothesis_note(text)
    except InvalidArgument:
        print(text)


EVENTS: Counter[str] = Counter()  # what the steps did, over all examples of this process


def event(text: str) -> None:
    EVENTS[text] += 1
    try:
        hypothesis_event(text)
    except InvalidArgument:  # a step driven by hand, outside of a Hypothesis test
        pass


# ------------------------------------------------------------------------------ plans


@dataclass(frozen=True)
class Plan:
    """One committable in model terms: what a committer hands to commit() or overwrite()."""

    user: str
    identifier: int
    new_files: tuple[FileFacts, ...] = ()
    deleted_files: tuple[FileFacts, ...] = ()
    compact_before: tuple[FileFacts, ...] = ()
    compact_after: tuple[FileFacts, ...] = ()
    overwrite: str | None = None  # None (a commit), "partition", "table" or "dynamic"
    partition: int | None = None  # the partition an overwrite of kind "partition" replaces
    changelog: tuple[FileFacts, ...] = ()  # changelog files of the APPEND part (not in the model)
    new_index: tuple[tuple, ...] = ()  # index files (p, bucket, total_buckets, name) the APPEND adds
    deleted_index: tuple[tuple, ...] = ()  # ... and deletes
    prepared_schema_id: int | None = None  # the schema the committer's files were written under

    @property
    def append_entries(self) -> list[Entry]:
        return [Entry(ADD, f) for f in self.new_files] + [Entry(DELETE, f) for f in self.deleted_files]

    @property
    def compact_entries(self) -> list[Entry]:
        return [Entry(DELETE, f) for f in self.compact_before] + [Entry(ADD, f) for f in self.compact_after]

    def append_only(self) -> "Plan":
        return replace(self, compact_before=(), compact_after=())

    def compact_only(self) -> "Plan":
        return replace(self, new_files=(), deleted_files=())

    def describe(self) -> str:
        def files(sign, fs):
            return [f"{sign}{fmt(f)}" for f in fs]
        if self.overwrite:
            what = {"partition": f"partition p={self.partition}", "table": "whole table",
                    "dynamic": "dynamic"}[self.overwrite]
            compact = files('-', self.compact_before) + files('+', self.compact_after)
            return (f"#{self.identifier} overwrite {what}: [{' '.join(files('+', self.new_files))}]"
                    + (f" COMPACT[{' '.join(compact)}]" if compact else ""))
        parts = []
        if self.new_files or self.deleted_files:
            extra = [f"changelog {len(self.changelog)}"] if self.changelog else []
            extra += [f"+index {i[3]}(p{i[0]}/b{i[1]})" for i in self.new_index]
            extra += [f"-index {i[3]}(p{i[0]}/b{i[1]})" for i in self.deleted_index]
            parts.append(f"APPEND[{' '.join(files('+', self.new_files) + files('-', self.deleted_files) + extra)}]")
        if self.compact_before or self.compact_after:
            parts.append(f"COMPACT[{' '.join(files('-', self.compact_before) + files('+', self.compact_after))}]")
        return f"#{self.identifier} commit: {' '.join(parts) or '(empty)'}"

    # -------------------------------------------------------------- running it

    def run_model(self, model: Model, *, skip_committed: bool = False) -> list[int]:
        if self.overwrite is None:
            return model.commit(self.user, self.identifier, self.new_files, self.deleted_files,
                                self.compact_before, self.compact_after, skip_committed=skip_committed,
                                new_index_files=[index_facts(i) for i in self.new_index],
                                deleted_index_files=[index_facts(i) for i in self.deleted_index],
                                prepared_schema_id=self.prepared_schema_id)
        if self.overwrite == "partition":
            partitions = {self.partition}
        elif self.overwrite == "dynamic":
            partitions = {f.partition for f in self.new_files}
        else:
            partitions = None
        ids = model.overwrite(self.user, self.identifier, partitions, self.new_files, skip_committed=skip_committed,
                              prepared_schema_id=self.prepared_schema_id)
        if self.compact_before or self.compact_after:  # impl: a COMPACT snapshot follows the OVERWRITE
            ids += model.commit(self.user, self.identifier, compact_before=self.compact_before,
                                compact_after=self.compact_after, skip_committed=skip_committed,
                                prepared_schema_id=self.prepared_schema_id)
        return ids

    def run_impl(self, commit: FileStoreCommit, *, filter_committed: bool = False) -> list[int]:
        committable = to_committable(self.identifier, new_files=self.new_files, deleted_files=self.deleted_files,
                                     compact_before=self.compact_before, compact_after=self.compact_after,
                                     changelog_files=self.changelog, new_index_files=self.new_index,
                                     deleted_index_files=self.deleted_index)
        todo = commit.filter_committed([committable]) if filter_committed else [committable]
        ids: list[int] = []
        for c in todo:
            if self.overwrite is None:
                stats = commit.commit(c)
            elif self.overwrite == "partition":
                # partition specs often come as strings ({"dt": "2024-01-01"}): use both forms
                value = str(self.partition) if self.identifier % 2 else self.partition
                stats = commit.overwrite({"p": value}, c)
            elif self.overwrite == "dynamic":
                stats = commit.overwrite(None, c, dynamic=True)
            else:
                stats = commit.overwrite(None, c)
            ids += stats.snapshot_ids
            for kind in stats.manifest_merges:
                event(f"manifest merge: {kind}")
            if stats.lost_races:
                event("lost a race")
        return ids


def index_facts(ref: tuple) -> IndexFacts:
    """A plan's index file (p, bucket, total_buckets, name) as the model's fact (the bridge
    writes them as HASH index files)."""
    p, b, _, name = ref
    return IndexFacts(p, b, HASH, name)


def schema_facts(schema: TableSchema) -> SchemaFacts:
    """The model's view of an impl schema (type names as model.schema spells them)."""
    names = {"VARCHAR": "STRING"}
    return SchemaFacts(schema.id, tuple(FieldFacts(f.id, f.name, names.get(f.type.root, f.type.root), f.type.nullable)
                                        for f in schema.fields),
                       schema.partition_keys, schema.primary_keys, dict(schema.options))


def fmt(f: FileFacts) -> str:
    keys = "" if f.min_key is None else f"[{f.min_key}..{f.max_key}]"
    return f"{f.file_name}(p{f.partition}/b{f.bucket}of{f.total_buckets}/L{f.level}{keys}/r{f.row_count})"


@dataclass(frozen=True)
class Outcome:
    """What a commit call did: published ids, and the error class name if it raised."""

    error: str | None
    published: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.error or 'ok'} {list(self.published)}"


def model_outcome(model: Model, plan: Plan, fn: Callable[[], object]) -> Outcome:
    """Run ``fn`` against the model; published = snapshots of (user, identifier) it added."""
    before = model.latest().id if model.latest() else 0
    error = None
    try:
        fn()
    except CommitConflictError as e:
        error = type(e).__name__
    except ValueError:
        error = "ValueError"
    published = tuple(s.id for s in model.snapshots if s.id > before and s.commit_user == plan.user
                      and s.commit_identifier == plan.identifier)
    return Outcome(error, published)


def impl_outcome(fn: Callable[[], list[int]]) -> Outcome:
    try:
        return Outcome(None, tuple(fn()))
    except impl_errors.CommitConflictError as e:
        return Outcome(type(e).__name__, tuple(e.published_snapshot_ids))
    except ValueError as e:  # OverwritePartitionError is a ValueError, as the model's is
        return Outcome("ValueError", tuple(getattr(e, "published_snapshot_ids", ())))


@contextmanager
def publishing_through(commit: FileStoreCommit, hook: Callable[[ImplSnapshot, Callable], bool]):
    """While inside, ``commit``'s publish calls go to ``hook(snapshot, publish)``; ``publish``
    is the real one (the hook decides whether, when and around what to call it)."""
    manager = commit.snapshot_manager
    publish = manager.try_create  # the commit path's create (it moves the LATEST hint itself)
    manager.try_create = lambda snapshot: hook(snapshot, publish)
    try:
        yield
    finally:
        del manager.try_create


def passes(model: Model, entries: list[Entry], kind: str, prepared_schema_id: int | None = None) -> bool:
    """Whether the part would get to its publish call (conflict check, then schema check)."""
    if model.schema_problem(prepared_schema_id) is not None:
        return False
    try:
        check_conflicts(model.live(), entries, kind, model.primary_key)
        return True
    except CommitConflictError:
        return False


# ------------------------------------------------------------------------------ committers


@dataclass
class Committer:
    index: int
    user: str
    commit: FileStoreCommit
    view: dict = field(default_factory=dict)  # identity -> FileFacts of the snapshot it last saw
    view_id: int | None = None
    next_identifier: int = 1
    last: Plan | None = None  # the committable it committed last
    last_published: tuple[int, ...] = ()  # the snapshots that committable published


@dataclass
class Verified:
    """A retained snapshot checked against the model: its file's bytes and the manifest files
    (name -> size) it references, re-checked cheaply after every step."""

    snapshot_bytes: bytes
    referenced: dict[str, int]


# strategies of the rules' arguments: small integers, resolved against a committer's view
committer_ids = st.integers(0, 3)


@dataclass(frozen=True)
class Spec:
    """A new file to create: partition, bucket (mod the partition's bucket count), level, key
    range [lo, lo + width], rows."""

    p: int
    b: int
    level: int
    lo: int
    width: int
    rows: int

    def __iter__(self):
        return iter((self.p, self.b, self.level, self.lo, self.width, self.rows))

    def __repr__(self) -> str:
        return f"Spec({self.p}, {self.b}, {self.level}, {self.lo}, {self.width}, {self.rows})"


file_specs = st.builds(
    Spec,
    st.integers(0, N_PARTITIONS - 1),
    st.integers(0, 7),
    st.sampled_from([0, 0, 0, 0, 1, 2]),
    st.integers(0, 60),
    st.integers(0, 15),
    st.integers(1, 50),
)


class TableMachine(RuleBasedStateMachine):
    """A primary-key table (partition p, key k) driven through model and impl.

    Rules: ``refresh`` (a committer catches up with the latest), ``write`` (APPEND new files,
    maybe a delete, a re-added live file, changelog and index files), ``compact`` (COMPACT files
    of the committer's view to a higher level, maybe overlapping or as a level upgrade, maybe
    with an APPEND part), ``race`` (another committer's commits land while one is publishing),
    ``commit_again`` (the last committable once more, through filter_committed),
    ``publish_outcome_unknown`` (the publish call raises after or before landing), ``overwrite``
    (a partition, the whole table, dynamic, or with a stray file), ``change_bucket_count``,
    ``alter`` (a new schema: a column added, or the bucket option changed), ``adopt_schema``
    (a committer reopens under the latest schema), ``expire`` (tags protect their files),
    ``create_tag`` / ``delete_tag`` and ``reopen``.
    Invariants: ``storage_matches_model`` (tags included) and ``data_files_match_retained_snapshots``
    (the files of tagged snapshots count as retained until their last tag goes).
    """

    PRIMARY_KEY = True
    examples = 0  # instances created (= examples run) in this process, per class
    steps = 0

    def __init__(self):
        super().__init__()
        type(self).examples += 1
        self.fs = fsspec.filesystem("memory")
        self.root = f"/stateful-{uuid.uuid4().hex}/db.db/t"
        self.model = Model(primary_key=self.PRIMARY_KEY)
        self.committers: list[Committer] = []
        self.next_file = 0
        self.verified: dict[int, Verified] = {}
        self.reader: ModelFactsReader | None = None
        self.merge_config = MERGE_CONFIGS[0]
        self.created: set[str] = set()  # data files written (placeholders), by name
        self.published: set[str] = set()  # data files some published snapshot added
        self.published_identities: set = set()  # identities some published snapshot added
        self.published_upto = 0  # snapshots up to this id are accounted in ``published``
        self.extras: dict[int, Plan] = {}  # APPEND snapshot id -> plan with changelog / index changes

    # ------------------------------------------------------------------ set-up

    @initialize(n=st.integers(2, 4), config=st.integers(0, len(MERGE_CONFIGS) - 1))
    def setup(self, n, config):
        self.merge_config = MERGE_CONFIGS[config]
        target, full, min_count = self.merge_config
        self.options = {
            "manifest.target-file-size": f"{target} b",
            "manifest.full-compaction-threshold-size": f"{full} b",
            "manifest.merge-min-count": str(min_count),
            "commit.min-retry-wait": "1 ms",
            "commit.max-retry-wait": "2 ms",
        }
        self.schema = sim_schema(self.options, primary_key=self.PRIMARY_KEY)
        self.schemas = [self.schema]  # the table's schemas by id (alter appends)
        self.model = Model(primary_key=self.PRIMARY_KEY, schema=schema_facts(self.schema))
        self.committers = [Committer(i, f"user-{i}", self._new_commit(f"user-{i}")) for i in range(n)]
        self.reader = ModelFactsReader(FileIO(self.fs), self.root, primary_key=self.PRIMARY_KEY)
        note(f"{n} committers, merge config target/full/min-count = {self.merge_config}")

    def _new_commit(self, user: str, schema: TableSchema | None = None) -> FileStoreCommit:
        return FileStoreCommit(FileIO(self.fs), self.root, schema or self.schema, commit_user=user,
                               options=CommitOptions.from_options(self.options), sleep=lambda s: None)

    def teardown(self):
        try:
            self.fs.rm(self.root.split("/db.db")[0], recursive=True)
        except FileNotFoundError:
            pass

    # ------------------------------------------------------------------ helpers

    def committer(self, i: int) -> Committer:
        return self.committers[i % len(self.committers)]

    def new_name(self) -> str:
        self.next_file += 1
        return f"f{self.next_file}"

    def see_latest(self, c: Committer) -> None:
        latest = self.model.latest()
        c.view = dict(latest.live) if latest else {}
        c.view_id = latest.id if latest else None

    def view_buckets(self, c: Committer, p: int) -> int:
        for f in c.view.values():
            if f.partition == p:
                return f.total_buckets
        return DEFAULT_BUCKETS

    def latest_buckets(self, p: int) -> int | None:
        for f in self.model.live().values():
            if f.partition == p:
                return f.total_buckets
        return None

    def make_file(self, spec, total_buckets: int, partition: int | None = None) -> FileFacts:
        p, b, level, lo, width, rows = spec
        p = p if partition is None else partition
        keys = (lo, lo + width) if self.PRIMARY_KEY else (None, None)
        return FileFacts(p, b % total_buckets, total_buckets, level, self.new_name(), *keys, rows)

    def new_files(self, c: Committer, specs) -> tuple[FileFacts, ...]:
        return tuple(self.make_file(s, self.view_buckets(c, s.p)) for s in specs)

    def new_plan(self, c: Committer, **kw) -> Plan:
        """A committable of ``c``. Its writer has written the new data files already: each gets a
        placeholder at its data path, so expiration's deletions can be checked (no Parquet)."""
        plan = Plan(c.user, c.next_identifier, prepared_schema_id=c.commit.schema.id, **kw)
        c.next_identifier += 1
        for f in plan.new_files + plan.compact_after:
            if f.file_name not in self.created:
                self.created.add(f.file_name)
                self.fs.pipe_file(self.data_path(f), f.file_name.encode())
        return plan

    def data_path(self, f: FileFacts) -> str:
        return posixpath.join(self.root, f"p={f.partition}", f"bucket-{f.bucket}", f.file_name)

    def plan_compaction(self, c: Committer, pick: int, subset: list[int], bump: int, split: bool,
                        overlap: bool, upgrade: bool) -> tuple[tuple[FileFacts, ...], tuple[FileFacts, ...]]:
        """Compaction of some files of one (partition, bucket) of the committer's view.

        The output goes to level max(input levels) + bump (at least 1). Unless ``overlap``, every
        file of that level whose key range touches the output's is taken as input too, as a real
        LSM compaction does; with ``overlap`` they are left alone and the commit may be refused.
        ``upgrade`` moves a single file one level up under the same name (metadata only).
        """
        groups = sorted({(f.partition, f.bucket) for f in c.view.values()})
        if not groups:
            return (), ()
        group = groups[pick % len(groups)]
        files = sorted((f for f in c.view.values() if (f.partition, f.bucket) == group),
                       key=lambda f: (f.level, f.file_name))
        chosen = {files[i % len(files)].file_name: files[i % len(files)] for i in subset}
        before = list(chosen.values())
        if upgrade:
            # one file moves up a level under its own name; files already at the top stay (the
            # same identity deleted and added again is not what a writer does: test_regressions)
            movable = [f for f in before if f.level < MAX_LEVEL]
            if not movable:
                return (), ()
            f = movable[0]
            return (f,), (replace(f, level=f.level + 1),)
        level = max(1, min(max(f.level for f in before) + bump, MAX_LEVEL))
        if self.PRIMARY_KEY:
            if overlap:
                lo, hi = min(f.min_key for f in before), max(f.max_key for f in before)
            else:
                lo, hi = absorb_overlapping(chosen, files, level)
            before = list(chosen.values())
        rows = sum(f.row_count for f in before)
        p, b, total = before[0].partition, before[0].bucket, before[0].total_buckets
        if self.PRIMARY_KEY and split and hi > lo:
            mid = (lo + hi) // 2
            after = (FileFacts(p, b, total, level, self.new_name(), lo, mid, max(1, rows // 2)),
                     FileFacts(p, b, total, level, self.new_name(), mid + 1, hi, max(1, rows - rows // 2)))
        elif self.PRIMARY_KEY:
            after = (FileFacts(p, b, total, level, self.new_name(), lo, hi, rows),)
        else:
            after = (FileFacts(p, b, total, level, self.new_name(), None, None, rows),)
        return tuple(before), after

    def append_extras(self, c: Committer, new: tuple[FileFacts, ...], changelog: bool, index: int | None) -> dict:
        """Changelog files for ``new``; a HASH index file for the first new file's bucket that
        replaces (DELETEs) the one the committer's view has there (except for ``index`` 0: the
        replacement without its DELETE, index rule 6), and, for odd ``index``, the deletion of
        one index file of the latest snapshot. A stale view makes index rule 5 or 6 refuse it."""
        extra: dict = {}
        if changelog:
            extra["changelog"] = tuple(replace(f, file_name=f"cl-{f.file_name}", level=0) for f in new)
        if index is not None:
            self.next_file += 1
            p0, b0 = new[0].partition, new[0].bucket
            extra["new_index"] = ((p0, b0, new[0].total_buckets, f"ix{self.next_file}"),)
            deleted = []
            if index:
                deleted += [(p0, b0, name) for p, b, name in sorted(self.view_index(c)) if (p, b) == (p0, b0)]
            current = sorted(self.expected_index(self.model.latest().id) if self.model.latest() else ())
            if index % 2 and current and current[index % len(current)] not in deleted:
                deleted.append(current[index % len(current)])
            if deleted:
                extra["deleted_index"] = tuple((p, b, self.view_buckets(c, p), name) for p, b, name in deleted)
        return extra

    def view_index(self, c: Committer) -> frozenset:
        """Index files (p, bucket, name) of the snapshot the committer last saw (the latest if
        that one expired)."""
        if c.view_id is None:
            return frozenset()
        try:
            return self.expected_index(c.view_id)
        except SnapshotNotExistError:
            return self.expected_index(self.model.latest().id) if self.model.latest() else frozenset()

    def record_extras(self, plan: Plan, out: Outcome) -> None:
        """Remember the changelog and index changes of the plan's APPEND snapshot, if it published one."""
        appended = [sid for sid in out.published if self.model.snapshot(sid).kind == APPEND]
        if appended and (plan.changelog or plan.new_index or plan.deleted_index):
            self.extras[appended[0]] = plan

    def expected_index(self, sid: int) -> frozenset:
        """Live index files (p, bucket, name) of snapshot ``sid``: the model's (the fold of every
        index change up to it, a HASH ADD replacing its bucket's file, an overwrite dropping the
        HASH files of the partitions it replaces)."""
        return frozenset((f.partition, f.bucket, f.file_name) for f in self.model.snapshot(sid).index.values())

    def resurrects(self, plan: Plan) -> bool:
        """Would ``plan`` ADD again a file the table had before? Either the same identity, now
        deleted (if it is live, the plan is just refused), or the same name at another level
        without deleting it in the plan (a level upgrade deletes the old level, which is fine).
        Such a plan breaks Paimon's assumption that a file is added once and deleted once, even
        when the plan's own DELETE cancels the ADD again."""
        self.note_published()
        deleted_names = {f.file_name for f in plan.deleted_files + plan.compact_before}
        live = self.model.live()
        for f in plan.new_files + plan.compact_after:
            if identity(f) in self.published_identities and identity(f) not in live:
                return True
            if f.file_name in self.published and f.file_name not in deleted_names and identity(f) not in live:
                return True
        return False

    def note_published(self) -> None:
        for s in self.model.snapshots:
            if s.id > self.published_upto:
                for e in s.changes:
                    if e.kind == ADD:
                        self.published.add(e.file.file_name)
                        self.published_identities.add(identity(e.file))
                self.published_upto = s.id

    def pick_view_file(self, c: Committer, pick: int) -> FileFacts | None:
        files = sorted(c.view.values(), key=lambda f: f.file_name)
        return files[pick % len(files)] if files else None

    def run(self, c: Committer, plan: Plan, *, again: bool = False) -> Outcome:
        """Run ``plan`` through model and impl, assert the same outcome, return it."""
        model_out = model_outcome(self.model, plan, lambda: plan.run_model(self.model, skip_committed=again))
        impl_out = impl_outcome(lambda: plan.run_impl(c.commit, filter_committed=again))
        note(f"{c.user} {'re-' if again else ''}{plan.describe()} -> model {model_out} | impl {impl_out}")
        assert impl_out == model_out, f"{c.user} {plan.describe()}: model {model_out}, impl {impl_out}"
        event(f"outcome: {model_out.error or 'ok'}")
        self.record_extras(plan, model_out)
        if not again:
            c.last, c.last_published = plan, model_out.published
        self.see_latest(c)
        return model_out

    # ------------------------------------------------------------------ rules

    @rule(c=committer_ids)
    def refresh(self, c):
        """The committer reads the latest snapshot and plans against it from now on."""
        self.see_latest(self.committer(c))

    @rule(c=committer_ids, specs=st.lists(file_specs, min_size=1, max_size=4),
          delete=st.sampled_from([None] * 5 + list(range(20))), readd=st.sampled_from([None] * 8 + list(range(20))),
          changelog=st.booleans(), index=st.sampled_from([None] * 3 + list(range(6))))
    def write(self, c, specs, delete, readd, changelog, index):
        """APPEND new files; sometimes also delete a file of the view, or re-add a live one; with
        changelog files for the new files, and a HASH index file replacing the one of the
        committer's view in that bucket (see ``append_extras``: stale views meet index rules 5
        and 6, checked by the model too)."""
        com = self.committer(c)
        new = self.new_files(com, specs)
        deleted = ()
        if delete is not None and (f := self.pick_view_file(com, delete)) is not None:
            deleted = (f,)
        if readd is not None and self.model.live():
            # a second ADD of a live file: FileAlreadyLiveError. (Re-adding a file that was
            # deleted before is not generated: Paimon assumes every file is added once and
            # deleted once, and its manifest merging relies on that; see test_regressions.py.)
            files = sorted(self.model.live().values(), key=lambda f: f.file_name)
            new = new + (files[readd % len(files)],)
        extra = self.append_extras(com, new, changelog, index)
        self.run(com, self.new_plan(com, new_files=new, deleted_files=deleted, **extra))

    @rule(c=committer_ids, pick=st.integers(0, 50), subset=st.lists(st.integers(0, 50), min_size=1, max_size=3),
          bump=st.integers(0, 1), split=st.booleans(), overlap=st.sampled_from([False, False, False, True]),
          upgrade=st.sampled_from([False] * 5 + [True]), specs=st.lists(file_specs, max_size=2),
          delete=st.sampled_from([None] * 4 + list(range(20))), changelog=st.booleans(),
          index=st.sampled_from([None] * 3 + list(range(6))))
    def compact(self, c, pick, subset, bump, split, overlap, upgrade, specs, delete, changelog, index):
        """COMPACT files of the view (stale views make FileNotLiveError), with an APPEND part if
        ``specs``: new files, maybe a deleted file of the view, changelog and index files (so a
        re-commit after a refused COMPACT part must strip all of that APPEND part)."""
        com = self.committer(c)
        before, after = self.plan_compaction(com, pick, subset, bump, split, overlap, upgrade)
        new = self.new_files(com, specs)
        deleted, extra = (), {}
        if new:
            picked = self.pick_view_file(com, delete) if delete is not None else None
            if picked is not None and picked.file_name not in {f.file_name for f in before}:
                deleted = (picked,)
            extra = self.append_extras(com, new, changelog, index)
        self.run(com, self.new_plan(com, new_files=new, deleted_files=deleted, compact_before=before,
                                    compact_after=after, **extra))

    @rule(a=committer_ids, b=committer_ids, part=st.sampled_from([APPEND, COMPACT]),
          pick_a=st.integers(0, 50), subset_a=st.lists(st.integers(0, 50), min_size=1, max_size=3),
          specs_a=st.lists(file_specs, max_size=2),
          racer=st.sampled_from(["compact", "compact", "compact", "overwrite"]),
          pick_b=st.integers(0, 50), subset_b=st.lists(st.integers(0, 50), min_size=1, max_size=3),
          specs_b=st.lists(file_specs, max_size=2), second=st.lists(file_specs, max_size=2),
          bump=st.integers(0, 1), upgrade=st.booleans())
    def race(self, a, b, part, pick_a, subset_a, specs_a, racer, pick_b, subset_b, specs_b, second, bump,
             upgrade):
        """Committer b commits while committer a is publishing its ``part`` (APPEND or COMPACT).

        impl: b's commit runs inside a's first ``try_create`` of that part, so a loses the race
        for the snapshot id and must re-check against the new latest before retrying; with
        ``second`` files, b appends them inside a's second attempt too (a loses twice). b's first
        commit is a compaction (with an APPEND part if ``specs_b``) or an overwrite of the
        partition of its compaction pick. model: b's commits go in at the same points, i.e. each
        one before a's next attempt of that part, as long as a's part still passes the checks.
        """
        ca, cb = self.committer(a), self.committer(b)
        if ca is cb:
            cb = self.committer(a + 1)
        before_a, after_a = self.plan_compaction(ca, pick_a, subset_a, bump, False, False, upgrade)
        plan_a = self.new_plan(ca, new_files=self.new_files(ca, specs_a), compact_before=before_a,
                               compact_after=after_a)
        if racer == "overwrite":
            p = (before_a[0].partition if before_a else pick_b) % N_PARTITIONS
            total = self.view_buckets(cb, p)
            racers = [self.new_plan(cb, new_files=tuple(self.make_file(s, total, partition=p) for s in specs_b),
                                    overwrite="partition", partition=p)]
        else:
            before_b, after_b = self.plan_compaction(cb, pick_b, subset_b, bump, True, False, upgrade)
            racers = [self.new_plan(cb, new_files=self.new_files(cb, specs_b), compact_before=before_b,
                                    compact_after=after_b)]
        if second:
            racers.append(self.new_plan(cb, new_files=self.new_files(cb, second)))
        if not (plan_a.append_entries if part == APPEND else plan_a.compact_entries):
            part = COMPACT if part == APPEND else APPEND
        if not (plan_a.append_entries if part == APPEND else plan_a.compact_entries):
            return
        start = self.model.latest().id if self.model.latest() else 0

        # model: racer k lands before a's (k+1)-th attempt at ``part``, if a gets that far
        model_racers: list[Outcome] = []

        def model_side():
            if part == COMPACT:
                plan_a.append_only().run_model(self.model)  # raises: a never reaches its COMPACT part
            entries = plan_a.append_entries if part == APPEND else plan_a.compact_entries
            for r in racers:
                if not passes(self.model, entries, part, plan_a.prepared_schema_id):
                    break  # a's check fails before it tries to publish: no later racer runs
                out = model_outcome(self.model, r, lambda r=r: r.run_model(self.model))
                model_racers.append(out)
                if not out.published:
                    break  # the racer took no snapshot id, so a's attempt succeeds: no retry
            (plan_a if part == APPEND else plan_a.compact_only()).run_model(self.model)

        model_a = model_outcome(self.model, plan_a, model_side)

        # impl: racer k commits inside a's (k+1)-th try_create of ``part``
        impl_racers: list[Outcome] = []

        def racing_publish(snapshot: ImplSnapshot, publish) -> bool:
            if snapshot.commit_kind.value == part and len(impl_racers) < len(racers):
                r = racers[len(impl_racers)]
                impl_racers.append(impl_outcome(lambda: r.run_impl(cb.commit)))
            return publish(snapshot)

        with publishing_through(ca.commit, racing_publish):
            impl_a = impl_outcome(lambda: plan_a.run_impl(ca.commit))
        note(f"race on {part} after snapshot {start}: {ca.user} {plan_a.describe()} -> model {model_a} | "
             f"impl {impl_a}; racers {cb.user} " + "; ".join(r.describe() for r in racers)
             + f" -> model {[str(o) for o in model_racers]} | impl {[str(o) for o in impl_racers]}")
        assert impl_racers == model_racers, f"racers of {cb.user}: model {model_racers}, impl {impl_racers}"
        assert impl_a == model_a, f"{ca.user}: model {model_a}, impl {impl_a}"
        event(f"race on {part}: {len(model_racers)} of {len(racers)} {racer} racers landed, "
              f"outcome {model_a.error or 'ok'}" + (" after APPEND" if model_a.error and model_a.published else ""))
        ca.last, ca.last_published = plan_a, model_a.published
        if model_racers:
            cb.last, cb.last_published = racers[len(model_racers) - 1], model_racers[-1].published
        self.see_latest(ca)
        self.see_latest(cb)

    @rule(a=committer_ids, b=committer_ids, landed=st.booleans(), specs=st.lists(file_specs, min_size=1, max_size=3),
          racer_specs=st.lists(file_specs, max_size=2))
    def publish_outcome_unknown(self, a, b, landed, specs, racer_specs):
        """Committer a's publish call raises, after its snapshot landed or before; with
        ``racer_specs``, committer b appends in between. a's retry must find its own snapshot
        (even when it is no longer the latest) and report it once, or publish it once."""
        ca, cb = self.committer(a), self.committer(b)
        if ca is cb:
            cb = self.committer(a + 1)
        plan = self.new_plan(ca, new_files=self.new_files(ca, specs))
        racer = self.new_plan(cb, new_files=self.new_files(cb, racer_specs)) if racer_specs else None

        model_racer: list[Outcome] = []

        def model_side():
            if not passes(self.model, plan.append_entries, APPEND, plan.prepared_schema_id):
                plan.run_model(self.model)  # raises: a never reaches its publish call
            if landed:
                plan.run_model(self.model)
            if racer is not None:
                model_racer.append(model_outcome(self.model, racer, lambda: racer.run_model(self.model)))
            if not landed:
                plan.run_model(self.model)

        model_a = model_outcome(self.model, plan, model_side)

        impl_racer: list[Outcome] = []
        calls = []

        def failing_publish(snapshot: ImplSnapshot, publish) -> bool:
            calls.append(snapshot.id)
            if len(calls) > 1:
                return publish(snapshot)
            if landed:
                assert publish(snapshot), "nobody else publishes before this call"
            if racer is not None:
                impl_racer.append(impl_outcome(lambda: racer.run_impl(cb.commit)))
            raise OSError("connection reset while publishing (simulated)")

        with publishing_through(ca.commit, failing_publish):
            impl_a = impl_outcome(lambda: plan.run_impl(ca.commit))
        note(f"publish raised ({'after' if landed else 'before'} landing): {ca.user} {plan.describe()} -> "
             f"model {model_a} | impl {impl_a}; racer {cb.user} {racer.describe() if racer else '-'} -> "
             f"model {[str(o) for o in model_racer]} | impl {[str(o) for o in impl_racer]}")
        assert impl_racer == model_racer, f"racer {cb.user}: model {model_racer}, impl {impl_racer}"
        assert impl_a == model_a, f"{ca.user}: model {model_a}, impl {impl_a}"
        event(f"publish outcome unknown ({'landed' if landed else 'not landed'}"
              f"{', racer' if model_racer else ''}): {model_a.error or 'ok'}")
        self.record_extras(plan, model_a)
        ca.last, ca.last_published = plan, model_a.published
        if racer is not None and model_racer:
            cb.last, cb.last_published = racer, model_racer[0].published
        self.see_latest(ca)
        self.see_latest(cb)

    @rule(c=committer_ids, part=st.sampled_from([APPEND, COMPACT]), pick=st.integers(0, 50),
          subset=st.lists(st.integers(0, 50), min_size=1, max_size=3), specs=st.lists(file_specs, max_size=2),
          bump=st.integers(0, 1))
    def storage_down_then_repeat(self, c, part, pick, subset, specs, bump):
        """Committer c's storage is down whenever it publishes its ``part``: every attempt fails
        before landing until the retries run out, and the call raises CommitOutcomeUnknownError
        reporting what did publish (the APPEND snapshot when the COMPACT part is down). Storage
        comes back and c repeats the same call: what published is skipped and reported again,
        the rest lands once. Together that is the model's plain commit of the plan."""
        com = self.committer(c)
        before, after = self.plan_compaction(com, pick, subset, bump, False, False, False)
        plan = self.new_plan(com, new_files=self.new_files(com, specs), compact_before=before, compact_after=after)
        if not (plan.append_entries if part == APPEND else plan.compact_entries):
            part = COMPACT if part == APPEND else APPEND
        if not (plan.append_entries if part == APPEND else plan.compact_entries):
            return
        model_out = model_outcome(self.model, plan, lambda: plan.run_model(self.model))

        def down(snapshot: ImplSnapshot, publish) -> bool:
            if snapshot.commit_kind.value == part:
                raise OSError("storage unreachable (simulated)")
            return publish(snapshot)

        unknown: tuple[int, ...] | None = None
        with publishing_through(com.commit, down):
            try:
                first = impl_outcome(lambda: plan.run_impl(com.commit))
            except impl_errors.CommitOutcomeUnknownError as e:
                unknown = tuple(e.published_snapshot_ids)
        if unknown is not None:
            assert unknown == model_out.published[:len(unknown)] and len(unknown) == (
                part == COMPACT and bool(plan.append_entries)), (
                f"{com.user}: published before the unknown {part}: {unknown}, model {model_out}")
            impl_out = impl_outcome(lambda: plan.run_impl(com.commit))
        else:
            impl_out = first  # refused before reaching the part that is down
        note(f"storage down at {part}: {com.user} {plan.describe()} -> "
             f"{'unknown ' + str(list(unknown)) + ', repeated: ' if unknown is not None else ''}"
             f"impl {impl_out} | model {model_out}")
        assert impl_out == model_out, f"{com.user}: model {model_out}, impl {impl_out}"
        event(f"storage down at {part}: {'unknown, repeated' if unknown is not None else 'refused first'}, "
              f"{model_out.error or 'ok'}")
        com.last, com.last_published = plan, model_out.published
        self.see_latest(com)

    @precondition(lambda self: any(c.last is not None for c in self.committers))
    @rule(c=committer_ids)
    def commit_again(self, c):
        """Re-run the committer's last committable: filter_committed / skip_committed make the
        parts already published no-ops, so nothing is applied twice."""
        com = self.committer(c)
        if com.last is None:
            com = next(x for x in self.committers if x.last is not None)
        earliest = self.model.earliest().id if self.model.earliest() else 1
        if any(sid < earliest for sid in com.last_published):
            # Its snapshots expired: neither filter_committed nor the model can know it was
            # committed, and re-adding its files would resurrect files expiration deleted.
            # Paimon requires snapshot retention to outlive a job's recovery; so does this.
            event("commit again: skipped, its snapshots expired")
            return
        if self.resurrects(com.last):
            # It would ADD again a file the table had and deleted since: model and impl accept
            # that, but Paimon assumes a file is added once and deleted once (expiration then
            # deletes the data file a later snapshot needs). Writers never reuse file names.
            event("commit again: skipped, it would re-add a deleted file")
            return
        before = self.model.latest().id if self.model.latest() else 0
        was_done = self.model.committed_kinds(com.last.user, com.last.identifier)
        # the repeat goes through the committer as it is now: its schema is the one checked
        out = self.run(com, replace(com.last, prepared_schema_id=com.commit.schema.id), again=True)
        if com.last.overwrite is None:
            # a part that was published is not published again
            again = {s.kind for s in self.model.snapshots if s.id > before}
            assert not (again & was_done), f"parts {again & was_done} of #{com.last.identifier} published twice"
        elif "OVERWRITE" in was_done:
            assert out.published == (), "an overwrite already published was published again"

    @rule(c=committer_ids, kind=st.sampled_from(["partition", "partition", "table", "dynamic", "stray"]),
          p=st.integers(0, N_PARTITIONS - 1), specs=st.lists(file_specs, max_size=3),
          buckets=st.sampled_from([None] * 4 + [1, 3]), compaction=st.sampled_from([None] * 3 + list(range(10))))
    def overwrite(self, c, kind, p, specs, buckets, compaction):
        """OVERWRITE one partition (maybe with a new bucket count), the whole table, or the
        partitions that get new files; "stray" carries a file of another partition (refused).
        With ``compaction``, the committable also compacts files of the view: a COMPACT snapshot
        follows the OVERWRITE (refused if the overwrite removed its files)."""
        com = self.committer(c)
        before, after = (self.plan_compaction(com, compaction, [compaction], 1, False, False, False)
                         if compaction is not None else ((), ()))
        if kind in ("partition", "stray"):
            total = buckets or self.view_buckets(com, p)
            new = tuple(self.make_file(s, total, partition=p) for s in specs)
            if kind == "stray":
                q = (p + 1) % N_PARTITIONS
                new += (self.make_file(Spec(q, 0, 0, 0, 5, 1), self.view_buckets(com, q)),)
            plan = self.new_plan(com, new_files=new, overwrite="partition", partition=p,
                                 compact_before=before, compact_after=after)
        else:
            if kind == "dynamic" and not specs:
                specs = [Spec(p, 0, 0, 0, 10, 1)]
            totals = {q: buckets or self.view_buckets(com, q) for q in range(N_PARTITIONS)}
            new = tuple(self.make_file(s, totals[s.p]) for s in specs)
            plan = self.new_plan(com, new_files=new, overwrite=kind, compact_before=before, compact_after=after)
        out = self.run(com, plan)
        if kind == "stray":
            assert out == Outcome("ValueError", ()), out

    @rule(c=committer_ids, p=st.integers(0, N_PARTITIONS - 1), spec=file_specs)
    def change_bucket_count(self, c, p, spec):
        """A plain commit with another bucket count into a partition that has live files."""
        com = self.committer(c)
        total = self.latest_buckets(p)
        if total is None:
            return
        new = (self.make_file(spec, total + 1, partition=p),)
        out = self.run(com, self.new_plan(com, new_files=new))
        assert out == Outcome("BucketCountChangedError", ()), out

    @rule(by_age=st.booleans(), retain_min=st.integers(1, 4), retain_max=st.integers(1, 10),
          max_deletes=st.integers(1, 12))
    def expire(self, by_age, retain_min, retain_max, max_deletes):
        """Expire snapshots with impl.snapshot.expire: by count (``retain_max``), or by age with
        every snapshot old enough (then ``retain_min`` rules); at most ``max_deletes``. The model
        expires the same number; retained snapshots must read exactly as before."""
        retain_min = min(retain_min, retain_max)
        n = len(self.model.snapshots)
        keep = min(retain_min if by_age else retain_max, n)
        k = min(n - keep, max_deletes)
        config = ExpireConfig(retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes,
                              older_than_millis=2**62 if by_age else 0)
        com = self.committers[0].commit
        expiration = SnapshotExpiration(FileIO(self.fs), TablePaths(self.root), com.manifest_file, com.partition_path)
        result = expiration.expire(config, protected_names(self.impl_table().core))
        removed = self.model.expire(1, n - k) if k else []
        note(f"expire {config} -> impl expired {list(result.expired_snapshot_ids)}, "
             f"deleted {len(result.deleted_data_files)} data files | model expired {removed}")
        assert list(result.expired_snapshot_ids) == removed
        event("expired snapshots" if removed else "expired nothing")

    @rule(layout=st.booleans())
    def alter(self, layout):
        """ALTER TABLE: the next schema adds a nullable column (committers prepared under older
        schemas still publish, under the new schema id) or, with ``layout``, changes the
        ``bucket`` option (their commits are refused with SchemaChangedError until they adopt it)."""
        latest = self.schemas[-1]
        highest = latest.highest_field_id if latest.highest_field_id is not None else max(f.id for f in latest.fields)
        if layout:
            new = replace(latest, id=latest.id + 1, options={**latest.options, "bucket": str(latest.id + 2)})
        else:
            new = replace(latest, id=latest.id + 1, highest_field_id=highest + 1,
                          fields=latest.fields + (DataField(highest + 1, f"c{highest + 1}", INT()),))
        assert FileIO(self.fs).try_write_atomic(TablePaths(self.root).schema_path(new.id), new.to_json_bytes())
        self.schemas.append(new)
        self.model.alter(schema_facts(new))
        note(f"alter -> schema {new.id} ({'bucket changed' if layout else 'column added'})")

    @rule(c=committer_ids)
    def adopt_schema(self, c):
        """The committer's writer reopens under the latest schema."""
        cm = self.committer(c)
        cm.commit = self._new_commit(cm.user, self.schemas[-1])

    def impl_table(self) -> FileStoreTable:
        return FileStoreTable(FileIO(self.fs), self.root, self.schemas[-1])

    @rule(pick=st.integers(0, 50), name=st.sampled_from(TAG_NAMES))
    def create_tag(self, pick, name):
        """Tag a retained snapshot, an expired one a tag keeps, or one expired and untagged
        (refused): model and impl give the same outcome."""
        ids = {s.id for s in self.model.snapshots} | {s.id for s in self.model.tags.values()}
        earliest = self.model.earliest()
        if earliest is not None and earliest.id > 1:
            ids.add(earliest.id - 1)
        if not ids:
            return
        sid = sorted(ids)[pick % len(ids)]
        model_out = impl_out = "ok"
        try:
            self.model.create_tag(name, sid)
        except ModelError as e:
            model_out = type(e).__name__
        try:
            self.impl_table().create_tag(name, sid)
        except impl_errors.PaimonError as e:
            impl_out = type(e).__name__
        note(f"create tag {name} of snapshot {sid} -> model {model_out} | impl {impl_out}")
        assert impl_out == model_out
        event(f"create tag: {model_out}")

    @precondition(lambda self: self.model.tags)
    @rule(pick=st.integers(0, 50), name=st.sampled_from(TAG_NAMES))
    def delete_tag(self, pick, name):
        """Delete a tag (mostly an existing one) in model and impl; impl frees the files only it kept."""
        if pick % 8:
            name = sorted(self.model.tags)[pick % len(self.model.tags)]
        self.delete_one_tag(name)

    def delete_one_tag(self, name: str) -> None:
        model_out = impl_out = "ok"
        earliest = self.model.earliest()
        expired = name in self.model.tags and earliest is not None and self.model.tags[name].id < earliest.id
        try:
            self.model.delete_tag(name)
        except ModelError as e:
            model_out = type(e).__name__
        deleted: list[str] = []
        try:
            deleted = impl_delete_tag(self.impl_table().core, name)
        except impl_errors.PaimonError as e:
            impl_out = type(e).__name__
        if expired:
            event(f"delete tag of an expired snapshot: {'deleted files' if deleted else 'nothing to delete'}")
        note(f"delete tag {name} -> model {model_out} | impl {impl_out}")
        assert impl_out == model_out
        event(f"delete tag: {model_out}{' (its snapshot expired)' if expired else ''}")

    def expired_tags(self) -> list[str]:
        earliest = self.model.earliest()
        return sorted(n for n, snap in self.model.tags.items() if earliest is not None and snap.id < earliest.id)

    @precondition(lambda self: self.expired_tags())
    @rule(pick=st.integers(0, 50))
    def delete_expired_tag(self, pick):
        """Delete a tag whose snapshot expired: impl deletes the files only it kept (checked by
        ``data_files_match_retained_snapshots``), keeping what a retained snapshot or tag reads."""
        names = self.expired_tags()
        self.delete_one_tag(names[pick % len(names)])

    @rule()
    def reopen(self):
        """Fresh FileIO and FileStoreCommit objects over the same storage (no cached state)."""
        for c in self.committers:
            c.commit = self._new_commit(c.user, c.commit.schema)
        self.reader = ModelFactsReader(FileIO(fsspec.filesystem("memory")), self.root, primary_key=self.PRIMARY_KEY)
        self.verified.clear()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def count_steps(self):
        type(self).steps += 1

    @invariant()
    def storage_matches_model(self):
        """After every step:

        - the snapshot ids on storage are exactly the model's (contiguous), and the LATEST hint
          and the latest / earliest lookups name the model's latest / earliest;
        - every retained snapshot folds (base + delta, with the model's merge_entries) to the
          model's live files of that snapshot: identity, bucket count, key range, row count;
          its totalRecordCount / deltaRecordCount, kind, user and identifier are the model's;
          its changelog list holds its APPEND's changelog files (and changelogRecordCount their
          rows), its index manifest the model's live index files (HASH replacing per bucket);
        - every manifest and list a retained snapshot references exists, unchanged in size, and
          the manifest directory holds nothing else (no leftovers of refused or lost commits);
        - the base manifest list of every snapshot is bounded (``check_base_bound``).
        """
        if self.reader is None:
            return
        reader, io = self.reader, self.reader.file_io
        model_ids = [s.id for s in self.model.snapshots]
        ids = reader.snapshot_ids()
        assert ids == model_ids, f"snapshot ids on storage {ids}, model {model_ids}"
        assert reader.snapshots.latest_snapshot_id() == (model_ids[-1] if model_ids else None)
        assert reader.snapshots.earliest_snapshot_id() == (model_ids[0] if model_ids else None)
        if model_ids:
            hint = io.read_bytes(reader.paths.hint_path("LATEST")).decode()
            assert hint == str(model_ids[-1]), f"LATEST hint says {hint}, latest is {model_ids[-1]}"
        snapshot_dir = set(io.list_names(reader.paths.snapshot_dir))
        extra = snapshot_dir - {f"snapshot-{i}" for i in ids} - {"LATEST", "EARLIEST"}
        assert not extra, f"unexpected files in the snapshot directory: {sorted(extra)}"

        sizes = {posixpath.basename(s.path): s.size_bytes for s in io.list_status(reader.paths.manifest_dir)}
        referenced: set[str] = set()
        for sid in ids:
            data = io.read_bytes(reader.paths.snapshot_path(sid))
            v = self.verified.get(sid)
            if v is None or v.snapshot_bytes != data:
                v = self.verify_snapshot(sid, data, sizes)
                self.verified[sid] = v
            for name, size in v.referenced.items():
                assert sizes.get(name) == size, f"snapshot {sid} needs {name} ({size} bytes), storage has {sizes.get(name)}"
            referenced |= set(v.referenced)
        for sid in [k for k in self.verified if k not in ids]:
            del self.verified[sid]
        tags = {t.name: t for t in TagManager(io, reader.paths).tags()}
        assert sorted(tags) == sorted(self.model.tags), f"tags on storage {sorted(tags)}, model {sorted(self.model.tags)}"
        for name, tag in tags.items():
            want = self.model.tags[name]
            assert tag.snapshot.id == want.id, f"tag {name} keeps snapshot {tag.snapshot.id}, model {want.id}"
            assert reader.live(tag.snapshot) == dict(want.live), f"tag {name}: live files differ from the model's"
            needs = reader.referenced_files(tag.snapshot)
            missing = sorted(n for n in needs if n not in sizes)
            assert not missing, f"tag {name} references missing files {missing}"
            referenced |= needs
        leftovers = set(sizes) - referenced
        assert not leftovers, f"manifest files no retained snapshot references: {sorted(leftovers)}"

    @invariant()
    def data_files_match_retained_snapshots(self):
        """Every file live in a retained snapshot exists on storage, and the data files on
        storage are exactly those plus the ones written for commits that were never published
        (a refused commit's writer leaves them; only expiration deletes data files)."""
        if self.reader is None:
            return
        self.note_published()
        kept = [*self.model.snapshots, *self.model.tags.values()]
        needed = {self.data_path(f) for s in kept for f in s.live.values()}
        unpublished = {n for n in self.created if n not in self.published}
        paths = self.reader.paths
        data = {p for p in self.fs.find(self.root)
                if not p.startswith((paths.snapshot_dir, paths.manifest_dir, paths.schema_dir, paths.tag_dir))}
        data_names = {posixpath.basename(p) for p in data}
        missing = sorted(needed - data)
        assert not missing, f"files live in a retained snapshot are missing: {missing}"
        extra = sorted(p for p in data - needed if posixpath.basename(p) not in unpublished)
        assert not extra, f"data files no retained snapshot needs were not deleted: {extra}"
        assert data_names <= self.created

    def verify_snapshot(self, sid: int, data: bytes, sizes: dict[str, int]) -> Verified:
        reader = self.reader
        snap = ImplSnapshot.from_json_bytes(data, f"snapshot-{sid}")
        want = self.model.snapshot(sid)
        live = reader.live(snap)
        if live != dict(want.live):
            only_impl = sorted(fmt(f) for k, f in live.items() if want.live.get(k) != f)
            only_model = sorted(fmt(f) for k, f in want.live.items() if live.get(k) != f)
            raise AssertionError(f"snapshot {sid}: impl live files differ from the model's; "
                                 f"only in impl {only_impl}, only in model {only_model}")
        assert (snap.commit_kind.value, snap.commit_user, snap.commit_identifier) == \
            (want.kind, want.commit_user, want.commit_identifier), f"snapshot {sid} header"
        assert snap.schema_id == want.schema_id, f"snapshot {sid}: schemaId {snap.schema_id}, model {want.schema_id}"
        assert snap.total_record_count == want.total_record_count, \
            f"snapshot {sid}: totalRecordCount {snap.total_record_count}, model {want.total_record_count}"
        assert snap.delta_record_count == want.delta_record_count, \
            f"snapshot {sid}: deltaRecordCount {snap.delta_record_count}, model {want.delta_record_count}"
        plan = self.extras.get(sid)
        changelog = sorted(f.file_name for f in plan.changelog) if plan else []
        assert reader.changelog_names(snap) == changelog, f"snapshot {sid}: changelog files"
        assert snap.changelog_record_count == (sum(f.row_count for f in plan.changelog) if changelog else None), \
            f"snapshot {sid}: changelogRecordCount {snap.changelog_record_count}"
        index = reader.index_files(snap)
        assert index == self.expected_index(sid), \
            f"snapshot {sid}: index files {sorted(index)}, expected {sorted(self.expected_index(sid))}"
        self.check_base_bound(snap)
        referenced = reader.referenced_files(snap)
        missing = sorted(n for n in referenced if n not in sizes)
        assert not missing, f"snapshot {sid} references missing files {missing}"
        return Verified(data, {n: sizes[n] for n in referenced})

    def check_base_bound(self, snap: ImplSnapshot) -> None:
        """The base manifest list stays bounded by the merge settings, not by history.

        Let T, F be the target size and the full-compaction threshold, h0 the size of a manifest
        with no entry (every manifest is larger), L the live files of the previous snapshot (what
        the base describes). Split the base list into its *prefix* (the leading manifests that
        have no DELETE entry and are at least T) and the *rest*. Then:

        1. |rest| <= ceil(F / h0) + 1. Without a full merge the merger's input rest weighed < F,
           so it held < F / h0 manifests, and a minor merge never adds manifests; after a full
           merge only the last manifest it wrote can be small or hold deletes.
        2. |prefix| <= L + entries(rest). Every prefix manifest holds at least one ADD, of
           distinct files, and each such file is live or is cancelled by a DELETE of the rest.

        So the base never holds more than L + entries(<F bytes of manifests) + F/h0 + 1
        manifests, however long the history.
        """
        target_size, full, _ = self.merge_config
        # the merger's "at least the target" is its settled size (the target itself for these configs)
        target = MergeOptions(target_size, full).settled_size_bytes
        base = self.reader.base_manifests(snap)
        i = 0
        while i < len(base) and base[i].num_deleted_files == 0 and base[i].file_size >= target:
            i += 1
        prefix, rest = base[:i], base[i:]
        bound_rest = math.ceil(full / EMPTY_MANIFEST_SIZE) + 1
        assert len(rest) <= bound_rest, (
            f"snapshot {snap.id}: {len(rest)} manifests after the merged prefix (bound {bound_rest}); "
            f"sizes {[m.file_size for m in rest]}")
        if snap.id == 1:
            previous_live = 0
        elif snap.id - 1 >= self.model.earliest().id:
            previous_live = len(self.model.read(snap.id - 1))
        else:
            return  # re-verified after a reopen, and its predecessor has expired: no L to bound by
        rest_entries = sum(m.num_added_files + m.num_deleted_files for m in rest)
        assert len(prefix) <= previous_live + rest_entries, (
            f"snapshot {snap.id}: {len(prefix)} full delete-free manifests for {previous_live} live files "
            f"and {rest_entries} pending entries")


class AppendOnlyTableMachine(TableMachine):
    """The same protocol on a table without primary key: no key ranges, no overlap rule."""

    PRIMARY_KEY = False
    examples = 0
    steps = 0


def _run(machine: type[TableMachine], request, **overrides) -> None:
    machine.examples = machine.steps = 0
    EVENTS.clear()
    try:
        run_state_machine_as_test(machine, settings=settings(PROFILE, **overrides))
    finally:
        request.node.user_properties.append(("hypothesis_examples", machine.examples))
        request.node.user_properties.append(("hypothesis_steps", machine.steps))
        print(f"{machine.__name__}: {machine.examples} examples, {machine.steps} steps")
        for text, n in sorted(EVENTS.items()):
            print(f"  {n:6d}  {text}")
    assert machine.examples > 0


def test_primary_key_table_matches_model(request):
    _run(TableMachine, request)


def test_append_only_table_matches_model(request):
    _run(AppendOnlyTableMachine, request, max_examples=max(1, PROFILE.max_examples // 3))

"""A Hypothesis state machine with a crash rule: random commits (APPEND, APPEND + COMPACT,
overwrite of a partition) and expirations, some crashed at a random storage operation.

After a crash the table is reopened through a healthy file system; the snapshots impl
published beyond what the model holds tell which parts of the commit landed, and the
model applies exactly those (the model applies a commit iff impl published it). Then the
writer either recovers (re-runs the commit with the same user and identifier through
``filter_committed``; the model applies what that publishes) or abandons the commit (its
files become orphans). A crashed expiration is always re-run (an interrupted expiration
is completed by the next one). After every step the impl's retained snapshots, their ids
and every one's live files equal the model's, and the table is intact.
"""

from __future__ import annotations

from fault_scenarios import (
    FAR_FUTURE_MILLIS,
    CommitSpec,
    F,
    audit,
    d,
    make_schema,
    model_facts,
    open_table,
    published_parts,
    record_summary,
    run_commit,
    table_path,
)
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fault_injection import Crash, FaultyFileSystem, SimulatedCrash, fresh_memory_storage, remove_storage
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.table.table import FileStoreTable
from model import Model

SCHEMA = make_schema()
USERS = ("alice", "bob")
PARTITIONS = (d(1), d(2), d(3))


class CrashMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.inner, self.root = fresh_memory_storage("stateful")
        FileIO(self.inner).write_bytes(TablePaths(table_path(self.root)).schema_path(0), SCHEMA.to_json_bytes())
        self.model = Model(primary_key=True)
        self.next_identifier = {u: 1 for u in USERS}
        self.files = 0
        self.stats = {"steps": 0, "crashed": 0, "recovered": 0, "abandoned": 0}

    def teardown(self):
        remove_storage(self.inner, self.root)
        record_summary("crash_stateful", "stateful", "random commits/expirations, Crash(random op)",
                       self.stats["crashed"], **{k: v for k, v in self.stats.items() if k != "crashed"})

    # ------------------------------------------------------------------ helpers

    def _new_file(self, dt: str, bucket: int, level: int, lo: int, hi: int) -> F:
        self.files += 1
        return F(dt, bucket, level, f"data-s{self.files}-0.parquet", lo, hi)

    def _spec_of(self, facts) -> F:
        dt = facts.partition[0]
        return F(dt, facts.bucket, facts.level, facts.file_name, facts.min_key, facts.max_key)

    def _apply_published(self, spec: CommitSpec) -> list:
        """Apply on the model the parts of ``spec`` impl published beyond the model's snapshots."""
        a = audit(self.inner, self.root)
        assert a.ok, a.problems
        known = self.model.latest().id if self.model.latest() else 0
        parts = published_parts(a, known)
        expected = spec.parts
        assert all(p in expected for p in parts), f"unexpected snapshots {parts} for {expected}"
        assert len(set(parts)) == len(parts), f"a part published twice: {parts}"
        for p in parts:
            spec.apply_part(self.model, p[2])
        return parts

    def _run(self, spec: CommitSpec, crash_at: int | None, recover: bool) -> None:
        fs = FaultyFileSystem(self.inner, [Crash(crash_at)] if crash_at is not None else [])
        crashed = False
        try:
            run_commit(FileIO(fs), self.root, SCHEMA, spec)
        except SimulatedCrash:
            crashed = True
        self.stats["steps"] += 1
        published = self._apply_published(spec)
        if not crashed:
            assert published == spec.parts, (published, spec.parts)
        else:
            self.stats["crashed"] += 1
            if recover:
                self.stats["recovered"] += 1
                run_commit(FileIO(self.inner), self.root, SCHEMA, spec, recover=True)
                self._apply_published(spec)
                assert self.model.committed_kinds(spec.user, spec.identifier) == {p[2] for p in spec.parts}
            else:
                self.stats["abandoned"] += 1
        self.next_identifier[spec.user] += 1

    # ------------------------------------------------------------------ rules

    @rule(user=st.sampled_from(USERS), data=st.data(),
          crash_at=st.one_of(st.none(), st.integers(0, 60)), recover=st.booleans())
    def commit(self, user, data, crash_at, recover):
        n_new = data.draw(st.integers(1, 2), label="new files")
        new = []
        for _ in range(n_new):
            lo = data.draw(st.integers(1, 60), label="lo")
            new.append(self._new_file(data.draw(st.sampled_from(PARTITIONS), label="dt"),
                                      data.draw(st.integers(0, 1), label="bucket"), 0,
                                      lo, lo + data.draw(st.integers(0, 5), label="width")))
        before, after = (), ()
        groups = {}
        for f in self.model.live().values():
            groups.setdefault((f.partition, f.bucket), []).append(f)
        if groups and data.draw(st.booleans(), label="compact"):
            key = data.draw(st.sampled_from(sorted(groups)), label="group")
            # full compaction of the group into one level-1 file covering its key range
            files = groups[key]
            before = tuple(self._spec_of(f) for f in files)
            lo = min(f.min_key for f in files)
            hi = max(f.max_key for f in files)
            after = (self._new_file(key[0][0], key[1], 1, lo, hi),)
        spec = CommitSpec(user, self.next_identifier[user], new_files=tuple(new),
                          compact_before=before, compact_after=after)
        self._run(spec, crash_at, recover)

    @rule(user=st.sampled_from(USERS), dt=st.sampled_from(PARTITIONS), lo=st.integers(1, 60),
          crash_at=st.one_of(st.none(), st.integers(0, 40)), recover=st.booleans())
    def overwrite(self, user, dt, lo, crash_at, recover):
        spec = CommitSpec(user, self.next_identifier[user], new_files=(self._new_file(dt, 0, 0, lo, lo + 3),),
                          overwrite={"dt": dt})
        self._run(spec, crash_at, recover)

    @precondition(lambda self: len(self.model.snapshots) >= 3)
    @rule(retain=st.integers(1, 3), crash_at=st.one_of(st.none(), st.integers(0, 80)))
    def expire(self, retain, crash_at):
        fs = FaultyFileSystem(self.inner, [Crash(crash_at)] if crash_at is not None else [])
        try:
            FileStoreTable(FileIO(fs), table_path(self.root), SCHEMA).expire_snapshots(
                retain_min=retain, retain_max=retain, max_deletes=10_000)
        except SimulatedCrash:
            self.stats["crashed"] += 1
            # an interrupted expiration is completed by the next one
            FileStoreTable(FileIO(self.inner), table_path(self.root), SCHEMA).expire_snapshots(
                retain_min=retain, retain_max=retain, max_deletes=10_000)
        self.model.expire(retain, retain)
        self.stats["steps"] += 1

    @rule()
    def remove_orphans(self):
        before = audit(self.inner, self.root)
        open_table(self.inner, self.root, SCHEMA).remove_orphan_files(older_than_millis=FAR_FUTURE_MILLIS)
        after = audit(self.inner, self.root)
        assert after.ok, after.problems
        assert {s: model_facts(v.live) for s, v in after.views.items()} == \
            {s: model_facts(v.live) for s, v in before.views.items()}

    # ------------------------------------------------------------------ invariants

    @invariant()
    def impl_equals_model(self):
        a = audit(self.inner, self.root)
        assert a.ok, a.problems
        assert a.snapshot_ids == [s.id for s in self.model.snapshots]
        for s in self.model.snapshots:
            assert model_facts(a.views[s.id].live) == dict(s.live), f"snapshot {s.id}"
        latest = a.live_entries()
        assert model_facts(latest) == dict(self.model.live())


CrashMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=12, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestCrashMachine = CrashMachine.TestCase


"""Stateful test of postpone bucket mode: the model's postpone rules and impl's table, step by step.

One machine is one postpone-bucket primary-key table (``bucket`` -2, partitions ``a`` / ``b``)
in fsspec's memory file system. Steps:

- write: a batch of inserts and deletes into one partition, committed; impl must put every row
  in bucket -2 (total buckets -2), and the model publishes the same files (an APPEND snapshot);
- compact with a drawn ``postpone.default-bucket-num``: impl's compaction must publish what
  ``model.check_postpone_compaction`` allows (every postponed file of a touched partition leaves,
  real-bucket files of the partition's bucket count appear, in one COMPACT snapshot), the model
  commits the same changes (the commit state machine's rules), and the rows are the model's
  ``replay_postponed``;
- expire.

Invariants after every step: impl's live files equal the model's; a read shows the model's
visible rows (postponed rows are invisible); every row of a real bucket sits in Paimon's bucket
of its key.
"""

from __future__ import annotations

import os
import uuid

import fsspec
import pyarrow as pa
from hypothesis import event, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import impl
from impl.bucket.routing import compute_buckets, encode_partition
from impl.read.scan import SnapshotReader
from impl.snapshot.records import CommitKind
from impl.store.schema import mergetree
from model import ADD as ADD_ENTRY
from model import (
    DELETE,
    DELETE_ROW,
    INSERT,
    POSTPONE_BUCKET,
    Entry,
    FileFacts,
    Model,
    check_postpone_compaction,
    identity,
    replay_postponed,
)

PROFILE = settings.get_profile("stateful-" + os.environ.get("HYPOTHESIS_PROFILE", "ci"))
PARTITIONS = ["a", "b"]
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    pa.field("v", pa.int64())])
rows_st = st.lists(st.tuples(st.integers(0, 7), st.sampled_from([INSERT, INSERT, DELETE_ROW])), min_size=1, max_size=6)


class PostponeMachine(RuleBasedStateMachine):
    examples = 0
    steps = 0

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.fs = fsspec.filesystem("memory")
        self.root = f"/postpone-{uuid.uuid4().hex}"
        cat = impl.Catalog(self.root, filesystem=self.fs)
        cat.create_database("db")
        self.table = cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                      options={"bucket": "-2"})
        self.part = {p: encode_partition((p,), [self.table.schema.field("dt").type]) for p in PARTITIONS}
        self.codec = mergetree().KeyCodec([self.table.schema.field("id").type])
        self.model = Model(primary_key=True)
        self.visible: dict[str, dict[int, int]] = {p: {} for p in PARTITIONS}
        self.pending: dict[str, list[tuple[int, int, int]]] = {p: [] for p in PARTITIONS}
        self.counter = 0

    def teardown(self) -> None:
        try:
            self.fs.rm(self.root, recursive=True)
        except FileNotFoundError:
            pass

    def _facts(self, e) -> FileFacts:
        f = e.file
        return FileFacts(e.partition, e.bucket, e.total_buckets, f.level, f.file_name,
                         self.codec.sort_key(f.min_key), self.codec.sort_key(f.max_key), f.row_count)

    def _delta(self) -> list[Entry]:
        reader = SnapshotReader(self.table.core)
        snap = self.table.core.snapshot_manager.latest_snapshot()
        entries = reader.read_entries(reader.manifest_list.read_delta_manifests(snap))
        return [Entry(ADD_ENTRY if e.kind.name == "ADD" else DELETE, self._facts(e)) for e in entries]

    # ------------------------------------------------------------------ rules

    @rule(p=st.sampled_from(PARTITIONS), rows=rows_st)
    def write(self, p, rows):
        type(self).steps += 1
        keys = [k for k, _ in rows]
        kinds = [kind for _, kind in rows]
        values = []
        for _ in rows:
            self.counter += 1
            values.append(self.counter)
        builder = self.table.new_batch_write_builder()
        w = builder.new_write()
        try:
            w.write_arrow(pa.table({"dt": [p] * len(keys), "id": pa.array(keys, pa.int64()),
                                    "v": pa.array(values, pa.int64())}, schema=SCHEMA),
                          row_kinds=pa.array(kinds, pa.int8()))
            messages = w.prepare_commit()
        finally:
            w.close()
        assert {(m.bucket, m.total_buckets) for m in messages} == {(POSTPONE_BUCKET, POSTPONE_BUCKET)}
        commit = builder.new_commit()
        try:
            commit.commit(messages)
        finally:
            commit.close()
        added = [self._facts(e) for e in SnapshotReader(self.table.core).live_entries(
            self.table.core.snapshot_manager.latest_snapshot()) if identity(self._facts(e)) not in self.model.live()]
        self.model.commit(builder.commit_user, 1, new_files=added)
        self.pending[p].extend(zip(keys, kinds, values, strict=True))
        note(f"write {p} {rows}")

    @rule(default=st.integers(1, 3), full=st.booleans())
    def compact(self, default, full):
        type(self).steps += 1
        before = dict(self.model.live())
        latest = self.table.latest_snapshot()
        stats = self.table.copy({"postpone.default-bucket-num": str(default)}).compact(full=full)
        touched = [p for p in PARTITIONS if self.pending[p]]
        note(f"compact default={default} full={full}: {touched}")
        if not touched:
            assert stats is None and self.table.latest_snapshot() == latest
            return
        assert stats.snapshot_kinds == [CommitKind.COMPACT]
        changes = self._delta()
        check_postpone_compaction(before, changes, default)
        event(f"compacted {len(touched)} partition(s), existing buckets: "
              f"{any(f.bucket >= 0 for f in before.values())}")
        self.model.commit(f"compact-{self.counter}", 1,
                          compact_before=[e.file for e in changes if e.kind == DELETE],
                          compact_after=[e.file for e in changes if e.kind == ADD_ENTRY])
        for p in touched:
            old = [(k, 0, INSERT, v) for k, v in self.visible[p].items()]
            self.visible[p] = replay_postponed(old, self.pending[p])
            self.pending[p] = []

    @rule(keep=st.integers(1, 3))
    def expire(self, keep):
        type(self).steps += 1
        self.table.expire_snapshots(retain_min=keep, retain_max=keep, time_retained_ms=0)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def live_files_match_model(self):
        snap = self.table.core.snapshot_manager.latest_snapshot()
        live = {identity(f): f for f in (self._facts(e) for e in SnapshotReader(self.table.core).live_entries(snap))}
        assert live == dict(self.model.live())

    @invariant()
    def reads_show_the_compacted_rows_only(self):
        got: dict[str, dict[int, int]] = {p: {} for p in PARTITIONS}
        for r in self.table.to_arrow().to_pylist():
            assert r["id"] not in got[r["dt"]]
            got[r["dt"]][r["id"]] = r["v"]
        assert got == self.visible

    @invariant()
    def rows_sit_in_their_keys_bucket(self):
        mt = mergetree()
        core = self.table.core
        for e in SnapshotReader(core).live_entries(core.snapshot_manager.latest_snapshot()):
            if e.bucket == POSTPONE_BUCKET:
                continue
            kv = mt.read_kv_files(core.file_io, core.paths, core.schema, core.partition_cache.path(e.partition),
                                  e.bucket, [e.file], columns=["id"])
            assert set(compute_buckets([kv.column("id")], [core.schema.field("id").type],
                                       e.total_buckets).tolist()) == {e.bucket}


def test_postpone_table_matches_model(request):
    PostponeMachine.examples = PostponeMachine.steps = 0
    try:
        run_state_machine_as_test(PostponeMachine, settings=settings(
            PROFILE, max_examples=max(1, PROFILE.max_examples // 6), stateful_step_count=min(PROFILE.stateful_step_count, 15)))
    finally:
        request.node.user_properties.append(("hypothesis_examples", PostponeMachine.examples))
        request.node.user_properties.append(("hypothesis_steps", PostponeMachine.steps))
    assert PostponeMachine.examples > 0

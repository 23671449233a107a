"""Stateful machine of deletion-vector tables: invariants 22-24 of specs/invariants.md.

A real table (memory file system, a merge engine drawn per example -- deduplicate,
deduplicate with ``sequence.field``, partial-update, aggregation --, ``deletion-vectors.enabled``, 2 buckets, tiny
write buffer and target file size so writes flush several level-0 runs and compactions roll
several files) is written with random upserts and deletes by batch writes (each commit forces
level 0 up with lookup), by a long-lived streaming writer (keeps its deletion vectors and lookup
cache across commits), compacted by the dedicated job, and reopened. After every step, from
the physical state of the latest snapshot (every live file's rows and every deletion vector):

22. every deletion vector names a live data file at level >= 1 (``model.deletion_vectors.dangling``);
23. at most one valid row per key across levels >= 1 (``duplicate_valid_keys``);
24. impl's read = the model's no-merge read of that state (``read_with_deletion_vectors``) =
    the model's merge of every row written up to the last compaction under the drawn engine
    (``model.deletion_vectors.merge_rows_engine``: for the merging engines, compaction merges
    a key's looked-up row into its new rows);
25. with ``changelog-producer`` lookup or full-compaction (drawn per example), the changelog of
    every snapshot, replayed in order from an empty table, gives the table's rows.
"""

from __future__ import annotations

import os
import uuid

import fsspec
import pyarrow as pa
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

import impl
from impl.mergetree import read_kv_files
from impl.mergetree.deletion_vectors import read_deletion_vectors
from impl.mergetree.writer import InlineExecutor
from impl.read.scan import SnapshotReader
from impl.snapshot.records import CommitKind
from impl.store.core import bucket_index_files
from model import DELETE_ROW, INSERT, UPDATE_AFTER
from model.deletion_vectors import (
    ENGINES,
    dangling,
    duplicate_valid_keys,
    merge_rows_engine,
    read_with_deletion_vectors,
)

PROFILE = settings.get_profile("stateful-" + os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("n", pa.int64()),
                    ("ts", pa.int64())])
# (dt, id, kind, v is null, n, ts)
row_st = st.tuples(st.sampled_from(("a", "b")), st.integers(0, 15),
                   st.sampled_from([INSERT, INSERT, UPDATE_AFTER, DELETE_ROW]), st.booleans(),
                   st.one_of(st.none(), st.integers(-5, 9)), st.integers(0, 20))
ENGINE_OPTIONS = {
    "deduplicate": {},
    "sequence.field": {"sequence.field": "ts"},
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                    "fields.v.aggregate-function": "max", "fields.v.ignore-retract": "true",
                    "fields.ts.aggregate-function": "max", "fields.ts.ignore-retract": "true"},
}


class DeletionVectorMachine(RuleBasedStateMachine):
    examples = 0
    steps = 0

    @initialize(trigger=st.integers(2, 5), levels=st.integers(3, 6),
                producer=st.sampled_from(["none", "lookup", "full-compaction"]), engine=st.sampled_from(ENGINES))
    def create(self, trigger, levels, producer, engine):
        type(self).examples += 1
        self.fs = fsspec.filesystem("memory")
        self.root = f"/dv-machine-{uuid.uuid4().hex}"
        catalog = impl.Catalog(self.root, filesystem=self.fs)
        catalog.create_database("db")
        self.table = catalog.create_table(
            "db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
            options={"bucket": "2", "deletion-vectors.enabled": "true", "write-buffer-size": "2 kb",
                     "target-file-size": "4 kb", "num-sorted-run.compaction-trigger": str(trigger),
                     "num-levels": str(levels), "changelog-producer": producer, **ENGINE_OPTIONS[engine]})
        self.producer = producer
        self.engine = engine
        self.replayed: dict = {}  # the changelog of every snapshot, applied in order
        self.replayed_to = 0
        self.rows: list[tuple] = []  # every row written: (key, sequence, kind, value)
        self.visible = 0  # rows a read must reflect: those written up to the last compaction
        self.stream = None

    def teardown(self):
        if self.stream is not None:
            self.stream[0].close()
        try:
            self.fs.rm(self.root, recursive=True)
        except FileNotFoundError:
            pass

    def _kind(self, kind):
        """Retractions the drawn engine covers: sequence.field writes inserts only (once a
        compaction drops a delete, an older-ordered row can come back, in Paimon too: the result
        depends on compaction timing)."""
        return INSERT if self.engine == "sequence.field" else kind

    def _data(self, batch):
        kinds, values = [], []
        for dt, i, kind, v_null, n, ts in batch:
            seq = len(self.rows)
            kind = self._kind(kind)
            value = (None if v_null else f"s{seq:04d}", n, ts)
            self.rows.append(((dt, i), seq, kind, value))
            kinds.append(kind)
            values.append(value)
        note(", ".join(f"{dt}/{i}:{'+I -U +U -D'.split()[k]}{v}" for (dt, i, *_), k, v in zip(batch, kinds, values,
                                                                                              strict=True)))
        return (pa.table({"dt": [r[0] for r in batch], "id": pa.array([r[1] for r in batch], pa.int64()),
                          "v": pa.array([v[0] for v in values], pa.string()),
                          "n": pa.array([v[1] for v in values], pa.int64()),
                          "ts": pa.array([v[2] for v in values], pa.int64())}), pa.array(kinds, pa.int8()))

    @rule(batch=st.lists(row_st, min_size=1, max_size=30))
    def batch_write(self, batch):
        type(self).steps += 1
        self._close_stream()  # one writer of a bucket at a time: the stream commits first
        data, kinds = self._data(batch)
        wb = self.table.new_batch_write_builder()
        with wb.new_write() as w:
            w.write_arrow(data, row_kinds=kinds)
            wb.new_commit().commit(w.prepare_commit())
        if self.engine != "partial-update" or any(k in (INSERT, UPDATE_AFTER) for k in kinds.to_pylist()):
            # (partial-update's ignore-delete drops retractions on write: such a batch commits nothing)
            assert self.table.latest_snapshot().commit_kind is CommitKind.COMPACT
        self.visible = len(self.rows)

    @rule(batch=st.lists(row_st, min_size=1, max_size=30))
    def stream_write(self, batch):
        type(self).steps += 1
        if self.stream is None:
            b = self.table.new_stream_write_builder()
            self.stream = (b.new_write(compaction_executor=InlineExecutor()), b.new_commit(), [0])
        w, c, ident = self.stream
        data, kinds = self._data(batch)
        w.write_arrow(data, row_kinds=kinds)
        ident[0] += 1
        c.commit(w.prepare_commit(ident[0]), ident[0])
        self.visible = len(self.rows)  # inline compaction: level 0 went up in this commit

    def _close_stream(self):
        if self.stream is not None:
            self.stream[0].close()
            self.stream[1].close()
            self.stream = None

    @rule(full=st.booleans())
    def compact(self, full):
        type(self).steps += 1
        self._close_stream()
        self.table.compact(full=full)

    @rule(keep=st.integers(1, 3))
    def expire(self, keep):
        """Expiration deletes index files only expired snapshots use (the invariant reads every
        live vector, so a wrongly deleted one fails it)."""
        type(self).steps += 1
        self._replay_changelog()
        now = max(s.time_millis for s in self.table.snapshots()) + 1 if self.table.snapshots() else 0
        self.table.expire_snapshots(retain_min=keep, retain_max=keep, time_retained_ms=0, now_millis=now,
                                    max_deletes=10_000)
        referenced = {f.file_name for s in self.table.snapshots()
                      for files in bucket_index_files(self.table.core, s).values() for f in files}
        index_dir = self.table.core.paths.index_dir
        on_disk = {p.rsplit("/", 1)[-1] for p in self.fs.find(index_dir)} if self.fs.exists(index_dir) else set()
        assert on_disk == referenced, f"index files on storage {sorted(on_disk)} vs referenced {sorted(referenced)}"

    @rule()
    def reopen(self):
        type(self).steps += 1
        self._close_stream()
        self.table = impl.Catalog(self.root, filesystem=self.fs).get_table("db.t")

    def _replay_changelog(self):
        """Apply the changelog of the snapshots since the last replay (before any can expire)."""
        latest = self.table.latest_snapshot()
        if self.producer == "none" or latest is None or latest.id == self.replayed_to:
            return
        changes = self.table.copy({"incremental-between": f"{self.replayed_to},{latest.id}"}).to_arrow()
        for r in changes.to_pylist():
            key = (r["dt"], r["id"])
            value = (r["v"], r["n"], r["ts"])
            if r["_VALUE_KIND"] in (INSERT, UPDATE_AFTER):
                self.replayed[key] = value
            else:
                assert self.replayed.pop(key, None) == value, f"retraction of {key} does not match"
        self.replayed_to = latest.id

    @invariant()
    def deletion_vector_invariants(self):
        if not hasattr(self, "table"):
            return
        latest = self.table.latest_snapshot()
        index = bucket_index_files(self.table.core, latest)
        buckets: dict = {}
        for e in SnapshotReader(self.table.core).live_entries(latest):
            buckets.setdefault((e.partition, e.bucket), []).append(e.file)
        state_rows = {}
        for (partition, bucket), metas in buckets.items():
            ppath = self.table.core.partition_cache.path(partition)
            files = {}
            for f in metas:
                kv = read_kv_files(self.table.file_io, self.table.core.paths, self.table.schema, ppath, bucket, [f])
                rows = [((r["dt"], r["id"]), r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"], (r["v"], r["n"], r["ts"]))
                        for r in kv.to_pylist()]
                files[f.file_name] = (f.level, rows)
            vectors = {k: set(v.tolist()) for k, v in
                       read_deletion_vectors(self.table.file_io, self.table.core.paths,
                                             index.get((partition, bucket), ())).items()}
            assert not dangling(files, vectors), f"dangling deletion vectors in bucket {bucket}"
            assert not duplicate_valid_keys(files, vectors), f"a key has two valid rows in bucket {bucket}"
            state_rows.update(read_with_deletion_vectors(files, vectors))
        dangling_buckets = set(index) - set(buckets)
        assert not any(index[b] for b in dangling_buckets), "deletion vectors of a bucket with no files"
        got = {}
        for r in self.table.to_arrow().to_pylist():
            assert (r["dt"], r["id"]) not in got
            got[(r["dt"], r["id"])] = (r["v"], r["n"], r["ts"])
        assert got == state_rows == merge_rows_engine(self.rows[:self.visible], self.engine)
        if self.producer != "none":
            # 25. lookup / full-compaction: the changelog replayed from empty gives the table
            self._replay_changelog()
            assert self.replayed == got


def test_deletion_vector_tables_keep_their_invariants(request):
    DeletionVectorMachine.examples = DeletionVectorMachine.steps = 0
    try:
        run_state_machine_as_test(DeletionVectorMachine,
                                  settings=settings(PROFILE, max_examples=max(1, PROFILE.max_examples // 6),
                                                    stateful_step_count=min(PROFILE.stateful_step_count, 12)))
    finally:
        request.node.user_properties.append(("hypothesis_examples", DeletionVectorMachine.examples))
        request.node.user_properties.append(("hypothesis_steps", DeletionVectorMachine.steps))
    assert DeletionVectorMachine.examples > 0

"""Stateful read machine: merged reads of a primary-key table against ``model.merge_rows``
(invariant 8 of specs/invariants.md).

A real table (impl.Catalog on the memory file system, deduplicate merge engine, 2 buckets,
a tiny write buffer so one write flushes several level-0 runs, a low sorted-run trigger so
the writers compact on their own) is written with random upserts, updates and deletes
(explicit row kinds, duplicate keys within one batch), compacted by the dedicated job
(minor and full), expired and reopened from storage. The model is the list of every row
written, in write order: reading snapshot N must give ``merge_rows`` of the rows written up
to N, whatever compactions ran, for the latest snapshot, for time travel to any retained
snapshot, and with filters on key and value columns.

A failing example prints as the list of steps, with the rows each write sent.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter

import fsspec
import pyarrow as pa
from hypothesis import event as hypothesis_event
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import impl
from impl.errors import SnapshotNotExistError
from impl.snapshot.records import CommitKind
from model import DELETE_ROW, INSERT, UPDATE_AFTER, UPDATE_BEFORE, merge_rows

PROFILE = settings.get_profile("stateful-" + os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
OPTIONS = {
    "bucket": "2",
    "write-buffer-size": "2 kb",  # a write of a few dozen rows flushes several sorted runs
    "target-file-size": "4 kb",  # compaction outputs roll into several files
}
PARTITIONS = ("a", "b")

EVENTS: Counter[str] = Counter()


def event(text: str) -> None:
    EVENTS[text] += 1
    hypothesis_event(text)


row_st = st.tuples(
    st.sampled_from(PARTITIONS),
    st.integers(0, 11),
    st.sampled_from([INSERT, INSERT, UPDATE_AFTER, UPDATE_AFTER, DELETE_ROW, UPDATE_BEFORE]),
)


class MergedReadMachine(RuleBasedStateMachine):
    examples = 0
    steps = 0

    @initialize(trigger=st.integers(2, 5), levels=st.integers(2, 6), amplification=st.sampled_from([25, 200]))
    def create(self, trigger, levels, amplification):
        type(self).examples += 1
        self.fs = fsspec.filesystem("memory")
        self.root = f"/read-machine-{uuid.uuid4().hex}"
        catalog = impl.Catalog(self.root, filesystem=self.fs)
        catalog.create_database("db")
        self.table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"],
                                          partition_keys=["dt"],
                                          options={**OPTIONS, "num-sorted-run.compaction-trigger": str(trigger),
                                                   "num-levels": str(levels),
                                                   "compaction.max-size-amplification-percent": str(amplification)})
        # every row written, in write order: (key, sequence, kind, value); the position in the
        # list is the sequence number (impl's per-bucket sequence numbers follow the same order)
        self.rows: list[tuple] = []
        self.rows_at: dict[int, int] = {}  # snapshot id -> number of rows written up to it

    def teardown(self):
        try:
            self.fs.rm(self.root, recursive=True)
        except FileNotFoundError:
            pass

    # ------------------------------------------------------------------ model

    def expected(self, snapshot_id: int | None = None) -> dict:
        n = len(self.rows) if snapshot_id is None else self.rows_at[snapshot_id]
        return merge_rows(self.rows[:n])

    @staticmethod
    def as_dict(t: pa.Table) -> dict:
        got = {}
        for r in t.to_pylist():
            key = (r["dt"], r["id"])
            assert key not in got, f"key {key} read twice"
            got[key] = r["v"]
        return got

    def track_new_snapshots(self, before: int | None) -> list:
        new = [s for s in self.table.snapshots() if before is None or s.id > before]
        for s in new:
            self.rows_at[s.id] = len(self.rows)
        return new

    def latest_id(self) -> int | None:
        s = self.table.latest_snapshot()
        return s.id if s else None

    # ------------------------------------------------------------------ rules

    @rule(batch=st.lists(row_st, min_size=1, max_size=40), write_only=st.booleans())
    def write(self, batch, write_only):
        type(self).steps += 1
        values = []
        for dt, i, kind in batch:
            seq = len(self.rows)
            self.rows.append(((dt, i), seq, kind, f"s{seq}"))
            values.append(f"s{seq}")
        note(f"write{' (write-only)' if write_only else ''}: "
             + ", ".join(f"{dt}/{i}:{'+I -U +U -D'.split()[k]}" for dt, i, k in batch))
        t = self.table.copy({"write-only": "true"}) if write_only else self.table
        data = pa.table({"dt": [r[0] for r in batch], "id": pa.array([r[1] for r in batch], pa.int64()),
                         "v": values})
        before = self.latest_id()
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        try:
            w.write_arrow(data, row_kinds=pa.array([r[2] for r in batch], pa.int8()))
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()
        new = self.track_new_snapshots(before)
        assert new and new[0].commit_kind is CommitKind.APPEND, [s.commit_kind for s in new]
        assert all(s.commit_kind is CommitKind.COMPACT for s in new[1:])
        event(f"write: {'writer compacted' if len(new) > 1 else 'no compaction'}")

    @rule(full=st.booleans())
    def compact(self, full):
        type(self).steps += 1
        before = self.latest_id()
        stats = self.table.compact(full=full)
        new = self.track_new_snapshots(before)
        note(f"compact(full={full}) -> {[s.id for s in new]}")
        assert [s.id for s in new] == (list(stats.snapshot_ids) if stats is not None else [])
        assert all(s.commit_kind is CommitKind.COMPACT for s in new)
        levels = sorted({f.level for split in self.table.new_read_builder().new_scan().plan().splits()
                         for f in split.files})
        event(f"compact(full={full}): {'published' if new else 'nothing to do'}, levels after {levels}")

    @precondition(lambda self: len(self.rows_at) >= 2)
    @rule(keep=st.integers(1, 3))
    def expire(self, keep):
        type(self).steps += 1
        ids = sorted(self.rows_at)
        # "now" just past the newest snapshot: all are older than the (zero) retention time, so
        # the counts alone decide (snapshots taken in the very millisecond of "now" are kept)
        now = max(s.time_millis for s in self.table.snapshots()) + 1
        # max_deletes: Paimon's snapshot.expire.limit (10 by default) caps one run
        self.table.expire_snapshots(retain_min=keep, retain_max=keep, time_retained_ms=0, now_millis=now,
                                    max_deletes=10_000)
        retained = [s.id for s in self.table.snapshots()]
        note(f"expire(keep={keep}) -> retained {retained}")
        assert retained == ids[-keep:]
        for sid in ids[:-keep]:
            del self.rows_at[sid]
            try:
                self.table.copy({"scan.snapshot-id": str(sid)}).to_arrow()
            except SnapshotNotExistError:
                pass
            else:
                raise AssertionError(f"snapshot {sid} expired but still reads")

    @rule()
    def reopen(self):
        type(self).steps += 1
        self.table = impl.Catalog(self.root, filesystem=self.fs).get_table("db.t")

    @precondition(lambda self: self.rows_at)
    @rule(data=st.data())
    def time_travel(self, data):
        type(self).steps += 1
        sid = data.draw(st.sampled_from(sorted(self.rows_at)), label="snapshot")
        got = self.as_dict(self.table.copy({"scan.snapshot-id": str(sid)}).to_arrow())
        assert got == self.expected(sid), f"snapshot {sid}"

    @precondition(lambda self: self.rows)
    @rule(column=st.sampled_from(["id", "v", "dt"]), data=st.data())
    def filtered_read(self, column, data):
        """A filter keeps exactly the merged rows it matches: never an older version of a key
        whose newest version it rejects (filters on values apply after the merge)."""
        type(self).steps += 1
        expected = self.expected()
        rb = self.table.new_read_builder()
        pb = rb.new_predicate_builder()
        if column == "id":
            bound = data.draw(st.integers(0, 12), label="id >=")
            predicate, keep = pb.greater_or_equal("id", bound), (lambda k, v: k[1] >= bound)
        elif column == "dt":
            dt = data.draw(st.sampled_from(PARTITIONS), label="dt =")
            predicate, keep = pb.equal("dt", dt), (lambda k, v: k[0] == dt)
        else:
            # a value some row once had: its key may hold a newer value (or none) by now
            value = data.draw(st.sampled_from([r[3] for r in self.rows]), label="v =")
            predicate, keep = pb.equal("v", value), (lambda k, v: v == value)
        rb = rb.with_filter(predicate)
        got = self.as_dict(rb.new_read().to_arrow(rb.new_scan().plan().splits()))
        assert got == {k: v for k, v in expected.items() if keep(k, v)}, f"filter on {column}"

    # ------------------------------------------------------------------ invariants

    @invariant()
    def latest_reads_the_merge_of_every_row(self):
        if not hasattr(self, "table"):
            return
        assert self.as_dict(self.table.to_arrow()) == self.expected()
        latest = self.table.latest_snapshot()
        if latest is not None:
            assert latest.id == max(self.rows_at)
            # snapshot ids stay contiguous from the earliest retained one
            assert sorted(self.rows_at) == list(range(min(self.rows_at), latest.id + 1))


def test_merged_reads_match_model(request):
    MergedReadMachine.examples = MergedReadMachine.steps = 0
    EVENTS.clear()
    try:
        run_state_machine_as_test(MergedReadMachine,
                                  settings=settings(PROFILE, max_examples=max(1, PROFILE.max_examples // 3),
                                                    stateful_step_count=PROFILE.stateful_step_count))
    finally:
        request.node.user_properties.append(("hypothesis_examples", MergedReadMachine.examples))
        request.node.user_properties.append(("hypothesis_steps", MergedReadMachine.steps))
        for text, n in sorted(EVENTS.items()):
            print(f"  {n:6d}  {text}")
    assert MergedReadMachine.examples > 0

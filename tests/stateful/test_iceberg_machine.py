"""Stateful test of the Iceberg view's crash safety (issue 48 item 4): model.iceberg's rules and
impl's table with ``metadata.iceberg.storage`` = table-location, step by step, read by pyiceberg.

One machine is one partitioned append table on local disk behind fault_injection's
FaultyFileSystem. Steps:

- commit: an append to a partition, or a static overwrite of one; with a drawn crash point k,
  the process "dies" before the k-th Iceberg write of the commit (the manifest, the manifest
  list, ``vN.metadata.json``, the version hint, a deletion), i.e. after the Paimon snapshot was
  published and part of the Iceberg metadata written; the table is then opened afresh;
- sync: ``TableCommit.sync_iceberg`` (``paimon-py iceberg --sync``).

The model keeps the rows of every Paimon snapshot. Invariants after every step, as a reader
finds the Iceberg view through the version hint: ``model.iceberg.iceberg_view_problems`` is
empty (the current Iceberg snapshot mirrors a Paimon snapshot at or below the latest; the
history mirrors retained snapshots); the rows pyiceberg reads at the current snapshot, and at
each snapshot of the history (time travel by Iceberg snapshot id), are the model's rows of the
Paimon snapshot it mirrors; a commit that finished or a sync leaves the view level.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter

import fsspec
import pyarrow as pa
import pytest
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import impl
from fault_injection import WRITE_KINDS, FaultyFileSystem, Latency, SimulatedCrash
from model.iceberg import iceberg_view_problems, level_after_sync, mirrored_paimon_snapshot

pyiceberg_table = pytest.importorskip("pyiceberg.table")

PROFILE = settings.get_profile("stateful-" + os.environ.get("HYPOTHESIS_PROFILE", "ci"))
PARTITIONS = ["a", "b", "c"]
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])
ICEBERG_WRITES = (*WRITE_KINDS, "rm_file", "rm", "mv")


class IcebergCrashHook:
    """Matched against every storage operation (a Latency fault of 0 s): once armed with k, the
    k-th write under the Iceberg metadata directory crashes the process instead of landing."""

    def __init__(self) -> None:
        self.fs: FaultyFileSystem | None = None
        self.left: int | None = None

    def __call__(self, kind: str, path: str) -> bool:
        if self.left is not None and self.fs is not None and "/metadata/" in path and kind in ICEBERG_WRITES:
            if self.left == 0:
                self.left = None
                self.fs.crash()  # this operation and every later one raise SimulatedCrash
            else:
                self.left -= 1
        return False


class IcebergMachine(RuleBasedStateMachine):
    examples = 0
    steps = 0
    crashes = 0

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.dir = tempfile.mkdtemp(prefix="iceberg-machine-")
        self.inner = fsspec.filesystem("file")
        self._open()
        cat = impl.Catalog(self.dir, filesystem=self.fs)
        cat.create_database("db")
        self.table = cat.create_table("db.t", schema=SCHEMA, partition_keys=["dt"],
                                      options={"metadata.iceberg.storage": "table-location"})
        self.rows: dict[int, Counter] = {}  # the model: Paimon snapshot id -> its rows
        self.next_id = 0
        self.level = True

    def _open(self) -> None:
        """A fresh process: a new wrapper over the same disk (a crashed one refuses every op)."""
        self.hook = IcebergCrashHook()
        self.fs = FaultyFileSystem(self.inner, [Latency(self.hook, 0.0)])
        self.hook.fs = self.fs

    def _reopen(self) -> None:
        self._open()
        self.table = impl.Catalog(self.dir, filesystem=self.fs).get_table("db.t")

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _latest_rows(self) -> Counter:
        return self.rows[max(self.rows)] if self.rows else Counter()

    # ------------------------------------------------------------------ rules

    @rule(p=st.sampled_from(PARTITIONS), n=st.integers(1, 3), overwrite=st.booleans(),
          crash=st.one_of(st.none(), st.integers(0, 5)))
    def commit(self, p, n, overwrite, crash):
        type(self).steps += 1
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        before = self.table.latest_snapshot()
        wb = self.table.new_batch_write_builder()
        if overwrite:
            wb.overwrite({"dt": p})
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table({"dt": [p] * n, "id": pa.array(ids, pa.int64())}, schema=SCHEMA))
        messages = w.prepare_commit()
        self.hook.left = crash
        crashed = False
        try:
            c.commit(messages)
        except SimulatedCrash:
            crashed = True
        note(f"commit {'overwrite' if overwrite else 'append'} {p} {ids} crash={crash} crashed={crashed}")
        self.hook.left = None
        if crashed:
            type(self).crashes += 1
            self._reopen()
        latest = self.table.latest_snapshot()
        # the crash comes after the publication: the Paimon snapshot is there either way
        assert latest is not None and (before is None or latest.id == before.id + 1)
        rows = self._latest_rows().copy()
        if overwrite:
            rows = Counter({r: k for r, k in rows.items() if r[0] != p})
        rows.update((p, i) for i in ids)
        self.rows[latest.id] = rows
        self.level = not crashed

    @rule()
    def sync(self):
        type(self).steps += 1
        c = self.table.new_batch_write_builder().new_commit()
        try:
            c.sync_iceberg()
        finally:
            c.close()
        self.level = True

    # ------------------------------------------------------------------ invariants

    def _view(self):
        """The view a Hadoop-table reader finds (the version hint), or None before any."""
        directory = os.path.join(self.table.path, "metadata")
        try:
            with open(os.path.join(directory, "version-hint.text")) as f:
                version = int(f.read())
        except FileNotFoundError:
            return None, None
        path = os.path.join(directory, f"v{version}.metadata.json")
        with open(path) as f:
            doc = json.load(f)
        return doc, pyiceberg_table.StaticTable.from_metadata(path)

    @invariant()
    def iceberg_view_is_behind_never_wrong(self):
        if not self.rows:
            return
        doc, ice = self._view()
        latest = max(self.rows)
        current = None if doc is None else doc["current-snapshot-id"]
        history = [] if doc is None else [s["snapshot-id"] for s in doc["snapshots"]]
        assert iceberg_view_problems(current, history, self.rows.keys(), latest) == []
        if self.level:
            assert level_after_sync(current, latest), (current, latest)
        if ice is None:
            return
        for sid in history:
            got = Counter((r["dt"], r["id"]) for r in ice.scan(snapshot_id=sid).to_arrow().to_pylist())
            assert got == self.rows[mirrored_paimon_snapshot(sid)], sid
        # and impl's own read of that Paimon snapshot agrees with the model
        mirrored = self.table.copy({"scan.snapshot-id": str(mirrored_paimon_snapshot(current))}).to_arrow()
        assert Counter(zip(mirrored["dt"].to_pylist(), mirrored["id"].to_pylist(), strict=True)) == \
            self.rows[mirrored_paimon_snapshot(current)]


def test_iceberg_view_matches_model(request):
    IcebergMachine.examples = IcebergMachine.steps = IcebergMachine.crashes = 0
    try:
        run_state_machine_as_test(IcebergMachine, settings=settings(
            PROFILE, max_examples=max(1, PROFILE.max_examples // 6), stateful_step_count=min(PROFILE.stateful_step_count, 8)))
    finally:
        request.node.user_properties.append(("hypothesis_examples", IcebergMachine.examples))
        request.node.user_properties.append(("hypothesis_steps", IcebergMachine.steps))
    assert IcebergMachine.examples > 0 and IcebergMachine.crashes > 0

"""Checks of a table against the executable model and against an independent recomputation.

- :class:`ModelReplayer` feeds every published snapshot's delta (its manifest entries) to
  :class:`model.Model` in order and, after each one, compares the model's live file set (and
  record count) with what impl reads for that snapshot (base + delta). A conflict the model
  raises (a file deleted that was not live, added twice, overlapping key ranges at level >= 1,
  a changed bucket count) is a problem too: impl published something the protocol forbids.
- :func:`expected_rows` recomputes the rows a primary-key table must hold from the change
  stream that was written, in plain pyarrow: per key, the last change wins; a delete removes it.
- :func:`compare_rows` says how two row sets differ.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.data.binary_row import decode_row
from impl.data.types import DataType
from impl.manifest.records import FileKind, ManifestEntry
from impl.read.scan import SnapshotReader
from impl.snapshot.records import CommitKind, Snapshot
from impl.table.table import FileStoreTable
from model import FileFacts, Identity, Model, identity


@dataclass(frozen=True)
class ReplayStep:
    """What the replay saw at one snapshot."""

    snapshot_id: int
    kind: str
    commit_user: str
    commit_identifier: int
    time_millis: int
    files_per_level: dict[int, int]


@dataclass
class ModelReplayer:
    """Replays snapshots of one table through the model, checking each against impl."""

    table: FileStoreTable
    problems: list[str] = field(default_factory=list)
    steps: list[ReplayStep] = field(default_factory=list)
    gaps: int = 0  # snapshots expired before they could be replayed (the model was re-seeded)
    checked: int = 0

    def __post_init__(self) -> None:
        schema = self.table.schema
        self._key_types: list[DataType] | None = (
            [schema.field(k).type for k in schema.trimmed_primary_keys] if schema.primary_keys else None)
        self._reader = SnapshotReader(self.table.core)
        self._model = Model(primary_key=self.table.is_primary_key_table)
        self._last_id: int | None = None

    # ------------------------------------------------------------------ conversion

    def _facts(self, e: ManifestEntry) -> FileFacts:
        f = e.file
        lo = hi = None
        if self._key_types is not None:
            lo = tuple(decode_row(f.min_key, self._key_types))
            hi = tuple(decode_row(f.max_key, self._key_types))
        return FileFacts(e.partition, e.bucket, e.total_buckets, f.level, f.file_name, lo, hi, f.row_count)

    def _impl_live(self, snap: Snapshot) -> dict[Identity, FileFacts]:
        out = {}
        for e in self._reader.live_entries(snap):
            facts = self._facts(e)
            out[identity(facts)] = facts
        return out

    # ------------------------------------------------------------------ replay

    def _seed(self, live: dict[Identity, FileFacts]) -> None:
        """Start the model over from ``live`` (the first snapshot, or after a gap or a finding)."""
        self._model = Model(primary_key=self.table.is_primary_key_table)
        if live:
            self._model.commit("seed", 0, new_files=list(live.values()))

    def _apply(self, snap: Snapshot) -> None:
        delta = self.table.manifest_file.read_all(self.table.manifest_list.read(snap.delta_manifest_list))
        adds = [self._facts(e) for e in delta if e.kind is FileKind.ADD]
        dels = [self._facts(e) for e in delta if e.kind is FileKind.DELETE]
        m = self._model
        if snap.commit_kind is CommitKind.COMPACT:
            m.commit(snap.commit_user, snap.commit_identifier, compact_before=dels, compact_after=adds)
        elif snap.commit_kind is CommitKind.OVERWRITE:
            parts = {f.partition for f in dels} | {f.partition for f in adds}
            m.overwrite(snap.commit_user, snap.commit_identifier, partitions=parts, new_files=adds)
        else:
            m.commit(snap.commit_user, snap.commit_identifier, new_files=adds, deleted_files=dels)

    def observe(self, snapshot_id: int) -> bool:
        """Replay snapshot ``snapshot_id`` (expected to follow the last one); False if it is gone."""
        snap = self.table.snapshot_manager().try_snapshot(snapshot_id)
        if snap is None:
            return False
        try:
            live = self._impl_live(snap)
        except Exception as e:  # noqa: BLE001 - e.g. expired while we read it
            if self.table.snapshot_manager().try_snapshot(snapshot_id) is None:
                return False
            self.problems.append(f"snapshot {snapshot_id}: cannot read its live files: {e}")
            return True
        contiguous = self._last_id is not None and snapshot_id == self._last_id + 1
        if not contiguous:
            if self._last_id is not None:
                self.gaps += 1
            self._seed(live)
        else:
            problem = self._replay_problem(snap, live)
            if problem:
                self.problems.append(f"snapshot {snapshot_id}{problem}")
                self._seed(live)
        problem = _record_count_problem(snap, live)
        if problem:
            self.problems.append(problem)
        per_level = Counter(f.level for f in live.values())
        self.steps.append(ReplayStep(snapshot_id, snap.commit_kind.value, snap.commit_user, snap.commit_identifier,
                                     snap.time_millis, dict(per_level)))
        self._last_id = snapshot_id
        self.checked += 1
        return True

    def _replay_problem(self, snap: Snapshot, live: dict[Identity, FileFacts]) -> str | None:
        """Apply ``snap``'s delta to the model; what is wrong (after "snapshot N"), if anything."""
        try:
            self._apply(snap)
        except Exception as e:  # noqa: BLE001 - a model conflict is a finding
            return (f" ({snap.commit_kind.value} by {snap.commit_user}): "
                    f"the model rejects its delta: {type(e).__name__}: {e}")
        model_live = dict(self._model.live())
        if set(model_live) != set(live):
            only_model = sorted(k[3] for k in set(model_live) - set(live))[:5]
            only_impl = sorted(k[3] for k in set(live) - set(model_live))[:5]
            return f": live files differ from the model replay (model only: {only_model}, impl only: {only_impl})"
        return None

    def catch_up(self) -> int:
        """Replay every snapshot newer than the last one replayed; returns how many."""
        ids = self.table.snapshot_manager().snapshot_ids()
        n = 0
        for sid in ids:
            if self._last_id is not None and sid <= self._last_id:
                continue
            if self.observe(sid):
                n += 1
        return n


def _record_count_problem(snap: Snapshot, live: dict[Identity, FileFacts]) -> str | None:
    """The snapshot's total_record_count is the sum of its live row counts."""
    rows = sum(f.row_count for f in live.values())
    if snap.total_record_count is not None and snap.total_record_count != rows:
        return f"snapshot {snap.id}: total_record_count {snap.total_record_count} != {rows} rows in its live files"
    return None


def replay_retained(table: FileStoreTable) -> ModelReplayer:
    """A fresh replay of every retained snapshot (seeded with the earliest one's live files)."""
    r = ModelReplayer(table)
    r.catch_up()
    return r


# ====================================================================== rows


def expected_rows(changes: pa.Table, keys: Sequence[str], op_column: str, order_column: str) -> pa.Table:
    """The rows a deduplicate primary-key table holds after ``changes``: per key, the change with
    the highest ``order_column`` wins; ``-D`` / ``-U`` winners remove the key."""
    if changes.num_rows == 0:
        return changes.drop_columns([op_column, order_column])
    t = changes.sort_by([(k, "ascending") for k in keys] + [(order_column, "ascending")])
    n = t.num_rows
    last = np.ones(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)
        for k in keys:
            col = t.column(k).combine_chunks()
            same &= pc.equal(col.slice(1), col.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        last[:-1] = ~same
    t = t.filter(pa.array(last))
    alive = pc.is_in(t.column(op_column), value_set=pa.array(["+I", "+U"]))
    return t.filter(alive).drop_columns([op_column, order_column])


def compare_rows(expected: pa.Table, actual: pa.Table, keys: Sequence[str]) -> list[str]:
    """Differences between two row sets (empty when equal)."""
    cols = expected.column_names
    missing_cols = [c for c in cols if c not in actual.column_names]
    if missing_cols:
        return [f"actual rows lack columns {missing_cols}"]
    a = actual.select(cols).cast(expected.schema, safe=False) if not actual.select(cols).schema.equals(
        expected.schema) else actual.select(cols)
    order = [(k, "ascending") for k in keys]
    e_sorted = expected.sort_by(order).combine_chunks()
    a_sorted = a.sort_by(order).combine_chunks()
    if e_sorted.num_rows == a_sorted.num_rows and all(
            e_sorted.column(c).equals(a_sorted.column(c)) for c in cols):
        return []
    ek = {tuple(r[k] for k in keys): r for r in e_sorted.to_pylist()}
    ak = {tuple(r[k] for k in keys): r for r in a_sorted.to_pylist()}
    missing = [k for k in ek if k not in ak]
    extra = [k for k in ak if k not in ek]
    diff = [k for k in ek if k in ak and ek[k] != ak[k]]
    out = [f"expected {len(ek)} rows, read {len(ak)} ({a_sorted.num_rows} with duplicates)"]
    if missing:
        out.append(f"{len(missing)} missing keys, e.g. {missing[:3]}")
    if extra:
        out.append(f"{len(extra)} unexpected keys, e.g. {extra[:3]}")
    if diff:
        out.append(f"{len(diff)} keys with other values, e.g. {[(k, ek[k], ak[k]) for k in diff[:2]]}")
    return out


__all__ = ["ModelReplayer", "ReplayStep", "replay_retained", "expected_rows", "compare_rows"]

"""Row tracking (``row-tracking.enabled``): the row-id rules of the commit, as a pure replay.

Counterpart of ``impl.commit.row_ids`` (Paimon's RowTrackingCommitUtils). A snapshot's changes
are replayed from the previous snapshot's ``nextRowId``:

- a changed file with min sequence number 0 takes the snapshot id as its sequence numbers;
- an appended file (source APPEND) without a first row id, and not a column update naming
  ``_ROW_ID``, takes the next ``row_count`` ids, in change order;
- everything else keeps what it has; the snapshot's ``nextRowId`` is the id after the last
  one handed out (the previous one when none was).

:func:`row_id_problems` states the invariants on a published history (R1-R3 of
specs/invariants.md row 32): ids are never handed out twice, live ranges of files that are not
column updates never overlap, ``nextRowId`` never decreases and bounds every live range.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Iterable, Sequence

APPEND_SOURCE = "APPEND"
ROW_ID = "_ROW_ID"


@dataclass(frozen=True)
class RowFile:
    """What the row-id rules know about one file of a change."""

    name: str
    row_count: int
    source: str = APPEND_SOURCE
    first_row_id: int | None = None
    min_sequence_number: int = 0
    max_sequence_number: int = 0
    write_cols: tuple[str, ...] | None = None  # a column update names the columns it rewrote
    added: bool = True  # False: the change deletes the file

    @property
    def row_range(self) -> tuple[int, int] | None:
        """First and last id, or None without ids (or without rows)."""
        if self.first_row_id is None or self.row_count <= 0:
            return None
        return self.first_row_id, self.first_row_id + self.row_count - 1

    @property
    def is_column_update(self) -> bool:
        return self.write_cols is not None


def assign(changes: Sequence[RowFile], snapshot_id: int, next_row_id: int | None) -> tuple[list[RowFile], int]:
    """The changes of snapshot ``snapshot_id`` with ids and sequence numbers assigned, and its
    ``nextRowId``; ``next_row_id`` is the previous snapshot's (None: 0)."""
    start = next_row_id or 0
    out = []
    for f in changes:
        if f.min_sequence_number == 0:
            f = replace(f, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
        takes_ids = (f.source == APPEND_SOURCE and f.first_row_id is None
                     and not (f.write_cols is not None and ROW_ID in f.write_cols))
        if takes_ids:
            f = replace(f, first_row_id=start)
            start += f.row_count
        out.append(f)
    return out, start


@dataclass(frozen=True)
class PublishedRows:
    """One published snapshot as the row-id rules see it."""

    snapshot_id: int
    next_row_id: int | None
    changes: tuple[RowFile, ...]  # its delta, in order
    live: tuple[RowFile, ...]  # its live files


def row_id_problems(history: Iterable[PublishedRows]) -> list[str]:
    """Violations of the row-id invariants over consecutive published snapshots (empty: none).

    R1 ids are never reused: a file first added with ids takes a range below its snapshot's
       nextRowId that overlaps no range any earlier file was given (deleted files included),
       unless the same snapshot deletes a file of exactly that range (a compaction moving the
       rows, and so their ids, into the new file);
    R2 the live files that are not column updates have pairwise disjoint ranges, and every
       column update covers exactly the range of a live file that is not one;
    R3 nextRowId never decreases, and every live range ends below it."""
    problems: list[str] = []
    previous = 0
    handed: dict[str, tuple[int, int]] = {}
    for snap in history:
        nxt = snap.next_row_id or 0
        if nxt < previous:
            problems.append(f"snapshot {snap.snapshot_id}: nextRowId {nxt} below the previous {previous}")
        moved = {f.row_range for f in snap.changes if not f.added and f.row_range is not None}
        for f in snap.changes:
            r = f.row_range
            if not f.added or r is None or f.is_column_update or f.name in handed or r in moved:
                continue
            if r[1] >= nxt:
                problems.append(f"snapshot {snap.snapshot_id}: {f.name} got ids {r}, not below nextRowId {nxt}")
            for other, o in handed.items():
                if r[0] <= o[1] and o[0] <= r[1]:
                    problems.append(f"snapshot {snap.snapshot_id}: {f.name} {r} reuses ids of {other} {o}")
            handed[f.name] = r
        bases = sorted((f.row_range, f.name) for f in snap.live if f.row_range is not None and not f.is_column_update)
        for (a, an), (b, bn) in pairwise(bases):
            if b[0] <= a[1]:
                problems.append(f"snapshot {snap.snapshot_id}: {an} {a} and {bn} {b} overlap")
        base_ranges = {r for r, _ in bases}
        for f in snap.live:
            r = f.row_range
            if r is not None and r[1] >= nxt:
                problems.append(f"snapshot {snap.snapshot_id}: {f.name} {r} reaches nextRowId {nxt}")
            if f.is_column_update and r is not None and r not in base_ranges:
                problems.append(f"snapshot {snap.snapshot_id}: column update {f.name} {r} covers no whole file")
        previous = nxt
    return problems


def column_update_conflict(update: tuple[int, int], live: Iterable[RowFile], read_next_row_id: int | None,
                           later_added: Iterable[RowFile]) -> str | None:
    """Why a column update of rows ``update`` (first, last id) must be refused, or None: its
    range is not exactly a live file's that is not an update (its rows were overwritten, deleted
    or compacted), or a file added after the snapshot it read lies over its range among the rows
    that existed then (``read_next_row_id``: that snapshot's nextRowId; None: nothing to check)."""
    if update not in {f.row_range for f in live if not f.is_column_update}:
        return f"no live file covers row ids {update}"
    if read_next_row_id is None:
        return None
    for f in later_added:
        r = f.row_range
        if r is not None and r[0] < read_next_row_id and r[0] <= update[1] and update[0] <= r[1]:
            return f"{f.name} {r}, added after the update read, rewrites its rows"
    return None

"""Deletion vectors in the model: pure rules, read side by side with impl.

- ``check_deletion_vectors`` mirrors ``impl.commit.conflicts.check_deletion_vector_conflicts``;
- ``read_with_deletion_vectors`` is what a read of a deletion-vector bucket returns (levels >= 1
  concatenated, minus deleted positions and retractions; level 0 is not read);
- ``dangling`` and ``duplicate_valid_keys`` are the two safety invariants of the published
  analysis of Paimon's deletion vectors: every deletion vector names a live file; at most one
  valid row per key across levels >= 1.

A bucket's physical state is given as ``files``: data file name -> (level, rows), each row a
(key, sequence_number, row_kind, value) tuple in file order (a row's position is its index),
and ``vectors``: data file name -> set of deleted positions.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from model.errors import IndexFileConflictError
from model.rules import ADD, DELETE_ROW, INSERT, UPDATE_AFTER, UPDATE_BEFORE, merge_rows

Row = tuple  # (key, sequence_number, row_kind, value)
Files = Mapping[str, tuple[int, Sequence[Row]]]
Vectors = Mapping[str, Iterable[int]]


def valid_rows(files: Files, vectors: Vectors) -> list[Row]:
    """The rows of the level >= 1 files that no deletion vector deletes, in file order."""
    out: list[Row] = []
    for name, (level, rows) in files.items():
        if level < 1:
            continue
        deleted = set(vectors.get(name, ()))
        out.extend(r for pos, r in enumerate(rows) if pos not in deleted)
    return out


def read_with_deletion_vectors(files: Files, vectors: Vectors) -> dict[Any, Any]:
    """What a batch read of a deletion-vector bucket returns: {key: value}, no merge."""
    return {r[0]: r[3] for r in valid_rows(files, vectors) if r[2] in (INSERT, UPDATE_AFTER)}


def dangling(files: Files, vectors: Vectors) -> set[str]:
    """Deletion vectors naming a data file that is not live at level >= 1 (must be empty)."""
    return {name for name in vectors if name not in files or files[name][0] < 1}


def duplicate_valid_keys(files: Files, vectors: Vectors) -> set[Any]:
    """Keys with more than one valid row across levels >= 1 (must be empty)."""
    counts = Counter(r[0] for r in valid_rows(files, vectors))
    return {k for k, n in counts.items() if n > 1}


# An index entry: (kind, partition, bucket, index file name, {data file name: cardinality}).
IndexEntry = tuple[str, Hashable, int, str, Mapping[str, int]]


def check_deletion_vectors(previous: Iterable[IndexEntry], changes: Iterable[IndexEntry],
                           removed_buckets: Iterable[tuple[Hashable, int]],
                           live_names: Callable[[Hashable, int], set[str]]) -> None:
    """Raise IndexFileConflictError as impl's ``check_deletion_vector_conflicts`` does: a DELETE
    names a live index file, an ADD does not; afterwards, in every bucket the changes touch or
    whose files the commit removes, no data file has two vectors and every vector names a live
    file."""
    live = {(p, b, n): dvs for kind, p, b, n, dvs in previous if kind == ADD}
    touched = set(removed_buckets)
    for kind, p, b, n, dvs in changes:
        touched.add((p, b))
        if kind == ADD:
            if (p, b, n) in live:
                raise IndexFileConflictError(f"index file {n} is already live")
            live[(p, b, n)] = dvs
        elif live.pop((p, b, n), None) is None:
            raise IndexFileConflictError(f"index file {n} is not live")
    for p, b in touched:
        names = live_names(p, b)
        seen: set[str] = set()
        for (lp, lb, _), dvs in live.items():
            if (lp, lb) != (p, b):
                continue
            for data_file in dvs:
                if data_file in seen or data_file not in names:
                    raise IndexFileConflictError(f"deletion vector of {data_file} is duplicated or dangling")
                seen.add(data_file)


def changelog(old: Mapping[Any, Any], new: Mapping[Any, tuple[int, Any]]) -> list[tuple[Any, int, Any]]:
    """The changelog of compaction producers (``impl.mergetree.changelog.changelog_rows``):
    per key of ``new`` ({key: (row kind, value)}) in key order, against ``old`` ({key: value},
    the previous version): +I new if no previous; -U old, +U new if both; -D old if the new
    version is a retraction and a previous exists; nothing otherwise."""
    out: list[tuple[Any, int, Any]] = []
    for key in sorted(new):
        kind, value = new[key]
        if kind in (INSERT, UPDATE_AFTER):
            if key in old:
                out += [(key, UPDATE_BEFORE, old[key]), (key, UPDATE_AFTER, value)]
            else:
                out.append((key, INSERT, value))
        elif key in old:
            out.append((key, DELETE_ROW, old[key]))
    return out


# ============================================================================ merge engines

ENGINES = ("deduplicate", "sequence.field", "partial-update", "aggregation")


def merge_rows_engine(rows: Iterable[Row], engine: str) -> dict[Any, Any]:
    """What a read returns after ``rows`` (key, sequence_number, row_kind, value), value a tuple
    (v, n, ts), under the merge engines of the DV machine's tables (see its options):

    - ``deduplicate``: ``model.merge_rows`` (the newest row; a retraction deletes the key);
    - ``sequence.field`` (= ts): the row with the highest (ts, sequence number) wins;
    - ``partial-update`` (``ignore-delete``): per column the last non-null value of the +I/+U
      rows, in sequence order; retractions are ignored; a key with an +I/+U row is present;
    - ``aggregation``: n = sum (a retraction subtracts), v and ts = max (retractions ignored);
      a key is never deleted (one with only retractions reads as negated sums and nulls).
    """
    ordered = sorted(rows, key=lambda r: r[1])
    if engine == "deduplicate":
        return merge_rows(ordered)
    if engine == "sequence.field":
        by_order = sorted(ordered, key=lambda r: (r[3][2], r[1]))  # (ts, sequence number)
        return merge_rows((k, rank, kind, value) for rank, (k, _, kind, value) in enumerate(by_order))
    out: dict[Any, list] = {}
    for key, _, kind, value in ordered:
        retract = kind not in (INSERT, UPDATE_AFTER)
        if engine == "partial-update":
            if retract:
                continue
            cur = out.setdefault(key, [None] * len(value))
            for i, x in enumerate(value):
                if x is not None:
                    cur[i] = x
        elif engine == "aggregation":
            cur = out.setdefault(key, [None, None, None])
            v, n, ts = value
            if n is not None:
                cur[1] = (-n if retract else n) if cur[1] is None else cur[1] + (-n if retract else n)
            if not retract:
                cur[0] = v if cur[0] is None else (cur[0] if v is None else max(cur[0], v))
                cur[2] = ts if cur[2] is None else (cur[2] if ts is None else max(cur[2], ts))
        else:
            raise ValueError(f"unknown engine {engine!r}")
    return {k: tuple(v) for k, v in out.items()}

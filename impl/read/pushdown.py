"""Filters of a query engine (DuckDB, Polars) pushed into a table read, without changing the answer.

An engine's filter is translated, leaf by leaf, into a :class:`impl.predicate.predicate.Predicate`
that every row matching the engine's filter also matches (the same, or weaker): a conjunction
keeps the conjuncts that translate, a disjunction translates only when every branch does, a
leaf translates only on a column whose comparison means the same in the engine as in impl.
The engine's own filter is always applied to the rows read afterwards, so what is pushed only
decides which partitions and files are read (and, on primary-key tables, the read builder's
rule decides where a value filter may act: key conjuncts prune files, the rest filter merged
rows), never which rows are returned.

Comparable columns: integers, strings, booleans and dates. Floating point is left to the
engine (Polars and DuckDB order NaN above every number and make NaN equal to itself; Arrow
and file statistics do not), as are timestamps (an engine literal finer than the column's
precision would be truncated) and decimals.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import pyarrow as pa

from impl.errors import InvalidPredicateError
from impl.predicate.predicate import CompoundPredicate, Predicate, PredicateBuilder, and_all
from impl.read.scan import DataSplit

# Paimon type roots whose comparisons engines and impl evaluate alike, and the Python type a
# literal must have to be compared without a conversion
_COMPARABLE: dict[str, tuple[type, ...]] = {
    "TINYINT": (int,), "SMALLINT": (int,), "INT": (int,), "BIGINT": (int,),
    "VARCHAR": (str,), "CHAR": (str,), "BOOLEAN": (bool,), "DATE": (_dt.date,),
}

# the leaf methods an engine filter may become
LEAF_METHODS = frozenset(("equal", "not_equal", "less_than", "less_or_equal", "greater_than",
                          "greater_or_equal", "is_null", "is_not_null", "is_in"))

# ``literal <op> column`` is ``column <flipped op> literal``
FLIPPED = {"equal": "equal", "not_equal": "not_equal", "less_than": "greater_than",
           "less_or_equal": "greater_or_equal", "greater_than": "less_than", "greater_or_equal": "less_or_equal"}


class Untranslatable(Exception):
    """A part of an engine filter that has no exact impl predicate (kept for the engine alone)."""


def leaf(table, method: str, field: str, literals: Sequence[Any] = ()) -> Predicate:
    """The impl predicate ``method(field, literals)`` when it means what the engine's does, else
    :class:`Untranslatable`."""
    if method not in LEAF_METHODS:
        raise Untranslatable(method)
    names = {f.name: f.type for f in table.schema.fields}
    if field not in names:
        raise Untranslatable(f"{field!r} is not a column")
    kinds = _COMPARABLE.get(names[field].root)
    if kinds is None:
        raise Untranslatable(f"{field!r} ({names[field]}) is not compared alike")
    for lit in literals:
        # bool is an int and datetime a date in Python: exact types only
        if lit is None or not any(type(lit) is k for k in kinds):
            raise Untranslatable(f"literal {lit!r} for {field!r}")
    pb = PredicateBuilder(table.schema)
    try:
        if method in ("is_null", "is_not_null"):
            return getattr(pb, method)(field)
        if method == "is_in":
            return pb.is_in(field, list(literals))
        (lit,) = literals
        return getattr(pb, method)(field, lit)
    except InvalidPredicateError as e:  # e.g. 300 for a TINYINT column: the engine's answer stands
        raise Untranslatable(str(e)) from e


def conjunction(parts: Sequence[Predicate | None]) -> Predicate | None:
    """AND of the parts that translated (None for a part that did not): weaker, so safe."""
    return and_all([p for p in parts if p is not None])


def disjunction(parts: Sequence[Predicate | None]) -> Predicate | None:
    """OR of the parts, or nothing when any part did not translate (an untranslated branch
    could match any row)."""
    if not parts or any(p is None for p in parts):
        return None
    return parts[0] if len(parts) == 1 else CompoundPredicate("or", tuple(p for p in parts if p is not None))


class _Read(Protocol):
    """A data or system table's read, counting the data files it opened."""

    files_read: int

    def to_arrow_batch_reader(self, splits: Sequence[Any]) -> pa.RecordBatchReader: ...


@dataclass(frozen=True)
class PushdownScan:
    """One scan an engine made: the predicate pushed into the read (None: none), the columns
    read, the data files planned, and the read (a data table's ``files_read`` counts the files
    opened so far; a system table's read opens no data files)."""

    predicate: Predicate | None
    columns: tuple[str, ...]
    files_planned: int
    read: _Read

    @property
    def files_read(self) -> int:
        return self.read.files_read


def pushed_read(table, predicate: Predicate | None, columns: Sequence[str],
                limit: int | None = None) -> tuple[pa.RecordBatchReader, PushdownScan]:
    """A lazy reader of ``columns`` of ``table`` through its read builder with ``predicate``
    pushed (planned now, read as batches are pulled), and the record of the scan."""
    rb = table.new_read_builder().with_filter(predicate).with_projection(list(columns)).with_limit(limit)
    splits = rb.new_scan().plan().splits()
    read = rb.new_read()
    files = sum(len(s.files) for s in splits if isinstance(s, DataSplit))  # system tables' splits hold none
    record = PushdownScan(predicate, tuple(columns), files, read)
    return read.to_arrow_batch_reader(splits), record


def read_columns(table, wanted: Sequence[str] | None, filter_columns: Sequence[str]) -> list[str]:
    """The columns to read: those the engine wants (all when None) and those its filter reads;
    at least one, since a read of no columns would lose the row count."""
    names = table.schema.field_names
    out = list(names) if wanted is None else list(wanted)
    out += [c for c in names if c in filter_columns and c not in out]
    return out or names[:1]


__all__ = ["PushdownScan", "Untranslatable", "leaf", "conjunction", "disjunction", "pushed_read", "read_columns",
           "FLIPPED", "LEAF_METHODS"]

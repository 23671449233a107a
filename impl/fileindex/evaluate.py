"""Does a file's index rule out every row a predicate asks for? (Paimon's ``FileIndexPredicate``.)

A result is :data:`REMAIN` (the file may hold matching rows), :data:`SKIP` (it holds none), or
a bitmap of the rows that may match (bitmap indexes). Leaves combine the column's indexes with
AND; ``and`` / ``or`` combine children the same way (a bitmap AND a bitmap is their
intersection). Per index type:

- ``bloom-filter``: equal (and each value of IN) is SKIP when the filter certainly lacks it;
  everything else REMAIN.
- ``bitmap``: equal / IN / IS NULL give the rows holding the values; NOT EQUAL / NOT IN /
  IS NOT NULL the complement over the file's rows (a superset of the matching rows, since
  nulls are included); everything else REMAIN.

Float and double literals ``0.0`` / ``-0.0`` / NaN are answered REMAIN: the indexes key floats
by their bits (Java's ``Float.equals``), while SQL equality holds ``-0.0 = 0.0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence, Union

import numpy as np
from pyroaring import BitMap

from impl.data.types import DataType
from impl.fileindex import bitmap, bloom
from impl.fileindex.errors import CorruptFileIndexError
from impl.fileindex.format import decode_header
from impl.fileindex.keys import KeyKind, key_kind, literal_keys
from impl.predicate.predicate import CompoundPredicate, LeafPredicate, Predicate


class _Remain:
    def __repr__(self) -> str:
        return "REMAIN"


class _Skip:
    def __repr__(self) -> str:
        return "SKIP"


REMAIN = _Remain()
SKIP = _Skip()
IndexResult = Union[_Remain, _Skip, BitMap]


def remains(r: IndexResult) -> bool:
    """May the file hold matching rows?"""
    return r is REMAIN or (isinstance(r, BitMap) and len(r) > 0)


def _and(a: IndexResult, b: IndexResult) -> IndexResult:
    if a is SKIP or b is SKIP:
        return SKIP
    if a is REMAIN:
        return b
    if b is REMAIN:
        return a
    return a & b  # type: ignore[operator]


def _or(a: IndexResult, b: IndexResult) -> IndexResult:
    if a is REMAIN or b is REMAIN:
        return REMAIN
    if a is SKIP:
        return b
    if b is SKIP:
        return a
    return a | b  # type: ignore[operator]


ColumnIndex = Union[bloom.BloomFilterIndex, bitmap.BitmapIndex]


@dataclass(frozen=True)
class FileIndex:
    """The readable indexes of one data file: column -> its indexes, and the column types."""

    columns: Mapping[str, Sequence[ColumnIndex]]
    types: Mapping[str, DataType]


def parse_file_index(data: bytes, types: Mapping[str, DataType], where: str) -> FileIndex:
    """The indexes of a blob, for columns of known types; CorruptFileIndexError when the blob
    or one of its payloads fails its checks, or names an index type this library cannot read
    (an unknown index could rule out rows only by guessing)."""
    header = decode_header(data, where)
    columns: dict[str, list[ColumnIndex]] = {}
    for column, slots in header.items():
        t = types.get(column)
        for index_type, slot in slots.items():
            if index_type not in (bloom.INDEX_TYPE, bitmap.INDEX_TYPE):
                if index_type in ("bsi", "range-bitmap"):
                    continue  # Paimon 1.4 types this library does not evaluate: no skipping on them
                raise CorruptFileIndexError(where, f"unknown index type {index_type!r} on {column!r}")
            if t is None or slot.start < 0:
                continue  # a nested (map key) or dropped column, or an empty index: not used
            kind = key_kind(t)
            if kind is None:
                continue
            payload = data[slot.start: slot.start + slot.length]
            label = f"{where} ({column}/{index_type})"
            columns.setdefault(column, []).append(
                bloom.BloomFilterIndex(payload, label) if index_type == bloom.INDEX_TYPE
                else bitmap.BitmapIndex(payload, kind, label))
    return FileIndex(columns, {c: types[c] for c in columns})


def _unsafe_float(kind: KeyKind, literals: tuple) -> bool:
    return kind in (KeyKind.FLOAT, KeyKind.DOUBLE) and any(
        lit is not None and (math.isnan(lit) or lit == 0) for lit in literals)


def _visit(index: ColumnIndex, leaf: LeafPredicate, t: DataType) -> IndexResult:
    m, lits = leaf.method, leaf.literals
    kind = key_kind(t)
    assert kind is not None
    if m in ("equal", "is_in", "not_equal", "is_not_in") and _unsafe_float(kind, lits):
        return REMAIN
    if isinstance(index, bloom.BloomFilterIndex):
        if m not in ("equal", "is_in"):
            return REMAIN
        values = tuple(v for v in lits if v is not None)
        if not values:
            return REMAIN
        hits = index.may_contain(literal_keys(leaf.field, t, values))
        return REMAIN if bool(hits.any()) else SKIP
    if m in ("equal", "is_in", "not_equal", "is_not_in"):
        keys = literal_keys(leaf.field, t, tuple(lits))
        rows = BitMap()
        for i, null in enumerate(keys.nulls.tolist()):
            v = keys.values[i]
            rows |= index.rows(None if null else v.item() if isinstance(v, np.generic) else v)
        if m in ("not_equal", "is_not_in"):
            rows.flip_inplace(0, index.row_count)
        return rows
    if m == "is_null":
        return index.rows(None)
    if m == "is_not_null":
        rows = index.rows(None)
        rows.flip_inplace(0, index.row_count)
        return rows
    return REMAIN


def check_literals(predicate: Predicate | None, types: Mapping[str, DataType]) -> None:
    """FileIndexLiteralError when a leaf on one of ``types``' columns has a literal of another type."""
    if isinstance(predicate, LeafPredicate):
        t = types.get(predicate.field)
        if t is not None and key_kind(t) is not None and predicate.literals:
            literal_keys(predicate.field, t, tuple(predicate.literals))
    elif isinstance(predicate, CompoundPredicate):
        for c in predicate.children:
            check_literals(c, types)


def evaluate(predicate: Predicate | None, index: FileIndex) -> IndexResult:
    """The file's answer to ``predicate`` (see the module docstring)."""
    if predicate is None:
        return REMAIN
    if isinstance(predicate, LeafPredicate):
        result: IndexResult = REMAIN
        for ix in index.columns.get(predicate.field, ()):
            result = _and(result, _visit(ix, predicate, index.types[predicate.field]))
            if not remains(result):
                return result
        return result
    assert isinstance(predicate, CompoundPredicate)
    acc: IndexResult | None = None
    for child in predicate.children:
        r = evaluate(child, index)
        if predicate.op == "or":
            acc = r if acc is None else _or(acc, r)
        else:
            acc = r if acc is None else _and(acc, r)
            if not remains(acc):
                return acc
    return REMAIN if acc is None else acc

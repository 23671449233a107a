"""Column values as the keys Paimon's indexes hash and compare, and literal checks.

Paimon's index writers see Java values: ``byte``/``short``/``int`` (TINYINT, SMALLINT, INT, DATE
as days, TIME as milliseconds of the day), ``long`` (BIGINT; TIMESTAMP and TIMESTAMP_LTZ as
epoch milliseconds up to precision 3, else epoch microseconds), ``float``/``double``,
``boolean``, and strings / binaries as their bytes (UTF-8 for strings). :func:`column_keys`
turns an Arrow column into those keys, vectorized; :func:`literal_key` does the same for one
predicate literal after checking it has the column's type.
"""

from __future__ import annotations

import datetime as _dt
import enum
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.data.types import DataType, to_arrow
from impl.fileindex.errors import FileIndexLiteralError


class KeyKind(enum.Enum):
    """How a column's values are keyed (the Java type the index sees)."""

    BYTE = "byte"
    SHORT = "short"
    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    STRING = "string"  # CHAR / VARCHAR: UTF-8 bytes
    BINARY = "binary"  # BINARY / VARBINARY


_KIND_OF_ROOT = {
    "TINYINT": KeyKind.BYTE, "SMALLINT": KeyKind.SHORT, "INT": KeyKind.INT, "DATE": KeyKind.INT,
    "TIME": KeyKind.INT, "BIGINT": KeyKind.LONG, "TIMESTAMP": KeyKind.LONG, "TIMESTAMP_LTZ": KeyKind.LONG,
    "FLOAT": KeyKind.FLOAT, "DOUBLE": KeyKind.DOUBLE, "BOOLEAN": KeyKind.BOOLEAN,
    "VARCHAR": KeyKind.STRING, "CHAR": KeyKind.STRING, "VARBINARY": KeyKind.BINARY, "BINARY": KeyKind.BINARY,
}

INTEGRAL = (KeyKind.BYTE, KeyKind.SHORT, KeyKind.INT, KeyKind.LONG)


def key_kind(t: DataType) -> KeyKind | None:
    """The key kind of a column type, or None for types no index of this library keys."""
    return _KIND_OF_ROOT.get(t.root)


@dataclass(frozen=True)
class ColumnKeys:
    """One column's keys: ``values`` (int64 / float / bool numpy array, or a list of bytes for
    strings and binaries; entries under ``nulls`` are undefined) and its null mask."""

    kind: KeyKind
    values: np.ndarray | list
    nulls: np.ndarray  # bool, True where the row is null


def _integral(arr: pa.Array, t: DataType) -> np.ndarray:
    r = t.root
    if r == "TIME":
        unit_div = 1 if pa.types.is_time32(arr.type) else 1000  # time64(us) -> ms of the day
        v = arr.cast(pa.int64() if pa.types.is_time64(arr.type) else pa.int32())
        return np.asarray(v.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64) // unit_div
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = t.precision if t.precision is not None else 6
        unit = arr.type.unit
        raw = np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
        target = 1_000 if p <= 3 else 1_000_000
        return raw * (target // per_second) if per_second <= target else raw // (per_second // target)
    if r == "DATE":
        arr = arr.cast(pa.int32())
    return np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def column_keys(arr: pa.Array | pa.ChunkedArray, t: DataType) -> ColumnKeys:
    """The keys of an Arrow column of Paimon type ``t`` (see the module docstring)."""
    kind = key_kind(t)
    if kind is None:
        raise TypeError(f"no index keys for type {t}")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    nulls = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    values: np.ndarray | list
    if kind in INTEGRAL:
        values = _integral(arr, t)
    elif kind is KeyKind.FLOAT:
        values = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float32)
    elif kind is KeyKind.DOUBLE:
        values = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
    elif kind is KeyKind.BOOLEAN:
        values = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    else:
        if kind is KeyKind.STRING:
            arr = pc.cast(arr, pa.binary()) if not pa.types.is_large_string(arr.type) else pc.cast(arr, pa.large_binary())
        values = arr.to_pylist()
    return ColumnKeys(kind, values, nulls)


def _literal_fits(lit: object, t: DataType, kind: KeyKind) -> bool:
    if kind in INTEGRAL:
        if t.root == "DATE":
            return isinstance(lit, _dt.date) and not isinstance(lit, _dt.datetime)
        if t.root == "TIME":
            return isinstance(lit, _dt.time)
        if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            return isinstance(lit, _dt.datetime)
        bits = {KeyKind.BYTE: 8, KeyKind.SHORT: 16, KeyKind.INT: 32, KeyKind.LONG: 64}[kind]
        return isinstance(lit, int) and not isinstance(lit, bool) and -(1 << bits - 1) <= lit < 1 << bits - 1
    if kind in (KeyKind.FLOAT, KeyKind.DOUBLE):
        return isinstance(lit, (int, float)) and not isinstance(lit, bool)
    if kind is KeyKind.BOOLEAN:
        return isinstance(lit, bool)
    if kind is KeyKind.STRING:
        return isinstance(lit, str)
    return isinstance(lit, (bytes, bytearray))


def literal_keys(column: str, t: DataType, literals: tuple) -> ColumnKeys:
    """The keys of predicate literals on ``column``; FileIndexLiteralError naming the column
    when one does not have the column's type (an index would otherwise answer "no rows")."""
    kind = key_kind(t)
    if kind is None:
        raise TypeError(f"no index keys for type {t}")
    for lit in literals:
        if lit is not None and not _literal_fits(lit, t, kind):
            raise FileIndexLiteralError(
                f"filter on indexed column {column!r} ({t}): literal {lit!r} of type "
                f"{type(lit).__name__} does not have the column's type")
    return column_keys(pa.array(list(literals), type=to_arrow(t)), t)

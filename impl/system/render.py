"""How Paimon Java spells metadata values as text in its system tables: small pure functions.

Java uses three different spellings, and the system tables mix them:

- a CAST to STRING (``CastExecutors.resolveToString``): partitions of ``$files``,
  ``$buckets`` and ``$manifests`` are a ROW cast to STRING, ``{v1, v2}``; the partition
  spec of ``$partitions`` is ``k1=v1/k2=v2`` with each value cast to STRING;
- ``Arrays.toString`` of the external Java objects of a row (``min_key`` / ``max_key`` of
  ``$files``): ``[v1, v2]``, dates as ``2024-01-01``, timestamps as ``LocalDateTime``;
- ``TreeMap.toString`` of the internal objects (the value statistics of ``$files``):
  ``{a=1, b=null}`` sorted by column name, dates as their epoch day number, timestamps as
  Paimon's ``Timestamp.toString`` (a ``LocalDateTime``).

Byte strings have no stable Java spelling (``byte[].toString`` is an object hash); they are
rendered as text when they are UTF-8 and as hex otherwise.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from impl.data.binary_row import date_to_days
from impl.data.java_text import java_double
from impl.data.types import DataType, to_arrow

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def local_date_time(v: _dt.datetime) -> str:
    """``LocalDateTime.toString``: ``2024-01-01T10:00``, seconds and fraction only when non-zero."""
    text = f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}"
    if v.second or v.microsecond:
        text += f":{v.second:02d}"
        if v.microsecond:
            frac = f"{v.microsecond:06d}"
            text += "." + (frac[:3] if frac.endswith("000") else frac)
    return text


def _bytes_text(v: bytes) -> str:
    try:
        return bytes(v).decode("utf-8")
    except UnicodeDecodeError:
        return bytes(v).hex()


def _decimal_plain(v: decimal.Decimal) -> str:
    return format(v, "f")


def cast_to_string(v: Any, t: DataType) -> str:
    """A non-null value as ``CAST(v AS STRING)`` spells it (Paimon's cast rules)."""
    r = t.root
    if r == "BOOLEAN":
        return "true" if v else "false"
    if r in ("FLOAT", "DOUBLE"):
        return java_double(float(v), single=r == "FLOAT")
    if r == "DECIMAL":
        return _decimal_plain(v)
    if r == "DATE":
        return v.isoformat() if isinstance(v, _dt.date) else str(v)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        # DateTimeUtils.formatTimestamp: the 9-digit fraction loses trailing zeros only down
        # to the type's precision
        precision = t.precision if t.precision is not None else 6
        frac = f"{v.microsecond * 1000:09d}"
        while len(frac) > precision and frac.endswith("0"):
            frac = frac[:-1]
        text = v.strftime("%Y-%m-%d %H:%M:%S") if v.year >= 1000 else (
            f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}")
        return f"{text}.{frac}" if frac else text
    if r in ("VARBINARY", "BINARY"):
        return _bytes_text(v)
    return str(v)


def row_cast_to_string(values: Sequence[Any], types: Sequence[DataType]) -> str:
    """A ROW cast to STRING (``RowToStringCastRule``): ``{v1, v2}``, null fields as ``null``."""
    return "{" + ", ".join("null" if v is None else cast_to_string(v, t)
                           for v, t in zip(values, types, strict=True)) + "}"


def partition_spec_string(names: Sequence[str], values: Sequence[Any], types: Sequence[DataType],
                          default_name: str) -> str:
    """``k1=v1/k2=v2`` as ``$partitions`` spells a partition (null values as the default name)."""
    return "/".join(f"{n}={default_name if v is None else cast_to_string(v, t)}"
                    for n, v, t in zip(names, values, types, strict=True))


def external_object_string(v: Any, t: DataType) -> str:
    """``toString`` of the external Java object of a value (``RowDataToObjectArrayConverter``)."""
    r = t.root
    if r == "BOOLEAN":
        return "true" if v else "false"
    if r in ("FLOAT", "DOUBLE"):
        return java_double(float(v), single=r == "FLOAT")
    if r == "DECIMAL":
        return str(v)  # BigDecimal.toString
    if r == "DATE":
        return v.isoformat() if isinstance(v, _dt.date) else str(v)  # LocalDate
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return local_date_time(v)
    if r in ("VARBINARY", "BINARY"):
        return _bytes_text(v)
    return str(v)


def key_string(values: Sequence[Any], types: Sequence[DataType]) -> str:
    """``Arrays.toString`` of a key's external objects: ``[1, a]``."""
    return "[" + ", ".join("null" if v is None else external_object_string(v, t)
                           for v, t in zip(values, types, strict=True)) + "]"


def internal_object_string(v: Any, t: DataType) -> str:
    """``toString`` of Paimon's internal object of a value (``InternalRowUtils.get``)."""
    r = t.root
    if r == "DATE":
        return str(date_to_days(v))  # DATE is an int of epoch days internally
    if r == "DECIMAL":
        return _decimal_plain(v)  # Paimon's Decimal.toString: toPlainString
    return external_object_string(v, t)


def stats_map_string(names: Sequence[str], values: Sequence[Any], types: Sequence[DataType | None]) -> str:
    """``TreeMap<String, Object>.toString``: ``{a=1, b=null}``, sorted by name.

    ``types[i]`` None means the values are already plain (null counts)."""
    pairs = sorted(zip(names, values, types, strict=True), key=lambda p: p[0])
    return "{" + ", ".join(
        f"{n}={'null' if v is None else (str(v) if t is None else internal_object_string(v, t))}"
        for n, v, t in pairs) + "}"


# ---------------------------------------------------------------------------- whole columns
#
# The same spellings over a column of values at once: pyarrow's casts to string already spell
# integers, booleans, strings, dates and plain decimals as Java does, so only floats and
# timestamps (Java's own formats) are spelled value by value.


def text_column(values: Sequence[Any], t: DataType, *, internal: bool) -> pa.Array:
    """Each value's text (null stays null): Paimon's internal object's ``toString`` when
    ``internal``, else the external Java object's (see :func:`internal_object_string`)."""
    r = t.root
    if r in _INTEGERS:
        return pa.array(values, pa.int64()).cast(pa.string())
    if t.is_string:
        return pa.array(values, pa.string())
    if r == "BOOLEAN":
        return pa.array(values, pa.bool_()).cast(pa.string())
    if r == "DATE":
        dates = pa.array(values, pa.date32())
        return (dates.cast(pa.int32()) if internal else dates).cast(pa.string())
    if r == "DECIMAL" and internal:
        return pa.array(values, to_arrow(t)).cast(pa.string())
    spell = internal_object_string if internal else external_object_string
    return pa.array([None if v is None else spell(v, t) for v in values], pa.string())


def _join(parts: Sequence[pa.Array], separator: str, n: int) -> pa.Array:
    if not parts:
        return pa.array([""] * n, pa.string())
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, separator)


def _wrap(open_: str, body: pa.Array, close: str) -> pa.Array:
    return pc.binary_join_element_wise(open_, body, close, "")


def stats_map_column(names: Sequence[str], texts: Sequence[pa.Array], n: int) -> pa.Array:
    """:func:`stats_map_string` of ``n`` rows at once; ``texts[i]`` is column ``names[i]``'s text."""
    parts = [pc.binary_join_element_wise(f"{name}=", pc.fill_null(text, "null"), "")
             for name, text in sorted(zip(names, texts, strict=True), key=lambda p: p[0])]
    return _wrap("{", _join(parts, ", ", n), "}")


def key_column(texts: Sequence[pa.Array], n: int) -> pa.Array:
    """:func:`key_string` of ``n`` rows at once, from each key field's text column."""
    return _wrap("[", _join([pc.fill_null(t, "null") for t in texts], ", ", n), "]")


__all__ = [
    "text_column", "stats_map_column", "key_column",
    "java_double", "local_date_time", "cast_to_string", "row_cast_to_string", "partition_spec_string",
    "external_object_string", "key_string", "internal_object_string", "stats_map_string",
]

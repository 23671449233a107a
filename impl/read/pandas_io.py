"""pandas in and out of a table: safe casts on write, exact values on read.

``write_pandas`` casts each column to the table's type as pypaimon 2.1.0 does (pyarrow's
conversion with ``safe=True``): a wider integer into a narrower one when every value fits, a
float64 holding only integral values and NaN into a nullable integer column (what
``to_pandas()`` makes of an integer column with nulls), timestamps of another unit when no
digits are lost, categoricals by their values, object columns of ``str`` into STRING, floats and
``Decimal`` objects into DECIMAL when exact. On top of pyarrow's checks, a few casts pyarrow lets
through lossily are refused here: a timestamp with a time of day into DATE, a time-zone-aware
timestamp into TIMESTAMP (which holds wall-clock time) and a naive one into TIMESTAMP WITH LOCAL
TIME ZONE (which holds instants), a float rounded into DECIMAL, a finite float64 overflowing
FLOAT. A refused column raises :class:`impl.errors.ColumnCastError` naming the column, its
pandas dtype, the table's type and the reason. Every check is a vectorized pyarrow compute
kernel over the whole column.

``to_pandas()`` is pyarrow's conversion, except where that loses values: a BIGINT column holding
nulls (pyarrow makes it float64, which cannot hold every int64) becomes pandas' nullable
``Int64``, and nested columns with 64-bit integers keep Python ints (``None`` for nulls) rather than
float arrays. So ``write_pandas(read.to_pandas(splits))`` writes back the same rows.
"""

from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from impl._optional import require
from impl.errors import ColumnCastError
from impl.schema.records import TableSchema

Refuse = Callable[[str], ColumnCastError]

# what pyarrow raises for a value or a type that does not convert
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                 OverflowError)


def pandas_columns(df: Any) -> list[str]:
    """The column names of ``df`` as strings (pyarrow's names for them)."""
    return [str(c) for c in df.columns]


def pandas_to_arrow(df: Any, expected: pa.Schema, table_schema: TableSchema, table: str) -> pa.Table:
    """The columns of ``df`` named in ``expected`` (the caller has checked that the names match),
    each cast safely to its type (see the module docstring); ColumnCastError otherwise."""
    by_name = {n: i for i, n in enumerate(pandas_columns(df))}
    arrays = []
    for f in expected:
        series = df.iloc[:, by_name[f.name]]
        arrays.append(column_to_arrow(series, table, f.name, f.type, str(table_schema.field(f.name).type)))
    return pa.Table.from_arrays(arrays, names=expected.names)


def column_to_arrow(series: Any, table: str, column: str, target: pa.DataType, paimon_type: str) -> pa.Array:
    """One pandas Series as an Arrow array of ``target``, or ColumnCastError."""
    source = str(series.dtype)

    def refuse(reason: str) -> ColumnCastError:
        return ColumnCastError(table, column, source, paimon_type, reason)

    tz = _series_tz(series)
    if pa.types.is_timestamp(target) and tz is not None:
        if target.tz is None and tz != "naive":
            raise refuse(f"its values carry the time zone {tz}, the column holds wall-clock time without one "
                         "(drop the zone first: .dt.tz_convert(zone).dt.tz_localize(None))")
        if target.tz is not None and tz == "naive":
            raise refuse("its values have no time zone, the column holds instants "
                         "(say which zone they are in: .dt.tz_localize(zone))")
    if pa.types.is_decimal(target) and _is_float(series):
        return _float_to_decimal(series, target, refuse)
    try:
        arr = pa.array(series, type=target, from_pandas=True, safe=True)
    except _ARROW_ERRORS as e:
        raise refuse(str(e)) from e
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_date(target) and (tz is not None or getattr(series.dtype, "kind", None) == "O"):
        _check_whole_days(series, arr, refuse)
    if pa.types.is_float32(target) and _is_float(series):
        _check_no_float_overflow(series, arr, refuse)
    return arr


def _series_tz(series: Any) -> str | None:
    """``None`` for a non-timestamp Series, ``"naive"`` for one without a zone, else its zone."""
    dtype = series.dtype
    tz = getattr(dtype, "tz", None)
    if tz is not None:
        return str(tz)
    pa_type = getattr(dtype, "pyarrow_dtype", None)  # pd.ArrowDtype
    if pa_type is not None and pa.types.is_timestamp(pa_type):
        return pa_type.tz or "naive"
    if getattr(dtype, "kind", None) == "M":
        return "naive"
    return None


def _is_float(series: Any) -> bool:
    kind = getattr(series.dtype, "kind", None)
    return kind == "f"


def _natural(series: Any, refuse: Refuse) -> pa.Array:
    try:
        arr = pa.array(series, from_pandas=True)
    except _ARROW_ERRORS as e:
        raise refuse(str(e)) from e
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _float_to_decimal(series: Any, target: pa.DataType, refuse: Refuse) -> pa.Array:
    """Floats into DECIMAL only when each value is exactly representable at the column's scale:
    the decimal read back as a float is the float written (1.5 into DECIMAL(10, 2) is fine,
    1.555 would be rounded and is refused)."""
    floats = _natural(series, refuse).cast(pa.float64())
    try:
        arr = floats.cast(target, safe=True)
    except _ARROW_ERRORS as e:
        raise refuse(str(e)) from e
    changed = pc.not_equal(arr.cast(pa.float64()), floats)
    if pc.any(changed).as_py():
        first = pc.filter(floats, changed)[0].as_py()
        raise refuse(f"value {first!r} is not exact at scale {target.scale} (it would be rounded)")
    return arr


def _check_whole_days(series: Any, arr: pa.Array, refuse: Refuse) -> None:
    """A timestamp into DATE keeps only midnight values (pyarrow drops a time of day silently).
    Object columns are checked when they hold datetimes (``datetime.date`` objects pass as they are)."""
    try:
        stamps = _natural(series, refuse)
    except ColumnCastError:
        return  # mixed objects that converted to the target directly: nothing more to compare
    if not pa.types.is_timestamp(stamps.type):
        return
    if stamps.type.tz is not None:
        raise refuse("its values carry a time zone; a DATE has none")
    back = arr.cast(pa.timestamp(stamps.type.unit))
    lost = pc.not_equal(back, stamps)
    if pc.any(lost).as_py():
        first = pc.filter(stamps, lost)[0].as_py()
        raise refuse(f"value {first} has a time of day, which a DATE would drop")


def _check_no_float_overflow(series: Any, arr: pa.Array, refuse: Refuse) -> None:
    """A finite float64 beyond FLOAT's range would become infinity (pyarrow lets it through)."""
    floats = _natural(series, refuse).cast(pa.float64())
    overflow = pc.and_(pc.is_finite(floats), pc.invert(pc.is_finite(arr.cast(pa.float64()))))
    if pc.any(overflow).as_py():
        first = pc.filter(floats, overflow)[0].as_py()
        raise refuse(f"value {first!r} is beyond FLOAT's range (it would become infinity)")


# ---------------------------------------------------------------------------- reading


def _has_int64(t: pa.DataType) -> bool:
    if pa.types.is_int64(t) or pa.types.is_uint64(t):
        return True
    return any(_has_int64(t.field(i).type) for i in range(t.num_fields))


def arrow_to_pandas(t: pa.Table) -> Any:
    """``t`` as a pandas DataFrame without losing values (see the module docstring)."""
    pd = require("pandas", "to_pandas()")
    exact: dict[str, Any] = {}
    for name, col in zip(t.column_names, t.columns, strict=True):
        if pa.types.is_int64(col.type):
            if col.null_count:
                exact[name] = col.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
        elif col.type.num_fields and _has_int64(col.type):
            exact[name] = col.to_pandas(integer_object_nulls=True)
    if not exact:
        return t.to_pandas()
    rest = t.drop_columns(list(exact))
    df = rest.to_pandas()
    for name, values in exact.items():
        df[name] = values
    return df[t.column_names]


__all__ = ["pandas_to_arrow", "arrow_to_pandas", "column_to_arrow", "pandas_columns"]

"""pandas in and out of a table (impl.read.pandas_io): ``write_pandas`` casts safely as pypaimon
does and refuses a lossy cast naming the column and both types; ``to_pandas()`` output written
back with ``write_pandas`` gives the same rows, for every column type."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import impl
from impl.errors import ColumnCastError

pd = pytest.importorskip("pandas")


def _table(cat, schema: pa.Schema):
    return cat.create_table(f"db.t_{uuid.uuid4().hex[:8]}", schema=schema)


def _write_pandas(t, df) -> None:
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_pandas(df)
    c.commit(w.prepare_commit())
    w.close()


def _to_pandas(t):
    rb = t.new_read_builder()
    return rb.new_read().to_pandas(rb.new_scan().plan().splits())


# ---------------------------------------------------------------------- safe casts


@pytest.mark.parametrize("series, target, expected", [
    (pd.Series([1, 2]), pa.int32(), [1, 2]),                                     # int64 that fits INT
    (pd.Series([-128, 127]), pa.int8(), [-128, 127]),
    (pd.Series([1.0, np.nan, 3.0]), pa.int32(), [1, None, 3]),                  # to_pandas of INT with nulls
    (pd.Series([1, None], dtype="Int64"), pa.int16(), [1, None]),               # pandas' nullable integers
    (pd.Series([1, 2]), pa.float64(), [1.0, 2.0]),
    (pd.Series(["a", None, "c"], dtype=object), pa.string(), ["a", None, "c"]),  # object column of str
    (pd.Series(["x", "y", "x"], dtype="category"), pa.string(), ["x", "y", "x"]),
    (pd.Series([1, 2], dtype="category"), pa.int32(), [1, 2]),
    (pd.Series(["a", None], dtype="string"), pa.string(), ["a", None]),
    (pd.Series(pd.to_datetime(["2024-01-01 00:00:00.123"])), pa.timestamp("ms"),  # ns -> ms, nothing lost
     [dt.datetime(2024, 1, 1, 0, 0, 0, 123000)]),
    (pd.Series(pd.to_datetime(["2024-01-01"])).astype("datetime64[s]"), pa.timestamp("ns"),
     [pd.Timestamp("2024-01-01")]),
    (pd.Series(pd.to_datetime(["2024-01-01"]).tz_localize("Europe/Paris")), pa.timestamp("us", tz="UTC"),
     [dt.datetime(2023, 12, 31, 23, 0, tzinfo=dt.timezone.utc)]),
    (pd.Series(pd.to_datetime(["2024-01-02"])), pa.date32(), [dt.date(2024, 1, 2)]),
    (pd.Series([dt.date(2024, 1, 3), None], dtype=object), pa.date32(), [dt.date(2024, 1, 3), None]),
    (pd.Series([dt.datetime(2024, 1, 4)], dtype=object), pa.date32(), [dt.date(2024, 1, 4)]),
    (pd.Series([1.5, None]), pa.decimal128(10, 2), [decimal.Decimal("1.50"), None]),
    (pd.Series([decimal.Decimal("1.25")]), pa.decimal128(5, 2), [decimal.Decimal("1.25")]),
    (pd.Series([0.1]), pa.float32(), [pytest.approx(0.1)]),
])
def test_safe_casts(local_catalog, series, target, expected):
    t = _table(local_catalog, pa.schema([("c", target)]))
    _write_pandas(t, pd.DataFrame({"c": series}))
    got = t.to_arrow().column("c")
    assert got.type == target
    values = got.to_pylist()
    if pa.types.is_timestamp(target) and target.unit == "ns":
        values = [pd.Timestamp(v) for v in values]
    if pa.types.is_timestamp(target) and target.tz:
        values = [v.astimezone(dt.timezone.utc) for v in values]
    assert values == expected


@pytest.mark.parametrize("series, target, reason", [
    (pd.Series([1, 2**40]), pa.int32(), "not in range"),
    (pd.Series([1.5, np.nan]), pa.int32(), "truncated"),
    (pd.Series([np.inf]), pa.int64(), "truncated"),
    (pd.Series([2**53 + 1]), pa.float64(), "not in range"),
    (pd.Series([1e300]), pa.float32(), "beyond FLOAT's range"),
    (pd.Series(pd.to_datetime(["2024-01-01 00:00:00.123456789"])), pa.timestamp("us"), "lose data"),
    (pd.Series(pd.to_datetime(["2024-01-01"]).tz_localize("UTC")), pa.timestamp("us"), "time zone UTC"),
    (pd.Series(pd.to_datetime(["2024-01-01"])), pa.timestamp("us", tz="UTC"), "no time zone"),
    (pd.Series(pd.to_datetime(["2024-01-01 10:00"])), pa.date32(), "time of day"),
    (pd.Series([dt.datetime(2024, 1, 1, 10)], dtype=object), pa.date32(), "time of day"),
    (pd.Series([1.555]), pa.decimal128(10, 2), "not exact"),
    (pd.Series([decimal.Decimal("1.255")]), pa.decimal128(10, 2), "data loss"),
    (pd.Series([1, 2]), pa.string(), "string"),
    (pd.Series(["a", 1], dtype=object), pa.string(), "int"),
    (pd.Series(["x"], dtype="category"), pa.int32(), "convert"),
    (pd.Series(["2024-01-01"]), pa.date32(), "str"),
])
def test_lossy_casts_are_refused_naming_column_and_types(local_catalog, series, target, reason):
    t = _table(local_catalog, pa.schema([("id", pa.int64()), ("c", target)]))
    paimon_type = str(t.schema.field("c").type)
    with pytest.raises(ColumnCastError, match=reason) as e:
        _write_pandas(t, pd.DataFrame({"id": [7] * len(series), "c": series}))
    err = e.value
    assert isinstance(err, impl.SchemaMismatchError)
    assert (err.column, err.source_type, err.target_type) == ("c", str(series.dtype), paimon_type)
    assert f"column 'c' ({series.dtype}) does not cast to {paimon_type}" in str(err)
    assert t.latest_snapshot() is None  # nothing written


def test_write_pandas_checks_column_names(local_catalog):
    t = _table(local_catalog, pa.schema([("a", pa.int32())]))
    with pytest.raises(impl.SchemaMismatchError, match=r"missing columns \['a'\]; unknown columns \['b'\]"):
        _write_pandas(t, pd.DataFrame({"b": [1]}))
    with pytest.raises(impl.SchemaMismatchError, match="takes a pandas DataFrame"):
        t.new_batch_write_builder().new_write().write_pandas(pa.table({"a": [1]}))


def test_write_arrow_of_a_dataframe_casts_the_same_way(local_catalog):
    t = _table(local_catalog, pa.schema([("f0", pa.int32())]))
    t.write_arrow(pd.DataFrame({"f0": [1, 2]}))  # the example: int64 into INT
    assert t.to_arrow().column("f0").to_pylist() == [1, 2]


def test_bigint_with_nulls_reads_exactly(local_catalog):
    t = _table(local_catalog, pa.schema([("b", pa.int64()), ("l", pa.list_(pa.int64()))]))
    big = 2**53 + 1  # float64 (pyarrow's default for an int64 column with nulls) cannot hold it
    t.write_arrow(pa.table({"b": pa.array([big, None]), "l": pa.array([[big, None], None], pa.list_(pa.int64()))}))
    df = _to_pandas(t)
    assert str(df["b"].dtype) == "Int64" and df["b"][0] == big and df["b"][1] is pd.NA
    assert list(df["l"][0]) == [big, None]


# ---------------------------------------------------------------------- round trip, every column type

_DATETIMES = st.datetimes(min_value=dt.datetime(1700, 1, 1), max_value=dt.datetime(2250, 1, 1))


def _ts(unit: str):
    return _DATETIMES.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000) if unit in ("s", "ms")
                          else d).map(lambda d: d.replace(microsecond=0) if unit == "s" else d)


_INTS = {bits: st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for bits in (8, 16, 32, 64)}

# (arrow type of the column, strategy of its non-null values): every type a table can have
COLUMNS: dict[str, tuple[pa.DataType, st.SearchStrategy]] = {
    "boolean": (pa.bool_(), st.booleans()),
    "tinyint": (pa.int8(), _INTS[8]),
    "smallint": (pa.int16(), _INTS[16]),
    "int": (pa.int32(), _INTS[32]),
    "bigint": (pa.int64(), _INTS[64]),
    # NaN is pandas' null: a NaN written through pandas reads back as null (documented)
    "float": (pa.float32(), st.floats(width=32, allow_nan=False)),
    "double": (pa.float64(), st.floats(allow_nan=False)),
    "string": (pa.string(), st.text(max_size=5)),
    "bytes": (pa.binary(), st.binary(max_size=5)),
    "date": (pa.date32(), st.dates()),
    "time_ms": (pa.time32("ms"), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    "time_us": (pa.time64("us"), st.times()),
    "ts_s": (pa.timestamp("s"), _ts("s")),
    "ts_ms": (pa.timestamp("ms"), _ts("ms")),
    "ts_us": (pa.timestamp("us"), _DATETIMES),
    "ts_ns": (pa.timestamp("ns"), _DATETIMES),
    "ts_ltz": (pa.timestamp("us", tz="UTC"), _DATETIMES.map(lambda d: d.replace(tzinfo=dt.timezone.utc))),
    "dec_small": (pa.decimal128(10, 2), st.decimals(min_value=-10**7, max_value=10**7, places=2,
                                                    allow_nan=False, allow_infinity=False)),
    "dec_wide": (pa.decimal128(38, 10), st.decimals(min_value=-10**27, max_value=10**27, places=10,
                                                    allow_nan=False, allow_infinity=False)),
    "array_int": (pa.list_(pa.int32()), st.lists(st.none() | _INTS[32], max_size=3)),
    "array_bigint": (pa.list_(pa.int64()), st.lists(st.none() | _INTS[64], max_size=3)),
    "array_string": (pa.list_(pa.string()), st.lists(st.none() | st.text(max_size=3), max_size=3)),
    "map": (pa.map_(pa.string(), pa.int64()),
            st.dictionaries(st.text(max_size=3), st.none() | _INTS[64], max_size=3).map(lambda d: list(d.items()))),
    "row": (pa.struct([("a", pa.int64()), ("b", pa.string())]),
            st.fixed_dictionaries({"a": st.none() | _INTS[64], "b": st.none() | st.text(max_size=3)})),
}
SCHEMA = pa.schema([(name, typ) for name, (typ, _) in COLUMNS.items()])


@st.composite
def frames(draw) -> pa.Table:
    rows = draw(st.integers(0, 4))
    return pa.table({name: pa.array(draw(st.lists(st.none() | values, min_size=rows, max_size=rows)), typ)
                     for name, (typ, values) in COLUMNS.items()}, schema=SCHEMA)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=frames())
def test_to_pandas_round_trips_through_write_pandas(local_catalog, data):
    source = _table(local_catalog, SCHEMA)
    source.write_arrow(data)
    target = _table(local_catalog, SCHEMA)
    df = _to_pandas(source)
    _write_pandas(target, df)
    assert target.to_arrow().equals(source.to_arrow())
    assert source.to_arrow().equals(data)

"""The column-wise Avro data-file writer (``impl.format.avro_encode``) against fastavro record by record.

fastavro writing the same rows with the same sync marker is the reference: for the null and
zstandard codecs the files must be byte-identical (header, block cuts, every encoding), for
deflate equal once decoded. Files are also read back by fastavro and by this library's reader
(polars) to the rows written.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import math

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from fastavro.write import Writer
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.data.types import DataField, parse_type, to_arrow
from impl.errors import SchemaMismatchError
from impl.format import avro_data, avro_encode
from impl.format.file_format import WriteOptions

# every flat type with its Avro form (TIMESTAMP: each precision written; TIME as time-millis)
FLAT_TYPES = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "BYTES",
              "DATE", "TIME", "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(3) WITH LOCAL TIME ZONE",
              "TIMESTAMP(6) WITH LOCAL TIME ZONE", "DECIMAL(1, 0)", "DECIMAL(18, 4)", "DECIMAL(19, 0)", "DECIMAL(38, 0)",
              "DECIMAL(38, 38)", "CHAR(3)"]
NESTED_TYPES = ["ARRAY<INT>", "MAP<STRING, BIGINT>", "ROW<x INT, y STRING>", "ARRAY<ROW<t TIMESTAMP(3), d DATE>>"]


def _reference(table: pa.Table, fields: list[DataField], options: WriteOptions, sync_marker: bytes) -> bytes:
    """The file fastavro writes from the table's rows (the writer this module replaced)."""
    out = io.BytesIO()
    codec = avro_data.avro_codec(options)
    writer = Writer(out, fastavro.parse_schema(avro_data.record_schema(fields)), codec=codec,
                    sync_interval=avro_data._SYNC_INTERVAL_BYTES, sync_marker=sync_marker,
                    compression_level=options.zstd_level if codec == "zstandard" else None)
    plain = pa.Table.from_arrays([avro_data._plain(c) for c in table.columns], names=table.column_names)
    records = plain.to_pylist()
    for name in plain.column_names:
        t = plain.schema.field(name).type
        for r in records:
            r[name] = avro_data._dicts(r[name], t)
    for r in records:
        writer.write(r)
    writer.flush()
    return out.getvalue()


def _written(tables: list[pa.Table], fields: list[DataField], options: WriteOptions) -> bytes:
    out = io.BytesIO()
    writer = avro_data.AvroWriter(out, fields, options)
    for t in tables:
        writer.write(t)
    writer.close()
    return out.getvalue()


def _check(table: pa.Table, fields: list[DataField], codec: str = "none") -> None:
    options = WriteOptions(compression=codec)
    data = _written([table], fields, options)
    sync_marker = fastavro.reader(io.BytesIO(data))._header["sync"]
    reference = _reference(table, fields, options, sync_marker)
    if codec == "deflate":
        assert repr(list(fastavro.reader(io.BytesIO(data)))) == repr(list(fastavro.reader(io.BytesIO(reference))))
    else:
        assert data == reference
    # read back (polars where it decodes the schema) to the rows written; repr: NaN equals NaN
    got = avro_data.AvroReader(io.BytesIO(data), "f.avro").read()
    want = avro_data.AvroReader(io.BytesIO(reference), "f.avro").read()
    assert repr(got.to_pylist()) == repr(want.to_pylist())
    assert got.num_rows == table.num_rows


def _fields(types: list[str], nullable: list[bool]) -> list[DataField]:
    out = []
    for i, (text, null) in enumerate(zip(types, nullable, strict=True)):
        t = parse_type(text)
        out.append(DataField(i, f"c{i}", t if null else type(t)(**{**t.__dict__, "nullable": False})))
    return out


def _values(text: str) -> st.SearchStrategy:
    t = parse_type(text)
    r = t.root
    if r == "BOOLEAN":
        return st.booleans()
    bits = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
    if r in bits:
        b = bits[r]
        return st.one_of(st.integers(-(2 ** (b - 1)), 2 ** (b - 1) - 1), st.sampled_from([-(2 ** (b - 1)), 2 ** (b - 1) - 1, 0, -1, 63, 64, -65]))
    if r in ("FLOAT", "DOUBLE"):
        return st.floats(width=32 if r == "FLOAT" else 64, allow_nan=True, allow_infinity=True)
    if r in ("VARCHAR", "CHAR"):
        return st.text(max_size=200 if r == "VARCHAR" else 3)
    if r in ("VARBINARY", "BINARY"):
        return st.binary(max_size=200)
    if r == "DATE":
        return st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))
    if r == "TIME":
        return st.times().map(lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000))
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        low, high = -62135596800, 253402300799  # years 1 to 9999 in seconds
        per_second = {"s": 1, "ms": 1000, "us": 10 ** 6}[to_arrow(t).unit]
        return st.integers(low * per_second, high * per_second)
    assert r == "DECIMAL"
    top = 10 ** t.precision - 1
    return st.one_of(st.integers(-top, top), st.sampled_from([top, -top, 0, 127, 128, -128, -129, 255, -256,
                                                              2 ** 63, -(2 ** 63), 2 ** 64, -(2 ** 64)]).filter(
        lambda v: abs(v) <= top)).map(lambda v: decimal.Decimal(f"{v}E-{t.scale}"))  # exact, unlike scaleb


@st.composite
def _tables(draw, types: list[str]) -> tuple[pa.Table, list[DataField]]:
    nullable = [draw(st.booleans()) for _ in types]
    fields = _fields(types, nullable)
    rows = draw(st.integers(0, 30))
    columns = []
    for text, f in zip(types, fields, strict=True):
        values = draw(st.lists(_values(text), min_size=rows, max_size=rows))
        if f.type.nullable:
            values = [None if draw(st.booleans()) and draw(st.booleans()) else v for v in values]
        columns.append(pa.array(values, type=to_arrow(f.type)))
    table = pa.Table.from_arrays(columns, names=[f.name for f in fields])
    # sliced and chunked inputs: offsets into Arrow buffers must be honoured
    cut = draw(st.integers(0, rows))
    start = draw(st.integers(0, cut))
    table = pa.concat_tables([table.slice(start, cut - start), table.slice(cut)])
    return table, fields


@settings(max_examples=30, deadline=None)
@given(_tables(FLAT_TYPES))
def test_flat_types_match_fastavro_bytes(case):
    table, fields = case
    _check(table, fields)


@settings(max_examples=15, deadline=None)
@given(_tables(["INT", "STRING", "DECIMAL(38, 2)", "TIMESTAMP(6)"]), st.sampled_from(["zstd", "deflate", "none"]))
def test_codecs(case, codec):
    table, fields = case
    _check(table, fields, codec)


def test_nested_columns_between_flat_ones():
    types = ["BIGINT", "ARRAY<INT>", "STRING", "MAP<STRING, BIGINT>", "ROW<x INT, y STRING>",
             "ARRAY<ROW<t TIMESTAMP(3), d DATE>>", "DOUBLE"]
    fields = _fields(types, [True] * len(types))
    rows = 40
    data = {
        "c0": [i * 7 - 100 if i % 5 else None for i in range(rows)],
        "c1": [list(range(i % 4)) if i % 6 else None for i in range(rows)],
        "c2": ["s" * (i % 9) if i % 7 else None for i in range(rows)],
        "c3": [[("a", i), ("b", -i)] if i % 3 else None for i in range(rows)],
        "c4": [{"x": i, "y": f"y{i}"} if i % 4 else None for i in range(rows)],
        "c5": [[{"t": dt.datetime(2024, 1, 1, 0, 0, i % 60), "d": dt.date(2024, 2, 1 + i % 20)}] for i in range(rows)],
        "c6": [math.nan if i == 3 else i / 3 for i in range(rows)],
    }
    table = pa.table({f.name: pa.array(data[f.name], type=to_arrow(f.type)) for f in fields})
    _check(table, fields)
    _check(table, fields, "zstd")


def test_many_blocks_cut_as_fastavro():
    """Rows beyond the sync interval: blocks end where fastavro ends them, over several writes."""
    fields = _fields(["BIGINT", "STRING", "DOUBLE"], [False, True, True])
    rng = np.random.default_rng(3)
    n = 30_000
    table = pa.table({"c0": rng.integers(-2 ** 62, 2 ** 62, n),
                      "c1": pa.array([None if i % 11 == 0 else "v" * (i % 23) for i in range(n)]),
                      "c2": rng.normal(size=n)}).cast(pa.schema([pa.field(f.name, to_arrow(f.type)) for f in fields]))
    options = WriteOptions(compression="zstd")
    data = _written([table.slice(0, 10_000), table.slice(10_000, 0), table.slice(10_000)], fields, options)
    reader = fastavro.reader(io.BytesIO(data))
    records = list(reader)
    assert len(records) == n and records[12_345]["c0"] == table.column("c0")[12_345].as_py()
    reference = _reference(table.slice(0, 10_000), fields, options, reader._header["sync"])
    # the first write's blocks are the reference file's blocks
    assert data.startswith(reference)


def test_non_nullable_column_with_nulls_is_refused():
    fields = _fields(["INT"], [False])
    with pytest.raises(SchemaMismatchError, match="c0"):
        _written([pa.table({"c0": pa.array([1, None], pa.int32())})], fields, WriteOptions())


def test_zigzag_varints_at_the_limits():
    values = np.array([0, -1, 1, 63, -64, 64, 2 ** 31 - 1, -(2 ** 31), 2 ** 63 - 1, -(2 ** 63)], dtype=np.int64)
    flat, counts = avro_encode.zigzag_varints(values)
    out = io.BytesIO()
    for v in values.tolist():
        fastavro.schemaless_writer(out, "long", v)
    assert flat.tobytes() == out.getvalue()
    assert counts.tolist() == [1, 1, 1, 1, 1, 2, 5, 5, 10, 10]

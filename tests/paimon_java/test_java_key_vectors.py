"""Byte-level test vectors from the reference: BinaryRow bytes, hash and bucket, Java against impl.

Hypothesis draws a key schema (1 to 4 fields of any type impl can put in a key: every integer
width, FLOAT, DOUBLE, BOOLEAN, STRING / VARCHAR(n) / CHAR(n), BYTES / VARBINARY(n), DATE, TIME,
compact and non-compact DECIMAL (both sides of the 18-digit boundary) and TIMESTAMP (precision
0, 3, 6), TIMESTAMP WITH LOCAL TIME ZONE) and rows of it, nulls included. TIMESTAMP(9) is left
out: the input travels as Parquet, and Paimon's Parquet reader takes an INT64 nanosecond column
(what pyarrow writes) as milliseconds, since Paimon itself stores precision > 6 as INT96. The rows go to a
Parquet file; Paimon Java reads it with its own Parquet reader and reports, per row, the
``BinaryRow`` bytes (``InternalRowSerializer.toBinaryRow``), ``BinaryRow.hashCode()`` and the
bucket its default bucket function assigns for several bucket counts. impl computes the same
with its vectorized path (``impl.bucket.routing.binary_rows`` / ``row_hashes`` /
``compute_buckets``) and its scalar encoder (``impl.data.binary_row.encode_row_unserialized``);
all must be equal, byte for byte.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impl.bucket.routing import binary_rows, compute_buckets, row_hashes
from impl.data.binary_row import encode_row_unserialized
from impl.data.types import parse_type

pytestmark = pytest.mark.paimon_java

NUM_BUCKETS = [1, 2, 3, 4, 7, 16, 100]
_UTC = dt.timezone.utc


def _decimals(precision: int, scale: int):
    # Unscaled integers, turned into Decimals through a string: Decimal arithmetic (and
    # st.decimals) rounds to the default 28-digit context, which DECIMAL(38, s) exceeds.
    bound = 10 ** precision - 1
    return st.integers(-bound, bound).map(lambda u: decimal.Decimal(f"{u}E-{scale}"))


_DATETIMES = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1))

# (Paimon type, Arrow type, values)
KEY_TYPES = {
    "BOOLEAN": (pa.bool_(), st.booleans()),
    "TINYINT": (pa.int8(), st.integers(-2**7, 2**7 - 1)),
    "SMALLINT": (pa.int16(), st.integers(-2**15, 2**15 - 1)),
    "INT": (pa.int32(), st.integers(-2**31, 2**31 - 1)),
    "BIGINT": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    "FLOAT": (pa.float32(), st.floats(width=32, allow_nan=False)),
    "DOUBLE": (pa.float64(), st.floats(allow_nan=False)),
    "STRING": (pa.string(), st.text(max_size=20)),
    "BYTES": (pa.binary(), st.binary(max_size=20)),
    "DATE": (pa.date32(), st.dates(min_value=dt.date(1, 1, 1))),
    "TIME(3)": (pa.time32("ms"), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    "DECIMAL(10, 2)": (pa.decimal128(10, 2), _decimals(10, 2)),
    "DECIMAL(38, 4)": (pa.decimal128(38, 4), _decimals(38, 4)),
    "TIMESTAMP(3)": (pa.timestamp("ms"), _DATETIMES.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    "TIMESTAMP(6)": (pa.timestamp("us"), _DATETIMES),
    "VARCHAR(20)": (pa.string(), st.text(max_size=20)),
    "CHAR(5)": (pa.string(), st.text(max_size=5)),
    "VARBINARY(20)": (pa.binary(), st.binary(max_size=20)),
    "DECIMAL(18, 0)": (pa.decimal128(18, 0), _decimals(18, 0)),  # the widest compact decimal
    "DECIMAL(19, 3)": (pa.decimal128(19, 3), _decimals(19, 3)),  # the narrowest non-compact one
    "TIMESTAMP(0)": (pa.timestamp("s"), _DATETIMES.map(lambda t: t.replace(microsecond=0))),
    "TIMESTAMP(6) WITH LOCAL TIME ZONE": (pa.timestamp("us", tz="UTC"), _DATETIMES.map(lambda t: t.replace(tzinfo=_UTC))),
}


@st.composite
def key_batches(draw):
    names = draw(st.lists(st.sampled_from(sorted(KEY_TYPES)), min_size=1, max_size=4))
    fields = [(f"k{i}", t) for i, t in enumerate(names)]
    row = st.tuples(*[st.none() | KEY_TYPES[t][1] for t in names])
    rows = draw(st.lists(row, min_size=1, max_size=12))
    return fields, rows


def java_vectors(java, tmp_path, fields, table: pa.Table) -> dict:
    path = tmp_path / "keys.parquet"
    pq.write_table(table, path)
    return java.call("key_vectors", parquet=str(path), fields=[[n, t] for n, t in fields],
                     num_buckets=NUM_BUCKETS)


def impl_vectors(fields, table: pa.Table) -> dict:
    types = [parse_type(t) for _, t in fields]
    columns = [table.column(n) for n, _ in fields]
    buf, offsets = binary_rows(columns, types)
    data = buf.tobytes()
    rows = [data[offsets[i]:offsets[i + 1]].hex() for i in range(table.num_rows)]
    scalar = [encode_row_unserialized(r, types).hex() for r in zip(*[c.to_pylist() for c in columns], strict=True)]
    assert scalar == rows, "impl's scalar and vectorized BinaryRow encoders disagree"
    buckets = [compute_buckets(columns, types, n).tolist() for n in NUM_BUCKETS]
    return {"bytes": rows, "hash": row_hashes(columns, types).tolist(),
            "buckets": [list(b) for b in zip(*buckets, strict=True)]}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=key_batches())
def test_binary_row_bytes_hash_and_bucket_equal_java(java, tmp_path, batch):
    fields, rows = batch
    schema = pa.schema([(n, KEY_TYPES[t][0]) for n, t in fields])
    table = pa.Table.from_pylist([dict(zip([n for n, _ in fields], r, strict=True)) for r in rows], schema=schema)
    assert impl_vectors(fields, table) == java_vectors(java, tmp_path, fields, table)


def test_known_vector(java, tmp_path):
    """One vector written out, so a change on either side shows in plain bytes: ('a', 1) is an
    8-byte header (header byte 0, null bits), the 1-byte string inline with 0x80|len in the
    slot's last byte, then the little-endian BIGINT."""
    fields = [("k0", "STRING"), ("k1", "BIGINT")]
    table = pa.table({"k0": ["a"], "k1": pa.array([1], pa.int64())})
    got = java_vectors(java, tmp_path, fields, table)
    assert got["bytes"] == ["0000000000000000" "6100000000000081" "0100000000000000"]
    assert impl_vectors(fields, table) == got

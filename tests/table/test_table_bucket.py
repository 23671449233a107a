"""Bucket routing: vectorized BinaryRow + MurmurHash vs a scalar reference, and Paimon's own placement."""

from __future__ import annotations

import datetime
import decimal
import random
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.bucket.routing import (
    BucketMode,
    binary_rows,
    bucket_mode,
    compute_buckets,
    group_rows,
    row_hashes,
    split_by_group,
)
from impl.data.binary_row import encode_row, encode_row_unserialized
from impl.data.types import (
    BIGINT,
    BOOLEAN,
    BYTES,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TINYINT,
)


def murmur_scalar(data: bytes) -> int:
    """Paimon's MurmurHashUtils.hashBytesByWords, one row at a time (the reference)."""
    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF
    assert len(data) % 4 == 0
    h = 42
    for i in range(0, len(data), 4):
        k = struct.unpack_from("<I", data, i)[0]
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        k = rotl(k, 15)
        k = (k * 0x1B873593) & 0xFFFFFFFF
        h ^= k
        h = rotl(h, 13)
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return struct.unpack("<i", struct.pack("<I", h))[0]


def java_bucket(h: int, n: int) -> int:
    r = abs(h) % n
    return abs(-r if h < 0 else r)


def check_against_scalar(columns, types, num_buckets=7):
    rows = list(zip(*[c.to_pylist() for c in columns], strict=True))
    buf, offsets = binary_rows(columns, types)
    for i, r in enumerate(rows):
        expected = encode_row_unserialized(r, types)
        assert buf[offsets[i]:offsets[i + 1]].tobytes() == expected, r
        # the serialized form minus its 4-byte arity prefix is what gets hashed
        assert encode_row(r, types)[4:] == expected
    hashes = row_hashes(columns, types)
    expected_hashes = [murmur_scalar(encode_row_unserialized(r, types)) for r in rows]
    assert hashes.tolist() == expected_hashes
    buckets = compute_buckets(columns, types, num_buckets)
    assert buckets.tolist() == [java_bucket(h, num_buckets) for h in expected_hashes]


def test_reference_pk_table_placement():
    # pypaimon 2.1.0 wrote pk_t (bucket 2, primary key (dt, id), partition dt): in partition
    # 2024-01-01, id 3 landed in bucket 1 and ids 1, 2, 4 in bucket 0.
    ids = pa.array([1, 2, 3, 4], pa.int64())
    assert compute_buckets([ids], [BIGINT(False)], 2).tolist() == [0, 0, 1, 0]


def test_known_hash_of_bigint_row():
    # row of one BIGINT 1: 8 bytes null bits + slot holding 1
    data = bytes(8) + struct.pack("<q", 1)
    assert row_hashes([pa.array([1], pa.int64())], [BIGINT()]).tolist() == [murmur_scalar(data)]


def test_int_and_bigint_with_nulls():
    check_against_scalar([pa.array([1, None, -3, 2**31 - 1, -2**31], pa.int32())], [INT()])
    check_against_scalar([pa.array([0, None, -1, 2**63 - 1, -2**63], pa.int64())], [BIGINT()])


def test_strings_inline_and_long():
    values = ["", "a", "abcdefg", "abcdefgh", None, "ünïcødé", "x" * 100, "ab\x00cd", "0123456789abcdef"]
    check_against_scalar([pa.array(values)], [STRING()])
    check_against_scalar([pa.array(values, pa.large_string())], [STRING()])
    # a sliced array (non-zero offset) reads the right bytes
    check_against_scalar([pa.array(values).slice(2, 5)], [STRING()])


def test_multi_column_keys():
    s1 = pa.array(["short", "a-much-longer-value", None, "q" * 9, "z"])
    i = pa.array([1, 2, 3, None, 5], pa.int64())
    s2 = pa.array(["long-enough-string", "x", "yy" * 20, None, ""])
    check_against_scalar([s1, i, s2], [STRING(), BIGINT(), STRING()])


def test_other_fixed_types():
    cols = [pa.array([True, False, None]), pa.array([1.5, None, -0.0]), pa.array([1.5, None, 2.0], pa.float32()),
            pa.array([1, None, -2], pa.int8()), pa.array([1, None, 300], pa.int16()),
            pa.array([datetime.date(2024, 1, 1), None, datetime.date(1960, 5, 5)]),
            pa.array([b"abc", None, b"0123456789"], pa.binary())]
    check_against_scalar(cols, [BOOLEAN(), DOUBLE(), FLOAT(), TINYINT(), SMALLINT(), DATE(), BYTES()])


def test_timestamps_and_decimals():
    ts_us = pa.array([datetime.datetime(2024, 1, 1, 1, 2, 3, 456789), None, datetime.datetime(1960, 1, 1, 0, 0, 0, 1)],
                     pa.timestamp("us"))
    ts_ms = pa.array([datetime.datetime(2024, 1, 1, 1, 2, 3, 456000), None, None], pa.timestamp("ms"))
    d_small = pa.array([decimal.Decimal("1.23"), None, decimal.Decimal("-5.00")], pa.decimal128(10, 2))
    d_big = pa.array([decimal.Decimal("1.2"), None, decimal.Decimal("12345678901234567890.5")], pa.decimal128(30, 1))
    check_against_scalar([ts_us, ts_ms], [TIMESTAMP(6), TIMESTAMP(3)])
    check_against_scalar([d_small], [DECIMAL(10, 2)])
    check_against_scalar([d_big], [DECIMAL(30, 1)])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=20)), st.integers(-2**63, 2**63 - 1)),
                min_size=1, max_size=30),
       st.integers(1, 64))
def test_random_string_bigint_keys(rows, n):
    strings = pa.array([r[0] for r in rows], pa.string())
    ints = pa.array([r[1] for r in rows], pa.int64())
    check_against_scalar([strings, ints], [STRING(), BIGINT(False)], n)


# fixed-width fields without nulls take row_hashes' direct path (no BinaryRow built)
_FIXED_NO_NULLS = [
    (BIGINT(False), pa.int64(), st.integers(-2**63, 2**63 - 1)),
    (INT(False), pa.int32(), st.integers(-2**31, 2**31 - 1)),
    (SMALLINT(False), pa.int16(), st.integers(-2**15, 2**15 - 1)),
    (TINYINT(False), pa.int8(), st.integers(-128, 127)),
    (BOOLEAN(False), pa.bool_(), st.booleans()),
    (DOUBLE(False), pa.float64(), st.floats(allow_nan=False)),
    (FLOAT(False), pa.float32(), st.floats(width=32, allow_nan=False)),
    (DATE(False), pa.date32(), st.dates()),
    (DECIMAL(10, 2, False), pa.decimal128(10, 2), st.decimals(min_value=-10**7, max_value=10**7, places=2)),
    (TIMESTAMP(3, False), pa.timestamp("ms"), st.datetimes(min_value=datetime.datetime(1900, 1, 1)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))),
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(range(len(_FIXED_NO_NULLS))), min_size=1, max_size=4).flatmap(
    lambda kinds: st.tuples(st.just(kinds), st.lists(st.tuples(*[_FIXED_NO_NULLS[k][2] for k in kinds]),
                                                     min_size=1, max_size=20))),
       st.integers(1, 64))
def test_fixed_width_keys_without_nulls_hash_as_their_binary_rows(kinds_rows, n):
    kinds, rows = kinds_rows
    columns = [pa.array([r[j] for r in rows], _FIXED_NO_NULLS[k][1]) for j, k in enumerate(kinds)]
    check_against_scalar(columns, [_FIXED_NO_NULLS[k][0] for k in kinds], n)
    # a chunked column hashes as its combined chunks
    chunked = [pa.chunked_array([c.slice(0, 1), c.slice(1)]) for c in columns]
    assert row_hashes(chunked, [_FIXED_NO_NULLS[k][0] for k in kinds]).tolist() == \
        row_hashes(columns, [_FIXED_NO_NULLS[k][0] for k in kinds]).tolist()


def test_vectorized_equals_scalar_on_many_rows():
    rng = random.Random(7)
    n = 2000
    strings = pa.array(["".join(rng.choice("abcdé") for _ in range(rng.randint(0, 30))) for _ in range(n)])
    ints = pa.array(np.random.default_rng(3).integers(-2**40, 2**40, n))
    check_against_scalar([strings, ints], [STRING(), BIGINT()], 16)


def test_group_rows_and_split():
    dt = pa.array(["b", "a", "b", "c", "a"])
    hr = pa.array([1, 1, 1, 2, 2], pa.int32())
    g = group_rows([dt, hr])
    keys = [g.values[i] for i in g.ids]
    assert keys == [("b", 1), ("a", 1), ("b", 1), ("c", 2), ("a", 2)]
    assert len(g.values) == 4
    t = pa.table({"dt": dt, "hr": hr, "row": list(range(5))})
    parts = split_by_group(t, g.ids)
    seen = {}
    for gid, part in parts:
        seen[g.values[gid]] = part.column("row").to_pylist()
    assert seen == {("b", 1): [0, 2], ("a", 1): [1], ("c", 2): [3], ("a", 2): [4]}


@pytest.mark.parametrize("num_buckets", [1, 2, 3, 16])
def test_buckets_in_range(num_buckets):
    ids = pa.array(np.arange(-500, 500), pa.int64())
    b = compute_buckets([ids], [BIGINT()], num_buckets)
    assert b.min() >= 0 and b.max() < num_buckets
    if num_buckets > 1:
        assert len(set(b.tolist())) == num_buckets


@pytest.mark.parametrize("bucket, primary_keys, partition_keys, mode", [
    (4, (), (), BucketMode.HASH_FIXED),
    (4, ("dt", "id"), ("dt",), BucketMode.HASH_FIXED),
    (-1, (), ("dt",), BucketMode.BUCKET_UNAWARE),
    (-1, ("dt", "id"), ("dt",), BucketMode.HASH_DYNAMIC),
    (-1, ("id",), (), BucketMode.HASH_DYNAMIC),
    (-1, ("id",), ("dt",), BucketMode.CROSS_PARTITION),
])
def test_bucket_mode_is_paimons(bucket, primary_keys, partition_keys, mode):
    assert bucket_mode(bucket, primary_keys, partition_keys) is mode


def test_table_bucket_mode(catalog):
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    unaware = catalog.create_table("db.unaware", schema=schema)
    fixed = catalog.create_table("db.fixed", schema=schema, primary_keys=["id"], options={"bucket": "2"})
    assert unaware.bucket_mode() is BucketMode.BUCKET_UNAWARE and fixed.bucket_mode() is BucketMode.HASH_FIXED


def test_split_by_group_parts_own_their_memory():
    """Each group is its own copy, not a slice of one shared table: a writer buffering one
    bucket's rows must not keep the other buckets' rows of the same batch alive."""
    from impl.bucket.routing import split_by_group
    t = pa.table({"x": np.arange(1000, dtype=np.int64)})
    parts = split_by_group(t, np.arange(1000) % 4)
    assert [g for g, _ in parts] == [0, 1, 2, 3]
    for g, part in parts:
        assert part.column("x").to_pylist() == list(range(g, 1000, 4))
        (chunk,) = part.column("x").chunks
        assert chunk.buffers()[1].size <= 8 * part.num_rows + 64  # no shared 8,000-byte parent

"""``bucket-function.type``: the mod rule (Paimon's ModBucketFunction), vectorized, and the
places that place rows by it (impl's writer, Spark's bucket UDF) agreeing with each other."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import impl
from impl.bucket.routing import compute_buckets
from impl.data.types import parse_type
from impl.errors import InvalidOptionError
from impl.jobs.routing import bucket_function
from impl.options.values import BucketFunctionType


@given(st.sampled_from(["INT", "BIGINT"]), st.integers(1, 1000), st.data())
def test_mod_is_java_floor_mod(type_name, n, data):
    bits = 31 if type_name == "INT" else 63
    keys = data.draw(st.lists(st.none() | st.integers(-(2 ** bits), 2 ** bits - 1), max_size=50))
    t = parse_type(type_name)
    got = compute_buckets([pa.array(keys, pa.int32() if type_name == "INT" else pa.int64())], [t], n,
                          BucketFunctionType.MOD)
    # Math.floorMod; a null key's slot reads as 0
    assert got.tolist() == [(k or 0) % n for k in keys]
    # Spark's bucket UDF places rows by the same rule
    udf = bucket_function([t], n, "mod")
    assert udf(pa.array(keys, pa.int32() if type_name == "INT" else pa.int64())).to_pylist() == got.tolist()


@pytest.mark.parametrize("types", [["STRING"], ["INT", "INT"], ["SMALLINT"]])
def test_mod_refuses_other_bucket_keys(types):
    with pytest.raises(InvalidOptionError, match="exactly one INT or BIGINT"):
        compute_buckets([pa.array([1]) for _ in types], [parse_type(t) for t in types], 4, BucketFunctionType.MOD)


def test_mod_table_places_and_prunes_by_key(tmp_path):
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table("db.t", schema=pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_keys=["k"],
                     options={"bucket": "3", "bucket-function.type": "mod"})
    t = cat.get_table("db.t")
    t.write_arrow(pa.table({"k": pa.array(range(-10, 10), pa.int32()), "v": [str(i) for i in range(20)]}))
    splits = t.new_read_builder().new_scan().plan().splits()
    for s in splits:
        keys = t.new_read_builder().new_read().to_arrow([s]).column("k").to_pylist()
        assert keys and all(k % 3 == s.bucket for k in keys)
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("k", -4))
    pruned = rb.new_scan().plan().splits()
    assert [s.bucket for s in pruned] == [-4 % 3]
    assert rb.new_read().to_arrow(pruned).to_pylist() == [{"k": -4, "v": "6"}]

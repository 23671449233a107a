"""Paimon buckets computed by Spark expressions (impl.spark.bucket_expr) equal impl's compute_buckets.

The routing of ``write_dataframe`` depends on it: a wrong bucket would send one bucket's rows to
several tasks (caught by test_roundtrip's one-task-per-bucket test) and break the one-writer rule.
"""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from impl.format.types import parse_type
from impl.spark import bucket_expr
from impl.table.bucket import compute_buckets

ROWS = 1500
SPARK_DDL = "b boolean, t tinyint, sm smallint, i int, d date, l bigint, s string, f double"
PAIMON = {"b": "BOOLEAN", "t": "TINYINT", "sm": "SMALLINT", "i": "INT", "d": "DATE", "l": "BIGINT"}


def _rows():
    """Random values of every supported type, their extremes, and nulls (10% per column)."""
    rng = np.random.default_rng(16)
    cols = {
        "b": rng.integers(0, 2, ROWS).astype(bool),
        "t": rng.integers(-128, 128, ROWS),
        "sm": rng.integers(-2**15, 2**15, ROWS),
        "i": rng.integers(-2**31, 2**31, ROWS),
        "d": rng.integers(-719_000, 2_900_000, ROWS),  # days: years ~1 to ~9900
        "l": rng.integers(-2**63, 2**63 - 1, ROWS, dtype=np.int64),
    }
    extremes = {"t": (-128, 127, 0, -1), "sm": (-2**15, 2**15 - 1, 0, -1), "i": (-2**31, 2**31 - 1, 0, -1),
                "l": (-2**63, 2**63 - 1, 0, -1), "d": (0, -1, 2_932_896, -719_162)}
    for c, vals in extremes.items():
        cols[c][:len(vals)] = vals
    nulls = {c: rng.random(ROWS) < 0.1 for c in cols}
    epoch = datetime.date(1970, 1, 1)
    rows = []
    for r in range(ROWS):
        row = []
        for c in ("b", "t", "sm", "i", "d", "l"):
            v = None if nulls[c][r] and r >= 4 else cols[c][r].item()
            if c == "d" and v is not None:
                v = epoch + datetime.timedelta(days=v)
            row.append(v)
        rows.append((*row, f"s{r}", r * 0.5))
    return rows


KEYS = [["l"], ["i"], ["d"], ["t", "sm"], ["l", "i"], ["b", "t", "sm", "i", "d", "l"]]


@pytest.mark.parametrize("key", KEYS, ids=["-".join(k) for k in KEYS])
def test_jvm_buckets_equal_compute_buckets(spark, key):
    df = spark.createDataFrame(_rows(), SPARK_DDL)
    types = [parse_type(PAIMON[c]) for c in key]
    out = df
    for buckets in (1, 3, 16):
        out = bucket_expr.with_jvm_bucket(out, key, types, buckets, f"bk{buckets}")
    assert out.columns == df.columns + ["bk1", "bk3", "bk16"]  # temporary columns dropped
    got = out.toArrow()
    for buckets in (1, 3, 16):
        want = compute_buckets([got.column(c) for c in key], types, buckets)
        have = got.column(f"bk{buckets}").to_numpy()
        assert np.array_equal(have, want), (buckets, np.flatnonzero(have != want)[:5])
    # the buckets are spread, not all one value
    assert len(np.unique(got.column("bk16").to_numpy())) == 16


def test_wide_rows_and_a_long_key_compile(spark):
    """40 columns and a 12-field key: the generated code stays within the JVM's method limits."""
    cols = ", ".join(f"c{j} bigint" for j in range(40))
    df = spark.createDataFrame([tuple(r * 40 + j for j in range(40)) for r in range(200)], cols)
    key = [f"c{j}" for j in range(0, 36, 3)]
    types = [parse_type("BIGINT")] * len(key)
    got = bucket_expr.with_jvm_bucket(df, key, types, 5, "bk").toArrow()
    assert np.array_equal(got.column("bk").to_numpy(), compute_buckets([got.column(c) for c in key], types, 5))


def test_routing_takes_the_jvm_path_for_integer_keys_only(spark):
    df = spark.createDataFrame(_rows()[:50], SPARK_DDL)
    ints = [parse_type("BIGINT")]
    assert bucket_expr.supports(ints, [df.schema["l"].dataType])
    plan = bucket_expr.with_jvm_bucket(df, ["l"], ints, 4, "bk")._jdf.queryExecution().executedPlan().toString()
    assert "ArrowEvalPython" not in plan and "BatchEvalPython" not in plan
    # unsupported: strings, floating point, a Spark type that differs from the table's, long keys
    assert not bucket_expr.supports([parse_type("STRING")], [df.schema["s"].dataType])
    assert not bucket_expr.supports([parse_type("DOUBLE")], [df.schema["f"].dataType])
    assert not bucket_expr.supports(ints, [df.schema["i"].dataType])  # int column for a BIGINT field
    assert not bucket_expr.supports(ints * 17, [df.schema["l"].dataType] * 17)
    with pytest.raises(impl_error(), match="not computed in the JVM.*supports"):
        bucket_expr.with_jvm_bucket(df, ["s"], [parse_type("STRING")], 4, "bk")


def impl_error():
    from impl.spark.tables import SparkConnectorError

    return SparkConnectorError


def test_write_dataframe_with_a_string_key_keeps_the_udf_and_routes_right(spark, table_path):
    """A string bucket key takes the Arrow UDF; every bucket is still written by one task, in
    Paimon's bucket of its rows."""
    import impl.spark
    from impl.spark.routing import BUCKET_COLUMN, with_bucket_column
    from impl.spark.tables import TableRef

    df = spark.createDataFrame([(f"k{i}", i) for i in range(400)], "k string, v bigint").repartition(3)
    res = impl.spark.write_dataframe(df, table_path, primary_keys=["k"], options={"bucket": "4"}, num_tasks=3)
    keys = [(m.partition, m.bucket) for m in res.messages]
    assert len(keys) == len(set(keys)) == 4
    table = TableRef.from_path(table_path).table()
    routed = with_bucket_column(df, table, [("k", "k"), ("v", "v")])
    assert "ArrowEvalPython" in routed._jdf.queryExecution().executedPlan().toString()
    got = routed.toArrow()
    want = compute_buckets([got.column("k")], [table.schema.field("k").type], 4)
    assert np.array_equal(got.column(BUCKET_COLUMN).to_numpy(), want)
    assert spark.read.format("paimon_py").load(table_path).count() == 400
    assert pa.types.is_int32(got.schema.field(BUCKET_COLUMN).type)

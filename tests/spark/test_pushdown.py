"""Pushed filters never change an answer: every query gives the rows Spark itself selects.

By default every scan reads the whole snapshot and Spark filters; with ``pushdown`` = ``true``, impl also prunes partitions, buckets and files and filters rows before Spark does. Nulls, NaN, timestamps with and without zone, decimals,
strings and IN lists with NULL are where engines disagree, so they are all here.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


QUERIES = [
    "id = 3", "id <> 3", "id IN (1, 2, NULL)", "id NOT IN (1, 2)", "NOT (id >= 10)",
    "name LIKE 'n1%'", "name >= 'n5'", "name IS NULL", "name <=> NULL", "name LIKE '%5'",
    "day BETWEEN DATE'2024-01-05' AND DATE'2024-01-09'",
    "ts >= TIMESTAMP'2024-01-01 05:00:00'", "ntz < TIMESTAMP_NTZ'2024-01-01 03:00:00'",
    "f > 5.0", "f = double('NaN')", "amount <= 3.5", "NOT flag", "dt IN ('a', 'c') AND id > 20",
]


def _rows(n):
    out = []
    for i in range(n):
        null = i % 7 == 6
        out.append((
            i, None if null else f"n{i}", dt.date(2024, 1, 1) + dt.timedelta(days=i % 12),
            dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=i % 10),
            dt.datetime(2024, 1, 1) + dt.timedelta(hours=i % 8),
            float("nan") if i % 9 == 4 else (None if null else i * 0.75),
            None if null else decimal.Decimal(i) / 2, None if null else i % 2 == 0, "abc"[i % 3],
        ))
    return out


@pytest.mark.parametrize("primary_key", [False, True])
def test_pushdown_on_and_off_agree(spark, warehouse, primary_key):
    schema = ("id long, name string, day date, ts timestamp, ntz timestamp_ntz, f double, "
              "amount decimal(10,3), flag boolean, dt string")
    df = spark.createDataFrame(_rows(50), schema)
    path = os.path.join(warehouse, "db.db", "pk" if primary_key else "app")
    if primary_key:
        import impl.spark

        impl.spark.write_dataframe(df, path, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"})
    else:
        df.repartition(3).write.format("paimon_py").option("partition", "dt").mode("append").save(path)
    from pyspark.sql import functions as F

    # Spark's own answer for every query, over the original rows, in one job
    truth = df.select("id", *[F.expr(q).alias(f"q{i}") for i, q in enumerate(QUERIES)]).collect()
    spark.read.format("paimon_py").load(path).createOrReplaceTempView("push_default")
    spark.read.format("paimon_py").option("pushdown", "true").load(path).createOrReplaceTempView("push_on")
    for view in ("push_default", "push_on"):
        for i, q in enumerate(QUERIES):
            got = sorted(r.id for r in spark.sql(f"SELECT id FROM {view} WHERE {q}").collect())
            want = sorted(r.id for r in truth if r[f"q{i}"] is True)
            assert got == want, (view, q)

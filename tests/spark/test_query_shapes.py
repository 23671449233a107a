"""Every query shape over ``paimon_py`` answers what the same query answers over the table's rows.

Spark 4.3 hands every scan of one loaded DataFrame / view the same planned read (see
``impl.spark.claims``), so a reader that pruned its plan for one scan's filters would answer a
self-join, a union with a filtered copy, a subquery over a view, ... wrongly. With default
settings every scan reads the whole snapshot and Spark applies the filters; these tests run each
shape over a loaded ``paimon_py`` relation and over an in-memory DataFrame of the same rows (read
by ``impl`` itself, not through Spark's source) and require equal answers, on a primary-key table,
a partitioned append table and a deletion-vector table, each written in several commits so that
partitions, buckets and files differ in what they hold.
"""

from __future__ import annotations

import os
from typing import Callable

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import impl  # noqa: E402

DTS = ("a", "b", "c")
STREAM_END_TIMEOUT_S = 900  # a loaded full run on 2 cores: several minutes for a few micro-batches


def _batch(lo: int, hi: int):
    import pyarrow as pa

    ids = list(range(lo, hi))
    return pa.table({"dt": [DTS[i % 3] for i in ids], "id": pa.array(ids, pa.int64()),
                     "v": pa.array([None if i % 11 == 5 else (i * 7) % 23 for i in ids], pa.int64())})


def _make_table(warehouse: str, kind: str):
    """A table of ``kind`` (pk, append, dv) written in several commits: inserts, updates, a delete."""
    import pyarrow as pa

    cat = impl.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
    if kind == "append":
        t = cat.create_table(f"db.{kind}", schema=schema, partition_keys=["dt"])
    else:
        opts = {"bucket": "2"} | ({"deletion-vectors.enabled": "true"} if kind == "dv" else {})
        t = cat.create_table(f"db.{kind}", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options=opts)
    t.write_arrow(_batch(0, 40))
    t.write_arrow(_batch(40, 70))
    if kind != "append":
        t.write_arrow(_batch(10, 25).set_column(2, "v", pa.array([1000 + i for i in range(15)], pa.int64())))
        if kind == "dv":
            t.compact(full=True)  # levels >= 1 now; the next write's compaction marks rows in deletion vectors
            t.write_arrow(_batch(30, 35).set_column(2, "v", pa.array([2000 + i for i in range(5)], pa.int64())))
            t.compact()
    else:
        t.write_arrow(_batch(70, 80))
    return os.path.join(warehouse, "db.db", kind), cat.get_table(f"db.{kind}").to_arrow()


@pytest.fixture(scope="module", params=["pk", "append", "dv"])
def table(request, tmp_path_factory, spark):
    warehouse = str(tmp_path_factory.mktemp(f"shapes-{request.param}"))
    path, rows = _make_table(warehouse, request.param)
    return request.param, path, rows


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _both(spark, table):
    """(the table loaded through paimon_py, the same rows as an in-memory DataFrame)."""
    _, path, rows = table
    loaded = spark.read.format("paimon_py").load(path)
    truth = spark.createDataFrame(rows.to_pandas(), schema=loaded.schema)
    return loaded, truth


# Each shape uses one loaded relation at least twice, at least once with a filter ``f`` (and
# sometimes a second filter ``g``), the way Spark shares one planned read between those scans.
def _count(df):
    from pyspark.sql import functions as F

    return df.agg(F.count("*").alias("n"))


SHAPES: dict[str, Callable] = {
    "cross_join_counts": lambda df, f, g: _count(df).crossJoin(_count(df.filter(f)).withColumnRenamed("n", "m")),
    "union_counts": lambda df, f, g: _count(df).union(_count(df.filter(f))),
    "union_rows": lambda df, f, g: df.union(df.filter(f)),
    "union_two_filters": lambda df, f, g: df.filter(f).union(df.filter(g)),
    "self_join": lambda df, f, g: df.alias("a").join(df.filter(f).alias("b"), "id").select("id", "a.v", "b.dt"),
    "left_join_filtered_self": lambda df, f, g: df.alias("a").join(df.filter(f).alias("b"), "id", "left")
    .select("id", "a.dt", "b.v"),
    "except_all": lambda df, f, g: df.exceptAll(df.filter(f)),
    "intersect": lambda df, f, g: df.filter(g).intersect(df.filter(f)),
    "agg_filtered_and_not": lambda df, f, g: df.groupBy("dt").count()
    .join(df.filter(f).groupBy("dt").count().withColumnRenamed("count", "c2"), "dt", "left"),
    "window": lambda df, f, g: df.filter(f).selectExpr("id", "dt", "row_number() over (partition by dt order by id) rn")
    .union(df.selectExpr("id", "dt", "count(*) over (partition by dt) rn")),
}

SQL_SHAPES = {
    "scalar_subquery": "select count(*) from {v} where v > (select avg(v) from {v} where {f})",
    "in_subquery": "select id, dt from {v} where id in (select id from {v} where {f})",
    "exists_subquery": "select count(*) from {v} o where exists (select 1 from {v} i where i.id = o.id + 1 and {f})",
    "cte_twice": "with c as (select * from {v} where {f}) select count(*), (select count(*) from {v}) from c",
    "cte_self_join": "with c as (select * from {v}) select a.id, b.v from c a join c b on a.id = b.id where {f_a}",
    "union_all_sql": "select id from {v} where {f} union all select id from {v}",
}

FILTERS = ["id < 5", "dt = 'b'", "dt = 'a' and id > 30", "v is null", "id in (3, 33, 63)", "v >= 10 or dt = 'c'"]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_dataframe_shapes(spark, table, shape):
    loaded, truth = _both(spark, table)
    for f, g in (("id < 5", "dt = 'b'"), ("dt = 'a' and id > 30", "v is null")):
        assert _rows(SHAPES[shape](loaded, f, g)) == _rows(SHAPES[shape](truth, f, g)), (table[0], shape, f, g)


@pytest.mark.parametrize("shape", sorted(SQL_SHAPES))
def test_sql_shapes_over_temp_views(spark, table, shape):
    loaded, truth = _both(spark, table)
    loaded.createOrReplaceTempView("shape_loaded")
    truth.createOrReplaceTempView("shape_truth")
    for f in ("id < 5", "dt = 'b' and id > 40"):
        q = SQL_SHAPES[shape]
        got = spark.sql(q.format(v="shape_loaded", f=f, f_a=f.replace("id", "a.id").replace("dt", "a.dt")))
        want = spark.sql(q.format(v="shape_truth", f=f, f_a=f.replace("id", "a.id").replace("dt", "a.dt")))
        assert _rows(got) == _rows(want), (table[0], shape, f)


def test_cache_and_repeated_queries(spark, table):
    loaded, truth = _both(spark, table)
    cached = loaded.filter("id >= 3").cache()
    try:
        for df_loaded, df_truth in ((cached, truth.filter("id >= 3")), (loaded, truth)):
            assert _rows(df_loaded.filter("dt = 'a'")) == _rows(df_truth.filter("dt = 'a'"))
            assert df_loaded.count() == df_truth.count()
        assert _rows(cached.union(loaded.filter("id < 3"))) == _rows(truth)
    finally:
        cached.unpersist()


def test_stream_joined_with_batch_read_of_the_same_table(spark, table, tmp_path):
    kind, path, rows = table
    loaded, truth = _both(spark, table)
    stream = spark.readStream.format("paimon_py").load(path)
    joined = stream.join(loaded.filter("dt = 'b'").selectExpr("id", "v AS bv"), "id")
    q = (joined.writeStream.format("memory").queryName(f"shape_stream_{kind}")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    # availableNow ends by itself once it has read the snapshot: wait for that (bounded only so a
    # hang fails); awaitTermination(timeout) returns False on timeout, and reading the memory
    # sink then compared a partial answer (the flake of a loaded run)
    assert q.awaitTermination(STREAM_END_TIMEOUT_S), f"the stream did not end in {STREAM_END_TIMEOUT_S} s: {q.status}"
    got = _rows(spark.table(f"shape_stream_{kind}").select("id", "dt", "v", "bv"))
    want = _rows(truth.join(truth.filter("dt = 'b'").selectExpr("id", "v AS bv"), "id").select("id", "dt", "v", "bv"))
    assert got == want


_filters = st.one_of(
    st.builds(lambda c, op, n: f"{c} {op} {n}", st.sampled_from(["id", "v"]),
              st.sampled_from(["<", "<=", "=", ">=", ">", "<>"]), st.integers(-1, 81)),
    st.builds(lambda d: f"dt = '{d}'", st.sampled_from(DTS + ("z",))),
    st.builds(lambda ns: f"id in ({', '.join(map(str, ns))})", st.lists(st.integers(0, 80), min_size=1, max_size=4)),
    st.sampled_from(["v is null", "v is not null"]),
)
_compound = st.one_of(_filters, st.builds(lambda a, b, op: f"({a}) {op} ({b})", _filters, _filters,
                                          st.sampled_from(["and", "or"])))


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(shape=st.sampled_from(sorted(SHAPES)), f=_compound, g=_compound)
def test_drawn_filters_and_shapes(spark, table, shape, f, g):
    loaded, truth = _both(spark, table)
    assert _rows(SHAPES[shape](loaded, f, g)) == _rows(SHAPES[shape](truth, f, g)), (table[0], shape, f, g)


@pytest.mark.large
def test_shapes_on_read_table(spark, table):
    """The same shapes over ``impl.spark.read_table`` (Spark's Parquet reader where no merge is
    needed, unioned with ``paimon_py`` for the rest), one filter pair each. Minutes: not in CI
    (run with ``-m large``); tests/spark/test_fast_read.py runs two shapes in CI."""
    import impl.spark

    _, path, rows = table
    fast = impl.spark.read_table(spark, path)
    truth = spark.createDataFrame(rows.to_pandas(), schema=fast.schema)
    for shape in sorted(SHAPES):
        got, want = SHAPES[shape](fast, "id < 5", "dt = 'b'"), SHAPES[shape](truth, "id < 5", "dt = 'b'")
        assert _rows(got) == _rows(want), (table[0], shape)
    fast.createOrReplaceTempView("shape_fast")
    truth.createOrReplaceTempView("shape_fast_truth")
    f = "dt = 'a' and id > 30"
    for shape, q in sorted(SQL_SHAPES.items()):
        fa = f.replace("id", "a.id").replace("dt", "a.dt")
        got = spark.sql(q.format(v="shape_fast", f=f, f_a=fa))
        want = spark.sql(q.format(v="shape_fast_truth", f=f, f_a=fa))
        assert _rows(got) == _rows(want), (table[0], shape)

"""Reads stay right when Spark 4.3 reuses a planned read.

Spark 4.3 keeps the planned read (reader + input partitions) of a Python data source on the
loaded relation: a later query on the same DataFrame or view that pushes no filter runs the plan
of whichever query planned last, and re-running a DataFrame runs its old plan. These tests query
one DataFrame and one view over and over, with and without filters, across new commits, and
check every answer against the table's rows computed independently.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from spark_helpers import data_files  # noqa: E402


def _append(spark, path, ids, dt="a"):
    spark.createDataFrame([(dt, i, i * 10) for i in ids], "dt string, id long, v long") \
        .write.format("paimon_py").option("partition", "dt").mode("append").save(path)


def _ids(df):
    return sorted(r.id for r in df.collect())


def test_same_dataframe_and_view_with_changing_filters_and_commits(spark, table_path):
    _append(spark, table_path, range(10))
    df = spark.read.format("paimon_py").load(table_path)
    df.createOrReplaceTempView("cached_v")
    rows = set(range(10))

    def check():
        assert _ids(df.filter("id = 3")) == sorted(rows & {3})
        assert _ids(df.filter("id > 7")) == sorted(r for r in rows if r > 7)
        assert _ids(df) == sorted(rows)  # no filter after filtered queries: the cached plan is not used as is
        assert df.count() == len(rows)
        assert df.filter("id < 2").count() == len([r for r in rows if r < 2])
        got = [r.id for r in spark.sql("SELECT id FROM cached_v WHERE id % 2 = 1 ORDER BY id").collect()]
        assert got == sorted(r for r in rows if r % 2 == 1)  # not pushable: plan reused by Spark
        assert spark.sql("SELECT count(*) c FROM cached_v").collect()[0].c == len(rows)
        assert _ids(spark.sql("SELECT * FROM cached_v WHERE id >= 5 AND id <= 12")) == \
            sorted(r for r in rows if 5 <= r <= 12)

    check()
    _append(spark, table_path, range(10, 20))
    rows |= set(range(10, 20))
    check()
    _append(spark, table_path, range(20, 23), dt="b")
    rows |= set(range(20, 23))
    check()


def test_rerunning_a_planned_dataframe_sees_new_commits(spark, table_path):
    _append(spark, table_path, range(5))
    df = spark.read.format("paimon_py").load(table_path)
    filtered = df.filter("id >= 3")
    assert _ids(filtered) == [3, 4]
    assert _ids(df) == [0, 1, 2, 3, 4]
    _append(spark, table_path, range(5, 8))
    assert _ids(filtered) == [3, 4, 5, 6, 7]  # same DataFrame object, executed again
    assert _ids(df) == list(range(8))
    assert df.count() == 8


def test_time_travel_dataframe_stays_on_its_snapshot(spark, table_path):
    _append(spark, table_path, range(5))
    _append(spark, table_path, range(5, 9))
    old = spark.read.format("paimon_py").option("snapshot-id", "1").load(table_path)
    assert _ids(old.filter("id > 2")) == [3, 4]
    assert _ids(old) == [0, 1, 2, 3, 4]
    _append(spark, table_path, range(9, 12))
    assert _ids(old) == [0, 1, 2, 3, 4]
    assert _ids(old.filter("id < 2")) == [0, 1]


def test_union_of_one_dataframe_with_its_filtered_self(spark, table_path):
    _append(spark, table_path, range(6))
    df = spark.read.format("paimon_py").option("pushdown", "true").load(table_path)
    other = spark.read.format("paimon_py").option("pushdown", "true").load(table_path)
    # separate loads: separate plans, right answer
    assert df.union(other.filter("id = 1")).count() == 7
    # one load used twice with different filters: Spark 4.3 hands both sides one pruned plan;
    # with pushdown=true the read refuses instead of answering wrongly
    with pytest.raises(Exception, match="SharedPlanError|same planned"):
        df.union(df.filter("id = 1")).count()
    default = spark.read.format("paimon_py").load(table_path)  # the default prunes nothing
    assert default.union(default.filter("id = 1")).count() == 7
    assert df.union(df).count() == 12  # no pushed filter: one plan is right for both sides


def test_one_dataframe_used_twice_with_different_filters_in_different_stages(spark, table_path):
    """The hazard Spark 4.3's plan sharing creates: both scans of one loaded DataFrame get the
    plan of the last push. Planned with the OR of both pushes, each side gets its rows; the
    filters prune partitions (dt) so a plan pruned for one side only would lose the other's."""
    _append(spark, table_path, range(0, 10), dt="a")
    _append(spark, table_path, range(10, 20), dt="b")
    _append(spark, table_path, range(20, 30), dt="c")
    df = spark.read.format("paimon_py").option("pushdown", "true").load(table_path)
    low, high = df.filter("dt = 'a' AND id < 3"), df.filter("dt = 'b' AND id > 16")
    assert sorted((r.id, r.h) for r in low.crossJoin(high.selectExpr("id AS h")).collect()) == \
        [(lo, hi) for lo in range(3) for hi in (17, 18, 19)]
    joined = low.selectExpr("id % 3 AS k", "id AS lo").join(high.selectExpr("id % 3 AS k", "id AS hi"), "k")
    assert sorted((r.lo, r.hi) for r in joined.collect()) == \
        sorted((lo, hi) for lo in range(3) for hi in (17, 18, 19) if lo % 3 == hi % 3)
    # both filtered, one stage: the OR plan is right for both sides, nothing to refuse
    assert _ids(low.union(high)) == [0, 1, 2, 17, 18, 19]
    # a third filter on the same DataFrame later: the plan widens again, answers stay right
    mid = df.filter("dt = 'c'")
    assert _ids(mid.union(low)) == [0, 1, 2] + list(range(20, 30))
    assert df.count() == 30


def test_pushed_filters_prune_partitions_and_files(spark, warehouse):
    """A pruned query never opens the files it prunes: delete them and it still answers."""
    path = os.path.join(warehouse, "db.db", "pruned")
    _append(spark, path, range(0, 100), dt="a")
    _append(spark, path, range(100, 200), dt="b")
    files = sorted(data_files(path))
    assert len(files) >= 2
    b_files = [f for f in files if f.startswith("dt=b/")]
    assert b_files
    for f in b_files:
        os.remove(os.path.join(path, f))
    df = spark.read.format("paimon_py").option("pushdown", "true").load(path)
    assert _ids(df.filter("dt = 'a' AND id < 3")) == [0, 1, 2]  # partition pruning
    assert df.filter("dt = 'a'").count() == 100
    assert _ids(df.filter("id BETWEEN 10 AND 12")) == [10, 11, 12]  # file statistics pruning
    with pytest.raises(Exception, match="missing|DataFileError|No such file"):
        spark.read.format("paimon_py").option("pushdown", "true").load(path).filter("dt = 'b'").count()
    # the default prunes nothing: every scan reads the whole snapshot, so the deleted file is read
    with pytest.raises(Exception, match="missing|DataFileError|No such file"):
        spark.read.format("paimon_py").load(path).filter("dt = 'a'").count()

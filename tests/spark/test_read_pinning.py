"""One snapshot per action and per pinned DataFrame, and ``read_table`` filters as Spark parses
them (issue 46, items 2 and 3). Every answer is checked against impl's own read of the table,
outside Spark; the files a pruned ``read_table`` opens are counted."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import pyarrow as pa  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
KINDS = {
    "append": dict(partition_keys=["dt"]),
    "pk": dict(primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"}),
    "dv": dict(primary_keys=["dt", "id"], partition_keys=["dt"],
               options={"bucket": "2", "deletion-vectors.enabled": "true"}),
}


def _batch(lo: int, hi: int, dt: str | None = None, offset: int = 0) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({"dt": [dt or ("a", "b", "c")[i % 3] for i in ids], "id": pa.array(ids, pa.int64()),
                     "v": pa.array([i + offset for i in ids], pa.int64())}, schema=SCHEMA)


def _table(warehouse: str, kind: str, commits: int = 4):
    cat = impl.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", schema=SCHEMA, **KINDS[kind])
    for k in range(commits):  # several files per bucket; the primary-key kinds rewrite keys
        t.write_arrow(_batch(k * 20, k * 20 + 40, offset=k * 1000))
    if kind == "dv":
        t.compact()
    return cat


def _truth(cat, keep=None, **options) -> list[tuple]:
    t = cat.get_table("db.t")
    t = t.copy(options) if options else t
    return sorted(tuple(r.values()) for r in t.to_arrow().to_pylist() if keep is None or keep(r))


def _rows(rows) -> list[tuple]:
    return sorted(tuple(r) for r in rows)


@pytest.mark.parametrize("kind", ["append", "pk"])
def test_rdd_actions_of_several_jobs_read_one_plan(spark, warehouse, table_path, kind):
    """zipWithIndex counts each partition in a first job and numbers rows in a second; take()
    scans more partitions job after job. RDD jobs have no SQL execution id: each job used to be
    taken for another query and re-planned (the whole table, at the latest snapshot)."""
    cat = _table(warehouse, kind)
    # pushdown: the plan is pruned by dt, a re-plan is not (duplicate indices on the old code)
    df = spark.read.format("paimon_py").option("pushdown", "true").option("read.parallelism", "4") \
        .load(table_path).filter("dt <> 'c'")
    want = _truth(cat, lambda r: r["dt"] != "c")
    indexed = df.rdd.zipWithIndex().collect()
    assert sorted(i for _, i in indexed) == list(range(len(want)))
    assert _rows(r for r, _ in indexed) == want
    assert _rows(df.rdd.take(len(want) + 5)) == want

    # default options, a commit between the two jobs of one zipWithIndex
    plain = spark.read.format("paimon_py").option("read.parallelism", "4").load(table_path)
    before = _truth(cat)
    zipped = plain.rdd.zipWithIndex()  # runs the counting job now
    cat.get_table("db.t").write_arrow(_batch(500, 530))
    numbered = zipped.collect()
    assert sorted(i for _, i in numbered) == list(range(len(before)))
    assert _rows(r for r, _ in numbered) == before


@pytest.mark.parametrize("option", ["scan.tag-name", "scan.version"])
def test_tag_pins_every_query_of_a_dataframe(spark, warehouse, table_path, option):
    cat = _table(warehouse, "dv")
    t = cat.get_table("db.t")
    t.create_tag("t1")
    at_tag = _truth(cat, **{"scan.tag-name": "t1"})
    t.write_arrow(_batch(0, 90, offset=7000))
    df = spark.read.format("paimon_py").option(option, "t1").load(table_path)
    assert _rows(df.collect()) == at_tag
    # a second and third query on the DataFrame re-plan in the tasks: still the tag's snapshot
    assert df.count() == len(at_tag)
    assert _rows(df.filter("id < 30").collect()) == [r for r in at_tag if r[1] < 30]
    fast = impl.spark.read_table(spark, table_path, options={option: "t1"}, filter="dt = 'a'")
    assert _rows(fast.collect()) == [r for r in at_tag if r[0] == "a"]
    # the tag now names another snapshot: the DataFrame refuses instead of reading it
    t.delete_tag("t1")
    t.create_tag("t1")
    with pytest.raises(Exception, match="PlanPinError"):
        df.count()


def test_dataframe_loaded_before_a_rename(spark, warehouse, table_path):
    cat = _table(warehouse, "dv")
    before = _truth(cat)
    df = spark.read.format("paimon_py").load(table_path)
    assert _rows(df.collect()) == before
    cat.alter_table("db.t", [impl.SchemaChange.rename_column("v", "w")])
    # no snapshot since the rename: the latest snapshot's own schema has the DataFrame's names
    assert df.columns == ["dt", "id", "v"] and _rows(df.collect()) == before
    cat.get_table("db.t").write_arrow(pa.table({"dt": ["a"], "id": pa.array([1], pa.int64()),
                                                "w": pa.array([5], pa.int64())}))
    with pytest.raises(Exception, match="PlanPinError.*columns changed"):
        df.collect()


def test_read_table_filters_are_sparks_and_prune(spark, warehouse, table_path):
    from pyspark.sql import functions as F

    cat = impl.Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    for dt in ("a", "b", "c", "a\\b"):
        t.write_arrow(_batch(0, 10, dt=dt))
        t.write_arrow(_batch(10, 20, dt=dt))
    files = {dt: 2 for dt in ("a", "b", "c", "a\\b")}
    # Spark's string literal 'a\\b' is the two characters a\b: its partition must not be pruned away
    got = impl.spark.read_table(spark, table_path, filter="dt = 'a\\\\b' and id > 14")
    assert _rows(got.collect()) == _truth(cat, lambda r: r["dt"] == "a\\b" and r["id"] > 14)
    # a Column prunes as the same SQL does: only the partition's files are opened
    by_column = impl.spark.read_table(spark, table_path, filter=(F.col("dt") == "b") & (F.col("id") < 3))
    assert _rows(by_column.collect()) == _truth(cat, lambda r: r["dt"] == "b" and r["id"] < 3)
    # partition dt=b, and of its two files only the one whose ids reach below 3
    assert len(by_column.inputFiles()) == files["b"] - 1
    assert all(os.sep + "dt=b" + os.sep in f for f in by_column.inputFiles())
    ored = impl.spark.read_table(spark, table_path, filter="dt IN ('a', 'c') OR (dt = 'b' AND id < 0)")
    assert len(ored.inputFiles()) == files["a"] + files["c"]  # b: no file has an id < 0
    assert _rows(ored.collect()) == _truth(cat, lambda r: r["dt"] in ("a", "c"))
    # file statistics: id >= 10 keeps the second file of each partition
    stats = impl.spark.read_table(spark, table_path, filter=F.expr("id >= 10 AND dt = 'c'"))
    assert len(stats.inputFiles()) == 1
    assert _rows(stats.collect()) == _truth(cat, lambda r: r["id"] >= 10 and r["dt"] == "c")

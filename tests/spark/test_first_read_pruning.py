"""The README's first Spark read (``impl.spark.read_table``, a view over it) prunes partitions for
the filters a query applies LATER, in every query shape (issue 46 items 1 and 5).

Each answer is checked against impl's own read of the table outside Spark, and the files the
query reads are counted from its optimized plan: the Parquet relations' input files plus the
files the ``paimon_py`` relations are restricted to (:func:`impl.spark.fast_read.scanned_files`).
Three tables, each partitioned by ``dt`` with awkward partition values (backslash, quote, ``=``,
space, non-ASCII, the empty string that Paimon stores under ``partition.default-name``): an
append table, a primary-key table whose partition ``a`` needs a merge (the others are one sorted run, read
natively) and a deletion-vector table.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import pyarrow as pa  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.spark.fast_read import scanned_files  # noqa: E402

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
# '' is written under dt=__DEFAULT_PARTITION__
PARTS = ("a", "b", "x\\y", "q'r=s t", "é", "")
KINDS = {
    "append": dict(partition_keys=["dt"]),
    "pk": dict(primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"}),
    "dv": dict(primary_keys=["dt", "id"], partition_keys=["dt"],
               options={"bucket": "2", "deletion-vectors.enabled": "true"}),
}


def _batch(lo: int, hi: int, parts=PARTS, offset: int = 0) -> pa.Table:
    rows = [(dt, i, i + offset) for dt in parts for i in range(lo, hi)]
    return pa.table({"dt": [r[0] for r in rows], "id": pa.array([r[1] for r in rows], pa.int64()),
                     "v": pa.array([r[2] for r in rows], pa.int64())}, schema=SCHEMA)


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """kind -> table path, each at the snapshot the tests read (module-scoped: built once)."""
    warehouse = str(tmp_path_factory.mktemp("first_read") / "wh")
    cat = impl.Catalog(warehouse)
    cat.create_database("db")
    out = {}
    for kind, spec in KINDS.items():
        t = cat.create_table(f"db.{kind}", schema=SCHEMA, **spec)
        t.write_arrow(_batch(0, 8))
        t.write_arrow(_batch(4, 12, offset=100))
        if kind != "append":
            t.compact(full=True)  # every bucket one sorted run: read natively
            t.write_arrow(_batch(2, 5, parts=("a",), offset=200))  # partition a's buckets now need a merge
        if kind == "dv":
            t.compact()  # the new rows' old versions are deleted by vectors
        out[kind] = cat.table_path(f"db.{kind}")
    return out


def _truth(path: str, keep=None, **options) -> list[tuple]:
    t = impl.Catalog(os.path.dirname(os.path.dirname(path))).get_table("db." + os.path.basename(path))
    t = t.copy(options) if options else t
    return sorted(tuple(r.values()) for r in t.to_arrow().to_pylist() if keep is None or keep(r))


def _rows(rows) -> list[tuple]:
    return sorted(tuple(r) for r in rows)


def _files_of(path: str, parts) -> set[str]:
    """Names of the data files of ``parts`` in the latest snapshot, as impl plans them."""
    t = impl.Catalog(os.path.dirname(os.path.dirname(path))).get_table("db." + os.path.basename(path))
    return {f.file_name for s in t.new_read_builder().new_scan().plan().splits()
            for f in s.files if t.core.partition_cache.values(s.partition)[0] in parts}


def _check(df, path: str, keep, parts) -> None:
    assert _rows(df.collect()) == _truth(path, keep)
    assert scanned_files(df) == _files_of(path, parts)


@pytest.mark.parametrize("kind", list(KINDS))
def test_query_shapes_prune_partitions(spark, tables, kind):
    from pyspark.sql import functions as F

    path = tables[kind]
    df = impl.spark.read_table(spark, path)
    everything = set(PARTS)
    # the whole table: every file once, the primary-key partition a through paimon_py
    _check(df, path, None, everything)
    if kind == "pk":
        # partition a's buckets are merged by paimon_py, the other partitions read natively
        assert scanned_files(df, native=False) == _files_of(path, {"a"})
    # .where on the partition column, on a data column, both; a Column filter
    _check(df.where("dt = 'b'"), path, lambda r: r["dt"] == "b", {"b"})
    _check(df.where("id > 9"), path, lambda r: r["id"] > 9, everything)
    _check(df.where((F.col("dt") == "é") & (F.col("id") < 3)), path,
           lambda r: r["dt"] == "é" and r["id"] < 3, {"é"})
    # awkward partition values (Spark's literal 'x\\y' is x\y): each prunes to its own files, and
    # their rows are right
    spelt = {v: "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'" for v in PARTS[2:]}
    for value, sql in spelt.items():
        assert scanned_files(df.where(f"dt = {sql}")) == _files_of(path, {value})
    _check(df.where(f"dt IN ({', '.join(spelt.values())})"), path, lambda r: r["dt"] in spelt, set(spelt))
    # IN-list, range on the partition column
    _check(df.where("dt IN ('a', 'q\\'r=s t')"), path, lambda r: r["dt"] in ("a", "q'r=s t"), {"a", "q'r=s t"})
    _check(df.where("dt > 'b'"), path, lambda r: r["dt"] > "b", {p for p in PARTS if p > "b"})
    # SQL over a temp view; a self-join with different filters on each side; a union of two uses
    view = f"first_read_{kind}"
    df.createOrReplaceTempView(view)
    _check(spark.sql(f"SELECT * FROM {view} WHERE dt = 'a' AND v >= 0"), path, lambda r: r["dt"] == "a", {"a"})
    joined = spark.sql(f"SELECT l.id, l.v, r.v AS rv FROM {view} l JOIN {view} r ON l.id = r.id "
                       f"WHERE l.dt = 'a' AND r.dt = ''")
    left, right = _truth(path, lambda r: r["dt"] == "a"), _truth(path, lambda r: r["dt"] == "")
    want = sorted((lid, lv, rv) for _, lid, lv in left for _, rid, rv in right if lid == rid)
    assert _rows(joined.collect()) == want
    assert scanned_files(joined) == _files_of(path, {"a", ""})
    unioned = df.where("dt = 'a'").union(df.where("dt = 'b' AND id < 6"))
    _check(unioned, path, lambda r: r["dt"] == "a" or (r["dt"] == "b" and r["id"] < 6), {"a", "b"})
    # a subquery's filter is known only when it runs: no branch is removed, the rows are right
    sub = spark.sql(f"SELECT * FROM {view} WHERE dt IN (SELECT dt FROM {view} WHERE dt = 'b' AND id = 1)")
    assert _rows(sub.collect()) == _truth(path, lambda r: r["dt"] == "b")
    # a scalar subquery in the select list leaves the outer filter static
    scalar = spark.sql(f"SELECT dt, id, (SELECT max(v) FROM {view} WHERE dt = 'é') AS m FROM {view} WHERE dt = 'b'")
    top = max(r[2] for r in _truth(path, lambda r: r["dt"] == "é"))
    assert _rows(scalar.collect()) == sorted((dt, i, top) for dt, i, _ in _truth(path, lambda r: r["dt"] == "b"))
    assert scanned_files(scalar) == _files_of(path, {"b", "é"})


@pytest.mark.parametrize("kind", ["append", "pk"])
def test_rdd_actions_and_commits_between_actions(spark, tables, tmp_path, kind):
    """Several jobs of one RDD action, and a commit between two actions on one DataFrame: every
    job and action reads the snapshot planned at the call."""
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, **KINDS[kind])
    parts = ("a", "b", "")
    t.write_arrow(_batch(0, 6, parts=parts))
    t.write_arrow(_batch(3, 9, parts=parts, offset=100))
    path = cat.table_path("db.t")
    df = impl.spark.read_table(spark, path).where("dt <> 'b'")
    want = _truth(path, lambda r: r["dt"] != "b")
    before = scanned_files(df)
    zipped = df.rdd.zipWithIndex()  # the counting job runs now
    t.write_arrow(_batch(0, 20, parts=parts, offset=500))  # a commit between the two jobs
    numbered = zipped.collect()
    assert sorted(i for _, i in numbered) == list(range(len(want)))
    assert _rows(r for r, _ in numbered) == want
    # another action on the same DataFrame after the commit: the same snapshot, the same files
    assert _rows(df.collect()) == want
    assert _rows(df.rdd.take(len(want) + 5)) == want
    assert scanned_files(df) == before
    # a new read_table sees the commit
    assert _rows(impl.spark.read_table(spark, path).where("dt <> 'b'").collect()) == \
        _truth(path, lambda r: r["dt"] != "b")


def test_many_partitions_fall_back_to_one_branch(spark, tmp_path):
    """Above ``max_branches`` partitions the read is one branch: the same rows, no pruning by
    partition (documented), the filter= argument still prunes."""
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    parts = tuple(f"p{i}" for i in range(6))
    t.write_arrow(_batch(0, 3, parts=parts))
    path = cat.table_path("db.t")
    few = impl.spark.read_table(spark, path, max_branches=5).where("dt = 'p1'")
    assert _rows(few.collect()) == _truth(path, lambda r: r["dt"] == "p1")
    assert scanned_files(few) == _files_of(path, set(parts))
    enough = impl.spark.read_table(spark, path, max_branches=6).where("dt = 'p1'")
    assert scanned_files(enough) == _files_of(path, {"p1"})
    pruned = impl.spark.read_table(spark, path, max_branches=5, filter="dt = 'p1'")
    assert scanned_files(pruned) == _files_of(path, {"p1"})


def test_typed_partition_literals(spark, tmp_path):
    """INT, DATE and DECIMAL partition values become literals of their exact Spark types."""
    import datetime
    import decimal

    schema = pa.schema([("n", pa.int32()), ("d", pa.date32()), ("m", pa.decimal128(7, 2)), ("v", pa.int64())])
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=schema, partition_keys=["n", "d", "m"])
    days = [datetime.date(2024, 1, 1), datetime.date(1969, 12, 31)]
    money = [decimal.Decimal("-1.50"), decimal.Decimal("12345.67")]
    t.write_arrow(pa.table({"n": pa.array([-1, 7, 7, 2], pa.int32()), "d": pa.array(days * 2, pa.date32()),
                            "m": pa.array(money * 2, pa.decimal128(7, 2)), "v": pa.array([1, 2, 3, 4], pa.int64())}))
    path = cat.table_path("db.t")
    df = impl.spark.read_table(spark, path)
    assert df.schema == impl.spark.read_table(spark, path).schema
    assert [f.dataType.simpleString() for f in df.schema.fields] == ["int", "date", "decimal(7,2)", "bigint"]
    q = df.where("n = 7 AND d = DATE'1969-12-31' AND m = 12345.67")
    assert [tuple(r) for r in q.collect()] == [(7, days[1], money[1], 2)]
    assert len(scanned_files(q)) == 1
    assert _rows(df.collect()) == sorted(tuple(r.values()) for r in t.to_arrow().to_pylist())

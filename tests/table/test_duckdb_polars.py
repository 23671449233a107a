"""DuckDB and Polars with pushdown (issue 29 item 2): a filtered, projected query reads only the
partitions and files it needs, and answers exactly what the same query over the whole table
read first answers: append, partitioned, primary-key-with-updates and schema-evolved tables,
filters that translate, that translate in part, and that do not."""

from __future__ import annotations

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from table_helpers import data_files, write

import impl
from impl.duckdb import TableDataset, expression_tree, to_predicate
from impl.errors import UnsupportedTableFeatureError
from impl.polars import PolarsSource
from impl.predicate.predicate import LeafPredicate
from impl.schema import SchemaChange as SC

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("f", pa.float64())])


def rows(dt: str, ids: list[int], tag: str) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()),
                     "v": [None if i % 5 == 4 else f"{tag}{i}" for i in ids],
                     "f": [float("nan") if i % 7 == 3 else i / 2 for i in ids]}, schema=SCHEMA)


@pytest.fixture(scope="module")
def cat(tmp_path_factory):
    c = impl.Catalog(str(tmp_path_factory.mktemp("wh")))
    c.create_database("db")
    return c


@pytest.fixture(scope="module")
def append(cat):
    """3 partitions x 3 files; ids are disjoint per file, so statistics rule files out."""
    t = cat.create_table("db.app", schema=SCHEMA, partition_keys=["dt"])
    for p in range(3):
        for k in range(3):
            write(t, rows(f"p{p}", list(range(p * 100 + k * 10, p * 100 + k * 10 + 6)), "a"))
    return t


@pytest.fixture(scope="module")
def unpartitioned(cat):
    t = cat.create_table("db.flat", schema=SCHEMA)
    for k in range(3):
        write(t, rows("x", list(range(k * 10, k * 10 + 6)), "u"))
    return t


@pytest.fixture(scope="module")
def pk(cat):
    t = cat.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "2"})
    write(t, rows("p0", [1, 2, 3, 4, 5, 6], "old"))
    write(t, rows("p1", [1, 2, 3], "old"))
    write(t, rows("p0", [2, 3], "new"))                                      # updates
    write(t, rows("p0", [5], "x"), row_kinds=pa.array([3], pa.int8()))       # a delete
    return t


@pytest.fixture(scope="module")
def partial(cat):
    """partial-update: a row's columns come from different files, so no single file decides a
    value filter."""
    t = cat.create_table("db.partial", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "1", "merge-engine": "partial-update"})
    write(t, rows("p0", [1, 2, 3, 11], "old"))
    write(t, pa.table({"dt": ["p0", "p0"], "id": [2, 3], "v": [None, "new3"], "f": [9.0, None]}, schema=SCHEMA))
    return t


@pytest.fixture(scope="module")
def evolved(cat):
    t = cat.create_table("db.evo", schema=SCHEMA, partition_keys=["dt"])
    write(t, rows("p0", [1, 2, 3], "e"))
    cat.alter_table("db.evo", [SC.rename_column("v", "w"), SC.add_column("n", pa.int32())])
    t = cat.get_table("db.evo")
    write(t, pa.table({"dt": ["p0", "p1"], "id": [7, 8], "w": ["e7", "e8"], "f": [1.0, 2.0],
                       "n": pa.array([70, 80], pa.int32())}, schema=t.arrow_schema))
    return t


QUERIES = [  # (SQL filter, Polars filter): translatable, partly, not at all
    ("dt = 'p1' and id = 111", (pl.col("dt") == "p1") & (pl.col("id") == 111)),
    ("id >= 2 and id < 13", (pl.col("id") >= 2) & (pl.col("id") < 13)),
    ("id in (1, 3, 200, 211)", pl.col("id").is_in([1, 3, 200, 211])),
    ("v is null", pl.col("v").is_null()),
    ("v is not null and dt <> 'p0'", pl.col("v").is_not_null() & (pl.col("dt") != "p0")),
    ("v = 'old2' or v = 'new3'", (pl.col("v") == "old2") | (pl.col("v") == "new3")),
    ("dt = 'p2' and lower(v) like '%1%'", (pl.col("dt") == "p2") & pl.col("v").str.to_lowercase().str.contains("1")),
    ("id = 3 or v like 'a2%'", (pl.col("id") == 3) | pl.col("v").str.starts_with("a2")),
    ("f > 1 and id < 20", (pl.col("f") > 1) & (pl.col("id") < 20)),
    ("not (id = 1)", ~(pl.col("id") == 1)),
    ("11 > id", pl.lit(11) > pl.col("id")),
]


def sql_rows(con, sql: str) -> list:
    return sorted(con.sql(sql).fetchall(), key=repr)


@pytest.mark.parametrize("which", ["append", "unpartitioned", "pk", "partial"])
def test_answers_equal_the_unpushed_query(request, which):
    t = request.getfixturevalue(which)
    whole = pa.table(t)                          # every row read first: the reference
    ref = duckdb.connect()
    ref.register("t", whole)
    con = t.to_duckdb(duckdb.connect(), "t")
    lf, df = t.to_polars(), pl.DataFrame(whole)
    for sql, expr in QUERIES:
        query = f"select id, v from t where {sql}"
        assert sql_rows(con, query) == sql_rows(ref, query), query
        got = lf.filter(expr).select("id", "v").collect()
        want = df.filter(expr).select("id", "v")
        assert sorted(got.rows(), key=repr) == sorted(want.rows(), key=repr), sql
    assert sql_rows(con, "select count(*), count(v), sum(id) from t") == sql_rows(ref, "select count(*), count(v), sum(id) from t")


def test_duckdb_reads_only_the_files_it_needs(append):
    d = TableDataset(append)
    con = duckdb.connect()
    con.register("t", d)
    assert con.sql("select v from t where dt = 'p1' and id = 111").fetchall() == [("a111",)]
    scan = d.scans[-1]
    assert scan.predicate is not None and scan.predicate.fields() == {"dt", "id"}
    assert scan.files_planned == 1 and scan.files_read == 1      # of 9: one partition, one file by stats
    assert set(scan.columns) == {"v", "dt", "id"}                # f is never read
    assert con.sql("select count(*) from t").fetchall() == [(54,)]
    assert d.scans[-1].files_read == 9 and d.scans[-1].predicate is None
    # an OR with a branch DuckDB cannot push stays in DuckDB: nothing pushed, every file read
    con.sql("select id from t where id = 111 or lower(v) = 'a1'").fetchall()
    assert d.scans[-1].predicate is None and d.scans[-1].files_read == 9


def test_polars_reads_only_the_files_it_needs(append):
    src = PolarsSource(append)
    lf = src.lazy()
    got = lf.filter((pl.col("dt") == "p1") & (pl.col("id") == 111) & pl.col("v").str.contains("1")).select("v")
    assert got.collect()["v"].to_list() == ["a111"]
    scan = src.scans[-1]
    assert scan.predicate is not None and scan.predicate.fields() == {"dt", "id"}   # contains(): Polars'
    assert scan.files_planned == 1 and scan.files_read == 1
    assert "f" not in scan.columns
    # an OR with an untranslatable branch is not pushed at all
    lf.filter((pl.col("id") == 111) | pl.col("v").str.contains("a1")).collect()
    assert src.scans[-1].predicate is None and src.scans[-1].files_read == 9
    # a row limit without a filter stops the read early
    assert lf.head(2).collect().height == 2
    assert src.scans[-1].files_read < 9
    assert lf.filter(pl.col("dt") == "p2").head(4).collect()["dt"].to_list() == ["p2"] * 4


def test_primary_key_value_filter_sees_merged_rows(pk):
    """v = 'old2' matched key 2 before its update: pushed into file pruning it would return the
    stale row; the read builder filters merged rows, so neither engine returns it."""
    for sql, expr in (("dt = 'p0' and v = 'old2'", (pl.col("dt") == "p0") & (pl.col("v") == "old2")),
                      ("dt = 'p0' and v = 'old5'", (pl.col("dt") == "p0") & (pl.col("v") == "old5"))):
        d = TableDataset(pk)
        con = duckdb.connect()
        con.register("pk", d)
        assert con.sql(f"select * from pk where {sql}").fetchall() == []
        assert d.scans[-1].predicate is not None and "v" in d.scans[-1].predicate.fields()   # pushed, yet exact
        src = PolarsSource(pk)
        assert src.lazy().filter(expr).collect().height == 0
        assert src.scans[-1].predicate is not None and "v" in src.scans[-1].predicate.fields()
    assert pk.to_duckdb().sql("select id, v from pk where v = 'new2'").fetchall() == [(2, "new2")]
    assert pk.to_duckdb().sql("select id, v from pk where dt = 'p1' and v = 'old2'").fetchall() == [(2, "old2")]
    assert pk.to_polars().filter(pl.col("dt") == "p0").select("id").collect()["id"].sort().to_list() == [1, 2, 3, 4, 6]


def test_schema_evolved_table_reads_the_current_schema(evolved):
    con = evolved.to_duckdb()
    assert [c[0] for c in con.sql("select * from evo").description] == ["dt", "id", "w", "f", "n"]
    assert sql_rows(con, "select id, w, n from evo where n is null") == [(1, "e1", None), (2, "e2", None), (3, "e3", None)]
    assert sql_rows(con, "select id from evo where w = 'e2' or n = 80") == [(2,), (8,)]
    lf = evolved.to_polars()
    assert lf.filter(pl.col("n") > 70).select("id", "w").collect().rows() == [(8, "e8")]
    assert sorted(lf.filter(pl.col("w").is_in(["e1", "e7"])).collect()["id"].to_list()) == [1, 7]
    ref = duckdb.connect()
    ref.register("evo", pa.table(evolved))
    for sql in ("dt = 'p0' and w >= 'e2'", "n < 75 or id = 2", "w like '%7' and n is not null", "id in (1, 8)"):
        query = f"select dt, id, w, n from evo where {sql}"
        assert sql_rows(con, query) == sql_rows(ref, query), sql


def test_expression_translation_rules(append):
    def pushed(expr):
        return to_predicate(append, expression_tree(expr))

    import pyarrow.compute as pc
    f = pc.field
    assert pushed((f("dt") == "p1") & pc.starts_with(f("v"), "a")) == LeafPredicate("equal", "dt", ("p1",))
    assert pushed((f("dt") == "p1") | pc.starts_with(f("v"), "a")) is None          # OR of mixed
    assert pushed(f("f") > 1.0) is None                                              # NaN orders differently
    assert pushed(f("id") > 2.5) is None                                             # not an exact literal
    assert pushed(pa.scalar(3) < f("id")) == LeafPredicate("greater_than", "id", (3,))
    assert pushed(f("id").isin([1, None])) is None                                   # null matching differs
    assert impl.polars.to_predicate(append, pl.col("id").cast(pl.Float64) > 1) is None   # a cast column
    between = impl.polars.to_predicate(append, pl.col("id").is_between(2, 7, closed="left"))
    assert between is not None and {(c.method, c.literals) for c in between.children} == {
        ("greater_or_equal", (2,)), ("less_than", (7,))}


def test_bad_input_names_what_was_wrong(append, cat, tmp_path):
    con = append.to_duckdb()
    with pytest.raises(duckdb.BinderException, match="nope"):
        con.sql("select nope from app").fetchall()
    with pytest.raises(pl.exceptions.ColumnNotFoundError, match="nope"):
        append.to_polars().filter(pl.col("nope") == 1).collect()
    missing = str(tmp_path / "wh" / "db.db" / "missing")
    with pytest.raises(impl.TableNotExistError, match="missing"):
        impl.polars.scan_table(missing)
    with pytest.raises(impl.TableNotExistError, match="missing"):
        impl.duckdb.register(duckdb.connect(), "m", missing)
    # a path holding a table opens it
    assert impl.polars.scan_table(append.path).select(pl.len()).collect().item() == 54
    # an error of the read itself: DuckDB wraps it, naming impl's error; Polars raises it
    broken = cat.create_table("db.broken", schema=SCHEMA)
    write(broken, rows("x", [1, 2], "b"))
    for path in data_files(broken):
        broken.file_io.delete(path)
    with pytest.raises(duckdb.InvalidInputException, match="DataFileError.*missing"):
        broken.to_duckdb().sql("select * from broken").fetchall()
    with pytest.raises(impl.errors.DataFileError, match="missing"):
        broken.to_polars().collect()
    d = TableDataset(append)
    import pyarrow.compute as pc
    with pytest.raises(impl.InvalidPredicateError, match="'nope' is not a column"):
        d.to_table(filter=pc.field("nope") == 1)
    with pytest.raises(impl.InvalidPredicateError, match="'nope' is not a column"):
        d.scanner(["id", "nope"])
    with pytest.raises(UnsupportedTableFeatureError, match="join"):
        d.join(d, keys="id")


def test_dataset_scanner_applies_the_whole_filter(append):
    """DuckDB does not filter again what it pushed into a dataset: the scanner must apply all of
    it, the parts impl could not push included."""
    import pyarrow.compute as pc
    d = TableDataset(append)
    whole = pa.table(append)
    for expr in (pc.starts_with(pc.field("v"), "a1"), (pc.field("dt") == "p0") & (pc.field("f") > 1.0),
                 (pc.field("id") < 3) | pc.field("v").is_null(), pc.field("f").is_null(nan_is_null=True)):
        got = d.scanner(columns=["id"], filter=expr).to_table()
        assert got.column_names == ["id"]
        assert sorted(got.column("id").to_pylist()) == sorted(whole.filter(expr).column("id").to_pylist()), str(expr)
    assert d.count_rows(filter=pc.field("dt") == "p1") == 18 and d.scans[-1].files_read == 3
    assert d.head(2, columns=["v"]).num_rows == 2


def test_system_tables_and_time_travel(append, cat):
    con = impl.duckdb.register(duckdb.connect(), "s", cat.get_table("db.app$snapshots"))
    assert con.sql("select snapshot_id from s where snapshot_id = 2").fetchall() == [(2,)]
    lf = impl.polars.scan_table(append.path + "$snapshots")
    assert lf.filter(pl.col("snapshot_id") > 7).select("snapshot_id").collect()["snapshot_id"].to_list() == [8, 9]
    # options reach the table: the first snapshot holds one file of partition p0
    first = impl.polars.scan_table(append, options={"scan.snapshot-id": "1"})
    assert first.select(pl.len()).collect().item() == 6


def test_primary_key_key_filter_prunes_buckets_and_files(pk):
    d = TableDataset(pk)
    con = duckdb.connect()
    con.register("pk", d)
    assert con.sql("select v from pk where dt = 'p0' and id = 2").fetchall() == [("new2",)]
    total = sum(len(s.files) for s in pk.new_read_builder().new_scan().plan().splits())
    assert d.scans[-1].files_read < total      # one partition, one bucket of it


def test_column_types_compare_alike(cat):
    """Dates, booleans, small integers (a literal out of the column's range), timestamps and
    decimals (left to the engine): pushed or not, the answers are those of the rows read first."""
    import datetime as dt
    from decimal import Decimal
    schema = pa.schema([("d", pa.date32()), ("b", pa.bool_()), ("s", pa.int8()), ("ts", pa.timestamp("ms")),
                        ("dec", pa.decimal128(10, 2))])
    t = cat.create_table("db.types", schema=schema, partition_keys=["d"])
    for day in (1, 2, 3):
        write(t, pa.table({"d": [dt.date(2024, 1, day)] * 3, "b": [True, False, None], "s": pa.array([day, -day, None], pa.int8()),
                           "ts": [dt.datetime(2024, 1, day, 12, 0, 0, 5000), None, dt.datetime(2024, 1, day)],
                           "dec": [Decimal("1.25"), Decimal(day), None]}, schema=schema))
    whole = pa.table(t)
    ref, con = duckdb.connect(), t.to_duckdb()
    ref.register("types", whole)
    for sql in ("d = DATE '2024-01-02'", "d >= DATE '2024-01-02' and b", "not b", "s = 300", "s < -1 or s is null",
                "ts > TIMESTAMP '2024-01-02 12:00:00.004'", "ts = TIMESTAMP '2024-01-01 12:00:00.005'",
                "dec = 1.25", "dec > 1.5 and d in (DATE '2024-01-01', DATE '2024-01-03')"):
        query = f"select d, b, s, ts, dec from types where {sql}"
        assert sql_rows(con, query) == sql_rows(ref, query), sql
    lf, df = t.to_polars(), pl.DataFrame(whole)
    for expr in (pl.col("d") == dt.date(2024, 1, 2), (pl.col("d") > dt.date(2024, 1, 1)) & pl.col("b"),
                 pl.col("b") == False, pl.col("s") == 300, pl.col("s").is_in([1, -3]),  # noqa: E712
                 pl.col("ts") > dt.datetime(2024, 1, 2, 12, 0, 0, 4000), pl.col("dec") == Decimal("1.25"),
                 pl.col("d").is_in([dt.date(2024, 1, 3)]) | pl.col("s").is_null(), pl.col("b"),
                 pl.col("s").is_between(-2, 2, closed="right"), pl.col("b").not_()):
        assert sorted(lf.filter(expr).collect().rows(), key=repr) == sorted(df.filter(expr).rows(), key=repr), str(expr)

"""Predicates of any size are built, translated and evaluated with bounded recursion (issue 44,
item 5): a long AND / OR chain is one flat node and reaches pyarrow as a shallow tree (a
10,000-term OR used to kill the interpreter with SIGSEGV), nesting beyond
``MAX_PREDICATE_DEPTH`` and literals outside a type's range are ``InvalidPredicateError``.

What could crash the interpreter runs in a subprocess, so a SIGSEGV fails the test instead of
killing pytest.
"""

from __future__ import annotations

import decimal
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import impl
from impl.errors import InvalidPredicateError
from impl.predicate.predicate import (
    MAX_PREDICATE_DEPTH,
    CompoundPredicate,
    LeafPredicate,
    PredicateBuilder,
    predicate_from_json,
    predicate_to_json,
)

ROOT = Path(__file__).resolve().parents[2]
TERMS = 10_000


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          env=env, timeout=300, cwd=ROOT)


def test_a_10000_term_or_reads_exactly_the_matching_rows(tmp_path):
    """The crash repro of issue 44: ``or_`` over 10,000 terms, pushed into a read (the Parquet
    scan and the row filter); the same chain built one ``or_`` at a time is the same flat node."""
    proc = run_python(f"""
        import json, sys
        import pyarrow as pa
        import impl
        cat = impl.Catalog(sys.argv[1]); cat.create_database("db")
        t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]))
        t.write_arrow(pa.table({{"id": pa.array(range(200), pa.int64()), "v": [str(i) for i in range(200)]}}))
        rb = t.new_read_builder(); pb = rb.new_predicate_builder()
        at_once = pb.or_(*[pb.equal("id", i * 7) for i in range({TERMS})])
        one_by_one = pb.equal("id", 0)
        for i in range(1, {TERMS}):
            one_by_one = pb.or_(one_by_one, pb.equal("id", i * 7))
        r = rb.with_filter(at_once)
        got = r.new_read().to_arrow(r.new_scan().plan().splits())
        out = {{"rows": sorted(got.column("id").to_pylist()), "depth": one_by_one.depth,
                "equal": at_once == one_by_one}}
        print(json.dumps(out))
    """, str(tmp_path / "wh"))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    out = json.loads(proc.stdout)
    want = [i for i in range(200) if i % 7 == 0]
    assert out["rows"] == want
    assert out["depth"] == 2 and out["equal"]


@pytest.fixture
def pb(tmp_path) -> PredicateBuilder:
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("f", pa.float32()), ("d", pa.float64()),
                                            ("m", pa.decimal128(10, 2))]))
    return t.new_read_builder().new_predicate_builder()


def alternating(pb: PredicateBuilder, levels: int):
    """``levels`` - 1 alternating ANDs / ORs around a leaf: a tree ``levels`` deep."""
    p = pb.equal("id", 1)
    for i in range(levels - 1):
        p = (pb.or_ if i % 2 == 0 else pb.and_)(p, pb.equal("id", 100 + i))
    return p


def test_nesting_is_bounded(pb):
    assert alternating(pb, MAX_PREDICATE_DEPTH).depth == MAX_PREDICATE_DEPTH
    with pytest.raises(InvalidPredicateError, match=f"at most {MAX_PREDICATE_DEPTH}"):
        alternating(pb, MAX_PREDICATE_DEPTH + 1)
    with pytest.raises(InvalidPredicateError):  # built without the builder, the same rule
        deep = alternating(pb, MAX_PREDICATE_DEPTH)
        CompoundPredicate("and" if deep.op == "or" else "or", (deep, LeafPredicate("equal", "id", (2,))))


def test_same_operator_children_are_spliced(pb):
    a, b, c = (pb.equal("id", i) for i in range(3))
    assert pb.or_(pb.or_(a, b), c) == CompoundPredicate("or", (a, b, c))
    assert pb.or_(pb.or_(a, b), c).children == (a, b, c)
    assert pb.and_(pb.or_(a, b), c).children == (CompoundPredicate("or", (a, b)), c)


def test_the_deepest_accepted_tree_evaluates(pb):
    """MAX_PREDICATE_DEPTH alternating levels, each with many siblings, through pyarrow's filter."""
    p = pb.equal("id", 5)
    for lvl in range(MAX_PREDICATE_DEPTH - 1):
        if lvl % 2 == 0:
            p = pb.or_(p, *[pb.equal("id", 1000 + j) for j in range(20)])
        else:
            p = pb.and_(p, *[pb.greater_or_equal("id", -j) for j in range(20)])
    t = pa.table({"id": pa.array(range(10), pa.int64())})
    assert t.filter(p.to_arrow()).column("id").to_pylist() == [5]


def test_deep_json_is_refused_not_a_recursion_error():
    leaf = {"leaf": "equal", "field": "id", "literals": [1]}
    shallow = {"op": "or", "children": [leaf]}
    for _ in range(MAX_PREDICATE_DEPTH + 1):
        shallow = {"op": "or", "children": [shallow]}
    with pytest.raises(InvalidPredicateError, match="nested"):
        predicate_from_json(json.dumps(shallow))
    text = '{"op": "or", "children": [' * 100_000 + json.dumps(leaf) + "]}" * 100_000
    with pytest.raises(InvalidPredicateError):
        predicate_from_json(text)


def test_a_wide_or_round_trips_as_json_and_tests_stats(pb):
    p = pb.or_(*[pb.equal("id", i) for i in range(TERMS)])
    assert predicate_from_json(predicate_to_json(p)) == p
    assert p.test_stats(lambda _: None)


@pytest.mark.parametrize("column,literal", [
    ("id", 10 ** 5000),                                 # a 5,000-digit integer for BIGINT
    ("id", 2 ** 63),
    ("f", 1e300),                                        # FLOAT: pyarrow made it inf
    ("m", decimal.Decimal("1" * 5000)),                  # a huge decimal for DECIMAL(10, 2)
    ("m", decimal.Decimal("1e999999999")),
], ids=["5000-digit-bigint", "2**63-bigint", "1e300-float", "5000-digit-decimal", "1e999999999-decimal"])
def test_literals_outside_the_type_are_refused(pb, column, literal):
    with pytest.raises(InvalidPredicateError, match="does not fit|out of the column type's range"):
        pb.equal(column, literal)


def test_infinities_and_nan_stay_literals(pb):
    assert pb.equal("f", float("inf")).literals == (float("inf"),)
    assert pb.greater_than("d", 1e300).literals == (1e300,)


def test_a_wide_or_prunes_by_file_statistics(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": pa.array(range(10), pa.int64())}))
    t.write_arrow(pa.table({"id": pa.array(range(100, 110), pa.int64())}))
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()
    rb = rb.with_filter(pb.or_(*[pb.equal("id", 1000 + i) for i in range(2000)], pb.equal("id", 3)))
    splits = rb.new_scan().plan().splits()
    assert sum(len(s.files) for s in splits) == 1
    assert rb.new_read().to_arrow(splits).column("id").to_pylist() == [3]


@pytest.fixture
def small_table(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": pa.array(range(200), pa.int64())}))
    return t


CHAIN = 400  # deeper than the translations' recursion allowed before (RecursionError at about 330)


def test_duckdb_pushes_a_long_or_chain_as_one_node(small_table):
    pytest.importorskip("duckdb")
    import duckdb

    from impl.duckdb.dataset import TableDataset

    con = duckdb.connect()
    dataset = TableDataset(small_table)
    con.register("t", dataset)
    where = " OR ".join(f"id = {i * 7}" for i in range(CHAIN))
    rows = con.sql(f"SELECT id FROM t WHERE {where} ORDER BY id").fetchall()
    assert [r[0] for r in rows] == list(range(0, 200, 7))
    (scan,) = dataset.scans
    assert isinstance(scan.predicate, CompoundPredicate) and len(scan.predicate.children) == CHAIN


def test_polars_pushes_a_long_or_chain_as_one_node(small_table):
    pl = pytest.importorskip("polars")
    from impl.polars.source import PolarsSource

    source = PolarsSource(small_table)
    expr = pl.col("id") == 0
    for i in range(1, CHAIN):
        expr = expr | (pl.col("id") == i * 7)
    got = source.lazy().filter(expr).collect()["id"].to_list()
    assert sorted(got) == list(range(0, 200, 7))
    (scan,) = source.scans
    assert isinstance(scan.predicate, CompoundPredicate) and len(scan.predicate.children) == CHAIN

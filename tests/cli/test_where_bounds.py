"""``paimon-py read --where`` with hostile filters (issue 44, item 5): deep parentheses and
out-of-range numbers are user errors (exit 1, naming the problem), never internal errors
(exit 3) or a crash; a 10,000-term OR chain reads the right rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import impl
from impl.cli import EXIT_OK, EXIT_USER_ERROR, main
from impl.predicate.predicate import MAX_PREDICATE_DEPTH
from impl.predicate.where import MAX_NUMBER_CHARS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("where-bounds")
    cat = impl.Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("d", pa.float64()), ("m", pa.decimal128(10, 2))]))
    t.write_arrow(pa.table({"id": pa.array(range(50), pa.int64()), "d": [float(i) for i in range(50)],
                            "m": pa.array([None] * 50, pa.decimal128(10, 2))}))
    return wh


def run(capsys, warehouse: Path, where: str) -> tuple[int, str, str]:
    code = main(["--warehouse", str(warehouse), "--json", "read", "db.t", "--columns", "id", "--where", where])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("depth", [MAX_PREDICATE_DEPTH + 1, 10_000])
def test_deep_parentheses_are_a_user_error(capsys, warehouse, depth):
    code, _, err = run(capsys, warehouse, "(" * depth + "id = 1" + ")" * depth)
    assert code == EXIT_USER_ERROR, err
    assert f"parentheses nested more than {MAX_PREDICATE_DEPTH} deep" in err
    assert len(err) < 2000  # the filter is not echoed whole


def test_parentheses_up_to_the_bound_parse(capsys, warehouse):
    depth = MAX_PREDICATE_DEPTH
    code, out, err = run(capsys, warehouse, "(" * depth + "id = 1" + ")" * depth)
    assert code == EXIT_OK, err
    assert json.loads(out)["rows"] == [{"id": 1}]


@pytest.mark.parametrize("where,message", [
    ("id = " + "9" * 5000, "a number literal of 5000 characters"),
    ("d > " + "9" * 5000, "a number literal of 5000 characters"),
    ("m = 1." + "5" * 5000, "a number literal of 5002 characters"),
    ("id = " + "9" * MAX_NUMBER_CHARS, "does not fit the column type"),
    ("d > 1e999", "out of the range of every column type"),
    ("m = 1e999999999", "does not fit the column type"),
])
def test_numbers_outside_every_type_are_user_errors(capsys, warehouse, where, message):
    code, _, err = run(capsys, warehouse, where)
    assert code == EXIT_USER_ERROR, err
    assert message in err


def test_a_10000_term_or_chain_reads_the_matching_rows(warehouse):
    """In a subprocess: before, pyarrow crashed the interpreter (SIGSEGV) on this chain."""
    where = " OR ".join(f"id={i * 7}" for i in range(10_000))  # one argument: under 128 KiB
    proc = subprocess.run([sys.executable, "-m", "impl.cli", "--warehouse", str(warehouse), "--json", "read",
                           "db.t", "--columns", "id", "--where", where],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == EXIT_OK, (proc.returncode, proc.stderr[-2000:])
    assert sorted(r["id"] for r in json.loads(proc.stdout)["rows"]) == list(range(0, 50, 7))

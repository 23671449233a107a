"""The demo (paimon-py-demo / python -m impl.demo) writes a table whose rows can be read back."""

from __future__ import annotations

import subprocess
import sys

import pytest
from demo_rows import expected_rows, table_name

import impl
from impl.cli import EXIT_OK
from impl.cli import main as cli_main
from impl.demo import main as demo_main
from impl.demo import run


def test_demo_table_reads_back_with_impl(tmp_path):
    table_path = run(str(tmp_path), 3).path
    table = impl.Catalog(str(tmp_path)).get_table(table_name(table_path))
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == expected_rows(3)
    kinds = [s.commit_kind.value for s in table.snapshots()]
    assert kinds == ["APPEND", "APPEND", "APPEND", "COMPACT"]


def test_demo_command_prints_its_snapshots(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "impl.demo", "--warehouse", str(tmp_path), "--commits", "2"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert "COMPACT" in proc.stdout
    assert f"rows read: {len(expected_rows(2))}" in proc.stdout


def test_demo_refuses_zero_commits(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "impl.demo", "--warehouse", str(tmp_path), "--commits", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--commits must be at least 1" in proc.stderr


def test_demo_table_name_needs_no_sql_quoting_and_the_compaction_identifier_is_explained(tmp_path, capsys):
    """The demo's table is queried as printed (a dash in its name was a DuckDB syntax error), and
    its COMPACT row shows ``batch`` with a legend, not a bare 9223372036854775807."""
    assert demo_main(["--warehouse", str(tmp_path), "--commits", "2"]) == 0
    out = capsys.readouterr().out
    name = out.splitlines()[0].split()[1]
    assert name.startswith("demo.events_") and out.splitlines()[0].endswith(f"/demo.db/{name.split('.')[1]}")
    compact = next(line for line in out.splitlines() if "COMPACT" in line)
    assert compact.split()[2] == "batch" and "9223372036854775807" not in compact
    assert "batch: Paimon's batch commit identifier 9223372036854775807" in out
    pytest.importorskip("duckdb")
    assert cli_main(["--warehouse", str(tmp_path), "--json", "sql", f"select count(*) as n from {name}"]) == EXIT_OK
    assert '"n": 20' in capsys.readouterr().out

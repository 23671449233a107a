"""The demo (paimon-py-demo / python -m impl.demo) writes a table whose rows can be read back."""

from __future__ import annotations

import subprocess
import sys

from demo_rows import expected_rows, table_name

import impl
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

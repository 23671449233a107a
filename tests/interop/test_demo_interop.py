"""pypaimon 2.1.0 reads the table the demo (paimon-py-demo) writes."""

from __future__ import annotations

from demo_rows import expected_rows, table_name
from pypaimon_env import READ_TABLE, run_pypaimon

from impl.demo import run


def test_pypaimon_reads_demo_table(tmp_path, pypaimon):
    table_path = run(str(tmp_path), 3).path
    got = run_pypaimon(READ_TABLE, warehouse=str(tmp_path), table=table_name(table_path), sort_by=["id"])
    assert sorted(({k: r[k] for k in ("dt", "id", "v")} for r in got), key=lambda r: r["id"]) == expected_rows(3)


def test_conformance_finds_the_pypaimon_env_helper_without_the_tests_directory(tmp_path, pypaimon):
    """An installed package has no tests/_support: the pypaimon target's helper is in the package."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import sys\n"
            "assert not any(p.endswith('_support') for p in sys.path)\n"
            "from fault_injection.conformance.targets.pypaimon_target import pypaimon_python\n"
            "print(pypaimon_python())\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert Path(proc.stdout.strip()) == Path(pypaimon)

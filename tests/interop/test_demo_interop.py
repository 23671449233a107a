"""pypaimon 2.1.0 reads the table the demo (paimon-py-demo) writes."""

from __future__ import annotations

from demo_rows import expected_rows, table_name
from pypaimon_env import READ_TABLE, run_pypaimon

from impl.demo import run


def test_pypaimon_reads_demo_table(tmp_path, pypaimon):
    table_path = run(str(tmp_path), 3)
    got = run_pypaimon(READ_TABLE, warehouse=str(tmp_path), table=table_name(table_path), sort_by=["id"])
    assert sorted(({k: r[k] for k in ("dt", "id", "v")} for r in got), key=lambda r: r["id"]) == expected_rows(3)

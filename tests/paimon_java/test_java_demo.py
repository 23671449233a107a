"""Apache Paimon Java reads the table the demo (paimon-py-demo) writes."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from demo_rows import expected_rows, table_name

from impl.demo import run

pytestmark = pytest.mark.paimon_java


def test_paimon_java_reads_demo_table(tmp_path, java):
    warehouse = tmp_path / "wh"
    table_path = run(str(warehouse), 3).path
    out = tmp_path / "java-read.parquet"
    java.call("read", warehouse=str(warehouse), table=table_name(table_path), out=str(out))
    rows = sorted(pq.read_table(out).to_pylist(), key=lambda r: r["id"])
    assert rows == expected_rows(3)

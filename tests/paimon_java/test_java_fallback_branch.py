"""``scan.fallback-branch`` against Paimon Java 1.4.2 (issue 45: impl dropped the option and
missed every partition that only the fallback branch holds).

Java creates the table and a branch, sets ``scan.fallback-branch`` on the main branch, writes
partitions into each branch (one partition into both: main's copy wins whole); impl reads
exactly the rows Java reads; impl writes into main (the partition becomes main's) and both
sides read the same rows again.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"


def _java_rows(java, wh: Path, tmp: Path, table: str = TABLE) -> list[tuple]:
    out = tmp / "java-read.parquet"
    java.call("read", warehouse=str(wh), table=table, out=str(out))
    return sorted((r["dt"], r["id"], r["v"]) for r in pq.read_table(out).to_pylist())


def _impl_rows(wh: Path, table: str = TABLE) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in impl.Catalog(str(wh)).get_table(table).to_arrow().to_pylist())


def _write(java, wh: Path, tmp: Path, table: str, dt: str, ids: list[int], v: str, identifier: int) -> None:
    pq.write_table(pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [v] * len(ids)}),
                   tmp / "in.parquet")
    java.call("write", warehouse=str(wh), table=table, parquet=str(tmp / "in.parquet"), commit_user="java",
              identifier=identifier)


@pytest.mark.parametrize("primary_keys", [[], ["dt", "id"]], ids=["append", "primary-key"])
def test_fallback_branch_reads_what_java_reads(java, tmp_path, primary_keys):
    wh = tmp_path / "wh"
    not_null = " NOT NULL" if primary_keys else ""
    java.call("create_table", warehouse=str(wh), table=TABLE,
              fields=[["dt", "STRING" + not_null], ["id", "BIGINT" + not_null], ["v", "STRING"]],
              primary_keys=primary_keys, partition_keys=["dt"],
              table_options={"bucket": "2"} if primary_keys else {})
    java.call("create_branch", warehouse=str(wh), table=TABLE, name="fb")
    java.call("alter", warehouse=str(wh), table=TABLE,
              changes=[{"op": "set_option", "key": "scan.fallback-branch", "value": "fb"}])
    _write(java, wh, tmp_path, f"{TABLE}$branch_fb", "a", [7, 8], "fb", 1)
    _write(java, wh, tmp_path, f"{TABLE}$branch_fb", "b", [3, 4], "fb", 2)
    _write(java, wh, tmp_path, f"{TABLE}$branch_fb", "c", [5], "fb", 3)
    _write(java, wh, tmp_path, TABLE, "a", [1, 2], "main", 1)

    want = [("a", 1, "main"), ("a", 2, "main"), ("b", 3, "fb"), ("b", 4, "fb"), ("c", 5, "fb")]
    assert _java_rows(java, wh, tmp_path) == want, "Java read other rows: the test's premise is wrong"
    assert _impl_rows(wh) == want
    assert _impl_rows(wh, f"{TABLE}$branch_fb") == _java_rows(java, wh, tmp_path, f"{TABLE}$branch_fb")

    impl.Catalog(str(wh)).get_table(TABLE).write_arrow(
        pa.table({"dt": ["b"], "id": pa.array([6], pa.int64()), "v": ["impl"]}))
    want = [("a", 1, "main"), ("a", 2, "main"), ("b", 6, "impl"), ("c", 5, "fb")]
    assert _impl_rows(wh) == want == _java_rows(java, wh, tmp_path)

"""A table repaired by impl is a healthy table to Apache Paimon Java 1.4.2: after ``repair()``
set a torn latest snapshot aside (as ``snapshot/damaged-snapshot-<id>-<hash>``), Java lists the
same snapshots as impl, reads the rows of the newest readable snapshot, and commits on from
there (its snapshot takes the freed id); impl then reads Java's commit."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_java_interop_matrix import assert_same_metadata

import impl

pytestmark = pytest.mark.paimon_java

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def java_rows(java, wh: Path, out: Path) -> list[dict]:
    java.call("read", warehouse=str(wh), table="db.t", out=str(out))
    return sorted(pq.read_table(out).to_pylist(), key=lambda r: r["id"])


def test_java_reads_and_writes_a_repaired_table(java, tmp_path):
    wh = tmp_path / "wh"
    cat = impl.Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write_arrow(pa.table({"id": [i], "v": [str(i)]}, schema=SCHEMA))
    path = Path(t.paths.snapshot_path(3))
    path.write_bytes(path.read_bytes()[:50])
    plan = cat.get_table("db.t").repair()
    assert plan.target_id == 2 and len(plan.quarantine) == 1

    assert java_rows(java, wh, tmp_path / "r1.parquet") == [{"id": 0, "v": "0"}, {"id": 1, "v": "1"}]
    assert [s["id"] for s in assert_same_metadata(java, wh)["snapshots"]] == [1, 2]

    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [5], "v": ["java"]}, schema=SCHEMA), data)
    java.call("write", warehouse=str(wh), table="db.t", parquet=str(data), commit_user="java", identifier=1)
    t = cat.get_table("db.t")
    assert t.latest_snapshot().id == 3
    assert sorted(t.to_arrow()["id"].to_pylist()) == [0, 1, 5]
    assert t.doctor().healthy
    assert Path(plan.quarantine[0][1]).exists()  # the set-aside file stays, ignored by both sides

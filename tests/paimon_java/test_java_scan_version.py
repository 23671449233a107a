"""``scan.version`` (Paimon's VERSION AS OF) against Paimon Java 1.4.2 (issue 45: impl read the
latest snapshot for it without an error).

Java writes three snapshots and two tags, one of them named like a snapshot id ("1", on snapshot
2); for each version both sides read the same rows: a tag of that name wins over a snapshot id,
an all-digit version without such a tag is a snapshot id, and a version naming neither is an
error on both sides.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from paimon_java import JavaHarnessError

import impl
from impl.errors import PaimonError

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"


def _java_ids(java, wh: Path, tmp: Path, version: str) -> list[int]:
    out = tmp / "java-read.parquet"
    java.call("read", warehouse=str(wh), table=TABLE, out=str(out), options={"scan.version": version})
    return sorted(pq.read_table(out)["id"].to_pylist())


def _impl_ids(wh: Path, version: str) -> list[int]:
    t = impl.Catalog(str(wh)).get_table(TABLE).copy({"scan.version": version})
    return sorted(t.to_arrow()["id"].to_pylist())


def test_scan_version_reads_what_java_reads(java, tmp_path):
    wh = tmp_path / "wh"
    java.call("create_table", warehouse=str(wh), table=TABLE, fields=[["id", "BIGINT"], ["v", "STRING"]],
              primary_keys=[], partition_keys=[], table_options={})
    for n, ids in enumerate([[1], [2], [3]], start=1):
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": ["x"] * len(ids)}), tmp_path / "in.parquet")
        java.call("write", warehouse=str(wh), table=TABLE, parquet=str(tmp_path / "in.parquet"),
                  commit_user="java", identifier=n)
    java.call("create_tag", warehouse=str(wh), table=TABLE, name="first", snapshot_id=1)
    java.call("create_tag", warehouse=str(wh), table=TABLE, name="1", snapshot_id=2)  # a tag named like snapshot 1
    expected = {"first": [1], "1": [1, 2], "2": [1, 2], "3": [1, 2, 3]}
    for version, ids in expected.items():
        assert _java_ids(java, wh, tmp_path, version) == ids, f"Java's read of version {version!r}"
        assert _impl_ids(wh, version) == ids, f"impl's read of version {version!r}"
    # a version naming no tag and no snapshot: an error on both sides, never the latest snapshot
    with pytest.raises(JavaHarnessError):
        _java_ids(java, wh, tmp_path, "nope")
    with pytest.raises(PaimonError):
        _impl_ids(wh, "nope")

"""``manifest.format`` = orc and parquet against Paimon Java 1.4.2, both ways.

Java picks the reader of a table's manifests, manifest lists and index manifests from its
``manifest.format`` option (``AbstractFileStore.manifestFileFactory`` / ``manifestListFactory``),
never from the file, so impl must write that format into such a table (an Avro manifest there
breaks every Java read). impl reads them by content. Here: Java creates and writes; impl reads,
writes and compacts; Java reads; Java writes and compacts; impl reads -- equal rows each time,
and every metadata file of the table is in the table's format.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.format import columnar_manifest

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"


def _metadata_formats(table_dir: Path) -> set:
    return {columnar_manifest.format_of(f.read_bytes()) for f in (table_dir / "manifest").iterdir()}


def _java_read(java, wh: Path, tmp: Path) -> list[dict]:
    out = tmp / "java-read.parquet"
    java.call("read", warehouse=str(wh), table=TABLE, out=str(out))
    return sorted(pq.read_table(out).to_pylist(), key=lambda r: (r["id"], r["name"] or ""))


def _impl_read(wh: Path) -> list[dict]:
    rows = impl.Catalog(str(wh)).get_table(TABLE).to_arrow().to_pylist()
    return sorted(rows, key=lambda r: (r["id"], r["name"] or ""))


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
@pytest.mark.parametrize("kind", ["append", "primary-key", "deletion-vectors", "dynamic-bucket"])
def test_manifest_format_both_ways(java, tmp_path, fmt, kind):
    """The deletion-vector and dynamic-bucket tables also write index manifests (deletion
    vectors, hash index) in the table's format."""
    wh = tmp_path / "wh"
    primary_keys = [] if kind == "append" else ["id"]
    options = {"manifest.format": fmt, **({"bucket": "2"} if primary_keys else {})}
    if kind == "deletion-vectors":
        options["deletion-vectors.enabled"] = "true"
    if kind == "dynamic-bucket":
        options["bucket"] = "-1"
    java.call("create_table", warehouse=str(wh), table=TABLE,
              fields=[["id", "INT NOT NULL" if primary_keys else "INT"], ["name", "STRING"]],
              primary_keys=primary_keys, partition_keys=[], table_options=options)
    batches = [pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", None]}),
               pa.table({"id": pa.array([2, 3], pa.int32()), "name": ["b", "c"]}),
               pa.table({"id": pa.array([3, 4], pa.int32()), "name": [None, "d"]})]
    expected: dict = {}
    appended: list[dict] = []

    def applied(batch):
        for r in batch.to_pylist():
            appended.append(r)
            expected[r["id"]] = r
        rows = list(expected.values()) if primary_keys else appended
        return sorted(rows, key=lambda r: (r["id"], r["name"] or ""))

    pq.write_table(batches[0], tmp_path / "in.parquet")
    java.call("write", warehouse=str(wh), table=TABLE, parquet=str(tmp_path / "in.parquet"), commit_user="java",
              identifier=1)
    want = applied(batches[0])
    table_dir = wh / "db.db" / "t"
    assert _metadata_formats(table_dir) == {fmt}  # Java wrote them so
    assert _impl_read(wh) == want

    t = impl.Catalog(str(wh)).get_table(TABLE)
    t.write_arrow(batches[1])
    t.compact(full=True)
    want = applied(batches[1])
    assert _metadata_formats(table_dir) == {fmt}, "impl wrote a metadata file in another format"
    assert _java_read(java, wh, tmp_path) == want

    pq.write_table(batches[2], tmp_path / "in.parquet")
    java.call("write", warehouse=str(wh), table=TABLE, parquet=str(tmp_path / "in.parquet"), commit_user="java",
              identifier=2)
    java.call("compact", warehouse=str(wh), table=TABLE, full=True, commit_user="java-compact", identifier=1)
    want = applied(batches[2])
    assert _impl_read(wh) == want == _java_read(java, wh, tmp_path)
    if kind in ("deletion-vectors", "dynamic-bucket"):
        assert any(f.name.startswith("index-manifest-") for f in (table_dir / "manifest").iterdir())

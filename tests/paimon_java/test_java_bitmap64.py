"""``deletion-vectors.bitmap64`` = true against Paimon Java 1.4.2, both ways (issue 45).

Paimon writes ``Bitmap64DeletionVector`` entries into such a table's deletion-vector index
files (magic 1681511377 little-endian, a 64-bit portable roaring bitmap, the range's length
counting the whole entry). impl used to refuse the table, and read such an entry as corrupt.
Here: Java writes and compacts (its lookup compaction marks superseded rows); impl reads the
same rows; impl writes updates (its compaction writes 64-bit vectors); Java reads the same rows.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.mergetree.deletion_vectors import BITMAP64_MAGIC, BITMAP_MAGIC
from impl.store.core import bucket_index_files

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"
OPTIONS = {"bucket": "1", "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true"}


def _magics(table) -> set[str]:
    """The kinds of the deletion vectors (by each index file's first entry) of the latest snapshot."""
    out = set()
    for files in bucket_index_files(table.core, table.latest_snapshot()).values():
        data = Path(table.core.paths.index_file_path(files[0].file_name)).read_bytes()
        if len(data) >= 9:
            if struct.unpack_from(">i", data, 5)[0] == BITMAP_MAGIC:
                out.add("32")
            elif struct.unpack_from("<i", data, 5)[0] == BITMAP64_MAGIC:
                out.add("64")
    return out


def _rows(table: pa.Table) -> dict:
    return {r["id"]: r["v"] for r in table.to_pylist()}


def test_bitmap64_deletion_vectors_both_ways(java, tmp_path):
    wh = tmp_path / "wh"
    java.call("create_table", warehouse=str(wh), table=TABLE, fields=[["id", "INT NOT NULL"], ["v", "STRING"]],
              primary_keys=["id"], partition_keys=[], table_options=OPTIONS)
    expected: dict = {}
    # a big first file: later small writes land above it (no full merge) and mark its rows.
    # Big by bytes, not only rows (distinct values): universal compaction compares run sizes, and
    # a few hundred bytes of Parquet footer (field ids) on the small files must not tip them past
    # the size ratio / amplification thresholds into a full merge that leaves no vectors
    base = {"id": list(range(1, 5001)), "v": [f"a{i:07d}" for i in range(5000)]}
    for i, batch in enumerate([base, {"id": [2, 4], "v": ["b", "b"]},
                               {"id": [5], "v": ["c"]}]):
        pq.write_table(pa.table({"id": pa.array(batch["id"], pa.int32()), "v": batch["v"]}), tmp_path / "in.parquet")
        java.call("write", warehouse=str(wh), table=TABLE, parquet=str(tmp_path / "in.parquet"), commit_user="java",
                  identifier=i + 1)
        expected.update(zip(batch["id"], batch["v"], strict=True))
    t = impl.Catalog(str(wh)).get_table(TABLE)
    assert _magics(t) == {"64"}, "Java wrote no 64-bit deletion vector: the test proves nothing"
    [java_files] = bucket_index_files(t.core, t.latest_snapshot()).values()
    java_index = {f.file_name for f in java_files}
    assert _rows(t.to_arrow()) == expected

    t.write_arrow(pa.table({"id": pa.array([1, 3], pa.int32()), "v": ["d", "d"]}))
    expected.update({1: "d", 3: "d"})
    t = impl.Catalog(str(wh)).get_table(TABLE)
    assert _rows(t.to_arrow()) == expected
    [files] = bucket_index_files(t.core, t.latest_snapshot()).values()
    assert {f.file_name for f in files}.isdisjoint(java_index), "impl wrote no index file"
    assert _magics(t) == {"64"}
    out = tmp_path / "java-read.parquet"
    java.call("read", warehouse=str(wh), table=TABLE, out=str(out))
    assert _rows(pq.read_table(out)) == expected

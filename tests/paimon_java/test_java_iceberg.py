"""Issue 48 against Paimon Java 1.4.2: a table Java keeps Iceberg-readable
(``metadata.iceberg.storage`` = table-location) stays so after impl commits to it, Java's next
commit builds on impl's Iceberg metadata, and pyiceberg reads every version with the rows of
the Paimon snapshot it mirrors; impl's metadata and Java's agree on schema and partition spec."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl

pytestmark = pytest.mark.paimon_java
pyiceberg_table = pytest.importorskip("pyiceberg.table")

TABLE = "db.t"
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def _rows(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def _data(ids, dt) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]},
                    schema=SCHEMA)


def _metadata(directory: str, version: int) -> tuple[dict, object]:
    path = os.path.join(directory, f"v{version}.metadata.json")
    with open(path) as f:
        doc = json.load(f)
    return doc, pyiceberg_table.StaticTable.from_metadata(path)


def test_java_and_impl_keep_one_iceberg_view(java, tmp_path):
    wh = str(tmp_path / "wh")
    java.call("create_table", warehouse=wh, table=TABLE, fields=[["dt", "STRING"], ["id", "BIGINT"], ["v", "STRING"]],
              partition_keys=["dt"], table_options={"metadata.iceberg.storage": "table-location"})

    def java_write(n, data):
        path = str(tmp_path / f"w{n}.parquet")
        pq.write_table(data, path)
        java.call("write", warehouse=wh, table=TABLE, commit_user="java", identifier=n, parquet=path)

    java_write(1, _data([1, 2], "a"))
    t = impl.Catalog(wh).get_table(TABLE)
    directory = os.path.join(t.path, "metadata")
    java_doc, java_view = _metadata(directory, 1)
    assert _rows(java_view.scan().to_arrow()) == _rows(_data([1, 2], "a"))

    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(_data([3], "b"))
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    impl_doc, impl_view = _metadata(directory, 2)
    assert _rows(impl_view.scan().to_arrow()) == _rows(pa.concat_tables([_data([1, 2], "a"), _data([3], "b")]))
    # the same Iceberg table as Java's: schema, partition spec, uuid, and Java's snapshot kept
    for key in ("table-uuid", "location", "schemas", "partition-specs", "last-partition-id", "current-schema-id"):
        assert impl_doc[key] == java_doc[key], key
    assert [s["snapshot-id"] for s in impl_doc["snapshots"]] == [1, 2]
    assert _rows(impl_view.scan(snapshot_id=1).to_arrow()) == _rows(_data([1, 2], "a"))

    # Java's next commit builds on impl's metadata (it reads impl's manifest list and manifests)
    java_write(2, _data([4], "a"))
    _doc3, java_view3 = _metadata(directory, 3)
    assert _rows(java_view3.scan().to_arrow()) == _rows(pa.concat_tables(
        [_data([1, 2], "a"), _data([3], "b"), _data([4], "a")]))
    assert _rows(java_view3.scan(row_filter="dt = 'b'").to_arrow()) == _rows(_data([3], "b"))

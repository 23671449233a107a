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


def _pk_rows(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["dt"], r["id"]))


def _commit_impl(t, data):
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def test_primary_key_table_iceberg_view_both_ways(java, tmp_path):
    """A primary-key table kept Iceberg-readable: Java writes and fully compacts (its view: the
    highest-level files), impl updates and fully compacts on top of Java's metadata (carrying
    its manifests over, rewriting the one holding the replaced file), Java does again on top of
    impl's; pyiceberg reads each view with the table's rows, and Java reads impl's merge-tree
    files (which now carry Java's field ids)."""
    wh = str(tmp_path / "wh")
    java.call("create_table", warehouse=wh, table=TABLE, fields=[["dt", "STRING NOT NULL"], ["id", "BIGINT NOT NULL"],
                                                                 ["v", "STRING"]],
              primary_keys=["dt", "id"], partition_keys=["dt"],
              table_options={"metadata.iceberg.storage": "table-location", "bucket": "1"})
    schema = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.string())])

    def data(ids, dt, tag):
        return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]},
                        schema=schema)

    def java_write(n, table):
        path = str(tmp_path / f"w{n}.parquet")
        pq.write_table(table, path)
        java.call("write", warehouse=wh, table=TABLE, commit_user="java", identifier=n, parquet=path)

    def view(t):
        directory = os.path.join(t.path, "metadata")
        with open(os.path.join(directory, "version-hint.text")) as f:
            return _metadata(directory, int(f.read()))

    java_write(1, data([1, 2, 3], "a", "j"))
    java_write(2, data([1], "b", "j"))
    java.call("compact", warehouse=wh, table=TABLE)
    t = impl.Catalog(wh).get_table(TABLE)
    java_doc, java_view = view(t)
    assert java_view.metadata.current_snapshot_id == t.latest_snapshot().id
    assert _pk_rows(java_view.scan().to_arrow()) == _pk_rows(t.to_arrow())

    _commit_impl(t, data([2, 4], "a", "i"))
    impl.Catalog(wh).get_table(TABLE).compact(full=True)
    t = impl.Catalog(wh).get_table(TABLE)
    impl_doc, impl_view = view(t)
    assert impl_view.metadata.current_snapshot_id == t.latest_snapshot().id
    assert _pk_rows(impl_view.scan().to_arrow()) == _pk_rows(t.to_arrow())
    assert {"dt": "a", "id": 2, "v": "i2"} in _pk_rows(impl_view.scan().to_arrow())
    for key in ("table-uuid", "location", "schemas", "partition-specs", "last-partition-id", "current-schema-id"):
        assert impl_doc[key] == java_doc[key], key

    java_write(3, data([3], "a", "k"))
    java.call("compact", warehouse=wh, table=TABLE)
    t = impl.Catalog(wh).get_table(TABLE)
    _doc, java_view2 = view(t)
    assert java_view2.metadata.current_snapshot_id == t.latest_snapshot().id
    assert _pk_rows(java_view2.scan().to_arrow()) == _pk_rows(t.to_arrow())
    out = str(tmp_path / "java-read.parquet")
    java.call("read", warehouse=wh, table=TABLE, out=out)
    assert _pk_rows(pq.read_table(out)) == _pk_rows(t.to_arrow())

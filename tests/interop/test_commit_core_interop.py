"""pypaimon 2.1.0 reads tables whose metadata our commit core wrote, and we read its metadata.

These tests need no table layer: data files are written with pyarrow directly, so they pin
down the byte compatibility of snapshots, manifest lists, manifests and BinaryRows.
"""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from pypaimon_env import READ_TABLE, run_pypaimon

from impl.commit import CommitMessage, FileStoreCommit
from impl.data.binary_row import EMPTY_ROW, decode_row, encode_row
from impl.data.types import BIGINT, DOUBLE, STRING, DataField
from impl.datafile.meta import DataFileMeta
from impl.fs import FileIO
from impl.manifest import ManifestFile, ManifestList, live_entries
from impl.schema.records import TableSchema
from impl.snapshot import SnapshotManager


def _write_append_file(table_path: str, partition_dir: str, rows: pa.Table) -> DataFileMeta:
    name = f"data-{uuid.uuid4()}-0.parquet"
    bucket_dir = os.path.join(table_path, partition_dir, "bucket-0") if partition_dir else os.path.join(table_path, "bucket-0")
    os.makedirs(bucket_dir, exist_ok=True)
    path = os.path.join(bucket_dir, name)
    pq.write_table(rows, path, compression="zstd")
    return DataFileMeta(name, os.path.getsize(path), rows.num_rows, schema_id=0)


def test_pypaimon_reads_append_table_committed_by_us(tmp_path, pypaimon):
    """Also through manifests our merge wrote (grouped by partition: a minor merge of 2)."""
    warehouse = str(tmp_path)
    table_path = os.path.join(warehouse, "db.db", "t")
    schema = TableSchema(
        0,
        (DataField(0, "dt", STRING(False)), DataField(1, "id", BIGINT()), DataField(2, "score", DOUBLE())),
        partition_keys=("dt",), options={"manifest.merge-min-count": "2"},
    )
    io = FileIO()
    io.write_bytes(os.path.join(table_path, "schema", "schema-0"), schema.to_json_bytes())
    commit = FileStoreCommit(io, table_path, schema, commit_user="us")
    arrow_schema = pa.schema([("dt", pa.string(), False), ("id", pa.int64()), ("score", pa.float64())])
    expected = []
    for i, dt in enumerate(["2024-01-02", "2024-01-01", "2024-01-03", "2024-01-01"]):
        rows = pa.table({"dt": [dt, dt], "id": [10 * i, 10 * i + 1], "score": [1.5 * i, None]}, schema=arrow_schema)
        expected += rows.to_pylist()
        f = _write_append_file(table_path, f"dt={dt}", rows)
        commit.commit([CommitMessage(encode_row([dt], [STRING(False)]), 0, -1, new_files=(f,))], identifier=i)
    snap = SnapshotManager(io, table_path).latest_snapshot()
    merged = [e for m in ManifestList(io, commit.paths).read(snap.base_manifest_list)
              for e in ManifestFile(io, commit.paths, [STRING(False)]).read(m.file_name)]
    partitions = [decode_row(e.partition, [STRING(False)])[0] for e in merged]
    assert len(merged) == 3 and partitions == sorted(partitions)

    got = run_pypaimon(READ_TABLE, warehouse=warehouse, table="db.t", sort_by=["id"])
    expected.sort(key=lambda r: str(r["id"]))
    assert got == expected


def test_pypaimon_appends_and_we_commit_on_top(tmp_path, pypaimon):
    """pypaimon creates and writes a table; our committer adds a snapshot on top; both read it."""
    warehouse = str(tmp_path)
    run_pypaimon("""
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
catalog = CatalogFactory.create({"warehouse": params["warehouse"]})
catalog.create_database("db", True)
pa_schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
catalog.create_table("db.t", Schema.from_pyarrow_schema(pa_schema), False)
table = catalog.get_table("db.t")
for batch in ([1, 2, 3], [4, 5]):
    wb = table.new_batch_write_builder()
    w = wb.new_write(); c = wb.new_commit()
    w.write_arrow(pa.table({"id": batch, "name": [f"n{i}" for i in batch]}, schema=pa_schema))
    c.commit(w.prepare_commit()); w.close(); c.close()
result = True
""", warehouse=warehouse)
    table_path = os.path.join(warehouse, "db.db", "t")
    io = FileIO()
    schema = TableSchema.from_json_bytes(io.read_bytes(os.path.join(table_path, "schema", "schema-0")), "schema-0")
    snapshots = SnapshotManager(io, table_path)
    latest = snapshots.latest_snapshot()
    assert latest.id == 2 and latest.total_record_count == 5

    # read pypaimon's manifests with our codecs
    from impl.fs.paths import TablePaths
    paths = TablePaths(table_path)
    lists = ManifestList(io, paths)
    manifests = ManifestFile(io, paths, ())
    metas = lists.read(latest.base_manifest_list) + lists.read(latest.delta_manifest_list)
    live = live_entries(manifests.read_all(metas))
    assert sorted(e.file.row_count for e in live) == [2, 3]
    assert all(e.partition == EMPTY_ROW and e.total_buckets == -1 for e in live)

    rows = pa.table({"id": pa.array([6], pa.int64()), "name": ["n6"]})
    f = _write_append_file(table_path, "", rows)
    stats = FileStoreCommit(io, table_path, schema, commit_user="us").commit(
        [CommitMessage(EMPTY_ROW, 0, -1, new_files=(f,))])
    assert stats.snapshot_ids == [3]
    got = run_pypaimon(READ_TABLE, warehouse=warehouse, table="db.t", sort_by=["id"])
    assert [r["id"] for r in got] == [1, 2, 3, 4, 5, 6]
    assert decode_row(live[0].partition, ()) == ()

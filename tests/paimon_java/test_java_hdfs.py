"""Paimon Java 1.4.2 and impl on the same HDFS (MiniDFSCluster), both ways (issue 51).

Java opens the warehouse as ``hdfs://127.0.0.1:RPC/...`` (its HadoopFileIO over Hadoop's HDFS
client; it commits by writing a temporary file and renaming it to ``snapshot-N``, no lock);
impl opens the same directory as ``webhdfs://127.0.0.1:HTTP/...``. Java writes, impl reads and
writes, Java reads impl's commits, and the reverse.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"
FIELDS = [["id", "INT NOT NULL"], ["v", "STRING"]]


def _rows(table: pa.Table) -> dict:
    return {r["id"]: r["v"] for r in table.to_pylist()}


def _java_write(java, warehouse, tmp_path, ids, v, identifier):
    pq.write_table(pa.table({"id": pa.array(ids, pa.int32()), "v": [v] * len(ids)}), tmp_path / "in.parquet")
    java.call("write", warehouse=warehouse, table=TABLE, parquet=str(tmp_path / "in.parquet"), commit_user="java",
              identifier=identifier)


def _java_read(java, warehouse, tmp_path) -> dict:
    out = tmp_path / "java-read.parquet"
    java.call("read", warehouse=warehouse, table=TABLE, out=str(out))
    return _rows(pq.read_table(out))


def test_java_writes_impl_reads_and_writes_java_reads(java, hdfs_server, tmp_path):
    root = hdfs_server.new_root("java")
    java_wh, impl_wh = hdfs_server.hdfs_url(root), hdfs_server.webhdfs_url(root)
    java.call("create_table", warehouse=java_wh, table=TABLE, fields=FIELDS, primary_keys=["id"],
              partition_keys=[], table_options={"bucket": "2"})
    _java_write(java, java_wh, tmp_path, [1, 2, 3], "java", 1)
    t = impl.Catalog(impl_wh, options=hdfs_server.options()).get_table(TABLE)
    assert _rows(t.to_arrow()) == {1: "java", 2: "java", 3: "java"}
    t.write_arrow(pa.table({"id": pa.array([3, 4], pa.int32()), "v": ["impl", "impl"]}))
    expected = {1: "java", 2: "java", 3: "impl", 4: "impl"}
    assert _java_read(java, java_wh, tmp_path) == expected
    _java_write(java, java_wh, tmp_path, [1], "java2", 2)  # Java commits on top of impl's snapshot
    expected[1] = "java2"
    t = impl.Catalog(impl_wh, options=hdfs_server.options()).get_table(TABLE)
    assert _rows(t.to_arrow()) == expected
    assert t.snapshot_manager().snapshot_ids() == [1, 2, 3]


def test_impl_creates_java_writes(java, hdfs_server, tmp_path):
    root = hdfs_server.new_root("impl")
    java_wh, impl_wh = hdfs_server.hdfs_url(root), hdfs_server.webhdfs_url(root)
    cat = impl.Catalog(impl_wh, options=hdfs_server.options())
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(TABLE, schema=pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())]),
                         primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["impl", "impl"]}))
    assert _java_read(java, java_wh, tmp_path) == {1: "impl", 2: "impl"}
    _java_write(java, java_wh, tmp_path, [2, 5], "java", 1)
    t = impl.Catalog(impl_wh, options=hdfs_server.options()).get_table(TABLE)
    assert _rows(t.to_arrow()) == {1: "impl", 2: "java", 5: "java"}

"""System tables read through the ``paimon_py`` Spark source; writes and streams of them refused."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import impl
from impl.errors import SystemTableReadOnlyError


def test_spark_reads_system_tables(spark, warehouse, table_path):
    cat = impl.Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("dt", pa.string()), ("id", pa.int64())]),
                         primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"})
    t.write_arrow(pa.table({"dt": ["a", "b"], "id": [1, 2]}))
    t.write_arrow(pa.table({"dt": ["a"], "id": [3]}))
    snaps = spark.read.format("paimon_py").load(table_path + "$snapshots")
    assert [r.snapshot_id for r in snaps.orderBy("snapshot_id").collect()] == [1, 2]
    assert snaps.schema["commit_time"].dataType.typeName() == "timestamp_ntz"
    ours = cat.get_table("db.t$snapshots").to_arrow()
    got = snaps.orderBy("snapshot_id").toPandas()
    assert list(got["commit_time"]) == [v.as_py() for v in ours.column("commit_time")]
    files = spark.read.format("paimon_py").load(table_path + "$files")
    assert files.filter("partition = '{a}'").count() == 2
    assert sorted(r.record_count for r in
                  spark.read.format("paimon_py").load(table_path + "$partitions").collect()) == [1, 2]
    arr = files.select("write_cols", "file_path").collect()
    assert all(os.path.exists(r.file_path) for r in arr)
    # time travel through the source's option: the files of snapshot 1
    old = spark.read.format("paimon_py").option("snapshot-id", "1").load(table_path + "$files")
    assert old.count() == 2 and files.count() == 3


def test_spark_refuses_to_write_a_system_table(spark, warehouse, table_path):
    cat = impl.Catalog(warehouse)
    cat.create_database("db")
    cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    df = spark.createDataFrame([(1,)], "id long")
    with pytest.raises(Exception, match="read-only") as e:
        df.write.format("paimon_py").mode("append").save(table_path + "$snapshots")
    assert "SystemTableReadOnlyError" in str(e.value) or isinstance(e.value, SystemTableReadOnlyError)
    assert cat.get_table("db.t").snapshots() == []

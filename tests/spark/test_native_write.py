"""``write_dataframe`` through Spark's own Parquet writer (impl/spark/native_write.py): the JVM
writes the files, impl places them, gathers their metadata and commits once.

The same rows written by both writers give the same rows, layout and column statistics; impl,
pypaimon 2.1.0 and Paimon Java read what the native path wrote; failed tasks and bad input leave
nothing behind.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import re

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from spark_helpers import data_files, intents_left, orphans  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.errors import SchemaMismatchError  # noqa: E402
from impl.format.stats import FileStats  # noqa: E402
from impl.spark.native_write import NativeWriteUnsupportedError  # noqa: E402

SCHEMA = T.StructType([
    T.StructField("id", T.LongType(), False), T.StructField("b", T.ByteType()), T.StructField("s", T.StringType()),
    T.StructField("d", T.DecimalType(10, 2)), T.StructField("day", T.DateType()), T.StructField("f", T.DoubleType()),
    T.StructField("bin", T.BinaryType()), T.StructField("ts", T.TimestampNTZType()), T.StructField("p", T.StringType()),
])
BUCKETED = {"partition_keys": ["p"], "options": {"bucket": "3", "bucket-key": "id"}}


def _rows(n=240):
    return [(i, i % 100 - 50, None if i % 7 == 0 else f"name-{i}-a-string-longer-than-sixteen",
             decimal.Decimal(i) / 4, dt.date(2024, 1, 1) + dt.timedelta(days=i % 30), i * 0.5 - 3,
             bytes([i % 256]), dt.datetime(2024, 1, 1, 0, 0, i % 60, 123456), f"p{i % 3}")
            for i in range(n)]


def _read(warehouse, name):
    rows = impl.Catalog(warehouse).get_table(name).to_arrow().to_pylist()
    return sorted((tuple(r[c] for c in SCHEMA.names) for r in rows), key=lambda r: r[0])


def _files_by_bucket(warehouse, name):
    t = impl.Catalog(warehouse).get_table(name)
    fields = {f.name: f for f in t.schema.fields}
    out = {}
    for s in t.new_read_builder().new_scan().plan().splits():
        for m in s.files:
            stats = FileStats.of_values(m, fields, t.schema.field_names)
            out.setdefault((s.partition_path, s.bucket), []).append(
                (m.row_count, m.level, m.min_sequence_number, m.max_sequence_number,
                 [stats.get(n) for n in t.schema.field_names]))
    return out


def _staging_left(warehouse):
    root = os.path.join(warehouse, ".paimon_py_spark", "staging")
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


def test_native_write_matches_the_python_writer(spark, warehouse):
    """Bucketed, partitioned: one file per (partition, bucket) from
    either writer, with the same rows, layout, file names and statistics."""
    df = spark.createDataFrame(_rows(), SCHEMA)
    native = impl.spark.write_dataframe(df, os.path.join(warehouse, "db.db", "native"), writer="spark", **BUCKETED)
    impl.spark.write_dataframe(df, os.path.join(warehouse, "db.db", "py"), writer="python", **BUCKETED)
    assert native.snapshot_ids == [1]
    expected = sorted(_rows(), key=lambda r: r[0])
    assert _read(warehouse, "db.native") == _read(warehouse, "db.py") == expected
    ours, theirs = _files_by_bucket(warehouse, "db.native"), _files_by_bucket(warehouse, "db.py")
    assert ours == theirs and len(ours) == 9  # 3 partitions x 3 buckets
    table_dir = os.path.join(warehouse, "db.db", "native")
    names = data_files(table_dir)
    assert all(re.fullmatch(r"p=[^/]+/bucket-[0-2]/data-[0-9a-f-]{36}-\d+\.parquet", n) for n in names), names
    assert orphans(table_dir) == [] and intents_left(warehouse) == [] and _staging_left(warehouse) == []


def test_pypaimon_and_paimon_java_read_what_the_native_path_wrote(spark, warehouse, tmp_path):
    from pypaimon_env import READ_TABLE, pypaimon_python, run_pypaimon

    df = spark.createDataFrame(_rows(60), SCHEMA).drop("bin", "ts")  # the types every reader's JSON carries
    impl.spark.write_dataframe(df, os.path.join(warehouse, "db.db", "t"), writer="spark", partition_keys=["p"])
    impl.spark.write_dataframe(df.where("id < 10"), os.path.join(warehouse, "db.db", "t"), writer="spark")
    names = [n for n in SCHEMA.names if n not in ("bin", "ts")]
    ours = impl.Catalog(warehouse).get_table("db.t").to_arrow().to_pylist()

    def norm(rows):
        return sorted(tuple(None if r[c] is None else str(r[c]) for c in names) for r in rows)

    assert len(ours) == 70
    pypaimon_python()
    assert norm(run_pypaimon(READ_TABLE, warehouse=warehouse, table="db.t", sort_by=["id"])) == norm(ours)
    java_rows = _java_rows(warehouse, "db.t", tmp_path)
    if java_rows is not None:
        assert norm(java_rows) == norm(ours)


def _java_rows(warehouse, table, tmp_path):
    """Paimon Java's read of ``table`` (None, and a skip note, when no JDK / Maven is here)."""
    import pyarrow.parquet as pq
    from paimon_java import JavaServer, harness_classpath, tools_missing

    if tools_missing():
        return None
    server = JavaServer(harness_classpath())
    try:
        out = tmp_path / "java.parquet"
        server.call("read", warehouse=warehouse, table=table, out=str(out))
        return pq.read_table(out).to_pylist()
    finally:
        server.close()


def test_bad_input_is_refused_before_any_task(spark, warehouse, table_path):
    df = spark.createDataFrame(_rows(20), SCHEMA)
    impl.spark.write_dataframe(df, table_path, writer="spark", **BUCKETED)
    wrong = df.withColumn("d", F.col("d").cast("string"))
    with pytest.raises(SchemaMismatchError, match="'d'"):
        impl.spark.write_dataframe(wrong, table_path, writer="spark")
    pk = os.path.join(warehouse, "db.db", "pk")
    with pytest.raises(NativeWriteUnsupportedError, match="primary-key"):
        impl.spark.write_dataframe(df, pk, writer="spark", primary_keys=["id"], options={"bucket": "2"})
    impl.spark.write_dataframe(df, pk, primary_keys=["id"], options={"bucket": "2"})  # auto: impl's writers
    assert len(impl.Catalog(warehouse).get_table("db.pk").to_arrow()) == 20
    assert len(impl.Catalog(warehouse).get_table("db.t").to_arrow()) == 20  # one snapshot, the first write's
    assert _staging_left(warehouse) == [] and intents_left(warehouse) == []


def test_failed_tasks_leave_nothing(spark, warehouse, table_path):
    """A task attempt that fails halfway is retried: its files never reach the table. A job
    that fails (a null in the partition column, which is NOT NULL) commits nothing and leaves nothing."""
    from pyspark import TaskContext

    def flaky(i):
        tc = TaskContext.get()
        if tc.partitionId() == 0 and tc.attemptNumber() == 0 and i > 30:
            raise RuntimeError("first attempt dies")
        return i

    df = spark.createDataFrame(_rows(120), SCHEMA).repartition(2)
    bumpy = df.withColumn("id", F.udf(flaky, "long")(F.col("id")))
    impl.spark.write_dataframe(bumpy, table_path, writer="spark", **BUCKETED)
    assert _read(warehouse, "db.t") == sorted(_rows(120), key=lambda r: r[0])
    assert orphans(table_path) == [] and _staging_left(warehouse) == []

    before = data_files(table_path)
    nulls = df.withColumn("p", F.when(F.col("id") == 7, None).otherwise(F.col("p")))
    with pytest.raises(Exception, match="NOT NULL column 'p'"):
        impl.spark.write_dataframe(nulls, table_path, writer="spark")
    assert data_files(table_path) == before and orphans(table_path) == []
    assert _staging_left(warehouse) == [] and intents_left(warehouse) == []
    assert impl.Catalog(warehouse).get_table("db.t").snapshot_manager.latest_snapshot_id() == 1

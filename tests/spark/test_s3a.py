"""Spark's own Parquet reader and writer on S3 through Hadoop's s3a (impl/spark/s3a.py), against
the moto S3 server on 127.0.0.1: ``read_table`` and ``write_dataframe(writer="spark")`` give impl's
rows, and a failed or killed task leaves nothing a commit or orphan removal would not account for.

The shared test session (tests/spark/conftest.py) carries :func:`impl.spark.s3a_conf`; when its
jars could not be fetched, the native paths name why and these tests skip.
"""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from spark_helpers import explode_on_13, store_files, store_io  # noqa: E402
from test_s3 import S3Table  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.spark.s3a import hadoop_options, s3a_reason, s3a_uri  # noqa: E402


@pytest.fixture
def s3t(spark, s3_server, s3_bucket) -> S3Table:
    why = s3a_reason(spark)
    if why is not None:
        pytest.skip(why)
    return S3Table(s3_bucket, s3_server.options())


_explode_on_13 = F.udf(explode_on_13, T.LongType())


def _die_in_first_attempt(marker: str):
    @F.udf(T.LongType())
    def die(v):
        from pyspark import TaskContext

        tc = TaskContext.get()
        if tc is not None and tc.attemptNumber() == 0 and tc.partitionId() == 0 and v == 40:
            open(marker, "w").close()
            os._exit(3)  # the Python worker dies mid-task, after the task took 40 rows
        return v

    return die


def _staging(s3t: S3Table) -> set[str]:
    return store_files(s3t.options, f"{s3t.bucket}/wh/.paimon_py_spark/staging")


def _assert_written_by_spark(s3t: S3Table) -> None:
    """Spark's Parquet writer (parquet-mr, not pyarrow) wrote every file the latest snapshot reads."""
    fio = store_io(s3t.options)
    table = s3t.table()
    live = [table.core.paths.data_file_path(s.partition_path, s.bucket, f.file_name)
            for s in table.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert live
    writers = {p: pq.ParquetFile(fio.fs.open(p, "rb")).metadata.created_by for p in live}
    assert all("parquet-mr" in w for w in writers.values()), writers


def test_impl_storage_options_map_to_s3a_options():
    opts = hadoop_options({"fs.s3.endpoint": "http://127.0.0.1:9000", "fs.s3.accessKeyId": "k",
                           "fs.s3.accessKeySecret": "s", "fs.s3.region": "eu-west-1"})
    assert opts["fs.s3a.endpoint"] == "http://127.0.0.1:9000" and opts["fs.s3a.endpoint.region"] == "eu-west-1"
    assert opts["fs.s3a.access.key"] == "k" and opts["fs.s3a.secret.key"] == "s"
    assert opts["fs.s3a.path.style.access"] == "true"  # an IP endpoint is addressed by path, as botocore does
    assert hadoop_options({"s3.endpoint": "https://s3.example.com"})["fs.s3a.path.style.access"] == "false"
    assert hadoop_options({"s3.endpoint": "https://s3.example.com", "s3.path-style-access": "true"})[
        "fs.s3a.path.style.access"] == "true"
    assert s3a_uri("s3://b/wh/t/f.parquet") == s3a_uri("b/wh/t/f.parquet") == "s3a://b/wh/t/f.parquet"


def test_native_write_and_read_table_on_s3(spark, s3t):
    df = spark.createDataFrame([(f"d{k % 2}", k, k * 3) for k in range(200)], "dt string, id long, v long")
    opts = {"deletion-vectors.enabled": "true", **s3t.options}
    impl.spark.write_dataframe(df, s3t.path, partition_keys=["dt"], options=opts, writer="spark")
    more = spark.createDataFrame([(f"d{k % 2}", k, -k) for k in range(200, 260)], "dt string, id long, v long")
    impl.spark.write_dataframe(more, s3t.path, options=s3t.options, writer="spark")
    _assert_written_by_spark(s3t)
    impl.spark.delete(spark, s3t.path, "id % 7 = 0", options=s3t.options)  # deletion vectors

    got = impl.spark.read_table(spark, s3t.path, options=s3t.options)
    plan = got._jdf.queryExecution().optimizedPlan().toString()
    # Spark's Parquet reader through s3a, the deleted rows dropped in the JVM (the scan's own
    # bitmap filter on _metadata.row_index, impl.spark.dv_filter); no Python source
    assert "paimon_py" not in plan and "shiftright" in plan and "Join" not in plan
    assert got.inputFiles() and all(f.startswith("s3a://") for f in got.inputFiles())
    want = s3t.table().to_arrow()
    assert sorted(map(tuple, got.select("dt", "id", "v").collect())) == sorted(
        zip(want.column("dt").to_pylist(), want.column("id").to_pylist(), want.column("v").to_pylist(), strict=True))
    assert want.num_rows == 260 - len(range(0, 260, 7))
    assert s3t.orphans() == [] and s3t.intents() == set() and _staging(s3t) == set()

    # native compaction on S3: Spark reads (vectors applied) and writes, impl commits
    res = impl.spark.compact(spark, s3t.path, full=True, options=s3t.options, writer="spark")
    assert res.files_after == 2
    _assert_written_by_spark(s3t)
    after = impl.spark.read_table(spark, s3t.path, options=s3t.options).select("dt", "id", "v").collect()
    assert sorted(map(tuple, after)) == sorted(map(tuple, got.select("dt", "id", "v").collect()))
    assert s3t.orphans() == [] and s3t.intents() == set() and _staging(s3t) == set()


def test_failed_native_write_on_s3_leaves_nothing(spark, s3t):
    seed = spark.createDataFrame([(k, k) for k in range(10)], "id long, v long")
    impl.spark.write_dataframe(seed, s3t.path, options=s3t.options, writer="spark")
    before = s3t.files()
    df = spark.createDataFrame([(k, k) for k in range(40)], "id long, v long").repartition(2, "id") \
        .withColumn("v", _explode_on_13("v"))
    with pytest.raises(Exception, match="bad row 13"):
        impl.spark.write_dataframe(df, s3t.path, options=s3t.options, writer="spark")
    assert s3t.files() == before and len(s3t.table().snapshots()) == 1
    assert s3t.intents_after_failed_job() == set() and _staging(s3t) == set()


def test_killed_task_of_native_write_on_s3_is_retried_and_leaves_nothing(spark, s3t, tmp_path):
    marker = str(tmp_path / "killed")
    df = spark.range(0, 100, numPartitions=2).selectExpr("id", "id as v") \
        .withColumn("v", _die_in_first_attempt(marker)("v"))
    impl.spark.write_dataframe(df, s3t.path, options=s3t.options, writer="spark")
    assert os.path.exists(marker)  # attempt 0 of task 0 died; attempt 1 wrote its rows
    _assert_written_by_spark(s3t)
    got = impl.spark.read_table(spark, s3t.path, options=s3t.options).collect()
    assert sorted((r.id, r.v) for r in got) == [(k, k) for k in range(100)]
    assert s3t.orphans() == [] and s3t.intents() == set() and _staging(s3t) == set()


def test_session_starts_without_the_packages_when_they_cannot_be_fetched(monkeypatch, caplog):
    """spark-submit exits when Ivy cannot fetch spark.jars.packages (e.g. offline): the session
    starts without them, says so, and the native paths then name why they step aside."""
    import sys
    from types import SimpleNamespace

    from pyspark.sql import SparkSession

    sessions = sys.modules["impl.spark.session"]  # impl.spark.session is also the function

    built: list[dict] = []
    fake = SimpleNamespace(sparkContext=SimpleNamespace(setLogLevel=lambda level: None, _jsc=None))

    def build(builder, settings):
        built.append(dict(settings))
        if "spark.jars.packages" in settings:
            raise RuntimeError("Java gateway process exited before sending its port number")
        return fake

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(sessions, "_build", build)
    monkeypatch.setattr(sessions, "register", lambda s: None)
    assert impl.spark.session(conf=impl.spark.s3a_conf(ivy_dir="/nonexistent")) is fake
    assert "spark.jars.packages" in built[0] and not any(k.startswith("spark.jars.") for k in built[1])
    assert "without spark.jars.packages" in caplog.text and "Java gateway" in caplog.text
    assert "no JVM context" in s3a_reason(fake)

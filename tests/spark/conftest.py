"""One SparkSession per test run (per xdist worker), tables in per-test warehouses.

The master is ``local[2,2]``: two cores and two attempts per task, so a task that fails on its
first attempt is retried (plain ``local[N]`` never retries a task).
"""

from __future__ import annotations

import fcntl
import os

import pytest


@pytest.fixture(scope="session")
def spark():
    import spark_helpers
    from pyspark import cloudpickle

    import impl.spark
    from impl.spark.s3a import s3a_reason

    # test-only classes (file systems that fail on purpose) travel to workers by value
    cloudpickle.register_pickle_by_value(spark_helpers)

    # s3a on the class path (tests/spark/test_s3a.py): Ivy keeps the ~14 MB of jars under ~/.m2,
    # which CI keeps between runs; without network the session starts without them
    ivy_dir = os.path.expanduser("~/.m2/paimon-py-spark-ivy")
    s3a = impl.spark.s3a_conf(ivy_dir=ivy_dir)
    conf = {"spark.sql.shuffle.partitions": "2", **s3a}
    fetched = os.path.join(ivy_dir, ".fetched")
    if os.path.exists(fetched):
        s = impl.spark.session(app_name="paimon-py-tests", master="local[2,2]", conf=conf)
    else:
        # the first fetch: one xdist worker downloads while the others wait for its cache (Ivy's
        # cache is not safe for concurrent first downloads of the same jars)
        os.makedirs(ivy_dir, exist_ok=True)
        with open(ivy_dir + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            s = impl.spark.session(app_name="paimon-py-tests", master="local[2,2]", conf=conf)
            if s3a_reason(s) is None:
                open(fetched, "w").close()
    yield s
    s.stop()


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "wh")


@pytest.fixture
def table_path(warehouse):
    return os.path.join(warehouse, "db.db", "t")

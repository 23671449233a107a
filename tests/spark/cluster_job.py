"""The driver that tests/spark/test_cluster.py runs in a subprocess against a standalone cluster.

A process has one SparkContext, and the test process may already hold a local one (the ``spark``
fixture), so the cluster's application runs here: ``python cluster_job.py SPEC OUT``. SPEC (JSON)
names the master and the tables (warehouse, storage options); for each table the job writes a
primary-key table (partitioned, 2 buckets), upserts with deletes, compacts and reads it back; then
an append table through ``write_dataframe`` with the writer the table's spec names (``spark``:
Spark's own Parquet writer, issue 30's native path) while the first attempt of one task fails,
read back with ``read_table`` (Spark's own reader); and it writes to OUT (JSON) what the test checks: the rows read, the results of each step, and how many
tasks each executor ran during each step. A first probe job records, per executor, where its
Python workers run and which ``impl`` they import.
"""

from __future__ import annotations

import json
import os
import sys
import time

SCHEMA = "dt string, id long, v long, op string"
KEYS = 60


def executor_tasks(spark) -> dict[str, int]:
    """Tasks run so far per executor (not the driver), from the application's status store."""
    sc = spark.sparkContext._jsc.sc()
    sc.listenerBus().waitUntilEmpty()  # the store learns of ended tasks through the listener bus
    store = sc.statusStore().executorList(True)
    out = {}
    for i in range(store.size()):
        e = store.apply(i)
        if e.id() != "driver":
            out[f"{e.id()}@{e.hostPort()}"] = int(e.totalTasks())
    return out


class Steps:
    """Runs named steps, recording each one's tasks per executor and its duration."""

    def __init__(self, spark):
        self.spark = spark
        self.record: dict[str, dict] = {}

    def run(self, name: str, fn):
        before = executor_tasks(self.spark)
        t0 = time.monotonic()
        value = fn()
        after = executor_tasks(self.spark)
        self.record[name] = {"seconds": round(time.monotonic() - t0, 2),
                             "tasks": {k: after.get(k, 0) - before.get(k, 0) for k in after}}
        return value


def probe(_):
    import os
    import sys

    import impl

    yield (os.getpid(), os.getcwd(), impl.__file__, sys.executable)


def wait_for_executors(spark, n: int, timeout: float = 60.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while len(found := executor_tasks(spark)) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(found)} of {n} executors registered in {timeout:.0f} s: {found}")
        time.sleep(0.1)
    return found


def _fail_first_attempt(i):
    """A task's first attempt dies halfway (its files written so far must never reach the table)."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    if tc.partitionId() == 0 and tc.attemptNumber() == 0 and i > KEYS // 2:
        raise RuntimeError("first attempt dies")
    return i


def run_table(spark, steps: Steps, path: str, options: dict[str, str], append_writer: str = "auto") -> dict:
    from pyspark.sql import functions as F

    import impl.spark

    # rows generated on the executors, not shipped from the driver
    first = (spark.range(0, KEYS, numPartitions=4)
             .select(F.concat(F.lit("d"), (F.col("id") % 2).cast("string")).alias("dt"), "id",
                     F.col("id").alias("v"), F.lit("+I").alias("op")))
    # an upsert (k % 3 == 0) and deletes (k % 5 == 1) on distinct keys: rows of one key arriving
    # from two upstream partitions have no defined order after the routing shuffle
    second = spark.createDataFrame([(f"d{k % 2}", k, 100 + k, "+U") for k in range(KEYS) if k % 3 == 0 and k % 5 != 1]
                                   + [(f"d{k % 2}", k, 0, "-D") for k in range(KEYS) if k % 5 == 1], SCHEMA)
    create = {"bucket": "2", "num-sorted-run.compaction-trigger": "10", **options}
    w1 = steps.run("write", lambda: impl.spark.write_dataframe(
        first, path, primary_keys=["dt", "id"], partition_keys=["dt"], options=create, row_kind_column="op"))
    w2 = steps.run("upsert", lambda: impl.spark.write_dataframe(second, path, options=options, row_kind_column="op"))
    c = steps.run("compact", lambda: impl.spark.compact(spark, path, full=True, options=options))
    rows = steps.run("read", lambda: spark.read.format("paimon_py").options(**options).load(path).collect())
    d1 = steps.run("filtered_read", lambda: spark.read.format("paimon_py").options(**options).load(path)
                   .filter("dt = 'd1'").collect())
    flaky = first.select("dt", F.udf(_fail_first_attempt, "long")(F.col("id")).alias("id"), "v").repartition(2)
    append_path = path + "_append"
    wa = steps.run("append_write", lambda: impl.spark.write_dataframe(
        flaky, append_path, partition_keys=["dt"], options=options, writer=append_writer))
    appended = steps.run("append_read", lambda: impl.spark.read_table(spark, append_path, options=options).collect())
    return {
        "append_snapshots": wa.snapshot_ids,
        "append_rows": sorted([r.dt, r.id, r.v] for r in appended),
        "write_snapshots": w1.snapshot_ids, "upsert_snapshots": w2.snapshot_ids,
        "compact": {"snapshots": c.snapshot_ids, "buckets": c.compacted_buckets, "tasks": c.tasks,
                    "files_before": c.files_before, "files_after": c.files_after},
        "rows": sorted([r.dt, r.id, r.v] for r in rows),
        "d1_rows": sorted([r.dt, r.id, r.v] for r in d1),
    }


def main(spec_path: str, out_path: str) -> None:
    import impl.spark

    with open(spec_path) as fh:
        spec = json.load(fh)
    t0 = time.monotonic()
    spark = impl.spark.session(app_name="paimon-py-cluster-test", master=spec["master"], conf={
        "spark.driver.memory": "1g",
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.cores.max": str(spec["executors"]),
        # the first job starts only once every executor is up, so every step can use both
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s",
        "spark.locality.wait": "0",
        "spark.sql.shuffle.partitions": "4",
    })
    out: dict = {"app_id": spark.sparkContext.applicationId, "master": spark.sparkContext.master}
    try:
        out["executors"] = sorted(wait_for_executors(spark, spec["executors"]))
        out["startup_seconds"] = round(time.monotonic() - t0, 2)
        steps = Steps(spark)
        found = steps.run("probe", lambda: spark.sparkContext.parallelize(range(8), 8).mapPartitions(probe).collect())
        out["probe"] = sorted(set(found))
        out["probe_tasks"] = steps.record["probe"]["tasks"]
        out["tables"] = {}
        for name, target in spec["tables"].items():
            steps = Steps(spark)
            out["tables"][name] = run_table(spark, steps, target["path"], target.get("options", {}),
                                            target.get("append_writer", "auto"))
            out["tables"][name]["steps"] = steps.record
        out["driver_impl"] = __import__("impl").__file__
        out["driver_pid"] = os.getpid()
    finally:
        spark.stop()
        with open(out_path, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

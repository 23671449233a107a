"""Concurrent Spark jobs in one session: writers to one table race for snapshot ids and all land."""

from __future__ import annotations

import os
import threading

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql import functions as F  # noqa: E402
from spark_helpers import intents_left, orphans  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402


def test_concurrent_jobs_in_one_session(spark, warehouse):
    shared = os.path.join(warehouse, "db.db", "shared")
    pk = os.path.join(warehouse, "db.db", "pk")
    spark.createDataFrame([(0, -1)], "id long, w long").write.format("paimon_py").mode("append").save(shared)
    impl.spark.write_dataframe(spark.createDataFrame([(0, 0, 0)], "id long, w long, v long"), pk,
                               primary_keys=["id"], options={"bucket": "2"})
    errors: list[BaseException] = []
    results: dict[str, object] = {}

    def append_writer(w: int):
        for i in range(2):
            df = spark.range(w * 1000 + i * 100, w * 1000 + i * 100 + 50).withColumn("w", F.lit(w).cast("long"))
            df.write.format("paimon_py").mode("append").save(shared)

    def pk_writer(w: int):
        # disjoint keys per writer; write-only writers, compaction left to a dedicated job
        for i in range(2):
            df = spark.range(w, 400, 2).select("id", F.lit(w).cast("long").alias("w"),
                                                 F.lit(i).cast("long").alias("v"))
            impl.spark.write_dataframe(df, pk, options={"write-only": "true"})

    def reader():
        counts = []
        for _ in range(3):
            counts.append(spark.read.format("paimon_py").load(shared).count())
        results["reader"] = counts

    def run(fn, *args):
        try:
            impl.spark.register(spark)  # the JVM keeps the active session per thread
            fn(*args)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(append_writer, w)) for w in range(3)]
    threads += [threading.Thread(target=run, args=(pk_writer, w)) for w in range(2)]
    threads.append(threading.Thread(target=run, args=(reader,)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors

    got = sorted(r.id for r in spark.read.format("paimon_py").load(shared).collect())
    want = sorted([0] + [w * 1000 + i * 100 + k for w in range(3) for i in range(2) for k in range(50)])
    assert got == want
    counts = results["reader"]
    assert counts == sorted(counts) and all((c - 1) % 50 == 0 for c in counts)  # whole commits only
    t = impl.Catalog(warehouse).get_table("db.shared")
    assert [s.id for s in t.snapshots()] == list(range(1, 8))  # 7 commits, contiguous ids
    kv = {r.id: (r.w, r.v) for r in spark.read.format("paimon_py").load(pk).collect()}
    assert kv == {k: (k % 2, 1) for k in range(400)}
    res = impl.spark.compact(spark, pk, full=True)
    assert res.snapshot_ids and res.compacted_buckets == 2
    assert {r.id: (r.w, r.v) for r in spark.read.format("paimon_py").load(pk).collect()} == kv
    assert orphans(shared) == [] and orphans(pk) == [] and intents_left(warehouse) == []

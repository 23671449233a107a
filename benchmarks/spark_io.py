"""Spark I/O through ``paimon_py`` against Spark's native Parquet, measured in the same run.

    python benchmarks/spark_io.py [--rows 5000000] [--repeat 2]

1. append write: ``df.write.format("paimon_py")`` (append table) vs ``df.write.parquet``;
2. primary-key write: ``impl.spark.write_dataframe`` (bucket routing, shuffle, merge-tree
   writers) vs ``df.write.parquet`` of the same rows;
3. full read: ``spark.read.format("paimon_py")`` vs ``spark.read.parquet``, each fully
   materialized into Spark's ``noop`` sink (every column of every row crosses into the JVM).

Each measurement is the best of ``--repeat`` runs after a warm-up (Python workers started, JIT
warm). Prints wall times and ratios, with the targets: append <= 1.3x, primary key <= 2x,
read <= 2x native. The last line is a one-line summary.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

TARGETS = {"append write": 1.3, "primary-key write": 2.0, "full read": 2.0}


def source(spark, rows: int):
    from pyspark.sql import functions as F

    return spark.range(0, rows, numPartitions=2).select(
        F.col("id"),
        (F.col("id") % 97).cast("int").alias("k"),
        (F.col("id") * 0.5).alias("v"),
        F.concat(F.lit("name-"), (F.col("id") % 10007).cast("string")).alias("s"),
        F.concat(F.lit("d"), (F.col("id") % 4).cast("string")).alias("dt"),
    )


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    a = ap.parse_args(argv)

    import impl.spark

    spark = impl.spark.session(app_name="paimon-py-bench",
                               conf={"spark.sql.shuffle.partitions": "4"})
    root = a.dir or tempfile.mkdtemp(prefix="paimon-spark-bench-")
    wh = os.path.join(root, "wh")
    pq_dir = os.path.join(root, "parquet")
    df = source(spark, a.rows)
    counter = [0]

    def fresh(name: str) -> str:
        counter[0] += 1
        return os.path.join(wh, "bench.db", f"{name}{counter[0]}")

    # warm-up: start Python workers, load impl in them, JIT both paths
    small = source(spark, 20_000)
    small.write.mode("overwrite").parquet(pq_dir + "-warm")
    warm = fresh("warm")
    small.write.format("paimon_py").mode("append").save(warm)
    impl.spark.write_dataframe(small, fresh("warmpk"), primary_keys=["dt", "id"], partition_keys=["dt"],
                               options={"bucket": str(a.buckets)})
    spark.read.format("paimon_py").load(warm).write.format("noop").mode("overwrite").save()

    results = {}

    # 1. append
    def native_write():
        df.write.mode("overwrite").option("compression", "zstd").parquet(pq_dir)

    paths = []

    def paimon_append():
        p = fresh("append")
        paths.append(p)
        df.write.format("paimon_py").mode("append").save(p)

    native = best(native_write, a.repeat)
    ours = best(paimon_append, a.repeat)
    results["append write"] = (ours, native)

    # 2. primary key
    def paimon_pk():
        impl.spark.write_dataframe(df, fresh("pk"), primary_keys=["dt", "id"], partition_keys=["dt"],
                                   options={"bucket": str(a.buckets)})

    ours_pk = best(paimon_pk, a.repeat)
    results["primary-key write"] = (ours_pk, native)

    # 3. read (the last append table and the parquet directory)
    append_table = paths[-1]

    def paimon_read():
        spark.read.format("paimon_py").load(append_table).write.format("noop").mode("overwrite").save()

    def native_read():
        spark.read.parquet(pq_dir).write.format("noop").mode("overwrite").save()

    native_r = best(native_read, a.repeat)
    ours_r = best(paimon_read, a.repeat)
    results["full read"] = (ours_r, native_r)

    rows_read = spark.read.format("paimon_py").load(append_table).count()
    assert rows_read == a.rows, f"paimon_py read {rows_read} rows, wrote {a.rows}"

    print(f"\nSpark I/O benchmark: {a.rows:,} rows, 5 columns, local[2] "
          f"(best of {a.repeat}; {os.cpu_count()} cpus)")
    print(f"{'measurement':20s} {'paimon_py':>10s} {'native':>10s} {'ratio':>7s} {'target':>7s}")
    ok_all = True
    for name, (o, n) in results.items():
        ratio = o / n
        ok = ratio <= TARGETS[name]
        ok_all &= ok
        print(f"{name:20s} {o:9.2f}s {n:9.2f}s {ratio:6.2f}x {TARGETS[name]:6.1f}x {'ok' if ok else 'MISSED'}")
    summary = "  ".join(f"{k}={o / n:.2f}x" for k, (o, n) in results.items())
    print(f"summary: {summary} ({'all targets met' if ok_all else 'some targets missed'})")
    if a.dir is None:
        shutil.rmtree(root, ignore_errors=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

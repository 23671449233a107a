"""Streaming writes through the ``paimon_py`` sink against a batch ``write_dataframe`` of the same rows.

    python benchmarks/spark_streaming.py [--rows 200000] [--batches 4] [--large] [--repeat 1]

The input is ``--batches`` Parquet files (generated with numpy, fixed seed) of a primary-key
table's rows. Both sides read the same files and write a fresh primary-key table (``bucket`` =
``--buckets``, partitioned by ``dt``):

1. baseline: ``impl.spark.write_dataframe(spark.read.parquet(dir), ...)``, one job, one commit;
2. stream: ``spark.readStream.parquet(dir)`` with ``maxFilesPerTrigger`` 1 and
   ``trigger(availableNow=True)``, so one micro-batch per file, each committed by the sink;
3. the same stream with every file in one micro-batch, which separates the sink's per-batch
   cost (Spark plans each micro-batch and commits it in Python workers of their own) from its
   per-row cost.

Micro-batches are partitioned by Paimon bucket (the column ``impl.spark.with_bucket_column``
adds, as ``write_dataframe`` routes rows), so each bucket has one writer per batch.

Each measurement is the best of ``--repeat`` runs after a warm-up. Prints wall time and rows/s
of each, the stream's throughput relative to the baseline and the time per micro-batch; the
last line is a one-line summary. ``--large`` runs 5M rows in 10 micro-batches.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

from spark_io import best  # the best of N wall times, as the Spark I/O benchmark measures


def write_input(directory: str, rows: int, files: int, seed: int = 7) -> None:
    """``files`` Parquet files of ``rows`` rows in all, with increasing modification times (Spark's
    file source takes files in that order)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows).astype(np.int64)
    os.makedirs(directory, exist_ok=True)
    for i, part in enumerate(np.array_split(ids, files)):
        t = pa.table({
            "id": part,
            "k": (part % 97).astype(np.int32),
            "v": part * 0.5,
            "s": pa.array(np.char.add("name-", (part % 10007).astype(str))),
            "dt": pa.array(np.char.add("d", (part % 4).astype(str))),
        })
        tmp, path = os.path.join(directory, f".{i}.tmp"), os.path.join(directory, f"f{i:04d}.parquet")
        pq.write_table(t, tmp)
        os.utime(tmp, (1_700_000_000 + i, 1_700_000_000 + i))
        os.rename(tmp, path)


SCHEMA = "id long, k int, v double, s string, dt string"
TABLE_OPTIONS = {"primary-key": "dt,id", "partition": "dt"}


def create_table(spark, path: str, buckets: int) -> None:
    """An empty primary-key table (the stream's routing needs the table's bucket function)."""
    import impl.spark

    empty = spark.createDataFrame([], SCHEMA)
    impl.spark.write_dataframe(empty, path, primary_keys=["dt", "id"], partition_keys=["dt"],
                               options={"bucket": str(buckets)})


def run_stream(spark, src: str, path: str, checkpoint: str, files_per_batch: int, tasks: int) -> None:
    import impl
    import impl.spark
    from impl.spark.routing import BUCKET_COLUMN, with_bucket_column

    table = impl.spark.TableRef.from_path(path).table()
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", files_per_batch).parquet(src)
    routed = with_bucket_column(df, table, [(c, c) for c in table.schema.field_names])
    routed = routed.repartition(tasks, "dt", BUCKET_COLUMN).drop(BUCKET_COLUMN)
    q = (routed.writeStream.format("paimon_py").option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start(path))
    q.awaitTermination()


def count_rows(spark, path: str) -> int:
    return spark.read.format("paimon_py").load(path).count()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--batches", type=int, default=4, help="micro-batches (= input files)")
    ap.add_argument("--large", action="store_true", help="5M rows in 10 micro-batches")
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    a = ap.parse_args(argv)
    if a.large:
        a.rows, a.batches = 5_000_000, 10

    import impl.spark

    spark = impl.spark.session(app_name="paimon-py-stream-bench", conf={"spark.sql.shuffle.partitions": "4"})
    tasks = int(spark.conf.get("spark.sql.shuffle.partitions"))
    root = a.dir or tempfile.mkdtemp(prefix="paimon-stream-bench-")
    src, warm_src = os.path.join(root, "input"), os.path.join(root, "warm-input")
    wh = os.path.join(root, "wh")
    write_input(src, a.rows, a.batches)
    write_input(warm_src, 20_000, 2)
    counter = [0]

    def fresh(name: str) -> tuple[str, str]:
        counter[0] += 1
        return os.path.join(wh, "bench.db", f"{name}{counter[0]}"), os.path.join(root, f"ck-{name}{counter[0]}")

    def batch(source_dir: str) -> str:
        path, _ = fresh("batch")
        impl.spark.write_dataframe(spark.read.schema(SCHEMA).parquet(source_dir), path, primary_keys=["dt", "id"],
                                   partition_keys=["dt"], options={"bucket": str(a.buckets)}, num_tasks=tasks)
        return path

    def stream(source_dir: str, files_per_batch: int) -> str:
        path, checkpoint = fresh("stream")
        create_table(spark, path, a.buckets)
        run_stream(spark, source_dir, path, checkpoint, files_per_batch, tasks)
        return path

    # warm-up: Python workers started, impl loaded in them, JIT warm on both paths
    batch(warm_src)
    stream(warm_src, 1)

    out: dict[str, str] = {}

    def measure(name: str, fn) -> float:
        def once():
            out[name] = fn()
        return best(once, a.repeat)

    t_batch = measure("batch", lambda: batch(src))
    t_stream = measure("stream", lambda: stream(src, 1))
    t_one = measure("one", lambda: stream(src, a.batches))
    for name in ("batch", "stream", "one"):
        n = count_rows(spark, out[name])
        if n != a.rows:
            print(f"FAIL: {name} table has {n} rows, expected {a.rows}", file=sys.stderr)
            return 1

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{a.rows:,} rows, primary-key table (dt, id), {a.buckets} buckets, {tasks} tasks; "
          f"load average {load:.1f}")
    print(f"{'':44s} {'seconds':>8s} {'rows/s':>11s} {'vs batch':>9s}")
    for label, t in (("batch write_dataframe (baseline)", t_batch),
                     (f"stream, {a.batches} micro-batches (availableNow)", t_stream),
                     ("stream, 1 micro-batch", t_one)):
        print(f"{label:44s} {t:8.2f} {a.rows / t:11,.0f} {t_batch / t:8.2f}x")
    per_batch = (t_stream - t_one) / max(a.batches - 1, 1)
    print(f"per micro-batch overhead: {per_batch:.2f} s (planning and commit of a batch; "
          f"{a.batches} batches vs 1)")
    print(f"SUMMARY stream {a.rows / t_stream:,.0f} rows/s vs batch {a.rows / t_batch:,.0f} rows/s "
          f"({t_batch / t_stream:.2f}x), {per_batch:.2f} s per micro-batch")
    if a.dir is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

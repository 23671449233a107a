"""Plain ``df.write`` into a primary-key table (several tasks per bucket, shared-key check at
commit) against ``impl.spark.write_dataframe`` (rows routed one task per bucket), same rows, same run.

    python benchmarks/spark_pk_write.py [--rows 1000000] [--buckets 4] [--repeat 2]

Three writes of ``--rows`` unique keys on local[2], each into a fresh table:

1. ``write_dataframe`` (the baseline: bucket routing shuffle, no check needed);
2. ``df.write`` of range-ordered keys (``spark.range``: each task holds one key range, so the
   check passes on the files' key ranges alone);
3. ``df.write`` of the same keys in random order (a fixed permutation: every task's keys span the
   whole range, so the check must compare the tasks' key sketches and confirm the candidates
   exactly by reading the key columns of the files -- the worst case).

Then the check alone, on the driver, over the task outputs of the random-order write (written
again without committing) and of a small one (``--small-rows``, where the sketches list the key
hashes and clear the write without reading a file): with the tasks' sketches and without them
(as for a writer that sends none), with what it read (best of 3, warm file cache); and the
sketch building the tasks add, timed in one process. Each write is the best of ``--repeat`` after a warm-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from spark_io import best  # the best of N wall times, as the Spark I/O benchmark measures


def frame(spark, rows: int, random_order: bool):
    from pyspark.sql import functions as F

    ids = spark.range(0, rows, numPartitions=2)
    if random_order:  # a bijection of 0..rows-1 (7919 is prime and does not divide rows)
        step = 7919 if rows % 7919 else 7907
        ids = ids.select(((F.col("id") * step + 13) % rows).alias("id"))
    return ids.select("id", (F.col("id") % 97).cast("int").alias("k"), (F.col("id") * 0.5).alias("v"),
                      F.concat(F.lit("name-"), (F.col("id") % 10007).cast("string")).alias("s"))


def task_outputs(df, path: str, buckets: int):
    """The random-order write's task outputs (messages + sketches), not committed."""
    import pickle

    import pyarrow as pa

    from impl.jobs.writer import write_task
    from impl.spark.source import prepare_write
    from impl.spark.writer import task_key

    job = prepare_write(path, df.schema, {"primary-key": "id"}, {"bucket": str(buckets)})

    def write(batches):
        out = write_task(batches, job, task_key())
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(out)], type=pa.binary())], names=["out"])

    got = df.mapInArrow(write, "out binary").toArrow()
    return job, [pickle.loads(v) for v in got.column("out").to_pylist()]


def time_sketching(table, rows: int) -> float:
    """Seconds to sketch ``rows`` random-order rows (conform + hash + route + set bits), in batches
    of the size the tasks use."""
    import numpy as np
    import pyarrow as pa

    from impl.jobs.keycheck import KeySketchBuilder
    from impl.write.table_write import conform_input

    ids = np.random.default_rng(1).permutation(rows).astype(np.int64)
    data = pa.table({"id": ids, "k": (ids % 97).astype(np.int32), "v": ids * 0.5,
                     "s": pa.array([f"name-{i % 10007}" for i in range(rows)])})
    builder = KeySketchBuilder(table)
    t = time.perf_counter()
    for batch in data.to_batches(max_chunksize=262_144):
        builder.add(conform_input(pa.Table.from_batches([batch]), table.core))
    builder.finish()
    return time.perf_counter() - t


def job_table(path: str, df, buckets: int):
    """A new primary-key table for ``df`` (nothing written)."""
    from impl.spark.source import prepare_write

    return prepare_write(path, df.schema, {"primary-key": "id"}, {"bucket": str(buckets)}).ref.table()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--small-rows", type=int, default=2000, help="rows of the small write whose check is timed too")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    a = ap.parse_args(argv)

    import impl.spark
    from impl.jobs.keycheck import check_shared_keys
    from impl.jobs.writer import abort_write

    spark = impl.spark.session(app_name="paimon-py-pk-bench", master="local[2]",
                               conf={"spark.sql.shuffle.partitions": "2"})
    root = a.dir or tempfile.mkdtemp(prefix="paimon-pk-bench-")
    wh = os.path.join(root, "wh")
    counter = [0]
    last = [""]  # the table the latest write went to

    def fresh(name: str) -> str:
        counter[0] += 1
        return os.path.join(wh, "bench.db", f"{name}{counter[0]}")

    def df_write(df):
        def run():
            p = fresh("plain")
            (df.write.format("paimon_py").option("primary-key", "id").option("bucket", str(a.buckets))
             .mode("append").save(p))
            last[0] = p
        return run

    def routed(df):
        def run():
            p = fresh("routed")
            impl.spark.write_dataframe(df, p, primary_keys=["id"], options={"bucket": str(a.buckets)})
            last[0] = p
        return run

    for random_order in (False, True):  # warm-up: Python workers, imports, both paths
        small = frame(spark, 20_000, random_order)
        df_write(small)()
        routed(small)()

    ordered, shuffled = frame(spark, a.rows, False), frame(spark, a.rows, True)
    results = {}
    for name, fn in (("write_dataframe", routed(shuffled)), ("df.write, range-ordered keys", df_write(ordered)),
                     ("df.write, random-order keys", df_write(shuffled))):
        results[name] = best(fn, a.repeat)
        n = spark.read.format("paimon_py").load(last[0]).count()
        assert n == a.rows, f"{name}: read {n} rows, wrote {a.rows}"

    def time_checks(rows: int):
        job, outs = task_outputs(frame(spark, rows, True), fresh("check"), a.buckets)
        table = job.ref.table()
        per_task = [o.messages for o in outs]
        checks = {}
        for label, sketches in (("with sketches", [o.sketches for o in outs]), ("without sketches", None)):
            stats = check_shared_keys(table, per_task, sketches)  # warm: file cache, reader pool
            checks[label] = (best(lambda sk=sketches: check_shared_keys(table, per_task, sk), 3), stats)
        size = sum(len(s.bits) + len(s.hashes) for o in outs for s in (o.sketches or {}).values())
        abort_write(job)
        return len(outs), size, checks

    tasks, sketch_bytes, checks = time_checks(a.rows)
    _, small_bytes, small_checks = time_checks(a.small_rows)
    sketch_time = time_sketching(job_table(fresh("sketch"), shuffled, a.buckets), a.rows)

    base = results["write_dataframe"]
    print(f"\nPrimary-key write: {a.rows:,} unique keys, {a.buckets} buckets, 2 tasks, local[2] "
          f"(best of {a.repeat}; {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f})")
    print(f"{'write':32s} {'time':>8s} {'vs write_dataframe':>19s}")
    for name, s in results.items():
        print(f"{name:32s} {s:7.2f}s {s / base:18.2f}x")
    for rows, size, found in ((a.rows, sketch_bytes, checks), (a.small_rows, small_bytes, small_checks)):
        print(f"\nshared-key check alone (driver), {rows:,} random-order keys, {tasks} tasks, "
              f"sketches {size / 1024:.1f} KiB in all:")
        for label, (s, stats) in found.items():
            print(f"  {label:17s} {s * 1000:7.1f} ms ({s / base:.1%} of write_dataframe)  {stats}")
    print(f"  sketch building (what the tasks add), {a.rows:,} rows in one process: {sketch_time:.3f}s "
          f"({sketch_time / base:.1%} of write_dataframe)")
    print(f"summary: range-ordered {results['df.write, range-ordered keys'] / base:.2f}x, "
          f"random-order {results['df.write, random-order keys'] / base:.2f}x of write_dataframe; "
          f"check {checks['with sketches'][0]:.3f}s with sketches")
    if a.dir is None:
        shutil.rmtree(root, ignore_errors=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What filter pruning still saves on ``paimon_py`` reads: the default against ``pushdown`` = ``true``.

    python benchmarks/spark_pruning.py [--rows-per-file 20000] [--repeat 3]

The default read prunes nothing (Spark 4.3 shares one planned read among all scans of a loaded
relation, so every scan reads the whole snapshot and Spark applies the filters; see
``impl.spark.claims``). ``.option("pushdown", "true")`` prunes partitions, buckets and files with
the pushed filters, for a DataFrame each query scans once. This script measures both on tables
of 100 data files:

- an append table partitioned by ``dt`` (10 partitions x 10 files), a partition-filtered query
  (``dt = 'd3'``) and a key-filtered one (``id BETWEEN x AND x + 99``, which file statistics
  prune because each commit writes a contiguous id range);
- a primary-key table (10 partitions x 10 buckets, one file each), the same two queries.

Files read: the data files of the input partitions the reader planned (``partitions()`` is what
Spark's tasks read). Time: the median wall time of ``--repeat`` runs of ``count()`` on a fresh
load, after one warm-up run; the baseline is the default read in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def build_tables(warehouse: str, rows_per_file: int) -> dict[str, str]:
    import numpy as np
    import pyarrow as pa

    import impl

    cat = impl.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64())])
    app = cat.create_table("db.app", schema=schema, partition_keys=["dt"])
    pk = cat.create_table("db.pk", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "10", "write-only": "true"})
    next_id = 0
    for _commit in range(10):  # each commit: one file per partition (append), per partition and bucket (pk)
        parts = []
        for p in range(10):
            ids = np.arange(next_id, next_id + rows_per_file, dtype=np.int64)
            next_id += rows_per_file
            parts.append(pa.table({"dt": pa.array([f"d{p}"] * len(ids)), "id": ids, "v": ids * 0.5}))
        app.write_arrow(pa.concat_tables(parts))
    for p in range(10):  # 10 buckets of one partition get one file each from one commit
        ids = np.arange(p * rows_per_file * 10, (p + 1) * rows_per_file * 10, dtype=np.int64)
        pk.write_arrow(pa.table({"dt": pa.array([f"d{p}"] * len(ids)), "id": ids, "v": ids * 0.5}))
    return {"append": os.path.join(warehouse, "db.db", "app"), "primary key": os.path.join(warehouse, "db.db", "pk")}


def planned_files(path: str, pushdown: str, where: str) -> int:
    """Data files of the input partitions the read of ``where`` plans (what its tasks open),
    with the filters Spark pushes for it."""
    from impl.spark.reader import PaimonPushdownReader
    from impl.spark.source import PaimonDataSource

    source = PaimonDataSource({"path": path, "pushdown": pushdown})
    reader = source.reader(source.schema())
    if isinstance(reader, PaimonPushdownReader):
        reader.pushFilters(_spark_filters(where))
    return sum(len(s.files) for p in reader.partitions() for s in p.splits)


def _spark_filters(where: str):
    """The filters Spark pushes for the two query shapes of this script."""
    from pyspark.sql import datasource as ds

    if where.startswith("dt"):
        return [ds.IsNotNull(("dt",)), ds.EqualTo(("dt",), where.split("'")[1])]
    lo, hi = (int(x) for x in where.split("BETWEEN")[1].split("AND"))
    return [ds.IsNotNull(("id",)), ds.GreaterThanOrEqual(("id",), lo), ds.LessThanOrEqual(("id",), hi)]


def timed(spark, path: str, pushdown: str, where: str, repeat: int) -> tuple[float, int]:
    def run():
        return spark.read.format("paimon_py").option("pushdown", pushdown).load(path).filter(where).count()

    rows = run()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return statistics.median(times), rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rows-per-file", type=int, default=20000, help="rows in each of the 100 data files")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per figure (median reported)")
    args = ap.parse_args(argv)

    import impl.spark

    spark = impl.spark.session(app_name="spark-pruning", master="local[2]")
    with tempfile.TemporaryDirectory() as warehouse:
        tables = build_tables(warehouse, args.rows_per_file)
        key_lo = 5 * args.rows_per_file * 10 + 7  # inside partition d5 of the pk table, commit 5 of the append table
        queries = {"partition filter": "dt = 'd3'", "key filter": f"id BETWEEN {key_lo} AND {key_lo + 99}"}
        print(f"{'table':<12} {'query':<17} {'files default':>13} {'files pushdown':>14} "
              f"{'time default':>12} {'time pushdown':>13} {'speed-up':>8}")
        for kind, path in tables.items():
            for qname, where in queries.items():
                f_off = planned_files(path, "false", where)
                f_on = planned_files(path, "true", where)
                t_off, n_off = timed(spark, path, "false", where, args.repeat)
                t_on, n_on = timed(spark, path, "true", where, args.repeat)
                assert n_off == n_on, (kind, qname, n_off, n_on)
                print(f"{kind:<12} {qname:<17} {f_off:>13} {f_on:>14} {t_off:>11.2f}s {t_on:>12.2f}s "
                      f"{t_off / t_on:>7.1f}x")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

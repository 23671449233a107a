"""What filter pruning saves on Spark reads: the README's first read (``impl.spark.read_table``,
pruned by the query's later filters) and the ``paimon_py`` source, against native Parquet.

    python benchmarks/spark_pruning.py [--rows-per-file 20000] [--repeat 3] [--skip-source] [--skip-planning]

Part 1 (issue 46 item 1), interleaved rounds, wall and CPU (driver, JVM, Python workers) with the
load: a query ``dt = 'd3'`` applied LATER to the DataFrame the README's first read returns
(``read_table(spark, path).where(...)``, planned afresh each run), against the floor
``spark.read.parquet`` over only the matching files, and the candidates beside it: Spark's own
partition discovery (``spark.read.option("basePath", table).parquet(table + "/dt=*")``, append table only:
it lists directories, so it would also read files a snapshot no longer holds, and knows nothing
of merges), ``paimon_py`` with ``pushdown`` and ``read_table(filter=...)``. Then the unfiltered
append read against ``spark.read.parquet`` of all files. Every reader writes to Spark's ``noop``
sink (all columns moved); files read are counted from the query's optimized plan
(:func:`impl.spark.fast_read.scanned_files`). Part 1b: planning time of a ``read_table`` union of
10 / 32 / 100 partition branches (``--skip-planning`` leaves it out).

Part 2 (issue 26): the ``paimon_py`` default read against ``pushdown`` = ``true`` (``--skip-source``
leaves it out).

Part 2: the default read prunes nothing (Spark 4.3 shares one planned read among all scans of a loaded
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


def first_read_cases(spark, tables: dict[str, str], where: str) -> tuple[dict, dict]:
    """(name -> callable, name -> files read) of part 1, with the floor first."""
    import impl.spark
    from impl.spark.fast_read import scanned_files

    def noop(df):
        df.write.format("noop").mode("overwrite").save()

    cases, files = {}, {}
    for kind, path in tables.items():
        t = _table(path)
        want = _files(t, lambda v: v == where.split("'")[1])
        every = _files(t, lambda v: True)
        paths = [p for p, _ in want]
        cases[f"{kind}: native over matching files"] = lambda paths=paths: noop(spark.read.parquet(*paths))
        files[f"{kind}: native over matching files"] = len(paths)
        first = impl.spark.read_table(spark, path).where(where)
        files[f"{kind}: read_table(...).where"] = len(scanned_files(first))
        cases[f"{kind}: read_table(...).where"] = lambda path=path: noop(impl.spark.read_table(spark, path).where(where))
        built = impl.spark.read_table(spark, path)  # built once, queried each run (a view's use)
        cases[f"{kind}: read_table built once, .where"] = lambda built=built: noop(built.where(where))
        files[f"{kind}: read_table built once, .where"] = files[f"{kind}: read_table(...).where"]
        cases[f"{kind}: read_table(filter=)"] = lambda path=path: noop(impl.spark.read_table(spark, path, filter=where))
        files[f"{kind}: read_table(filter=)"] = len(scanned_files(impl.spark.read_table(spark, path, filter=where)))
        cases[f"{kind}: paimon_py pushdown"] = lambda path=path: noop(
            spark.read.format("paimon_py").option("pushdown", "true").load(path).where(where))
        files[f"{kind}: paimon_py pushdown"] = planned_files(path, "true", where)
        if kind == "append":
            # the partition directories only (the table's root also holds snapshot/, schema/, ...)
            discovered = spark.read.option("basePath", path).parquet(path + "/dt=*").where(where)
            files[f"{kind}: basePath discovery"] = len(discovered.inputFiles())
            cases[f"{kind}: basePath discovery"] = lambda path=path: noop(
                spark.read.option("basePath", path).parquet(path + "/dt=*").where(where))
            all_paths = [p for p, _ in every]
            cases["append unfiltered: native all files"] = lambda all_paths=all_paths: noop(spark.read.parquet(*all_paths))
            files["append unfiltered: native all files"] = len(all_paths)
            cases["append unfiltered: read_table"] = lambda path=path: noop(impl.spark.read_table(spark, path))
            files["append unfiltered: read_table"] = len(scanned_files(impl.spark.read_table(spark, path)))
    return cases, files


def _table(path: str):
    import impl

    return impl.Catalog(os.path.dirname(os.path.dirname(path))).get_table("db." + os.path.basename(path))


def _files(t, keep) -> list[tuple[str, str]]:
    """(path, name) of the live data files whose partition value ``keep`` accepts."""
    out = []
    for s in t.new_read_builder().new_scan().plan().splits():
        if keep(t.core.partition_cache.values(s.partition)[0]):
            out += [(t.core.paths.data_file_path(s.partition_path, s.bucket, f.file_name, f.external_path), f.file_name)
                    for f in s.files]
    return out


def first_read(spark, tables: dict[str, str], repeat: int) -> None:
    from spark_io import rounds

    where = "dt = 'd3'"
    cases, files = first_read_cases(spark, tables, where)
    for fn in cases.values():  # warm-up
        fn()
    load = os.getloadavg()
    res = rounds(cases, repeat)
    print(f"\npart 1: the README's first read, {where!r} applied later; median of {repeat} interleaved rounds; "
          f"{os.cpu_count()} cpus; load {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"{'measurement':42s} {'files':>5s} {'wall':>7s} {'cpu':>7s} {'x floor':>8s} {'cpu x':>6s}")
    floor = None
    for name, (w, c, _) in res.items():
        if name.endswith("native over matching files") or name.endswith("native all files"):
            floor = (w, c)
        assert floor is not None
        print(f"{name:42s} {files[name]:5d} {w:6.2f}s {c:6.2f}s {w / floor[0]:7.2f}x {c / floor[1]:5.2f}x")


def planning(spark, warehouse: str, counts=(10, 32, 100)) -> None:
    """Seconds to build ``read_table(spark, path).where(...)`` and optimize its plan, and to count
    it, over tables of one small file per partition, with a branch per partition and as one
    branch (``max_branches=0``)."""
    import pyarrow as pa

    import impl
    import impl.spark

    cat = impl.Catalog(warehouse)
    cat.create_database("plan", ignore_if_exists=True)
    print(f"\npart 1b: planning a union of partition branches (load {os.getloadavg()[0]:.1f})")
    print(f"{'partitions':>10s} {'branches':>8s} {'build+optimize':>14s} {'count()':>8s}")
    for n in counts:
        t = cat.create_table(f"plan.p{n}", schema=pa.schema([("dt", pa.string()), ("id", pa.int64())]),
                             partition_keys=["dt"])
        t.write_arrow(pa.table({"dt": [f"p{i}" for i in range(n)], "id": pa.array(range(n), pa.int64())}))
        path = cat.table_path(f"plan.p{n}")
        for cap in (n, 0):
            t0 = time.perf_counter()
            df = impl.spark.read_table(spark, path, max_branches=cap).where("dt = 'p3'")
            df._jdf.queryExecution().optimizedPlan()
            t1 = time.perf_counter()
            rows = df.count()
            t2 = time.perf_counter()
            assert rows == 1, rows
            print(f"{n:>10d} {n if cap else 1:>8d} {t1 - t0:13.2f}s {t2 - t1:7.2f}s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rows-per-file", type=int, default=20000, help="rows in each of the 100 data files")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per figure (median reported)")
    ap.add_argument("--skip-source", action="store_true", help="leave out part 2 (paimon_py default vs pushdown)")
    ap.add_argument("--skip-planning", action="store_true", help="leave out part 1b (planning 10/32/100 branches)")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # spark_io's rounds()

    import impl.spark

    spark = impl.spark.session(app_name="spark-pruning", master="local[2]")
    with tempfile.TemporaryDirectory() as warehouse:
        tables = build_tables(warehouse, args.rows_per_file)
        first_read(spark, tables, args.repeat)
        if not args.skip_planning:
            planning(spark, warehouse)
        if args.skip_source:
            spark.stop()
            return 0
        key_lo = 5 * args.rows_per_file * 10 + 7  # inside partition d5 of the pk table, commit 5 of the append table
        queries = {"partition filter": "dt = 'd3'", "key filter": f"id BETWEEN {key_lo} AND {key_lo + 99}"}
        print(f"\npart 2: paimon_py default vs pushdown (load {os.getloadavg()[0]:.1f})")
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

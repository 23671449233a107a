"""What Iceberg metadata costs a commit (issue 48 item 5): one-row APPEND commits into three
partitioned append tables in the same run, interleaved commit by commit so every side sees the
same load: Iceberg metadata off (the baseline), on (only what changed written: manifests
carried over and merged, ``impl.iceberg.commit``), and on with every commit listing all live
files again (the rewrite before manifest reuse, forced by folding no Paimon snapshot). Median
commit ms over the commits around each table size (live files = commits). Flat as the table
grows is the target: the "on" column's extra over "off" should not grow with the files.

Then, if Java 17 and the harness are there, Paimon Java 1.4.2's commits (harness ``write``, one
JVM, the same one-row commits) with its Iceberg metadata on and off, interleaved; those figures
include the harness's JSON round trip and its reading of the row from a Parquet file on each
side, so compare Java on against Java off, not against impl.

    PYTHONPATH=. python benchmarks/iceberg_commit.py [--sizes 10 100 1000] [--window 10] [--no-java]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import impl
import impl.iceberg.commit as iceberg_commit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "_support"))

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
PARTITIONS = 10


def _row(i: int) -> pa.Table:
    return pa.table({"dt": [f"p{i % PARTITIONS}"], "id": pa.array([i], pa.int64()), "v": [f"v{i}"]}, schema=SCHEMA)


def _commit_ms(table, data: pa.Table, full_rewrite: bool = False) -> float:
    saved = iceberg_commit._MAX_FOLDED_SNAPSHOTS
    if full_rewrite:
        iceberg_commit._MAX_FOLDED_SNAPSHOTS = -1  # no snapshot folded: every live file listed again
    try:
        t0 = time.perf_counter()
        wb = table.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(data)
        c.commit(w.prepare_commit())
        w.close()
        c.close()
        return (time.perf_counter() - t0) * 1000
    finally:
        iceberg_commit._MAX_FOLDED_SNAPSHOTS = saved


def _load() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def run_impl(root: str, sizes: list[int], window: int) -> None:
    cat = impl.Catalog(os.path.join(root, "wh"))
    cat.create_database("db")
    sides = {
        "off": (cat.create_table("db.off", schema=SCHEMA, partition_keys=["dt"]), False),
        "on": (cat.create_table("db.on", schema=SCHEMA, partition_keys=["dt"],
                                options={"metadata.iceberg.storage": "table-location"}), False),
        "on, full rewrite": (cat.create_table("db.full", schema=SCHEMA, partition_keys=["dt"],
                                              options={"metadata.iceberg.storage": "table-location"}), True),
    }
    print(f"impl: one-row APPEND commits, {PARTITIONS} partitions, median ms of the {window} commits "
          "ending at each size")
    print(f"{'live files':>10} {'off':>8} {'on':>8} {'on-off':>8} {'full rewrite':>13} {'full-off':>9} {'load':>6}")
    done = 0
    for size in sizes:
        times: dict[str, list[float]] = {name: [] for name in sides}
        while done < size:
            for name, (table, full) in sides.items():
                ms = _commit_ms(table, _row(done), full)
                if done >= size - window:
                    times[name].append(ms)
            done += 1
        med = {name: statistics.median(ts) for name, ts in times.items()}
        print(f"{size:>10} {med['off']:>8.1f} {med['on']:>8.1f} {med['on'] - med['off']:>8.1f} "
              f"{med['on, full rewrite']:>13.1f} {med['on, full rewrite'] - med['off']:>9.1f} {_load():>6}")
    on = sides["on"][0]
    directory = os.path.join(on.path, "metadata")
    manifests = [n for n in os.listdir(directory) if n.endswith(".avro") and not n.startswith("snap-")]
    print(f"manifests in the 'on' table's metadata directory after {done} commits: {len(manifests)}")


def run_java(root: str, sizes: list[int], window: int) -> None:
    from paimon_java import JavaServer, harness_classpath, tools_missing
    reason = tools_missing()
    if reason:
        print(f"\nPaimon Java skipped: {reason}")
        return
    wh = os.path.join(root, "wh-java")
    print(f"\nPaimon Java 1.4.2 (harness write: JSON round trip + Parquet read + commit), median ms of {window}")
    print(f"{'live files':>10} {'off':>8} {'on':>8} {'on-off':>8} {'load':>6}")
    with JavaServer(harness_classpath()) as java:
        fields = [["dt", "STRING"], ["id", "BIGINT"], ["v", "STRING"]]
        java.call("create_table", warehouse=wh, table="db.off", fields=fields, partition_keys=["dt"], table_options={})
        java.call("create_table", warehouse=wh, table="db.on", fields=fields, partition_keys=["dt"],
                  table_options={"metadata.iceberg.storage": "table-location"})
        done = 0
        for size in sizes:
            times: dict[str, list[float]] = {"off": [], "on": []}
            while done < size:
                path = os.path.join(root, "row.parquet")
                pq.write_table(_row(done), path)
                for name in ("off", "on"):
                    t0 = time.perf_counter()
                    java.call("write", warehouse=wh, table=f"db.{name}", commit_user="java", identifier=done + 1,
                              parquet=path)
                    if done >= size - window:
                        times[name].append((time.perf_counter() - t0) * 1000)
                done += 1
            off, on = statistics.median(times["off"]), statistics.median(times["on"])
            print(f"{size:>10} {off:>8.1f} {on:>8.1f} {on - off:>8.1f} {_load():>6}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--no-java", action="store_true")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="iceberg-commit-")
    print(f"load at start {_load()} (2 shared cores: figures are noisy)")
    run_impl(root, sorted(args.sizes), args.window)
    if not args.no_java:
        run_java(root, sorted(args.sizes), args.window)


if __name__ == "__main__":
    main()

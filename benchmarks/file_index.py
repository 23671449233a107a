"""Data-file indexes: what a selective equality filter saves on a 100-file append table.

Writes (once per run) an append table of ``--files`` one-file commits with a bloom filter on
``user`` (random strings: every file's min / max spans nearly the whole range, so statistics
rule no file out) and a bitmap on ``tag`` (three common values in every file, one rare value in
one file), and the same rows into a table without indexes (the write-cost baseline). Then, best
of ``--repeat``:

- impl: plan + read of ``user = <a value of one file>`` and ``tag = 'rare'`` with the index and
  with ``file-index.read.enabled = false`` (the baseline: the same files, index ignored); files
  the plan keeps and wall ms of plan + read;
- Paimon Java 1.4.2 on impl's table (harness op ``index_filter``, one warm JVM): files its scan
  plans, files its ``FileIndexPredicate`` keeps on impl's index bytes, rows, and wall ms of the
  call with the index and with ``file-index.read.enabled = false`` (``--no-java`` skips it).

    PYTHONPATH=. python benchmarks/file_index.py [--files 100] [--rows-per-file 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "_support"))

import impl  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("user", pa.string()), ("tag", pa.string()), ("v", pa.float64())])


def _batch(rng: np.random.Generator, i: int, rows: int) -> pa.Table:
    users = np.char.add("u", rng.integers(0, 10**12, rows).astype(str))
    tags = np.array(["red", "green", "blue"])[rng.integers(0, 3, rows)]
    if i == 0:
        tags[rows // 2] = "rare"
    return pa.table({"id": np.arange(i * rows, (i + 1) * rows), "user": users, "tag": tags,
                     "v": rng.random(rows)}, schema=SCHEMA)


def _write(cat, name: str, options: dict, files: int, rows: int) -> tuple[float, str]:
    t = cat.create_table(name, schema=SCHEMA, options=options)
    rng = np.random.default_rng(7)
    probe = ""
    start = time.perf_counter()
    for i in range(files):
        b = _batch(rng, i, rows)
        if i == files // 2:
            probe = b.column("user")[rows // 3].as_py()
        t.write_arrow(b)
    return time.perf_counter() - start, probe


def _impl_read(t, column: str, value, enabled: bool, repeat: int) -> tuple[int, int, float]:
    t = t.copy({"file-index.read.enabled": "true" if enabled else "false"})
    best = float("inf")
    files = rows = 0
    for _ in range(repeat):
        start = time.perf_counter()
        rb = t.new_read_builder()
        rb = rb.with_filter(rb.new_predicate_builder().equal(column, value))
        splits = rb.new_scan().plan().splits()
        out = rb.new_read().to_arrow(splits)
        best = min(best, time.perf_counter() - start)
        files, rows = sum(len(s.files) for s in splits), out.num_rows
    return files, rows, best * 1000


def _java(wh: str, column: str, value, enabled: bool, repeat: int, java) -> tuple[dict, float]:
    best = float("inf")
    got: dict = {}
    for _ in range(repeat):
        start = time.perf_counter()
        got = java.call("index_filter", warehouse=wh, table="db.indexed", field=column, value=value,
                        options={"file-index.read.enabled": "true" if enabled else "false"})
        best = min(best, time.perf_counter() - start)
    return got, best * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--rows-per-file", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-java", action="store_true")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.files} files x {args.rows_per_file} rows")
    root = tempfile.mkdtemp(prefix="file-index-bench-")
    try:
        wh = f"{root}/wh"
        cat = impl.Catalog(wh)
        cat.create_database("db", ignore_if_exists=True)
        indexed_options = {"file-index.bloom-filter.columns": "user",
                           "file-index.bloom-filter.user.items": str(args.rows_per_file),
                           "file-index.bloom-filter.user.fpp": "0.01", "file-index.bitmap.columns": "tag"}
        w_plain, _ = _write(cat, "db.plain", {}, args.files, args.rows_per_file)
        w_indexed, probe = _write(cat, "db.indexed", indexed_options, args.files, args.rows_per_file)
        index_bytes = sum(p.stat().st_size for p in Path(wh).rglob("*.index"))
        print(f"write {args.files} commits: {w_plain * 1000:.0f} ms without indexes, {w_indexed * 1000:.0f} ms with "
              f"({w_indexed / w_plain:.2f}x); .index files {index_bytes / 1e6:.1f} MB")
        t = cat.get_table("db.indexed")
        probes = [("user", probe, "bloom-filter"), ("tag", "rare", "bitmap")]
        print("\nimpl: plan + read of an equality filter (best of %d)" % args.repeat)
        print(f"{'filter':<40} {'files (index)':>14} {'files (none)':>13} {'ms (index)':>11} {'ms (none)':>10} "
              f"{'speed-up':>9}")
        for column, value, kind in probes:
            f_on, r_on, ms_on = _impl_read(t, column, value, True, args.repeat)
            f_off, r_off, ms_off = _impl_read(t, column, value, False, args.repeat)
            assert r_on == r_off, (column, r_on, r_off)
            label = f"{column} = {value!r} ({kind})"
            print(f"{label:<40} {f_on:>14} {f_off:>13} {ms_on:>11.1f} {ms_off:>10.1f} {ms_off / ms_on:>8.1f}x")
        if args.no_java:
            return
        from paimon_java import JavaServer, harness_classpath, tools_missing
        reason = tools_missing()
        if reason:
            print(f"\nPaimon Java skipped: {reason}")
            return
        print("\nPaimon Java 1.4.2 reading impl's table (index_filter op, best of %d)" % args.repeat)
        print(f"{'filter':<40} {'planned':>8} {'kept by index':>14} {'rows':>5} {'ms (index)':>11} {'ms (none)':>10}")
        with JavaServer(harness_classpath()) as java:
            for column, value, kind in probes:
                _java(wh, column, value, True, 1, java)  # warm the JVM's code paths
                on, ms_on = _java(wh, column, value, True, args.repeat, java)
                off, ms_off = _java(wh, column, value, False, args.repeat, java)
                label = f"{column} = {value!r} ({kind})"
                print(f"{label:<40} {on['planned_files']:>8} {on['index_kept_files']:>14} {on['matching_rows']:>5} "
                      f"{ms_on:>11.1f} {ms_off:>10.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

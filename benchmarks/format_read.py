"""Read speed of ORC, Avro and Parquet data files: impl's table read against the library's raw read.

One append table per format (``--rows`` rows over ``--commits`` commits, so as many data
files; columns BIGINT, INT, STRING, DOUBLE, TIMESTAMP(6), DECIMAL(12, 3)). For each, in the same
run, median of ``--repeat``:

- impl: ``table.to_arrow()`` (scan plan, every file decoded through ``impl.format``, cast to
  the table's types, concatenated);
- raw: the same data files read by the format's library straight into Arrow, on the same
  number of threads: ``pyarrow.parquet.read_table``, ``pyarrow.orc.read_table``, and for Avro
  ``polars.read_avro(...).to_arrow()`` (polars decodes Avro in Rust; it has no zstandard codec,
  so the Avro tables are written with ``avro.codec`` = deflate, and a zstd table is timed
  through impl alone).

Goal: impl within 1.3x of raw. Rows are checked equal in count.

    python benchmarks/format_read.py                  # 1,000,000 rows, 4 commits
    python benchmarks/format_read.py --rows 200000    # a quick run
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq

import impl

GOAL = 1.3


def _data(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64) + seed * rows),
        "k": pa.array(rng.integers(0, 1000, rows).astype(np.int32)),
        "s": pa.array([f"name-{i % 50000}" for i in range(rows)]),
        "d": pa.array(rng.normal(size=rows)),
        "ts": pa.array(rng.integers(0, 2 ** 50, rows), pa.timestamp("us")),
        "dec": pa.array(rng.integers(-10 ** 9, 10 ** 9, rows)).cast(pa.decimal128(19, 0)).cast(pa.decimal128(12, 3)),
    })


def _raw(fmt: str, files: list[Path]) -> int:
    def one(p: Path) -> int:
        if fmt == "parquet":
            return pq.read_table(p).num_rows
        if fmt == "orc":
            return po.read_table(str(p)).num_rows
        return pl.read_avro(p).to_arrow().num_rows
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 2)) as pool:
        return sum(pool.map(one, files))


def _interleaved(impl_fn, raw_fn, repeat: int) -> tuple[tuple[float, float, int], tuple[float, float, int]]:
    """(wall ms, CPU ms, rows) medians of impl and raw, run round by round so both see the same load."""
    out: dict[str, list] = {"impl": [], "raw": []}
    rows = {"impl": 0, "raw": 0}
    for _ in range(repeat):
        for side, fn in (("impl", impl_fn), ("raw", raw_fn)):
            if fn is None:
                continue
            w0, c0 = time.perf_counter(), time.process_time()
            rows[side] = fn()
            out[side].append(((time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000))
    med = {side: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) if v else (0.0, 0.0)
           for side, v in out.items()}
    return (*med["impl"], rows["impl"]), (*med["raw"], rows["raw"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="format-read-"))
    wh = root / "wh"
    shutil.rmtree(wh, ignore_errors=True)
    cat = impl.Catalog(str(wh))
    cat.create_database("db")
    cases = [("parquet", "parquet", {}), ("orc", "orc", {}), ("avro", "avro", {"avro.codec": "deflate"}),
             ("avro-zstd", "avro", {})]
    per_commit = args.rows // args.commits
    batches = [_data(per_commit, i) for i in range(args.commits)]
    print(f"rows {per_commit * args.commits}, {args.commits} files per table, load {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} cores, median of {args.repeat}")
    print(f"{'format':<10} {'impl wall':>10} {'raw wall':>9} {'ratio':>6} {'impl cpu':>9} {'raw cpu':>8} {'ratio':>6}"
          f"  goal <= {GOAL}x (wall)")
    for name, fmt, options in cases:
        table_name = name.replace("-", "_")
        t = cat.create_table(f"db.{table_name}", schema=batches[0].schema, options={"file.format": fmt, **options})
        for b in batches:
            t.write_arrow(b)
        t = cat.get_table(f"db.{table_name}")
        files = sorted(p for p in (wh / "db.db" / table_name).rglob("data-*"))
        t.to_arrow()  # warm the page cache and the imports
        raw = None if name == "avro-zstd" else (lambda: _raw(fmt, files))  # noqa: B023
        (iw, ic, n), (rw, rc, m) = _interleaved(lambda: t.to_arrow().num_rows, raw, args.repeat)  # noqa: B023
        if raw is None:
            print(f"{name:<10} {iw:>10.1f} {'-':>9} {'-':>6} {ic:>9.1f} {'-':>8} {'-':>6}  (polars reads no zstandard)")
            continue
        assert n == m == per_commit * args.commits, (n, m)
        print(f"{name:<10} {iw:>10.1f} {rw:>9.1f} {iw / rw:>5.2f}x {ic:>9.1f} {rc:>8.1f} {ic / rc:>5.2f}x  "
              f"{'PASS' if iw / rw <= GOAL else 'MISS'}")
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

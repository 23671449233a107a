"""Postpone bucket mode: what deferring bucket assignment costs and saves.

Same N primary-key rows (one partition) written and committed in W batches:

1. into a fixed-bucket table with B buckets (the baseline: each write sorts and merges per bucket);
2. into a postpone table (bucket -2: rows appended unsorted to bucket-postpone), then one
   compaction moving them into B buckets (``postpone.default-bucket-num``).

Prints the write time of each, the compaction time, and that both tables read the same rows.

    python benchmarks/postpone_bucket.py [--rows 1000000] [--writes 4] [--buckets 4] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa

import impl

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64()),
                    pa.field("s", pa.string())])


def batches(rows: int, writes: int, seed: int = 7) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    out = []
    for w in range(writes):
        ids = rng.integers(0, rows, rows // writes)  # updates across batches
        out.append(pa.table({"id": ids, "v": ids * 3 + w, "s": pa.array([f"x{w}"] * len(ids))}, schema=SCHEMA))
    return out


def write_all(table, data: list[pa.Table]) -> float:
    t0 = time.perf_counter()
    for b in data:
        table.write_arrow(b)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--writes", type=int, default=4)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--dir")
    a = ap.parse_args()
    root = a.dir or tempfile.mkdtemp(prefix="postpone-bench-")
    try:
        cat = impl.Catalog(os.path.join(root, "wh"))
        cat.create_database("db", ignore_if_exists=True)
        data = batches(a.rows, a.writes)
        fixed = cat.create_table("db.fixed", schema=SCHEMA, primary_keys=["id"], options={"bucket": str(a.buckets)})
        postpone = cat.create_table("db.postpone", schema=SCHEMA, primary_keys=["id"],
                                    options={"bucket": "-2", "postpone.default-bucket-num": str(a.buckets)})
        t_fixed = write_all(fixed, data)
        t_post = write_all(postpone, data)
        t0 = time.perf_counter()
        postpone.compact()
        t_compact = time.perf_counter() - t0
        same = fixed.to_arrow().sort_by("id").equals(postpone.to_arrow().sort_by("id"))
        n = sum(b.num_rows for b in data)
        print(f"{n:,} rows in {a.writes} writes, {a.buckets} buckets")
        print(f"fixed-bucket writes:        {t_fixed:7.2f} s  ({n / t_fixed:,.0f} rows/s)  [baseline]")
        print(f"postpone writes:            {t_post:7.2f} s  ({n / t_post:,.0f} rows/s)  "
              f"x{t_fixed / t_post:.2f} faster")
        print(f"postpone compaction:        {t_compact:7.2f} s  ({n / t_compact:,.0f} rows/s)")
        print(f"postpone writes+compaction: {t_post + t_compact:7.2f} s  vs baseline {t_fixed:.2f} s")
        print(f"same rows read: {same}")
    finally:
        if not a.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

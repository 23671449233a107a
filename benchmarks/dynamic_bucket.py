"""Dynamic bucket mode: the cost of assigning buckets through the HASH index.

1. Assignment alone: ``PartitionIndex.assign`` (numpy: searchsorted over the sorted hashes, new
   keys poured into bucket capacities) against a per-row Python loop doing what Java's
   PartitionIndex does (dict lookup, first non-full bucket, else a new one), same keys, same
   result checked; half the keys known, half new.
2. Through the table: a batch write + commit of N primary-key rows into a bucket -1 table
   (``dynamic-bucket.target-row-num`` chosen so it ends with B buckets) against a fixed-bucket
   table with the same B buckets, then an update of 20 % of the keys plus 10 % new ones
   (the index is loaded from storage, the changed buckets' index files rewritten).

    python benchmarks/dynamic_bucket.py [--keys 2000000] [--rows 1000000] [--buckets 4] [--dir /tmp/x]
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
from impl.write.dynamic_bucket import PartitionIndex


def per_row_assign(owner: dict[int, int], counts: dict[int, int], hashes: list[int], target: int) -> list[int]:
    """Java's PartitionIndex.assign, one key at a time (the baseline)."""
    out = []
    for h in hashes:
        b = owner.get(h)
        if b is None:
            b = next((x for x in sorted(counts) if counts[x] < target), None)
            if b is None:
                b = next(x for x in range(len(counts) + 1) if x not in counts)
            counts[b] = counts.get(b, 0) + 1
            owner[h] = b
        out.append(b)
    return out


def bench_assign(n: int) -> None:
    rng = np.random.default_rng(1)
    known = np.unique(rng.integers(-(2**31), 2**31 - 1, size=n // 2, dtype=np.int64).astype(np.int32))
    target = max(1, len(known) // 8)
    buckets = (np.arange(len(known)) // target).astype(np.int32)
    fresh = rng.integers(-(2**31), 2**31 - 1, size=n - n // 2, dtype=np.int64).astype(np.int32)
    keys = rng.permutation(np.concatenate([known, fresh]))

    idx = PartitionIndex.of(known, buckets, target)
    t0 = time.perf_counter()
    got = idx.assign(keys)
    t_np = time.perf_counter() - t0

    owner = dict(zip(known.tolist(), buckets.tolist(), strict=True))
    counts: dict[int, int] = {}
    for b in buckets.tolist():
        counts[b] = counts.get(b, 0) + 1
    key_list = keys.tolist()
    t0 = time.perf_counter()
    want = per_row_assign(owner, counts, key_list, target)
    t_py = time.perf_counter() - t0
    assert got.tolist() == want, "numpy assignment differs from the per-row baseline"
    print(f"assign {len(keys):,} keys (half known, {len(np.unique(buckets))} buckets, target {target:,}):")
    print(f"  numpy PartitionIndex.assign   {t_np * 1000:9.1f} ms  {len(keys) / t_np / 1e6:7.2f} M keys/s")
    print(f"  per-row Python (baseline)     {t_py * 1000:9.1f} ms  {len(keys) / t_py / 1e6:7.2f} M keys/s")
    print(f"  speed-up                      {t_py / t_np:9.1f} x   (same buckets: checked)")


def _rows(ids: np.ndarray, tag: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(np.full(len(ids), tag), pa.int64())})


def bench_table(root: str, n: int, buckets: int) -> None:
    cat = impl.Catalog(root)
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    dyn = cat.create_table("db.dyn", schema=schema, primary_keys=["id"],
                           options={"dynamic-bucket.target-row-num": str(-(-n // buckets)), "write-only": "true"})
    fixed = cat.create_table("db.fixed", schema=schema, primary_keys=["id"],
                             options={"bucket": str(buckets), "write-only": "true"})
    rng = np.random.default_rng(2)
    first = rng.permutation(n).astype(np.int64)
    update = np.concatenate([rng.choice(n, n // 5, replace=False), np.arange(n, n + n // 10)]).astype(np.int64)
    figures = {}
    for name, t in (("fixed", fixed), ("dynamic", dyn)):
        t0 = time.perf_counter()
        t.write_arrow(_rows(first, 1))
        t1 = time.perf_counter()
        t.write_arrow(_rows(update, 2))
        t2 = time.perf_counter()
        figures[name] = (t1 - t0, t2 - t1)
    n_buckets = len({s.bucket for s in dyn.new_read_builder().new_scan().plan().splits()})
    print(f"table write, {n:,} rows then {len(update):,} (20 % updates, 10 % new keys), {buckets} buckets "
          f"(dynamic ended with {n_buckets}):")
    for name, (a, b) in figures.items():
        print(f"  {name:8s} first {a:6.2f} s ({n / a / 1e6:5.2f} M rows/s)   update {b:6.2f} s "
              f"({len(update) / b / 1e6:5.2f} M rows/s)")
    print(f"  dynamic / fixed: first {figures['dynamic'][0] / figures['fixed'][0]:.2f}x, "
          f"update {figures['dynamic'][1] / figures['fixed'][1]:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=2_000_000)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    bench_assign(args.keys)
    root = tempfile.mkdtemp(dir=args.dir)
    try:
        bench_table(root, args.rows, args.buckets)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

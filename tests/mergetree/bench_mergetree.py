"""Benchmark of the merge tree: 1M rows (id int64, k string, v double, ts int64) as 4 buckets x 250k.

Run: python tests/mergetree/bench_mergetree.py  (figures only; no asserts on timing)

Scenarios per bucket:
  insert     one write of 250k unique keys + prepare_commit(wait) -> one level-0 file
  read       merge_read of that file (no overlap: read + drop retractions, no merge)
  upsert-wo  write-only: 4 writes of 250k rows (keys drawn from 250k, mostly updates), each
             followed by prepare_commit -> 5 overlapping level-0 runs
  read-lsm   merge_read of those 5 runs (1.25M rows merged into 250k)
  full       compact(full=True) + prepare_commit(True) of the 5 runs; then merge_read
  upsert     same 4 rounds with automatic background compaction (prepare_commit(False) each
             round, prepare_commit(True) at the end)
"""

from __future__ import annotations

import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, __file__.rsplit("/", 1)[0])

from mergetree_helpers import Table, make_schema  # noqa: E402

ROWS_PER_BUCKET = 250_000
BUCKETS = 4


def data(rng, n, key_space):
    ids = rng.integers(0, key_space, n) if key_space else rng.permutation(n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "k": pa.array(np.char.add("key-", ids.astype(str)).tolist(), pa.string()),
        "v": pa.array(rng.random(n)),
        "ts": pa.array(np.arange(n, dtype=np.int64)),
    })


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    rng = np.random.default_rng(0)
    inserts = [data(rng, ROWS_PER_BUCKET, None) for _ in range(BUCKETS)]
    updates = [[data(rng, ROWS_PER_BUCKET, ROWS_PER_BUCKET) for _ in range(4)] for _ in range(BUCKETS)]
    keys = ("insert", "read", "upsert-wo", "read-lsm", "full", "read-full", "upsert", "read-auto")
    totals = {k: 0.0 for k in keys}
    lsm_files = 0
    for b in range(BUCKETS):
        for mode in ("write-only", "auto"):
            opts = {"bucket": str(BUCKETS), "write-only": str(mode == "write-only").lower()}
            t = Table(tempfile.mkdtemp(), make_schema(), opts)
            w = t.writer()

            # bound as defaults: each closure runs within this iteration, with its w, t and b
            def insert(w=w, t=t, b=b):
                w.write(inserts[b])
                t.apply(w.prepare_commit(True))

            def upsert(w=w, t=t, b=b):
                for u in updates[b]:
                    w.write(u)
                    t.apply(w.prepare_commit(False))
                t.apply(w.prepare_commit(True))

            def full(w=w, t=t):
                w.compact(full=True)
                t.apply(w.prepare_commit(True))

            dt = timed(insert)[0]
            if mode == "write-only":
                totals["insert"] += dt
                dt, out = timed(t.read)
                assert out.num_rows == ROWS_PER_BUCKET
                totals["read"] += dt
                totals["upsert-wo"] += timed(upsert)[0]
                lsm_files += len(t.live)
                dt, out = timed(t.read)
                assert out.num_rows == ROWS_PER_BUCKET
                totals["read-lsm"] += dt
                totals["full"] += timed(full)[0]
                assert len({f.level for f in t.live.values()}) == 1
                dt, out = timed(t.read)
                assert out.num_rows == ROWS_PER_BUCKET
                totals["read-full"] += dt
            else:
                totals["upsert"] += timed(upsert)[0]
                dt, out = timed(t.read)
                assert out.num_rows == ROWS_PER_BUCKET
                totals["read-auto"] += dt
            w.close()

    n = ROWS_PER_BUCKET * BUCKETS
    print(f"{BUCKETS} buckets x {ROWS_PER_BUCKET:,} rows (id int64, k string, v double, ts int64)")
    print(f"  write+prepare_commit, 1M inserts         : {totals['insert']:6.2f} s  ({n / totals['insert'] / 1e6:.2f} M rows/s)")
    print(f"  merge_read, 1M rows in 4 files           : {totals['read']:6.2f} s  ({n / totals['read'] / 1e6:.2f} M rows/s)")
    print(f"  write-only upserts, 4M rows              : {totals['upsert-wo']:6.2f} s  ({4 * n / totals['upsert-wo'] / 1e6:.2f} M rows/s)")
    print(f"  merge_read of {lsm_files} overlapping runs (5M rows) : {totals['read-lsm']:6.2f} s  ({5 * n / totals['read-lsm'] / 1e6:.2f} M rows/s in)")
    print(f"  full compaction of those 5M rows         : {totals['full']:6.2f} s")
    print(f"  merge_read after full compaction         : {totals['read-full']:6.2f} s")
    print(f"  upserts with auto compaction, 4M rows    : {totals['upsert']:6.2f} s  ({4 * n / totals['upsert'] / 1e6:.2f} M rows/s)")
    print(f"  merge_read after auto compaction         : {totals['read-auto']:6.2f} s")


if __name__ == "__main__":
    main()

"""Deletion vectors: merge-free reads and the cost of lookup compaction.

Also times the write of the same workload with ``changelog-producer`` lookup (with and
without deletion vectors).

Writes the same primary-key workload (``--rows`` rows over ``--commits`` batch commits,
30 % of each commit's rows update earlier keys, 4 buckets) into three tables:

- ``dv``: ``deletion-vectors.enabled`` (every commit forces level 0 up with lookup and marks
  superseded rows in deletion vectors);
- ``plain``: the same table without deletion vectors (universal compaction, merge on read);
- ``runs``: without deletion vectors and ``write-only`` (no compaction: one sorted run per
  commit per bucket, so its read merges ``--commits`` runs).

Then times, best of ``--repeat``:

- write + compaction of ``dv`` against ``plain`` (the cost of lookup and vectors);
- read of the compacted ``dv`` table (no merge, vectors applied) against a raw pyarrow read of
  the very same data files (``pq.read_table`` of each, value columns, no vectors: the floor);
  goal <= 1.2x;
- read of ``dv`` against merge-on-read of ``plain`` and of ``runs`` (same rows).

And the same for the partial-update engine (``pu_dv`` against ``pu_plain``): with deletion
vectors its compaction reads each updated key's current row from levels >= 1 (lookup with whole
rows) and merges it into the new one. The workload has no nulls, so its rows equal deduplicate's.

Every read is checked to return the same number of rows and the same sum of ``v``.

    python benchmarks/deletion_vectors.py                 # 1,000,000 rows, 5 commits
    python benchmarks/deletion_vectors.py --rows 200000   # a quick run
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import impl
from impl.read.scan import SnapshotReader
from impl.store.core import bucket_index_files

GOAL = 1.2
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string()), ("x", pa.float64())])


def batches(rows: int, commits: int, seed: int = 15) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    per = rows // commits
    out, next_id = [], 0
    for c in range(commits):
        n_upd = int(per * 0.3) if c else 0
        new = np.arange(next_id, next_id + per - n_upd, dtype=np.int64)
        next_id += len(new)
        upd = rng.integers(0, max(next_id, 1), n_upd).astype(np.int64)
        ids = np.concatenate([new, upd])
        rng.shuffle(ids)
        v = rng.integers(0, 1_000_000, len(ids)).astype(np.int64)
        out.append(pa.table({"id": ids, "v": v, "s": pa.array([f"s{i % 1000}" for i in range(len(ids))]),
                             "x": rng.random(len(ids))}, schema=SCHEMA))
    return out


def write_table(root: str, name: str, options: dict, data: list[pa.Table]) -> tuple[object, float]:
    cat = impl.Catalog(root)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(f"db.{name}", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4", **options})
    start = time.perf_counter()
    for batch in data:
        wb = t.new_batch_write_builder()
        with wb.new_write() as w:
            w.write_arrow(batch)
            wb.new_commit().commit(w.prepare_commit())
    return t, time.perf_counter() - start


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def check(name: str, t: pa.Table, want_rows: int, want_sum: int) -> None:
    got_sum = pc.sum(t["v"]).as_py()
    if t.num_rows != want_rows or got_sum != want_sum:
        raise SystemExit(f"{name}: {t.num_rows} rows / sum {got_sum}, expected {want_rows} / {want_sum}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="dv-bench-")
    print(f"load average {os.getloadavg()[0]:.2f}; rows {args.rows:,}, commits {args.commits}, 4 buckets; {root}")
    try:
        data = batches(args.rows, args.commits)
        final: dict[int, int] = {}
        for b in data:
            final.update(zip(b["id"].to_pylist(), b["v"].to_pylist(), strict=True))
        want_rows, want_sum = len(final), sum(final.values())

        dv, t_dv = write_table(root, "dv", {"deletion-vectors.enabled": "true"}, data)
        plain, t_plain = write_table(root, "plain", {}, data)
        runs, t_runs = write_table(root, "runs", {"write-only": "true"}, data)
        _, t_cl = write_table(root, "lookup_cl", {"changelog-producer": "lookup"}, data)
        _, t_dv_cl = write_table(root, "dv_lookup_cl",
                                 {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"}, data)
        pu = {"merge-engine": "partial-update"}
        pu_dv, t_pu_dv = write_table(root, "pu_dv", {**pu, "deletion-vectors.enabled": "true"}, data)
        pu_plain, t_pu_plain = write_table(root, "pu_plain", pu, data)
        print("\nwrite + compaction (all commits)")
        print(f"  deletion vectors (lookup)     {t_dv:8.2f} s   {t_dv / t_plain:5.2f}x of plain")
        print(f"  plain (universal compaction)  {t_plain:8.2f} s   (baseline)")
        print(f"  write-only (no compaction)    {t_runs:8.2f} s")
        print(f"  changelog-producer lookup     {t_cl:8.2f} s   {t_cl / t_plain:5.2f}x of plain")
        print(f"  dv + lookup changelog         {t_dv_cl:8.2f} s   {t_dv_cl / t_plain:5.2f}x of plain")
        print(f"  partial-update, dv            {t_pu_dv:8.2f} s   {t_pu_dv / t_pu_plain:5.2f}x of partial-update plain")
        print(f"  partial-update, plain         {t_pu_plain:8.2f} s   (baseline of the line above)")

        entries = SnapshotReader(dv.core).live_entries(dv.latest_snapshot())
        paths = [dv.core.paths.data_file_path(dv.core.partition_cache.path(e.partition), e.bucket, e.file.file_name)
                 for e in entries if e.file.level >= 1]
        ranges = [r for fs in bucket_index_files(dv.core, dv.latest_snapshot()).values()
                  for f in fs for r in f.deletion_vector_ranges or ()]
        index, deleted = len(ranges), sum(r.cardinality or 0 for r in ranges)
        print(f"\ndv table: {len(paths)} data files at levels >= 1, {index} deletion vectors, {deleted:,} rows deleted")

        cols = list(SCHEMA.names)
        t_read_dv, out = best(lambda: dv.to_arrow(), args.repeat)
        check("dv read", out, want_rows, want_sum)
        # multi-threaded like impl's read (impl reads the files of a bucket concurrently)
        t_raw, raw = best(lambda: pq.ParquetDataset(paths).read(columns=cols, use_threads=True), args.repeat)
        t_plain_read, out = best(lambda: plain.to_arrow(), args.repeat)
        check("plain read", out, want_rows, want_sum)
        t_runs_read, out = best(lambda: runs.to_arrow(), args.repeat)
        check("runs read", out, want_rows, want_sum)
        ratio = t_read_dv / t_raw
        print(f"\nread (best of {args.repeat})")
        print(f"  dv table (no merge, vectors)  {t_read_dv:8.3f} s   {ratio:5.2f}x raw  "
              f"[goal <= {GOAL}x: {'PASS' if ratio <= GOAL else 'MISS'}]")
        print(f"  raw pyarrow read, same files  {t_raw:8.3f} s   (baseline; {raw.num_rows:,} rows incl. deleted)")
        print(f"  plain, merge on read          {t_plain_read:8.3f} s   dv time / plain time {t_read_dv / t_plain_read:5.2f}")
        print(f"  write-only runs, merge        {t_runs_read:8.3f} s   dv time / runs time  {t_read_dv / t_runs_read:5.2f}")
        t_pu_dv_read, out = best(lambda: pu_dv.to_arrow(), args.repeat)
        check("partial-update dv read", out, want_rows, want_sum)
        t_pu_plain_read, out = best(lambda: pu_plain.to_arrow(), args.repeat)
        check("partial-update plain read", out, want_rows, want_sum)
        print(f"  partial-update dv (no merge)  {t_pu_dv_read:8.3f} s   dv time / plain time "
              f"{t_pu_dv_read / t_pu_plain_read:5.2f}")
        print(f"  partial-update, merge on read {t_pu_plain_read:8.3f} s   (baseline of the line above)")
        levels = sorted({e.file.level for e in SnapshotReader(plain.core).live_entries(plain.latest_snapshot())})
        print(f"  (plain's files sit at levels {levels}: a single run per bucket reads without a merge too)")
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Merge-on-read of a primary-key table with 10 sorted runs per bucket: impl's read against the
general merge (the baseline, measured in the same run on the same files).

The general merge is what the read did before issue 16's fast path: decode every KV column
(``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, every user column), sort with Arrow's
multi-column ``sort_indices`` on (key, sequence number), merge, project. impl's read
(``merge_read``, bucket by bucket, and the streamed ``to_arrow_batch_reader``) must return the
same rows; the script checks it.

Cases: deduplicate with a BIGINT key (the table of ``table_vs_pypaimon.py``), deduplicate
with a STRING key (no fast sort: only the column savings apply), and partial-update with a
BIGINT key. Both CPU time (all threads of this process, steadier on a shared machine) and
wall time are printed, median of ``--repeat`` runs, with the load average.

    python benchmarks/merge_on_read.py [--rows 1000000] [--commits 10] [--repeat 5] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

import impl  # noqa: E402
from impl.mergetree import KVLayout, MergeSpec, merge_read, merge_sorted  # noqa: E402
from impl.mergetree.kv import VALUE_KIND, retract_mask  # noqa: E402
from impl.mergetree.read import read_kv_tables  # noqa: E402

BUCKETS = 4
UPDATE_FRACTION = 0.3
CASES = [("deduplicate, BIGINT key", "int", {}),
         ("deduplicate, STRING key", "str", {}),
         ("partial-update, BIGINT key", "int", {"merge-engine": "partial-update"})]


def build(warehouse: str, name: str, key: str, options: dict, rows: int, commits: int):
    """A write-only table of ``commits`` commits (30 % of each later commit updates earlier keys)."""
    rng = np.random.default_rng(7)
    cat = impl.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    key_type = pa.int64() if key == "int" else pa.string()
    schema = pa.schema([("id", key_type), ("k", pa.string()), ("v", pa.float64()), ("ts", pa.int64())])
    t = cat.create_table(f"db.{name}", schema=schema, primary_keys=["id"],
                         options={"bucket": str(BUCKETS), "write-only": "true", **options})
    per = rows // commits
    ids = rng.permutation(rows * 2)[: rows] * 7 + 3
    used = 0
    for c in range(commits):
        n_upd = 0 if c == 0 else int(per * UPDATE_FRACTION)
        fresh = ids[used:used + per - n_upd]
        used += len(fresh)
        upd = rng.choice(ids[:used - len(fresh)], size=n_upd, replace=False) if n_upd else np.empty(0, np.int64)
        batch = np.concatenate([fresh, upd])
        keys = pa.array(batch) if key == "int" else pa.array(np.char.add("user-", batch.astype("U12")).astype(object))
        t.write_arrow(pa.table({
            "id": keys,
            "k": pa.array(np.char.add("key-", rng.integers(0, 10**9, len(batch)).astype("U10")).astype(object)),
            "v": pa.array(rng.normal(size=len(batch))),
            "ts": pa.array(np.arange(len(batch), dtype=np.int64) + c * 10**6)}, schema=schema))
    return cat.get_table(f"db.{name}")


def general_read(t, split) -> pa.Table:
    """The baseline: every KV column decoded, Arrow's full sort, merge, project."""
    layout = KVLayout(t.schema, t.schema_manager)
    spec = MergeSpec.from_schema(t.schema, t.core.merge_tree_options)
    kv = read_kv_tables(t.file_io, t.core.paths.bucket_dir(split.partition_path, split.bucket), layout, list(split.files))
    merged = merge_sorted(kv.take(pc.sort_indices(kv, sort_keys=spec.sort_keys())), spec, True, final=True)
    if merged.num_rows:
        merged = merged.filter(pa.array(~retract_mask(merged.column(VALUE_KIND))))
    return merged.select(list(layout.value_names))


def impl_read(t, split) -> pa.Table:
    return merge_read(t.file_io, t.core.paths, t.schema, t.core.merge_tree_options, split.partition_path, split.bucket,
                      list(split.files), schemas=t.schema_manager)


def streamed(t) -> pa.Table:
    rb = t.new_read_builder()
    return rb.new_read().to_arrow_batch_reader(rb.new_scan().plan().splits()).read_all()


def measure(fn, repeat: int) -> tuple[float, float]:
    """(median CPU seconds, median wall seconds) of ``fn``."""
    cpu, wall = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="paimon-mor-")
    print(f"{args.rows:,} rows in {args.commits} write-only commits, {BUCKETS} buckets; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'case':28} {'read':20} {'CPU ms':>8} {'wall ms':>8} {'CPU vs general':>15}")
    try:
        for i, (label, key, options) in enumerate(CASES):
            t = build(work, f"t{i}", key, options, args.rows, args.commits)
            splits = t.new_read_builder().new_scan().plan().splits()
            runs = max(len(s.files) for s in splits)
            expected = pa.concat_tables([general_read(t, s) for s in splits])
            got = pa.concat_tables([impl_read(t, s) for s in splits])
            assert got.equals(expected), f"{label}: merge_read differs from the general merge"
            out = streamed(t)
            assert out.equals(expected.cast(out.schema)), f"{label}: the streamed read differs from the general merge"
            base_cpu, base_wall = measure(lambda t=t, splits=splits: [general_read(t, s) for s in splits], args.repeat)
            rows = [("general (baseline)", base_cpu, base_wall)]
            rows.append(("merge_read", *measure(lambda t=t, splits=splits: [impl_read(t, s) for s in splits],
                                                  args.repeat)))
            rows.append(("table.to_arrow()", *measure(lambda t=t: t.to_arrow(), args.repeat)))
            rows.append(("batch reader", *measure(lambda t=t: streamed(t), args.repeat)))
            for name, cpu, wall in rows:
                print(f"{label if name.startswith('general') else '':28} {name:20} {cpu * 1000:8.1f} {wall * 1000:8.1f} "
                      f"{base_cpu / cpu:14.2f}x")
            print(f"{'':28} ({expected.num_rows:,} rows, up to {runs} files per bucket, "
                  f"load {os.getloadavg()[0]:.1f})")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""What tags cost expiration and tag deletion.

An append table gets N one-file commits; every K-th snapshot is tagged (T tags). Measured in
the same run, each on a fresh copy of the table:

- ``expire 1``: expiring one snapshot (``max_deletes=1``) on the untagged table (the
  baseline), on the tagged table (reads only the skipping tags: the newest at or before the
  expired range and those inside it), and the naive rule (reading every tag's files first);
- ``expire all``: expiring all but the latest snapshot, same three cases;
- ``delete tag``: deleting the oldest tag after everything expired (checks every remaining
  tag and snapshot), against ``remove_orphan_files`` on the same table (the same full scan).

Figures: wall milliseconds (median of ``--repeat``) and storage GET requests.

    python benchmarks/tags.py [--commits 200] [--every 5] [--repeat 3] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import pyarrow as pa

import impl
from impl.maintenance.cleanup import all_tags, tag_names_used

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])


def build(root: str, commits: int, every: int) -> str:
    cat = impl.Catalog(root)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    for i in range(commits):
        t.write_arrow(pa.table({"dt": [f"d{i % 4}"], "id": [i]}, schema=SCHEMA))
        if every and (i + 1) % every == 0:
            t.create_tag(f"tag-{i + 1:05d}", i + 1)
    # compactions make later deltas delete earlier files, so expiration has data to delete
    t.compact(full=True)
    return root


def measure(template: str, work, repeat: int) -> tuple[float, int]:
    times, gets = [], 0
    for _ in range(repeat):
        root = tempfile.mkdtemp(prefix="tags-bench-")
        shutil.rmtree(root)
        shutil.copytree(template, root)
        try:
            t = impl.Catalog(root).get_table("db.t")
            before = t.file_io.requests.snapshot()
            start = time.perf_counter()
            work(t)
            times.append((time.perf_counter() - start) * 1000)
            gets = t.file_io.requests.since(before).get("GET", 0)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return statistics.median(times), gets


def naive(max_deletes: int | None):
    """The rule without skipping: read every tag's files before expiring."""
    def work(t):
        tag_names_used(t.core, (g for _, g in all_tags(t.core)))
        expire(max_deletes)(t)
    return work


def expire(max_deletes: int | None):
    def work(t):
        t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=max_deletes or 10**6)
    return work


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="tags-bench-")
    print(f"load average {os.getloadavg()[0]:.2f}; {args.commits} commits, a tag every {args.every} snapshots "
          f"({args.commits // args.every} tags)")
    plain = build(os.path.join(base, "plain"), args.commits, 0)
    tagged = build(os.path.join(base, "tagged"), args.commits, args.every)
    rows = []
    for label, n in (("expire 1", 1), ("expire all", None)):
        b_ms, b_get = measure(plain, expire(n), args.repeat)
        w_ms, w_get = measure(tagged, expire(n), args.repeat)
        n_ms, n_get = measure(tagged, naive(n), args.repeat)
        rows.append((f"{label}: untagged (baseline)", b_ms, b_get))
        rows.append((f"{label}: tagged, skipping tags", w_ms, w_get))
        rows.append((f"{label}: tagged, every tag read", n_ms, n_get))

    oldest = f"tag-{args.every:05d}"
    d_ms, d_get = measure(tagged, lambda t: (expire(None)(t), t.delete_tag(oldest)), args.repeat)
    o_ms, o_get = measure(tagged, lambda t: (expire(None)(t), t.remove_orphan_files(older_than_millis=0)),
                          args.repeat)
    e_ms, e_get = measure(tagged, expire(None), args.repeat)
    rows.append(("expire all, then delete the oldest tag", d_ms, d_get))
    rows.append(("expire all, then remove orphans (same full scan)", o_ms, o_get))
    rows.append(("expire all alone (to subtract)", e_ms, e_get))
    print(f"{'case':<52} {'ms':>9} {'GETs':>7}")
    for label, ms, gets in rows:
        print(f"{label:<52} {ms:9.1f} {gets:7d}")
    if not args.dir:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

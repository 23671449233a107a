"""Scan planning over a large table: impl vs pypaimon 2.1.0 (and pypaimon-rust 0.4.0) on the same table.

Builds (once, reused under ``--dir``) an append table partitioned by ``dt`` with fixed buckets,
written as a time-partitioned ingestion: commit ``c`` adds ``files / commits`` one-row files to
partition ``c * partitions // commits`` (one file per bucket), so every partition gets
``commits / partitions`` consecutive commits. The commits go through impl's ordinary table write
and commit (manifest merging included), so the table is a real Paimon table; pypaimon plans it.

Then times, best of ``--repeat``:

- impl full-scan plan and one-partition plan (``dt = <middle partition>``), cold (a fresh
  catalog and table each run: nothing cached, manifests read from disk) and warm (the same
  table planned again: manifests come from its entry cache);
- pypaimon's full-scan and one-partition plan in its own venv (a fresh catalog per run; timed
  inside its process, excluding its import); pypaimon-rust's the same way in its venv
  (``--no-rust`` leaves it out; its splits report rows, one per file here);

and prints the manifests each impl plan read and skipped by partition statistics, the GET
requests it made, the manifest layout of the snapshot, ratios and PASS / MISS against the
goals of issue 31 (full scan >= 12x pypaimon, one partition >= 15x).

    python benchmarks/planning.py                 # 20,000 files / 400 commits / 100 partitions
    python benchmarks/planning.py --large         # 100,000 files / 2,000 commits / 100 partitions
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "_support"))

import impl  # noqa: E402
from impl.bucket.routing import row_hashes  # noqa: E402
from impl.data.binary_row import decode_row  # noqa: E402

GOALS = {"full": 12.0, "one": 15.0}  # issue 31: times faster than pypaimon, cold
TABLE = "db.planning"
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def partition_name(i: int) -> str:
    return f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}" if i < 12 * 28 else f"p{i:05d}"


def _ids_one_per_bucket(table, buckets: int) -> np.ndarray:
    """One id per bucket, so a commit of ``buckets`` rows writes exactly ``buckets`` files."""
    cand = np.arange(buckets * 200, dtype=np.int64)
    h = np.abs(np.fmod(row_hashes([pa.array(cand)], [table.schema.field("id").type]).astype(np.int64), buckets))
    ids = []
    for b in range(buckets):
        hits = np.flatnonzero(h == b)
        if not len(hits):  # pragma: no cover - 200 candidates per bucket always cover every bucket
            raise RuntimeError(f"no id hashes to bucket {b}")
        ids.append(cand[hits[0]])
    return np.array(ids, dtype=np.int64)


def build(warehouse: str, files: int, commits: int, partitions: int, manifest_target: str) -> dict:
    params = {"files": files, "commits": commits, "partitions": partitions, "manifest_target": manifest_target}
    marker = Path(warehouse) / "planning-table.json"
    if marker.exists() and json.loads(marker.read_text()) == params:
        print(f"reusing the table under {warehouse}")
        return params
    if marker.exists() or (Path(warehouse) / "db.db").exists():
        raise SystemExit(f"{warehouse} holds another table: pass an empty --dir")
    per_commit = files // commits
    cat = impl.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(TABLE, schema=SCHEMA, partition_keys=["dt"],
                         options={"bucket": str(per_commit), "bucket-key": "id",
                                  "manifest.target-file-size": manifest_target})
    ids = _ids_one_per_bucket(t, per_commit)
    t0 = time.perf_counter()
    for c in range(commits):
        dt = partition_name(c * partitions // commits)
        t.write_arrow(pa.table({"dt": [dt] * per_commit, "id": ids, "v": np.full(per_commit, c)}, schema=SCHEMA))
        if (c + 1) % max(1, commits // 10) == 0:
            print(f"  built {c + 1}/{commits} commits in {time.perf_counter() - t0:.0f} s", flush=True)
    marker.write_text(json.dumps(params))
    return params


def layout(warehouse: str) -> dict:
    """Manifests of the latest snapshot: count, entries, partitions each covers."""
    t = impl.Catalog(warehouse).get_table(TABLE)
    snap = t.latest_snapshot()
    types = t.core.partition_cache.types
    out = {}
    for kind, metas in (("base", t.core.manifest_list.read_base_manifests(snap)),
                        ("delta", t.core.manifest_list.read_delta_manifests(snap))):
        spans = []
        for m in metas:
            lo = decode_row(m.partition_stats.min_values, types)[0]
            hi = decode_row(m.partition_stats.max_values, types)[0]
            spans.append((m.num_added_files + m.num_deleted_files, m.file_size, lo, hi))
        out[kind] = spans
    return out


def plan_impl(warehouse: str, dt: str | None, repeat: int) -> dict:
    best_cold = best_warm = float("inf")
    info: dict = {}
    for _ in range(repeat):
        t = impl.Catalog(warehouse).get_table(TABLE)
        rb = t.new_read_builder()
        if dt is not None:
            rb = rb.with_filter(rb.new_predicate_builder().equal("dt", dt))
        before = t.file_io.requests.snapshot()
        t0 = time.perf_counter()
        scan = rb.new_scan()
        splits = scan.plan().splits()
        best_cold = min(best_cold, time.perf_counter() - t0)
        gets = t.file_io.requests.since(before).get("GET", 0)
        t1 = time.perf_counter()
        warm = rb.new_scan().plan().splits()
        best_warm = min(best_warm, time.perf_counter() - t1)
        info = {"splits": len(splits), "files": sum(len(s.files) for s in splits),
                "warm_files": sum(len(s.files) for s in warm), "gets": gets,
                # counters added with this benchmark (absent on older checkouts: None)
                "manifests_read": getattr(scan.reader, "manifests_read", None),
                "manifests_pruned": getattr(scan.reader, "manifests_pruned", None)}
    return {"cold": best_cold, "warm": best_warm, **info}


PYPAIMON_PLAN = """
import time
from pypaimon import CatalogFactory
out = {}
for label, dt in (("full", None), ("one", params["dt"])):
    best = float("inf")
    for _ in range(params["repeat"]):
        catalog = CatalogFactory.create({"warehouse": params["warehouse"]})
        table = catalog.get_table(params["table"])
        rb = table.new_read_builder()
        if dt is not None:
            rb = rb.with_filter(rb.new_predicate_builder().equal("dt", dt))
        t0 = time.perf_counter()
        splits = rb.new_scan().plan().splits()
        best = min(best, time.perf_counter() - t0)
    out[label] = {"time": best, "splits": len(splits), "files": sum(len(s.files) for s in splits)}
result = out
"""

# pypaimon-rust 0.4.0: a split reports rows, not files; each file of this table holds one row
RUST_PLAN = """
import time
from pypaimon_rust.datafusion import PaimonCatalog
out = {}
for label, dt in (("full", None), ("one", params["dt"])):
    best = float("inf")
    for _ in range(params["repeat"]):
        table = PaimonCatalog({"warehouse": params["warehouse"]}).get_table(params["table"])
        rb = table.new_read_builder()
        if dt is not None:
            rb = rb.with_filter({"method": "equal", "field": "dt", "literals": [dt]})
        t0 = time.perf_counter()
        splits = rb.new_scan().plan().splits()
        best = min(best, time.perf_counter() - t0)
    out[label] = {"time": best, "splits": len(splits), "files": sum(s.row_count() for s in splits)}
result = out
"""


def _rust_cells(rust: dict | None, key: str, r: dict) -> str:
    """pypaimon-rust's plan time and its ratio to impl's cold plan (a file count that differs is flagged)."""
    if rust is None:
        return ""
    q = rust[key]
    same = "" if q["files"] == r["files"] else f" (pypaimon-rust: {q['files']} files!)"
    return f"{q['time'] * 1e3:13.1f}ms{q['time'] / r['cold']:9.1f}x{same}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=None, help="warehouse directory (the table is built once and reused)")
    ap.add_argument("--large", action="store_true", help="the issue's size: 100,000 files, 2,000 commits")
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--commits", type=int, default=400)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--manifest-target", default="8mb",
                    help="the table's manifest.target-file-size (Paimon's default 8mb)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-pypaimon", action="store_true")
    ap.add_argument("--no-rust", action="store_true", help="leave pypaimon-rust 0.4.0 out")
    a = ap.parse_args()
    if a.large:
        a.files, a.commits = 100_000, 2_000
    if a.files % a.commits or a.commits % a.partitions:
        raise SystemExit("--files must be a multiple of --commits, and --commits of --partitions")
    warehouse = a.dir or f"/tmp/paimon-planning-{a.files}-{a.commits}-{a.partitions}-{a.manifest_target}"
    print(f"load average {os.getloadavg()[0]:.1f}; table: {a.files} files, {a.commits} commits, "
          f"{a.partitions} partitions, manifest.target-file-size {a.manifest_target}; {warehouse}")
    build(warehouse, a.files, a.commits, a.partitions, a.manifest_target)

    lay = layout(warehouse)
    for kind, spans in lay.items():
        entries = sum(s[0] for s in spans)
        print(f"{kind} manifests: {len(spans)}, {entries} entries, {sum(s[1] for s in spans) / 1e6:.1f} MB")
        for n, size, lo, hi in spans[:12]:
            print(f"  {n:7d} entries {size / 1e3:8.0f} kB  partitions {lo} .. {hi}")
        if len(spans) > 12:
            print(f"  ... {len(spans) - 12} more")

    one = partition_name(a.partitions // 2)
    impl_full = plan_impl(warehouse, None, a.repeat)
    impl_one = plan_impl(warehouse, one, a.repeat)
    pp = None
    if not a.no_pypaimon:
        from pypaimon_env import run_pypaimon
        pp = run_pypaimon(PYPAIMON_PLAN, warehouse=warehouse, table=TABLE, dt=one, repeat=a.repeat)
    rust = None
    if not a.no_rust:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from pypaimon_rust_env import run_pypaimon_rust
        rust = run_pypaimon_rust(RUST_PLAN, warehouse=warehouse, table=TABLE, dt=one, repeat=a.repeat)

    total_manifests = sum(len(s) for s in lay.values())
    print()
    print(f"{'plan':<22}{'impl cold':>11}{'impl warm':>11}{'pypaimon':>11}{'ratio':>8}  goal"
          f"   files  manifests read / pruned / total   GETs{'pypaimon-rust':>15}{'rust/impl':>10}")
    for label, r, key in (("full scan", impl_full, "full"), (f"dt = {one}", impl_one, "one")):
        p = pp[key] if pp else None
        ratio = p["time"] / r["cold"] if p else None
        verdict = "" if ratio is None else f"{'PASS' if ratio >= GOALS[key] else 'MISS'} {GOALS[key]:.0f}x"
        same = "" if p is None or p["files"] == r["files"] else f" (pypaimon: {p['files']} files!)"
        ptime = f"{p['time'] * 1e3:9.1f}ms" if p else f"{'-':>11}"
        rtxt = f"{ratio:7.1f}x" if ratio is not None else f"{'-':>8}"
        print(f"{label:<22}{r['cold'] * 1e3:9.1f}ms{r['warm'] * 1e3:9.1f}ms{ptime}{rtxt}  {verdict:<9}"
              f"{r['files']:7d}{same}  {r['manifests_read']} / {r['manifests_pruned']} / {total_manifests}"
              f"{'':>14}{r['gets']}{_rust_cells(rust, key, r)}")
        if r["warm_files"] != r["files"]:
            raise SystemExit(f"{label}: the warm plan returned {r['warm_files']} files, the cold one {r['files']}")
    per_partition = a.files // a.partitions
    if impl_one["files"] != per_partition or impl_full["files"] != a.files:
        raise SystemExit(f"impl planned {impl_full['files']} / {impl_one['files']} files, "
                         f"expected {a.files} / {per_partition}")


if __name__ == "__main__":
    main()

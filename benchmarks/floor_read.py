"""Merge-on-read against the decode floor (issue 49 items 1, 3 and 5, reads).

The decode floor is pyarrow reading the very data files of impl's table with the same
projection (the user columns), in the same process and the same run: what any Paimon reader
must do at least. impl's read is ``table.to_arrow()`` (scan, decode, merge of every bucket).

Tables: primary key ``id`` (BIGINT, or STRING ``user-<n>`` with ``--string`` cases), columns
``k`` STRING, ``v`` DOUBLE, ``ts`` BIGINT, ``bucket`` = 4, ``write-only`` = true, written in
``runs`` commits (each a level-0 sorted run per bucket; commits after the first update 30 % of
earlier keys). Cases: keys BIGINT / STRING x runs 1 / 4 / 16 x rows 300k / 1M (10M too with
``--large``: not for CI, about a minute per table to write and a few GB of RAM).

Each case runs in a fresh worker process twice: on every core, and pinned to one with
``taskset -c 0`` (goal 3: >= 1.7x on 2 cores). A worker warms up once, then interleaves
``--repeat`` rounds of (floor, impl) and prints medians of wall and CPU (all threads of the
process); ratios are impl / floor of the same worker. The worker checks that impl's read
holds the expected rows (live keys, same checksum on every core count).

``--baseline-impl CHECKOUT`` runs one more 2-core worker with the ``impl`` of another
checkout (e.g. the main branch), printed with cores ``base``: before and after in the same run.

``--peers`` also reads each table once with pypaimon-rust 0.4.0 and pypaimon 2.1.0 (their
cached venvs, as ``table_vs_pypaimon.py``; each read is one fresh process, timed inside).

    python benchmarks/floor_read.py [--rows 300000,1000000] [--runs 1,4,16] [--keys int,str]
                                    [--repeat 5] [--large] [--peers] [--baseline-impl /work/main]
                                    [--no-pin] [--dir /tmp/x (kept)]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ["id", "k", "v", "ts"]


def build(warehouse: str, name: str, key: str, rows: int, runs: int) -> None:
    """merge_on_read.py's table (one builder for both benchmarks), deduplicate, ``runs`` commits."""
    from merge_on_read import build as build_table  # benchmarks/ is on sys.path: this script's folder

    build_table(warehouse, name, key, {}, rows, runs)


# ============================================================================ workers


def _cpu_wall(fn) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def worker_impl(p: dict) -> dict:
    """Interleaved rounds of (decode floor, impl's read) in this process."""
    import pyarrow.parquet as pq

    import impl
    t = impl.Catalog(p["warehouse"]).get_table(p["table"])
    splits = t.new_read_builder().new_scan().plan().splits()
    files = [os.path.join(t.core.paths.bucket_dir(s.partition_path, s.bucket), f.file_name)
             for s in splits for f in s.files]

    def floor():
        return pq.read_table(files, columns=COLUMNS)

    def read():
        return t.to_arrow()

    first = read()  # warm-up of both (first-call costs: pools, kernels, page faults)
    floor()
    figures: dict[str, list[float]] = {"floor_cpu": [], "floor_wall": [], "impl_cpu": [], "impl_wall": []}
    for _ in range(p["repeat"]):
        for side, fn in (("floor", floor), ("impl", read)):
            cpu, wall, out = _cpu_wall(fn)
            figures[f"{side}_cpu"].append(cpu)
            figures[f"{side}_wall"].append(wall)
            if side == "impl":
                assert out.num_rows == first.num_rows
    import pyarrow.compute as pc
    checksum = int(pc.sum(first.column("ts")).as_py() or 0)
    return {**{k: statistics.median(v) for k, v in figures.items()}, "rows": first.num_rows,
            "files": len(files), "checksum": checksum}


def worker_peer(side: str, p: dict) -> dict:
    """One read of the table by pypaimon-rust or pypaimon (in its own venv), timed inside."""
    import pyarrow as pa
    if side == "rust":
        from pypaimon_rust.datafusion import PaimonCatalog
        t = PaimonCatalog({"warehouse": p["warehouse"]}).get_table(p["table"])

        def read():
            rb = t.new_read_builder()
            batches = rb.new_read().read(rb.new_scan().plan().splits())
            return pa.Table.from_batches(batches)
    else:
        from pypaimon import CatalogFactory
        t = CatalogFactory.create({"warehouse": p["warehouse"]}).get_table(p["table"])

        def read():
            rb = t.new_read_builder()
            return rb.new_read().to_arrow(rb.new_scan().plan().splits())
    cpu, wall, out = _cpu_wall(read)
    return {"wall": wall, "cpu": cpu, "rows": out.num_rows}


def run_worker(python: str, side: str, params: dict, pin: bool = False, repo: str = REPO) -> dict:
    """One worker process; ``repo`` is the checkout whose ``impl`` it imports (a baseline)."""
    env = dict(os.environ, PYTHONPATH=repo if side == "impl" else "")
    cmd = [python, os.path.abspath(__file__), "--worker", side, json.dumps(params)]
    if pin:
        cmd = ["taskset", "-c", "0", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"{side} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    for line in proc.stdout.splitlines():
        if line.startswith("@@BENCH@@"):
            return json.loads(line[len("@@BENCH@@"):])
    raise RuntimeError(f"{side} printed no result:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        side, params = sys.argv[2], json.loads(sys.argv[3])
        out = worker_impl(params) if side == "impl" else worker_peer(side, params)
        print("@@BENCH@@" + json.dumps(out))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="300000,1000000")
    ap.add_argument("--runs", default="1,4,16")
    ap.add_argument("--keys", default="int,str")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--large", action="store_true", help="add 10M-row tables (not for CI)")
    ap.add_argument("--peers", action="store_true", help="one read each by pypaimon-rust 0.4.0 and pypaimon 2.1.0")
    ap.add_argument("--no-pin", action="store_true", help="skip the taskset -c 0 workers")
    ap.add_argument("--baseline-impl", default=None, metavar="CHECKOUT",
                    help="also measure the impl of another checkout (e.g. /work/main), printed as 'base'")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    rows_list = [int(r) for r in args.rows.split(",")] + ([10_000_000] if args.large else [])
    runs_list = [int(r) for r in args.runs.split(",")]
    keys = args.keys.split(",")
    sys.path.insert(0, REPO)
    peers: dict[str, str] = {}
    if args.peers:
        sys.path.insert(0, os.path.join(REPO, "tests", "_support"))
        from pypaimon_env import pypaimon_python

        from fault_injection.conformance.targets.pypaimon_rust_target import pypaimon_rust_python
        peers = {"rust": str(pypaimon_rust_python()), "pypaimon": str(pypaimon_python())}
    work = args.dir or tempfile.mkdtemp(prefix="paimon-floor-read-")
    wh = os.path.join(work, "wh")
    print(f"{os.cpu_count()} CPUs; load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    head = (f"{'key':4} {'runs':>4} {'rows':>9} {'cores':>5} | {'floor wall':>10} {'impl wall':>9} {'ratio':>6} | "
            f"{'floor CPU':>9} {'impl CPU':>8} {'ratio':>6} | {'rust':>7} {'pypaimon':>8} | load")
    print(head)
    try:
        for rows in rows_list:
            for key in keys:
                for runs in runs_list:
                    name = f"t_{key}_{runs}_{rows}"
                    if not os.path.isdir(os.path.join(wh, "db.db", name)):
                        build(wh, name, key, rows, runs)
                    p = {"warehouse": wh, "table": f"db.{name}", "repeat": args.repeat}
                    results = {}
                    if args.baseline_impl:
                        results["base"] = run_worker(sys.executable, "impl", p, repo=args.baseline_impl)
                    results["2"] = run_worker(sys.executable, "impl", p)
                    if not args.no_pin:
                        results["1"] = run_worker(sys.executable, "impl", p, pin=True)
                        if results["1"]["checksum"] != results["2"]["checksum"]:
                            raise SystemExit(f"{name}: one core and two read different rows")
                    peer = {s: run_worker(py, s, p) for s, py in peers.items()}
                    for s, r in peer.items():
                        if r["rows"] != results["2"]["rows"]:
                            raise SystemExit(f"{name}: {s} read {r['rows']} rows, impl {results['2']['rows']}")
                    for cores, r in results.items():
                        if cores == "base":
                            if r["checksum"] != results["2"]["checksum"]:
                                raise SystemExit(f"{name}: the baseline read different rows")
                        rust = f"{peer['rust']['wall']:7.3f}" if "rust" in peer and cores == "2" else f"{'':7}"
                        pyp = f"{peer['pypaimon']['wall']:8.3f}" if "pypaimon" in peer and cores == "2" else f"{'':8}"
                        print(f"{key:4} {runs:4} {rows:9,} {cores:>5} | {r['floor_wall']:10.3f} {r['impl_wall']:9.3f} "
                              f"{r['impl_wall'] / r['floor_wall']:5.2f}x | {r['floor_cpu']:9.3f} {r['impl_cpu']:8.3f} "
                              f"{r['impl_cpu'] / r['floor_cpu']:5.2f}x | {rust} {pyp} | {os.getloadavg()[0]:.2f}",
                              flush=True)
                    if "1" in results:
                        print(f"{'':26}2 cores vs 1: impl {results['1']['impl_wall'] / results['2']['impl_wall']:.2f}x, "
                              f"floor {results['1']['floor_wall'] / results['2']['floor_wall']:.2f}x "
                              f"({results['2']['rows']:,} live rows, {results['2']['files']} files)", flush=True)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

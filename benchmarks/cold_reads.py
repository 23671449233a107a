"""Cold reads of one primary-key table, interleaved: impl (this checkout), optionally impl of
another checkout (``--before``, e.g. a ``git worktree`` of the branch point), and pypaimon
2.1.0, each read in a fresh process, round after round, so that every side sees the same
machine load. Prints wall and CPU time (all threads) of each read, the medians and the ratios.

The table is ``db.pk_0`` of a warehouse written by ``table_vs_pypaimon.py --dir D`` (its
``D/wh-impl``: 10 write-only commits, 10 sorted runs per bucket); as there, imports and
``get_table`` happen before the timer.

    python benchmarks/cold_reads.py WAREHOUSE [--before /path/to/other/checkout] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = r"""
import json, sys, time
side, wh = sys.argv[1], sys.argv[2]
import pyarrow as pa, pyarrow.compute, pyarrow.dataset, pyarrow.parquet
pa.array([0]).to_numpy()
if side == "pypaimon":
    from pypaimon import CatalogFactory
    t = CatalogFactory.create({"warehouse": wh}).get_table("db.pk_0")
    def read():
        rb = t.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())
else:
    import impl, impl.mergetree
    read = impl.Catalog(wh).get_table("db.pk_0").to_arrow
w0, c0 = time.perf_counter(), time.process_time()
out = read()
print(json.dumps({"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0, "rows": out.num_rows}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warehouse")
    ap.add_argument("--before", default=None, help="another checkout of this repository to read with too")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(REPO, "tests", "_support"))
    from pypaimon_env import pypaimon_python

    sides = {"this": (sys.executable, REPO)}
    if args.before:
        sides = {"before": (sys.executable, os.path.abspath(args.before)), **sides}
    sides["pypaimon"] = (str(pypaimon_python()), "")
    results: dict[str, list[dict]] = {name: [] for name in sides}
    print(f"load average at start {os.getloadavg()[0]:.1f}")
    for r in range(args.rounds):
        for name, (python, path) in sides.items():
            side = "pypaimon" if name == "pypaimon" else "impl"
            proc = subprocess.run([python, "-c", WORKER, side, args.warehouse], capture_output=True, text=True,
                                  env=dict(os.environ, PYTHONPATH=path), cwd=path or None, timeout=3600)
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed:\n{proc.stderr[-3000:]}")
            d = json.loads(proc.stdout.strip().splitlines()[-1])
            results[name].append(d)
            print(f"round {r + 1} {name:9} wall {d['wall']:7.3f} s  cpu {d['cpu']:7.3f} s  rows {d['rows']:,}  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    rows = {d["rows"] for rs in results.values() for d in rs}
    if len(rows) != 1:
        raise SystemExit(f"the sides read different row counts: {rows}")
    for what in ("wall", "cpu"):
        med = {name: statistics.median(d[what] for d in rs) for name, rs in results.items()}
        ratios = ", ".join(f"pypaimon / {name} {med['pypaimon'] / med[name]:.1f}x" for name in med if name != "pypaimon")
        print(f"median {what}: " + ", ".join(f"{n} {v:.3f} s" for n, v in med.items()) + f"; {ratios}")
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

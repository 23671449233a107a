"""Start-up time (issue 50 item 8): ``import impl`` and ``paimon-py --help`` against the floor,
importing pyarrow, pyarrow.parquet, pyarrow.compute and fsspec (what impl cannot do without).

Each figure is the wall time of a fresh interpreter running the statement (so the interpreter's
own start is in every figure: ``python -c pass`` is printed as the baseline) with bytecode cached,
best of ``--repeat``,
the three interleaved in one run so that load on the machine hits them alike. Prints the ratios
to the floor and PASS / MISS against the goal (within 1.5x of the floor), and the load average.

    python benchmarks/startup.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.5  # times the floor, at most

CASES = {
    "python -c pass": "pass",
    "floor (pyarrow, .parquet, .compute, fsspec)": "import pyarrow, pyarrow.parquet, pyarrow.compute, fsspec",
    "import impl": "import impl",
    # the facade's classes are imported on first access: the cost a program using impl pays
    "import impl; impl.Catalog": "import impl; impl.Catalog",
    # the paimon-py console script's entry point is impl.cli:main
    "paimon-py --help": "import contextlib, io\nfrom impl.cli import main\n"
                        "with contextlib.redirect_stdout(io.StringIO()): main(['--help'])",
}


def run_once(code: str, pycache: str) -> float:
    """Seconds a fresh interpreter takes to run ``code`` on this checkout, start to exit, with
    bytecode cached under ``pycache`` (as an installed package has it: with
    PYTHONDONTWRITEBYTECODE every run would compile impl's sources again, 40 % of its import)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "PYTHONPYCACHEPREFIX": pycache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15, help="runs of each case; the best counts")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    times: dict[str, list[float]] = {name: [] for name in CASES}
    with tempfile.TemporaryDirectory(prefix="startup-pycache-") as pycache:
        for code in CASES.values():  # untimed: fills the bytecode cache
            run_once(code, pycache)
        for _ in range(args.repeat):
            for name, code in CASES.items():  # interleaved: a burst of load hits every case
                times[name].append(run_once(code, pycache))
    best = {name: min(ts) for name, ts in times.items()}
    floor = best["floor (pyarrow, .parquet, .compute, fsspec)"]
    base = best["python -c pass"]
    print(f"best of {args.repeat}, load average {load_before:.1f} before / {os.getloadavg()[0]:.1f} after "
          f"on {os.cpu_count()} cores")
    print(f"{'case':46s} {'best s':>8s} {'median s':>9s} {'x floor':>8s} {'x floor, less python':>21s}")
    for name, ts in times.items():
        median = sorted(ts)[len(ts) // 2]
        print(f"{name:46s} {best[name]:8.3f} {median:9.3f} {best[name] / floor:8.2f} "
              f"{(best[name] - base) / max(floor - base, 1e-9):21.2f}")
    ok = True
    for name in ("import impl", "paimon-py --help"):
        ratio = (best[name] - base) / max(floor - base, 1e-9)
        verdict = "PASS" if ratio <= GOAL else "MISS"
        ok &= ratio <= GOAL
        print(f"{verdict}: {name} = {ratio:.2f}x the floor's import time (goal <= {GOAL}x)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

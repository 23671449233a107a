"""Peak memory of one primary-key writer and of a streamed merge-on-read, as input grows.

Every case runs in a fresh subprocess which reports its own peak RSS (``ru_maxrss`` of
``RUSAGE_SELF``, i.e. VmHWM), so the cases do not see each other's memory:

- ``baseline``: importing impl and pyarrow only (what any case pays before it does anything),
  and the same plus making 10 input batches (what the input itself costs);
- ``write``: one batch writer (``new_batch_write_builder().new_write()``, default options:
  ``write-buffer-size`` 256 MB, background compaction on) into a primary-key table with
  4 buckets, N rows of upserts in 200k-row batches (generated per batch with numpy and Arrow,
  fixed seed; keys drawn from [0, 0.7 N), so about 30 % of rows update an earlier key), then
  one commit; wall and CPU seconds (all threads; less disturbed by other jobs) of the write;
- ``read``: merge-on-read of that table through ``to_arrow_batch_reader()``, batch by batch
  (rows counted and dropped, never kept), checking the number of live keys.

The goal (issues 16 and 31): peak RSS <= write-buffer-size x 1.5 + 250 MB, flat as N grows.
Figures are printed against that bound and the baseline of the same run; ``ok`` / ``MISS``.

``--compare REPO`` runs every case a second time with another checkout's ``impl`` (e.g. the
branch point, ``/work/main``) in the same run, so before / after share the machine's load.

    python benchmarks/memory.py [--rows 2000000 8000000] [--large (20M, 50M)] [--dir /tmp/x]
                                [--option key=value ...] [--skip-read] [--compare /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BATCH = 200_000
BUCKETS = 4
SEED = 20261124
MiB = 1024 * 1024


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _cpu_seconds() -> float:
    """CPU time of this process, all threads (a time that other jobs on the machine disturb less
    than the wall clock)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _batch(rows_total: int, i: int, n: int):
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    rng = np.random.default_rng(SEED + i)
    ids = rng.integers(0, max(1, int(rows_total * 0.7)), n, dtype=np.int64)
    # "key-<id % 100003>" built by Arrow: numpy's string arrays and Python str objects for the
    # same column took ~45 MB of the process's peak (heap the allocator keeps), charged to the writer
    key = pc.binary_join_element_wise("key-", pc.cast(pa.array(ids % 100_003), pa.string()), "")
    return pa.table({
        "id": ids,
        "k": key,
        "v": rng.random(n),
        "ts": np.arange(i * BATCH, i * BATCH + n, dtype=np.int64),
    })


def _table(warehouse: str, options: dict[str, str], create: bool):
    import pyarrow as pa

    from impl.catalog.filesystem import Catalog
    cat = Catalog(warehouse)
    if create:
        cat.create_database("db", ignore_if_exists=True)
        schema = pa.schema([("id", pa.int64()), ("k", pa.string()), ("v", pa.float64()), ("ts", pa.int64())])
        return cat.create_table("db.t", schema=schema, primary_keys=["id"],
                                options={"bucket": str(BUCKETS), **options})
    return cat.get_table("db.t")


def child_baseline() -> dict:
    import pyarrow  # noqa: F401

    import impl.catalog.filesystem  # noqa: F401
    import impl.mergetree.writer  # noqa: F401
    imported = _peak_mb()
    for i in range(10):  # what making the input costs (a batch at a time, as the write does)
        _batch(BATCH * 10, i, BATCH)
    return {"peak_mb": imported, "input_peak_mb": _peak_mb()}


def child_write(warehouse: str, rows: int, options: dict[str, str]) -> dict:
    import pyarrow as pa
    table = _table(warehouse, options, create=True)
    _batch(rows, 0, 10)  # pay numpy / pandas imports before the timer
    pool = pa.default_memory_pool()
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    arrow_peak = 0
    for i, start in enumerate(range(0, rows, BATCH)):
        w.write_arrow(_batch(rows, i, min(BATCH, rows - start)))
        arrow_peak = max(arrow_peak, pool.bytes_allocated())
    c.commit(w.prepare_commit())
    w.close()
    return {"peak_mb": _peak_mb(), "seconds": time.perf_counter() - t0, "cpu_seconds": _cpu_seconds() - cpu0,
            "arrow_max_mb": pool.max_memory() / MiB}


def child_read(warehouse: str) -> dict:
    import pyarrow as pa
    table = _table(warehouse, {}, create=False)
    pool = pa.default_memory_pool()
    t0 = time.perf_counter()
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    reader = rb.new_read().to_arrow_batch_reader(splits)
    n = batches = 0
    for b in reader:
        n += b.num_rows
        batches += 1
        del b
    return {"peak_mb": _peak_mb(), "seconds": time.perf_counter() - t0, "rows": n, "batches": batches,
            "files": sum(len(s.files) for s in splits), "arrow_max_mb": pool.max_memory() / MiB}


def expected_keys(rows: int) -> int:
    import numpy as np
    seen = np.zeros(max(1, int(rows * 0.7)), dtype=bool)
    for i, start in enumerate(range(0, rows, BATCH)):
        rng = np.random.default_rng(SEED + i)
        seen[rng.integers(0, seen.size, min(BATCH, rows - start), dtype=np.int64)] = True
    return int(seen.sum())


# ============================================================================ driver


def run_child(*args: str, repo: str = REPO) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *args],
                         env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"child {args[:2]} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="*", default=[2_000_000, 8_000_000])
    ap.add_argument("--large", action="store_true", help="also 20M and 50M rows")
    ap.add_argument("--dir", help="keep the tables under this directory")
    ap.add_argument("--option", action="append", default=[], help="table option key=value (repeatable)")
    ap.add_argument("--skip-read", action="store_true")
    ap.add_argument("--compare", help="another checkout whose impl runs the same cases (e.g. the branch point)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        kind = a.child[0]
        if kind == "baseline":
            res = child_baseline()
        elif kind == "write":
            res = child_write(a.child[1], int(a.child[2]), json.loads(a.child[3]))
        else:
            res = child_read(a.child[1])
        print(json.dumps(res))
        return

    options = dict(o.split("=", 1) for o in a.option)
    from impl.options.core_options import WRITE_BUFFER_SIZE
    buffer = WRITE_BUFFER_SIZE.get(options)
    bound = buffer * 1.5 / MiB + 250
    rows_list = list(a.rows) + ([20_000_000, 50_000_000] if a.large else [])
    base = run_child("baseline")
    print(f"load average {os.getloadavg()[0]:.1f}; options {options or 'default'}; "
          f"write-buffer-size {buffer / MiB:.0f} MB")
    print(f"baseline (import impl + pyarrow): {base['peak_mb']:.0f} MB, and making 10 input batches: "
          f"{base['input_peak_mb']:.0f} MB; bound = buffer x 1.5 + 250 MB = {bound:.0f} MB")
    print(f"{'rows':>11} | {'code':>7} | {'write MB':>8} | {'write s':>7} | {'cpu s':>6} | {'read MB':>7} | {'read s':>6} "
          f"| {'files':>5} | {'bound':>5} | result | load")
    root = a.dir or tempfile.mkdtemp(prefix="paimon-mem-")
    codes = [("this", REPO)] + ([("compare", os.path.abspath(a.compare))] if a.compare else [])
    try:
        for rows in rows_list:
            for label, repo in codes:
                wh = os.path.join(root, f"wh-{rows}-{label}")
                shutil.rmtree(wh, ignore_errors=True)
                w = run_child("write", wh, str(rows), json.dumps(options), repo=repo)
                r = None if a.skip_read else run_child("read", wh, repo=repo)
                if r is not None and r["rows"] != expected_keys(rows):
                    raise SystemExit(f"read {r['rows']} rows, expected {expected_keys(rows)} live keys")
                peak = max(w["peak_mb"], r["peak_mb"] if r else 0)
                print(f"{rows:>11,} | {label:>7} | {w['peak_mb']:>8.0f} | {w['seconds']:>7.1f} | {w['cpu_seconds']:>6.1f} | "
                      f"{(r['peak_mb'] if r else float('nan')):>7.0f} | "
                      f"{(r['seconds'] if r else float('nan')):>6.1f} | {(r['files'] if r else 0):>5} | "
                      f"{bound:>5.0f} | {'ok' if peak <= bound else 'MISS':>6} | {os.getloadavg()[0]:.1f}",
                      flush=True)
                if not a.dir:
                    shutil.rmtree(wh, ignore_errors=True)
    finally:
        if not a.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

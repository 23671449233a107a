"""impl vs pypaimon 2.1.0 vs raw pyarrow Parquet: write / read throughput and peak memory.

Same machine, same run. Every measurement is one subprocess (impl and raw Parquet in this
project's venv, pypaimon in its own cached venv, see ``tests/_support/pypaimon_env.py``) that
loads its input, then times only the operation with ``time.perf_counter`` and reports its own
peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``), so peak memory is comparable.

Workload (numpy, fixed seed, generated once and handed to every side as Arrow IPC files):

- primary-key table (id BIGINT, k STRING, v DOUBLE, ts BIGINT), primary key ``id``,
  ``bucket`` = 4, written in 10 commits of 100k rows; commits 2..10 are 30 % updates of
  earlier keys. impl's table has ``write-only`` = true, so nothing compacts between commits
  and the read merges >= 10 sorted runs per bucket (the runs are counted and printed);
- merge-on-read of that table; full compaction (impl only: pypaimon 2.1.0 cannot compact);
  the read after compaction;
- append table: the same 1M rows in 10 commits; read.

Reads: impl and pypaimon read the very same table bytes (the table impl wrote, then
compacted), so a read ratio compares readers only. Raw Parquet writes one zstd file per commit
with ``pq.write_table`` and reads its own files back (no merge), or for "read after
compaction" the compacted data files of impl's table directly (a lower bound).

One-time process costs (imports, and pandas, which pyarrow imports on its first numpy
conversion when installed) are paid before the timer on every side. impl and raw Parquet
measurements run ``--repeat`` times, pypaimon's ``--pypaimon-repeat`` times (they take
20-40 s); the medians are reported, and the load average, since the machine may be shared.

Paimon Java (the reference, release 1.4.2 through tests/paimon_java/harness; ``--no-java`` leaves
it out) runs in one warm JVM, started before any timer, so JVM start is excluded. Warm-up: before
the timed runs the JVM does the whole Java workload once on scratch tables (both writes, every
read, a compaction), so its write, read and compaction paths are loaded and JIT-compiled. The
harness times inside the JVM (``System.nanoTime``): writes exclude reading the input (it reads the
commit's Parquet copy into rows first) and time write + prepareCommit + commit of each commit;
reads time the scan plus reading every row (copied, as impl materializes an Arrow table);
Java reads the same table files impl wrote, and Java's compaction compacts its own copy of
impl's table. Java's memory is the JVM's whole peak RSS (heap included), so it is printed apart.

Targets (PASS / MISS): primary-key write >= 10x faster than pypaimon and <= 3x raw Parquet;
merge-on-read >= 30x faster than pypaimon (issue 16 goal 5); impl's peak memory <= pypaimon's on every line.

    python benchmarks/table_vs_pypaimon.py [--rows 1000000] [--commits 10] [--repeat 3]
                                           [--pypaimon-repeat 1] [--dir /tmp/x (kept)] [--no-java]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUCKETS = 4
UPDATE_FRACTION = 0.3
SEED = 20240601
FIELDS = [("id", "int64"), ("k", "string"), ("v", "float64"), ("ts", "int64")]


# ============================================================================ input


def generate(directory: str, rows: int, commits: int) -> list[str]:
    """Write the commits as Arrow IPC files; return their paths. Commit 0 inserts only; later
    commits update ``UPDATE_FRACTION`` of their rows' keys among the keys written before."""
    import numpy as np
    import pyarrow as pa

    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(SEED)
    per = rows // commits
    n_new_total = per + (commits - 1) * (per - int(per * UPDATE_FRACTION))
    new_ids = rng.permutation(np.arange(n_new_total, dtype=np.int64) * 7 + 3)  # sparse, shuffled keys
    used = 0
    paths = []
    for c in range(commits):
        n_upd = 0 if c == 0 else int(per * UPDATE_FRACTION)
        fresh = new_ids[used:used + per - n_upd]
        upd = rng.choice(new_ids[:used], size=n_upd, replace=False) if n_upd else np.empty(0, np.int64)
        used += len(fresh)
        ids = np.concatenate([fresh, upd])
        ids = ids[rng.permutation(len(ids))]
        knum = rng.integers(0, 10**9, len(ids))
        t = pa.table({
            "id": pa.array(ids, pa.int64()),
            "k": pa.array(np.char.add("key-", knum.astype("U10")).astype(object), pa.string()),
            "v": pa.array(rng.normal(size=len(ids)), pa.float64()),
            "ts": pa.array(1_700_000_000_000 + c * 1_000_000 + np.arange(len(ids), dtype=np.int64), pa.int64()),
        })
        path = os.path.join(directory, f"commit-{c:02d}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
            w.write_table(t)
        # the same commit as Parquet, for the Java harness (Paimon's own Parquet reader loads it)
        import pyarrow.parquet as pq
        pq.write_table(t, path[:-len(".arrow")] + ".parquet")
        paths.append(path)
    return paths


# ============================================================================ workers (run in subprocesses)


def _load(paths):
    """The input commits, read into process memory (every side pays for them the same way)."""
    import pyarrow as pa
    out = []
    for p in paths:
        with pa.OSFile(p, "rb") as f:
            out.append(pa.ipc.open_file(f).read_all())
    return out


def _pa_schema():
    import pyarrow as pa
    return pa.schema([(n, getattr(pa, t)()) for n, t in FIELDS])


def _checksum(t) -> dict:
    import pyarrow.compute as pc
    return {"rows": t.num_rows,
            "id_sum": int(pc.sum(t.column("id")).as_py() or 0) if t.num_rows else 0,
            "ts_sum": int(pc.sum(t.column("ts")).as_py() or 0) if t.num_rows else 0}


def work_impl(op: str, p: dict):
    import impl
    cat = impl.Catalog(p["warehouse"])
    if op in ("write-pk", "write-append"):
        data = _load(p["inputs"])
        cat.create_database("db", ignore_if_exists=True)
        kw = ({"primary_keys": ["id"], "options": {"bucket": str(BUCKETS), "write-only": "true"}}
              if op == "write-pk" else {})
        t = cat.create_table(p["table"], schema=_pa_schema(), **kw)
        mark_start()
        t0 = time.perf_counter()
        for batch in data:
            t.write_arrow(batch)
        return time.perf_counter() - t0, {"snapshots": t.latest_snapshot().id}
    t = cat.get_table(p["table"])
    if op == "compact":
        mark_start()
        t0 = time.perf_counter()
        t.compact(full=True)
        return time.perf_counter() - t0, {"snapshots": t.latest_snapshot().id}
    mark_start()
    t0 = time.perf_counter()
    out = t.to_arrow()
    return time.perf_counter() - t0, _checksum(out)


def work_pypaimon(op: str, p: dict):
    from pypaimon import CatalogFactory, Schema
    cat = CatalogFactory.create({"warehouse": p["warehouse"]})
    if op in ("write-pk", "write-append"):
        data = _load(p["inputs"])
        cat.create_database("db", True)
        kw = ({"primary_keys": ["id"], "options": {"bucket": str(BUCKETS), "write-only": "true"}}
              if op == "write-pk" else {})
        cat.create_table(p["table"], Schema.from_pyarrow_schema(_pa_schema(), **kw), False)
        t = cat.get_table(p["table"])
        mark_start()
        t0 = time.perf_counter()
        for batch in data:
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(batch)
            c.commit(w.prepare_commit())
            w.close()
            c.close()
        return time.perf_counter() - t0, {}
    t = cat.get_table(p["table"])
    mark_start()
    t0 = time.perf_counter()
    rb = t.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return time.perf_counter() - t0, _checksum(out)


def work_raw(op: str, p: dict):
    import pyarrow.parquet as pq
    if op.startswith("write"):
        data = _load(p["inputs"])
        os.makedirs(p["dir"], exist_ok=True)
        mark_start()
        t0 = time.perf_counter()
        for i, batch in enumerate(data):
            pq.write_table(batch, os.path.join(p["dir"], f"part-{i:02d}.parquet"), compression="zstd")
        return time.perf_counter() - t0, {}
    mark_start()
    t0 = time.perf_counter()
    files = p.get("files") or sorted(os.path.join(p["dir"], f) for f in os.listdir(p["dir"]))
    out = pq.read_table(files, columns=[n for n, _ in FIELDS])
    return time.perf_counter() - t0, _checksum(out)


def _warm_up(side: str) -> None:
    """One-time process costs, paid before any timer starts on every side alike: pyarrow's
    lazily imported modules, and pandas, which pyarrow imports on the first numpy conversion
    when it is installed (~0.6 s; pypaimon imports it at import time anyway)."""
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401
    import pyarrow.dataset  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    pa.array([0]).to_numpy()
    if side == "impl":
        import impl.mergetree  # noqa: F401 - imported lazily by the first primary-key read / write
    elif side == "pypaimon":
        import pypaimon  # noqa: F401


_BASE_MB = [0.0]


def mark_start() -> None:
    """Remember the RSS right before the timed operation (after imports and input loading)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                _BASE_MB[0] = int(line.split()[1]) / 1024


def worker_main(side: str, op: str, params: str) -> None:
    p = json.loads(params)
    _warm_up(side)
    fn = {"impl": work_impl, "pypaimon": work_pypaimon, "raw": work_raw}[side]
    seconds, info = fn(op, p)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("@@BENCH@@" + json.dumps({"seconds": seconds, "peak_mb": peak_kb / 1024, "base_mb": _BASE_MB[0], **info}))


# ============================================================================ Paimon Java (one warm JVM)

JAVA_TYPES = {"int64": "BIGINT", "string": "STRING", "float64": "DOUBLE"}


class JavaSide:
    """The Paimon Java measurements, through the harness's JSON-lines server (one JVM)."""

    def __init__(self, inputs: list[str]):
        from paimon_java import JavaServer
        self.server = JavaServer(heap="6g")
        self.parquet = [p[:-len(".arrow")] + ".parquet" for p in inputs]

    def peak_rss_mb(self) -> float:
        with open(f"/proc/{self.server._proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def write(self, warehouse: str, table: str, pk: bool) -> dict:
        opts = {"bucket": str(BUCKETS), "write-only": "true"} if pk else {}
        self.server.call("create_table", warehouse=warehouse, table=table,
                         fields=[[n, JAVA_TYPES[t]] for n, t in FIELDS], primary_keys=["id"] if pk else [],
                         table_options=opts)
        seconds = 0.0
        for c, path in enumerate(self.parquet):
            r = self.server.call("write", warehouse=warehouse, table=table, parquet=path, commit_user="bench",
                                 identifier=c + 1)
            seconds += (r["write_ms"] + r["commit_ms"]) / 1000
        return {"seconds": seconds}

    def read(self, warehouse: str, table: str) -> dict:
        r = self.server.call("read", warehouse=warehouse, table=table, sum_fields=["id", "ts"])
        return {"seconds": r["read_ms"] / 1000, "rows": r["rows"], "id_sum": r["sum_id"], "ts_sum": r["sum_ts"]}

    def compact(self, warehouse: str, table: str) -> dict:
        # impl's table is write-only (no compaction between commits); the harness's compaction is
        # a dedicated job, which write-only does not apply to (as in Paimon's compact action).
        r = self.server.call("compact", warehouse=warehouse, table=table, full=True, commit_user="bench-compact",
                             identifier=1)
        return {"seconds": r["compact_ms"] / 1000}

    def close(self) -> None:
        self.server.close()


# ============================================================================ orchestration


def run_worker(python: str, side: str, op: str, **params) -> dict:
    env = dict(os.environ, PYTHONPATH="")  # nothing of this project leaks into pypaimon's interpreter
    if side != "pypaimon":
        env["PYTHONPATH"] = REPO
    proc = subprocess.run([python, os.path.abspath(__file__), "--worker", side, op, json.dumps(params)],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"{side} {op} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    for line in proc.stdout.splitlines():
        if line.startswith("@@BENCH@@"):
            return json.loads(line[len("@@BENCH@@"):])
    raise RuntimeError(f"{side} {op} printed no result:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def sorted_runs_per_bucket(warehouse: str, identifier: str) -> dict[int, int]:
    """Sorted runs per bucket of the latest snapshot: each level-0 file, plus each non-empty level > 0."""
    import impl
    t = impl.Catalog(warehouse).get_table(identifier)
    files: dict[int, list] = {}
    for s in t.new_read_builder().new_scan().plan().splits():
        files.setdefault(s.bucket, []).extend(s.files)
    return {b: sum(1 for f in fs if f.level == 0) + len({f.level for f in fs if f.level > 0})
            for b, fs in sorted(files.items())}


def data_files(warehouse: str, identifier: str) -> list[str]:
    import impl
    t = impl.Catalog(warehouse).get_table(identifier)
    return [t.paths.data_file_path(s.partition_path, s.bucket, f.file_name, f.external_path)
            for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]


def copy_table(warehouse: str, src: str, dst: str) -> None:
    """Copy a table directory under a new name (Paimon metadata holds no absolute paths)."""
    import shutil
    db = os.path.join(warehouse, "db.db")
    shutil.copytree(os.path.join(db, src.split(".")[1]), os.path.join(db, dst.split(".")[1]))


def fmt_ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:8.2f}" if a is not None and b else "       -"


def median(xs):
    import statistics
    return statistics.median(xs)


LABELS = [("write-pk", "pk write (10 commits)"), ("read-pk", "pk merge-on-read"),
          ("compact", "pk full compaction"), ("read-compacted", "pk read after compaction"),
          ("write-append", "append write (10 commits)"), ("read-append", "append read")]


def java_steps(inputs: list[str], work: str, wh_impl: str, repeat: int, runs: dict) -> None:
    """Paimon Java's lines: warm-up pass on scratch tables, then ``repeat`` timed runs of each."""
    java = JavaSide(inputs)
    wh_java = os.path.join(work, "wh-java")
    try:
        t0 = time.perf_counter()
        java.write(wh_java, "db.warm_pk", True)
        java.write(wh_java, "db.warm_app", False)
        java.read(wh_java, "db.warm_pk")
        java.read(wh_java, "db.warm_app")
        copy_table(wh_impl, "db.pk_0", "db.warm_pkj")
        java.compact(wh_impl, "db.warm_pkj")
        print(f"  java      warm-up pass (both writes, both reads, a compaction) {time.perf_counter() - t0:.1f} s",
              file=sys.stderr, flush=True)
        for i in range(repeat):
            copy_table(wh_impl, "db.pk_0", f"db.pkj_{i}")
        plan = [("write-pk", lambda i: java.write(wh_java, f"db.pk_{i}", True)),
                ("read-pk", lambda i: java.read(wh_impl, "db.pk_0")),
                ("compact", lambda i: java.compact(wh_impl, f"db.pkj_{i}")),
                ("read-compacted", lambda i: java.read(wh_impl, "db.pkc_0")),
                ("write-append", lambda i: java.write(wh_java, f"db.app_{i}", False)),
                ("read-append", lambda i: java.read(wh_impl, "db.app_0"))]
        for op, fn in plan:
            for i in range(repeat):
                r = fn(i)
                runs.setdefault(("java", op), []).append(r)
                print(f"  java      {op:<15} run {i + 1}/{repeat} {r['seconds']:8.2f} s", file=sys.stderr, flush=True)
        runs[("java", "peak")] = [{"seconds": 0.0, "peak_mb": java.peak_rss_mb()}]
    finally:
        java.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each impl / raw measurement (median reported)")
    ap.add_argument("--pypaimon-repeat", type=int, default=1, help="runs of each pypaimon measurement")
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed)")
    ap.add_argument("--no-java", action="store_true", help="leave Paimon Java out")
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(REPO, "tests", "_support"))
    from pypaimon_env import PYPAIMON_VERSION, pypaimon_python

    pp_python = str(pypaimon_python())
    me = sys.executable
    work = args.dir or tempfile.mkdtemp(prefix="bench-table-vs-pypaimon-")
    os.makedirs(work, exist_ok=True)
    runs: dict[tuple[str, str], list[dict]] = {}
    load_before = os.getloadavg()
    try:
        inputs = generate(os.path.join(work, "input"), args.rows, args.commits)
        wh_impl, wh_pp, raw = (os.path.join(work, d) for d in ("wh-impl", "wh-pypaimon", "raw"))

        def step(side, op, make_params):
            """Run ``op`` ``repeat`` times; ``make_params(i)`` gives the parameters of run i."""
            python = pp_python if side == "pypaimon" else me
            n = args.pypaimon_repeat if side == "pypaimon" else args.repeat
            for i in range(n):
                r = run_worker(python, side, op, **make_params(i))
                runs.setdefault((side, op), []).append(r)
                print(f"  {side:<9} {op:<15} run {i + 1}/{n} {r['seconds']:8.2f} s  peak {r['peak_mb']:6.0f} MB"
                      f"  (at start {r['base_mb']:4.0f} MB)", file=sys.stderr, flush=True)

        print(f"running in {work} (impl: {me}; pypaimon {PYPAIMON_VERSION}: {pp_python})", file=sys.stderr)
        # primary-key table: run 0's tables are the ones read afterwards
        step("impl", "write-pk", lambda i: dict(warehouse=wh_impl, table=f"db.pk_{i}", inputs=inputs))
        step("pypaimon", "write-pk", lambda i: dict(warehouse=wh_pp, table=f"db.pk_{i}", inputs=inputs))
        step("raw", "write-pk", lambda i: dict(dir=os.path.join(raw, f"pk_{i}"), inputs=inputs))
        runs_impl = sorted_runs_per_bucket(wh_impl, "db.pk_0")
        runs_pp = sorted_runs_per_bucket(wh_pp, "db.pk_0")
        step("impl", "read-pk", lambda i: dict(warehouse=wh_impl, table="db.pk_0"))
        step("pypaimon", "read-pk", lambda i: dict(warehouse=wh_impl, table="db.pk_0"))
        step("raw", "read-pk", lambda i: dict(dir=os.path.join(raw, "pk_0")))
        for i in range(args.repeat):  # each compaction run compacts its own copy of the table
            copy_table(wh_impl, "db.pk_0", f"db.pkc_{i}")
        step("impl", "compact", lambda i: dict(warehouse=wh_impl, table=f"db.pkc_{i}"))
        runs_after = sorted_runs_per_bucket(wh_impl, "db.pkc_0")
        step("impl", "read-compacted", lambda i: dict(warehouse=wh_impl, table="db.pkc_0"))
        step("pypaimon", "read-compacted", lambda i: dict(warehouse=wh_impl, table="db.pkc_0"))
        compacted_files = data_files(wh_impl, "db.pkc_0")
        step("raw", "read-compacted", lambda i: dict(files=compacted_files))
        # append table
        step("impl", "write-append", lambda i: dict(warehouse=wh_impl, table=f"db.app_{i}", inputs=inputs))
        step("pypaimon", "write-append", lambda i: dict(warehouse=wh_pp, table=f"db.app_{i}", inputs=inputs))
        step("raw", "write-append", lambda i: dict(dir=os.path.join(raw, f"app_{i}"), inputs=inputs))
        step("impl", "read-append", lambda i: dict(warehouse=wh_impl, table="db.app_0"))
        step("pypaimon", "read-append", lambda i: dict(warehouse=wh_impl, table="db.app_0"))
        step("raw", "read-append", lambda i: dict(dir=os.path.join(raw, "app_0")))
        if not args.no_java:
            java_steps(inputs, work, wh_impl, args.repeat, runs)
    finally:
        if not args.dir:
            import shutil
            shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()

    # every run of a read returns the same rows; impl and pypaimon read the same rows
    R = {}
    for key, rs in runs.items():
        if "rows" in rs[0]:
            sums = {(r["rows"], r["id_sum"], r["ts_sum"]) for r in rs}
            if len(sums) != 1:
                raise SystemExit(f"{key}: runs read different rows: {sums}")
        R[key] = {**rs[0], "seconds": median([r["seconds"] for r in rs]),
                  "peak_mb": median([r.get("peak_mb", 0.0) for r in rs]),
                  "base_mb": median([r.get("base_mb", 0.0) for r in rs])}
    for op in ("read-pk", "read-compacted", "read-append"):
        a, b = R[("impl", op)], R[("pypaimon", op)]
        if (a["rows"], a["id_sum"], a["ts_sum"]) != (b["rows"], b["id_sum"], b["ts_sum"]):
            raise SystemExit(f"{op}: impl and pypaimon read different rows: {a} vs {b}")
        if ("java", op) in R:
            j = R[("java", op)]
            if (a["rows"], a["id_sum"], a["ts_sum"]) != (j["rows"], j["id_sum"], j["ts_sum"]):
                raise SystemExit(f"{op}: impl and Paimon Java read different rows: {a} vs {j}")
    if R[("raw", "read-compacted")]["rows"] != R[("impl", "read-compacted")]["rows"]:
        raise SystemExit("read-compacted: raw files hold a different number of rows than impl read")

    n = args.rows
    print(f"impl vs pypaimon {PYPAIMON_VERSION} vs raw pyarrow Parquet: {n:,} rows in {args.commits} commits "
          f"(30% updates of earlier keys), {BUCKETS} buckets; {os.cpu_count()} CPUs, load average "
          f"{load_before[0]:.1f} before / {load_after[0]:.1f} after")
    print(f"times: median of {args.repeat} runs (impl, raw), {args.pypaimon_repeat} run(s) (pypaimon); "
          f"memory: peak RSS of the measuring subprocess (RSS at start, after imports and input: "
          f"impl {R[('impl', 'read-pk')]['base_mb']:.0f} MB, pypaimon {R[('pypaimon', 'read-pk')]['base_mb']:.0f} MB, "
          f"raw {R[('raw', 'read-pk')]['base_mb']:.0f} MB for reads)")
    print(f"primary-key table, sorted runs per bucket: impl's {runs_impl} (write-only), pypaimon's own "
          f"{runs_pp}; after impl's full compaction {runs_after}")
    print(f"rows read: merge-on-read {R[('impl', 'read-pk')]['rows']:,} (pypaimon "
          f"{R[('pypaimon', 'read-pk')]['rows']:,}; raw Parquet reads {R[('raw', 'read-pk')]['rows']:,} without "
          f"merging); impl and pypaimon read the same table files")
    print()
    header = (f"{'operation':<27} {'impl s':>7} {'pp s':>7} {'raw s':>7} {'impl/pp':>8} {'impl/raw':>8}"
              f" | {'impl MB':>7} {'pp MB':>7} {'raw MB':>7} {'impl/pp':>8} {'impl/raw':>8}")
    print(header)
    print("-" * len(header))
    for op, label in LABELS:
        i, pp, rw = R.get(("impl", op)), R.get(("pypaimon", op)), R.get(("raw", op))
        s = lambda r: f"{r['seconds']:.2f}" if r else "-"  # noqa: E731
        m = lambda r: f"{r['peak_mb']:.0f}" if r else "-"  # noqa: E731
        print(f"{label:<27} {s(i):>7} {s(pp):>7} {s(rw):>7} "
              f"{fmt_ratio(i and i['seconds'], pp and pp['seconds'])} {fmt_ratio(i and i['seconds'], rw and rw['seconds'])}"
              f" | {m(i):>7} {m(pp):>7} {m(rw):>7} "
              f"{fmt_ratio(i and i['peak_mb'], pp and pp['peak_mb'])} {fmt_ratio(i and i['peak_mb'], rw and rw['peak_mb'])}")
    print()
    if ("java", "write-pk") in R:
        from paimon_java import PAIMON_JAVA_VERSION
        print(f"Paimon Java {PAIMON_JAVA_VERSION} (one warm JVM, start excluded, after a warm-up pass over the "
              f"whole workload; median of {args.repeat} runs; the JVM's peak RSS over all of it "
              f"{R[('java', 'peak')]['peak_mb']:.0f} MB, heap limit 6 GB):")
        jh = f"{'operation':<27} {'impl s':>7} {'java s':>7} {'impl/java':>9}"
        print(jh)
        print("-" * len(jh))
        for op, label in LABELS:
            i, j = R.get(("impl", op)), R.get(("java", op))
            if i and j:
                print(f"{label:<27} {i['seconds']:>7.2f} {j['seconds']:>7.2f} {fmt_ratio(i['seconds'], j['seconds']):>9}")
        print()

    def target(ok: bool, text: str) -> None:
        print(f"{'PASS' if ok else 'MISS'}  {text}")

    w_i, w_pp, w_raw = (R[(s, "write-pk")]["seconds"] for s in ("impl", "pypaimon", "raw"))
    target(w_pp / w_i >= 10, f"pk write >= 10x faster than pypaimon: {w_pp / w_i:.1f}x")
    target(w_i / w_raw <= 3, f"pk write within 3x of raw Parquet writes: {w_i / w_raw:.2f}x")
    r_i, r_pp = R[("impl", "read-pk")]["seconds"], R[("pypaimon", "read-pk")]["seconds"]
    target(r_pp / r_i >= 30, f"merge-on-read >= 30x faster than pypaimon (issue 16): {r_pp / r_i:.1f}x")
    for op, label in LABELS:
        i, pp = R.get(("impl", op)), R.get(("pypaimon", op))
        if i and pp:
            target(i["peak_mb"] <= pp["peak_mb"],
                   f"{label}: impl peak memory <= pypaimon's: {i['peak_mb']:.0f} MB vs {pp['peak_mb']:.0f} MB")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()

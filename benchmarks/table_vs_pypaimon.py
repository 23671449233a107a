"""impl vs pypaimon 2.1.0 vs pypaimon-rust 0.4.0 vs raw pyarrow Parquet: write / read throughput and peak memory.

Same machine, same run. Every measurement is one subprocess (impl and raw Parquet in this
project's venv, pypaimon and pypaimon-rust each in its own cached venv, see
``tests/_support/pypaimon_env.py`` and ``pypaimon_rust_env.py``) that loads its input, then
times only the operation with ``time.perf_counter`` and reports its own peak RSS (``VmHWM``),
so peak memory is comparable.

pypaimon-rust (Apache Paimon's Rust core with Python bindings) creates its tables through its
SQL context with the same columns and options, writes each commit with a batch write builder
and reads through a read builder (``with_filter`` for the filtered read); it has no compaction,
so its default-options table keeps every sorted run, and it reads impl's tables (the merge-on-
read, the filtered read, the read after impl's compaction, the append read) as pypaimon does.
The merge-on-read and filtered-read runs of impl, pypaimon-rust and raw Parquet are
interleaved (one run of each in turn), since they are the shortest and most load-sensitive.

Workload (numpy, fixed seed, generated once and handed to every side as Arrow IPC files):

- primary-key table (id BIGINT, k STRING, v DOUBLE, ts BIGINT), primary key ``id``,
  ``bucket`` = 4, written in 10 commits of ``--rows`` / 10 rows (1M by default; 300k and 1M
  are the sizes of issue 16); commits 2..10 are 30 % updates of earlier keys. Every commit is
  one batch write (``table.write_arrow`` on impl's side, a new batch write builder on
  pypaimon's). Two such tables, created on every side with the same options:
  "default options" has only ``bucket`` = 4, as a user creates it: impl compacts as Paimon's
  defaults trigger it (universal compaction from 5 sorted runs) and, as Paimon's batch write,
  each commit waits for the compactions its flush started; pypaimon 2.1.0 never compacts.
  The compactions each side did are counted and printed (COMPACT snapshots, files and rows
  rewritten), and every side's table is checked to hold the same rows. "write-only" has
  ``write-only`` = true as well, so nothing compacts and the read merges >= 10 sorted runs
  per bucket (the runs are counted and printed); impl writes it once more with
  ``data-file.thin-mode`` (files without the ``_KEY_`` copies, the only shape pypaimon-rust
  writes), checked to hold the same rows, for a like-for-like line against pypaimon-rust;
- merge-on-read of that table; full compaction (impl only: pypaimon 2.1.0 cannot compact);
  the read after compaction;
- append table: the same 1M rows in 10 commits; read.

Reads: impl, pypaimon and pypaimon-rust read the very same table bytes (the table impl wrote,
then compacted), so a read ratio compares readers only. Raw Parquet writes one zstd file per
commit with ``pq.write_table``; for the primary-key reads it decodes the user columns of the
very data files of impl's table (no merge: the decode floor of the merge-on-read; with the
filter as a row filter for the filtered read), for "read after compaction" the compacted data
files, for the append read its own files.

The filtered read is ``id < bound`` on the write-only table (about a tenth of the keys), the
filter given to each reader's read builder. ``--string-keys`` makes the key a STRING
``user-<n>`` (the same keys); ``--busy`` keeps one core busy with a spinning process for the
whole run (the "one core busy elsewhere" condition of issue 31).

One-time process costs (imports, and pandas, which pyarrow imports on its first numpy
conversion when installed; on impl's side polars too, which its first manifest decode imports)
are paid before the timer on every side. impl and raw Parquet
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

``--baseline-impl CHECKOUT`` also times the primary-key writes with the ``impl`` of another
checkout (e.g. the main branch) in the same run, printed as "before"; ``--only-pk-writes``
stops after the primary-key writes (no reads, append table or Java).

Targets (PASS / MISS), issue 16: primary-key write with default options (compaction on)
>= 15x faster than pypaimon and within 1.5x of raw Parquet writes of the same rows; write-only
>= 25x faster than pypaimon; merge-on-read >= 30x faster than pypaimon; impl's peak memory
<= pypaimon's on every line. Issue 31: merge-on-read >= 2.5x faster than pypaimon-rust and within
1.5x of the decode floor; write-only >= 1.5x faster than pypaimon-rust.

    python benchmarks/table_vs_pypaimon.py [--rows 1000000] [--commits 10] [--repeat 3]
                                           [--pypaimon-repeat 1] [--dir /tmp/x (kept)] [--no-java]
                                           [--baseline-impl /work/main] [--only-pk-writes]
                                           [--no-rust] [--string-keys] [--busy]
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
# --string-keys (passed to the workers through the environment): the key is "user-<n>" instead of n
STRING_KEYS = os.environ.get("BENCH_STRING_KEYS") == "1"
KEY_PREFIX = "user-"
FIELDS = [("id", "string" if STRING_KEYS else "int64"), ("k", "string"), ("v", "float64"), ("ts", "int64")]


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
        id_col = (pa.array(np.char.add(KEY_PREFIX, ids.astype("U20")).astype(object), pa.string()) if STRING_KEYS
                  else pa.array(ids, pa.int64()))
        knum = rng.integers(0, 10**9, len(ids))
        t = pa.table({
            "id": id_col,
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
            "id_sum": int(pc.sum(_key_numbers(t.column("id"))).as_py() or 0) if t.num_rows else 0,
            "ts_sum": int(pc.sum(t.column("ts")).as_py() or 0) if t.num_rows else 0}


def _key_numbers(ids):
    """The numbers of the keys (string keys are KEY_PREFIX + n), for the checksums."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if pa.types.is_integer(ids.type):
        return ids
    return pc.cast(pc.utf8_slice_codeunits(ids, len(KEY_PREFIX)), pa.int64())


def id_below(rows: int, commits: int) -> int | str:
    """The bound of the filtered read ``id < bound``: about a tenth of the keys."""
    per = rows // commits
    n_new_total = per + (commits - 1) * (per - int(per * UPDATE_FRACTION))
    bound = (n_new_total // 10) * 7 + 3
    return f"{KEY_PREFIX}{bound}" if STRING_KEYS else bound


WRITES = ("write-pk", "write-pk-default", "write-pk-thin", "write-append")


def _table_kwargs(op: str) -> dict:
    """The table of a write, the same on every side: ``write-pk`` is the write-only primary-key
    table, ``write-pk-default`` the one a user creates with only ``bucket`` set (default options,
    so impl compacts as Paimon does; pypaimon 2.1.0 has no compaction), ``write-append`` an append
    table."""
    if op == "write-pk":
        return {"primary_keys": ["id"], "options": {"bucket": str(BUCKETS), "write-only": "true"}}
    if op == "write-pk-default":
        return {"primary_keys": ["id"], "options": {"bucket": str(BUCKETS)}}
    if op == "write-pk-thin":  # impl only: write-only with files of pypaimon-rust's shape (no _KEY_ copies)
        return {"primary_keys": ["id"], "options": {"bucket": str(BUCKETS), "write-only": "true",
                                                    "data-file.thin-mode": "true"}}
    return {}


def work_impl(op: str, p: dict):
    import impl
    cat = impl.Catalog(p["warehouse"])
    if op in WRITES:
        data = _load(p["inputs"])
        cat.create_database("db", ignore_if_exists=True)
        t = cat.create_table(p["table"], schema=_pa_schema(), **_table_kwargs(op))
        mark_start()
        t0 = time.perf_counter()
        for batch in data:
            t.write_arrow(batch)
        return stop(t0), {"snapshots": t.latest_snapshot().id}
    t = cat.get_table(p["table"])
    if op == "compact":
        mark_start()
        t0 = time.perf_counter()
        t.compact(full=True)
        return stop(t0), {"snapshots": t.latest_snapshot().id}
    mark_start()
    t0 = time.perf_counter()
    if op == "read-filtered":
        rb = t.new_read_builder()
        rb = rb.with_filter(rb.new_predicate_builder().less_than("id", p["id_below"]))
        out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    else:
        out = t.to_arrow()
    return stop(t0), _checksum(out)


def work_pypaimon(op: str, p: dict):
    from pypaimon import CatalogFactory, Schema
    cat = CatalogFactory.create({"warehouse": p["warehouse"]})
    if op in WRITES:
        data = _load(p["inputs"])
        cat.create_database("db", True)
        cat.create_table(p["table"], Schema.from_pyarrow_schema(_pa_schema(), **_table_kwargs(op)), False)
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
        return stop(t0), {}
    t = cat.get_table(p["table"])
    mark_start()
    t0 = time.perf_counter()
    rb = t.new_read_builder()
    if op == "read-filtered":
        rb = rb.with_filter(rb.new_predicate_builder().less_than("id", p["id_below"]))
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return stop(t0), _checksum(out)


def _rust_ddl(table: str, op: str) -> str:
    """pypaimon-rust creates tables through its SQL context: the same columns and options."""
    kw = _table_kwargs(op)
    cols = ", ".join(f"{n} {JAVA_TYPES[t]}" for n, t in FIELDS)
    if kw.get("primary_keys"):
        cols += f", PRIMARY KEY ({', '.join(kw['primary_keys'])})"
    options = ", ".join(f"'{k}'='{v}'" for k, v in kw.get("options", {}).items())
    return f"CREATE TABLE paimon.{table} ({cols})" + (f" WITH ({options})" if options else "")


def work_rust(op: str, p: dict):
    """pypaimon-rust 0.4.0 (its own venv): batch writes, reads through a read builder."""
    import pyarrow as pa
    from pypaimon_rust.datafusion import PaimonCatalog, SQLContext
    if op in WRITES:
        data = _load(p["inputs"])
        ctx = SQLContext()
        ctx.register_catalog("paimon", {"warehouse": p["warehouse"]})
        if not os.path.isdir(os.path.join(p["warehouse"], "db.db")):
            ctx.sql("CREATE SCHEMA paimon.db")
        ctx.sql(_rust_ddl(p["table"], op))
        t = PaimonCatalog({"warehouse": p["warehouse"]}).get_table(p["table"])
        mark_start()
        t0 = time.perf_counter()
        for batch in data:
            wb = t.new_batch_write_builder()
            w = wb.new_write()
            for rb in batch.to_batches():
                w.write_arrow(rb)
            wb.new_commit().commit(w.prepare_commit())
            w.close()
        return stop(t0), {}
    t = PaimonCatalog({"warehouse": p["warehouse"]}).get_table(p["table"])
    mark_start()
    t0 = time.perf_counter()
    rb = t.new_read_builder()
    if op == "read-filtered":
        rb = rb.with_filter({"method": "lessThan", "field": "id", "literals": [p["id_below"]]})
    batches = rb.new_read().read(rb.new_scan().plan().splits())
    out = pa.Table.from_batches(batches) if batches else pa.table({n: [] for n, _ in FIELDS})
    return stop(t0), _checksum(out)


def work_raw(op: str, p: dict):
    import pyarrow.parquet as pq
    if op.startswith("write"):
        data = _load(p["inputs"])
        os.makedirs(p["dir"], exist_ok=True)
        mark_start()
        t0 = time.perf_counter()
        for i, batch in enumerate(data):
            pq.write_table(batch, os.path.join(p["dir"], f"part-{i:02d}.parquet"), compression="zstd")
        return stop(t0), {}
    mark_start()
    t0 = time.perf_counter()
    files = p.get("files") or sorted(os.path.join(p["dir"], f) for f in os.listdir(p["dir"]))
    if op == "read-filtered":
        out = pq.read_table(files, columns=[n for n, _ in FIELDS], filters=[("id", "<", p["id_below"])])
    else:
        out = pq.read_table(files, columns=[n for n, _ in FIELDS])
    return stop(t0), _checksum(out)


def _warm_up(side: str) -> None:
    """One-time process costs, paid before any timer starts on every side alike: pyarrow's
    lazily imported modules, and pandas, which pyarrow imports on the first numpy conversion
    when it is installed (~0.6 s; pypaimon imports it at import time anyway)."""
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401
    import pyarrow.dataset  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    if side != "rust":  # pypaimon-rust's venv has no numpy
        pa.array([0]).to_numpy()
    if side == "impl":
        # imported lazily by the first manifest (Avro) decode (~0.1 s of CPU), the first primary-key read / write
        import polars  # noqa: F401

        import impl.mergetree  # noqa: F401
    elif side == "pypaimon":
        import pypaimon  # noqa: F401
    elif side == "rust":
        import pypaimon_rust.datafusion  # noqa: F401


_BASE_MB = [0.0]
_CPU = [0.0, 0.0]  # process CPU seconds (every thread) at mark_start and at stop


def stop(t0: float) -> float:
    """Wall seconds since ``t0``; remembers the process's CPU seconds since mark_start."""
    wall = time.perf_counter() - t0
    _CPU[1] = time.process_time() - _CPU[0]
    return wall


def mark_start() -> None:
    """Remember the RSS right before the timed operation (after imports and input loading)."""
    _CPU[0] = time.process_time()
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                _BASE_MB[0] = int(line.split()[1]) / 1024


def worker_main(side: str, op: str, params: str) -> None:
    p = json.loads(params)
    _warm_up(side)
    fn = {"impl": work_impl, "pypaimon": work_pypaimon, "rust": work_rust, "raw": work_raw}[side]
    seconds, info = fn(op, p)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open("/proc/self/status") as f:  # ru_maxrss survives exec (the parent's peak when larger): VmHWM does not
        for line in f:
            if line.startswith("VmHWM:"):
                peak_kb = int(line.split()[1])
    print("@@BENCH@@" + json.dumps({"seconds": seconds, "cpu_seconds": _CPU[1], "peak_mb": peak_kb / 1024,
                                    "base_mb": _BASE_MB[0], **info}))


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

    def write(self, warehouse: str, table: str, op: str) -> dict:
        kw = _table_kwargs(op)
        self.server.call("create_table", warehouse=warehouse, table=table,
                         fields=[[n, JAVA_TYPES[t]] for n, t in FIELDS], primary_keys=kw.get("primary_keys", []),
                         table_options=kw.get("options", {}))
        seconds = 0.0
        for c, path in enumerate(self.parquet):
            # the default-options table: one batch write per commit, as impl's and pypaimon's
            # (Paimon's BatchTableWrite waits for the compactions its flush starts)
            r = self.server.call("write", warehouse=warehouse, table=table, parquet=path, commit_user="bench",
                                 identifier=c + 1, batch=op == "write-pk-default")
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


def run_worker(python: str, side: str, op: str, repo: str = REPO, prefix: tuple[str, ...] = (), **params) -> dict:
    """Run one measurement in a subprocess; ``repo`` is the checkout whose ``impl`` it imports
    (another one measures a baseline, e.g. the main branch, in the same run); ``prefix`` runs it
    under a command (``taskset -c 0``: pinned to one core, ``floor_write.py``)."""
    env = dict(os.environ, PYTHONPATH="")  # nothing of this project leaks into the peers' interpreters
    if side not in ("pypaimon", "rust"):
        env["PYTHONPATH"] = repo
    proc = subprocess.run([*prefix, python, os.path.abspath(__file__), "--worker", side, op, json.dumps(params)],
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


def compactions(warehouse: str, identifier: str) -> dict:
    """What the compactions of a table's history did: COMPACT snapshots, and in them the data
    files (rows) the compactions rewrote (deleted, not upgraded) and wrote."""
    import impl
    from impl.manifest.records import FileKind
    from impl.snapshot.records import CommitKind
    t = impl.Catalog(warehouse).get_table(identifier)
    out = {"snapshots": 0, "files_in": 0, "rows_in": 0, "files_out": 0, "rows_out": 0}
    for snap in t.snapshots():
        if snap.commit_kind is not CommitKind.COMPACT:
            continue
        out["snapshots"] += 1
        entries = [e for m in t.core.manifest_list.read_delta_manifests(snap) for e in t.core.manifest_file.read_manifest(m)]
        added = {e.file.file_name for e in entries if e.kind is FileKind.ADD}
        deleted = {e.file.file_name for e in entries if e.kind is FileKind.DELETE}
        for e in entries:
            if e.file.file_name in added and e.file.file_name in deleted:
                continue  # an upgrade: moved to another level as metadata only
            side = "out" if e.kind is FileKind.ADD else "in"
            out[f"files_{side}"] += 1
            out[f"rows_{side}"] += e.file.row_count
    return out


def table_checksum(warehouse: str, identifier: str) -> dict:
    """Rows and column sums of a table's latest snapshot, read by impl."""
    import impl
    return _checksum(impl.Catalog(warehouse).get_table(identifier).to_arrow())


def data_files(warehouse: str, identifier: str) -> list[str]:
    import impl
    t = impl.Catalog(warehouse).get_table(identifier)
    return [t.core.paths.data_file_path(s.partition_path, s.bucket, f.file_name, f.external_path)
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


LABELS = [("write-pk-default", "pk write, default options"), ("write-pk", "pk write, write-only"),
          ("read-pk", "pk merge-on-read"), ("read-filtered", "pk read, id < bound"),
          ("compact", "pk full compaction"), ("read-compacted", "pk read after compaction"),
          ("write-append", "append write (10 commits)"), ("read-append", "append read")]


def java_steps(inputs: list[str], work: str, wh_impl: str, repeat: int, runs: dict) -> None:
    """Paimon Java's lines: warm-up pass on scratch tables, then ``repeat`` timed runs of each."""
    java = JavaSide(inputs)
    wh_java = os.path.join(work, "wh-java")
    try:
        t0 = time.perf_counter()
        java.write(wh_java, "db.warm_pk", "write-pk")
        java.write(wh_java, "db.warm_pkd", "write-pk-default")
        java.write(wh_java, "db.warm_app", "write-append")
        java.read(wh_java, "db.warm_pk")
        java.read(wh_java, "db.warm_app")
        copy_table(wh_impl, "db.pk_0", "db.warm_pkj")
        java.compact(wh_impl, "db.warm_pkj")
        print(f"  java      warm-up pass (every write, both reads, a compaction) {time.perf_counter() - t0:.1f} s",
              file=sys.stderr, flush=True)
        for i in range(repeat):
            copy_table(wh_impl, "db.pk_0", f"db.pkj_{i}")
        plan = [("write-pk-default", lambda i: java.write(wh_java, f"db.pkd_{i}", "write-pk-default")),
                ("write-pk", lambda i: java.write(wh_java, f"db.pk_{i}", "write-pk")),
                ("read-pk", lambda i: java.read(wh_impl, "db.pk_0")),
                ("compact", lambda i: java.compact(wh_impl, f"db.pkj_{i}")),
                ("read-compacted", lambda i: java.read(wh_impl, "db.pkc_0")),
                ("write-append", lambda i: java.write(wh_java, f"db.app_{i}", "write-append")),
                ("read-append", lambda i: java.read(wh_impl, "db.app_0"))]
        for op, fn in plan:
            for i in range(repeat):
                r = fn(i)
                runs.setdefault(("java", op), []).append(r)
                print(f"  java      {op:<15} run {i + 1}/{repeat} {r['seconds']:8.2f} s", file=sys.stderr, flush=True)
        runs[("java", "peak")] = [{"seconds": 0.0, "peak_mb": java.peak_rss_mb()}]
    finally:
        java.close()


def summarize(runs: dict) -> dict:
    """The median of each measurement's runs; every run of a read must return the same rows."""
    R = {}
    for key, rs in runs.items():
        if "rows" in rs[0]:
            sums = {(r["rows"], r["id_sum"], r["ts_sum"]) for r in rs}
            if len(sums) != 1:
                raise SystemExit(f"{key}: runs read different rows: {sums}")
        R[key] = {**rs[0], "seconds": median([r["seconds"] for r in rs]),
                  "cpu_seconds": median([r.get("cpu_seconds", 0.0) for r in rs]),
                  "peak_mb": median([r.get("peak_mb", 0.0) for r in rs]),
                  "base_mb": median([r.get("base_mb", 0.0) for r in rs])}
    return R


def target(ok: bool, text: str) -> None:
    print(f"{'PASS' if ok else 'MISS'}  {text}")


def report_pk_writes(R: dict, compacted: dict, runs_default: dict, runs_write_only: dict) -> None:
    """The primary-key write lines against issue 16's targets, with the baseline checkout's
    ("before") figures when measured, and what the default write's compactions did."""
    def describe(c: dict) -> str:
        return (f"{c['snapshots']} COMPACT snapshots rewriting {c['files_in']} files ({c['rows_in']:,} rows) "
                f"into {c['files_out']} ({c['rows_out']:,} rows)")

    print(f"default options: impl's compactions: {describe(compacted['impl'])}; sorted runs per bucket after the "
          f"write: impl {runs_default['impl']}, pypaimon {runs_default['pypaimon']} (pypaimon 2.1.0 does not compact); "
          f"write-only: impl {runs_write_only}")
    if "base" in compacted:
        print(f"baseline impl's compactions: {describe(compacted['base'])}")
    if "java" in compacted:
        print(f"Paimon Java's compactions of the same write (batch writes): {describe(compacted['java'])}")
    header = (f"{'primary-key write':<27} {'before s':>8} {'impl s':>7} {'pp s':>7} {'rust s':>7} {'raw s':>7} "
              f"{'pp/before':>9} {'pp/impl':>8} {'rust/impl':>9} {'before/raw':>10} {'impl/raw':>8}")
    print(header)
    print("-" * len(header))
    for op, label in (("write-pk-default", "default options"), ("write-pk", "write-only")):
        b, i, pp, rw = (R.get((side, op)) for side in ("base", "impl", "pypaimon", "raw"))
        ru = R.get(("rust", op))
        rust_s = f"{ru['seconds']:.2f}" if ru else "-"
        rust_ratio = f"{ru['seconds'] / i['seconds']:.2f}" if ru and i else "-"
        assert i is not None and pp is not None and rw is not None
        before = f"{b['seconds']:.2f}" if b else "-"
        pp_b = f"{pp['seconds'] / b['seconds']:.1f}" if b else "-"
        b_raw = f"{b['seconds'] / rw['seconds']:.2f}" if b else "-"
        print(f"{label:<27} {before:>8} {i['seconds']:>7.2f} {pp['seconds']:>7.2f} {rust_s:>7} {rw['seconds']:>7.2f} "
              f"{pp_b:>9} {pp['seconds'] / i['seconds']:>8.1f} {rust_ratio:>9} {b_raw:>10} {i['seconds'] / rw['seconds']:>8.2f}")
    print()
    d_i, d_pp, raw = (R[(s, "write-pk-default")]["seconds"] for s in ("impl", "pypaimon", "raw"))
    w_i, w_pp = (R[(s, "write-pk")]["seconds"] for s in ("impl", "pypaimon"))
    target(d_pp / d_i >= 15, f"pk write, default options (compaction on) >= 15x faster than pypaimon: {d_pp / d_i:.1f}x")
    target(d_i / raw <= 1.5, f"pk write, default options within 1.5x of raw Parquet writes: {d_i / raw:.2f}x")
    target(w_pp / w_i >= 25, f"pk write, write-only >= 25x faster than pypaimon: {w_pp / w_i:.1f}x")
    ru = R.get(("rust", "write-pk"))
    for op, what in (("write-pk", "write-only"),
                     ("write-pk-thin", "write-only, thin files on both sides (impl with data-file.thin-mode; "
                                       "pypaimon-rust writes no other shape)")):
        i = R.get(("impl", op))
        if ru and i:
            target(ru["seconds"] / i["seconds"] >= 1.5,
                   f"pk write, {what} >= 1.5x faster than pypaimon-rust (issue 31): "
                   f"{ru['seconds'] / i['seconds']:.2f}x (impl {i['seconds']:.3f} s; CPU "
                   f"{(ru['cpu_seconds'] or float('nan')) / (i['cpu_seconds'] or float('nan')):.2f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each impl / raw measurement (median reported)")
    ap.add_argument("--pypaimon-repeat", type=int, default=1, help="runs of each pypaimon measurement")
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed)")
    ap.add_argument("--no-java", action="store_true", help="leave Paimon Java out")
    ap.add_argument("--baseline-impl", default=None, metavar="CHECKOUT",
                    help="also time the primary-key writes of the impl in this checkout (e.g. the main branch), "
                         "as 'before' figures measured in the same run")
    ap.add_argument("--only-pk-writes", action="store_true",
                    help="measure only the primary-key writes (default options and write-only)")
    ap.add_argument("--no-rust", action="store_true", help="leave pypaimon-rust out")
    ap.add_argument("--string-keys", action="store_true",
                    help="the primary key is a STRING ('user-<n>') instead of a BIGINT (implies --no-java)")
    ap.add_argument("--busy", action="store_true",
                    help="keep one core busy (a spinning process) during the whole run")
    args = ap.parse_args()
    if args.string_keys:
        os.environ["BENCH_STRING_KEYS"] = "1"  # read by every worker (and this process's FIELDS below)
        globals()["STRING_KEYS"] = True
        globals()["FIELDS"] = [("id", "string"), *FIELDS[1:]]
        args.no_java = True  # the Java harness sums integer ids
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None

    sys.path.insert(0, os.path.join(REPO, "tests", "_support"))
    sys.path.insert(0, REPO)
    from pypaimon_env import PYPAIMON_VERSION, pypaimon_python

    pp_python = str(pypaimon_python())
    rust_python = None
    if not args.no_rust:
        from fault_injection.conformance.targets.pypaimon_rust_target import PYPAIMON_RUST_VERSION, pypaimon_rust_python
        rust_python = str(pypaimon_rust_python())
        print(f"pypaimon-rust {PYPAIMON_RUST_VERSION}: {rust_python}", file=sys.stderr)
    me = sys.executable
    work = args.dir or tempfile.mkdtemp(prefix="bench-table-vs-pypaimon-")
    os.makedirs(work, exist_ok=True)
    runs: dict[tuple[str, str], list[dict]] = {}
    load_before = os.getloadavg()
    try:
        inputs = generate(os.path.join(work, "input"), args.rows, args.commits)
        wh_impl, wh_pp, raw = (os.path.join(work, d) for d in ("wh-impl", "wh-pypaimon", "raw"))
        wh_rust = os.path.join(work, "wh-rust")
        below = id_below(args.rows, args.commits)

        def step(side, op, make_params, repeat=None):
            """Run ``op`` ``repeat`` times; ``make_params(i)`` gives the parameters of run i.
            Side ``base`` is impl imported from ``--baseline-impl``."""
            if side == "rust" and rust_python is None:
                return
            python = pp_python if side == "pypaimon" else rust_python if side == "rust" else me
            n = repeat or (args.pypaimon_repeat if side == "pypaimon" else args.repeat)
            repo = args.baseline_impl if side == "base" else REPO
            for i in range(n):
                r = run_worker(python, "impl" if side == "base" else side, op, repo=repo, **make_params(i))
                runs.setdefault((side, op), []).append(r)
                print(f"  {side:<9} {op:<15} run {i + 1}/{n} {r['seconds']:8.3f} s (CPU {r['cpu_seconds']:7.3f} s)"
                      f"  peak {r['peak_mb']:6.0f} MB"
                      f"  (at start {r['base_mb']:4.0f} MB)", file=sys.stderr, flush=True)

        print(f"running in {work} (impl: {me}; pypaimon {PYPAIMON_VERSION}: {pp_python})", file=sys.stderr)
        # primary-key table with default options (compaction on): impl's and the baseline's
        # compactions are counted, and every side's table must hold the same rows
        wh_base = os.path.join(work, "wh-base")
        step("impl", "write-pk-default", lambda i: dict(warehouse=wh_impl, table=f"db.pkd_{i}", inputs=inputs))
        if args.baseline_impl:
            step("base", "write-pk-default", lambda i: dict(warehouse=wh_base, table=f"db.pkd_{i}", inputs=inputs))
        step("pypaimon", "write-pk-default", lambda i: dict(warehouse=wh_pp, table=f"db.pkd_{i}", inputs=inputs))
        step("rust", "write-pk-default", lambda i: dict(warehouse=wh_rust, table=f"db.pkd_{i}", inputs=inputs))
        compacted_default = {"impl": compactions(wh_impl, "db.pkd_0")}
        runs_default = {"impl": sorted_runs_per_bucket(wh_impl, "db.pkd_0"),
                        "pypaimon": sorted_runs_per_bucket(wh_pp, "db.pkd_0")}
        sums_default = {"impl": table_checksum(wh_impl, "db.pkd_0"), "pypaimon": table_checksum(wh_pp, "db.pkd_0")}
        if rust_python:
            runs_default["rust"] = sorted_runs_per_bucket(wh_rust, "db.pkd_0")
            sums_default["rust"] = table_checksum(wh_rust, "db.pkd_0")
        if args.baseline_impl:
            compacted_default["base"] = compactions(wh_base, "db.pkd_0")
            sums_default["base"] = table_checksum(wh_base, "db.pkd_0")
        if len({json.dumps(v, sort_keys=True) for v in sums_default.values()}) != 1:
            raise SystemExit(f"default-options tables hold different rows: {sums_default}")
        # primary-key table, write-only: run 0's tables are the ones read afterwards
        step("impl", "write-pk", lambda i: dict(warehouse=wh_impl, table=f"db.pk_{i}", inputs=inputs))
        if args.baseline_impl:
            step("base", "write-pk", lambda i: dict(warehouse=wh_base, table=f"db.pk_{i}", inputs=inputs))
        step("pypaimon", "write-pk", lambda i: dict(warehouse=wh_pp, table=f"db.pk_{i}", inputs=inputs))
        step("rust", "write-pk", lambda i: dict(warehouse=wh_rust, table=f"db.pk_{i}", inputs=inputs))
        step("raw", "write-pk", lambda i: dict(dir=os.path.join(raw, f"pk_{i}"), inputs=inputs))
        step("impl", "write-pk-thin", lambda i: dict(warehouse=wh_impl, table=f"db.pkt_{i}", inputs=inputs))
        if table_checksum(wh_impl, "db.pkt_0") != table_checksum(wh_impl, "db.pk_0"):
            raise SystemExit("the thin-mode table holds other rows than the write-only one")
        runs[("raw", "write-pk-default")] = runs[("raw", "write-pk")]  # raw Parquet has no options: the same rows
        runs_impl = sorted_runs_per_bucket(wh_impl, "db.pk_0")
        runs_pp = sorted_runs_per_bucket(wh_pp, "db.pk_0")
        if args.only_pk_writes:
            R = summarize(runs)
            print(f"{args.rows:,} rows in {args.commits} commits (30% updates of earlier keys), {BUCKETS} buckets; "
                  f"{os.cpu_count()} CPUs, load average {load_before[0]:.1f} before / {os.getloadavg()[0]:.1f} after; "
                  f"median of {args.repeat} runs (impl, raw), {args.pypaimon_repeat} (pypaimon)")
            report_pk_writes(R, compacted_default, runs_default, runs_impl)
            return
        # merge-on-read: impl's and pypaimon-rust's runs interleaved (the fast lines, most
        # sensitive to load changes); raw Parquet reads the very same data files (the decode floor)
        pk_files = data_files(wh_impl, "db.pk_0")
        for _ in range(args.repeat):
            for side in ("impl", "rust", "raw"):
                step(side, "read-pk", lambda i: dict(warehouse=wh_impl, table="db.pk_0", files=pk_files), repeat=1)
        step("pypaimon", "read-pk", lambda i: dict(warehouse=wh_impl, table="db.pk_0"))
        for _ in range(args.repeat):
            for side in ("impl", "rust", "raw"):
                step(side, "read-filtered", lambda i: dict(warehouse=wh_impl, table="db.pk_0", files=pk_files,
                                                           id_below=below), repeat=1)
        step("pypaimon", "read-filtered", lambda i: dict(warehouse=wh_impl, table="db.pk_0", id_below=below))
        for i in range(args.repeat):  # each compaction run compacts its own copy of the table
            copy_table(wh_impl, "db.pk_0", f"db.pkc_{i}")
        step("impl", "compact", lambda i: dict(warehouse=wh_impl, table=f"db.pkc_{i}"))
        runs_after = sorted_runs_per_bucket(wh_impl, "db.pkc_0")
        step("impl", "read-compacted", lambda i: dict(warehouse=wh_impl, table="db.pkc_0"))
        step("pypaimon", "read-compacted", lambda i: dict(warehouse=wh_impl, table="db.pkc_0"))
        step("rust", "read-compacted", lambda i: dict(warehouse=wh_impl, table="db.pkc_0"))
        compacted_files = data_files(wh_impl, "db.pkc_0")
        step("raw", "read-compacted", lambda i: dict(files=compacted_files))
        # append table
        step("impl", "write-append", lambda i: dict(warehouse=wh_impl, table=f"db.app_{i}", inputs=inputs))
        step("pypaimon", "write-append", lambda i: dict(warehouse=wh_pp, table=f"db.app_{i}", inputs=inputs))
        step("rust", "write-append", lambda i: dict(warehouse=wh_rust, table=f"db.app_{i}", inputs=inputs))
        step("raw", "write-append", lambda i: dict(dir=os.path.join(raw, f"app_{i}"), inputs=inputs))
        step("impl", "read-append", lambda i: dict(warehouse=wh_impl, table="db.app_0"))
        step("pypaimon", "read-append", lambda i: dict(warehouse=wh_impl, table="db.app_0"))
        step("rust", "read-append", lambda i: dict(warehouse=wh_impl, table="db.app_0"))
        step("raw", "read-append", lambda i: dict(dir=os.path.join(raw, "app_0")))
        if not args.no_java:
            java_steps(inputs, work, wh_impl, args.repeat, runs)
            # Paimon Java's own compactions of the same default-options write (impl reads its table)
            compacted_default["java"] = compactions(os.path.join(work, "wh-java"), "db.pkd_0")
            sums_default["java"] = table_checksum(os.path.join(work, "wh-java"), "db.pkd_0")
            if sums_default["java"] != sums_default["impl"]:
                raise SystemExit(f"default-options tables hold different rows: {sums_default}")
    finally:
        if busy is not None:
            busy.kill()
        if not args.dir:
            import shutil
            shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    R = summarize(runs)
    for op in ("read-pk", "read-filtered", "read-compacted", "read-append"):
        a = R[("impl", op)]
        for peer in ("pypaimon", "rust"):
            b = R.get((peer, op))
            if b and (a["rows"], a["id_sum"], a["ts_sum"]) != (b["rows"], b["id_sum"], b["ts_sum"]):
                raise SystemExit(f"{op}: impl and {peer} read different rows: {a} vs {b}")
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
          f"{runs_pp}, pypaimon-rust's default-options table {runs_default.get('rust', '-')}; after impl's full compaction {runs_after}; default options: impl's {runs_default['impl']}, "
          f"pypaimon's {runs_default['pypaimon']}")
    print(f"rows read: merge-on-read {R[('impl', 'read-pk')]['rows']:,} (pypaimon "
          f"{R[('pypaimon', 'read-pk')]['rows']:,}; raw Parquet reads {R[('raw', 'read-pk')]['rows']:,} without "
          f"merging); impl and pypaimon read the same table files")
    print()
    print("raw: pyarrow alone; for the primary-key reads it decodes the very data files impl's table holds "
          "(the user columns, no merge): the decode floor")
    header = (f"{'operation':<27} {'impl s':>7} {'pp s':>7} {'rust s':>7} {'raw s':>7} {'impl/pp':>8} {'impl/rust':>9} "
              f"{'impl/raw':>8} | {'impl MB':>7} {'pp MB':>7} {'rust MB':>7} {'raw MB':>7} {'impl/pp':>8} {'impl/rust':>9}")
    print(header)
    print("-" * len(header))
    for op, label in LABELS:
        i, pp, ru, rw = (R.get((side, op)) for side in ("impl", "pypaimon", "rust", "raw"))
        s = lambda r: f"{r['seconds']:.3f}" if r else "-"  # noqa: E731
        m = lambda r: f"{r['peak_mb']:.0f}" if r else "-"  # noqa: E731
        sec = lambda r: r and r["seconds"]  # noqa: E731
        mb = lambda r: r and r["peak_mb"]  # noqa: E731
        print(f"{label:<27} {s(i):>7} {s(pp):>7} {s(ru):>7} {s(rw):>7} {fmt_ratio(sec(i), sec(pp))} "
              f"{fmt_ratio(sec(i), sec(ru)):>9} {fmt_ratio(sec(i), sec(rw))}"
              f" | {m(i):>7} {m(pp):>7} {m(ru):>7} {m(rw):>7} {fmt_ratio(mb(i), mb(pp))} {fmt_ratio(mb(i), mb(ru)):>9}")
    print()
    print("process CPU seconds (every thread; steadier than wall time on a shared machine), same runs:")
    ch = f"{'operation':<27} {'impl':>7} {'pp':>7} {'rust':>7} {'raw':>7} {'pp/impl':>8} {'rust/impl':>9} {'impl/raw':>8}"
    print(ch)
    print("-" * len(ch))
    for op, label in LABELS:
        i, pp, ru, rw = (R.get((side, op)) for side in ("impl", "pypaimon", "rust", "raw"))
        c = lambda r: f"{r['cpu_seconds']:.3f}" if r else "-"  # noqa: E731
        cpu = lambda r: r and r["cpu_seconds"]  # noqa: E731
        print(f"{label:<27} {c(i):>7} {c(pp):>7} {c(ru):>7} {c(rw):>7} {fmt_ratio(cpu(pp), cpu(i))} "
              f"{fmt_ratio(cpu(ru), cpu(i)):>9} {fmt_ratio(cpu(i), cpu(rw))}")
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

    report_pk_writes(R, compacted_default, runs_default, runs_impl)
    r_i, r_pp, r_raw = (R[(side, "read-pk")]["seconds"] for side in ("impl", "pypaimon", "raw"))
    target(r_pp / r_i >= 30, f"merge-on-read >= 30x faster than pypaimon (issues 16, 31): {r_pp / r_i:.1f}x")
    cpu = lambda side, op: R[(side, op)]["cpu_seconds"] or float("nan")  # noqa: E731
    target(r_i / r_raw <= 1.5, f"merge-on-read within 1.5x of the decode floor (issue 31): {r_i / r_raw:.2f}x "
                               f"(CPU {cpu('impl', 'read-pk') / cpu('raw', 'read-pk'):.2f}x)")
    if ("rust", "read-pk") in R:
        r_ru = R[("rust", "read-pk")]["seconds"]
        target(r_ru / r_i >= 2.5, f"merge-on-read >= 2.5x faster than pypaimon-rust (issue 31): {r_ru / r_i:.2f}x "
                                  f"(CPU {cpu('rust', 'read-pk') / cpu('impl', 'read-pk'):.2f}x)")
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

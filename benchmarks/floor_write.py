"""impl's primary-key writes against the encode floor, 2 cores against 1, and a 64 MB writer's peak RSS.

Issue 49, items 2-5 (writes). Every measurement is a fresh subprocess that loads its input
before the timer and reports wall seconds, process CPU seconds (all threads) and its peak RSS;
the lines of one section run interleaved, round by round, so they share the machine's load,
which is printed beside every figure (the shared 2-core machine is rarely quiet).

- **The encode floor**: pyarrow writing the same rows to the same files. After impl wrote its
  table, every data file its snapshots added (level-0 flushes and compaction outputs, not
  upgrades) is decoded into memory before the timer; the floor then writes each file again
  with ``pq.ParquetWriter``: the same columns (the ``_KEY_`` copy, sequence numbers and row
  kinds included), rows already in key order, the same codec and zstd level, the same columns
  dictionary-encoded (read from each column chunk's encodings) and the same row groups (one
  ``write_table`` per row group of the original). It writes one snapshot's files at a time,
  on 2 threads (as impl's write-only commit flushes its buckets side by side) and, as a second
  line, on 1. impl's work beyond the floor (routing, bucket hashing, sorting, deduplicating,
  statistics, file metadata, manifests, snapshots, and with default options the decoding and
  merging of its compactions' inputs) is what the ratio measures. Goal: <= 1.2x.
- **Lines**: 1M rows in 10 commits into 4 buckets (30 % updates), write-only and with default
  options (Paimon's universal compaction; a batch commit waits for it), and 300k rows with
  default options, from ``table_vs_pypaimon.py``'s input and workers; pypaimon 2.1.0 on the 300k
  default write (goal >= 15x) and pypaimon-rust 0.4.0 on the 1M write-only one, in their own
  venvs (found as ``table_vs_pypaimon.py`` finds them; ``--no-peers`` leaves them out).
- **2 cores against 1**: the same write-only write, and a full compaction of a copy of the
  write-only table (10 sorted runs a bucket), unpinned and under ``taskset -c 0``; same rows
  checked. Goal: >= 1.7x on 2 cores.
- **Memory**: ``memory.py``'s 64 MB writer without spilling (``write-buffer-spillable`` =
  false, so level-0 files and background compaction) at 2M and 20M rows, and 50M with
  ``--large`` (minutes; not for CI). Bound 346 MB.

    python benchmarks/floor_write.py [--rows 1000000] [--small-rows 300000] [--repeat 3]
                                     [--no-peers] [--no-memory] [--no-cores] [--large] [--dir /tmp/x]
                                     [--only write-only default small-default cores memory]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import table_vs_pypaimon as tvp  # noqa: E402  (the workload, its workers and the peers' venvs)

DICTIONARY_ENCODINGS = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
SECTIONS = ("write-only", "default", "small-default", "cores", "memory")


# ============================================================================ input of the floor


def written_files(warehouse: str, identifier: str) -> list[list[str]]:
    """The data files each snapshot of an unpartitioned table added, oldest snapshot first (compaction outputs
    included, level upgrades left out: they move a file without writing it)."""
    import impl
    from impl.manifest.records import FileKind
    t = impl.Catalog(warehouse).get_table(identifier)
    out = []
    for snap in t.snapshots():
        entries = [e for m in t.core.manifest_list.read_delta_manifests(snap) for e in t.core.manifest_file.read_manifest(m)]
        deleted = {e.file.file_name for e in entries if e.kind is FileKind.DELETE}
        out.append([t.core.paths.data_file_path("", e.bucket, e.file.file_name, e.file.external_path)
                    for e in entries if e.kind is FileKind.ADD and e.file.file_name not in deleted])
    return [g for g in out if g]


def _file_plan(path: str):
    """A data file decoded (row groups as tables) with the options it was written with."""
    import pyarrow.parquet as pq
    f = pq.ParquetFile(path)
    md = f.metadata
    first = md.row_group(0)
    dictionary = [first.column(i).path_in_schema for i in range(first.num_columns)
                  if DICTIONARY_ENCODINGS & set(first.column(i).encodings)]
    codec = first.column(0).compression.lower()
    groups = [f.read_row_group(i) for i in range(md.num_row_groups)]
    return f.schema_arrow, groups, codec, dictionary


def work_floor(p: dict):
    """Encode the decoded files again, a snapshot's files at a time on ``threads`` threads."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.parquet as pq
    plans = [[_file_plan(path) for path in group] for group in p["groups"]]
    out_dir = p["out"]
    os.makedirs(out_dir, exist_ok=True)

    def encode(job):
        name, (schema, groups, codec, dictionary) = job
        kwargs = {"compression": codec, "use_dictionary": dictionary}
        if codec == "zstd":
            kwargs["compression_level"] = p["zstd_level"]
        with pq.ParquetWriter(os.path.join(out_dir, name), schema, **kwargs) as w:
            for g in groups:
                w.write_table(g, row_group_size=max(g.num_rows, 1))

    tvp.mark_start()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=p["threads"]) as pool:
        for s, group in enumerate(plans):
            list(pool.map(encode, [(f"s{s}-f{i}.parquet", plan) for i, plan in enumerate(group)]))
    return tvp.stop(t0), {"files": sum(len(g) for g in plans)}


# ============================================================================ driver


def run(side: str, op: str, prefix: tuple[str, ...] = (), python: str | None = None, **params) -> dict:
    """One measurement in a fresh process (``prefix``: e.g. ``taskset -c 0``)."""
    if side == "floor":
        env = dict(os.environ, PYTHONPATH=REPO)
        proc = subprocess.run([*prefix, sys.executable, os.path.abspath(__file__), "--worker", json.dumps(params)],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"floor failed:\n{proc.stderr[-4000:]}")
        return json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("@@BENCH@@"))[9:])
    return tvp.run_worker(python or sys.executable, side, op, prefix=prefix, **params)


def load() -> str:
    return "{:.1f}".format(os.getloadavg()[0])


def median(rs: list[dict], key: str) -> float:
    return tvp.median([r[key] for r in rs])


def row(goal: str, floor: list[dict] | None, impl_rs: list[dict], rust: list[dict] | None,
        pypaimon: list[dict] | None, loads: list[str], note: str = "") -> None:
    """One line of the table: goal | floor | impl | ratio | rust | pypaimon | load | run."""
    iw, ic = median(impl_rs, "seconds"), median(impl_rs, "cpu_seconds")
    cells = [goal]
    if floor:
        fw, fc = median(floor, "seconds"), median(floor, "cpu_seconds")
        cells += [f"{fw:.3f} ({fc:.3f})", f"{iw:.3f} ({ic:.3f})", f"{iw / fw:.2f}x wall, {ic / fc:.2f}x CPU"]
    else:
        cells += ["", f"{iw:.3f} ({ic:.3f})", note]
    for peer in (rust, pypaimon):
        if peer:
            pw, pc = median(peer, "seconds"), median(peer, "cpu_seconds")
            cells.append(f"{pw:.3f} (CPU {pc:.3f}): {pw / iw:.2f}x wall, {pc / ic:.2f}x CPU")
        else:
            cells.append("")
    cells += [f"{min(loads)}-{max(loads)}", f"median of {len(impl_rs)}"]
    print("| " + " | ".join(cells) + " |", flush=True)


def floor_section(work: str, inputs: list[str], tag: str, op: str, repeat: int, peers: dict,
                  peer_side: str | None) -> None:
    """impl's ``op`` write against the floors of the files it wrote, interleaved."""
    wh = os.path.join(work, f"wh-{tag}")
    impl_rs, f2, f1, peer, loads = [], [], [], [], []
    groups = None
    for i in range(repeat):
        loads.append(load())
        impl_rs.append(run("impl", op, warehouse=wh, table=f"db.{tag}_{i}", inputs=inputs))
        if groups is None:
            groups = written_files(wh, f"db.{tag}_0")
        for threads, acc in ((2, f2), (1, f1)):
            out = os.path.join(work, f"floor-{tag}-{threads}")
            shutil.rmtree(out, ignore_errors=True)
            acc.append(run("floor", "", groups=groups, out=out, threads=threads, zstd_level=1))
        if peer_side and peers.get(peer_side) and (peer_side != "pypaimon" or i == 0):
            pwh = os.path.join(work, f"wh-{tag}-{peer_side}")
            peer.append(run(peer_side, op, python=peers[peer_side], warehouse=pwh, table=f"db.{tag}_{i}",
                            inputs=inputs))
        loads.append(load())
    rust = peer if peer_side == "rust" and peer else None
    pp = peer if peer_side == "pypaimon" and peer else None
    files = sum(len(g) for g in groups or [])
    row(f"{tag}: {op}, {files} files, floor on 2 threads", f2, impl_rs, rust, pp, loads)
    row(f"{tag}: {op}, floor on 1 thread", f1, impl_rs, None, None, loads)
    sums = {json.dumps(tvp.table_checksum(wh, f"db.{tag}_{i}"), sort_keys=True) for i in range(repeat)}
    if len(sums) != 1:
        raise SystemExit(f"{tag}: the runs' tables differ: {sums}")


def cores_section(work: str, inputs: list[str], repeat: int) -> None:
    """Write-only write and full compaction, unpinned against ``taskset -c 0``, interleaved."""
    wh = os.path.join(work, "wh-cores")
    pin = ("taskset", "-c", "0")
    res: dict[tuple[str, str], list[dict]] = {}
    loads = []
    src = "db.src"
    run("impl", "write-pk", warehouse=wh, table=src, inputs=inputs)
    for i in range(repeat):
        for label, prefix in (("2 cores", ()), ("1 core", pin)):
            loads.append(load())
            res.setdefault(("write", label), []).append(
                run("impl", "write-pk", prefix=prefix, warehouse=wh, table=f"db.w_{label[0]}_{i}", inputs=inputs))
            dst = f"db.c_{label[0]}_{i}"
            tvp.copy_table(wh, src, dst)
            res.setdefault(("compact", label), []).append(
                run("impl", "compact", prefix=prefix, warehouse=wh, table=dst))
    for what in ("write", "compact"):
        two, one = res[(what, "2 cores")], res[(what, "1 core")]
        w2, w1 = median(two, "seconds"), median(one, "seconds")
        print(f"| {what} on 2 cores vs `taskset -c 0` (goal >= 1.7x) | 1 core {w1:.3f} (CPU {median(one, 'cpu_seconds'):.3f})"
              f" | 2 cores {w2:.3f} (CPU {median(two, 'cpu_seconds'):.3f}) | {w1 / w2:.2f}x | | | "
              f"{min(loads)}-{max(loads)} | median of {repeat} |", flush=True)
    sums = {json.dumps(tvp.table_checksum(wh, t), sort_keys=True)
            for t in [f"db.w_{c}_{i}" for c in "21" for i in range(repeat)]}
    sums_c = {json.dumps(tvp.table_checksum(wh, t), sort_keys=True)
              for t in [f"db.c_{c}_{i}" for c in "21" for i in range(repeat)]}
    if len(sums) != 1 or sums_c != sums:
        raise SystemExit(f"pinned and unpinned tables differ: {sums} {sums_c}")


def memory_section(work: str, rows_list: list[int]) -> None:
    """``memory.py``'s 64 MB writer without spilling, each size a fresh process."""
    opts = json.dumps({"write-buffer-size": "64mb", "write-buffer-spillable": "false"})
    for rows in rows_list:
        wh = os.path.join(work, f"wh-mem-{rows}")
        before = load()
        out = subprocess.run([sys.executable, os.path.join(HERE, "memory.py"), "--child", "write", wh, str(rows), opts],
                             capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=REPO), cwd=REPO)
        if out.returncode != 0:
            raise SystemExit(f"memory.py write {rows} failed:\n{out.stderr[-4000:]}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| 64 MB writer, {rows / 1e6:g}M rows, no spilling (<= 346 MB) | bound 346 MB | {r['peak_mb']:.0f} MB "
              f"(write {r['seconds']:.1f} s, CPU {r['cpu_seconds']:.1f} s) | {'ok' if r['peak_mb'] <= 346 else 'MISS'} "
              f"| | | {before}-{load()} | 1 run |", flush=True)
        shutil.rmtree(wh, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--small-rows", type=int, default=300_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true", help="leave pypaimon and pypaimon-rust out")
    ap.add_argument("--no-memory", action="store_true", help="leave the 64 MB writer's RSS out")
    ap.add_argument("--no-cores", action="store_true", help="leave the taskset comparison out")
    ap.add_argument("--large", action="store_true", help="also the 64 MB writer at 50M rows (minutes)")
    ap.add_argument("--dir", help="work directory (kept)")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS), help="run only these sections")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        tvp._warm_up("raw")
        seconds, info = work_floor(json.loads(a.worker))
        with open("/proc/self/status") as f:
            peak_kb = next(int(x.split()[1]) for x in f if x.startswith("VmHWM:"))
        print("@@BENCH@@" + json.dumps({"seconds": seconds, "cpu_seconds": tvp._CPU[1], "peak_mb": peak_kb / 1024,
                                        "base_mb": tvp._BASE_MB[0], **info}))
        return
    peers: dict[str, str] = {}
    if not a.no_peers:
        sys.path.insert(0, os.path.join(REPO, "tests", "_support"))
        sys.path.insert(0, REPO)
        from pypaimon_env import pypaimon_python

        from fault_injection.conformance.targets.pypaimon_rust_target import pypaimon_rust_python
        peers = {"pypaimon": str(pypaimon_python()), "rust": str(pypaimon_rust_python())}
    work = a.dir or tempfile.mkdtemp(prefix="bench-floor-write-")
    print(f"load average at start {load()} on {os.cpu_count()} cores; work in {work}")
    print("| goal | floor s wall (CPU) | impl s wall (CPU) | ratio | pypaimon-rust s (vs impl) | pypaimon s (vs impl) "
          "| load | run |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    try:
        big = tvp.generate(os.path.join(work, "input-big"), a.rows, a.commits)
        small = tvp.generate(os.path.join(work, "input-small"), a.small_rows, a.commits)
        if "write-only" in a.only:
            floor_section(work, big, "big_wo", "write-pk", a.repeat, peers, "rust")
        if "default" in a.only:
            floor_section(work, big, "big_def", "write-pk-default", a.repeat, peers, None)
        if "small-default" in a.only:
            floor_section(work, small, "small_def", "write-pk-default", a.repeat, peers, "pypaimon")
        if not a.no_cores and "cores" in a.only:
            cores_section(work, big, a.repeat)
        if not a.no_memory and "memory" in a.only:
            memory_section(work, [2_000_000, 20_000_000] + ([50_000_000] if a.large else []))
    finally:
        if not a.dir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end {load()}")


if __name__ == "__main__":
    main()

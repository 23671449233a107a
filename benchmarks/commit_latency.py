"""Commit latency as history grows, and as the table grows.

History: 1,000 sequential one-file commits to a local table. Prints p50 / p99 of commits
10-20 and 990-1000, the number of manifests in the final base manifest list, and
``late/early p50 ratio: X.XX``. Target: <= 1.5, i.e. the metadata cost per commit stays flat
because manifest merging keeps the base list small.

Table size (issue 31 goal 4, ``--growth``): an append table partitioned by ``dt`` with 50
buckets grows by ``t.write_arrow`` calls of 50 one-row files each (one file per bucket) into
one partition, time-ordered as ``planning.py`` builds its table (each partition gets its
commits in a row), from 0 to 20,000 files (``--large``: 100,000). Every ``t.write_arrow`` is a
cold commit (a new committer, nothing cached from the last call but the OS file cache). Prints
the mean and p50 latency of the 20 calls after the table holds 1,000 files (early) and of the
last 20 calls (late), the manifests of the final snapshot, and ``late/early mean ratio``.
Target: <= 1.5.

    python benchmarks/commit_latency.py [--commits 1000] [--dir /tmp/x]
    python benchmarks/commit_latency.py --growth [--large]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

import impl
from impl.commit import CommitMessage, FileStoreCommit
from impl.data.binary_row import EMPTY_ROW, encode_row
from impl.data.types import BIGINT, STRING, DataField
from impl.datafile.meta import DataFileMeta
from impl.fs import FileIO
from impl.manifest import ManifestList
from impl.schema.records import TableSchema
from impl.snapshot import SnapshotManager


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


def run(commits: int, directory: str) -> dict:
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)), DataField(1, "v", STRING())),
                         primary_keys=("id",), options={"bucket": "1"})
    table_path = f"{directory}/db.db/bench-{uuid.uuid4().hex[:8]}"
    file_io = FileIO()
    commit = FileStoreCommit(file_io, table_path, schema, commit_user="bench")
    key = BIGINT(False)
    latencies_ms = []
    for i in range(commits):
        f = DataFileMeta(f"data-{uuid.uuid4()}-0.parquet", 1024, 100, encode_row([i * 100], [key]),
                         encode_row([i * 100 + 99], [key]), min_sequence_number=i * 100,
                         max_sequence_number=i * 100 + 99)
        msg = CommitMessage(EMPTY_ROW, 0, 1, new_files=(f,))
        t0 = time.perf_counter()
        commit.commit([msg], identifier=i)
        latencies_ms.append((time.perf_counter() - t0) * 1000)
    snap = SnapshotManager(file_io, table_path).latest_snapshot()
    base = ManifestList(file_io, commit.paths).read(snap.base_manifest_list)
    early, late = latencies_ms[10:20], latencies_ms[-10:]
    return {
        "early_p50": statistics.median(early), "early_p99": percentile(early, 99),
        "late_p50": statistics.median(late), "late_p99": percentile(late, 99),
        "base_manifests": len(base), "snapshots": snap.id, "total_records": snap.total_record_count,
    }


FILES_PER_COMMIT = 50
PARTITIONS = 100
WINDOW = 20  # calls per measured window


def run_growth(files: int, directory: str) -> dict:
    """Grow an append table to ``files`` files by cold ``t.write_arrow`` calls; latencies in ms."""
    # planning.py builds its table this way: the same rows, ids and partition names
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from planning import SCHEMA, _ids_one_per_bucket, partition_name

    commits = files // FILES_PER_COMMIT
    cat = impl.Catalog(directory)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(f"db.growth_{uuid.uuid4().hex[:8]}", schema=SCHEMA, partition_keys=["dt"],
                         options={"bucket": str(FILES_PER_COMMIT), "bucket-key": "id"})
    ids = _ids_one_per_bucket(t, FILES_PER_COMMIT)
    latencies_ms = []
    t0 = time.perf_counter()
    for c in range(commits):
        dt = partition_name(c * PARTITIONS // commits)
        data = pa.table({"dt": [dt] * FILES_PER_COMMIT, "id": ids, "v": np.full(FILES_PER_COMMIT, c)}, schema=SCHEMA)
        start = time.perf_counter()
        t.write_arrow(data)
        latencies_ms.append((time.perf_counter() - start) * 1000)
        if (c + 1) % max(1, commits // 10) == 0:
            print(f"  {(c + 1) * FILES_PER_COMMIT} files in {time.perf_counter() - t0:.0f} s", flush=True)
    snap = t.latest_snapshot()
    base = t.core.manifest_list.read_base_manifests(snap)
    delta = t.core.manifest_list.read_delta_manifests(snap)
    first = 1000 // FILES_PER_COMMIT  # the call after which the table holds 1,000 files
    early, late = latencies_ms[first:first + WINDOW], latencies_ms[-WINDOW:]
    return {"early": early, "late": late, "commits": commits, "base_manifests": len(base),
            "delta_manifests": len(delta), "largest_manifest_entries":
                max(m.num_added_files + m.num_deleted_files for m in base) if base else 0}


def main_growth(files: int, directory: str) -> None:
    r = run_growth(files, directory)
    early, late = r["early"], r["late"]
    print(f"append table, {PARTITIONS} partitions, {FILES_PER_COMMIT} files per t.write_arrow, "
          f"{r['commits']} calls to {files} files")
    print(f"early (files 1,000-{1000 + WINDOW * FILES_PER_COMMIT:,}): mean {statistics.mean(early):.1f} ms  "
          f"p50 {statistics.median(early):.1f} ms")
    print(f"late  (last {WINDOW} calls):        mean {statistics.mean(late):.1f} ms  "
          f"p50 {statistics.median(late):.1f} ms")
    print(f"final manifests: {r['base_manifests']} base (largest {r['largest_manifest_entries']} entries), "
          f"{r['delta_manifests']} delta")
    print(f"late/early p50 ratio: {statistics.median(late) / statistics.median(early):.2f}")
    print(f"late/early mean ratio: {statistics.mean(late) / statistics.mean(early):.2f}  (goal <= 1.5)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--growth", action="store_true", help="grow an append table instead (issue 31 goal 4)")
    ap.add_argument("--large", action="store_true", help="with --growth: to 100,000 files (default 20,000)")
    args = ap.parse_args()
    if args.growth:
        with tempfile.TemporaryDirectory() as tmp:
            main_growth(100_000 if args.large else 20_000, args.dir or tmp)
        return
    with tempfile.TemporaryDirectory() as tmp:
        r = run(args.commits, args.dir or tmp)
    n = args.commits
    print(f"commits: {n}, snapshots: {r['snapshots']}, total records: {r['total_records']}")
    print(f"commits 10-20:        p50 {r['early_p50']:.2f} ms  p99 {r['early_p99']:.2f} ms")
    print(f"commits {n - 10}-{n}:   p50 {r['late_p50']:.2f} ms  p99 {r['late_p99']:.2f} ms")
    print(f"manifests in final base list: {r['base_manifests']}")
    print(f"late/early p50 ratio: {r['late_p50'] / r['early_p50']:.2f}")


if __name__ == "__main__":
    main()

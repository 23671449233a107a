"""Commit latency as history grows: 1,000 sequential one-file commits to a local table.

Prints p50 / p99 of commits 10-20 and 990-1000, the number of manifests in the final base
manifest list, and as its last line ``late/early p50 ratio: X.XX``. Target: <= 1.5, i.e. the
metadata cost per commit stays flat because manifest merging keeps the base list small.

    python benchmarks/commit_latency.py [--commits 1000] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid

from impl.commit import CommitMessage, FileStoreCommit
from impl.format.binary_row import EMPTY_ROW, encode_row
from impl.format.json_records import TableSchema
from impl.format.records import DataFileMeta
from impl.format.types import BIGINT, STRING, DataField
from impl.fs import FileIO
from impl.manifest import ManifestList
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
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

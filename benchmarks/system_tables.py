"""System tables over a large table: how long ``$files``, ``$partitions``, ``$buckets`` and
``$manifests`` take against the scan plan of a data read of the same snapshot (the baseline,
measured in the same run: both decode the same manifests).

The table is a primary-key table partitioned by ``dt`` whose one snapshot lists ``--files``
data files (one manifest entry each, with real encoded keys and value statistics), written
straight as manifests: the data files themselves are not needed to describe them.

Two figures per line, best of ``--repeat``: cold (a fresh catalog and table, so manifests are
read and decoded from disk) and warm (the same table again: manifests come from its entry
cache, so the figure is the system table's own work: decoding keys and statistics, spelling
and aggregating).

    python benchmarks/system_tables.py                # 100,000 files
    python benchmarks/system_tables.py --files 20000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid

import pyarrow as pa

import impl
import impl.system
from impl.data.binary_row import encode_row
from impl.data.types import parse_type
from impl.datafile.meta import DataFileMeta, FileSource, SimpleStats
from impl.manifest.records import FileKind, ManifestEntry
from impl.snapshot.records import CommitKind, Snapshot

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())])
BUCKETS = 4


def build(warehouse: str, files: int, partitions: int) -> None:
    cat = impl.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.big", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": str(BUCKETS)})
    key_t = [parse_type("BIGINT")]
    value_t = [parse_type(x) for x in ("STRING", "BIGINT", "DOUBLE", "STRING")]
    now = int(time.time() * 1000)
    parts = [encode_row([f"2026-01-{p:03d}"], [parse_type("STRING")]) for p in range(partitions)]
    entries = []
    for i in range(files):
        p = i % partitions
        lo, hi = i * 10, i * 10 + 9
        value_stats = SimpleStats(encode_row([f"2026-01-{p:03d}", lo, 0.5, "aaa"], value_t),
                                  encode_row([f"2026-01-{p:03d}", hi, 99.5, "zzz"], value_t), (0, 0, 1, 2))
        meta = DataFileMeta(
            file_name=f"data-{uuid.uuid4()}-0.parquet", file_size=4096 + i % 1000, row_count=10,
            min_key=encode_row([lo], key_t), max_key=encode_row([hi], key_t),
            key_stats=SimpleStats(encode_row([lo], key_t), encode_row([hi], key_t), (0,)),
            value_stats=value_stats, min_sequence_number=i, max_sequence_number=i + 9, schema_id=0,
            level=i % 3, creation_time_millis=now + i, file_source=FileSource.APPEND)
        entries.append(ManifestEntry(FileKind.ADD, parts[p], (i // partitions) % BUCKETS, BUCKETS, meta))
    metas = t.manifest_file.write(entries)
    base, base_size = t.manifest_list.write(metas)
    delta, delta_size = t.manifest_list.write([])
    snap = Snapshot(id=1, schema_id=0, base_manifest_list=base, delta_manifest_list=delta, commit_user="bench",
                    commit_identifier=1, commit_kind=CommitKind.APPEND, time_millis=now,
                    total_record_count=10 * files, delta_record_count=10 * files,
                    base_manifest_list_size=base_size, delta_manifest_list_size=delta_size)
    assert t.snapshot_manager().try_publish(snap)


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as warehouse:
        t0 = time.perf_counter()
        build(warehouse, args.files, args.partitions)
        print(f"built {args.files:,} files in {args.partitions} partitions in {time.perf_counter() - t0:.1f}s")

        warm_table = impl.Catalog(warehouse).get_table("db.big")

        def plan(table=None):
            t = table or impl.Catalog(warehouse).get_table("db.big")
            return sum(len(s.files) for s in t.new_read_builder().new_scan().plan().splits())

        def system(name, projection=None, warm=False, bucket=None):
            def run():
                t = impl.Catalog(warehouse).get_table(f"db.big${name}")
                if warm:
                    t = impl.system.SystemTable(warm_table, t.spec)
                pb = t.new_read_builder().new_predicate_builder()
                return t.to_arrow(predicate=None if bucket is None else pb.equal("bucket", bucket),
                                  projection=projection).num_rows
            return run

        base, n = best_of(args.repeat, plan)
        plan(warm_table)
        warm_base, _ = best_of(args.repeat, lambda: plan(warm_table))
        print(f"{'':<44} {'cold':>8} {'warm':>8}")
        print(f"{'baseline: scan plan of a data read':<44} {base * 1000:6.0f}ms {warm_base * 1000:6.0f}ms"
              f"  {n:>8,} files")
        for label, name, projection, bucket in [
            ("$files, every column", "files", None, None),
            ("$files, without keys and statistics", "files", ["partition", "bucket", "file_path", "record_count",
                                                              "file_size_in_bytes"], None),
            ("$files, every column, WHERE bucket = 0", "files", None, 0),
            ("$partitions", "partitions", None, None),
            ("$buckets", "buckets", None, None),
            ("$manifests", "manifests", None, None),
        ]:
            cold, rows = best_of(args.repeat, system(name, projection, bucket=bucket))
            warm, _ = best_of(args.repeat, system(name, projection, warm=True, bucket=bucket))
            print(f"{label:<44} {cold * 1000:6.0f}ms {warm * 1000:6.0f}ms  {rows:>8,} rows"
                  f"  (cold {cold / base:4.2f}x the plan)")


if __name__ == "__main__":
    main()

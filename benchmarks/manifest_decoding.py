"""Cold manifest reads with polars' columnar Avro decoding and with fastavro alone (issue 50
item 8: whether polars can leave the core install).

Writes one manifest of ``--entries`` entries (one real table's entry, cloned under distinct file
names and buckets) and reads it with a fresh ManifestFile (nothing cached) ``--repeat`` times
each way, best of; ``impl.format.avro_columns`` falls back to fastavro when polars is missing,
which is simulated here by recording polars as absent.

    python benchmarks/manifest_decoding.py [--entries 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import impl  # noqa: E402
from impl.format import avro_columns  # noqa: E402
from impl.manifest.manifest_file import ManifestFile  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    cat = impl.Catalog(tempfile.mkdtemp(prefix="manifest-decoding-"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())]),
                         partition_keys=["dt"], options={"bucket": "4", "bucket-key": "id"})
    t.write_arrow(pa.table({"dt": ["2026-01-01"] * 4, "id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"]}))
    core = t.core
    mf = core.manifest_file
    metas = core.manifest_list.read(core.snapshot_manager.latest_snapshot().delta_manifest_list)
    entry = mf.read(metas[0].file_name)[0]
    entries = [dataclasses.replace(entry, bucket=i % 4,
                                   file=dataclasses.replace(entry.file, file_name=f"data-{i:07d}.parquet"))
               for i in range(args.entries)]
    mf.target_file_size_bytes = 1 << 40  # one manifest holding every entry
    (meta,) = mf.write(entries)

    def cold_read() -> float:
        fresh = ManifestFile(mf.file_io, mf.paths, mf.partition_type, schema_id=mf.schema_id)
        start = time.perf_counter()
        assert len(fresh.read(meta.file_name)) == args.entries
        return time.perf_counter() - start

    best = {}
    if avro_columns.polars_module() is not None:
        best["polars (columnar)"] = min(cold_read() for _ in range(args.repeat))
    avro_columns._polars[:] = [None]  # as without polars installed: the fastavro path
    best["fastavro alone"] = min(cold_read() for _ in range(args.repeat))
    print(f"one manifest, {args.entries} entries, {meta.file_size / 1e6:.2f} MB; best of {args.repeat}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, s in best.items():
        print(f"{name:20s} {s:7.3f} s")
    if len(best) == 2:
        print(f"fastavro alone / polars: {best['fastavro alone'] / best['polars (columnar)']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

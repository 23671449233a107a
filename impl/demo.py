"""A small demo job: commits to a local table and prints its snapshots.

    python -m impl.demo [--warehouse ./warehouse] [--commits 5]

Writes a few commits (appends, then a compaction that replaces the level-0 files) to
``<warehouse>/demo.db/events`` through FileStoreCommit, then prints every snapshot with its
kind and record counts and the live files of the latest one.
"""

from __future__ import annotations

import argparse
import os
import uuid

from impl.commit import CommitMessage, FileStoreCommit, ManifestCommittable
from impl.format.binary_row import encode_row
from impl.format.json_records import TableSchema
from impl.format.records import DataFileMeta, FileSource
from impl.format.types import BIGINT, STRING, DataField
from impl.fs import FileIO
from impl.snapshot import SnapshotManager


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Commit to a local Paimon table and print its snapshots")
    ap.add_argument("--warehouse", default="./warehouse")
    ap.add_argument("--commits", type=int, default=5)
    args = ap.parse_args(argv)

    schema = TableSchema(
        0,
        (DataField(0, "dt", STRING(False)), DataField(1, "id", BIGINT(False)), DataField(2, "v", STRING())),
        partition_keys=("dt",), primary_keys=("dt", "id"), options={"bucket": "1"},
    )
    table_path = os.path.abspath(os.path.join(args.warehouse, "demo.db", f"events-{uuid.uuid4().hex[:6]}"))
    file_io = FileIO()
    file_io.mkdirs(os.path.join(table_path, "schema"))
    file_io.write_bytes(os.path.join(table_path, "schema", "schema-0"), schema.to_json_bytes())
    commit = FileStoreCommit(file_io, table_path, schema, commit_user="demo")
    partition = encode_row(["2024-01-01"], [STRING(False)])
    key = [BIGINT(False)]

    level0 = []
    for i in range(args.commits):
        f = DataFileMeta(f"data-{uuid.uuid4()}-0.parquet", 1000, 10, encode_row([i * 10], key),
                         encode_row([i * 10 + 9], key), min_sequence_number=i * 10, max_sequence_number=i * 10 + 9)
        level0.append(f)
        commit.commit(ManifestCommittable(i, (CommitMessage(partition, 0, 1, new_files=(f,)),)))
    merged = DataFileMeta(f"data-{uuid.uuid4()}-0.parquet", 5000, 10 * args.commits, encode_row([0], key),
                          encode_row([args.commits * 10 - 1], key), level=5, file_source=FileSource.COMPACT,
                          max_sequence_number=args.commits * 10 - 1)
    commit.commit(ManifestCommittable(args.commits, (CommitMessage(partition, 0, 1, compact_before=tuple(level0),
                                                                   compact_after=(merged,)),)))

    snapshots = SnapshotManager(file_io, table_path)
    print(f"table {table_path}")
    print(f"{'id':>3}  {'kind':<9} {'identifier':>10}  {'total':>6} {'delta':>6}")
    for snap in snapshots.snapshots():
        print(f"{snap.id:>3}  {snap.commit_kind.value:<9} {snap.commit_identifier:>10}  "
              f"{snap.total_record_count:>6} {snap.delta_record_count:>6}")
    live = commit.read_live_entries(snapshots.latest_snapshot())
    print("live files of the latest snapshot: "
          + ", ".join(f"{e.file.file_name} (level {e.file.level}, {e.file.row_count} rows)" for e in live))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

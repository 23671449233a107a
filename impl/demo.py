"""A small demo job: commits to a local table and prints its snapshots.

    python -m impl.demo [--warehouse ./warehouse] [--commits 5]

Creates ``<warehouse>/demo.db/events_<random>`` (a primary-key table partitioned by ``dt``, one
bucket), writes ``--commits`` commits of 10 rows each through a stream write (real Parquet data
files, one APPEND snapshot per commit identifier; every commit after the first also updates a row of
the one before), then a full compaction that replaces the level-0 files (a COMPACT snapshot). Prints
every snapshot with its kind and record counts, the live files of the latest one and the row count a
read returns (the compaction's commit identifier is shown as ``batch``: it is a batch
commit, whose identifier is Paimon's BATCH_COMMIT_IDENTIFIER, Long.MAX_VALUE). The table is an ordinary Paimon table: impl, pypaimon and Paimon Java read it.
"""

from __future__ import annotations

import argparse
import os
import uuid

import pyarrow as pa

from impl._cli import HelpFormatter
from impl.catalog.filesystem import FileSystemCatalog
from impl.commit.messages import BATCH_COMMIT_IDENTIFIER
from impl.table.table import FileStoreTable

ROWS_PER_COMMIT = 10


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="paimon-py-demo",
        description="Write a few commits and a compaction to a new primary-key table in a local warehouse, "
                    "then print its snapshots and live files.",
        formatter_class=HelpFormatter)
    ap.add_argument("--warehouse", default="./warehouse",
                    help="warehouse directory; the table is created as demo.db/events_<random> inside it")
    ap.add_argument("--commits", type=int, default=5,
                    help=f"number of APPEND commits of {ROWS_PER_COMMIT} rows each before the compaction (at least 1)")
    return ap


def _batch(commit: int) -> pa.Table:
    """Rows ``commit*10 .. commit*10+9``, plus an update of the first row of the previous commit."""
    ids = list(range(commit * ROWS_PER_COMMIT, (commit + 1) * ROWS_PER_COMMIT))
    if commit > 0:
        ids.append((commit - 1) * ROWS_PER_COMMIT)
    return pa.table({"dt": ["2024-01-01"] * len(ids), "id": pa.array(ids, pa.int64()),
                     "v": [f"commit-{commit}" for _ in ids]})


def run(warehouse: str, commits: int) -> FileStoreTable:
    """Create and fill the demo table."""
    catalog = FileSystemCatalog(os.path.abspath(warehouse))
    catalog.create_database("demo", ignore_if_exists=True)
    # an underscore, not a dash: the name then needs no quoting in SQL (paimon-py sql "... from demo.events_1a2b3c")
    name = f"demo.events_{uuid.uuid4().hex[:6]}"
    table = catalog.create_table(
        name, schema=pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                                ("v", pa.string())]),
        primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"})
    builder = table.new_stream_write_builder().with_commit_user("demo")
    write, commit = builder.new_write(), builder.new_commit()
    try:
        for i in range(commits):
            write.write_arrow(_batch(i))
            commit.commit(write.prepare_commit(i), commit_identifier=i)
    finally:
        write.close()
        commit.close()
    table.compact(full=True)
    return table


def identifier_text(commit_identifier: int) -> str:
    """A snapshot's commit identifier as the demo prints it: ``batch`` for a batch commit's."""
    return "batch" if commit_identifier == BATCH_COMMIT_IDENTIFIER else str(commit_identifier)


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.commits < 1:
        ap.error(f"--commits must be at least 1, got {args.commits}")

    table = run(args.warehouse, args.commits)
    # The demo is a command-line program: its output is the point, printed to stdout.
    print(f"table {table.identifier} at {table.path}")
    print(f"{'id':>3}  {'kind':<9} {'identifier':>20}  {'total':>6} {'delta':>6}")
    for snap in table.snapshots():
        print(f"{snap.id:>3}  {snap.commit_kind.value:<9} {identifier_text(snap.commit_identifier):>20}  "
              f"{snap.total_record_count:>6} {snap.delta_record_count:>6}")
    print(f"(identifier: the stream commit's; batch: Paimon's batch commit identifier {BATCH_COMMIT_IDENTIFIER}, "
          "Long.MAX_VALUE, which the compaction commits with)")
    splits = table.new_read_builder().new_scan().plan().splits()
    live = [f for s in splits for f in s.files]
    print("live files of the latest snapshot: "
          + ", ".join(f"{f.file_name} (level {f.level}, {f.row_count} rows)" for f in live))
    print(f"rows read: {table.to_arrow().num_rows}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

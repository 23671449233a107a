"""The primary-key table the per-store tests write and read (tests/stores, tests/azure, tests/gcs):
one schema, one commit of rows, one sorted read, so every store is checked with the same steps."""

from __future__ import annotations

import pyarrow as pa

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def rows(ids, v="x", dt="2024-01-01") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def commit_rows(table, ids, v="x") -> None:
    """One batch commit of ``ids`` with value ``v`` in partition 2024-01-01."""
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(rows(ids, v))
    commit.commit(write.prepare_commit())


def read_rows(table) -> list[tuple[int, str]]:
    """The table's (id, v) pairs, sorted."""
    rb = table.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted((r["id"], r["v"]) for r in got)

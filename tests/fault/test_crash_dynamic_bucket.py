"""A dynamic-bucket write + commit (data files, new HASH index files replacing old ones, the
APPEND snapshot), crashed at every one of its storage operations.

The table has history (two partitions, several buckets, ``dynamic-bucket.target-row-num`` 3);
the scenario updates old keys and adds new ones that fill a bucket and open another, so its
commit replaces some buckets' index files and adds one. After each crash the table is reopened
through healthy storage and must show:

- the rows before or the rows after, nothing in between, and the latest snapshot is the setup's
  or exactly one more (no partial publication);
- every index file any snapshot lists exists and decodes with its row count; every live key is
  in exactly one bucket, whose index holds its hash;
- orphan removal reclaims what the crashed run wrote (its data and index files), and the
  table then holds no index file no snapshot lists;
- a restarted writer repeating the write ends at the rows after, with a consistent index.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

import impl
from fault_injection import crash_after, crash_at, enumerate_crash_points, record_operations
from impl.bucket.routing import row_hashes
from impl.data.types import DataType
from impl.write.dynamic_bucket import HashIndexFile, hash_index_entries

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    pa.field("v", pa.string())])
OPTIONS = {"dynamic-bucket.target-row-num": "3"}


def rows(dt: str, ids, tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]},
                    schema=SCHEMA)


HISTORY = [rows("a", range(5), "h"), rows("b", range(2), "h")]
UPDATE = pa.concat_tables([rows("a", [0, 5, 6, 7], "u"), rows("b", [1, 2], "u")])


def _table(fs, root):
    return impl.Catalog(root, filesystem=fs).get_table("db.t")


def setup(fs, root):
    cat = impl.Catalog(root, filesystem=fs)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=OPTIONS)
    for batch in HISTORY:
        t.write_arrow(batch)


def scenario(fs, root):
    _table(fs, root).write_arrow(UPDATE)


def _state(rows_table: pa.Table) -> dict:
    return {(r["dt"], r["id"]): r["v"] for r in rows_table.to_pylist()}


BEFORE = _state(pa.concat_tables(HISTORY))
AFTER = {**BEFORE, **_state(UPDATE)}
SETUP_SNAPSHOTS = len(HISTORY)


def check_index(t) -> None:
    """Listed index files readable; each live key in one bucket, whose index holds its hash."""
    files = HashIndexFile(t.file_io, t.core.paths)
    for snap in t.snapshots():
        for e in hash_index_entries(t.core, snap):
            files.read(e.index_file)
    index = {(e.partition, e.bucket): set(files.read(e.index_file).tolist())
             for e in hash_index_entries(t.core, t.latest_snapshot())}
    seen: set = set()
    rb = t.new_read_builder()
    for split in rb.new_scan().plan().splits():
        ids = rb.new_read().to_arrow([split]).column("id").to_pylist()
        hashes = row_hashes([pa.array(ids, pa.int64())], [DataType("BIGINT", False)]).tolist()
        assert set(hashes) <= index[(split.partition, split.bucket)]
        keys = {(split.partition, i) for i in ids}
        assert not keys & seen, "a key in two buckets"
        seen |= keys


def check_outcome(outcome) -> bool:
    """The checks of the module docstring; True if the crashed run published its snapshot."""
    t = _table(outcome.inner_fs, outcome.root)
    latest = t.latest_snapshot().id
    state = _state(t.to_arrow())
    assert (latest, state) in ((SETUP_SNAPSHOTS, BEFORE), (SETUP_SNAPSHOTS + 1, AFTER)), outcome.describe()
    check_index(t)
    published = latest > SETUP_SNAPSHOTS
    t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 86_400_000)
    assert _state(t.to_arrow()) == state
    listed = {e.index_file.file_name for s in t.snapshots() for e in hash_index_entries(t.core, s)}
    assert set(t.file_io.list_names(t.core.paths.index_dir)) <= listed
    check_index(t)
    if not published:
        t.write_arrow(UPDATE)  # the restarted writer repeats the write
        assert _state(t.to_arrow()) == AFTER
        check_index(t)
    return published


@pytest.mark.parametrize("fault", [crash_at, crash_after], ids=["crash_at", "crash_after"])
def test_dynamic_bucket_commit_crashed_at_every_op(fault):
    ops = record_operations(scenario, setup=setup)
    assert any("/index/index-" in (o.path or "") for o in ops)  # the commit writes HASH index files
    published = []
    for outcome in enumerate_crash_points(scenario, setup=setup, fault_at=fault):
        assert outcome.crashed, outcome.describe()
        published.append(check_outcome(outcome))
    assert len(published) == len(ops)
    assert not all(published) and (fault is crash_at or any(published))

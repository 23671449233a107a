"""Time travel by id and by time, incremental reads between snapshots."""

from __future__ import annotations

import pyarrow as pa
import pytest
from table_helpers import sort_rows, write

from impl.errors import InvalidOptionError, SnapshotNotExistError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def batch(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()), "v": [f"v{i}" for i in range(lo, hi)]})


@pytest.fixture
def table3(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    for i in range(3):
        write(t, batch(i * 10, i * 10 + 10))
    return t


def test_by_snapshot_id(table3):
    for sid in (1, 2, 3):
        got = table3.copy({"scan.snapshot-id": str(sid)}).to_arrow()
        assert sorted(got.column("id").to_pylist()) == list(range(sid * 10))
    with pytest.raises(SnapshotNotExistError):
        table3.copy({"scan.snapshot-id": "9"}).to_arrow()
    with pytest.raises(InvalidOptionError):
        table3.copy({"scan.snapshot-id": "x"})


def test_by_timestamp(table3):
    snaps = table3.snapshots()
    for s in snaps:
        got = table3.copy({"scan.timestamp-millis": str(s.time_millis)}).to_arrow()
        assert got.num_rows >= s.id * 10  # several snapshots may share one millisecond
        nxt = [x for x in snaps if x.time_millis <= s.time_millis][-1]
        assert got.num_rows == nxt.id * 10
    before_all = table3.copy({"scan.timestamp-millis": str(snaps[0].time_millis - 1)}).to_arrow()
    assert before_all.num_rows == 0


def test_incremental_between_append(table3):
    got = table3.copy({"incremental-between": "1,3"}).to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(10, 30))
    got = table3.copy({"incremental-between": "0,1"}).to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(0, 10))
    assert table3.copy({"incremental-between": "2,2"}).to_arrow().num_rows == 0
    with pytest.raises(SnapshotNotExistError):
        table3.copy({"incremental-between": "1,7"}).to_arrow()
    with pytest.raises(InvalidOptionError):
        table3.copy({"incremental-between": "3,1"})


def test_incremental_skips_compaction(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    for i in range(5):
        write(t, batch(i * 10, i * 10 + 10))
    assert t.compact() is not None  # snapshot 6, COMPACT
    write(t, batch(50, 55))  # snapshot 7
    got = t.copy({"incremental-between": "4,7"}).to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(40, 55))


def test_incremental_with_filter(table3):
    t = table3.copy({"incremental-between": "1,3"})
    pb = t.new_read_builder().new_predicate_builder()
    rb = t.new_read_builder().with_filter(pb.greater_or_equal("id", 25)).with_projection(["v"])
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert sorted(got.column("v").to_pylist()) == sorted(f"v{i}" for i in range(25, 30))


def test_expired_snapshot_raises(table3):
    res = table3.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)
    assert res.expired_snapshot_ids == (1, 2)
    with pytest.raises(SnapshotNotExistError):
        table3.copy({"scan.snapshot-id": "1"}).to_arrow()
    with pytest.raises(SnapshotNotExistError):
        table3.copy({"incremental-between": "1,3"}).to_arrow()
    assert sort_rows(table3.to_arrow())[0]["id"] == 0

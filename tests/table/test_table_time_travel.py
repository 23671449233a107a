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


# ---------------------------------------------------------------------------- the snapshot's schema


@pytest.mark.parametrize("pk", [False, True], ids=["append", "primary-key"])
def test_travel_reads_with_the_snapshots_schema(catalog, pk):
    from impl.schema import SchemaChange as SC

    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"] if pk else None,
                             options={"bucket": "1"} if pk else None)
    write(t, batch(0, 3))
    t.create_tag("before")
    before = t.latest_snapshot()
    catalog.alter_table("db.t", [SC.rename_column("v", "label"), SC.add_column("n", pa.int32())])
    t = catalog.get_table("db.t")
    write(t, pa.table({"id": pa.array([1, 5], pa.int64()), "label": ["new1", "new5"], "n": pa.array([1, 5], pa.int32())}))
    old_rows = [{"id": i, "v": f"v{i}"} for i in range(3)]
    for travel in ({"scan.snapshot-id": str(before.id)}, {"scan.tag-name": "before"},
                   {"scan.timestamp-millis": str(before.time_millis)}):
        view = t.copy(travel)
        assert view.schema.id == 0 and view.schema.field_names == ["id", "v"]
        got = view.to_arrow()
        assert got.schema.names == ["id", "v"], travel
        assert sort_rows(got, ["id"]) == old_rows, travel
    # the latest snapshot reads in the current schema, its older file mapped by field id
    now = t.copy({"scan.snapshot-id": str(t.latest_snapshot().id)})
    assert now.schema.id == 1
    rows = sort_rows(now.to_arrow(), ["id"])
    assert rows[0] == {"id": 0, "label": "v0", "n": None}
    assert rows[1] == ({"id": 1, "label": "new1", "n": 1} if pk else {"id": 1, "label": "v1", "n": None})
    # a projection and a filter name the travelled schema's columns
    view = t.copy({"scan.snapshot-id": str(before.id)})
    rb = view.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("v", "v2")).with_projection(["v"])
    assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist() == [{"v": "v2"}]
    # a view of other options starts again from the schema the travelling view was opened with
    assert view.core.with_options({}).schema.id == 1


def test_travel_to_a_missing_snapshot_still_raises_on_read(table3):
    view = table3.copy({"scan.snapshot-id": "9"})
    assert view.schema.id == table3.schema.id
    with pytest.raises(SnapshotNotExistError):
        view.to_arrow()

"""Every primary-key read path matches the columns of files written under an older schema by
field id (issue 45): deletion-vector reads, the lookup changelog producer and compaction after
a rename, a drop, and a column dropped then added again under the same name."""

from __future__ import annotations

import pyarrow as pa
import pytest
from table_helpers import write

from impl.errors import SchemaMismatchError
from impl.mergetree.kv import KVLayout
from impl.read.scan import SnapshotReader
from impl.schema import SchemaChange as SC

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("w", pa.int32())])


def _table(catalog, options):
    return catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1", **options})


def _rows(t, by="id"):
    return sorted(t.to_arrow().to_pylist(), key=lambda r: r[by])


def _live_schema_ids(t) -> list[int]:
    return sorted(e.file.schema_id for e in SnapshotReader(t.core).live_entries(t.latest_snapshot()))


DV = {"deletion-vectors.enabled": "true"}


def test_dv_read_after_rename_reads_the_old_files_column(catalog):
    t = _table(catalog, DV)
    n = 500  # a base file large enough that a small later write lands above it (no full merge)
    write(t, pa.table({"id": list(range(1, n + 1)), "v": [f"v{i}" for i in range(1, n + 1)],
                       "w": pa.array(range(1, n + 1), pa.int32())}))
    catalog.alter_table("db.t", [SC.rename_column("v", "label")])
    t = catalog.get_table("db.t")
    assert _rows(t)[:2] == [{"id": 1, "label": "v1", "w": 1}, {"id": 2, "label": "v2", "w": 2}]
    # a new row under the new name supersedes an old-schema row (through its deletion vector)
    write(t, pa.table({"id": [2, n + 1], "label": ["b2", "c"], "w": pa.array([21, 30], pa.int32())}))
    assert _live_schema_ids(t) == [0, 1]
    rows = _rows(t)
    assert len(rows) == n + 1 and all(r["label"] == f"v{r['id']}" for r in rows if r["id"] not in (2, n + 1))
    assert [rows[1], rows[-1]] == [{"id": 2, "label": "b2", "w": 21}, {"id": n + 1, "label": "c", "w": 30}]


def test_dv_read_after_drop_and_re_add_reads_null_not_the_dropped_data(catalog):
    t = _table(catalog, DV)
    write(t, pa.table({"id": [1, 2], "v": ["old1", "old2"], "w": pa.array([10, 20], pa.int32())}))
    catalog.alter_table("db.t", [SC.drop_column("v")])
    catalog.alter_table("db.t", [SC.add_column("v", pa.string())])
    t = catalog.get_table("db.t")
    assert _rows(t) == [{"id": 1, "w": 10, "v": None}, {"id": 2, "w": 20, "v": None}]
    write(t, pa.table({"id": [3], "w": pa.array([30], pa.int32()), "v": ["new"]}))
    assert [r["v"] for r in _rows(t)] == [None, None, "new"]


def test_dv_read_with_a_predicate_and_projection_on_a_renamed_column(catalog):
    t = _table(catalog, DV)
    write(t, pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "w": pa.array([10, 20, 30], pa.int32())}))
    catalog.alter_table("db.t", [SC.rename_column("w", "weight"), SC.update_column_type("weight", pa.int64())])
    t = catalog.get_table("db.t")
    pb = t.new_read_builder().new_predicate_builder()
    rb = t.new_read_builder().with_filter(pb.greater_than("weight", 15)).with_projection(["weight", "id"])
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert got.schema.names == ["weight", "id"] and got.schema.field("weight").type == pa.int64()
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [{"weight": 20, "id": 2}, {"weight": 30, "id": 3}]


@pytest.mark.parametrize("options", [{"changelog-producer": "lookup"}, {"changelog-producer": "lookup", **DV}],
                         ids=["lookup", "lookup+dv"])
def test_lookup_changelog_after_rename_retracts_the_old_value(local_catalog, options):
    t = _table(local_catalog, options)
    write(t, pa.table({"id": [1, 2], "v": ["a", "b"], "w": pa.array([10, 20], pa.int32())}))
    s1 = t.latest_snapshot().id
    local_catalog.alter_table("db.t", [SC.rename_column("v", "label")])
    t = local_catalog.get_table("db.t")
    write(t, pa.table({"id": [1], "label": ["a2"], "w": pa.array([11], pa.int32())}))
    s2 = t.latest_snapshot().id
    got = t.copy({"incremental-between": f"{s1},{s2}"}).to_arrow().to_pylist()
    # the -U row carries the value the old file holds under its old name
    assert [(r["_VALUE_KIND"], r["label"], r["w"]) for r in got] == [(1, "a", 10), (2, "a2", 11)]
    assert _rows(t) == [{"id": 1, "label": "a2", "w": 11}, {"id": 2, "label": "b", "w": 20}]


@pytest.mark.parametrize("options", [{}, DV], ids=["merge", "dv"])
def test_full_compaction_rewrites_old_files_by_field_id(local_catalog, options):
    t = _table(local_catalog, options)
    write(t, pa.table({"id": [1, 2], "v": ["a", "b"], "w": pa.array([10, 20], pa.int32())}))
    local_catalog.alter_table("db.t", [SC.rename_column("v", "label"), SC.drop_column("w")])
    local_catalog.alter_table("db.t", [SC.add_column("w", pa.int32())])
    t = local_catalog.get_table("db.t")
    write(t, pa.table({"id": [3], "label": ["c"], "w": pa.array([30], pa.int32())}))
    expected = [{"id": 1, "label": "a", "w": None}, {"id": 2, "label": "b", "w": None},
                {"id": 3, "label": "c", "w": 30}]
    assert _rows(t) == expected
    t.compact(full=True)
    assert _live_schema_ids(t) == [2]
    assert _rows(t) == expected


def test_layout_without_a_schema_manager_refuses_a_file_of_another_schema(catalog):
    t = _table(catalog, {})
    write(t, pa.table({"id": [1], "v": ["a"], "w": pa.array([10], pa.int32())}))
    catalog.alter_table("db.t", [SC.rename_column("v", "label")])
    t = catalog.get_table("db.t")
    f = SnapshotReader(t.core).live_entries(t.latest_snapshot())[0].file
    assert KVLayout(t.schema, t.schema_manager).file_sources(f) == {"id": "id", "label": "v", "w": "w"}
    with pytest.raises(SchemaMismatchError, match="schema 0"):
        KVLayout(t.schema).file_sources(f)

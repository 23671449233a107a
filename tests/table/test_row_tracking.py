"""Row tracking and data evolution (``row-tracking.enabled``, ``data-evolution.enabled``) through the table API."""

from __future__ import annotations

import pyarrow as pa
import pytest
from table_helpers import data_files, read, write

from impl.errors import (
    InvalidOptionError,
    InvalidPredicateError,
    RowIdConflictError,
    RowIdNotExistError,
    SchemaMismatchError,
    UnsupportedTableFeatureError,
)
from impl.read.scan import SnapshotReader
from impl.schema.changes import SchemaChange

SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string())])
RT = {"row-tracking.enabled": "true"}


def rows(ids, tag="a"):
    return pa.table({"id": pa.array(ids, pa.int32()), "v": [f"{tag}{i}" for i in ids]})


def test_appends_get_row_ids_at_commit(local_catalog):
    """Each commit hands out the ids after the latest snapshot's nextRowId, in file order;
    a row's _SEQUENCE_NUMBER is the snapshot that wrote it."""
    t = local_catalog.create_table("db.t", schema=SCHEMA, options=RT)
    write(t, rows([1, 2, 3]))
    write(t, rows([4, 5], "b"))
    assert t.latest_snapshot().next_row_id == 5
    files = sorted((e.file.first_row_id, e.file.row_count, e.file.min_sequence_number, e.file.max_sequence_number)
                   for e in SnapshotReader(t.core).live_entries(t.latest_snapshot()))
    assert files == [(0, 3, 1, 1), (3, 2, 2, 2)]
    got = read(t, projection=["_ROW_ID", "id", "_SEQUENCE_NUMBER"])
    assert got.schema.field("_ROW_ID").type == pa.int64() and not got.schema.field("_ROW_ID").nullable
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
        {"_ROW_ID": i - 1, "id": i, "_SEQUENCE_NUMBER": 1 if i <= 3 else 2} for i in range(1, 6)]
    # a filter does not shift ids (the format may not skip rows before they are numbered)
    pred = t.new_read_builder().new_predicate_builder().equal("id", 5)
    assert read(t, pred, ["_ROW_ID"]).to_pylist() == [{"_ROW_ID": 4}]
    assert read(t).column_names == ["id", "v"]  # asked for only


def test_bad_input_is_refused_by_name(local_catalog):
    with pytest.raises(InvalidOptionError, match="row-tracking.enabled"):
        local_catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["id"], options={**RT, "bucket": "1"})
    with pytest.raises(InvalidOptionError, match="'bucket' = -1"):
        local_catalog.create_table("db.b", schema=SCHEMA, options={**RT, "bucket": "2", "bucket-key": "id"})
    with pytest.raises(InvalidOptionError, match="needs 'row-tracking.enabled'"):
        local_catalog.create_table("db.de", schema=SCHEMA, options={"data-evolution.enabled": "true"})
    plain = local_catalog.create_table("db.plain", schema=SCHEMA)
    with pytest.raises(InvalidPredicateError, match="row-tracking.enabled"):
        plain.new_read_builder().with_projection(["id", "_ROW_ID"])
    tracked = local_catalog.create_table("db.rt", schema=SCHEMA, options=RT)
    with pytest.raises(InvalidOptionError, match="'row-tracking.enabled' is fixed"):
        tracked.copy({"row-tracking.enabled": "false"})
    with pytest.raises(InvalidOptionError, match="'row-tracking.enabled' is fixed"):
        plain.copy({"row-tracking.enabled": "true"})


def test_compaction_keeps_row_ids(local_catalog):
    """Compaction writes the ids and sequence numbers into the rows (Paimon's layout: no first
    row id on the output, _ROW_ID / _SEQUENCE_NUMBER columns); reads, filters and later
    appends see the same ids."""
    t = local_catalog.create_table("db.t", schema=SCHEMA, options=RT)
    for i in range(3):
        write(t, rows([3 * i + 1, 3 * i + 2, 3 * i + 3], f"w{i}"))
    before = sorted(read(t, projection=["_ROW_ID", "_SEQUENCE_NUMBER", "id"]).to_pylist(), key=lambda r: r["id"])
    t.compact(full=True)
    (e,) = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert e.file.first_row_id is None and e.file.write_cols == ("id", "v", "_ROW_ID", "_SEQUENCE_NUMBER")
    assert sorted(read(t, projection=["_ROW_ID", "_SEQUENCE_NUMBER", "id"]).to_pylist(),
                  key=lambda r: r["id"]) == before
    pred = t.new_read_builder().new_predicate_builder().equal("id", 8)
    assert read(t, pred, ["_ROW_ID", "v"]).to_pylist() == [{"_ROW_ID": 7, "v": "w28"}]
    write(t, rows([10]))
    assert read(t, projection=["_ROW_ID", "id"]).filter(pa.compute.equal(pa.compute.field("id"), 10)) \
        .to_pylist() == [{"_ROW_ID": 9, "id": 10}]


# ---------------------------------------------------------------------------- data evolution

DE = {**RT, "data-evolution.enabled": "true"}


def _update(t, row_ids, values, cols=("v",)):
    """Messages of a column update of ``cols`` (v: strings ``values``) by row id."""
    data = pa.table({"_ROW_ID": pa.array(row_ids, pa.int64()), "v": values})
    return t.new_batch_write_builder().new_update().with_update_type(list(cols)).update_by_arrow_with_row_id(data)


def _commit(t, messages):
    c = t.new_batch_write_builder().new_commit()
    return c.commit(messages)


def _by_row_id(t):
    got = read(t, projection=["_ROW_ID", "id", "v"]).to_pylist()
    return {r["_ROW_ID"]: (r["id"], r["v"]) for r in got}


def test_column_updates_by_row_id(local_catalog):
    """Each touched row-id group gets one file of the updated column; reads take the newest
    file's value per column; ids, untouched rows and other columns stay."""
    t = local_catalog.create_table("db.de", schema=SCHEMA, options=DE)
    write(t, rows([1, 2, 3]))
    write(t, rows([4, 5], "b"))
    messages = _update(t, [1, 4], ["x1", "x4"])
    assert [(m.new_files[0].first_row_id, m.new_files[0].write_cols, m.new_files[0].row_count) for m in messages] \
        == [(0, ("v",), 3), (3, ("v",), 2)]
    _commit(t, messages)
    assert _by_row_id(t) == {0: (1, "a1"), 1: (2, "x1"), 2: (3, "a3"), 3: (4, "b4"), 4: (5, "x4")}
    _commit(t, _update(t, [1, 2], ["y1", "y2"]))  # the newest update of a column wins
    write(t, rows([6], "c"))  # appends continue the ids
    assert _by_row_id(t) == {0: (1, "a1"), 1: (2, "y1"), 2: (3, "y2"), 3: (4, "b4"), 4: (5, "x4"), 5: (6, "c6")}
    assert t.latest_snapshot().next_row_id == 6
    pred = t.new_read_builder().new_predicate_builder().equal("v", "y2")
    assert read(t, pred).to_pylist() == [{"id": 3, "v": "y2"}]  # a filter sees updated values


def test_racing_column_updates_conflict(local_catalog):
    """Two updates read from one snapshot rewrite the same group: the second would undo the
    first's rows, so it is refused and leaves nothing behind; an update of rows an overwrite
    replaced is refused too."""
    t = local_catalog.create_table("db.de", schema=SCHEMA, options=DE)
    write(t, rows([1, 2, 3]))
    first, second = _update(t, [0], ["p"]), _update(t, [2], ["q"])
    _commit(t, first)
    with pytest.raises(RowIdConflictError, match="would be lost"):
        _commit(t, second)
    names = {p.rsplit("/", 1)[-1] for p in data_files(t)}
    assert first[0].new_files[0].file_name in names and second[0].new_files[0].file_name not in names
    assert _by_row_id(t) == {0: (1, "p"), 1: (2, "a2"), 2: (3, "a3")}
    stale = _update(t, [1], ["r"])
    write(t, rows([9], "o"), overwrite={})
    with pytest.raises(RowIdConflictError):
        _commit(t, stale)


def test_column_update_bad_input(local_catalog):
    t = local_catalog.create_table("db.de", schema=SCHEMA, options=DE)
    write(t, rows([1, 2]))
    with pytest.raises(RowIdNotExistError, match="_ROW_ID 7"):
        _update(t, [7], ["x"])
    with pytest.raises(SchemaMismatchError, match="duplicates"):
        _update(t, [0, 0], ["x", "y"])
    with pytest.raises(SchemaMismatchError, match="'nope' is not a column"):
        t.new_batch_write_builder().new_update().with_update_type(["nope"])
    plain = local_catalog.create_table("db.rt", schema=SCHEMA, options=RT)
    with pytest.raises(UnsupportedTableFeatureError, match="'data-evolution.enabled'"):
        plain.new_batch_write_builder().new_update().with_update_type(["s"])
    with pytest.raises(UnsupportedTableFeatureError, match="'data-evolution.enabled'"):
        t.copy({"incremental-between": "0,1"}).to_arrow()


def test_updates_across_schema_changes(local_catalog):
    """Columns are matched by field id: an update of a column added after the base file was
    written fills it for the updated rows, a renamed column keeps its updates."""
    t = local_catalog.create_table("db.de", schema=SCHEMA, options=DE)
    write(t, rows([1, 2, 3]))
    _commit(t, _update(t, [0], ["x"]))
    local_catalog.alter_table("db.de", [SchemaChange.add_column("w", "BIGINT"), SchemaChange.rename_column("v", "s")])
    t = local_catalog.get_table("db.de")
    data = pa.table({"_ROW_ID": pa.array([2], pa.int64()), "w": pa.array([7], pa.int64())})
    _commit(t, t.new_batch_write_builder().new_update().with_update_type(["w"]).update_by_arrow_with_row_id(data))
    got = read(t, projection=["_ROW_ID", "id", "s", "w"]).to_pylist()
    assert sorted(got, key=lambda r: r["_ROW_ID"]) == [
        {"_ROW_ID": 0, "id": 1, "s": "x", "w": None}, {"_ROW_ID": 1, "id": 2, "s": "a2", "w": None},
        {"_ROW_ID": 2, "id": 3, "s": "a3", "w": 7}]
    assert [r["_ROW_ID"] for r in read(t, projection=["_ROW_ID"]).to_pylist()] == [0, 1, 2]


def test_upsert_by_key(local_catalog):
    """Every live row of a key takes the input row in place (same row id); a new key is appended
    with the next id; all in one commit."""
    t = local_catalog.create_table("db.de", schema=SCHEMA, options=DE)
    write(t, rows([1, 2, 3]))
    write(t, rows([2, 4], "b"))  # id 2 twice
    wb = t.new_batch_write_builder()
    messages = wb.new_update().upsert_by_arrow_with_key(rows([2, 5], "u"), ["id"])
    stats = wb.new_commit().commit(messages)
    assert len(stats.snapshot_ids) == 1
    assert _by_row_id(t) == {0: (1, "a1"), 1: (2, "u2"), 2: (3, "a3"), 3: (2, "u2"), 4: (4, "b4"), 5: (5, "u5")}
    with pytest.raises(SchemaMismatchError, match="more than once"):
        t.new_batch_write_builder().new_update().upsert_by_arrow_with_key(rows([7, 7]), ["id"])
    with pytest.raises(SchemaMismatchError, match="'nope' is not a column"):
        t.new_batch_write_builder().new_update().upsert_by_arrow_with_key(rows([7]), ["nope"])


def test_data_evolution_compaction_merges_row_id_groups(local_catalog):
    """A file and its column updates become one file of every column (the group's ids, its files'
    sequence range); a lone file stays; an update read before the compaction still wins after it."""
    t = local_catalog.create_table("db.de", schema=SCHEMA, options=DE)
    write(t, rows([1, 2, 3]))
    write(t, rows([4, 5], "b"))
    _commit(t, _update(t, [1], ["x1"]))
    stale = _update(t, [2], ["y2"])
    before = _by_row_id(t)
    t.compact()
    live = sorted((e.file.first_row_id, e.file.row_count, e.file.write_cols, e.file.min_sequence_number,
                   e.file.max_sequence_number) for e in SnapshotReader(t.core).live_entries(t.latest_snapshot()))
    assert live == [(0, 3, None, 1, 3), (3, 2, None, 2, 2)]
    assert _by_row_id(t) == before
    _commit(t, stale)
    assert _by_row_id(t)[2] == (3, "y2") and _by_row_id(t)[1] == (2, "x1")

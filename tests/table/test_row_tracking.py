"""Row tracking and data evolution (``row-tracking.enabled``, ``data-evolution.enabled``) through the table API."""

from __future__ import annotations

import pyarrow as pa
import pytest
from table_helpers import data_files, read, write

from impl.errors import InvalidOptionError
from impl.table.errors import InvalidPredicateError, UnsupportedTableFeatureError
from impl.table.scan import SnapshotReader

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


@pytest.mark.parametrize("option", ["row-tracking.enabled", "data-evolution.enabled"])
def test_compaction_is_refused_by_name(local_catalog, option):
    """Compaction would drop the rows' ids: refused, with nothing left on storage."""
    t = local_catalog.create_table("db.t", schema=SCHEMA, options={**RT, option: "true"})
    write(t, rows([1]))
    write(t, rows([2]))
    before = data_files(t)
    with pytest.raises(UnsupportedTableFeatureError, match=f"'{option}'"):
        t.compact(full=True)
    assert data_files(t) == before and t.latest_snapshot().id == 2

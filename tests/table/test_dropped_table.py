"""A dropped table stays dropped: commits through handles taken before drop_table are refused and
write nothing, and create_table does not adopt snapshots left in a directory without a schema."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import impl
from impl.errors import StaleTableDirectoryError, StaleTableHandleError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def new_table(cat: impl.Catalog):
    return cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})


def all_files(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


@pytest.fixture
def cat(local_catalog):
    return local_catalog


def test_batch_commit_through_handle_taken_before_drop_is_refused(cat):
    stale = new_table(cat)
    wb = stale.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": [1], "v": ["stale"]}, schema=SCHEMA))
    messages = w.prepare_commit()
    cat.drop_table("db.t")

    with pytest.raises(StaleTableHandleError, match="db.t.*no longer exists"):
        c.commit(messages)
    assert not cat.table_exists("db.t")
    # neither snapshots nor the writer's data files are left in the dropped table's place
    path = cat.table_path("db.t")
    assert (all_files(path) if os.path.exists(path) else []) == []

    fresh = new_table(cat)
    assert fresh.to_arrow().num_rows == 0
    fresh.write_arrow(pa.table({"id": [2], "v": ["fresh"]}, schema=SCHEMA))
    assert fresh.to_arrow().to_pylist() == [{"id": 2, "v": "fresh"}]


def test_stream_commit_after_drop_and_recreate_is_refused(cat):
    stale = new_table(cat)
    sb = stale.new_stream_write_builder()
    w, c = sb.new_write(), sb.new_commit()
    w.write_arrow(pa.table({"id": [1], "v": ["first"]}, schema=SCHEMA))
    c.commit(w.prepare_commit(0), 0)
    cat.drop_table("db.t")
    fresh = new_table(cat)  # same name, same schema id 0: only the schema file's time tells them apart

    w.write_arrow(pa.table({"id": [3], "v": ["stale"]}, schema=SCHEMA))
    with pytest.raises(StaleTableHandleError, match="replaced"):
        c.commit(w.prepare_commit(1), 1)
    with pytest.raises(StaleTableHandleError):
        c.filter_and_commit({1: []})
    assert fresh.latest_snapshot() is None
    assert fresh.to_arrow().num_rows == 0


def test_commit_under_an_older_schema_still_succeeds(cat):
    t = new_table(cat)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    cat.alter_table("db.t", [impl.SchemaChange.set_option("snapshot.num-retained.min", "5")])
    c.commit(w.prepare_commit())
    assert cat.get_table("db.t").to_arrow().to_pylist() == [{"id": 1, "v": "a"}]


def test_create_table_refuses_directory_with_snapshots_but_no_schema(cat):
    t = new_table(cat)
    t.write_arrow(pa.table({"id": [1], "v": ["old"]}, schema=SCHEMA))
    path = cat.table_path("db.t")
    # what a drop interrupted after the schema went (or an old build's stale commit) leaves
    for name in os.listdir(os.path.join(path, "schema")):
        os.remove(os.path.join(path, "schema", name))
    assert not cat.table_exists("db.t")

    with pytest.raises(StaleTableDirectoryError, match="snapshot-1.*no schema") as err:
        new_table(cat)
    assert err.value.snapshots == ["snapshot-1"]
    assert not os.path.exists(os.path.join(path, "schema", "schema-0"))

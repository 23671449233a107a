"""Row-level DELETE of append tables in Python: ``new_update().delete_by_predicate(p)``
(:mod:`impl.write.delete`), with deletion vectors or copy-on-write, read back against an oracle."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from table_helpers import data_files, read, sort_rows, write

from impl.errors import (
    FileNotLiveError,
    IndexFileConflictError,
    InvalidPredicateError,
    UnsupportedTableFeatureError,
)
from impl.predicate.predicate import LeafPredicate
from impl.read.scan import SnapshotReader

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
DV = {"deletion-vectors.enabled": "true"}


def rows(ids, dt="a"):
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [None if i % 7 == 0 else f"v{i}" for i in ids]},
                    schema=SCHEMA)


def delete(table, predicate):
    wb = table.new_batch_write_builder()
    messages = wb.new_update().delete_by_predicate(predicate)
    c = wb.new_commit()
    try:
        return c.commit(messages) if messages else None
    finally:
        c.close()


def oracle(everything: pa.Table, *masks) -> list[dict]:
    """The rows no mask deletes (a null in a mask keeps the row, as SQL's WHERE)."""
    gone = pa.array([False] * everything.num_rows)
    for m in masks:
        gone = pc.or_(gone, pc.fill_null(m, False))
    return sort_rows(everything.filter(pc.invert(gone)), ["dt", "id"])


def live(table):
    return sort_rows(read(table), ["dt", "id"])


def make(catalog, name, options, buckets=None):
    opts = dict(options)
    if buckets:
        opts.update({"bucket": str(buckets), "bucket-key": "id"})
    t = catalog.create_table(f"db.{name}", schema=SCHEMA, partition_keys=["dt"], options=opts)
    data = pa.concat_tables([rows(list(range(0, 40)), "a"), rows(list(range(40, 60)), "b")])
    write(t, data.slice(0, 30))
    write(t, data.slice(30))
    return t, data


@pytest.mark.parametrize("options", [DV, {}], ids=["deletion-vectors", "copy-on-write"])
@pytest.mark.parametrize("buckets", [None, 2], ids=["unaware", "fixed"])
def test_delete_reads_back_as_the_oracle(catalog, options, buckets):
    t, data = make(catalog, "t", options, buckets)
    pb = t.new_read_builder().new_predicate_builder()
    before = t.latest_snapshot().id
    delete(t, pb.and_(pb.greater_or_equal("id", 10), pb.less_than("id", 35)))
    assert t.latest_snapshot().id == before + 1
    first = pc.and_(pc.greater_equal(data["id"], 10), pc.less(data["id"], 35))
    assert live(t) == oracle(data, first)
    # a second delete over rows the first removed, and a null-valued condition (v is null for 7k)
    delete(t, pb.or_(pb.less_than("id", 12), pb.equal("v", "v50")))
    second = pc.or_kleene(pc.less(data["id"], 12), pc.equal(data["v"], "v50"))
    assert live(t) == oracle(data, first, second)
    # a delete matching nothing commits nothing
    assert t.new_batch_write_builder().new_update().delete_by_predicate(pb.equal("id", 999)) == []
    # None deletes every row
    delete(t, None)
    assert read(t).num_rows == 0


def test_deletion_vectors_keep_the_data_files(local_catalog):
    t, data = make(local_catalog, "t", DV)
    files = data_files(t)
    pb = t.new_read_builder().new_predicate_builder()
    delete(t, pb.equal("dt", "b"))
    assert data_files(t) == files  # only index files were written
    assert live(t) == oracle(data, pc.equal(data["dt"], "b"))


def test_copy_on_write_rewrites_only_touched_files(local_catalog):
    t, data = make(local_catalog, "t", {})
    pb = t.new_read_builder().new_predicate_builder()

    def names():
        return {e.file.file_name for e in SnapshotReader(t.core).live_entries(t.latest_snapshot())}

    before = names()  # partition a: two files, b: one
    delete(t, pb.equal("id", 45))
    after = names()
    assert len(before - after) == 1 and len(after - before) == 1  # b's file rewritten, a's untouched
    assert live(t) == oracle(data, pc.equal(data["id"], 45))
    # a file losing every row is removed, not rewritten as an empty file
    delete(t, pb.equal("dt", "b"))
    assert names() == before & after


def test_delete_after_a_rename_matches_by_field_id(local_catalog):
    from impl.schema.changes import SchemaChange

    t, data = make(local_catalog, "t", {})
    local_catalog.alter_table("db.t", [SchemaChange.rename_column("v", "w")])
    t = local_catalog.get_table("db.t")
    pb = t.new_read_builder().new_predicate_builder()
    delete(t, pb.equal("w", "v3"))
    assert live(t) == [{"dt": r["dt"], "id": r["id"], "w": r["v"]}
                       for r in oracle(data, pc.equal(data["v"], "v3"))]


@pytest.mark.parametrize("options", [DV, {}], ids=["deletion-vectors", "copy-on-write"])
def test_failing_predicate_commits_and_writes_nothing(local_catalog, options):
    t, data = make(local_catalog, "t", options)
    files, snapshot = sorted(f.path for f in t.file_io.walk_files(t.path)), t.latest_snapshot().id
    with pytest.raises(InvalidPredicateError, match="'nope'"):
        t.new_batch_write_builder().new_update().delete_by_predicate(LeafPredicate("equal", "nope", (1,)))
    with pytest.raises(InvalidPredicateError, match="cannot be evaluated"):
        t.new_batch_write_builder().new_update().delete_by_predicate(LeafPredicate("startswith", "id", ("x",)))
    assert t.latest_snapshot().id == snapshot
    assert sorted(f.path for f in t.file_io.walk_files(t.path)) == files
    assert live(t) == oracle(data)


def test_copy_on_write_conflicts_with_a_concurrent_compaction(local_catalog):
    t, data = make(local_catalog, "t", {})
    pb = t.new_read_builder().new_predicate_builder()
    wb = t.new_batch_write_builder()
    messages = wb.new_update().delete_by_predicate(pb.equal("id", 3))
    t.compact(full=True)  # replaces the files the delete read
    written = {f.file_name for m in messages for f in m.new_files}
    assert written
    with pytest.raises(FileNotLiveError):
        wb.new_commit().commit(messages)
    # the rewritten files were removed with the failed commit; the rows are all there
    assert not any(p.rsplit("/", 1)[-1] in written for p in data_files(t))
    assert live(t) == oracle(data)


def test_deletion_vectors_conflict_with_a_concurrent_delete(local_catalog):
    t, data = make(local_catalog, "t", DV)
    pb = t.new_read_builder().new_predicate_builder()
    wb = t.new_batch_write_builder()
    messages = wb.new_update().delete_by_predicate(pb.equal("id", 3))
    delete(t, pb.equal("id", 4))  # replaces the bucket's vectors the first delete read
    with pytest.raises(IndexFileConflictError):
        wb.new_commit().commit(messages)
    assert live(t) == oracle(data, pc.equal(data["id"], 4))


def test_unsupported_tables_are_refused_by_name(local_catalog):
    pk = local_catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(UnsupportedTableFeatureError, match="primary-key"):
        pk.new_batch_write_builder().new_update().delete_by_predicate(None)
    t, _ = make(local_catalog, "t", DV)
    with pytest.raises(UnsupportedTableFeatureError, match="time-travel"):
        t.copy({"scan.snapshot-id": "1"}).new_batch_write_builder().new_update().delete_by_predicate(None)
    rt = local_catalog.create_table("db.rt", schema=SCHEMA, options={"row-tracking.enabled": "true"})
    with pytest.raises(UnsupportedTableFeatureError, match="row-tracking"):
        rt.new_batch_write_builder().new_update().delete_by_predicate(None)


def test_a_copy_on_write_delete_never_loads_the_merge_tree(tmp_path):
    """Append-only use does not import impl.mergetree (impl.read.primary_key's rule)."""
    import subprocess
    import sys

    code = f"""
import sys, pyarrow as pa, impl
cat = impl.Catalog({str(tmp_path / "wh")!r}); cat.create_database("db")
t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
t.write_arrow(pa.table({{"id": [1, 2, 3]}}))
wb = t.new_batch_write_builder()
wb.new_commit().commit(wb.new_update().delete_by_predicate(t.new_read_builder().new_predicate_builder().equal("id", 2)))
assert t.to_arrow().column("id").to_pylist() == [1, 3]
print(sorted(m for m in sys.modules if m.startswith("impl.mergetree")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_positions_outside_a_file_are_refused_before_anything_is_written(local_catalog):
    import numpy as np

    from impl.errors import CommitUsageError
    from impl.write.delete import Deletions, FileDeletions, deletion_messages, find_deletions

    t, data = make(local_catalog, "t", DV)
    found = find_deletions(t.core, t.new_read_builder().new_predicate_builder().equal("id", 3))
    (d,) = found.files
    files = sorted(f.path for f in t.file_io.walk_files(t.path))
    forged = Deletions(found.snapshot_id, (FileDeletions(d.partition, d.bucket, d.total_buckets, d.file,
                                                         np.array([d.file.row_count], dtype=np.int64)),))
    with pytest.raises(CommitUsageError, match="outside file"):
        deletion_messages(t.core, forged)
    assert sorted(f.path for f in t.file_io.walk_files(t.path)) == files
    assert found.count == 1 and live(t) == oracle(data)

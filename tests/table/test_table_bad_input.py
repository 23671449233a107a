"""Bad input: typed errors naming what was wrong, and nothing written or changed."""

from __future__ import annotations

import io
import posixpath

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from table_helpers import data_files, sort_rows, write

from impl.errors import (
    BucketCountChangedError,
    CorruptMetadataError,
    OverwritePartitionError,
    SchemaMismatchError,
)
from impl.read.scan import SnapshotReader
from impl.table import DataFileError, InvalidPredicateError, NullKeyError, WriterClosedError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64())])


def good(n=5, dt="a") -> pa.Table:
    return pa.table({"dt": [dt] * n, "id": pa.array(range(n), pa.int64()), "v": [1.0] * n})


def table_state(t):
    snap = t.latest_snapshot()
    return (snap.id if snap else None, data_files(t), sorted(f.path for f in t.file_io.walk_files(t.path)))


@pytest.mark.parametrize("data, match", [
    (pa.table({"dt": ["a"], "id": pa.array([1], pa.int64())}), r"missing columns \['v'\]"),
    (pa.table({"dt": ["a"], "id": pa.array([1], pa.int64()), "v": [1.0], "x": [1]}), r"unknown columns \['x'\]"),
    (pa.table({"dt": ["a"], "id": pa.array([1], pa.int32()), "v": [1.0]}), "column 'id' has type int32"),
    (pa.table({"dt": [1], "id": pa.array([1], pa.int64()), "v": [1.0]}), "column 'dt' has type int64"),
    (pa.table({"dt": ["a"], "id": pa.array([1], pa.int64()), "v": ["x"]}), "column 'v'"),
    ({"dt": ["a"]}, "pyarrow Table"),
])
def test_schema_mismatch_writes_nothing(catalog, data, match):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    write(t, good())
    before = table_state(t)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(good(3, "b"))
    with pytest.raises(SchemaMismatchError, match=match):
        w.write_arrow(data)
    assert table_state(t) == before
    # the writer is unharmed: the earlier good rows still commit
    c.commit(w.prepare_commit())
    w.close()
    assert t.to_arrow().num_rows == 8


def test_nulls_in_key_and_partition_columns(catalog):
    # as Paimon Java: a partition column keeps the nullability it was declared with (only primary
    # keys become NOT NULL), and a null lands in partition.default-name
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    assert t.arrow_schema.field("dt").nullable
    write(t, pa.table({"dt": ["a", None], "id": pa.array([1, 2], pa.int64()), "v": [1.0, 2.0]}))
    assert t.to_arrow().sort_by("id").column("dt").to_pylist() == ["a", None]
    assert any("dt=__DEFAULT_PARTITION__/" in f for f in data_files(t))
    strict = catalog.create_table("db.strict", schema=SCHEMA.set(0, pa.field("dt", pa.string(), nullable=False)),
                                  partition_keys=["dt"])
    before = table_state(strict)
    with pytest.raises(NullKeyError, match="partition column 'dt'"):
        write(strict, pa.table({"dt": ["a", None], "id": pa.array([1, 2], pa.int64()), "v": [1.0, 2.0]}))
    assert table_state(strict) == before
    pk = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                              options={"bucket": "2"})
    with pytest.raises(NullKeyError, match="primary-key column 'id'"):
        pk.new_batch_write_builder().new_write().write_arrow(
            pa.table({"dt": ["a"], "id": pa.array([None], pa.int64()), "v": [1.0]}))
    assert not data_files(pk)


def test_nullable_input_without_nulls_is_fine(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    data = good().cast(pa.schema([pa.field("dt", pa.large_string()), ("id", pa.int64()), ("v", pa.float64())]))
    write(t, data)
    assert t.to_arrow().num_rows == 5


def test_row_kinds_on_append_table(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    w = t.new_batch_write_builder().new_write()
    with pytest.raises(SchemaMismatchError, match="only \\+I"):
        w.write_arrow(good(2), row_kinds=pa.array([0, 3], pa.int8()))
    with pytest.raises(SchemaMismatchError, match="2 rows"):
        w.write_arrow(good(2), row_kinds=np.array([0], np.int8))
    w.write_arrow(good(2), row_kinds=pa.array([0, 0], pa.int8()))
    w.close()


def test_bucket_count_change_is_rejected(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, options={"bucket": "2", "bucket-key": "id"})
    write(t, good(10))
    before = table_state(t)
    rows = sort_rows(t.to_arrow())
    with pytest.raises(BucketCountChangedError):
        write(t.copy({"bucket": "4"}), good(10))
    assert table_state(t) == before  # no snapshot, the new data files were removed
    assert sort_rows(t.to_arrow()) == rows
    # rescaling through an overwrite is allowed
    write(t.copy({"bucket": "4"}), good(6), overwrite={})
    entries = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert {e.total_buckets for e in entries} == {4}
    assert t.to_arrow().num_rows == 6


def test_overwrite_spec_with_unknown_key(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    with pytest.raises(OverwritePartitionError, match="nope"):
        t.new_batch_write_builder().overwrite({"nope": "1"})


def test_one_shot_batch_objects(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(good())
    msgs = w.prepare_commit()
    with pytest.raises(WriterClosedError):
        w.prepare_commit()
    c.commit(msgs)
    with pytest.raises(WriterClosedError):
        c.commit(msgs)
    w.close()
    with pytest.raises(WriterClosedError):
        w.write_arrow(good())
    assert t.latest_snapshot().id == 1


def test_bad_predicates_and_projections(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()
    with pytest.raises(InvalidPredicateError, match="nope"):
        pb.equal("nope", 1)
    with pytest.raises(InvalidPredicateError, match="'id'"):
        pb.equal("id", "not a number")
    with pytest.raises(InvalidPredicateError, match="startswith"):
        pb.startswith("id", "1")
    # pyarrow would truncate 1.5 to 1, and the filter would keep the rows of id 1
    with pytest.raises(InvalidPredicateError, match="literal 1.5 is not a value of the column type"):
        pb.equal("id", 1.5)
    with pytest.raises(InvalidPredicateError, match="2.5"):
        pb.is_in("id", [2, 2.5])
    assert pb.equal("id", 2.0) == pb.equal("id", 2)  # an integral float is that integer
    with pytest.raises(InvalidPredicateError, match="nope"):
        rb.with_projection(["id", "nope"])
    with pytest.raises(InvalidPredicateError):
        rb.with_filter("id = 1")


def test_corrupt_and_missing_data_files(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    write(t, good())
    (path,) = data_files(t)
    t.file_io.write_bytes(path, b"PAR1 this is not parquet")
    before = table_state(t)
    with pytest.raises(DataFileError, match=posixpath.basename(path)):
        t.to_arrow()
    t.file_io.delete(path)
    with pytest.raises(DataFileError, match="missing"):
        t.to_arrow()
    assert table_state(t)[0] == before[0]


def test_corrupt_metadata(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    write(t, good())
    snap = t.latest_snapshot()
    manifest_list = t.core.paths.manifest_path(snap.delta_manifest_list)
    t.file_io.write_bytes(manifest_list, b"garbage")
    with pytest.raises(CorruptMetadataError, match=snap.delta_manifest_list):
        t.to_arrow()
    # a write against a table whose metadata is corrupt fails without leaving data files
    files_before = data_files(t)
    with pytest.raises(CorruptMetadataError):
        write(t, good(3))
    assert data_files(t) == files_before
    assert t.latest_snapshot().id == 1
    t.file_io.write_bytes(t.core.paths.snapshot_path(1), b"{not json")
    with pytest.raises(CorruptMetadataError, match="snapshot-1"):
        t.to_arrow()


def _cut_to_avro_header(file_io, path: str) -> None:
    """Rewrite an Avro file as its header alone: a well-formed container with no records."""
    data = file_io.read_bytes(path)
    sync = fastavro.reader(io.BytesIO(data))._header["sync"]
    file_io.write_bytes(path, data[:data.index(sync) + len(sync)])


@pytest.mark.parametrize("what", ["manifest", "manifest list"])
def test_metadata_cut_at_a_block_boundary_fails_reads_as_it_fails_commits(catalog, what):
    """A manifest or list cut after a complete Avro block still parses, as a shorter file; the
    sizes and counts the snapshot and its list record must reveal it on the read path too
    (scans, incremental scans, orphan removal), not only on the commit path."""
    t = catalog.create_table("db.t", schema=SCHEMA)
    write(t, good())
    write(t, good(3, dt="b"))
    snap = t.latest_snapshot()
    if what == "manifest":
        (meta,) = t.core.manifest_list.read(snap.delta_manifest_list)
        name = meta.file_name
    else:
        name = snap.delta_manifest_list
    _cut_to_avro_header(t.file_io, t.core.paths.manifest_path(name))
    fresh = catalog.get_table("db.t")  # nothing cached from the writes
    files_before = sorted(f.path for f in t.file_io.walk_files(t.path))
    for read in (fresh.to_arrow, fresh.copy({"incremental-between": "1,2"}).to_arrow,
                 lambda: fresh.remove_orphan_files(older_than_millis=2**62)):
        with pytest.raises(CorruptMetadataError, match=name):
            got = read()
            raise AssertionError(f"the cut {what} read as {got!r}")
    assert sorted(f.path for f in t.file_io.walk_files(t.path)) == files_before


def test_corrupt_schema_file(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.file_io.write_bytes(t.core.paths.schema_path(0), b"[]")
    with pytest.raises(CorruptMetadataError, match="schema-0"):
        catalog.get_table("db.t")


def test_corrupt_and_missing_pk_data_files(catalog):
    pytest.importorskip("impl.mergetree")
    from impl.errors import PaimonError
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    write(t, good())
    (path,) = data_files(t)
    t.file_io.write_bytes(path, b"garbage")
    with pytest.raises(DataFileError, match=posixpath.basename(path)):
        t.to_arrow()
    t.file_io.delete(path)
    with pytest.raises(PaimonError, match=posixpath.basename(path)):
        t.to_arrow()


def test_commit_usage_errors(catalog):
    from impl.table import CommitUsageError
    t = catalog.create_table("db.t", schema=SCHEMA)
    with pytest.raises(CommitUsageError, match="CommitMessages"):
        t.new_batch_write_builder().new_commit().commit(["not a message"])
    with pytest.raises(CommitUsageError, match="commit_identifier"):
        t.new_stream_write_builder().new_commit().commit([])
    assert t.latest_snapshot() is None


def test_committing_the_same_messages_twice_keeps_the_published_files(tmp_path):
    """A duplicated commit is refused (FileAlreadyLiveError) without deleting the data files of
    its messages: they are live through the first commit (found by the conformance suite)."""
    import pyarrow as pa

    import impl
    from impl.errors import FileAlreadyLiveError

    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    wb = t.new_stream_write_builder().with_commit_user("u")
    w = wb.new_write()
    w.write_arrow(pa.table({"id": [1, 2, 3]}))
    msgs = w.prepare_commit(1)
    wb.new_commit().commit(msgs, 1)
    with pytest.raises(FileAlreadyLiveError):
        wb.new_commit().commit(msgs, 2)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert [s.id for s in t.snapshots()] == [1]

"""Deletion-vector tables through the table API: reads after every commit, level-0 visibility,
overwrite, bad options, and two writers of one bucket."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from table_helpers import write

from impl.errors import CommitConflictError, UnsupportedTableFeatureError
from impl.mergetree.deletion_vectors import read_deletion_vectors
from impl.mergetree.writer import InlineExecutor
from impl.predicate.predicate import PredicateBuilder
from impl.read.scan import SnapshotReader
from impl.snapshot.records import CommitKind
from impl.store.core import bucket_index_files
from impl.store.options import TableOptions
from impl.write.table_write import prepare_commit_waits_for_compaction

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
DV = {"bucket": "2", "deletion-vectors.enabled": "true"}


def _table(catalog, options=None, name="db.dv"):
    return catalog.create_table(name, schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={**DV, **(options or {})})


def _big_base(t, dts=("a",)):
    """500 rows per partition: later small writes then land above this file (no full merge)
    and supersede its rows through deletion vectors."""
    n = 500
    write(t, pa.table({"dt": [d for d in dts for _ in range(n)],
                       "id": pa.array([i for _ in dts for i in range(1, n + 1)], pa.int64()),
                       "v": ["0"] * (n * len(dts))}))


def _batch(rng, n, tag):
    ids = rng.integers(0, 40, n)
    dts = rng.choice(["a", "b"], n)
    kinds = np.where(rng.random(n) < 0.25, 3, 0).astype(np.int8)
    data = pa.table({"dt": dts.tolist(), "id": pa.array(ids, pa.int64()), "v": [f"{tag}-{i}" for i in range(n)]})
    return data, kinds


def _apply(model, data, kinds):
    for r, k in zip(data.to_pylist(), kinds.tolist(), strict=True):
        if k == 3:
            model.pop((r["dt"], r["id"]), None)
        else:
            model[(r["dt"], r["id"])] = r["v"]


def _as_dict(t):
    out = {}
    for r in t.to_pylist():
        assert (r["dt"], r["id"]) not in out, "a key read twice"
        out[(r["dt"], r["id"])] = r["v"]
    return out


def test_dv_table_reads_match_model_after_every_commit(catalog):
    t = _table(catalog, {"write-buffer-size": "4 kb", "num-sorted-run.compaction-trigger": "3"})
    rng = np.random.default_rng(7)
    model: dict = {}
    cardinality = 0
    for rnd in range(8):
        data, kinds = _batch(rng, 50, rnd)
        write(t, data, row_kinds=pa.array(kinds))
        _apply(model, data, kinds)
        assert t.latest_snapshot().commit_kind is CommitKind.COMPACT
        plan = t.new_read_builder().new_scan().plan()
        assert all(f.level >= 1 for s in plan.splits() for f in s.files)  # level 0 went up with lookup
        assert _as_dict(t.to_arrow()) == model
        # projection and filters apply to the rows left by the deletion vectors
        pred = PredicateBuilder(t.schema).less_than("id", 20)
        rb = t.new_read_builder().with_filter(pred).with_projection(["id", "dt"])
        got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        assert got.column_names == ["id", "dt"]
        assert sorted(zip(got["dt"].to_pylist(), got["id"].to_pylist(), strict=True)) == \
            sorted(k for k in model if k[1] < 20)
        index = bucket_index_files(t.core, t.latest_snapshot())
        cardinality = max(cardinality, sum(r.cardinality for fs in index.values() for f in fs
                                           for r in f.deletion_vector_ranges))
        # no row of levels >= 1 is a retraction (compaction drops them with deletion vectors)
        for e in SnapshotReader(t.core).live_entries(t.latest_snapshot()):
            assert e.file.delete_row_count == 0
    assert cardinality > 0  # rows were superseded through deletion vectors, not only by merges


def test_level0_is_invisible_until_compacted(local_catalog):
    t = _table(local_catalog)
    # a big first file, so the compaction below moves the small new file above it (no full merge)
    # and marks the old row of key 1 in a deletion vector
    write(t, pa.table({"dt": ["a"] * 500, "id": pa.array(range(1, 501), pa.int64()),
                       "v": ["x"] + [f"y{i}" for i in range(2, 501)]}))
    w_only = t.copy({"write-only": "true"})
    write(w_only, pa.table({"dt": ["a"], "id": pa.array([1], pa.int64()), "v": ["new"]}))
    assert t.latest_snapshot().commit_kind is CommitKind.APPEND
    # as Paimon's batch scan of deletion-vector tables: level 0 is skipped until compacted
    before = _as_dict(t.to_arrow())
    assert before[("a", 1)] == "x" and len(before) == 500
    t.compact()
    assert _as_dict(t.to_arrow()) == {**before, ("a", 1): "new"}
    index = bucket_index_files(t.core, t.latest_snapshot())
    vectors = {}
    for files in index.values():
        vectors.update(read_deletion_vectors(t.file_io, t.paths, files))
    assert [v.tolist() for v in vectors.values()] == [[0]]  # the old row of key 1, at position 0


@pytest.mark.parametrize("options", [{}, {"changelog-producer": "lookup"}])
def test_stream_commit_waits_for_the_lookup_compaction(local_catalog, options):
    """A streaming prepare_commit on a deletion-vector table waits for the level-0 compaction
    (Paimon's prepareCommitWaitCompaction: lookup-wait, default true), so each stream commit's
    rows of every bucket are visible at once. (It did not wait: rows of buckets whose
    compaction had not finished stayed on level 0, which batch reads skip.)"""
    t = _table(local_catalog, options)
    rows = pa.table({"dt": ["a", "a", "b", "b"], "id": pa.array([1, 2, 3, 4], pa.int64()), "v": list("wxyz")})
    builder = t.new_stream_write_builder().with_commit_user("u")
    w, c = builder.new_write(), builder.new_commit()
    try:
        w.write_arrow(rows)
        c.commit(w.prepare_commit(1), 1)
    finally:
        w.close()
        c.close()
    assert _as_dict(t.to_arrow()) == {("a", 1): "w", ("a", 2): "x", ("b", 3): "y", ("b", 4): "z"}
    assert [s.commit_kind for s in t.snapshots()] == [CommitKind.APPEND, CommitKind.COMPACT]


@pytest.mark.parametrize("options,waits", [
    ({"deletion-vectors.enabled": "true"}, True),
    ({"changelog-producer": "lookup"}, True),
    ({"deletion-vectors.enabled": "true", "lookup-wait": "false"}, False),
    ({"merge-engine": "first-row"}, True),
    ({"merge-engine": "first-row", "lookup-wait": "false"}, False),
    ({"changelog-producer": "full-compaction"}, False),
    ({}, False),
])
def test_which_stream_commits_wait_for_compaction(options, waits):
    assert prepare_commit_waits_for_compaction(TableOptions.from_options(options)) is waits


def test_writer_drops_restored_vectors_of_files_not_live(local_catalog):
    """A bucket's index file may hold the vector of a data file that is no longer live (Paimon
    Java 1.4.2 leaves one after some full compactions). The writer restoring the bucket drops it,
    so its next index file names live files only (the committer refuses anything else)."""
    from impl.read.primary_key import PrimaryKeyBucketWriter
    t = _table(local_catalog, {"bucket": "1"})
    _big_base(t)
    write(t, pa.table({"dt": ["a"], "id": pa.array([1], pa.int64()), "v": ["new"]}))
    snap = t.latest_snapshot()
    [(key, index_files)] = bucket_index_files(t.core, snap).items()
    live = [e.file for e in SnapshotReader(t.core).live_entries(snap)]
    marked = set(read_deletion_vectors(t.file_io, t.paths, index_files))
    assert marked and marked <= {f.file_name for f in live}
    # restore the bucket as if the marked file had been compacted away
    w = PrimaryKeyBucketWriter(t.core, key[0], "dt=a", 0, [f for f in live if f.file_name not in marked],
                               InlineExecutor(), restored_index=index_files)
    try:
        message = w.prepare_commit(True)
    finally:
        w.close()
    # the stale vectors' index file goes, and no new one names the file that is not live
    assert message.compact_deleted_index_files == tuple(index_files)
    assert message.compact_new_index_files == () and message.new_index_files == ()


def test_overwrite_drops_the_deletion_vectors_of_replaced_partitions(local_catalog):
    t = _table(local_catalog, {"bucket": "1"})
    _big_base(t, ("a", "b"))
    write(t, pa.table({"dt": ["a", "b"], "id": pa.array([1, 1], pa.int64()), "v": ["two", "two"]}))
    assert len(bucket_index_files(t.core, t.latest_snapshot())) == 2
    b_rows = {k: v for k, v in _as_dict(t.to_arrow()).items() if k[0] == "b"}
    write(t, pa.table({"dt": ["a"], "id": pa.array([5], pa.int64()), "v": ["over"]}), overwrite={"dt": "a"})
    assert _as_dict(t.to_arrow()) == {("a", 5): "over", **b_rows}
    assert b_rows[("b", 1)] == "two"
    a_part = [k for k in bucket_index_files(t.core, t.latest_snapshot()) if t.partition_cache.path(k[0]) == "dt=a"]
    assert a_part == []


@pytest.mark.parametrize("options,schema_pk,message", [
    ({"row-tracking.enabled": "true", "bucket": "-1"}, False, "row-tracking"),
])
def test_unsupported_dv_combinations_are_refused_before_anything_is_written(local_catalog, options, schema_pk,
                                                                            message):
    opts = {**DV, **options}
    if not schema_pk:  # append tables take deletion vectors (row-level DELETE), not with row tracking
        opts = {"deletion-vectors.enabled": "true", **options}
    with pytest.raises(UnsupportedTableFeatureError, match=message):
        local_catalog.create_table("db.bad", schema=SCHEMA, primary_keys=["dt", "id"] if schema_pk else None,
                                   partition_keys=["dt"], options=opts)
    assert not local_catalog.table_exists("db.bad")


def test_concurrent_writers_of_one_bucket_conflict_on_deletion_vectors(local_catalog):
    t = _table(local_catalog, {"bucket": "1"})
    _big_base(t)
    write(t, pa.table({"dt": ["a"], "id": pa.array([1], pa.int64()), "v": ["1"]}))  # a vector exists now
    builders = [t.new_stream_write_builder() for _ in range(2)]
    writers = [b.new_write(compaction_executor=InlineExecutor()) for b in builders]
    commits = [b.new_commit() for b in builders]
    try:
        for i, w in enumerate(writers):  # both restored from the same snapshot
            w.write_arrow(pa.table({"dt": ["a"], "id": pa.array([2], pa.int64()), "v": [f"w{i}"]}))
        messages = [w.prepare_commit(1) for w in writers]
        assert all(m.compact_deleted_index_files for ms in messages for m in ms)
        commits[0].commit(messages[0], 1)
        with pytest.raises(CommitConflictError):
            commits[1].commit(messages[1], 1)
    finally:
        for w in writers:
            w.close()
    got = _as_dict(t.to_arrow())
    assert (got[("a", 1)], got[("a", 2)], got[("a", 3)], len(got)) == ("1", "w0", "0", 500)


def test_dv_read_streams_as_batches(local_catalog):
    t = _table(local_catalog)
    write(t, pa.table({"dt": ["a"] * 4, "id": pa.array([1, 2, 3, 4], pa.int64()), "v": list("abcd")}))
    write(t, pa.table({"dt": ["a"], "id": pa.array([2], pa.int64()), "v": ["B"]}))
    rb = t.new_read_builder()
    reader = rb.new_read().to_arrow_batch_reader(rb.new_scan().plan().splits())
    got = pa.Table.from_batches(list(reader), schema=reader.schema)
    assert sorted(got.filter(pc.equal(got["id"], 2))["v"].to_pylist()) == ["B"]
    assert got.num_rows == 4


def test_append_table_reads_apply_deletion_vectors_other_engines_write(catalog):
    """Paimon writes deletion vectors into append tables (row-level DELETE / UPDATE from Spark
    or Flink); impl does not, but its reads must drop the rows they delete, also under a
    filter, and a vector beyond a file's rows is reported."""
    from impl.commit.messages import CommitMessage
    from impl.errors import DataFileError
    from impl.mergetree.deletion_vectors import DeletionVectorsMaintainer, as_positions

    t = catalog.create_table("db.append_dv", schema=SCHEMA, partition_keys=["dt"])
    write(t, pa.table({"dt": ["a"] * 6, "id": pa.array(range(6), pa.int64()), "v": list("uvwxyz")}))
    write(t, pa.table({"dt": ["b"] * 3, "id": pa.array(range(3), pa.int64()), "v": list("abc")}))
    latest = t.snapshot_manager().latest_snapshot()
    (entry,) = [e for e in SnapshotReader(t.core).live_entries(latest) if e.file.row_count == 6]

    def commit_vector(positions):
        restored = bucket_index_files(t.core, t.snapshot_manager().latest_snapshot()).get((entry.partition, entry.bucket), [])
        dvs = DeletionVectorsMaintainer(t.file_io, t.paths, restored)
        dvs.apply((), {entry.file.file_name: as_positions(positions)})
        change = dvs.write()
        c = t.new_stream_write_builder().new_commit()
        c.commit([CommitMessage(entry.partition, entry.bucket, entry.total_buckets, new_index_files=change.added,
                                deleted_index_files=change.removed)], commit_identifier=positions[0])
        c.close()

    commit_vector([1, 4])
    rows = sorted((r["dt"], r["id"]) for r in t.to_arrow().to_pylist())
    assert rows == [("a", 0), ("a", 2), ("a", 3), ("a", 5), ("b", 0), ("b", 1), ("b", 2)]
    pb = t.new_read_builder().new_predicate_builder()
    rb = t.new_read_builder().with_filter(pb.greater_or_equal("id", 1))
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert sorted((r["dt"], r["id"]) for r in got.to_pylist()) == [("a", 2), ("a", 3), ("a", 5), ("b", 1), ("b", 2)]
    # an older snapshot has no vector: time travel reads every row
    assert t.copy({"scan.snapshot-id": str(latest.id)}).to_arrow().num_rows == 9

    commit_vector([2, 9])  # row 9 of a 6-row file: corrupt
    with pytest.raises(DataFileError, match="deletes row 9 of 6"):
        t.to_arrow()

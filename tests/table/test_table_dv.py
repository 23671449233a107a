"""Deletion-vector tables through the table API: reads after every commit, level-0 visibility,
overwrite, bad options, and two writers of one bucket."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from table_helpers import write

from impl.errors import CommitConflictError
from impl.format.json_records import CommitKind
from impl.mergetree.deletion_vectors import read_deletion_vectors
from impl.mergetree.writer import InlineExecutor
from impl.table.errors import UnsupportedTableFeatureError
from impl.table.pk import bucket_index_files
from impl.table.predicate import PredicateBuilder
from impl.table.scan import SnapshotReader

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
        index = bucket_index_files(t, t.latest_snapshot())
        cardinality = max(cardinality, sum(r.cardinality for fs in index.values() for f in fs
                                           for r in f.deletion_vector_ranges))
        # no row of levels >= 1 is a retraction (compaction drops them with deletion vectors)
        for e in SnapshotReader(t).live_entries(t.latest_snapshot()):
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
    index = bucket_index_files(t, t.latest_snapshot())
    vectors = {}
    for files in index.values():
        vectors.update(read_deletion_vectors(t.file_io, t.paths, files))
    assert [v.tolist() for v in vectors.values()] == [[0]]  # the old row of key 1, at position 0


def test_overwrite_drops_the_deletion_vectors_of_replaced_partitions(local_catalog):
    t = _table(local_catalog, {"bucket": "1"})
    _big_base(t, ("a", "b"))
    write(t, pa.table({"dt": ["a", "b"], "id": pa.array([1, 1], pa.int64()), "v": ["two", "two"]}))
    assert len(bucket_index_files(t, t.latest_snapshot())) == 2
    b_rows = {k: v for k, v in _as_dict(t.to_arrow()).items() if k[0] == "b"}
    write(t, pa.table({"dt": ["a"], "id": pa.array([5], pa.int64()), "v": ["over"]}), overwrite={"dt": "a"})
    assert _as_dict(t.to_arrow()) == {("a", 5): "over", **b_rows}
    assert b_rows[("b", 1)] == "two"
    a_part = [k for k in bucket_index_files(t, t.latest_snapshot()) if t.partition_cache.path(k[0]) == "dt=a"]
    assert a_part == []


@pytest.mark.parametrize("options,schema_pk,message", [
    ({"deletion-vectors.bitmap64": "true"}, True, "bitmap64"),
    ({}, False, "primary-key tables only"),
])
def test_unsupported_dv_combinations_are_refused_before_anything_is_written(local_catalog, options, schema_pk,
                                                                            message):
    opts = {**DV, **options}
    if not schema_pk:
        opts = {"deletion-vectors.enabled": "true"}
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

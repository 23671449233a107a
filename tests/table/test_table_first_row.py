"""first-row tables as Paimon Java keeps them: level 0 is forced up at every commit, a level-0
key already held by a higher level is dropped by that compaction (the first row wins), batch
scans skip level 0, and the ``lookup`` changelog producer emits +I for a key's first row only."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from table_helpers import write

from impl.errors import InvalidOptionError
from impl.mergetree.merge_engine import MergeSpec, merge_kv
from impl.mergetree.read import read_kv_files
from impl.read.scan import SnapshotReader
from impl.snapshot.records import CommitKind

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
FIRST_ROW = {"bucket": "2", "merge-engine": "first-row", "num-sorted-run.compaction-trigger": "3"}


def _table(catalog, options=None, name="db.fr"):
    return catalog.create_table(name, schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={**FIRST_ROW, **(options or {})})


def _as_dict(t):
    out = {}
    for r in t.to_pylist():
        assert (r["dt"], r["id"]) not in out, "a key read twice"
        out[(r["dt"], r["id"])] = r["v"]
    return out


def _batch(rng, n, tag):
    ids = rng.integers(0, 60, n)
    dts = rng.choice(["a", "b"], n)
    return pa.table({"dt": dts.tolist(), "id": pa.array(ids, pa.int64()), "v": [f"{tag}-{i}" for i in range(n)]})


def _levels_hold_one_row_per_key(t) -> int:
    """Asserts that no live file is at level 0 and that the level >= 1 files hold each key once
    (the rows, not merged, per bucket); returns how many rows they hold."""
    entries = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert entries and all(e.file.level >= 1 for e in entries), [e.file.level for e in entries]
    by_bucket: dict = {}
    for e in entries:
        by_bucket.setdefault((e.partition, e.bucket), []).append(e.file)
    total = 0
    for (part, bucket), files in by_bucket.items():
        kv = read_kv_files(t.file_io, t.core.paths, t.schema, t.core.partition_cache.path(part), bucket, files,
                           columns=["dt", "id"])
        distinct = kv.group_by(["dt", "id"]).aggregate([]).num_rows
        assert distinct == kv.num_rows, "a key in two level >= 1 rows"
        total += kv.num_rows
    return total


def test_commits_force_level0_up_and_keep_the_first_row(local_catalog):
    t = _table(local_catalog)
    rng = np.random.default_rng(16)
    model: dict = {}
    for rnd in range(8):
        data = _batch(rng, 40, rnd)
        write(t, data)
        for r in data.to_pylist():
            model.setdefault((r["dt"], r["id"]), r["v"])
        assert t.latest_snapshot().commit_kind is CommitKind.COMPACT
        assert _levels_hold_one_row_per_key(t) == len(model)
        assert _as_dict(t.to_arrow()) == model, f"round {rnd}"


def test_stream_commits_wait_for_the_level0_compaction(local_catalog):
    t = _table(local_catalog)
    builder = t.new_stream_write_builder()
    w, c = builder.new_write(), builder.new_commit()
    model: dict = {}
    rng = np.random.default_rng(5)
    for rnd in range(3):
        data = _batch(rng, 30, rnd)
        w.write_arrow(data)
        c.commit(w.prepare_commit(rnd), rnd)
        for r in data.to_pylist():
            model.setdefault((r["dt"], r["id"]), r["v"])
        assert _levels_hold_one_row_per_key(t) == len(model)
        assert _as_dict(t.to_arrow()) == model
    w.close()


def test_batch_scan_skips_level0_until_compacted(local_catalog):
    t = _table(local_catalog, {"bucket": "1"})
    write(t, pa.table({"dt": ["a", "a"], "id": pa.array([1, 2], pa.int64()), "v": ["one", "two"]}))
    w_only = t.copy({"write-only": "true"})
    write(w_only, pa.table({"dt": ["a", "a"], "id": pa.array([1, 3], pa.int64()), "v": ["later", "three"]}))
    assert t.latest_snapshot().commit_kind is CommitKind.APPEND
    assert _as_dict(t.to_arrow()) == {("a", 1): "one", ("a", 2): "two"}  # level 0 not read
    # the write-only commit's level-0 file is still in the snapshot
    entries = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    levels = sorted(e.file.level for e in entries)
    assert levels[0] == 0 and levels[1] >= 1 and len(levels) == 2
    t.compact()
    assert _as_dict(t.to_arrow()) == {("a", 1): "one", ("a", 2): "two", ("a", 3): "three"}
    assert _levels_hold_one_row_per_key(t) == 3


def test_a_key_in_a_higher_level_is_dropped_from_level0_output(local_catalog):
    """A large base file stays where it is (the level-0 file lands above it, no full merge); the
    level-0 row of a key it holds is dropped, not written next to it."""
    t = _table(local_catalog, {"bucket": "1"})
    n = 2000
    write(t, pa.table({"dt": ["a"] * n, "id": pa.array(range(n), pa.int64()), "v": ["base"] * n}))
    base = {e.file.file_name for e in SnapshotReader(t.core).live_entries(t.latest_snapshot())}
    write(t, pa.table({"dt": ["a", "a"], "id": pa.array([5, n + 1], pa.int64()), "v": ["dup", "new"]}))
    live = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert base <= {e.file.file_name for e in live}  # the base file was not rewritten
    assert _levels_hold_one_row_per_key(t) == n + 1
    got = _as_dict(t.to_arrow())
    assert got[("a", 5)] == "base" and got[("a", n + 1)] == "new" and len(got) == n + 1
    # the merged view of all files agrees (the dropped row is nowhere)
    files = [e.file for e in live]
    kv = read_kv_files(t.file_io, t.core.paths, t.schema, "dt=a", 0, files)
    assert "dup" not in kv.column("v").to_pylist()
    spec = MergeSpec.from_schema(t.schema, t.core.merge_tree_options)
    assert merge_kv(kv, spec, True).num_rows == n + 1


def test_lookup_changelog_emits_the_first_row_of_a_key_only(local_catalog):
    t = _table(local_catalog, {"changelog-producer": "lookup"})
    write(t, pa.table({"dt": ["a", "a"], "id": pa.array([1, 2], pa.int64()), "v": ["x", "y"]}))
    s1 = t.latest_snapshot().id
    write(t, pa.table({"dt": ["a", "a", "a"], "id": pa.array([1, 3, 3], pa.int64()), "v": ["x2", "z", "z2"]}))
    s2 = t.latest_snapshot().id

    def changes(a, b):
        got = t.copy({"incremental-between": f"{a},{b}"}).to_arrow()
        return sorted((r["id"], r["_VALUE_KIND"], r["v"]) for r in got.to_pylist())

    assert changes(0, s1) == [(1, 0, "x"), (2, 0, "y")]
    assert changes(s1, s2) == [(3, 0, "z")]
    assert _as_dict(t.to_arrow()) == {("a", 1): "x", ("a", 2): "y", ("a", 3): "z"}


@pytest.mark.parametrize("options,match", [
    ({"changelog-producer": "full-compaction"}, "'none' and 'lookup'"),
    ({"changelog-producer": "input"}, "'none' and 'lookup'"),
    ({"deletion-vectors.enabled": "true"}, "needs no deletion vectors"),
])
def test_first_row_refuses_what_paimon_refuses(local_catalog, options, match):
    with pytest.raises(InvalidOptionError, match=match):
        _table(local_catalog, options)
    assert not local_catalog.table_exists("db.fr")

"""Deletion vectors and the lookup / full-compaction changelog producers for the merging engines
(partial-update, aggregation, deduplicate with ``sequence.field``): compaction merges a key's
looked-up row (levels >= 1, outside the compaction) into its new rows and marks the old row
deleted (Paimon's LookupMergeFunction), so a read of levels >= 1 without merge equals the
merge-on-read of the same writes to a table without deletion vectors; the changelog, replayed
from empty, gives the table."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from table_helpers import write

from impl.mergetree.deletion_vectors import read_deletion_vectors
from impl.mergetree.read import read_kv_files
from impl.read.scan import SnapshotReader
from impl.store.core import bucket_index_files

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("n", pa.int64()),
                    ("ts", pa.int64())])
ENGINES = {
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                    "fields.v.aggregate-function": "max", "fields.v.ignore-retract": "true",
                    "fields.ts.aggregate-function": "max", "fields.ts.ignore-retract": "true"},
    "sequence.field": {"sequence.field": "ts"},
}


def _table(catalog, name, options):
    return catalog.create_table(name, schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "2", "num-sorted-run.compaction-trigger": "3", **options})


def _batch(rng, n, rnd, engine):
    """Random rows; -D for partial-update (ignored: ignore-delete); -U for aggregation (also of
    keys with no +I yet: stored as Paimon's +I row of negated sums); sequence.field: inserts only (once a
    compaction drops a delete, an older-ordered row can come back: Paimon behaves the same, so
    the result depends on when compactions ran)."""
    ids = rng.integers(0, 40, n)
    dts = rng.choice(["a", "b"], n)
    v = [None if rng.random() < 0.3 else f"{rnd}-{i:02d}" for i in range(n)]
    nums = [None if rng.random() < 0.2 else int(x) for x in rng.integers(-5, 10, n)]
    ts = rng.integers(0, 50, n)
    kinds = np.where(rng.random(n) < 0.2, 3, 0).astype(np.int8)
    if engine == "aggregation":
        kinds = np.where(rng.random(n) < 0.3, 1, 0).astype(np.int8)  # -U: sum subtracts
    elif engine == "sequence.field":
        kinds = np.zeros(n, dtype=np.int8)
    data = pa.table({"dt": dts.tolist(), "id": pa.array(ids, pa.int64()), "v": v, "n": pa.array(nums, pa.int64()),
                     "ts": pa.array(ts, pa.int64())})
    return data, pa.array(kinds)


def _rows(t):
    out = {}
    for r in t.to_arrow().to_pylist():
        key = (r["dt"], r["id"])
        assert key not in out, "a key read twice"
        out[key] = (r["v"], r["n"], r["ts"])
    return out


def _one_valid_row_per_key(t):
    snap = t.latest_snapshot()
    index = bucket_index_files(t.core, snap)
    by_bucket: dict = {}
    for e in SnapshotReader(t.core).live_entries(snap):
        by_bucket.setdefault((e.partition, e.bucket), []).append(e.file)
    deleted = 0
    for (part, bucket), files in by_bucket.items():
        vectors = read_deletion_vectors(t.file_io, t.core.paths, index.get((part, bucket), ()))
        deleted += sum(len(v) for v in vectors.values())
        keys = []
        for f in files:
            if f.level == 0:
                continue
            kv = read_kv_files(t.file_io, t.core.paths, t.schema, t.core.partition_cache.path(part), bucket, [f],
                               columns=["dt", "id"])
            if f.file_name in vectors:
                keep = np.ones(kv.num_rows, dtype=bool)
                keep[vectors[f.file_name]] = False
                kv = kv.filter(pa.array(keep))
            keys.append(kv)
        if keys:
            kv = pa.concat_tables(keys)
            assert kv.group_by(["dt", "id"]).aggregate([]).num_rows == kv.num_rows, "a key valid twice"
    return deleted


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_dv_reads_equal_merge_on_read(local_catalog, engine):
    dv = _table(local_catalog, "db.dv", {**ENGINES[engine], "deletion-vectors.enabled": "true"})
    plain = _table(local_catalog, "db.plain", ENGINES[engine])
    rng = np.random.default_rng(17)
    deleted = 0
    for rnd in range(8):
        data, kinds = _batch(rng, 40, rnd, engine)
        write(dv, data, row_kinds=kinds)
        write(plain, data, row_kinds=kinds)
        assert _rows(dv) == _rows(plain), f"round {rnd}"
        deleted = _one_valid_row_per_key(dv)
    assert deleted > 0  # old rows were superseded through deletion vectors, not rewritten


def _replay(state, t, start, end):
    got = t.copy({"incremental-between": f"{start},{end}"}).to_arrow()
    for r in got.to_pylist():
        key = (r["dt"], r["id"])
        row = (r["v"], r["n"], r["ts"])
        if r["_VALUE_KIND"] in (0, 2):
            state[key] = row
        else:
            assert state.pop(key, None) == row, f"retraction of {key} carries {row}"


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_changelog_of_merging_engines_replays_to_the_table(local_catalog, engine, producer):
    options = {**ENGINES[engine], "changelog-producer": producer}
    if producer == "lookup":
        options["deletion-vectors.enabled"] = "true"
    t = _table(local_catalog, "db.cl", options)
    rng = np.random.default_rng(18)
    replayed: dict = {}
    last = 0
    for rnd in range(6):
        data, kinds = _batch(rng, 30, rnd, engine)
        write(t, data, row_kinds=kinds)
        latest = t.latest_snapshot().id
        _replay(replayed, t, last, latest)
        last = latest
        assert replayed == _rows(t), f"round {rnd}"


def test_partial_update_fills_columns_from_the_looked_up_row(local_catalog):
    t = _table(local_catalog, "db.pu", {"merge-engine": "partial-update", "deletion-vectors.enabled": "true",
                                         "bucket": "1"})
    n = 1000  # a large first file: later small writes land above it (no full merge)
    write(t, pa.table({"dt": ["a"] * n, "id": pa.array(range(n), pa.int64()), "v": ["base"] * n,
                       "n": pa.array([1] * n, pa.int64()), "ts": pa.array([0] * n, pa.int64())}))
    base = {e.file.file_name for e in SnapshotReader(t.core).live_entries(t.latest_snapshot())}
    write(t, pa.table({"dt": ["a"], "id": pa.array([7], pa.int64()), "v": pa.array([None], pa.string()),
                       "n": pa.array([42], pa.int64()), "ts": pa.array([None], pa.int64())}))
    assert base <= {e.file.file_name for e in SnapshotReader(t.core).live_entries(t.latest_snapshot())}
    assert _one_valid_row_per_key(t) == 1
    rows = _rows(t)
    assert rows[("a", 7)] == ("base", 42, 0) and rows[("a", 8)] == ("base", 1, 0) and len(rows) == n

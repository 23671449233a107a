"""Changelog producers ``lookup`` and ``full-compaction``: the changelog of every commit,
replayed from an empty table, gives the table's rows at that commit; updates show as -U old /
+U new, deletes as -D old."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from table_helpers import write

from impl.errors import InvalidOptionError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def _table(catalog, options):
    return catalog.create_table("db.cl", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "2", **options})


def _changes(t, start, end):
    got = t.copy({"incremental-between": f"{start},{end}"}).to_arrow()
    return [((r["dt"], r["id"]), r["_VALUE_KIND"], r["v"]) for r in got.to_pylist()]


def _replay(state, changes):
    for key, kind, v in changes:
        if kind in (0, 2):
            state[key] = v
        else:
            assert state.get(key) == v, f"retraction of {key} carries {v}, the row was {state.get(key)}"
            del state[key]


@pytest.mark.parametrize("options", [
    {"changelog-producer": "lookup"},
    {"changelog-producer": "lookup", "deletion-vectors.enabled": "true"},
    {"changelog-producer": "full-compaction"},
    {"changelog-producer": "full-compaction", "deletion-vectors.enabled": "true"},
], ids=["lookup", "lookup+dv", "full-compaction", "full-compaction+dv"])
def test_changelog_replays_to_the_table(local_catalog, options):
    t = _table(local_catalog, options)
    rng = np.random.default_rng(3)
    replayed: dict = {}
    last = 0
    for rnd in range(6):
        n = 30
        ids = rng.integers(0, 20, n)
        dts = rng.choice(["a", "b"], n)
        kinds = np.where(rng.random(n) < 0.25, 3, 0).astype(np.int8)
        data = pa.table({"dt": dts.tolist(), "id": pa.array(ids, pa.int64()), "v": [f"{rnd}-{i}" for i in range(n)]})
        write(t, data, row_kinds=pa.array(kinds))
        latest = t.latest_snapshot().id
        _replay(replayed, _changes(t, last, latest))
        last = latest
        state = {(r["dt"], r["id"]): r["v"] for r in t.to_arrow().to_pylist()}
        assert replayed == state, f"round {rnd}"


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_update_and_delete_show_as_retract_pairs(local_catalog, producer):
    t = _table(local_catalog, {"changelog-producer": producer})
    write(t, pa.table({"dt": ["a", "a"], "id": pa.array([1, 2], pa.int64()), "v": ["x", "y"]}))
    s1 = t.latest_snapshot().id
    assert sorted(_changes(t, 0, s1)) == [(("a", 1), 0, "x"), (("a", 2), 0, "y")]
    write(t, pa.table({"dt": ["a", "a"], "id": pa.array([1, 2], pa.int64()), "v": ["x2", None]}),
          row_kinds=pa.array([0, 3], pa.int8()))
    s2 = t.latest_snapshot().id
    assert _changes(t, s1, s2) == [(("a", 1), 1, "x"), (("a", 1), 2, "x2"), (("a", 2), 3, "y")]


@pytest.mark.parametrize("options", [{"sequence.field": "id"}, {"merge-engine": "aggregation"}])
def test_lookup_producer_of_merging_engines_needs_deletion_vectors(local_catalog, options):
    with pytest.raises(InvalidOptionError, match="deletion-vectors.enabled"):
        _table(local_catalog, {"changelog-producer": "lookup", **options})
    assert not local_catalog.table_exists("db.cl")


def test_lookup_producer_of_partial_update_without_vectors_is_read_not_written(local_catalog):
    """Paimon writes such tables (tests/paimon_java/test_java_field_ids.py reads them); this
    library's writer refuses them by name."""
    t = _table(local_catalog, {"changelog-producer": "lookup", "merge-engine": "partial-update"})
    assert t.to_arrow().num_rows == 0
    with pytest.raises(InvalidOptionError, match="partial-update.*lookup.*deletion-vectors.enabled"):
        write(t, pa.table({"dt": ["a"], "id": pa.array([1], pa.int64()), "v": ["x"]}))
    assert t.latest_snapshot() is None

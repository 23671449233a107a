"""pypaimon 2.1.0 reads impl's deletion-vector tables with the same rows as impl, after every
compaction (every COMPACT snapshot), and both equal the expected upsert/delete result."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pypaimon_env import run_pypaimon

import impl
from impl.mergetree.writer import InlineExecutor
from impl.snapshot.records import CommitKind
from impl.store.core import bucket_index_files

READ_SNAPSHOTS = """
from pypaimon import CatalogFactory
catalog = CatalogFactory.create({"warehouse": params["warehouse"]})
base = catalog.get_table(params["table"])
result = {}
for sid in params["snapshots"]:
    table = base.copy({"scan.snapshot-id": str(sid)})
    rb = table.new_read_builder()
    arrow = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    rows = arrow.to_pylist() if arrow is not None else []
    result[str(sid)] = sorted([r["dt"], r["k1"], r["k2"], r["v"]] for r in rows)
"""

SCHEMA = pa.schema([("dt", pa.string()), ("k1", pa.int32()), ("k2", pa.string()), ("v", pa.int64())])


def _rows(table, snapshot_id):
    t = table.copy({"scan.snapshot-id": str(snapshot_id)}).to_arrow()
    return sorted([r["dt"], r["k1"], r["k2"], r["v"]] for r in t.to_pylist())


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_pypaimon_reads_impl_dv_tables_after_every_compaction(tmp_path, pypaimon, producer):
    wh = str(tmp_path / "wh")
    cat = impl.Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.dv", schema=SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k1", "k2"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true",
                                      "num-sorted-run.compaction-trigger": "3", "changelog-producer": producer})
    rng = np.random.default_rng(15)
    model: dict[tuple, int] = {}
    expected: dict[int, list] = {}
    stream = table.new_stream_write_builder()
    # compactions run inline, so each streaming commit carries its compaction (deterministic)
    swrite, scommit = stream.new_write(compaction_executor=InlineExecutor()), stream.new_commit()
    for rnd in range(10):
        n = 60
        dt = rng.choice(["a", "b"], n).tolist()
        k1 = rng.integers(0, 30, n).astype(np.int32).tolist()
        k2 = rng.choice(["x", "y"], n).tolist()
        v = (rng.integers(0, 1000, n) + rnd * 1000).tolist()
        kinds = np.where(rng.random(n) < 0.2, 3, 0).astype(np.int8)
        batch = pa.table({"dt": dt, "k1": pa.array(k1, pa.int32()), "k2": k2, "v": v}, schema=SCHEMA)
        for row, kind in zip(batch.to_pylist(), kinds.tolist(), strict=True):
            key = (row["dt"], row["k1"], row["k2"])
            if kind == 3:
                model.pop(key, None)
            else:
                model[key] = row["v"]
        # A streaming writer keeps its LSM state, deletion vectors and lookup cache between
        # commits; every third round it is replaced by a new one, restored from the snapshot
        # (files and deletion vectors).
        if rnd % 3 == 2:
            swrite.close()
            swrite = stream.new_write(compaction_executor=InlineExecutor())
        swrite.write_arrow(batch, row_kinds=kinds)
        scommit.commit(swrite.prepare_commit(rnd), rnd)
        snap = table.latest_snapshot()
        assert snap.commit_kind is CommitKind.COMPACT
        expected[snap.id] = sorted([*k, val] for k, val in model.items())
    swrite.close()
    # deletion vectors were written (index files live), and the latest files are all above level 0
    index = bucket_index_files(table.core, table.latest_snapshot())
    assert sum(r.cardinality for files in index.values() for f in files for r in f.deletion_vector_ranges) > 0
    impl_rows = {sid: _rows(table, sid) for sid in expected}
    assert impl_rows == expected
    got = run_pypaimon(READ_SNAPSHOTS, warehouse=wh, table="db.dv", snapshots=sorted(expected))
    assert {int(k): [list(r) for r in v] for k, v in got.items()} == expected


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_pypaimon_reads_impl_first_row_tables_after_every_commit(tmp_path, pypaimon, producer):
    """first-row: impl forces level 0 up at every commit and drops level-0 keys a higher level
    holds; pypaimon's batch scan skips level 0 and reads levels >= 1 without merge, so it sees
    exactly the first row of every key."""
    wh = str(tmp_path / "wh")
    cat = impl.Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.fr", schema=SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k1", "k2"],
                             options={"bucket": "2", "merge-engine": "first-row",
                                      "num-sorted-run.compaction-trigger": "3", "changelog-producer": producer})
    rng = np.random.default_rng(16)
    model: dict[tuple, int] = {}
    expected: dict[int, list] = {}
    stream = table.new_stream_write_builder()
    swrite, scommit = stream.new_write(compaction_executor=InlineExecutor()), stream.new_commit()
    for rnd in range(8):
        n = 50
        batch = pa.table({"dt": rng.choice(["a", "b"], n).tolist(),
                          "k1": pa.array(rng.integers(0, 30, n).astype(np.int32)),
                          "k2": rng.choice(["x", "y"], n).tolist(),
                          "v": (rng.integers(0, 1000, n) + rnd * 1000).tolist()}, schema=SCHEMA)
        for row in batch.to_pylist():
            model.setdefault((row["dt"], row["k1"], row["k2"]), row["v"])
        if rnd % 3 == 2:  # a new writer restores its levels (and lookup) from the snapshot
            swrite.close()
            swrite = stream.new_write(compaction_executor=InlineExecutor())
        swrite.write_arrow(batch)
        scommit.commit(swrite.prepare_commit(rnd), rnd)
        snap = table.latest_snapshot()
        assert snap.commit_kind is CommitKind.COMPACT
        expected[snap.id] = sorted([*k, val] for k, val in model.items())
    swrite.close()
    assert {sid: _rows(table, sid) for sid in expected} == expected
    got = run_pypaimon(READ_SNAPSHOTS, warehouse=wh, table="db.fr", snapshots=sorted(expected))
    assert {int(k): [list(r) for r in v] for k, v in got.items()} == expected


@pytest.mark.parametrize("engine,options", [
    ("partial-update", {"merge-engine": "partial-update"}),
    ("aggregation", {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}),
    ("sequence.field", {"sequence.field": "v"}),
], ids=["partial-update", "aggregation", "sequence.field"])
def test_pypaimon_reads_impl_dv_tables_of_merging_engines(tmp_path, pypaimon, engine, options):
    """Deletion vectors with partial-update / aggregation / sequence.field: compaction merges a
    key's looked-up row into its new rows; pypaimon reads levels >= 1 without merge (minus the
    deleted positions) and sees the same rows as impl's merge-on-read of a table without them."""
    wh = str(tmp_path / "wh")
    cat = impl.Catalog(wh)
    cat.create_database("db")
    common = {"bucket": "2", "num-sorted-run.compaction-trigger": "3", **options}
    table = cat.create_table("db.dv", schema=SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k1", "k2"],
                             options={**common, "deletion-vectors.enabled": "true", "changelog-producer": "lookup"})
    plain = cat.create_table("db.plain", schema=SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k1", "k2"],
                             options=common)
    rng = np.random.default_rng(19)
    expected: dict[int, list] = {}
    stream = table.new_stream_write_builder()
    swrite, scommit = stream.new_write(compaction_executor=InlineExecutor()), stream.new_commit()
    for rnd in range(8):
        n = 50
        vals = [None if engine == "partial-update" and rng.random() < 0.3 else int(x)
                for x in rng.integers(0, 1000, n)]
        batch = pa.table({"dt": rng.choice(["a", "b"], n).tolist(),
                          "k1": pa.array(rng.integers(0, 30, n).astype(np.int32)),
                          "k2": rng.choice(["x", "y"], n).tolist(), "v": pa.array(vals, pa.int64())}, schema=SCHEMA)
        if rnd % 3 == 2:
            swrite.close()
            swrite = stream.new_write(compaction_executor=InlineExecutor())
        swrite.write_arrow(batch)
        scommit.commit(swrite.prepare_commit(rnd), rnd)
        wb = plain.new_batch_write_builder()
        with wb.new_write() as w:
            w.write_arrow(batch)
            wb.new_commit().commit(w.prepare_commit())
        snap = table.latest_snapshot()
        assert snap.commit_kind is CommitKind.COMPACT
        expected[snap.id] = _rows(plain, plain.latest_snapshot().id)
    swrite.close()
    index = bucket_index_files(table.core, table.latest_snapshot())
    assert sum(r.cardinality for files in index.values() for f in files for r in f.deletion_vector_ranges) > 0
    assert {sid: _rows(table, sid) for sid in expected} == expected
    got = run_pypaimon(READ_SNAPSHOTS, warehouse=wh, table="db.dv", snapshots=sorted(expected))
    assert {int(k): [list(r) for r in v] for k, v in got.items()} == expected

"""Cross-partition upserts (primary key without a partition key, bucket -1): a key written with
other partition values moves there, the old partition's row deleted (merge engine deduplicate).

Checked against a reference model: a dict keyed by the primary key holding the latest row."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from table_helpers import read, sort_rows, write

from impl import SchemaChange
from impl.errors import KeyIndexConflictError, UnsupportedOptionError, UnsupportedTableFeatureError
from impl.read.scan import SnapshotReader

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("v", pa.string())])


def make(catalog, target: int = 3, **options):
    opts = {"dynamic-bucket.target-row-num": str(target), **{k: str(v) for k, v in options.items()}}
    return catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], partition_keys=["dt"], options=opts)


def batch(rows) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "dt": dt, "v": v} for i, dt, v in rows], schema=SCHEMA)


def apply(model: dict, rows) -> None:
    for i, dt, v in rows:
        model[i] = {"id": i, "dt": dt, "v": v}


def expect(table, model: dict) -> None:
    got = sort_rows(read(table), ["id"])
    assert got == sorted(model.values(), key=lambda r: r["id"])


def key_locations(table) -> dict[tuple[str, int], int]:
    """(partition path, bucket) -> live files there."""
    out: dict[tuple[str, int], int] = {}
    for e in SnapshotReader(table.core).live_entries(table.core.snapshot_manager.latest_snapshot()):
        k = (table.core.partition_cache.path(e.partition), e.bucket)
        out[k] = out.get(k, 0) + 1
    return out


def test_create_and_write_new_keys(catalog):
    t = make(catalog)
    assert t.bucket_mode().name == "CROSS_PARTITION"
    model: dict = {}
    rows = [(i, "a" if i % 2 else "b", f"v{i}") for i in range(10)]
    write(t, batch(rows))
    apply(model, rows)
    expect(t, model)
    # target 3 keys per bucket: 5 keys per partition fill buckets 0 and 1
    assert {b for (_, b) in key_locations(t)} == {0, 1}


def test_key_moves_across_batches_and_writers(catalog):
    t = make(catalog)
    model: dict = {}
    first = [(i, "a", f"a{i}") for i in range(6)]
    write(t, batch(first))
    apply(model, first)
    # a new writer bootstraps its index from the table: keys 0..2 move to b, key 4 updates in a
    second = [(0, "b", "b0"), (1, "b", "b1"), (2, "c", "c2"), (4, "a", "a4'")]
    write(t, batch(second))
    apply(model, second)
    expect(t, model)
    # and back again: 0 returns to a, 2 moves c -> b
    third = [(0, "a", "a0''"), (2, "b", "b2")]
    write(t, batch(third))
    apply(model, third)
    expect(t, model)
    assert sorted(r["id"] for r in read(t).to_pylist()) == list(range(6))


def test_key_moves_twice_within_one_batch(catalog):
    t = make(catalog)
    model: dict = {}
    base = [(1, "a", "x"), (2, "a", "y")]
    write(t, batch(base))
    apply(model, base)
    rows = [(1, "b", "1b"), (1, "c", "1c"), (1, "a", "1a"), (2, "b", "2b"), (3, "a", "3a"), (3, "b", "3b"),
            (3, "b", "3b'"), (2, "b", "2b'")]
    write(t, batch(rows))
    apply(model, rows)
    expect(t, model)


def test_stream_writer_keeps_its_index_across_commits(catalog):
    t = make(catalog, target=2)
    model: dict = {}
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        for ident, rows in enumerate([[(1, "a", "1"), (2, "a", "2")], [(1, "b", "1b")], [(1, "a", "1a"), (3, "b", "3")]]):
            w.write_arrow(batch(rows))
            c.commit(w.prepare_commit(ident), ident)
            apply(model, rows)
            expect(t, model)
    finally:
        w.close()
        c.close()


def test_random_against_model(catalog):
    t = make(catalog, target=4)
    model: dict = {}
    rng = random.Random(7)
    for round_ in range(6):
        rows = [(rng.randrange(30), rng.choice("pqrs"), f"r{round_}-{j}") for j in range(rng.randrange(1, 40))]
        if round_ % 2:
            write(t, batch(rows))  # a new writer per batch: the index is bootstrapped each time
        else:
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            try:  # two batches through one writer: the index carries over in memory
                half = len(rows) // 2
                w.write_arrow(batch(rows[:half]))
                w.write_arrow(batch(rows[half:]))
                c.commit(w.prepare_commit())
            finally:
                w.close()
                c.close()
        apply(model, rows)
        expect(t, model)


def test_delete_row_of_a_moved_key(catalog):
    t = make(catalog)
    write(t, batch([(1, "a", "x"), (2, "a", "y")]))
    # a -D naming another partition still deletes the key (its old row retracted first)
    write(t, batch([(1, "b", "x")]), row_kinds=np.array([3], np.int8))
    expect(t, {2: {"id": 2, "dt": "a", "v": "y"}})


@pytest.mark.parametrize("options, match", [
    ({"deletion-vectors.enabled": "true"}, "deletion-vectors"),
    ({"ignore-delete": "true"}, "ignore-delete"),
])
def test_unimplemented_parts_refused_by_name(catalog, options, match):
    t = make(catalog, **options)
    wb = t.new_batch_write_builder()
    with pytest.raises(UnsupportedTableFeatureError, match=match):
        wb.new_write()


def test_index_ttl_refused_at_create(catalog):
    # a key index that forgets keys lets a key that moves later stay in its old partition too:
    # the option registry refuses it as soon as a table would carry it
    with pytest.raises(UnsupportedOptionError, match="cross-partition-upsert.index-ttl"):
        make(catalog, **{"cross-partition-upsert.index-ttl": "1 h"})


def test_overwrite_refused(catalog):
    t = make(catalog)
    with pytest.raises(UnsupportedTableFeatureError, match="overwrite"):
        write(t, batch([(1, "a", "x")]), overwrite={"dt": "a"})


def test_concurrent_writer_refused_not_duplicated(catalog):
    """Two writers' indexes do not know each other's keys: the second to commit is refused
    (KeyIndexConflictError) instead of leaving key 1 in two partitions."""
    t = make(catalog)
    write(t, batch([(1, "a", "x")]))
    a, b = t.new_batch_write_builder(), t.new_batch_write_builder()
    wa, ca, wb, cb = a.new_write(), a.new_commit(), b.new_write(), b.new_commit()
    try:
        wa.write_arrow(batch([(1, "b", "from a")]))
        messages = wa.prepare_commit()  # checked now: nobody else wrote yet
        wb.write_arrow(batch([(1, "c", "from b")]))
        cb.commit(wb.prepare_commit())
        with pytest.raises(KeyIndexConflictError, match="key index"):
            ca.commit(messages)  # the commit's own check
    finally:
        for x in (wa, ca, wb, cb):
            x.close()
    expect(t, {1: {"id": 1, "dt": "c", "v": "from b"}})
    # a writer whose index is already stale when it prepares is refused there
    a, b = t.new_batch_write_builder(), t.new_batch_write_builder()
    wa, wb, cb = a.new_write(), b.new_write(), b.new_commit()
    try:
        wa.write_arrow(batch([(1, "a", "from a")]))
        wb.write_arrow(batch([(1, "b", "from b")]))
        cb.commit(wb.prepare_commit())
        with pytest.raises(KeyIndexConflictError, match="snapshot 3"):
            wa.prepare_commit()
    finally:
        for x in (wa, wb, cb):
            x.close()
    expect(t, {1: {"id": 1, "dt": "b", "v": "from b"}})


def test_compaction_and_own_commits_keep_the_index_valid(catalog):
    t = make(catalog)
    model: dict = {}
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        rows = [(1, "a", "1"), (2, "b", "2")]
        w.write_arrow(batch(rows))
        c.commit(w.prepare_commit(0), 0)
        apply(model, rows)
        t.compact()  # another commit user, but a compaction: no keys added
        rows = [(1, "b", "1b")]
        w.write_arrow(batch(rows))
        c.commit(w.prepare_commit(1), 1)
        apply(model, rows)
    finally:
        w.close()
        c.close()
    expect(t, model)


def _keep_partition_model(engine: str, model: dict, rows) -> None:
    """The reference of the engines that keep a key in its first partition: the row's partition
    is replaced by the key's; partial-update takes the non-null values, aggregation sums, first-row
    keeps the first row."""
    for i, dt, v in rows:
        old = model.get(i)
        if old is None:
            model[i] = {"id": i, "dt": dt, "v": v}
        elif engine == "partial-update":
            model[i] = {**old, "v": v if v is not None else old["v"]}
        elif engine == "aggregation":
            model[i] = {**old, "v": old["v"] + v}


INT_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        pa.field("v", pa.int64())])


@pytest.mark.parametrize("engine", ["partial-update", "aggregation", "first-row"])
def test_engines_keeping_the_old_partition(catalog, engine):
    opts = {"merge-engine": engine, "dynamic-bucket.target-row-num": "2"}
    if engine == "aggregation":
        opts["fields.v.aggregate-function"] = "sum"
    t = catalog.create_table("db.t", schema=INT_SCHEMA, primary_keys=["id"], partition_keys=["dt"], options=opts)
    model: dict = {}
    rng = random.Random(5)
    for _round in range(5):
        rows = [(rng.randrange(12), rng.choice("xyz"), rng.choice([None, rng.randrange(100)]) if engine ==
                 "partial-update" else rng.randrange(100)) for _ in range(rng.randrange(1, 25))]
        data = pa.Table.from_pylist([{"id": i, "dt": dt, "v": v} for i, dt, v in rows], schema=INT_SCHEMA)
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        try:  # one writer, two batches: the index carries over
            w.write_arrow(data.slice(0, len(rows) // 2))
            w.write_arrow(data.slice(len(rows) // 2))
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()
        _keep_partition_model(engine, model, rows)
        assert sort_rows(read(t), ["id"]) == sorted(model.values(), key=lambda r: r["id"])


def test_sequence_field_set_later_refused_at_write(catalog):
    """Paimon refuses sequence.field in this mode at creation; set by an alter, the write refuses it."""
    t = make(catalog)
    catalog.alter_table("db.t", [SchemaChange.set_option("sequence.field", "v")])
    t = catalog.get_table("db.t")
    with pytest.raises(UnsupportedTableFeatureError, match="sequence.field"):
        t.new_batch_write_builder().new_write()

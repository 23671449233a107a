"""Dynamic bucket mode (bucket = -1) against pypaimon 2.1.0, both ways.

A primary-key table created without ``bucket`` is written by one side, updated by the other
(updates of existing keys and new keys, several buckets per partition through a small
``dynamic-bucket.target-row-num``), then by the first again. After every step:

- the rows equal the model (last value per key), read by both sides;
- no key is live in two buckets (each bucket's rows read on their own, as splits);
- every bucket's HASH index lists exactly the key hashes of its live rows, so the next writer,
  whichever side, keeps each key where it is (also after impl overwrites a partition and
  pypaimon writes into it).
"""

from __future__ import annotations

import random
from collections import defaultdict

import pyarrow as pa
from pypaimon_env import run_pypaimon

import impl
from impl.bucket.routing import row_hashes
from impl.data.types import DataType
from impl.write.dynamic_bucket import HashIndexFile, hash_index_entries

COLS = [["dt", "string"], ["id", "int64"], ["v", "string"]]
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    pa.field("v", pa.string())])
OPTIONS = {"dynamic-bucket.target-row-num": "8"}
DATES = ["2024-01-01", "2024-01-02"]

PP = """
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    pa.field("v", pa.string())])
cat = CatalogFactory.create({"warehouse": params["warehouse"]})
def create():
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                     options=params["options"]), False)
def write(commits):
    for rows in commits:
        table = cat.get_table("db.t")
        wb = table.new_batch_write_builder()
        w = wb.new_write(); c = wb.new_commit()
        w.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
        c.commit(w.prepare_commit()); w.close(); c.close()
def read():
    table = cat.get_table("db.t")
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
"""


def stream(seed: int, commits: int, n: int, key_space: int) -> list[list[dict]]:
    """Upserts: each commit writes ``n`` distinct (dt, id) keys, old and new mixed."""
    rng = random.Random(seed)
    out = []
    for c in range(commits):
        keys = rng.sample([(dt, i) for dt in DATES for i in range(key_space)], n)
        out.append([{"dt": dt, "id": i, "v": f"s{seed}c{c}k{i}"} for dt, i in keys])
    return out


def apply(state: dict, commits) -> dict:
    for rows in commits:
        for r in rows:
            state[(r["dt"], r["id"])] = r
    return state


def expected(state: dict) -> list[dict]:
    return sorted(state.values(), key=lambda r: (r["dt"], r["id"]))


def ordered(rows) -> list[dict]:
    return sorted(rows, key=lambda r: (r["dt"], r["id"]))


def impl_write(table, commits) -> None:
    for rows in commits:
        table.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))


def check_buckets(table) -> int:
    """No key in two buckets; each bucket's HASH index = the hashes of its live keys. Returns
    the number of (partition, bucket) pairs."""
    where: dict[tuple, set[int]] = defaultdict(set)
    keys_of: dict[tuple, list[int]] = defaultdict(list)
    rb = table.new_read_builder()
    for split in rb.new_scan().plan().splits():
        part = table.partition_cache.path(split.partition)
        ids = rb.new_read().to_arrow([split]).column("id").to_pylist()
        keys_of[(part, split.bucket)].extend(ids)
        for i in ids:
            where[(part, i)].add(split.bucket)
    twice = {k: b for k, b in where.items() if len(b) > 1}
    assert not twice, f"keys live in two buckets: {twice}"
    files = HashIndexFile(table.file_io, table.paths)
    index = {(table.partition_cache.path(e.partition), e.bucket): sorted(files.read(e.index_file).tolist())
             for e in hash_index_entries(table.core, table.latest_snapshot())}
    data = {k: sorted(row_hashes([pa.array(ids, pa.int64())], [DataType("BIGINT", False)]).tolist())
            for k, ids in keys_of.items()}
    assert index == data
    return len(index)


def test_pypaimon_dynamic_table_updated_by_impl_then_pypaimon(tmp_path):
    wh = str(tmp_path)
    first = stream(1, commits=3, n=30, key_space=40)
    got = run_pypaimon(PP + "create(); write(params['commits']); result = read()", warehouse=wh, options=OPTIONS,
                       commits=first)
    state = apply({}, first)
    assert ordered(got) == expected(state)

    t = impl.Catalog(wh).get_table("db.t")
    assert t.options.bucket == -1 and t.bucket_mode().value == "HASH_DYNAMIC"
    assert check_buckets(t) >= 4  # several buckets per partition: the assigner had to follow them
    second = stream(2, commits=2, n=40, key_space=60)  # updates of pypaimon's keys and new ones
    impl_write(t, second)
    state = apply(state, second)
    assert ordered(t.to_arrow().to_pylist()) == expected(state)
    check_buckets(t)

    third = stream(3, commits=2, n=40, key_space=70)
    got = run_pypaimon(PP + "write(params['commits']); result = read()", warehouse=wh, options=OPTIONS,
                       commits=third)
    state = apply(state, third)
    assert ordered(got) == expected(state)
    t = impl.Catalog(wh).get_table("db.t")
    assert ordered(t.to_arrow().to_pylist()) == expected(state)
    check_buckets(t)


def test_impl_dynamic_table_updated_by_pypaimon_then_impl(tmp_path):
    wh = str(tmp_path)
    cat = impl.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=OPTIONS)
    first = stream(4, commits=3, n=30, key_space=40)
    impl_write(t, first)
    t.compact(full=True)
    state = apply({}, first)
    assert check_buckets(t) >= 4

    second = stream(5, commits=2, n=40, key_space=60)
    got = run_pypaimon(PP + "before = read(); write(params['commits']); result = [before, read()]",
                       warehouse=wh, options=OPTIONS, commits=second)
    assert ordered(got[0]) == expected(state)
    state = apply(state, second)
    assert ordered(got[1]) == expected(state)
    t = impl.Catalog(wh).get_table("db.t")
    assert ordered(t.to_arrow().to_pylist()) == expected(state)
    check_buckets(t)

    third = stream(6, commits=2, n=40, key_space=70)
    impl_write(t, third)
    state = apply(state, third)
    assert ordered(t.to_arrow().to_pylist()) == expected(state)
    check_buckets(t)
    got = run_pypaimon(PP + "result = read()", warehouse=wh, options=OPTIONS)
    assert ordered(got) == expected(state)

    # impl overwrites one partition (its HASH index rebuilt from the new rows); pypaimon writes
    # into it on that index
    fresh = [{"dt": DATES[0], "id": i, "v": f"o{i}"} for i in range(100, 112)]
    t.copy({"dynamic-partition-overwrite": "true"}).write_arrow(pa.Table.from_pylist(fresh, schema=SCHEMA),
                                                                 overwrite={"dt": DATES[0]})
    state = apply({k: r for k, r in state.items() if k[0] != DATES[0]}, [fresh])
    check_buckets(t)
    fourth = [[{"dt": DATES[0], "id": i, "v": f"p{i}"} for i in range(105, 125)]]
    got = run_pypaimon(PP + "write(params['commits']); result = read()", warehouse=wh, options=OPTIONS,
                       commits=fourth)
    state = apply(state, fourth)
    assert ordered(got) == expected(state)
    t = impl.Catalog(wh).get_table("db.t")
    assert ordered(t.to_arrow().to_pylist()) == expected(state)
    check_buckets(t)

"""Cross-partition upserts (primary key ``id`` without partition key ``dt``, bucket -1) against
Paimon Java 1.4.2, both ways: each side's writer bootstraps its key index from the other's data,
moves keys between partitions and updates others; both sides then read exactly one row per key,
the latest (a reference dict keyed by ``id``). The harness writes such tables through Paimon's
``GlobalIndexAssigner`` (as Flink's sink does)."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.write.dynamic_bucket import hash_index_entries

pytestmark = pytest.mark.paimon_java

FIELDS = [["id", "BIGINT NOT NULL"], ["dt", "STRING NOT NULL"], ["v", "STRING"]]
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("v", pa.string())])
OPTIONS = {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}


def batch(rows) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "dt": dt, "v": v} for i, dt, v in rows], schema=SCHEMA)


def rows_of(t: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["dt"], r["v"]) for r in t.to_pylist())


def expected(model: dict) -> list[tuple]:
    return sorted(model.values())


class Sides:
    def __init__(self, java, tmp_path, name: str):
        self.java, self.tmp, self.name = java, tmp_path, name
        self.wh = str(tmp_path / "wh")
        self.n = 0

    def java_write(self, rows) -> None:
        self.n += 1
        path = self.tmp / f"in-{self.n}.parquet"
        pq.write_table(batch(rows), path)
        self.java.call("write", warehouse=self.wh, table=self.name, parquet=str(path), commit_user="java",
                       identifier=self.n)

    def impl_write(self, *batches) -> None:
        t = impl.Catalog(self.wh).get_table(self.name)
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        try:
            for rows in batches:  # several batches through one writer: its index carries over
                w.write_arrow(batch(rows))
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()

    def java_rows(self) -> list[tuple]:
        out = self.tmp / f"read-{self.n}.parquet"
        self.java.call("read", warehouse=self.wh, table=self.name, out=str(out))
        return rows_of(pq.read_table(out))

    def impl_rows(self) -> list[tuple]:
        return rows_of(impl.Catalog(self.wh).get_table(self.name).to_arrow())

    def check(self, model: dict) -> None:
        want = expected(model)
        assert self.impl_rows() == want
        assert self.java_rows() == want
        # neither side keeps HASH index files in this mode (the key index is the writer's own)
        core = impl.Catalog(self.wh).get_table(self.name).core
        assert hash_index_entries(core, core.snapshot_manager.latest_snapshot()) == []


def apply(model: dict, rows) -> None:
    for i, dt, v in rows:
        model[i] = (i, dt, v)


def moves(rng: random.Random, tag: str, n: int, keys: int = 24) -> list[tuple]:
    return [(rng.randrange(keys), rng.choice("abcd"), f"{tag}{j}") for j in range(n)]


def test_java_creates_and_writes_impl_moves_keys(java, tmp_path):
    s = Sides(java, tmp_path, "db.java_made")
    java.call("create_table", warehouse=s.wh, table=s.name, fields=FIELDS, primary_keys=["id"],
              partition_keys=["dt"], table_options=OPTIONS)
    model: dict = {}
    rng = random.Random(3)
    first = [(i, "ab"[i % 2], f"j{i}") for i in range(16)]
    s.java_write(first)
    apply(model, first)
    java_moves = [(0, "b", "j0b"), (1, "c", "j1c"), (5, "b", "j5b")]  # Java moves keys itself
    s.java_write(java_moves)
    apply(model, java_moves)
    s.check(model)
    # impl: keys moving (some twice, in one batch and across the writer's two batches), updates in place
    b1 = [(0, "a", "i0a"), (1, "d", "i1d"), (1, "a", "i1a"), (2, "a", "i2a"), (3, "b", "i3b"), (20, "c", "new")]
    b2 = [(0, "c", "i0c"), (2, "b", "i2b"), (4, "a", "i4a"), (21, "a", "new21")]
    s.impl_write(b1, b2)
    apply(model, b1)
    apply(model, b2)
    s.check(model)
    for r in range(3):  # then each side in turn, random moves
        rows = moves(rng, f"r{r}-", 20)
        (s.java_write if r % 2 else s.impl_write)(rows)
        apply(model, rows)
        s.check(model)


def test_impl_creates_and_writes_java_moves_keys(java, tmp_path):
    s = Sides(java, tmp_path, "db.impl_made")
    cat = impl.Catalog(s.wh)
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table(s.name, schema=SCHEMA, primary_keys=["id"], partition_keys=["dt"], options=OPTIONS)
    model: dict = {}
    rng = random.Random(11)
    first = [(i, "abc"[i % 3], f"i{i}") for i in range(18)]
    s.impl_write(first)
    apply(model, first)
    s.check(model)
    java_moves = [(0, "b", "j0b"), (1, "a", "j1a"), (2, "c", "j2c-same"), (30, "a", "j30")]
    s.java_write(java_moves)
    apply(model, java_moves)
    s.check(model)
    for r in range(4):
        rows = moves(rng, f"r{r}-", 25, keys=32)
        (s.impl_write if r % 2 else s.java_write)(rows)
        apply(model, rows)
        s.check(model)


def placement(wh: str, name: str) -> dict[int, tuple[str, int]]:
    """Each live key's (partition, bucket), read split by split."""
    t = impl.Catalog(wh).get_table(name)
    rb = t.new_read_builder()
    out = {}
    for split in rb.new_scan().plan().splits():
        for r in rb.new_read().to_arrow([split]).to_pylist():
            out[r["id"]] = (r["dt"], split.bucket)
    return out


def test_keys_land_in_the_buckets_java_picks(java, tmp_path):
    """The same batches written by each side into its own table put every key in the same
    (partition, bucket): new keys fill buckets of 3 in ascending order, a key that moves frees
    its place in the old bucket (moves come before new keys here: Java counts row by row, this
    library counts a batch's moves first)."""
    by_java, by_impl = Sides(java, tmp_path, "db.by_java"), Sides(java, tmp_path, "db.by_impl")
    for s in (by_java, by_impl):
        java.call("create_table", warehouse=s.wh, table=s.name, fields=FIELDS, primary_keys=["id"],
                  partition_keys=["dt"], table_options=OPTIONS)
    batches = [
        [(i, "ab"[i % 2], f"x{i}") for i in range(14)],
        [(0, "b", "m0"), (2, "c", "m2"), (4, "b", "m4"), (20, "a", "n20"), (21, "a", "n21"), (22, "b", "n22"),
         (1, "b", "u1")],
        [(0, "a", "back"), (23, "a", "n23"), (24, "c", "n24"), (25, "c", "n25"), (26, "c", "n26")],
    ]
    for rows in batches:
        by_java.java_write(rows)
        by_impl.impl_write(rows)
        assert placement(by_impl.wh, by_impl.name) == placement(by_java.wh, by_java.name)
    assert by_impl.java_rows() == by_java.java_rows()


INT_FIELDS = [["id", "BIGINT NOT NULL"], ["dt", "STRING NOT NULL"], ["v", "BIGINT"]]
INT_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        pa.field("v", pa.int64())])


@pytest.mark.parametrize("engine", ["partial-update", "aggregation", "first-row"])
def test_engines_keeping_the_old_partition_with_java(java, tmp_path, engine):
    """partial-update / aggregation send a key's rows to the partition it first went to, first-row
    drops them there: each side writes in turn, both read the reference."""
    wh, name = str(tmp_path / "wh"), "db.t"
    opts = {**OPTIONS, "merge-engine": engine}
    if engine == "aggregation":
        opts["fields.v.aggregate-function"] = "sum"
    java.call("create_table", warehouse=wh, table=name, fields=INT_FIELDS, primary_keys=["id"],
              partition_keys=["dt"], table_options=opts)
    model: dict = {}
    rng = random.Random(17)
    for r in range(5):
        rows = [(rng.randrange(14), rng.choice("xyz"), rng.randrange(100)) for _ in range(rng.randrange(5, 25))]
        data = pa.Table.from_pylist([{"id": i, "dt": dt, "v": v} for i, dt, v in rows], schema=INT_SCHEMA)
        if r % 2:
            impl.Catalog(wh).get_table(name).write_arrow(data)
        else:
            path = tmp_path / f"in-{r}.parquet"
            pq.write_table(data, path)
            java.call("write", warehouse=wh, table=name, parquet=str(path), commit_user="java", identifier=r + 1)
        for i, dt, v in rows:
            old = model.get(i)
            if old is None:
                model[i] = (i, dt, v)
            elif engine == "partial-update":
                model[i] = (i, old[1], v)
            elif engine == "aggregation":
                model[i] = (i, old[1], old[2] + v)
        out = tmp_path / f"read-{r}.parquet"
        java.call("read", warehouse=wh, table=name, out=str(out))
        assert rows_of(pq.read_table(out)) == sorted(model.values())
        assert rows_of(impl.Catalog(wh).get_table(name).to_arrow()) == sorted(model.values())

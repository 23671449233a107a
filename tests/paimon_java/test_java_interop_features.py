"""Interop against Apache Paimon Java, both ways, for the features added after the first matrix:
dynamic bucket tables, schema evolution, tags (with expiration), rollback to a tag, branches.

Every test runs with each side first ("java" or "impl"): side A creates and changes the table,
side B reads it and writes on, then A reads again. Rows are compared with a small reference
computed here (deduplicate by primary key), both sides must read exactly those rows, and
Paimon Java's metadata report (snapshot ids, kinds, record counts, latest files with bucket and
level) must equal impl's view of the same table (``assert_same_metadata`` of the matrix).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_java_interop_matrix import TABLE, assert_same_metadata

import impl
from impl.bucket.routing import row_hashes
from impl.write.dynamic_bucket import HashIndexFile, hash_index_entries

pytestmark = pytest.mark.paimon_java

SIDES = ["java", "impl"]


def other(side: str) -> str:
    return "impl" if side == "java" else "java"


class Tables:
    """Both sides' operations on one warehouse: create, commit rows, read rows (latest, at a tag,
    on a branch), alter, tag, expire, roll back, branch."""

    def __init__(self, java, warehouse: Path, tmp: Path):
        self.java, self.wh, self.tmp = java, warehouse, tmp
        self.identifiers: dict[str, int] = {}
        self.files = 0

    def catalog(self) -> impl.Catalog:
        return impl.Catalog(str(self.wh))

    def create(self, side: str, fields: list[tuple[str, str, pa.DataType]], primary_keys: list[str],
               partition_keys: list[str], options: dict) -> None:
        if side == "java":
            self.java.call("create_table", warehouse=str(self.wh), table=TABLE, fields=[[n, t] for n, t, _ in fields],
                           primary_keys=primary_keys, partition_keys=partition_keys, table_options=options)
        else:
            cat = self.catalog()
            cat.create_database("db", ignore_if_exists=True)
            cat.create_table(TABLE, schema=pa.schema([(n, a) for n, _, a in fields]), primary_keys=primary_keys,
                             partition_keys=partition_keys or None, options=dict(options))

    def commit(self, side: str, data: pa.Table, table: str = TABLE) -> None:
        """One stream commit of ``data`` (with the table's current columns) by ``side``."""
        user = f"{side}-writer"
        ident = self.identifiers[user] = self.identifiers.get(user, 0) + 1
        if side == "java":
            self.files += 1
            path = self.tmp / f"in-{self.files}.parquet"
            pq.write_table(data, path)
            self.java.call("write", warehouse=str(self.wh), table=table, parquet=str(path), commit_user=user,
                           identifier=ident)
            return
        t = self.catalog().get_table(table)
        builder = t.new_stream_write_builder().with_commit_user(user)
        w, c = builder.new_write(), builder.new_commit()
        try:
            w.write_arrow(data)
            c.commit(w.prepare_commit(ident), ident)
        finally:
            w.close()
            c.close()

    def read(self, side: str, table: str = TABLE, tag: str | None = None) -> list[dict]:
        if side == "java":
            out = self.tmp / "java-read.parquet"
            args = {"tag": tag} if tag else {}
            self.java.call("read", warehouse=str(self.wh), table=table, out=str(out), **args)
            rows = pq.read_table(out).to_pylist()
        else:
            t = self.catalog().get_table(table)
            if tag:
                t = t.copy({"scan.tag-name": tag})
            rows = t.to_arrow().to_pylist()
        return sorted(rows, key=lambda r: (r.get("dt") or "", r["id"]))

    def compact(self, side: str) -> None:
        if side == "java":
            self.java.call("compact", warehouse=str(self.wh), table=TABLE, full=True, commit_user="java-compact",
                           identifier=1)
        else:
            self.catalog().get_table(TABLE).compact(full=True)

    def expire(self, side: str, retain: int) -> None:
        if side == "java":
            self.java.call("expire", warehouse=str(self.wh), table=TABLE, retain_min=retain, retain_max=retain,
                           time_retain_ms=0)
        else:
            self.catalog().get_table(TABLE).expire_snapshots(retain_min=retain, retain_max=retain,
                                                             time_retained_ms=0)

    def create_tag(self, side: str, name: str, snapshot_id: int) -> None:
        if side == "java":
            self.java.call("create_tag", warehouse=str(self.wh), table=TABLE, name=name, snapshot_id=snapshot_id)
        else:
            self.catalog().get_table(TABLE).create_tag(name, snapshot_id)

    def delete_tag(self, side: str, name: str) -> None:
        if side == "java":
            self.java.call("delete_tag", warehouse=str(self.wh), table=TABLE, name=name)
        else:
            self.catalog().get_table(TABLE).delete_tag(name)

    def rollback(self, side: str, tag: str) -> None:
        if side == "java":
            self.java.call("rollback", warehouse=str(self.wh), table=TABLE, tag=tag)
        else:
            self.catalog().get_table(TABLE).rollback_to(tag)

    def create_branch(self, side: str, name: str, tag: str) -> None:
        if side == "java":
            self.java.call("create_branch", warehouse=str(self.wh), table=TABLE, name=name, tag=tag)
        else:
            self.catalog().get_table(TABLE).create_branch(name, tag)

    def both_read(self, want: list[dict], table: str = TABLE, tag: str | None = None) -> None:
        for side in SIDES:
            assert self.read(side, table, tag) == want, f"{side} read of {table} (tag {tag})"


def dedupe(*batches: list[dict]) -> list[dict]:
    """The rows a deduplicate table holds after the batches (the later row of a key wins)."""
    state: dict = {}
    for batch in batches:
        for r in batch:
            state[(r.get("dt"), r["id"])] = r
    return sorted(state.values(), key=lambda r: (r.get("dt") or "", r["id"]))


# ============================================================================ dynamic bucket


DYN_FIELDS = [("dt", "STRING", pa.string()), ("id", "BIGINT", pa.int64()), ("v", "STRING", pa.string())]
DYN_SCHEMA = pa.schema([(n, a) for n, _, a in DYN_FIELDS])


def _dyn_batch(ids, tag: str) -> list[dict]:
    return [{"dt": ("2024-01-01", "2024-01-02")[i % 2], "id": int(i), "v": f"{tag}{i}"} for i in ids]


def _bucket_of_keys(tables: Tables) -> dict[tuple[str, int], int]:
    """(dt, id) -> bucket, from impl's read of each split; a key in two buckets fails."""
    t = tables.catalog().get_table(TABLE)
    rb = t.new_read_builder()
    out: dict[tuple[str, int], int] = {}
    for split in rb.new_scan().plan().splits():
        for r in rb.new_read().to_arrow([split]).to_pylist():
            key = (r["dt"], r["id"])
            assert key not in out, f"key {key} in buckets {out[key]} and {split.bucket}"
            out[key] = split.bucket
    return out


def _assert_index_is_live_keys(tables: Tables, buckets: dict[tuple[str, int], int]) -> None:
    """Each (partition, bucket)'s HASH index holds exactly the hashes of its live keys (the
    trimmed primary key ``id``: the partition column is not part of the hash)."""
    t = tables.catalog().get_table(TABLE)
    index_file = HashIndexFile(t.file_io, t.core.paths)
    part_of = {p.partition: p.partition_path for p in t.new_read_builder().new_scan().plan().splits()}
    got: dict[tuple[str, int], set[int]] = {}
    for e in hash_index_entries(t.core, t.latest_snapshot()):
        dt = part_of[e.partition].split("=", 1)[1]
        assert (dt, e.bucket) not in got, f"two HASH index files for {(dt, e.bucket)}"
        got[(dt, e.bucket)] = set(index_file.read(e.index_file).tolist())
    want: dict[tuple[str, int], set[int]] = {}
    keys = sorted(buckets)
    hashes = row_hashes([pa.array([k[1] for k in keys], pa.int64())], [t.schema.field("id").type])
    for key, h in zip(keys, np.asarray(hashes).tolist(), strict=True):
        want.setdefault((key[0], buckets[key]), set()).add(h)
    assert got == want


@pytest.mark.parametrize("first", SIDES)
def test_dynamic_bucket_table_both_ways(java, tmp_path, first):
    """A dynamic-bucket table (bucket = -1, 4 keys per bucket) written by A, updated and extended
    by B, then by A again: both read the same rows; a key stays in the bucket it was first
    written to and is in one bucket only; each bucket's HASH index is exactly its live keys."""
    second = other(first)
    tables = Tables(java, tmp_path / "wh", tmp_path)
    tables.create(first, DYN_FIELDS, ["dt", "id"], ["dt"], {"bucket": "-1", "dynamic-bucket.target-row-num": "4"})
    steps = [(first, _dyn_batch(range(12), "a")), (second, _dyn_batch([*range(0, 12, 3), *range(12, 20)], "b")),
             (first, _dyn_batch([*range(1, 20, 4), *range(20, 26)], "c")), (second, _dyn_batch(range(0, 26, 5), "d"))]
    done: list[list[dict]] = []
    placed: dict[tuple[str, int], int] = {}
    for side, batch in steps:
        tables.commit(side, pa.Table.from_pylist(batch, schema=DYN_SCHEMA))
        done.append(batch)
        tables.both_read(dedupe(*done))
        assert_same_metadata(java, tables.wh)
        buckets = _bucket_of_keys(tables)
        assert {k: b for k, b in buckets.items() if k in placed} == placed, "a key moved to another bucket"
        placed = buckets
        assert len(set(buckets.values())) >= 2  # several buckets in use
        _assert_index_is_live_keys(tables, buckets)
    assert max(placed.values()) >= 2  # new keys went on to new buckets as the first ones filled
    tables.compact(second)
    tables.both_read(dedupe(*done))
    assert_same_metadata(java, tables.wh)
    assert _bucket_of_keys(tables) == placed
    _assert_index_is_live_keys(tables, placed)


# ============================================================================ schema evolution


EVO_FIELDS = [("id", "BIGINT", pa.int64()), ("a", "INT", pa.int32()), ("b", "STRING", pa.string()),
              ("c", "INT", pa.int32())]


def _alter(tables: Tables, side: str) -> None:
    """Add d STRING, rename b to bb, drop c, widen a INT to BIGINT (each its own schema)."""
    if side == "java":
        for change in [{"op": "add_column", "name": "d", "type": "STRING"},
                       {"op": "rename_column", "name": "b", "new_name": "bb"},
                       {"op": "drop_column", "name": "c"},
                       {"op": "update_column_type", "name": "a", "type": "BIGINT"}]:
            tables.java.call("alter", warehouse=str(tables.wh), table=TABLE, changes=[change])
        return
    cat = tables.catalog()
    for change in [impl.SchemaChange.add_column("d", pa.string()), impl.SchemaChange.rename_column("b", "bb"),
                   impl.SchemaChange.drop_column("c"), impl.SchemaChange.update_column_type("a", pa.int64())]:
        cat.alter_table(TABLE, [change])


@pytest.mark.parametrize("first", SIDES)
@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_schema_evolution_both_ways(java, tmp_path, first, pk):
    """A writes under schema 0 and alters the table (four changes, schemas 1-4); B reads the old
    rows in the new shape (d null, b as bb, c gone, a widened), writes under schema 4 and, on a
    primary-key table, updates an old key; A reads the same; both compact, files under schema
    ids 0 and 4 before that, rows unchanged after; then B adds a column (schema 5) and writes,
    and A reads rows of schemas 4 and 5."""
    second = other(first)
    tables = Tables(java, tmp_path / "wh", tmp_path)
    tables.create(first, EVO_FIELDS, ["id"] if pk else [], [], {"bucket": "2"} if pk else {"bucket": "-1"})
    old = pa.Table.from_pylist([{"id": i, "a": i * 10, "b": f"b{i}", "c": -i} for i in range(4)],
                               schema=pa.schema([(n, a) for n, _, a in EVO_FIELDS]))
    tables.commit(first, old)
    _alter(tables, first)
    meta = java.call("metadata", warehouse=str(tables.wh), table=TABLE)
    assert meta["schema_id"] == 4
    want = [{"id": i, "a": i * 10, "bb": f"b{i}", "d": None} for i in range(4)]
    tables.both_read(want)
    new_schema = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("bb", pa.string()), ("d", pa.string())])
    new = [{"id": 2, "a": 2**40, "bb": "new2", "d": "x"}, {"id": 9, "a": -(2**40), "bb": "new9", "d": "y"}]
    tables.commit(second, pa.Table.from_pylist(new, schema=new_schema))
    if pk:
        want = dedupe(want, new)
    else:
        want = sorted(want + new, key=lambda r: r["id"])
    tables.both_read(want)
    meta = assert_same_metadata(java, tables.wh)
    assert [s["schema_id"] for s in meta["snapshots"]] == [0, 4]
    tables.compact(second)
    tables.both_read(want)
    tables.compact(first)
    tables.commit(first, pa.Table.from_pylist([{"id": 11, "a": 1, "bb": "z", "d": None}], schema=new_schema))
    want = sorted(want + [{"id": 11, "a": 1, "bb": "z", "d": None}], key=lambda r: r["id"])
    tables.both_read(want)
    # B alters too (schema 5: a new column e), writes under it; A reads rows of schemas 4 and 5
    if second == "java":
        java.call("alter", warehouse=str(tables.wh), table=TABLE, changes=[{"op": "add_column", "name": "e",
                                                                            "type": "INT"}])
    else:
        tables.catalog().alter_table(TABLE, [impl.SchemaChange.add_column("e", pa.int32())])
    last = {"id": 12, "a": 2, "bb": "w", "d": "v", "e": 7}
    tables.commit(second, pa.Table.from_pylist([last], schema=new_schema.append(pa.field("e", pa.int32()))))
    tables.both_read(sorted([{**r, "e": None} for r in want] + [last], key=lambda r: r["id"]))
    meta = assert_same_metadata(java, tables.wh)
    assert meta["schema_id"] == 5 and meta["snapshots"][-1]["schema_id"] == 5


# ============================================================================ tags, rollback, branches


TAG_FIELDS = [("id", "BIGINT", pa.int64()), ("v", "STRING", pa.string())]
TAG_SCHEMA = pa.schema([(n, a) for n, _, a in TAG_FIELDS])


def _batch(ids, tag: str) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "v": f"{tag}{i}"} for i in ids], schema=TAG_SCHEMA)


def _rows(*batches: pa.Table) -> list[dict]:
    return dedupe(*[b.to_pylist() for b in batches])


def _history(tables: Tables, side: str) -> list[pa.Table]:
    """Three commits by ``side`` on a new primary-key table (snapshots 1-3)."""
    tables.create(side, TAG_FIELDS, ["id"], [], {"bucket": "2"})
    batches = [_batch(range(6), "a"), _batch(range(3, 9), "b"), _batch([0, 9], "c")]
    for b in batches:
        tables.commit(side, b)
    return batches


@pytest.mark.parametrize("first", SIDES)
def test_tags_and_expiration_both_ways(java, tmp_path, first):
    """A tags snapshot 2; B reads the tag (the rows of snapshot 2), and after A expires every
    snapshot but the latest, B still reads it; B tags the latest, writes and expires; A reads
    both tags, and both list the same tags; B deletes A's tag, and both still read B's tag and
    the table."""
    second = other(first)
    tables = Tables(java, tmp_path / "wh", tmp_path)
    b1, b2, b3 = _history(tables, first)
    tables.create_tag(first, "t2", 2)
    tables.both_read(_rows(b1, b2), tag="t2")
    tables.expire(first, retain=1)
    meta = assert_same_metadata(java, tables.wh)
    assert [s["id"] for s in meta["snapshots"]] == [3]
    tables.both_read(_rows(b1, b2), tag="t2")
    tables.create_tag(second, "t3", 3)
    b4 = _batch([1, 10], "d")
    tables.commit(second, b4)
    tables.expire(second, retain=1)
    tables.both_read(_rows(b1, b2), tag="t2")
    tables.both_read(_rows(b1, b2, b3), tag="t3")
    tables.both_read(_rows(b1, b2, b3, b4))
    meta = assert_same_metadata(java, tables.wh)
    assert meta["tags"] == sorted(t.name for t in tables.catalog().get_table(TABLE).tags()) == ["t2", "t3"]
    # B deletes A's tag (freeing what only it kept); A still reads the other tag and the table
    tables.delete_tag(second, "t2")
    tables.both_read(_rows(b1, b2, b3), tag="t3")
    tables.both_read(_rows(b1, b2, b3, b4))
    meta = assert_same_metadata(java, tables.wh)
    assert meta["tags"] == [t.name for t in tables.catalog().get_table(TABLE).tags()] == ["t3"]


@pytest.mark.parametrize("first", SIDES)
def test_rollback_to_tag_both_ways(java, tmp_path, first):
    """A tags snapshot 2 and rolls back to it after a third commit; B reads the rows of the tag
    and the same snapshots (1, 2), writes on (snapshot 3 again), and A reads B's rows."""
    second = other(first)
    tables = Tables(java, tmp_path / "wh", tmp_path)
    b1, b2, _ = _history(tables, first)
    tables.create_tag(first, "t2", 2)
    tables.rollback(first, "t2")
    tables.both_read(_rows(b1, b2))
    meta = assert_same_metadata(java, tables.wh)
    assert [s["id"] for s in meta["snapshots"]] == [1, 2]
    b4 = _batch([2, 20], "d")
    tables.commit(second, b4)
    tables.both_read(_rows(b1, b2, b4))
    meta = assert_same_metadata(java, tables.wh)
    assert [(s["id"], s["kind"]) for s in meta["snapshots"]] == [(1, "APPEND"), (2, "APPEND"), (3, "APPEND")]


@pytest.mark.parametrize("first", SIDES)
def test_branch_both_ways(java, tmp_path, first):
    """A creates branch b1 from a tag and writes on it; B reads the branch (tag rows plus A's
    branch commit) and writes on it too; A reads B's branch rows; main is untouched for both;
    then B fast-forwards main to the branch and A commits on main."""
    second = other(first)
    tables = Tables(java, tmp_path / "wh", tmp_path)
    b1, b2, b3 = _history(tables, first)
    tables.create_tag(first, "t2", 2)
    tables.create_branch(first, "b1", "t2")
    branch = f"{TABLE}$branch_b1"
    tables.both_read(_rows(b1, b2), table=branch)
    on_a = _batch([0, 30], "x")
    tables.commit(first, on_a, table=branch)
    tables.both_read(_rows(b1, b2, on_a), table=branch)
    on_b = _batch([1, 31], "y")
    tables.commit(second, on_b, table=branch)
    tables.both_read(_rows(b1, b2, on_a, on_b), table=branch)
    tables.both_read(_rows(b1, b2, b3))
    meta = assert_same_metadata(java, tables.wh, branch)
    assert [s["id"] for s in meta["snapshots"]] == [2, 3, 4]
    assert [s["id"] for s in assert_same_metadata(java, tables.wh)["snapshots"]] == [1, 2, 3]
    # B fast-forwards main to the branch; both read the branch's rows on main, A commits on it
    if second == "java":
        java.call("fast_forward", warehouse=str(tables.wh), table=TABLE, name="b1")
    else:
        tables.catalog().get_table(TABLE).fast_forward("b1")
    tables.both_read(_rows(b1, b2, on_a, on_b))
    assert [s["id"] for s in assert_same_metadata(java, tables.wh)["snapshots"]] == [1, 2, 3, 4]
    last = _batch([2, 32], "z")
    tables.commit(first, last)
    tables.both_read(_rows(b1, b2, on_a, on_b, last))


# ============================================================================ thin data files


@pytest.mark.parametrize("first", SIDES)
def test_thin_mode_table_both_ways(java, tmp_path, first):
    """``data-file.thin-mode``: A creates the table and commits, B commits and fully compacts,
    A commits again; every data file either side wrote lacks the ``_KEY_`` copies (Java's
    ``KeyValueThinDataFileWriterImpl`` and impl write the same shape), and both sides read the
    same rows and metadata throughout."""
    second = other(first)
    tables = Tables(java, tmp_path / "wh", tmp_path)
    tables.create(first, TAG_FIELDS, ["id"], [], {"bucket": "2", "data-file.thin-mode": "true"})
    b1, b2, b3 = _batch(range(8), "a"), _batch(range(4, 12), "b"), _batch([0, 11, 20], "c")
    tables.commit(first, b1)
    tables.commit(second, b2)
    tables.both_read(_rows(b1, b2))
    tables.compact(second)
    tables.commit(first, b3)
    tables.both_read(_rows(b1, b2, b3))
    assert_same_metadata(java, tables.wh)
    files = sorted((tables.wh / "db.db").rglob("data-*.parquet"))
    assert len(files) >= 3
    for f in files:
        names = pq.read_schema(f).names
        assert names[:2] == ["_SEQUENCE_NUMBER", "_VALUE_KIND"] and "id" in names, (f, names)

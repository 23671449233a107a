"""Interop matrix against Apache Paimon Java (the reference), both ways.

Every cell runs one scenario on one table kind with the two writers in one order ("java first"
or "impl first"): A creates the table and commits twice, B commits once, B fully compacts, A
commits once more and expires down to two snapshots. After each step both sides read the latest
snapshot and must return exactly the rows computed here, independently, from the change stream
(a small per-engine reference in plain Python over a few dozen rows); and the metadata Paimon
Java reports for the table (snapshot ids, commit kinds, total/delta/changelog record counts;
the latest snapshot's files with partition, bucket, level and row count) must equal impl's view
of the same files. A full compaction of a primary-key table must leave every file on the top
level (5) whichever side ran it.

Table kinds: append (bucket-unaware, and partitioned with 2 fixed buckets), primary key
(partitioned, 2 buckets) with each merge engine impl supports (deduplicate with deletes through
``rowkind.field``, deduplicate ordered by ``sequence.field``, partial-update, aggregation with
sum / last_non_null_value and with max / min, first-row), deduplicate with
``changelog-producer=input``, where each APPEND snapshot's changelog read by the other side
equals the rows (and kinds) that were written, deduplicate with deletion vectors (both sides'
lookup compactions mark rows; Java's vectors are read by impl and impl's by Java), and
deduplicate with ``changelog-producer`` lookup (with and without deletion vectors) and
full-compaction, where every snapshot's changelog (rows and row kinds) read by impl equals
Java's read of it. Lookup tables (first-row, deletion vectors, lookup changelog) commit APPEND +
COMPACT on both sides.
"""

from __future__ import annotations

import dataclasses
import json
import random
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.manifest.records import IndexType
from impl.read.scan import SnapshotReader
from impl.store.core import bucket_index_files

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"
TOP_LEVEL = 5  # num-levels defaults to num-sorted-run.compaction-trigger (5) + 1
DATES = ["2024-01-01", "2024-01-02"]
KIND_CODE = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


@dataclasses.dataclass(frozen=True)
class Kind:
    """One table kind of the matrix: columns (name, Paimon type, Arrow type), keys and options."""

    name: str
    columns: tuple[tuple[str, str, pa.DataType], ...]
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]
    options: dict
    engine: str | None  # merge engine for the reference; None for append tables
    deletes: bool = False  # whether the stream carries -D rows (via rowkind.field "op")

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([(n, t) for n, _, t in self.columns])

    @property
    def lookup(self) -> bool:
        """Both sides compact level 0 away at every commit (Paimon's CoreOptions.needLookup:
        first-row, changelog-producer=lookup, deletion vectors): each commit is APPEND + COMPACT."""
        return self.engine == "first-row" or self.options.get("changelog-producer") == "lookup" \
            or self.options.get("deletion-vectors.enabled") == "true"

    @property
    def compacted_changelog(self) -> bool:
        """Changelog produced by compactions (lookup, full-compaction), compared snapshot by snapshot."""
        return self.options.get("changelog-producer") in ("lookup", "full-compaction")

    def changelog_producer_input(self) -> bool:
        return self.options.get("changelog-producer") == "input"

    @property
    def value_columns(self) -> list[str]:
        return [n for n, _, _ in self.columns if n not in self.primary_keys and n != "op"]


PK_COLS = (("dt", "STRING", pa.string()), ("id", "BIGINT", pa.int64()), ("op", "STRING", pa.string()),
           ("v", "STRING", pa.string()), ("amount", "BIGINT", pa.int64()))
APPEND_COLS = (("dt", "STRING", pa.string()), ("id", "BIGINT", pa.int64()), ("v", "STRING", pa.string()))

KINDS = [
    Kind("append-unaware", APPEND_COLS, (), (), {"bucket": "-1"}, None),
    # merges of 2 manifests: both sides read manifests the other merged (impl's grouped by partition)
    Kind("append-partitioned-2-buckets", APPEND_COLS, (), ("dt",),
         {"bucket": "2", "bucket-key": "id", "manifest.merge-min-count": "2"}, None),
    Kind("pk-deduplicate", PK_COLS, ("dt", "id"), ("dt",), {"bucket": "2", "rowkind.field": "op"},
         "deduplicate", deletes=True),
    Kind("pk-partial-update", PK_COLS, ("dt", "id"), ("dt",),
         {"bucket": "2", "merge-engine": "partial-update"}, "partial-update"),
    Kind("pk-aggregation", PK_COLS, ("dt", "id"), ("dt",),
         {"bucket": "2", "merge-engine": "aggregation", "fields.amount.aggregate-function": "sum",
          "fields.v.aggregate-function": "last_non_null_value"}, "aggregation"),
    Kind("pk-aggregation-max-min", PK_COLS, ("dt", "id"), ("dt",),
         {"bucket": "2", "merge-engine": "aggregation", "fields.amount.aggregate-function": "max",
          "fields.v.aggregate-function": "min"}, "aggregation"),
    Kind("pk-deduplicate-sequence-field", PK_COLS, ("dt", "id"), ("dt",),
         {"bucket": "2", "sequence.field": "amount"}, "deduplicate"),
    Kind("pk-first-row", PK_COLS, ("dt", "id"), ("dt",), {"bucket": "2", "merge-engine": "first-row"},
         "first-row"),
    Kind("pk-changelog-input", PK_COLS, ("dt", "id"), ("dt",),
         {"bucket": "2", "rowkind.field": "op", "changelog-producer": "input"}, "deduplicate", deletes=True),
    Kind("pk-deletion-vectors", PK_COLS, ("dt", "id"), ("dt",),
         {"bucket": "2", "rowkind.field": "op", "deletion-vectors.enabled": "true"}, "deduplicate", deletes=True),
    Kind("pk-changelog-lookup", PK_COLS, ("dt", "id"), ("dt",),
         {"bucket": "2", "rowkind.field": "op", "changelog-producer": "lookup"}, "deduplicate", deletes=True),
    Kind("pk-changelog-lookup-dv", PK_COLS, ("dt", "id"), ("dt",),
         {"bucket": "2", "rowkind.field": "op", "changelog-producer": "lookup", "deletion-vectors.enabled": "true"},
         "deduplicate", deletes=True),
    Kind("pk-changelog-full-compaction", PK_COLS, ("dt", "id"), ("dt",),
         {"bucket": "2", "rowkind.field": "op", "changelog-producer": "full-compaction"}, "deduplicate",
         deletes=True),
]


# ============================================================================ change stream and reference


def change_stream(kind: Kind, seed: int, commits: int = 4, rows: int = 12) -> list[list[dict]]:
    """``commits`` batches; primary-key streams reuse 8 keys per date, so later batches update."""
    rng = random.Random(seed)
    out, next_id = [], 0
    for _ in range(commits):
        batch = []
        for _ in range(rows):
            if kind.engine is None:
                batch.append({"dt": rng.choice(DATES), "id": next_id, "v": f"s{rng.randrange(1000)}"})
                next_id += 1
                continue
            op = "-D" if kind.deletes and rng.random() < 0.2 else "+I"
            v = None if kind.engine == "partial-update" and rng.random() < 0.4 else f"s{rng.randrange(1000)}"
            amount = None if kind.engine == "partial-update" and rng.random() < 0.4 else rng.randrange(-50, 50)
            batch.append({"dt": rng.choice(DATES), "id": rng.randrange(8), "op": op, "v": v, "amount": amount})
        # One key at most once per batch: within a commit the order of equal keys is the writer's
        # buffer order on both sides, but keeping it unique keeps the reference obviously right.
        seen: dict = {}
        for r in batch:
            seen[(r["dt"], r["id"])] = r
        out.append(list(seen.values()) if kind.engine else batch)
    return out


def expected_rows(kind: Kind, batches: list[list[dict]]) -> list[dict]:
    """What a read of the latest snapshot must return, by the merge engine's rule."""
    rows = [r for b in batches for r in b]
    if kind.engine is None:
        return sort_rows(rows)
    state: dict = {}
    seq = kind.options.get("sequence.field")
    for r in rows:
        key = (r["dt"], r["id"])
        if kind.engine == "deduplicate" and seq:
            # the highest sequence.field value wins; on a tie the later row
            if key not in state or r[seq] >= state[key][seq]:
                state[key] = r
        elif kind.engine == "deduplicate":
            if r["op"] == "-D":
                state.pop(key, None)
            else:
                state[key] = r
        elif kind.engine == "first-row":
            state.setdefault(key, r)
        elif kind.engine == "partial-update":
            old = state.get(key, {})
            state[key] = {**r, **{c: (r[c] if r[c] is not None else old.get(c)) for c in kind.value_columns}}
        elif kind.engine == "aggregation":
            old = state.get(key)
            state[key] = dict(r) if old is None else \
                {**r, **{c: AGGREGATE[kind.options.get(f"fields.{c}.aggregate-function", "last_non_null_value")](
                    old[c], r[c]) for c in kind.value_columns}}
    return sort_rows(state.values())


# aggregate functions of the reference: (accumulated, new) -> accumulated; inputs are never null
AGGREGATE = {"sum": lambda a, b: a + b, "max": max, "min": min, "last_non_null_value": lambda a, b: b}


def sort_rows(rows) -> list[dict]:
    return sorted((dict(r) for r in rows), key=lambda r: json.dumps(r, sort_keys=True, default=str))


# ============================================================================ the two sides


class Side:
    """One writer/reader of the table: commit a batch, compact fully, expire, read, metadata."""

    def __init__(self, name: str, kind: Kind, warehouse: Path, tmp: Path, java):
        self.name, self.kind, self.warehouse, self.tmp, self.java = name, kind, warehouse, tmp, java
        self.user = f"{name}-writer"
        self.identifier = 0

    def create(self) -> None:
        k = self.kind
        if self.name == "java":
            self.java.call("create_table", warehouse=str(self.warehouse), table=TABLE,
                           fields=[[n, t] for n, t, _ in k.columns], primary_keys=list(k.primary_keys),
                           partition_keys=list(k.partition_keys), table_options=k.options)
        else:
            cat = impl.Catalog(str(self.warehouse))
            cat.create_database("db", ignore_if_exists=True)
            cat.create_table(TABLE, schema=k.arrow_schema, primary_keys=list(k.primary_keys) or None,
                             partition_keys=list(k.partition_keys) or None, options=dict(k.options))

    def impl_table(self):
        return impl.Catalog(str(self.warehouse)).get_table(TABLE)

    def commit(self, batch: list[dict]) -> None:
        self.identifier += 1
        data = pa.Table.from_pylist(batch, schema=self.kind.arrow_schema)
        if self.name == "java":
            path = self.tmp / f"in-{self.user}-{self.identifier}.parquet"
            pq.write_table(data, path)
            self.java.call("write", warehouse=str(self.warehouse), table=TABLE, parquet=str(path),
                           commit_user=self.user, identifier=self.identifier)
        else:
            builder = self.impl_table().new_stream_write_builder().with_commit_user(self.user)
            w, c = builder.new_write(), builder.new_commit()
            w.write_arrow(data)
            c.commit(w.prepare_commit(self.identifier), self.identifier)
            w.close()
            c.close()
            if self.kind.engine == "first-row":
                # Divergence (see test_first_row_level0_is_invisible_to_java): Paimon compacts
                # level 0 of a first-row table away in every commit and its batch scans skip
                # level 0; impl leaves level-0 files, so it compacts here to stay readable.
                self.impl_table().compact(full=True)

    def compact(self) -> None:
        if self.name == "java":
            self.identifier += 1
            self.java.call("compact", warehouse=str(self.warehouse), table=TABLE, full=True,
                           commit_user=self.user, identifier=self.identifier)
        else:
            self.impl_table().compact(full=True)

    def expire(self, retain: int) -> None:
        if self.name == "java":
            self.java.call("expire", warehouse=str(self.warehouse), table=TABLE, retain_min=retain,
                           retain_max=retain, time_retain_ms=0)
        else:
            self.impl_table().expire_snapshots(retain_min=retain, retain_max=retain, time_retained_ms=0)

    def read(self) -> list[dict]:
        if self.name == "java":
            out = self.tmp / "java-read.parquet"
            self.java.call("read", warehouse=str(self.warehouse), table=TABLE, out=str(out))
            rows = pq.read_table(out).to_pylist()
        else:
            rows = self.impl_table().to_arrow().to_pylist()
        return sort_rows(rows)


def java_metadata(java, warehouse: Path, table: str = TABLE) -> dict:
    return java.call("metadata", warehouse=str(warehouse), table=table)


def impl_metadata(warehouse: Path, name: str = TABLE) -> dict:
    """impl's view in the shape of the harness's metadata report."""
    table = impl.Catalog(str(warehouse)).get_table(name)
    snaps = [{"id": s.id, "kind": s.commit_kind.value, "total_record_count": s.total_record_count,
              "delta_record_count": s.delta_record_count, "changelog_record_count": s.changelog_record_count}
             for s in table.snapshots()]
    files = []
    latest = table.latest_snapshot()
    if latest is not None:
        for split in table.new_read_builder().new_scan().plan().splits():
            part = [kv.split("=", 1)[1] for kv in split.partition_path.split("/") if kv]
            files += [{"partition": part, "bucket": split.bucket, "level": f.level, "file_name": f.file_name,
                       "row_count": f.row_count} for f in split.files]
    return {"snapshots": snaps, "files": sorted(files, key=lambda f: f["file_name"])}


def assert_same_metadata(java, warehouse: Path, table: str = TABLE) -> dict:
    got = java_metadata(java, warehouse, table)
    mine = impl_metadata(warehouse, table)
    keys = ("id", "kind", "total_record_count", "delta_record_count", "changelog_record_count")
    assert [{k: s[k] for k in keys} for s in got["snapshots"]] == mine["snapshots"]
    latest = [str(s["id"]) for s in got["snapshots"]][-1:]
    java_files = sorted(got["files"][latest[0]], key=lambda f: f["file_name"]) if latest else []
    assert java_files == mine["files"]
    return got


def assert_changelog(kind: Kind, reader: str, java, warehouse: Path, tmp: Path, snapshot_id: int,
                     batch: list[dict]) -> None:
    """The changelog of one APPEND snapshot, read by ``reader``, is the batch as written."""
    want = sort_rows({**r, "_row_kind": r["op"]} for r in batch)
    if reader == "java":
        out = tmp / "java-changelog.parquet"
        java.call("read", warehouse=str(warehouse), table=TABLE, out=str(out), changelog_of=snapshot_id)
        got = sort_rows(pq.read_table(out).to_pylist())
    else:
        table = impl.Catalog(str(warehouse)).get_table(TABLE).copy(
            {"incremental-between": f"{snapshot_id - 1},{snapshot_id}"})
        t = table.to_arrow()
        names = {v: k for k, v in KIND_CODE.items()}
        kinds = [names[c] for c in t.column("_VALUE_KIND").to_pylist()]
        got = sort_rows({**r, "_row_kind": k} for r, k in
                        zip(t.drop_columns(["_VALUE_KIND"]).to_pylist(), kinds, strict=True))
    assert got == want


def read_changelog(reader: str, java, warehouse: Path, tmp: Path, snapshot_id: int, table: str = TABLE) -> list[dict]:
    """One snapshot's changelog as ``reader`` reads it: rows with their kind in ``_row_kind``
    (Java: ScanMode.CHANGELOG of the snapshot; impl: ``incremental-between`` id-1,id)."""
    if reader == "java":
        out = tmp / "java-changelog.parquet"
        java.call("read", warehouse=str(warehouse), table=table, out=str(out), changelog_of=snapshot_id)
        return sort_rows(pq.read_table(out).to_pylist())
    t = impl.Catalog(str(warehouse)).get_table(table).copy(
        {"incremental-between": f"{snapshot_id - 1},{snapshot_id}"}).to_arrow()
    if "_VALUE_KIND" not in t.column_names:  # a snapshot without changelog reads as no rows
        assert t.num_rows == 0
        return []
    names = {v: k for k, v in KIND_CODE.items()}
    kinds = [names[c] for c in t.column("_VALUE_KIND").to_pylist()]
    return sort_rows({**r, "_row_kind": k} for r, k in
                     zip(t.drop_columns(["_VALUE_KIND"]).to_pylist(), kinds, strict=True))


def deleted_positions(warehouse: Path, table: str = TABLE) -> int:
    """How many row positions the latest snapshot's deletion vectors mark deleted (read through
    impl's index manifest reader: the index format is shared)."""
    t = impl.Catalog(str(warehouse)).get_table(table)
    return sum(r.cardinality or 0 for files in bucket_index_files(t.core, t.latest_snapshot()).values() for f in files
               if f.index_type == IndexType.DELETION_VECTORS for r in f.deletion_vector_ranges or ())


def assert_same_changelogs(java, warehouse: Path, tmp: Path, snapshot_ids: list[int]) -> int:
    """Every listed snapshot's changelog (its predecessor still live) is the same read by Java
    and by impl; returns how many changelog rows they held."""
    live = set(snapshot_ids)
    total = 0
    for sid in snapshot_ids:
        if sid - 1 not in live:
            continue
        got_java = read_changelog("java", java, warehouse, tmp, sid)
        assert read_changelog("impl", java, warehouse, tmp, sid) == got_java, f"changelog of snapshot {sid}"
        total += len(got_java)
    return total


# ============================================================================ the matrix


@pytest.mark.parametrize("first", ["java", "impl"])
@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_matrix_cell(kind: Kind, first: str, java, tmp_path):
    warehouse = tmp_path / "wh"
    second = "impl" if first == "java" else "java"
    a = Side(first, kind, warehouse, tmp_path, java)
    b = Side(second, kind, warehouse, tmp_path, java)
    batches = change_stream(kind, seed=zlib.crc32(f"{kind.name}/{first}".encode()))  # stable across processes

    dv_by_writer: dict[str, int] = {"java": 0, "impl": 0}  # deleted positions seen after each side's commits

    def check(n_batches: int, writer: str | None = None) -> dict:
        want = expected_rows(kind, batches[:n_batches])
        assert a.read() == want, f"{a.name} read after {n_batches} commits"
        assert b.read() == want, f"{b.name} read after {n_batches} commits"
        meta = assert_same_metadata(java, warehouse)
        if kind.compacted_changelog:
            assert_same_changelogs(java, warehouse, tmp_path, [s["id"] for s in meta["snapshots"]])
        if writer is not None:
            dv_by_writer[writer] = max(dv_by_writer[writer], deleted_positions(warehouse))
        return meta

    a.create()
    a.commit(batches[0])
    a.commit(batches[1])
    meta = check(2, a.name)
    appends = [s for s in meta["snapshots"] if s["kind"] == "APPEND"]
    assert [s["delta_record_count"] for s in appends] == [len(batches[0]), len(batches[1])]
    # A lookup table's commit is APPEND then COMPACT (level 0 compacted away); others APPEND only.
    assert [s["kind"] for s in meta["snapshots"]] == ["APPEND", "COMPACT"] * 2 if kind.lookup else ["APPEND"] * 2

    b.commit(batches[2])
    meta = check(3, b.name)
    last_append = [s for s in meta["snapshots"] if s["kind"] == "APPEND"][-1]
    assert (last_append["commit_user"], last_append["commit_identifier"]) == (b.user, 1)
    if kind.changelog_producer_input():
        assert [s["kind"] for s in meta["snapshots"]] == ["APPEND"] * 3
        assert_changelog(kind, a.name, java, warehouse, tmp_path, 3, batches[2])
        assert_changelog(kind, b.name, java, warehouse, tmp_path, 1, batches[0])

    b.compact()
    meta = check(3)
    if kind.engine is not None:
        assert meta["snapshots"][-1]["kind"] == "COMPACT"
        assert all(f["level"] == TOP_LEVEL for fs in meta["files"].values() for f in fs)

    a.commit(batches[3])
    meta = check(4, a.name)
    a.expire(retain=2)
    meta = check(4)
    assert len(meta["snapshots"]) == 2
    # The other side writes and compacts on top of the expired table.
    b.commit(batches[0])
    a.compact()
    want = expected_rows(kind, batches[:4] + [batches[0]])
    assert a.read() == want and b.read() == want
    meta = assert_same_metadata(java, warehouse)
    if kind.compacted_changelog:
        # the last compaction (by A) produced changelog, read the same by both sides
        assert assert_same_changelogs(java, warehouse, tmp_path, [s["id"] for s in meta["snapshots"]]) > 0
    if kind.options.get("deletion-vectors.enabled") == "true":
        # Java's lookup compactions left rows marked in vectors; impl's did here only in some cells
        # (its compaction picks merge into the top level more often: see
        # test_lookup_compaction_levels_follow_file_sizes_which_differ_from_java), test_deletion_vector_table_both_ways
        # makes impl write vectors that Java reads.
        assert dv_by_writer["java"] > 0


def test_first_row_commit_is_visible_to_java_at_once(java, tmp_path):
    """Formerly a divergence: impl left a first-row table's commits on level 0, which Paimon
    Java's batch scan of first-row tables skips (CoreOptions.batchScanSkipLevel0 = deletion
    vectors or FIRST_ROW). impl now forces level 0 up at every commit as Java's writer does
    (lookup-wait), so Java reads impl's commit at once, before any explicit compaction, and both
    sides read the same rows; every file of the snapshot is above level 0."""
    kind = next(k for k in KINDS if k.engine == "first-row")
    wh = tmp_path / "wh"
    side = Side("impl", dataclasses.replace(kind, engine="deduplicate"), wh, tmp_path, java)
    side.kind = kind
    side.create()
    batch = change_stream(kind, seed=7)[0]
    builder = side.impl_table().new_stream_write_builder().with_commit_user("u")
    w, c = builder.new_write(), builder.new_commit()
    w.write_arrow(pa.Table.from_pylist(batch, schema=kind.arrow_schema))
    c.commit(w.prepare_commit(1), 1)
    w.close()
    c.close()
    java_side = Side("java", kind, wh, tmp_path, java)
    want = expected_rows(kind, [batch])
    assert side.read() == want
    assert java_side.read() == want
    t = side.impl_table()
    assert all(e.file.level >= 1 for e in SnapshotReader(t.core).live_entries(t.snapshot_manager().latest_snapshot()))


def test_lookup_compaction_levels_follow_file_sizes_which_differ_from_java(java, tmp_path):
    """Pins a difference of outcome under the same rule: the lookup compaction that forces level
    0 up (Paimon's ForceUpLevel0Compaction) extends its level-0 input by the next sorted run when
    the input is at least about as large in bytes (size-ratio), else writes it just above and
    marks the replaced rows in deletion vectors. impl's Parquet files of a few rows are larger
    than Java's (measured: the 4-row second batch is 1419 bytes as Java writes it, 1792 as impl
    does, against Java's 6-row first file of 1522), so on the same table and rows Java writes
    level 4 + a deletion vector while impl merges into level 5 without one. Rows read the same;
    with bigger files (test_deletion_vector_table_both_ways) impl writes vectors too."""
    schema = pa.schema([("id", pa.int64()), ("op", pa.string()), ("v", pa.string())])
    fields = [["id", "BIGINT"], ["op", "STRING"], ["v", "STRING"]]
    # the second batch is a little smaller than the first as Java writes it, larger as impl does
    first = [{"id": i, "op": "+I", "v": f"a{i}" * 8} for i in range(6)]
    second = [{"id": i, "op": "+I", "v": f"b{i}"} for i in range(4, 8)]
    outcomes = {}
    for writer in ("java", "impl"):
        wh = tmp_path / writer
        java.call("create_table", warehouse=str(wh), table=TABLE, fields=fields, primary_keys=["id"],
                  table_options={"bucket": "1", "deletion-vectors.enabled": "true"})
        path = tmp_path / "first.parquet"
        pq.write_table(pa.Table.from_pylist(first, schema=schema), path)
        java.call("write", warehouse=str(wh), table=TABLE, parquet=str(path), commit_user="u", identifier=1)
        if writer == "java":
            path = tmp_path / "second.parquet"
            pq.write_table(pa.Table.from_pylist(second, schema=schema), path)
            java.call("write", warehouse=str(wh), table=TABLE, parquet=str(path), commit_user="u", identifier=2)
        else:
            _impl_commit(impl.Catalog(str(wh)).get_table(TABLE), second, identifier=1)
        want = sorted([(i, f"a{i}" * 8) for i in range(4)] + [(i, f"b{i}") for i in range(4, 8)])
        out = tmp_path / "read.parquet"
        java.call("read", warehouse=str(wh), table=TABLE, out=str(out))
        assert sorted((r["id"], r["v"]) for r in pq.read_table(out).to_pylist()) == want
        got = impl.Catalog(str(wh)).get_table(TABLE).to_arrow().to_pylist()
        assert sorted((r["id"], r["v"]) for r in got) == want
        files = assert_same_metadata(java, wh)["files"]
        outcomes[writer] = (sorted(f["level"] for fs in files.values() for f in fs), deleted_positions(wh))
    assert outcomes == {"java": ([4, 5], 2), "impl": ([5], 0)}  # keys 4 and 5 replaced


@pytest.mark.parametrize("first", ["java", "impl"])
@pytest.mark.parametrize("kind", [k for k in KINDS if k.name in ("append-partitioned-2-buckets", "pk-deduplicate")],
                         ids=lambda k: k.name)
def test_overwrite_by_one_side_read_and_written_by_the_other(kind: Kind, first: str, java, tmp_path):
    """A writes two commits, then overwrites one partition with a batch commit; B reads exactly
    the other partition's rows plus the new ones, sees an OVERWRITE snapshot, and commits on top."""
    warehouse = tmp_path / "wh"
    a = Side(first, kind, warehouse, tmp_path, java)
    b = Side("impl" if first == "java" else "java", kind, warehouse, tmp_path, java)
    batches = change_stream(kind, seed=zlib.crc32(f"overwrite/{kind.name}/{first}".encode()))
    a.create()
    a.commit(batches[0])
    a.commit(batches[1])
    fresh = [{**r, "dt": DATES[0]} for r in batches[2]]
    if kind.engine:
        fresh = list({r["id"]: {**r, "op": "+I"} for r in fresh}.values())
    data = pa.Table.from_pylist(fresh, schema=kind.arrow_schema)
    if a.name == "java":
        path = tmp_path / "overwrite.parquet"
        pq.write_table(data, path)
        java.call("write", warehouse=str(warehouse), table=TABLE, parquet=str(path), batch=True,
                  overwrite={"dt": DATES[0]})
    else:
        a.impl_table().write_arrow(data, overwrite={"dt": DATES[0]})
    kept = [r for r in expected_rows(kind, batches[:2]) if r["dt"] != DATES[0]]
    want = sort_rows(kept + expected_rows(kind, [fresh]))
    assert b.read() == want and a.read() == want
    meta = assert_same_metadata(java, warehouse)
    assert meta["snapshots"][-1]["kind"] == "OVERWRITE"
    b.commit(batches[3])
    assert b.read() == a.read() == expected_rows(kind, [kept, fresh, batches[3]])


def test_timestamp9_from_java_reads_right_and_from_impl_is_misread_by_java(java, tmp_path):
    """Pins a divergence: Paimon Java stores TIMESTAMP(7..9) in Parquet as INT96 (its Parquet
    schema converter: precision > 6), and its reader takes an INT64 nanosecond column as if it
    held milliseconds. impl writes TIMESTAMP(9) as pyarrow's INT64 nanoseconds, so Paimon Java
    reads impl's TIMESTAMP(9) values wrong (TIMESTAMP(6), INT64 microseconds, is read right).
    The other way round is right: impl reads Java's INT96 column exactly. When impl writes
    INT96 for precision > 6, the middle assertion flips and this test must change with it."""
    import datetime as _dt

    value = _dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    schema = pa.schema([("id", pa.int64()), ("ts9", pa.timestamp("ns")), ("ts6", pa.timestamp("us"))])
    data = pa.table({"id": [1], "ts9": pa.array([value], pa.timestamp("ns")),
                     "ts6": pa.array([value], pa.timestamp("us"))}, schema=schema)
    fields = [["id", "BIGINT"], ["ts9", "TIMESTAMP(9)"], ["ts6", "TIMESTAMP(6)"]]

    # Java writes (its input as INT96, which its Parquet reader takes right), impl reads.
    wh_java = tmp_path / "java"
    java.call("create_table", warehouse=str(wh_java), table=TABLE, fields=fields, table_options={"bucket": "-1"})
    pq.write_table(data, tmp_path / "in.parquet", use_deprecated_int96_timestamps=True)
    java.call("write", warehouse=str(wh_java), table=TABLE, parquet=str(tmp_path / "in.parquet"),
              commit_user="u", identifier=1)
    [row] = impl.Catalog(str(wh_java)).get_table(TABLE).to_arrow().to_pylist()
    assert (row["ts9"].to_pydatetime(), row["ts6"]) == (value, value)

    # impl writes (INT64 nanoseconds), Java reads: TIMESTAMP(6) right, TIMESTAMP(9) wrong.
    wh_impl = tmp_path / "impl"
    cat = impl.Catalog(str(wh_impl))
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table(TABLE, schema=schema, options={"bucket": "-1"}).write_arrow(data)
    out = tmp_path / "out.parquet"
    java.call("read", warehouse=str(wh_impl), table=TABLE, out=str(out))
    [row] = pq.read_table(out).to_pylist()
    assert row["ts6"] == value
    assert row["ts9"] != value


@pytest.mark.parametrize("first", ["java", "impl"])
def test_deletion_vector_table_both_ways(java, tmp_path, first):
    """Deletion vectors across the two implementations, on one bucket so each step's vectors are
    known: A writes 505 rows, then deletes key 1 and updates key 2 (A's lookup compaction marks
    the old rows in a vector) and B reads; B deletes key 3 and updates key 4 (B's lookup
    compaction adds positions) and A reads; A compacts fully (vectors folded away), B writes
    (one position again) and compacts fully. At every step both read the same rows and Java's
    metadata equals impl's view."""
    second = "impl" if first == "java" else "java"
    wh = tmp_path / "wh"
    schema = pa.schema([("id", pa.int64()), ("op", pa.string()), ("v", pa.string())])
    options = {"bucket": "1", "deletion-vectors.enabled": "true", "rowkind.field": "op"}
    idents = {"java": 0, "impl": 0}

    def commit(side: str, rows: list[dict]) -> None:
        idents[side] += 1
        if side == "java":
            path = _rows_file(tmp_path, rows)
            java.call("write", warehouse=str(wh), table=TABLE, parquet=str(path), commit_user="java",
                      identifier=idents[side])
        else:
            _impl_commit(impl.Catalog(str(wh)).get_table(TABLE), rows, identifier=idents[side])

    def compact(side: str) -> None:
        if side == "java":
            java.call("compact", warehouse=str(wh), table=TABLE, full=True, commit_user="java-compact", identifier=1)
        else:
            impl.Catalog(str(wh)).get_table(TABLE).compact(full=True)

    def both_read() -> None:
        out = tmp_path / "java.parquet"
        java.call("read", warehouse=str(wh), table=TABLE, out=str(out))
        java_got = pq.read_table(out).to_pylist()
        assert sorted((r["id"], r["v"]) for r in java_got if r["id"] < 100) == sorted(want.items())
        got = impl.Catalog(str(wh)).get_table(TABLE).to_arrow().to_pylist()
        assert sorted((r["id"], r["v"]) for r in got if r["id"] < 100) == sorted(want.items())
        assert len(got) == len(java_got) == len(want) + 500
        assert_same_metadata(java, wh)

    if first == "java":
        java.call("create_table", warehouse=str(wh), table=TABLE, fields=[["id", "BIGINT"], ["op", "STRING"],
                  ["v", "STRING"]], primary_keys=["id"], table_options=options)
    else:
        cat = impl.Catalog(str(wh))
        cat.create_database("db", ignore_if_exists=True)
        cat.create_table(TABLE, schema=schema, primary_keys=["id"], options=options)
    commit(first, [{"id": i, "op": "+I", "v": f"a{i}"} for i in [*range(5), *range(100, 600)]])
    commit(first, [{"id": 1, "op": "-D", "v": None}, {"id": 2, "op": "+I", "v": "b2"}])
    want = {0: "a0", 2: "b2", 3: "a3", 4: "a4"}
    first_dv = deleted_positions(wh)
    assert first_dv >= 2  # the old rows of keys 1 and 2, in a vector A wrote
    both_read()
    commit(second, [{"id": 3, "op": "-D", "v": None}, {"id": 4, "op": "+I", "v": "c4"},
                    {"id": 5, "op": "+I", "v": "c5"}])
    want.pop(3)
    want.update({4: "c4", 5: "c5"})
    assert deleted_positions(wh) > first_dv  # B's lookup compaction added positions to the vectors
    both_read()
    compact(first)
    assert deleted_positions(wh) == 0
    both_read()
    commit(second, [{"id": 0, "op": "+I", "v": "d0"}])
    want[0] = "d0"
    assert deleted_positions(wh) == 1
    both_read()
    compact(second)
    assert deleted_positions(wh) == 0
    both_read()


def _impl_commit(table, rows: list[dict], identifier: int) -> None:
    """One stream commit by impl (user "impl") of rows of the (id, op, v) table."""
    schema = pa.schema([("id", pa.int64()), ("op", pa.string()), ("v", pa.string())])
    builder = table.new_stream_write_builder().with_commit_user("impl")
    w, c = builder.new_write(), builder.new_commit()
    try:
        w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        c.commit(w.prepare_commit(identifier), identifier)
    finally:
        w.close()
        c.close()


def _java_pk_table(java, tmp_path, options: dict) -> tuple[Path, list[tuple]]:
    """Paimon Java writes a primary-key table with ``options``: 5 inserts, then a delete of key 1
    and an update of key 2. Returns the warehouse and the rows Paimon Java reads back."""
    wh = tmp_path / "wh"
    schema = pa.schema([("id", pa.int64()), ("op", pa.string()), ("v", pa.string())])
    java.call("create_table", warehouse=str(wh), table=TABLE, fields=[["id", "BIGINT"], ["op", "STRING"], ["v", "STRING"]],
              primary_keys=["id"], table_options={**options, "rowkind.field": "op"})
    for ident, batch in enumerate([[{"id": i, "op": "+I", "v": f"a{i}"} for i in range(5)],
                                   [{"id": 1, "op": "-D", "v": None}, {"id": 2, "op": "+I", "v": "b2"}]], start=1):
        path = tmp_path / f"in-{ident}.parquet"
        pq.write_table(pa.Table.from_pylist(batch, schema=schema), path)
        java.call("write", warehouse=str(wh), table=TABLE, parquet=str(path), commit_user="u", identifier=ident)
    out = tmp_path / "java.parquet"
    java.call("read", warehouse=str(wh), table=TABLE, out=str(out))
    return wh, sorted((r["id"], r["v"]) for r in pq.read_table(out).to_pylist())


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_changelog_producer_table_both_ways(java, tmp_path, producer):
    """A table with changelog-producer lookup / full-compaction: Paimon Java writes it, impl
    writes on, each side compacts fully once; after every step both sides read the same rows,
    and every snapshot's changelog (with row kinds) read by impl equals Java's; replaying all
    changelogs from an empty table gives the rows."""
    wh, java_rows = _java_pk_table(java, tmp_path, {"bucket": "1", "changelog-producer": producer})
    want = {0: "a0", 2: "b2", 3: "a3", 4: "a4"}
    assert java_rows == sorted(want.items())

    def check() -> None:
        out = tmp_path / "java.parquet"
        java.call("read", warehouse=str(wh), table=TABLE, out=str(out))
        assert sorted((r["id"], r["v"]) for r in pq.read_table(out).to_pylist()) == sorted(want.items())
        got = impl.Catalog(str(wh)).get_table(TABLE).to_arrow().to_pylist()
        assert sorted((r["id"], r["v"]) for r in got) == sorted(want.items())
        meta = assert_same_metadata(java, wh)
        state: dict = {}
        for s in meta["snapshots"]:
            changes = read_changelog("java", java, wh, tmp_path, s["id"])
            assert read_changelog("impl", java, wh, tmp_path, s["id"]) == changes, f"changelog of {s['id']}"
            # -U before +U of a key: apply retractions first, then additions
            for r in sorted(changes, key=lambda r: r["_row_kind"] in ("+I", "+U")):
                if r["_row_kind"] in ("+I", "+U"):
                    state[r["id"]] = r["v"]
                else:
                    assert state.pop(r["id"]) == r["v"]
        if producer == "lookup" or meta["snapshots"][-1]["kind"] == "COMPACT":
            assert state == want  # full-compaction: the changelog is complete only after one

    check()
    java.call("compact", warehouse=str(wh), table=TABLE, full=True, commit_user="u", identifier=3)
    check()
    _impl_commit(impl.Catalog(str(wh)).get_table(TABLE), [{"id": 2, "op": "-D", "v": None},
                                                          {"id": 3, "op": "+I", "v": "c3"}], identifier=1)
    want.pop(2)
    want[3] = "c3"
    check()
    impl.Catalog(str(wh)).get_table(TABLE).compact(full=True)
    check()
    java.call("write", warehouse=str(wh), table=TABLE, parquet=str(_rows_file(tmp_path, [{"id": 4, "op": "+I", "v": "e4"}])),
              commit_user="u", identifier=4)
    want[4] = "e4"
    check()


def _rows_file(tmp_path: Path, rows: list[dict]) -> Path:
    schema = pa.schema([("id", pa.int64()), ("op", pa.string()), ("v", pa.string())])
    path = tmp_path / f"rows-{zlib.crc32(json.dumps(rows).encode())}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path

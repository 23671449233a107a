"""Issue 45 against Paimon Java 1.4.2: tables Java wrote and evolved read in impl as Java reads
them. Deletion-vector tables after a rename and after a column dropped and added again under
its name (columns matched by field id), time travel in the travelled snapshot's schema, and
partial-update's lone record of a sequence group (passed through as written)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.read.scan import SnapshotReader

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"


def _parquet(path, rows, schema) -> str:
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return str(path)


def _java_rows(java, wh, tmp_path, **args) -> list[dict]:
    out = tmp_path / f"java-{len(list(tmp_path.iterdir()))}.parquet"
    java.call("read", warehouse=wh, table=TABLE, out=str(out), **args)
    return pq.read_table(out).to_pylist()


def _sorted(rows, by="id"):
    return sorted(rows, key=lambda r: r[by])


class _Writer:
    """Java writes of one table, each a commit of its own."""

    def __init__(self, java, wh, tmp_path):
        self.java, self.wh, self.tmp, self.n = java, wh, tmp_path, 0

    def __call__(self, rows, schema, **args):
        self.n += 1
        self.java.call("write", warehouse=self.wh, table=TABLE, commit_user="u", identifier=self.n,
                       parquet=_parquet(self.tmp / f"w{self.n}.parquet", rows, schema), **args)


def _dv_table(java, wh):
    java.call("create_table", warehouse=wh, table=TABLE, fields=[["id", "BIGINT"], ["v", "STRING"], ["w", "INT"]],
              primary_keys=["id"], table_options={"bucket": "1", "deletion-vectors.enabled": "true"})


S0 = pa.schema([("id", pa.int64()), ("v", pa.string()), ("w", pa.int32())])


def test_dv_table_read_after_java_renames_a_column(java, tmp_path):
    wh = str(tmp_path / "wh")
    write = _Writer(java, wh, tmp_path)
    _dv_table(java, wh)
    write([{"id": i, "v": f"v{i}", "w": i} for i in range(1, 201)], S0)
    java.call("alter", warehouse=wh, table=TABLE, changes=[{"op": "rename_column", "name": "v", "new_name": "label"}])
    s1 = pa.schema([("id", pa.int64()), ("label", pa.string()), ("w", pa.int32())])
    write([{"id": 2, "label": "b2", "w": 22}, {"id": 201, "label": "new", "w": 201}], s1)
    expected = _sorted(_java_rows(java, wh, tmp_path))
    assert len(expected) == 201 and expected[0] == {"id": 1, "label": "v1", "w": 1}
    assert expected[1] == {"id": 2, "label": "b2", "w": 22}
    t = impl.Catalog(wh).get_table(TABLE)
    live = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert {e.file.schema_id for e in live} == {0, 1}  # the old file is still read, through its vector
    assert _sorted(t.to_arrow().to_pylist()) == expected


def test_dv_table_read_after_java_drops_and_re_adds_a_column(java, tmp_path):
    wh = str(tmp_path / "wh")
    write = _Writer(java, wh, tmp_path)
    _dv_table(java, wh)
    write([{"id": i, "v": f"old{i}", "w": i} for i in range(1, 201)], S0)
    java.call("alter", warehouse=wh, table=TABLE, changes=[{"op": "drop_column", "name": "v"}])
    java.call("alter", warehouse=wh, table=TABLE, changes=[{"op": "add_column", "name": "v", "type": "STRING"}])
    s2 = pa.schema([("id", pa.int64()), ("w", pa.int32()), ("v", pa.string())])
    write([{"id": 3, "w": 33, "v": "new3"}], s2)
    expected = _sorted(_java_rows(java, wh, tmp_path))
    assert expected[0] == {"id": 1, "w": 1, "v": None} and expected[2] == {"id": 3, "w": 33, "v": "new3"}
    t = impl.Catalog(wh).get_table(TABLE)
    assert _sorted(t.to_arrow().to_pylist()) == expected


@pytest.mark.parametrize("dv", [False, True], ids=["merge", "dv"])
def test_time_travel_reads_in_the_snapshots_schema_as_java(java, tmp_path, dv):
    wh = str(tmp_path / "wh")
    write = _Writer(java, wh, tmp_path)
    java.call("create_table", warehouse=wh, table=TABLE, fields=[["id", "BIGINT"], ["v", "STRING"], ["w", "INT"]],
              primary_keys=["id"], table_options={"bucket": "1", "deletion-vectors.enabled": str(dv).lower()})
    write([{"id": i, "v": f"v{i}", "w": i} for i in range(3)], S0)
    java.call("create_tag", warehouse=wh, table=TABLE, name="t1", snapshot_id=java.call(
        "metadata", warehouse=wh, table=TABLE)["snapshots"][-1]["id"])
    java.call("alter", warehouse=wh, table=TABLE, changes=[
        {"op": "rename_column", "name": "v", "new_name": "label"}, {"op": "add_column", "name": "n", "type": "INT"},
        {"op": "update_column_type", "name": "w", "type": "BIGINT"}])
    s1 = pa.schema([("id", pa.int64()), ("label", pa.string()), ("w", pa.int64()), ("n", pa.int32())])
    write([{"id": 1, "label": "x", "w": 10, "n": 5}], s1)
    meta = java.call("metadata", warehouse=wh, table=TABLE)
    # the newest snapshot of schema 0 (with deletion vectors, the first one's rows are on level 0,
    # which batch reads skip)
    first = max(s["id"] for s in meta["snapshots"] if s["schema_id"] == 0)
    t = impl.Catalog(wh).get_table(TABLE)
    for java_args, travel in (({"tag": "t1"}, {"scan.tag-name": "t1"}),
                              ({"snapshot_id": first}, {"scan.snapshot-id": str(first)})):
        expected = _java_rows(java, wh, tmp_path, **java_args)
        got = t.copy(travel).to_arrow()
        assert got.schema.names == ["id", "v", "w"] and got.schema.field("w").type == pa.int32()
        assert _sorted(got.to_pylist()) == _sorted(expected) == [{"id": i, "v": f"v{i}", "w": i} for i in range(3)]
    assert _sorted(t.to_arrow().to_pylist()) == _sorted(_java_rows(java, wh, tmp_path))


PU_FIELDS = [["id", "BIGINT"], ["g", "BIGINT"], ["a", "STRING"], ["b", "STRING"]]
PU_SCHEMA = pa.schema([("id", pa.int64()), ("g", pa.int64()), ("a", pa.string()), ("b", pa.string())])
PU_OPTIONS = {"bucket": "1", "merge-engine": "partial-update", "fields.g.sequence-group": "a"}
PU_ROWS = [
    [{"id": 1, "g": None, "a": "lone", "b": "b1"},       # one record: passed through as written
     {"id": 2, "g": None, "a": "skipped", "b": "b2"},    # a null group sequence in a merge: a not taken
     {"id": 3, "g": 5, "a": "new", "b": None}],
    [{"id": 2, "g": None, "a": None, "b": "b2'"},
     {"id": 3, "g": 4, "a": "old", "b": "b3"}],           # an older group sequence: a stays, b updates
]


def _write_batches(java, wh, tmp_path, writer, batches, schema) -> None:
    """Each batch of rows as one commit, by Java or by impl."""
    if writer == "java":
        write = _Writer(java, wh, tmp_path)
        for rows in batches:
            write(rows, schema)
    else:
        t = impl.Catalog(wh).get_table(TABLE)
        for rows in batches:
            t.write_arrow(pa.Table.from_pylist(rows, schema=schema))


@pytest.mark.parametrize("writer", ["java", "impl"])
def test_partial_update_sequence_group_lone_record_reads_as_java(java, tmp_path, writer):
    wh = str(tmp_path / "wh")
    java.call("create_table", warehouse=wh, table=TABLE, fields=PU_FIELDS, primary_keys=["id"],
              table_options=PU_OPTIONS)
    _write_batches(java, wh, tmp_path, writer, PU_ROWS, PU_SCHEMA)
    expected = _sorted(_java_rows(java, wh, tmp_path))
    assert expected == [{"id": 1, "g": None, "a": "lone", "b": "b1"}, {"id": 2, "g": None, "a": None, "b": "b2'"},
                        {"id": 3, "g": 5, "a": "new", "b": "b3"}]
    assert _sorted(impl.Catalog(wh).get_table(TABLE).to_arrow().to_pylist()) == expected


AGG_FIELDS = [["id", "BIGINT"], ["g", "BIGINT"], ["s", "BIGINT"], ["m", "INT"], ["a", "STRING"], ["o", "STRING"]]
AGG_SCHEMA = pa.schema([("id", pa.int64()), ("g", pa.int64()), ("s", pa.int64()), ("m", pa.int32()),
                        ("a", pa.string()), ("o", pa.string())])
AGG_OPTIONS = {"bucket": "1", "merge-engine": "partial-update", "fields.g.sequence-group": "s,m,a",
               "fields.s.aggregate-function": "sum", "fields.m.aggregate-function": "max"}
AGG_ROWS = [
    [{"id": 1, "g": 2, "s": 5, "m": 1, "a": "x", "o": "o1"}, {"id": 2, "g": 1, "s": 3, "m": 3, "a": "y", "o": None},
     {"id": 3, "g": 1, "s": 1, "m": 1, "a": "z", "o": "o3"}],
    [{"id": 1, "g": 1, "s": 7, "m": 9, "a": "old", "o": None},       # an older group sequence aggregates too
     {"id": 2, "g": None, "s": 100, "m": 50, "a": "no", "o": "o2"}],  # an empty group: not aggregated
    [{"id": 1, "g": 3, "s": None, "m": 4, "a": "new", "o": "o1'"}, {"id": 3, "g": 0, "s": 10, "m": 0, "a": "w"}],
]


@pytest.mark.parametrize("writer", ["java", "impl"])
def test_partial_update_sequence_group_aggregates_as_java(java, tmp_path, writer):
    wh = str(tmp_path / "wh")
    java.call("create_table", warehouse=wh, table=TABLE, fields=AGG_FIELDS, primary_keys=["id"],
              table_options=AGG_OPTIONS)
    _write_batches(java, wh, tmp_path, writer, AGG_ROWS, AGG_SCHEMA)
    expected = _sorted(_java_rows(java, wh, tmp_path))
    assert expected == [{"id": 1, "g": 3, "s": 12, "m": 9, "a": "new", "o": "o1'"},
                        {"id": 2, "g": 1, "s": 3, "m": 3, "a": "y", "o": "o2"},
                        {"id": 3, "g": 1, "s": 11, "m": 1, "a": "z", "o": "o3"}]
    assert _sorted(impl.Catalog(wh).get_table(TABLE).to_arrow().to_pylist()) == expected
    if writer == "impl":
        impl.Catalog(wh).get_table(TABLE).compact(full=True)
        assert _sorted(impl.Catalog(wh).get_table(TABLE).to_arrow().to_pylist()) == \
            _sorted(_java_rows(java, wh, tmp_path)) == expected


LOOKUP_SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.string())])


@pytest.mark.parametrize("extra", [{"partial-update.remove-record-on-delete": "true"},
                                   {"fields.a.sequence-group": "b", "fields.a.aggregate-function": None}],
                         ids=["remove-record-on-delete", "sequence-group"])
def test_partial_update_lookup_changelog_without_vectors_reads_as_java(java, tmp_path, extra):
    """Paimon's lookup compaction writes each key's merge with its looked-up row to a level and
    reads only a key's topmost level >= 1 row (LookupMergeFunction): impl reads such a table,
    every commit, as Java does; it refuses to write it."""
    import numpy as np

    wh = str(tmp_path / "wh")
    options = {"bucket": "1", "merge-engine": "partial-update", "changelog-producer": "lookup",
               **{k: v for k, v in extra.items() if v is not None}}
    java.call("create_table", warehouse=wh, table=TABLE, fields=[["id", "BIGINT"], ["a", "STRING"], ["b", "STRING"]],
              primary_keys=["id"], table_options=options)
    write = _Writer(java, wh, tmp_path)
    rng = np.random.default_rng(7)
    seq_group = "fields.a.sequence-group" in extra
    # a large first file stays on the last level while the small commits' merges land above it
    write([{"id": i, "a": "0", "b": "base"} for i in range(3000)], LOOKUP_SCHEMA)
    for commit in range(8):
        n = 12
        ids = rng.integers(0, 8, n)
        deletes = rng.random(n) < 0.25
        rows = [{"id": int(i), "a": (f"{int(rng.integers(0, 9))}" if seq_group else None)
                 if rng.random() < 0.7 else None, "b": f"b{commit}-{j}" if rng.random() < 0.7 else None}
                for j, i in enumerate(ids)]
        if not seq_group:
            for r in rows:
                r["a"] = f"a{commit}" if rng.random() < 0.6 else None
        write(rows, LOOKUP_SCHEMA, row_kinds=["-D" if d else "+I" for d in deletes])
        expected = _sorted(_java_rows(java, wh, tmp_path))
        assert _sorted(impl.Catalog(wh).get_table(TABLE).to_arrow().to_pylist()) == expected, f"commit {commit}"
    levels = {f["level"] for f in java.call("metadata", warehouse=wh, table=TABLE)["files"].popitem()[1]}
    assert len(levels - {0}) > 1  # rows of a key in several levels: the topmost one decides
    t = impl.Catalog(wh).get_table(TABLE)
    with pytest.raises(impl.errors.InvalidOptionError, match="deletion-vectors.enabled"):
        t.write_arrow(pa.Table.from_pylist([{"id": 1, "a": "x", "b": "y"}], schema=LOOKUP_SCHEMA))

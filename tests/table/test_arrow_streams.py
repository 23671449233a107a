"""Arrow streams: tables, read builders and system tables implement ``__arrow_c_stream__`` and
``to_arrow_batch_reader()``, so pyarrow, polars and DuckDB read the merged rows directly."""

from __future__ import annotations

import pyarrow as pa
import pytest
from table_helpers import write

from impl.errors import RequestedSchemaError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def rows(dt: str, ids: list[int], tag: str) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]},
                    schema=SCHEMA)


def by_id(t: pa.Table) -> dict:
    return {r["id"]: r["v"] for r in t.to_pylist()}


@pytest.fixture
def pk(catalog):
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    write(t, rows("a", [1, 2, 3, 4], "old"))
    write(t, rows("b", [5, 6], "old"))
    write(t, rows("a", [2, 3], "new"))                                      # updates
    write(t, rows("a", [4], "x"), row_kinds=pa.array([3], pa.int8()))       # a delete
    return t


PK_ROWS = {1: "old1", 2: "new2", 3: "new3", 5: "old5", 6: "old6"}


@pytest.fixture
def append(catalog):
    t = catalog.create_table("db.app", schema=SCHEMA, partition_keys=["dt"])
    write(t, rows("a", [1, 2], "p"))
    write(t, rows("b", [3], "q"))
    return t


def test_pyarrow_reads_merged_primary_key_rows(pk):
    got = pa.table(pk)
    assert got.schema == pk.arrow_schema                    # no _KEY_*, _SEQUENCE_NUMBER, _VALUE_KIND
    assert sorted(got.column("id").to_pylist()) == sorted(PK_ROWS)   # updated keys once, deleted absent
    assert by_id(got) == PK_ROWS
    reader = pa.RecordBatchReader.from_stream(pk)
    assert by_id(reader.read_all()) == PK_ROWS


def test_append_table_and_batch_reader(append):
    reader = append.to_arrow_batch_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert by_id(reader.read_all()) == {1: "p1", 2: "p2", 3: "q3"}
    assert by_id(pa.table(append)) == {1: "p1", 2: "p2", 3: "q3"}


def test_filter_and_projection_on_partitioned_table(pk, append):
    for t, want in ((pk, {1: "old1", 2: "new2", 3: "new3"}), (append, {1: "p1", 2: "p2"})):
        pred = t.new_read_builder().new_predicate_builder().equal("dt", "a")
        got = t.to_arrow_batch_reader(pred, ["id", "v"]).read_all()
        assert got.column_names == ["id", "v"]
        assert by_id(got) == want
        rb = t.new_read_builder().with_filter(pred).with_projection(["v", "id"])
        got = pa.table(rb)                                   # a read builder is a stream too
        assert got.column_names == ["v", "id"]
        assert by_id(got) == want


def test_stream_is_lazy_split_by_split(pk):
    rb = pk.new_read_builder()
    read = rb.new_read()
    reader = read.to_arrow_batch_reader(rb.new_scan().plan().splits())
    assert read.files_read == 0                              # nothing read before a batch is pulled
    reader.read_next_batch()
    first = read.files_read
    assert 0 < first
    reader.read_all()
    assert read.files_read > first                           # later splits read only when pulled


def test_empty_table_gives_schema_only(catalog):
    t = catalog.create_table("db.empty", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    got = pa.table(t)
    assert got.num_rows == 0 and got.schema == t.arrow_schema
    import polars as pl
    df = pl.DataFrame(t)
    assert df.height == 0 and df.columns == ["dt", "id", "v"]


def test_system_table(catalog, pk):
    snaps = catalog.get_table("db.pk$snapshots")
    got = pa.table(snaps)
    assert got.schema == snaps.arrow_schema
    assert got.column("snapshot_id").to_pylist() == [s.id for s in pk.snapshots()]
    assert snaps.to_arrow_batch_reader(projection=["snapshot_id"]).read_all().column("snapshot_id").to_pylist() \
        == [1, 2, 3, 4]
    rb = snaps.new_read_builder().with_projection(["commit_kind"]).with_limit(2)
    assert pa.table(rb).column("commit_kind").to_pylist() == ["APPEND", "APPEND"]


def test_polars(pk):
    import polars as pl
    df = pl.DataFrame(pk)
    assert df.columns == ["dt", "id", "v"]
    assert dict(zip(df["id"].to_list(), df["v"].to_list(), strict=True)) == PK_ROWS


def test_duckdb_replacement_scan(catalog, pk, append):
    duckdb = pytest.importorskip("duckdb")
    t = pk  # noqa: F841 - DuckDB finds the local variable by name
    got = duckdb.sql("select id, v from t where dt = 'a' order by id").fetchall()
    assert got == [(1, "old1"), (2, "new2"), (3, "new3")]
    assert duckdb.sql("select count(*), sum(id) from append").fetchall() == [(3, 6)]
    rb = pk.new_read_builder().with_projection(["id"])  # noqa: F841
    assert duckdb.sql("select count(*), sum(id) from rb").fetchall() == [(len(PK_ROWS), sum(PK_ROWS))]
    snaps = catalog.get_table("db.pk$snapshots")  # noqa: F841 - a system table
    assert duckdb.sql("select count(*), max(snapshot_id) from snaps").fetchall() == [(4, 4)]


def test_requested_schema_casts_when_compatible(pk):
    want = pa.schema([("dt", pa.large_string()), ("id", pa.int32()), ("v", pa.string())])
    got = pa.RecordBatchReader.from_stream(pk, schema=want).read_all()
    assert got.schema == want
    assert {r["id"]: r["v"] for r in got.to_pylist()} == PK_ROWS


@pytest.mark.parametrize("requested,column", [
    (pa.schema([("dt", pa.string()), ("id", pa.list_(pa.int64())), ("v", pa.string())]), "id"),  # type
    (pa.schema([("dt", pa.string()), ("nope", pa.int64()), ("v", pa.string())]), "nope"),         # name
    (pa.schema([("dt", pa.string()), ("id", pa.int64())]), "v"),                                  # fewer
    (pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("w", pa.int8())]), "w"),  # more
])
def test_requested_schema_refused_naming_the_column(pk, requested, column):
    with pytest.raises(RequestedSchemaError) as e:
        pa.RecordBatchReader.from_stream(pk, schema=requested)
    assert e.value.column == column
    assert repr(column) in str(e.value)


def test_limit_holds_on_streams(append, pk):
    for t in (append, pk):
        rb = t.new_read_builder().with_limit(2)
        assert pa.table(rb).num_rows == 2
        assert rb.to_arrow_batch_reader().read_all().num_rows == 2

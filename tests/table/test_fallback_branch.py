"""``scan.fallback-branch`` (Paimon's FallbackReadFileStoreTable): a batch read takes every
partition the table's branch lacks from the fallback branch; partitions the branch holds are
its own (whole); the filter applies to both; the fallback's row type must match; writes,
incremental and streaming reads are the branch's alone (issue 45: the option was dropped)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from table_helpers import sort_rows, write

from impl.errors import BranchNotExistError, InvalidBranchNameError, InvalidSchemaError
from impl.schema.changes import SchemaChange

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def _rows(dt, ids, v):
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [v] * len(ids)})


@pytest.fixture(params=["append", "primary-key", "deletion-vectors"])
def tables(request, local_catalog):
    """Main holds dt=a (ids 1, 2); branch 'fb' holds dt=a (ids 7, 8: hidden) and dt=b (ids 3, 4)."""
    pk = {"append": None, "primary-key": ["dt", "id"], "deletion-vectors": ["dt", "id"]}[request.param]
    options = {"bucket": "2"} if pk else {}
    if request.param == "deletion-vectors":
        options["deletion-vectors.enabled"] = "true"
    t = local_catalog.create_table("db.t", schema=SCHEMA, primary_keys=pk, partition_keys=["dt"], options=options)
    t.create_branch("fb")
    fb = local_catalog.get_table("db.t$branch_fb")
    write(fb, _rows("a", [7, 8], "fb"))
    write(fb, _rows("b", [3, 4], "fb"))
    write(t, _rows("a", [1, 2], "main"))
    return local_catalog, t, fb


def test_partitions_missing_in_main_are_read_from_the_fallback_branch(tables):
    cat, t, _ = tables
    assert {r["dt"] for r in sort_rows(t.to_arrow())} == {"a"}  # without the option
    t = t.copy({"scan.fallback-branch": "fb"})
    assert sort_rows(t.to_arrow()) == sort_rows(pa.concat_tables([_rows("a", [1, 2], "main"), _rows("b", [3, 4], "fb")]))
    # a filter applies to both branches' partitions
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("id", 4)).with_projection(["id", "v"])
    assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist() == [{"id": 4, "v": "fb"}]
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("dt", "a"))
    assert {r["v"] for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()} == {"main"}
    # the batch reader (the streamed path of primary-key reads) returns the same rows
    rb = t.new_read_builder()
    got = rb.new_read().to_arrow_batch_reader(rb.new_scan().plan().splits()).read_all()
    assert sort_rows(got) == sort_rows(t.to_arrow())


def test_the_partitions_system_table_lists_the_fallback_partitions(tables):
    cat, t, _ = tables
    cat.alter_table("db.t", [SchemaChange.set_option("scan.fallback-branch", "fb")])
    rows = cat.get_table("db.t$partitions").to_arrow().to_pylist()
    assert [(r["partition"], r["record_count"] >= 2) for r in rows] == [("dt=a", True), ("dt=b", True)]


def test_the_option_in_the_schema_and_writes_go_to_main(tables):
    cat, t, fb = tables
    cat.alter_table("db.t", [SchemaChange.set_option("scan.fallback-branch", "fb")])
    t = cat.get_table("db.t")
    assert {(r["dt"], r["v"]) for r in sort_rows(t.to_arrow())} == {("a", "main"), ("b", "fb")}
    write(t, _rows("b", [5], "main"))  # now main holds dt=b: its own rows only
    assert {(r["dt"], r["id"]) for r in sort_rows(cat.get_table("db.t").to_arrow())} == {
        ("a", 1), ("a", 2), ("b", 5)}
    assert {r["id"] for r in sort_rows(fb.to_arrow())} == {7, 8, 3, 4}  # the fallback branch kept its rows
    # incremental reads are the branch's own
    latest = cat.get_table("db.t").latest_snapshot().id
    inc = cat.get_table("db.t").copy({"incremental-between": f"0,{latest}"})
    assert {r["id"] for r in inc.to_arrow().to_pylist()} == {1, 2, 5}


def test_time_travel_picks_the_fallback_snapshot_by_time(tables):
    cat, t, fb = tables
    # main's latest snapshot was committed after the fallback's: both of its partitions show
    sid = str(t.latest_snapshot().id)
    t1 = t.copy({"scan.fallback-branch": "fb", "scan.snapshot-id": sid})
    assert {(r["dt"], r["v"]) for r in sort_rows(t1.to_arrow())} == {("a", "main"), ("b", "fb")}
    write(fb, _rows("c", [9], "fb"))  # later than main's snapshot: not in its view
    assert {r["dt"] for r in t1.copy({"scan.snapshot-id": sid}).to_arrow().to_pylist()} == {"a", "b"}
    assert {r["dt"] for r in t.copy({"scan.fallback-branch": "fb"}).to_arrow().to_pylist()} == {"a", "b", "c"}


def test_a_missing_or_bad_fallback_branch_is_refused_by_name(tables):
    cat, t, _ = tables
    with pytest.raises(BranchNotExistError, match="nope"):
        t.copy({"scan.fallback-branch": "nope"}).to_arrow()
    with pytest.raises(InvalidBranchNameError):
        t.copy({"scan.fallback-branch": "../x"}).to_arrow()
    # blank, or the branch itself: no fallback (as Paimon)
    assert {r["dt"] for r in t.copy({"scan.fallback-branch": " "}).to_arrow().to_pylist()} == {"a"}
    fb = cat.get_table("db.t$branch_fb").copy({"scan.fallback-branch": "fb"})
    assert {r["dt"] for r in fb.to_arrow().to_pylist()} == {"a", "b"}


def test_a_fallback_branch_with_another_row_type_is_refused(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    t.create_branch("fb")
    local_catalog.alter_table("db.t", [SchemaChange.add_column("extra", "INT")])
    with pytest.raises(InvalidSchemaError, match="same row type"):
        local_catalog.get_table("db.t").copy({"scan.fallback-branch": "fb"}).to_arrow()


def test_a_renamed_column_of_the_fallback_reads_by_position(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    t.create_branch("fb")
    write(local_catalog.get_table("db.t$branch_fb"), _rows("b", [3], "x"))
    local_catalog.alter_table("db.t", [SchemaChange.rename_column("v", "w")])
    t = local_catalog.get_table("db.t").copy({"scan.fallback-branch": "fb"})
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("w", "x")).with_projection(["w", "id"])
    assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist() == [{"w": "x", "id": 3}]


def test_main_may_fall_back_from_a_branch_view(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    t.create_branch("dev")
    write(t, _rows("a", [1], "main"))
    dev = local_catalog.get_table("db.t$branch_dev").copy({"scan.fallback-branch": "main"})
    assert [r["v"] for r in dev.to_arrow().to_pylist()] == ["main"]


def test_an_empty_branch_reads_every_partition_of_its_fallback(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    t.create_branch("fb")
    write(local_catalog.get_table("db.t$branch_fb"), _rows("a", [1], "fb"))
    assert t.latest_snapshot() is None
    assert sort_rows(t.copy({"scan.fallback-branch": "fb"}).to_arrow()) == sort_rows(_rows("a", [1], "fb"))

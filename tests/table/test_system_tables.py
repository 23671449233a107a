"""System tables (``db.t$snapshots`` ...): Java 2.0's columns and types, values checked against
the table's own metadata after appends, upserts, compaction, overwrite and expiration, tables
written by pypaimon 2.1.0, and bad input."""

from __future__ import annotations

import datetime as _dt
import decimal
import itertools
import json
import posixpath

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute in the random histories
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from table_helpers import read, write

import impl
from impl.data.types import DataType, parse_type
from impl.errors import (
    InvalidIdentifierError,
    InvalidPredicateError,
    PaimonError,
    SystemTableReadOnlyError,
    TableNotExistError,
    UnknownSystemTableError,
)
from impl.system import SYSTEM_TABLES, SystemTable
from impl.system.refs import duration_string, list_branches, list_tags
from impl.system.render import (
    cast_to_string,
    java_double,
    key_string,
    local_date_time,
    partition_spec_string,
    row_cast_to_string,
    stats_map_string,
)
from impl.system.tables import local_millis

TS = pa.timestamp("ms")

# Java 2.0's column names and types (org.apache.paimon.table.system.*Table.TABLE_TYPE),
# restated here independently of impl's definitions.
JAVA_COLUMNS: dict[str, list[tuple[str, pa.DataType, bool]]] = {
    "snapshots": [
        ("snapshot_id", pa.int64(), False), ("schema_id", pa.int64(), False), ("commit_user", pa.string(), False),
        ("commit_identifier", pa.int64(), False), ("commit_kind", pa.string(), False), ("commit_time", TS, False),
        ("base_manifest_list", pa.string(), False), ("delta_manifest_list", pa.string(), False),
        ("changelog_manifest_list", pa.string(), True), ("total_record_count", pa.int64(), True),
        ("delta_record_count", pa.int64(), True), ("changelog_record_count", pa.int64(), True),
        ("watermark", pa.int64(), True), ("next_row_id", pa.int64(), True), ("operation", pa.string(), True)],
    "schemas": [
        ("schema_id", pa.int64(), False), ("fields", pa.string(), False), ("partition_keys", pa.string(), False),
        ("primary_keys", pa.string(), False), ("options", pa.string(), False), ("comment", pa.string(), True),
        ("update_time", TS, False)],
    "options": [("key", pa.string(), False), ("value", pa.string(), False)],
    "manifests": [
        ("file_name", pa.string(), False), ("file_size", pa.int64(), False), ("num_added_files", pa.int64(), False),
        ("num_deleted_files", pa.int64(), False), ("schema_id", pa.int64(), False),
        ("min_partition_stats", pa.string(), True), ("max_partition_stats", pa.string(), True),
        ("min_row_id", pa.int64(), True), ("max_row_id", pa.int64(), True)],
    "files": [
        ("partition", pa.string(), True), ("bucket", pa.int32(), False), ("file_path", pa.string(), False),
        ("file_format", pa.string(), False), ("schema_id", pa.int64(), False), ("level", pa.int32(), False),
        ("record_count", pa.int64(), False), ("file_size_in_bytes", pa.int64(), False),
        ("min_key", pa.string(), True), ("max_key", pa.string(), True),
        ("null_value_counts", pa.string(), False), ("min_value_stats", pa.string(), False),
        ("max_value_stats", pa.string(), False), ("min_sequence_number", pa.int64(), True),
        ("max_sequence_number", pa.int64(), True), ("creation_time", TS, True), ("deleteRowCount", pa.int64(), True),
        ("file_source", pa.string(), True), ("first_row_id", pa.int64(), True),
        ("write_cols", pa.list_(pa.string()), True)],
    "partitions": [
        ("partition", pa.string(), True), ("record_count", pa.int64(), False),
        ("file_size_in_bytes", pa.int64(), False), ("file_count", pa.int64(), False),
        ("last_update_time", TS, True), ("created_at", TS, True), ("created_by", pa.string(), True),
        ("updated_by", pa.string(), True), ("options", pa.string(), True), ("total_buckets", pa.int32(), False),
        ("done", pa.bool_(), False), ("deleted_record_count", pa.int64(), True)],
    "buckets": [
        ("partition", pa.string(), True), ("bucket", pa.int32(), False), ("record_count", pa.int64(), False),
        ("file_size_in_bytes", pa.int64(), False), ("file_count", pa.int64(), False),
        ("last_update_time", TS, True)],
    "tags": [
        ("tag_name", pa.string(), False), ("snapshot_id", pa.int64(), False), ("schema_id", pa.int64(), False),
        ("commit_time", TS, False), ("record_count", pa.int64(), True), ("create_time", TS, True),
        ("time_retained", pa.string(), True)],
    "branches": [("branch_name", pa.string(), False), ("create_time", TS, False)],
}

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())])


def sys_read(cat, name, predicate=None, projection=None, limit=None) -> pa.Table:
    t = cat.get_table(name)
    rb = t.new_read_builder().with_filter(predicate).with_projection(projection).with_limit(limit)
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def rows(dt, ids, v, s):
    return pa.table({"dt": dt, "id": pa.array(ids, pa.int64()), "v": pa.array(v, pa.float64()), "s": s})


@pytest.fixture
def pk_table(catalog):
    """Primary-key table, partitioned by dt, 2 buckets: two appends (one an upsert), a full compaction."""
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"}, comment="the pk table")
    write(t, rows(["a", "a", "b"], [1, 2, 3], [1.5, None, 1e10], ["x", "y", None]))
    write(t, rows(["a"], [1], [2.5], ["z"]))  # upsert of (a, 1)
    t.compact(full=True)
    return catalog.get_table("db.pk")


# ---------------------------------------------------------------------------- columns and types


@pytest.mark.parametrize("name", sorted(JAVA_COLUMNS))
def test_columns_and_types_match_java(catalog, name):
    catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    st = catalog.get_table(f"db.t${name}")
    expected = pa.schema([pa.field(n, ty, nullable=null) for n, ty, null in JAVA_COLUMNS[name]])
    assert isinstance(st, SystemTable) and st.system_table_name == name
    assert st.new_read_builder().read_type() == expected
    # an empty table reads as zero rows of exactly that schema
    got = sys_read(catalog, f"db.t${name}")
    assert got.schema == expected
    assert got.num_rows == (1 if name == "schemas" else 0)


def test_every_java_table_is_known_and_names_are_case_insensitive(catalog):
    assert set(SYSTEM_TABLES) == set(JAVA_COLUMNS)
    catalog.create_table("db.t", schema=SCHEMA)
    assert catalog.get_table("db.t$SNAPSHOTS").identifier == "db.t$snapshots"
    assert catalog.table_exists("db.t$files") and not catalog.table_exists("db.t$nope")
    assert not catalog.table_exists("db.missing$files")


# ---------------------------------------------------------------------------- $snapshots


def test_snapshots_after_append_upsert_compact_overwrite_expire(catalog, pk_table):
    write(pk_table, rows(["b"], [7], [7.0], ["o"]), overwrite={"dt": "b"})
    snaps = pk_table.snapshots()
    got = sys_read(catalog, "db.pk$snapshots").to_pylist()
    assert [r["commit_kind"] for r in got] == ["APPEND", "APPEND", "COMPACT", "OVERWRITE"]
    for r, s in zip(got, snaps, strict=True):
        assert r["snapshot_id"] == s.id and r["schema_id"] == s.schema_id
        assert r["commit_user"] == s.commit_user and r["commit_identifier"] == s.commit_identifier
        assert r["base_manifest_list"] == s.base_manifest_list
        assert r["delta_manifest_list"] == s.delta_manifest_list
        assert r["changelog_manifest_list"] == s.changelog_manifest_list
        assert (r["total_record_count"], r["delta_record_count"]) == (s.total_record_count, s.delta_record_count)
        assert r["watermark"] == s.watermark and r["operation"] is None
        # local wall clock of the commit, as Java's LocalDateTime.ofInstant(..., systemDefault())
        expected_wall = _dt.datetime.fromtimestamp(s.time_millis // 1000).replace(
            microsecond=(s.time_millis % 1000) * 1000)
        assert r["commit_time"] == expected_wall
    # record counts tell the story: 3 rows, +1 upsert row, compaction merges to 3, overwrite of b
    assert [r["total_record_count"] for r in got] == [3, 4, 3, 3]
    pk_table.expire_snapshots(retain_min=2, retain_max=2, time_retained_ms=0)
    assert sys_read(catalog, "db.pk$snapshots", projection=["snapshot_id"]).column(0).to_pylist() == [3, 4]


def test_snapshots_filter_projection_limit_and_readers(catalog, pk_table):
    st = catalog.get_table("db.pk$snapshots")
    rb = st.new_read_builder()
    pb = rb.new_predicate_builder()
    rb = rb.with_filter(pb.equal("commit_kind", "COMPACT")).with_projection(["snapshot_id", "commit_kind"])
    splits = rb.new_scan().plan().splits()
    assert rb.new_read().to_arrow(splits).to_pylist() == [{"snapshot_id": 3, "commit_kind": "COMPACT"}]
    # the filter may name a column the projection leaves out
    rb2 = st.new_read_builder().with_filter(pb.greater_than("snapshot_id", 1)).with_projection([2]).with_limit(1)
    got = rb2.new_read().to_arrow(rb2.new_scan().plan().splits())
    assert got.column_names == ["commit_user"] and got.num_rows == 1
    reader = st.new_read_builder().new_read().to_arrow_batch_reader(splits)
    assert reader.read_all().num_rows == 3
    df = st.new_read_builder().new_read().to_pandas(splits)
    assert list(df["snapshot_id"]) == [1, 2, 3]
    assert st.to_arrow(projection=["snapshot_id"]).num_rows == 3


# ---------------------------------------------------------------------------- $files


def _live_files(table):
    """(partition path, bucket, DataFileMeta) of every live file, from a normal scan plan."""
    rb = table.new_read_builder()
    return [(s.partition_path, s.bucket, f) for s in rb.new_scan().plan().splits() for f in s.files]


def test_files_rows_are_the_live_files(catalog, pk_table):
    live = _live_files(pk_table)
    got = sys_read(catalog, "db.pk$files")
    assert got.num_rows == len(live) == 2  # one file per partition after the full compaction
    by_name = {posixpath.basename(r["file_path"]): r for r in got.to_pylist()}
    fs = pk_table.file_io
    for part_path, bucket, f in live:
        r = by_name[f.file_name]
        assert r["file_path"] == pk_table.core.paths.data_file_path(part_path, bucket, f.file_name)
        assert fs.exists(r["file_path"])
        assert (r["bucket"], r["level"], r["record_count"], r["file_size_in_bytes"], r["schema_id"]) == \
            (bucket, f.level, f.row_count, f.file_size, f.schema_id)
        assert (r["min_sequence_number"], r["max_sequence_number"]) == (f.min_sequence_number, f.max_sequence_number)
        assert r["file_format"] == "parquet" and r["file_source"] == f.file_source.name
        assert r["creation_time"] == _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=f.creation_time_millis)
    a = next(r for r in got.to_pylist() if r["partition"] == "{a}")
    # a's two files were merged into a new one; b's single file was only moved up a level
    assert (a["file_source"], a["level"]) == ("COMPACT", 5)
    # Java spellings: Arrays.toString of the key, TreeMap.toString of the stats, Double.toString
    assert (a["min_key"], a["max_key"]) == ("[1]", "[2]")
    assert a["null_value_counts"] == "{dt=0, id=0, s=0, v=1}"
    assert a["min_value_stats"] == "{dt=a, id=1, s=y, v=2.5}"
    assert a["max_value_stats"] == "{dt=a, id=2, s=z, v=2.5}"
    b = next(r for r in got.to_pylist() if r["partition"] == "{b}")
    assert b["min_value_stats"] == "{dt=b, id=3, s=null, v=1.0E10}" and b["null_value_counts"] == "{dt=0, id=0, s=1, v=0}"


def test_files_of_append_table_and_time_travel(catalog):
    t = catalog.create_table("db.app", schema=SCHEMA, partition_keys=["dt"])
    write(t, rows(["a", "b"], [1, 2], [1.0, 2.0], ["x", "y"]))
    write(t, rows(["a"], [3], [3.0], ["z"]))
    got = sys_read(catalog, "db.app$files")
    assert sorted(got.column("partition").to_pylist()) == ["{a}", "{a}", "{b}"]
    assert got.column("min_key").null_count == 3  # append files have no key
    assert set(got.column("file_source").to_pylist()) == {"APPEND"}
    # time travel: the system table over a view of snapshot 1 shows snapshot 1's files
    old = catalog.get_table("db.app$files").copy({"scan.snapshot-id": "1"})
    assert old.to_arrow().num_rows == 2
    plan = old.new_read_builder().new_scan().plan()
    assert plan.snapshot_id == 1 and len(plan.splits()) == 1
    # a filter on the partition column of $files
    rb = catalog.get_table("db.app$files").new_read_builder()
    flt = rb.new_predicate_builder().equal("partition", "{a}")
    assert sys_read(catalog, "db.app$files", predicate=flt).num_rows == 2
    # after an overwrite of partition a only its new file is live
    write(t, rows(["a"], [9], [9.0], ["w"]), overwrite={"dt": "a"})
    assert sorted(sys_read(catalog, "db.app$files", projection=["partition", "record_count"]).to_pylist(),
                  key=lambda r: r["partition"]) == [{"partition": "{a}", "record_count": 1},
                                                    {"partition": "{b}", "record_count": 1}]


# ---------------------------------------------------------------------------- $partitions / $buckets


def test_partitions_and_buckets_aggregate_the_live_files(catalog):
    t = catalog.create_table("db.app", schema=SCHEMA, partition_keys=["dt"],
                             options={"bucket": "3", "bucket-key": "id"})
    write(t, rows(["a"] * 5 + ["b"] * 2, list(range(7)), [1.0] * 7, ["x"] * 7))
    write(t, rows(["a"] * 3, [10, 11, 12], [2.0] * 3, ["y"] * 3))
    files = sys_read(catalog, "db.app$files").to_pylist()
    parts = sys_read(catalog, "db.app$partitions").to_pylist()
    assert [p["partition"] for p in parts] == ["dt=a", "dt=b"]
    data = read(t)
    for p in parts:
        dt = p["partition"].split("=")[1]
        mine = [f for f in files if f["partition"] == "{" + dt + "}"]
        assert p["record_count"] == sum(f["record_count"] for f in mine) == \
            sum(1 for x in data.column("dt").to_pylist() if x == dt)
        assert p["file_size_in_bytes"] == sum(f["file_size_in_bytes"] for f in mine)
        assert p["file_count"] == len(mine)
        assert p["last_update_time"] == max(f["creation_time"] for f in mine)
        assert (p["total_buckets"], p["done"], p["deleted_record_count"]) == (3, False, 0)
        assert p["created_by"] is None and p["options"] is None
    buckets = sys_read(catalog, "db.app$buckets").to_pylist()
    keys = [(b["partition"], b["bucket"]) for b in buckets]
    assert keys == sorted(keys) and len(keys) == len({(f["partition"], f["bucket"]) for f in files})
    for b in buckets:
        mine = [f for f in files if (f["partition"], f["bucket"]) == (b["partition"], b["bucket"])]
        assert (b["record_count"], b["file_size_in_bytes"], b["file_count"]) == (
            sum(f["record_count"] for f in mine), sum(f["file_size_in_bytes"] for f in mine), len(mine))
        assert b["last_update_time"] == max(f["creation_time"] for f in mine)
    assert sum(b["record_count"] for b in buckets) == 10


def test_partitions_of_unpartitioned_pk_table_count_files_not_merged_rows(catalog):
    t = catalog.create_table("db.u", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    write(t, rows(["a"], [1], [1.0], ["x"]))
    write(t, rows(["a"], [1], [2.0], ["y"]))  # an upsert: 2 files, 2 records before merging, as Java counts
    assert sys_read(catalog, "db.u$partitions", projection=["partition", "record_count", "file_count"]).to_pylist() \
        == [{"partition": "", "record_count": 2, "file_count": 2}]
    assert sys_read(catalog, "db.u$buckets", projection=["partition", "bucket"]).to_pylist() == \
        [{"partition": "{}", "bucket": 0}]
    t.compact(full=True)
    assert sys_read(catalog, "db.u$partitions", projection=["record_count"]).to_pylist() == [{"record_count": 1}]


# ---------------------------------------------------------------------------- $manifests


def test_manifests_are_the_snapshot_data_manifests(catalog, pk_table):
    snap = pk_table.latest_snapshot()
    metas = pk_table.core.manifest_list.read_data_manifests(snap)
    got = sys_read(catalog, "db.pk$manifests").to_pylist()
    assert [r["file_name"] for r in got] == [m.file_name for m in metas]
    for r, m in zip(got, metas, strict=True):
        assert (r["file_size"], r["num_added_files"], r["num_deleted_files"], r["schema_id"]) == \
            (m.file_size, m.num_added_files, m.num_deleted_files, m.schema_id)
    # adds minus deletes over all manifests is the live file count
    assert sum(r["num_added_files"] - r["num_deleted_files"] for r in got) == len(_live_files(pk_table))
    assert {r["min_partition_stats"] for r in got} == {"{a}"}
    assert "{b}" in {r["max_partition_stats"] for r in got}
    first = catalog.get_table("db.pk$manifests").copy({"scan.snapshot-id": "1"}).to_arrow()
    assert first.column("num_added_files").to_pylist() == [2] and first.column("num_deleted_files").to_pylist() == [0]


# ---------------------------------------------------------------------------- $schemas / $options


def test_schemas_and_options(catalog, pk_table):
    got = sys_read(catalog, "db.pk$schemas").to_pylist()
    assert len(got) == 1
    r = got[0]
    s = pk_table.schema
    assert r["schema_id"] == 0 and r["comment"] == "the pk table"
    assert json.loads(r["fields"]) == [f.to_json() for f in s.fields]
    assert r["fields"].startswith('[{"id":0,"name":"dt","type":"STRING NOT NULL"}')  # flat JSON, as Jackson
    assert (r["partition_keys"], r["primary_keys"], r["options"]) == ('["dt"]', '["dt","id"]', '{"bucket":"2"}')
    assert r["update_time"] == _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=local_millis(s.time_millis))
    assert sys_read(catalog, "db.pk$options").to_pylist() == [{"key": "bucket", "value": "2"}]


# ---------------------------------------------------------------------------- $tags / $branches


def _write_tag(table, name: str, snapshot_id: int, extra: dict) -> None:
    obj = json.loads(table.file_io.read_bytes(table.core.paths.snapshot_path(snapshot_id)))
    obj.update(extra)
    table.file_io.write_bytes(posixpath.join(table.path, "tag", f"tag-{name}"), json.dumps(obj).encode())


def test_tags_and_branches_from_the_layout(catalog, pk_table):
    _write_tag(pk_table, "v1", 1, {"tagCreateTime": [2026, 1, 2, 3, 4, 5, 6_000_000], "tagTimeRetained": 86400.0})
    _write_tag(pk_table, "a-first", 3, {})
    fs = pk_table.file_io
    fs.write_bytes(posixpath.join(pk_table.path, "branch", "branch-dev", "schema", "schema-0"),
                   fs.read_bytes(pk_table.core.paths.schema_path(0)))
    tags = sys_read(catalog, "db.pk$tags").to_pylist()
    assert [t["tag_name"] for t in tags] == ["a-first", "v1"]  # sorted by name
    s1, s3 = pk_table.snapshot(1), pk_table.snapshot(3)
    assert tags[1]["snapshot_id"] == 1 and tags[1]["record_count"] == s1.total_record_count
    assert tags[1]["create_time"] == _dt.datetime(2026, 1, 2, 3, 4, 5, 6000)
    assert tags[1]["time_retained"] == "PT24H"
    assert tags[1]["commit_time"] == _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=local_millis(s1.time_millis))
    assert (tags[0]["snapshot_id"], tags[0]["create_time"], tags[0]["time_retained"]) == (s3.id, None, None)
    branches = sys_read(catalog, "db.pk$branches").to_pylist()
    assert [b["branch_name"] for b in branches] == ["dev"]
    assert branches[0]["create_time"] > _dt.datetime(2000, 1, 1)
    # the seam functions on their own
    assert [t.name for t in list_tags(fs, pk_table.core.paths)] == ["a-first", "v1"]
    assert [b.branch_name for b in list_branches(fs, pk_table.core.paths)] == ["dev"]


def test_corrupt_tag_file_is_reported(catalog, pk_table):
    _write_tag(pk_table, "bad", 1, {"tagCreateTime": "not a time"})
    with pytest.raises(PaimonError, match="tag-bad.*tagCreateTime"):
        sys_read(catalog, "db.pk$tags")


# ---------------------------------------------------------------------------- bad input


def test_writes_and_maintenance_on_a_system_table_are_refused(catalog, pk_table):
    st = catalog.get_table("db.pk$files")
    before = sorted(f.path for f in pk_table.file_io.walk_files(pk_table.path))
    for call in (st.new_batch_write_builder, st.new_stream_write_builder, st.compact, st.expire_snapshots,
                 lambda: st.write_arrow(rows(["a"], [1], [1.0], ["x"])), lambda: st.rollback_to(1),
                 st.remove_orphan_files, lambda: st.create_tag("t"), lambda: st.delete_tag("t"),
                 lambda: st.create_branch("b"), lambda: st.delete_branch("b"), lambda: st.fast_forward("b")):
        with pytest.raises(SystemTableReadOnlyError, match=r"'db.pk\$files' is read-only"):
            call()
    with pytest.raises(SystemTableReadOnlyError):
        catalog.drop_table("db.pk$snapshots")
    assert sorted(f.path for f in pk_table.file_io.walk_files(pk_table.path)) == before
    assert catalog.table_exists("db.pk")


def test_data_and_system_tables_share_the_table_protocol(catalog, pk_table):
    st = catalog.get_table("db.pk$snapshots")
    assert isinstance(pk_table, impl.Table) and isinstance(st, impl.Table)
    for t in (pk_table, st, st.copy({"scan.snapshot-id": "1"})):  # read the same way
        assert isinstance(t, impl.Table)
        assert t.to_arrow().num_rows == t.new_read_builder().new_read().to_arrow(
            t.new_read_builder().new_scan().plan().splits()).num_rows > 0
    assert not isinstance(object(), impl.Table)


def test_unknown_system_table_lists_the_known_ones(catalog, pk_table):
    with pytest.raises(UnknownSystemTableError, match=r"'nope' is not a system table.*\$snapshots.*\$branches") as e:
        catalog.get_table("db.pk$nope")
    assert isinstance(e.value, TableNotExistError) and "files" in e.value.known


def test_system_table_of_a_missing_table(catalog):
    with pytest.raises(TableNotExistError, match="db.missing"):
        catalog.get_table("db.missing$snapshots")
    with pytest.raises(impl.table.DatabaseNotExistError):
        catalog.get_table("nodb.missing$snapshots")


def test_dollar_is_reserved_in_new_table_names(catalog):
    with pytest.raises(InvalidIdentifierError, match=r"reserved for system tables"):
        catalog.create_table("db.t$x", schema=SCHEMA)
    with pytest.raises(InvalidIdentifierError, match="no data table before"):
        catalog.get_table("db.$snapshots")
    assert catalog.list_tables("db") == []


def test_bad_projection_filter_and_limit(catalog, pk_table):
    rb = catalog.get_table("db.pk$snapshots").new_read_builder()
    with pytest.raises(InvalidPredicateError, match="'nope' is not a column"):
        rb.with_projection(["nope"])
    with pytest.raises(InvalidPredicateError, match="out of range"):
        rb.with_projection([99])
    with pytest.raises(InvalidPredicateError, match="is not a column"):
        rb.new_predicate_builder().equal("nope", 1)
    with pytest.raises(InvalidPredicateError, match="does not fit"):
        rb.new_predicate_builder().equal("snapshot_id", "one")
    data_pb = catalog.get_table("db.pk").new_read_builder().new_predicate_builder()
    with pytest.raises(InvalidPredicateError, match=r"\['id'\] are not columns"):
        rb.with_filter(data_pb.equal("id", 1))
    with pytest.raises(InvalidPredicateError, match="limit"):
        rb.with_limit(-1)
    with pytest.raises(InvalidPredicateError, match="own splits"):
        rb.new_read().to_arrow(catalog.get_table("db.pk$files").new_read_builder().new_scan().plan().splits())



@pytest.mark.parametrize("system", [False, True], ids=["data table", "system table"])
def test_projection_and_limit_follow_one_rule_on_every_read_builder(catalog, pk_table, system):
    """Data and system tables refuse the same bad projections and limits the same way (one rule:
    impl.read.projection); before, a data table took ``with_limit(True)`` as a limit of 1 and
    ``with_limit("5")`` failed with a TypeError."""
    table = catalog.get_table("db.pk$snapshots" if system else "db.pk")
    rb = table.new_read_builder()
    names = table.arrow_schema.names
    assert rb.with_projection([1, names[0]])._projection == [names[1], names[0]]
    for bad, match in (([names[0], 0], "twice"), ([len(names)], "out of range"), ([1.5], "is not a column"),
                       (["nope"], "'nope' is not a column")):
        with pytest.raises(InvalidPredicateError, match=match):
            rb.with_projection(bad)
    for limit in (True, "5", -1, 2.0):
        with pytest.raises(InvalidPredicateError, match="limit must be an int >= 0"):
            rb.with_limit(limit)
    assert rb.with_limit(0)._limit == 0


# ---------------------------------------------------------------------------- rendering rules


@pytest.mark.parametrize("value,text", [
    (1.0, "1.0"), (2.5, "2.5"), (1e10, "1.0E10"), (1.5e-5, "1.5E-5"), (123456.789, "123456.789"),
    (1e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"), (-0.0, "-0.0"), (float("nan"), "NaN"),
    (float("-inf"), "-Infinity"), (1e22, "1.0E22"), (0.1, "0.1"),
])
def test_java_double(value, text):
    assert java_double(value) == text


def test_java_spellings_of_values():
    ts = _dt.datetime(2024, 1, 2, 3, 4, 5, 120000)
    t3, t0 = parse_type("TIMESTAMP(3)"), parse_type("TIMESTAMP(0)")
    assert cast_to_string(ts, t3) == "2024-01-02 03:04:05.120"
    assert cast_to_string(_dt.datetime(2024, 1, 2), t0) == "2024-01-02 00:00:00"
    assert cast_to_string(True, parse_type("BOOLEAN")) == "true"
    assert cast_to_string(decimal.Decimal("1.50"), parse_type("DECIMAL(5, 2)")) == "1.50"
    assert cast_to_string(_dt.date(2024, 1, 2), parse_type("DATE")) == "2024-01-02"
    assert cast_to_string(1.5, parse_type("FLOAT")) == "1.5"
    assert local_date_time(_dt.datetime(2024, 1, 2, 3, 4)) == "2024-01-02T03:04"
    assert local_date_time(ts) == "2024-01-02T03:04:05.120"
    types = [parse_type("STRING"), parse_type("INT")]
    assert row_cast_to_string(("a", None), types) == "{a, null}"
    assert row_cast_to_string((), []) == "{}"
    assert partition_spec_string(["dt", "h"], ["a", None], types, "__DEFAULT_PARTITION__") == \
        "dt=a/h=__DEFAULT_PARTITION__"
    assert key_string((_dt.date(2024, 1, 2), 7), [parse_type("DATE"), parse_type("BIGINT")]) == "[2024-01-02, 7]"
    # internal objects: DATE is its epoch day, names sorted as a TreeMap
    date: DataType = parse_type("DATE")
    assert stats_map_string(["b", "a"], [_dt.date(1970, 1, 11), None], [date, date]) == "{a=null, b=10}"
    assert duration_string(decimal.Decimal("86400")) == "PT24H"
    assert duration_string(decimal.Decimal("5400.5")) == "PT1H30M0.5S"
    assert duration_string(decimal.Decimal(0)) == "PT0S"


# ---------------------------------------------------------------------------- pypaimon 2.1.0

PYPAIMON_WRITES = """
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
catalog = CatalogFactory.create({"warehouse": params["warehouse"]})
catalog.create_database("db", True)
pa_schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())])
def write(table, data):
    wb = table.new_batch_write_builder()
    w = wb.new_write(); c = wb.new_commit()
    w.write_arrow(pa.table(data, schema=pa_schema))
    c.commit(w.prepare_commit()); w.close(); c.close()
catalog.create_table("db.p", Schema.from_pyarrow_schema(
    pa_schema, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}), False)
t = catalog.get_table("db.p")
write(t, {"dt": ["a", "a", "b"], "id": [1, 2, 3], "v": [1.5, None, 2.0], "s": ["x", "y", None]})
write(t, {"dt": ["a"], "id": [1], "v": [2.5], "s": ["z"]})
t.create_tag("t1", 1, time_retained="1d")
t.create_tag("t2")
t.branch_manager().create_branch("dev", "t1")
result = {}
for name in params["tables"]:
    st = catalog.get_table("db.p$" + name)
    rb = st.new_read_builder()
    result[name] = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
"""


@pytest.fixture(scope="module")
def pypaimon_table(tmp_path_factory):
    """A table written, tagged and branched by pypaimon 2.1.0, with pypaimon's own reading of
    its system tables (one pypaimon process)."""
    pypaimon_env = pytest.importorskip("pypaimon_env")
    pypaimon_env.pypaimon_python()
    warehouse = str(tmp_path_factory.mktemp("pypaimon-systab"))
    theirs = pypaimon_env.run_pypaimon(PYPAIMON_WRITES, warehouse=warehouse, tables=sorted(JAVA_COLUMNS))
    return warehouse, theirs


def _project(rows_, cols):
    return [tuple(r[c] for c in cols) for r in rows_]


def test_system_tables_of_a_pypaimon_table(pypaimon_table):
    warehouse, theirs = pypaimon_table
    cat = impl.Catalog(warehouse)
    ours = {name: sys_read(cat, f"db.p${name}").to_pylist() for name in JAVA_COLUMNS}
    # columns pypaimon 2.1.0 spells as Java does agree value for value
    snap_cols = ["snapshot_id", "schema_id", "commit_user", "commit_identifier", "commit_kind",
                 "base_manifest_list", "delta_manifest_list", "total_record_count", "delta_record_count"]
    assert _project(ours["snapshots"], snap_cols) == _project(theirs["snapshots"], snap_cols)
    assert len(ours["snapshots"]) == 2
    assert _project(ours["schemas"], ["schema_id", "fields", "partition_keys", "primary_keys", "options"]) == \
        _project(theirs["schemas"], ["schema_id", "fields", "partition_keys", "primary_keys", "options"])
    assert ours["options"] == theirs["options"]
    man_cols = ["file_name", "file_size", "num_added_files", "num_deleted_files", "schema_id",
                "min_partition_stats", "max_partition_stats"]
    assert _project(ours["manifests"], man_cols) == _project(theirs["manifests"], man_cols)
    file_cols = ["bucket", "file_format", "schema_id", "level", "record_count", "file_size_in_bytes", "min_key",
                 "max_key", "min_sequence_number", "max_sequence_number", "deleteRowCount"]
    assert sorted(_project(ours["files"], file_cols)) == sorted(_project(theirs["files"], file_cols))
    assert sorted(posixpath.basename(r["file_path"]) for r in ours["files"]) == \
        sorted(posixpath.basename(r["file_path"]) for r in theirs["files"])
    assert {r["file_source"] for r in ours["files"]} == {"APPEND"}
    # pypaimon writes no value statistics on primary-key tables: every column reads null
    assert {r["min_value_stats"] for r in ours["files"]} == {"{dt=null, id=null, s=null, v=null}"}
    part_cols = ["partition", "record_count", "file_size_in_bytes", "file_count"]
    assert _project(ours["partitions"], part_cols) == _project(theirs["partitions"], part_cols)
    assert [r["total_buckets"] for r in ours["partitions"]] == [2, 2]
    bucket_cols = ["bucket", "record_count", "file_size_in_bytes", "file_count"]
    assert _project(ours["buckets"], bucket_cols) == _project(theirs["buckets"], bucket_cols)
    assert [r["partition"] for r in ours["buckets"]] == ["{a}", "{b}"]  # Java's ROW cast; pypaimon says dt=a
    tag_cols = ["tag_name", "snapshot_id", "schema_id", "record_count", "time_retained"]
    assert _project(ours["tags"], tag_cols) == sorted(_project(theirs["tags"], tag_cols))
    assert _project(ours["tags"], tag_cols) == [("t1", 1, 0, 3, "PT24H"), ("t2", 2, 0, 4, None)]
    their_t1 = next(r for r in theirs["tags"] if r["tag_name"] == "t1")
    assert str(ours["tags"][0]["create_time"]) == their_t1["create_time"]
    assert [r["branch_name"] for r in ours["branches"]] == [r["branch_name"] for r in theirs["branches"]] == ["dev"]
    # we write on top of pypaimon's table: the system tables follow
    write(cat.get_table("db.p"), rows(["b"], [3], [3.0], ["q"]))
    snaps = sys_read(cat, "db.p$snapshots", projection=["snapshot_id", "total_record_count"]).to_pylist()
    assert snaps[-1] == {"snapshot_id": 3, "total_record_count": 5}
    assert sys_read(cat, "db.p$files").num_rows == 4


def test_column_spellings_equal_the_value_spellings():
    """The whole-column renderers $files uses agree with the one-value rules, row for row."""
    from impl.system.render import key_column, stats_map_column, text_column
    types = [parse_type(x) for x in ("DOUBLE", "DATE", "STRING", "TIMESTAMP(3)", "DECIMAL(5, 2)", "BOOLEAN",
                                     "INT", "FLOAT")]
    names = ["d", "day", "s", "ts", "dec", "b", "i", "f"]
    rows_ = [
        (1e10, _dt.date(2024, 1, 2), "x", _dt.datetime(2024, 1, 2, 3, 4, 5, 6000), decimal.Decimal("1.50"), True,
         -3, 0.1),
        (None, None, None, None, None, None, None, None),
        (0.5, _dt.date(1969, 12, 31), "", _dt.datetime(2024, 1, 2), decimal.Decimal("-0.05"), False, 0, 2.5),
    ]
    for internal in (True, False):
        texts = [text_column([r[j] for r in rows_], t, internal=internal) for j, t in enumerate(types)]
        if internal:
            got = stats_map_column(names, texts, len(rows_)).to_pylist()
            assert got == [stats_map_string(names, list(r), types) for r in rows_]
        else:
            got = key_column(texts, len(rows_)).to_pylist()
            assert got == [key_string(r, types) for r in rows_]
    assert stats_map_column([], [], 2).to_pylist() == ["{}", "{}"]


# ---------------------------------------------------------------------------- object store


def test_system_tables_on_s3(s3_server, s3_bucket):
    """On S3: file paths carry the s3:// scheme (Java's bucket path), and a branch, which has no
    directory object, takes its creation time from its schema file."""
    cat = impl.Catalog(f"s3://{s3_bucket}/warehouse", options=s3_server.options())
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "1"})
    write(t, rows(["a", "b"], [1, 2], [1.0, 2.0], ["x", "y"]))
    files = sys_read(cat, "db.t$files", projection=["file_path", "record_count"]).to_pylist()
    assert len(files) == 2 and all(f["file_path"].startswith(f"s3://{s3_bucket}/warehouse/db.db/t/dt=")
                                   for f in files)
    assert all(t.file_io.exists(f["file_path"]) for f in files)
    _write_tag(t, "v1", 1, {})
    t.file_io.write_bytes(posixpath.join(t.path, "branch", "branch-dev", "schema", "schema-0"),
                          t.file_io.read_bytes(t.core.paths.schema_path(0)))
    assert sys_read(cat, "db.t$tags", projection=["tag_name", "snapshot_id"]).to_pylist() == \
        [{"tag_name": "v1", "snapshot_id": 1}]
    branches = sys_read(cat, "db.t$branches").to_pylist()
    assert [b["branch_name"] for b in branches] == ["dev"]
    assert branches[0]["create_time"] > _dt.datetime(2000, 1, 1)
    assert sys_read(cat, "db.t$partitions", projection=["partition", "record_count"]).to_pylist() == \
        [{"partition": "dt=a", "record_count": 1}, {"partition": "dt=b", "record_count": 1}]


def test_files_filter_on_cheap_columns_is_applied_before_spelling(catalog):
    """A filter on partition / bucket / level drops files before keys and statistics are spelled;
    the rows equal those of the unfiltered table filtered afterwards."""
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "3"})
    for i in range(3):
        write(t, rows(["a", "b", "c"], [i, i + 10, i + 20], [float(i)] * 3, ["x"] * 3))
    everything = sys_read(catalog, "db.pk$files").to_pylist()
    pb = catalog.get_table("db.pk$files").new_read_builder().new_predicate_builder()
    for flt, keep in [
        (pb.equal("bucket", everything[0]["bucket"]), lambda r: r["bucket"] == everything[0]["bucket"]),
        (pb.and_(pb.is_in("partition", ["{a}", "{c}"]), pb.equal("level", 0)),
         lambda r: r["partition"] in ("{a}", "{c}") and r["level"] == 0),
        # a conjunct on a spelled column is applied after spelling, on top of the early one
        (pb.and_(pb.equal("partition", "{b}"), pb.equal("min_key", "[11]")),
         lambda r: r["partition"] == "{b}" and r["min_key"] == "[11]"),
        (pb.or_(pb.equal("partition", "{b}"), pb.equal("max_key", "[0]")),
         lambda r: r["partition"] == "{b}" or r["max_key"] == "[0]"),
    ]:
        expected = [r for r in everything if keep(r)]
        assert expected and sys_read(catalog, "db.pk$files", predicate=flt).to_pylist() == expected


def test_files_statistics_follow_field_ids_across_schemas(catalog):
    """Files written under schema 0 are described against the latest schema by field id (Java's
    SimpleStatsEvolution): a renamed column keeps its statistics, an added one reads null,
    a dropped one is gone. Schema 1 is written here as an ALTER TABLE would write it."""
    import dataclasses

    from impl.data.types import DataField
    t = catalog.create_table("db.app", schema=SCHEMA)
    write(t, rows(["a", "b"], [1, 2], [0.5, 1.5], ["x", None]))
    s0 = t.schema
    fields = [f for f in s0.fields if f.name != "dt"]  # drop dt
    fields = [dataclasses.replace(f, name="value") if f.name == "v" else f for f in fields]  # rename v
    fields.append(DataField(s0.highest_field_id + 1, "extra", parse_type("INT")))  # add extra
    s1 = dataclasses.replace(s0, id=1, fields=tuple(fields), highest_field_id=s0.highest_field_id + 1)
    t.file_io.write_bytes(t.core.paths.schema_path(1), s1.to_json_bytes())
    r = sys_read(catalog, "db.app$files", projection=["schema_id", "null_value_counts", "min_value_stats",
                                                       "max_value_stats"]).to_pylist()
    assert r == [{"schema_id": 0, "null_value_counts": "{extra=null, id=0, s=1, value=0}",
                  "min_value_stats": "{extra=null, id=1, s=x, value=0.5}",
                  "max_value_stats": "{extra=null, id=2, s=x, value=1.5}"}]
    schemas = sys_read(catalog, "db.app$schemas", projection=["schema_id", "fields"]).to_pylist()
    assert [s["schema_id"] for s in schemas] == [0, 1]
    assert [f["name"] for f in json.loads(schemas[1]["fields"])] == ["id", "value", "s", "extra"]


def test_partitions_count_rows_deleted_by_deletion_vectors(catalog):
    """With deletion vectors on, ``deleted_record_count`` sums the cardinalities of the
    partition's deletion vectors in the snapshot's index manifest (null when one is unknown).
    The option and the index manifest are written here as a writer with deletion vectors would."""
    import dataclasses

    from impl.manifest.manifest_file import IndexManifestFile
    from impl.manifest.records import DeletionVectorMeta, FileKind, IndexFileMeta, IndexManifestEntry
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1"})
    write(t, rows(["a", "b", "c"], [1, 2, 3], [1.0] * 3, ["x"] * 3))
    assert [p["deleted_record_count"] for p in sys_read(catalog, "db.pk$partitions").to_pylist()] == [0, 0, 0]
    s1 = dataclasses.replace(t.schema, id=1, options={**t.schema.options, "deletion-vectors.enabled": "true"})
    t.file_io.write_bytes(t.core.paths.schema_path(1), s1.to_json_bytes())
    live = t.new_read_builder().new_scan().reader.live_entries(t.latest_snapshot())
    part = {t.core.partition_cache.values(e.partition)[0]: e.partition for e in live}  # "a" -> its BinaryRow

    def dv(partition, *cards):
        ranges = tuple(DeletionVectorMeta(f"data-{i}", i, 1, c) for i, c in enumerate(cards))
        return IndexManifestEntry(FileKind.ADD, part[partition], 0,
                                  IndexFileMeta("DELETION_VECTORS", f"index-{partition}", 10, len(cards), ranges))
    name = IndexManifestFile(t.file_io, t.core.paths).write([dv("a", 3, 4), dv("b", 2, None)])
    snap = dataclasses.replace(t.latest_snapshot(), id=2, schema_id=1, index_manifest=name)
    assert t.snapshot_manager().try_publish(snap)
    got = sys_read(catalog, "db.pk$partitions", projection=["partition", "deleted_record_count"]).to_pylist()
    assert got == [{"partition": "dt=a", "deleted_record_count": 7}, {"partition": "dt=b", "deleted_record_count": None},
                   {"partition": "dt=c", "deleted_record_count": 0}]


def test_snapshots_filter_on_id_reads_only_those_snapshot_files(catalog):
    t = catalog.create_table("db.app", schema=SCHEMA)
    for i in range(6):
        write(t, rows(["a"], [i], [1.0], ["x"]))
    st = catalog.get_table("db.app$snapshots")
    pb = st.new_read_builder().new_predicate_builder()
    io = st.data_table.file_io
    for flt, ids, files_read in [
        (pb.equal("snapshot_id", 4), [4], 1),
        (pb.between("snapshot_id", 2, 3), [2, 3], 2),
        (pb.and_(pb.greater_than("snapshot_id", 4), pb.equal("commit_kind", "APPEND")), [5, 6], 2),
        # an OR with another column cannot narrow the ids: every snapshot is read
        (pb.or_(pb.equal("snapshot_id", 1), pb.equal("commit_kind", "COMPACT")), [1], 6),
    ]:
        before = io.requests.snapshot()
        got = st.to_arrow(predicate=flt, projection=["snapshot_id"]).column(0).to_pylist()
        assert got == ids
        assert io.requests.since(before).get("GET", 0) == files_read


# ---------------------------------------------------------------------------- random histories

OPS = ("append", "upsert", "compact", "overwrite", "expire")
_HISTORY_NAMES = itertools.count()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=hs.lists(hs.sampled_from(OPS), min_size=1, max_size=6), seed=hs.integers(0, 1000))
def test_system_tables_agree_with_the_table_after_any_history(local_catalog, ops, seed):
    """After a random history of writes, compactions, overwrites and expirations: $files is the
    live file set of the latest snapshot, $partitions / $buckets are its sums, $snapshots lists
    the retained snapshots, $manifests nets out to the live file count."""
    import random
    rng = random.Random(seed)
    # a Hypothesis example may repeat within one run (the catalog fixture outlives examples)
    name = f"db.h{seed}_{len(ops)}_{next(_HISTORY_NAMES)}"
    t = local_catalog.create_table(name, schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                   options={"bucket": "2"})
    for op in ops:
        dts = [rng.choice("abc") for _ in range(4)]
        data = rows(dts, [rng.randrange(20) for _ in dts], [rng.random() for _ in dts], ["x"] * 4)
        if op in ("append", "upsert"):
            write(t, data)
        elif op == "compact":
            t.compact(full=rng.random() < 0.5)
        elif op == "overwrite":
            write(t, data.filter(pa.compute.equal(data.column("dt"), dts[0])), overwrite={"dt": dts[0]})
        else:
            t.expire_snapshots(retain_min=1, retain_max=2, time_retained_ms=0)
    live = {f.file_name: (bucket, f) for _, bucket, f in _live_files(t)}
    files = sys_read(local_catalog, f"{name}$files").to_pylist()
    assert sorted(posixpath.basename(r["file_path"]) for r in files) == sorted(live)
    for r in files:
        bucket, f = live[posixpath.basename(r["file_path"])]
        assert (r["bucket"], r["record_count"], r["level"]) == (bucket, f.row_count, f.level)
    parts = sys_read(local_catalog, f"{name}$partitions").to_pylist()
    assert sum(p["record_count"] for p in parts) == sum(r["record_count"] for r in files)
    assert sum(p["file_count"] for p in parts) == len(files)
    buckets = sys_read(local_catalog, f"{name}$buckets").to_pylist()
    assert sum(b["file_size_in_bytes"] for b in buckets) == sum(r["file_size_in_bytes"] for r in files)
    assert {(b["partition"], b["bucket"]) for b in buckets} == {(r["partition"], r["bucket"]) for r in files}
    snaps = sys_read(local_catalog, f"{name}$snapshots", projection=["snapshot_id"]).column(0).to_pylist()
    assert snaps == [s.id for s in t.snapshots()]
    manifests = sys_read(local_catalog, f"{name}$manifests").to_pylist()
    assert sum(m["num_added_files"] - m["num_deleted_files"] for m in manifests) == len(files)

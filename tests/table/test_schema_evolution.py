"""Schema evolution: alter_table rules, schema-N files and field ids, reads of old files by field
id (append and primary-key tables, merge-on-read, compaction, predicates and stats pruning), and
the commit-time check of a commit prepared under an older schema."""

from __future__ import annotations

import json
import threading
import warnings
from decimal import Decimal

import pyarrow as pa
import pytest

import impl
from impl.data.types import DataType, parse_type
from impl.errors import (
    ColumnAlreadyExistError,
    ColumnNotExistError,
    InvalidOptionError,
    SchemaChangedError,
    SchemaChangeError,
)
from impl.read.scan import SnapshotReader
from impl.schema import Move, SchemaChange, SchemaManager, is_safe_cast

SC = SchemaChange


def _schema_files(table) -> list[int]:
    return SchemaManager(table.file_io, table.core.paths).list_ids()


def _live_schema_ids(table) -> list[int]:
    return sorted(e.file.schema_id for e in SnapshotReader(table.core).live_entries(table.latest_snapshot()))


def _rows(table, predicate=None, by="id"):
    return sorted(table.to_arrow(predicate).to_pylist(), key=lambda r: r[by])


@pytest.fixture
def append_table(catalog):
    schema = pa.schema([("id", pa.int64()), ("a", pa.int8()), ("f", pa.float32()), ("d", pa.decimal128(10, 2)),
                        ("s", pa.string()), ("gone", pa.string())])
    t = catalog.create_table("db.t", schema)
    t.write_arrow(pa.table({"id": [1, 2], "a": pa.array([1, -2], pa.int8()), "f": pa.array([1.5, 2.5], pa.float32()),
                            "d": pa.array([Decimal("1.25"), Decimal("-3.50")], pa.decimal128(10, 2)),
                            "s": ["x", "y"], "gone": ["g1", "g2"]}))
    return t


# ---------------------------------------------------------------------------- schema files and ids


def test_alter_writes_next_schema_file_with_new_field_ids(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    catalog.alter_table("db.t", [SC.add_column("n", pa.int32(), comment="new"),
                                 SC.add_column("r", pa.struct([("x", pa.int32()), ("y", pa.string())]),
                                               move=Move.first("r"))])
    raw = json.loads(t.file_io.read_bytes(t.core.paths.schema_path(1)))
    assert raw["id"] == 1
    assert [(f["id"], f["name"]) for f in raw["fields"]] == [(3, "r"), (0, "id"), (1, "v"), (2, "n")]
    assert [(f["id"], f["name"]) for f in raw["fields"][0]["type"]["fields"]] == [(4, "x"), (5, "y")]
    assert raw["fields"][3]["description"] == "new"
    assert raw["highestFieldId"] == 5
    # dropping the highest id does not free it: the next column takes 6
    catalog.alter_table("db.t", [SC.drop_column("r")])
    catalog.alter_table("db.t", [SC.add_column("z", pa.int32())])
    latest = catalog.get_table("db.t").schema
    assert latest.id == 3 and latest.field("z").id == 6 and latest.highest_field_id == 6
    assert _schema_files(t) == [0, 1, 2, 3]


def test_options_comment_and_identifier_forms(catalog):
    catalog.create_table("db.t", pa.schema([("id", pa.int64())]), options={"bucket": "-1"})
    with pytest.warns(UserWarning, match="my.custom-option"):
        catalog.alter_table(("db", "t"), [SC.set_option("my.custom-option", "42"),
                                          SC.set_option("snapshot.num-retained.min", 5), SC.update_comment("hello")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the option stored before is not warned about again
        catalog.alter_table("db.t", [SC.update_comment("hello again")])
    t = catalog.get_table("db.t")
    assert t.schema.options["my.custom-option"] == "42"  # unknown but valid options are stored
    assert t.options.snapshot_num_retained_min == 5
    assert t.schema.comment == "hello again"
    catalog.alter_table("db.t", [SC.remove_option("my.custom-option"), SC.remove_option("not-there")])
    assert "my.custom-option" not in catalog.get_table("db.t").schema.options
    with pytest.raises(impl.TableNotExistError):
        catalog.alter_table("db.nope", [SC.update_comment("x")])
    catalog.alter_table("db.nope", [SC.update_comment("x")], ignore_if_not_exists=True)
    assert not catalog.table_exists("db.nope")


def test_bucket_is_immutable_once_data_is_written(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "2"})
    catalog.alter_table("db.t", [SC.set_option("bucket", "3")])  # no snapshot yet: allowed
    assert catalog.get_table("db.t").options.bucket == 3
    catalog.get_table("db.t").write_arrow(pa.table({"id": [1], "v": ["a"]}))
    with pytest.raises(SchemaChangeError, match="'bucket' cannot be changed once the table has snapshots"):
        catalog.alter_table("db.t", [SC.set_option("bucket", "4")])
    with pytest.raises(SchemaChangeError, match="'merge-engine'"):
        catalog.alter_table("db.t", [SC.set_option("merge-engine", "first-row")])
    with pytest.raises(SchemaChangeError, match="'bucket'"):
        catalog.alter_table("db.t", [SC.remove_option("bucket")])
    assert _schema_files(t) == [0, 1]


REFUSED = [
    ("drop pk", [SC.drop_column("id")], SchemaChangeError, "id", "primary key columns cannot be dropped"),
    ("drop partition", [SC.drop_column("dt")], SchemaChangeError, "dt", "partition columns cannot be dropped"),
    ("rename partition", [SC.rename_column("dt", "day")], SchemaChangeError, "dt", "partition columns cannot be renamed"),
    ("retype pk", [SC.update_column_type("id", pa.int64())], SchemaChangeError, "id", "primary key column types"),
    ("retype partition", [SC.update_column_type("dt", "VARCHAR(20)")], SchemaChangeError, "dt", "partition column"),
    ("narrow", [SC.update_column_type("v", pa.int16())], SchemaChangeError, "v", "types may only widen"),
    ("incompatible", [SC.update_column_type("v", pa.string())], SchemaChangeError, "v", "types may only widen"),
    ("decimal scale", [SC.update_column_type("d", pa.decimal128(12, 3))], SchemaChangeError, "d", "widen"),
    ("pk nullable", [SC.update_column_nullability("id", True)], SchemaChangeError, "id", "key columns are NOT NULL"),
    ("to not null", [SC.update_column_nullability("v", False)], SchemaChangeError, "v", "stay nullable"),
    ("retype to not null", [SC.update_column_type("v", "BIGINT NOT NULL")], SchemaChangeError, "v", "stay nullable"),
    ("add not null", [SC.add_column("n", "INT NOT NULL")], SchemaChangeError, "n", "added columns must be nullable"),
    ("add duplicate", [SC.add_column("v", pa.int32())], ColumnAlreadyExistError, "v", "column names are unique"),
    ("rename onto", [SC.rename_column("v", "d")], ColumnAlreadyExistError, "d", "column names are unique"),
    ("add reserved", [SC.add_column("_KEY_x", pa.int32())], SchemaChangeError, "_KEY_x", "reserved"),
    ("unknown drop", [SC.drop_column("nope")], ColumnNotExistError, "nope", "the column must exist"),
    ("unknown rename", [SC.rename_column("nope", "x")], ColumnNotExistError, "nope", "the column must exist"),
    ("unknown type", [SC.update_column_type("nope", pa.int64())], ColumnNotExistError, "nope", "must exist"),
    ("nested path", [SC.add_column(["v", "x"], pa.int32())], SchemaChangeError, "v.x", "nested"),
    ("type option", [SC.set_option("type", "format-table")], SchemaChangeError, None, "table type"),
    ("second change bad", [SC.add_column("ok", pa.int32()), SC.drop_column("id")], SchemaChangeError, "id", "dropped"),
]


@pytest.mark.parametrize("name,changes,error,column,rule", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_change_names_column_and_rule_and_writes_nothing(catalog, name, changes, error, column, rule):
    t = catalog.create_table("db.t", pa.schema([("dt", pa.string()), ("id", pa.int32()), ("v", pa.int32()),
                                                ("d", pa.decimal128(10, 2))]),
                             primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"})
    before = t.file_io.read_bytes(t.core.paths.schema_path(0))
    with pytest.raises(error) as info:
        catalog.alter_table("db.t", changes)
    assert info.value.column == column
    assert rule in info.value.rule or rule in str(info.value)
    if column is not None:
        assert repr(column) in str(info.value)
    assert _schema_files(t) == [0]
    assert t.file_io.read_bytes(t.core.paths.schema_path(0)) == before


def test_drop_last_column_and_dangling_option_refused(catalog):
    t = catalog.create_table("db.t", pa.schema([("v", pa.int32())]))
    with pytest.raises(SchemaChangeError, match="last column"):
        catalog.alter_table("db.t", [SC.drop_column("v")])
    t2 = catalog.create_table("db.t2", pa.schema([("k", pa.int32()), ("v", pa.int32())]),
                              options={"bucket": "2", "bucket-key": "k"})
    with pytest.raises(InvalidOptionError, match="bucket-key"):  # the new schema would be unusable
        catalog.alter_table("db.t2", [SC.drop_column("k")])
    assert _schema_files(t) == [0] and _schema_files(t2) == [0]


def test_rename_follows_into_keys_and_options(catalog):
    catalog.create_table("db.t", pa.schema([("id", pa.int32()), ("seq", pa.int64()), ("v", pa.int32())]),
                         primary_keys=["id"], options={"bucket": "1", "sequence.field": "seq",
                                                       "merge-engine": "aggregation",
                                                       "fields.v.aggregate-function": "sum"})
    catalog.alter_table("db.t", [SC.rename_column("id", "key"), SC.rename_column("seq", "ts"),
                                 SC.rename_column("v", "total")])
    s = catalog.get_table("db.t").schema
    assert s.primary_keys == ("key",)
    assert s.options["sequence.field"] == "ts"
    assert s.options["fields.total.aggregate-function"] == "sum" and "fields.v.aggregate-function" not in s.options


# ---------------------------------------------------------------------------- safe casts


@pytest.mark.parametrize("src,dst,ok", [
    ("TINYINT", "SMALLINT", True), ("SMALLINT", "INT", True), ("INT", "BIGINT", True), ("TINYINT", "BIGINT", True),
    ("BIGINT", "INT", False), ("FLOAT", "DOUBLE", True), ("DOUBLE", "FLOAT", False), ("INT", "DOUBLE", True),
    ("BIGINT", "DOUBLE", False), ("INT", "FLOAT", False), ("DECIMAL(10, 2)", "DECIMAL(12, 2)", True),
    ("DECIMAL(10, 2)", "DECIMAL(9, 2)", False), ("DECIMAL(10, 2)", "DECIMAL(12, 3)", False),
    ("INT", "DECIMAL(12, 2)", True), ("INT", "DECIMAL(11, 2)", False), ("VARCHAR(5)", "VARCHAR(10)", True),
    ("VARCHAR(10)", "VARCHAR(5)", False), ("CHAR(3)", "VARCHAR(3)", True), ("CHAR(3)", "CHAR(5)", True),
    ("VARCHAR(3)", "CHAR(3)", False), ("STRING", "INT", False), ("INT", "STRING", False),
    ("TIMESTAMP(3)", "TIMESTAMP(6)", True), ("TIMESTAMP(6)", "TIMESTAMP(3)", False), ("BOOLEAN", "INT", False),
])
def test_is_safe_cast(src, dst, ok):
    assert is_safe_cast(parse_type(src), parse_type(dst)) is ok


# ---------------------------------------------------------------------------- reads by field id


def test_append_reads_old_files_by_field_id(catalog, append_table):
    catalog.alter_table("db.t", [
        SC.rename_column("s", "label"),
        SC.drop_column("gone"),
        SC.add_column("gone", pa.string()),  # same name, new id: old files read null, not the dropped data
        SC.add_column("n", pa.int32()),
        SC.update_column_type("a", pa.int16()),
    ])
    catalog.alter_table("db.t", [SC.update_column_type("a", pa.int32()), SC.update_column_type("f", pa.float64()),
                                 SC.update_column_type("d", pa.decimal128(14, 2))])
    catalog.alter_table("db.t", [SC.update_column_type("a", pa.int64())])
    t = catalog.get_table("db.t")
    assert t.schema.id == 3
    assert t.to_arrow().schema.field("a").type == pa.int64()
    assert t.to_arrow().schema.field("d").type == pa.decimal128(14, 2)
    assert _rows(t) == [
        {"id": 1, "a": 1, "f": 1.5, "d": Decimal("1.25"), "label": "x", "gone": None, "n": None},
        {"id": 2, "a": -2, "f": 2.5, "d": Decimal("-3.50"), "label": "y", "gone": None, "n": None},
    ]
    # writes after evolution use the latest schema; both generations read together
    t.write_arrow(pa.table({"id": [3], "a": [2 ** 40], "f": [0.1], "d": pa.array([Decimal("123456789.01")],
                                                                                pa.decimal128(14, 2)),
                            "label": ["z"], "gone": ["new"], "n": pa.array([7], pa.int32())}))
    assert _live_schema_ids(t) == [0, 3]
    rows = _rows(t)
    assert [r["label"] for r in rows] == ["x", "y", "z"] and rows[2]["a"] == 2 ** 40 and rows[2]["gone"] == "new"
    pb = t.new_read_builder().new_predicate_builder()
    assert [r["id"] for r in _rows(t, pb.equal("label", "y"))] == [2]
    assert [r["id"] for r in _rows(t, pb.is_null("n"))] == [1, 2]
    assert [r["id"] for r in _rows(t, pb.greater_than("a", 0))] == [1, 3]
    assert [r["id"] for r in _rows(t, pb.equal("gone", "g1"))] == []
    # projection of a renamed column only
    rb = t.new_read_builder().with_projection(["label"])
    assert sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("label").to_pylist()) == ["x", "y", "z"]


def test_stats_pruning_uses_old_files_stats_by_field_id(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int32())]))
    t.write_arrow(pa.table({"id": [1, 2], "v": pa.array([10, 20], pa.int32())}))
    t.write_arrow(pa.table({"id": [3, 4], "v": pa.array([30, 40], pa.int32())}))
    catalog.alter_table("db.t", [SC.rename_column("v", "w"), SC.update_column_type("w", pa.int64()),
                                 SC.add_column("n", pa.int32())])
    t = catalog.get_table("db.t")
    pb = t.new_read_builder().new_predicate_builder()
    scan = t.new_read_builder().with_filter(pb.equal("w", 30)).new_scan()
    splits = scan.plan().splits()
    assert scan.files_pruned_by_stats == 1  # the old file with w in [10, 20] is pruned through its old stats
    rb = t.new_read_builder().with_filter(pb.equal("w", 30))
    assert rb.new_read().to_arrow(splits).column("id").to_pylist() == [3]
    # a column old files lack has no stats there: those files are kept, never dropped wrongly
    scan = t.new_read_builder().with_filter(pb.is_null("n")).new_scan()
    assert len([f for s in scan.plan().splits() for f in s.files]) == 2 and scan.files_pruned_by_stats == 0


def test_primary_key_table_merges_across_schemas_and_compacts_to_latest(catalog):
    t = catalog.create_table("db.t", pa.schema([("dt", pa.string()), ("id", pa.int32()), ("v", pa.int32()),
                                                ("x", pa.string())]),
                             primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"})
    t.write_arrow(pa.table({"dt": ["d1"] * 3, "id": pa.array([1, 2, 3], pa.int32()),
                            "v": pa.array([10, 20, 30], pa.int32()), "x": ["a", "b", "c"]}))
    catalog.alter_table("db.t", [SC.rename_column("id", "key"), SC.rename_column("v", "value"),
                                 SC.update_column_type("value", pa.int64()), SC.drop_column("x"),
                                 SC.add_column("y", pa.float64())])
    t = catalog.get_table("db.t")
    assert _rows(t, by="key") == [{"dt": "d1", "key": k, "value": v, "y": None} for k, v in [(1, 10), (2, 20), (3, 30)]]
    # an upsert under the new schema replaces the row written under the old one (keys match by id)
    t.write_arrow(pa.table({"dt": ["d1", "d1"], "key": pa.array([2, 4], pa.int32()), "value": [2 ** 40, 40],
                            "y": [0.5, None]}))
    expected = [{"dt": "d1", "key": 1, "value": 10, "y": None}, {"dt": "d1", "key": 2, "value": 2 ** 40, "y": 0.5},
                {"dt": "d1", "key": 3, "value": 30, "y": None}, {"dt": "d1", "key": 4, "value": 40, "y": None}]
    assert _rows(t, by="key") == expected
    pb = t.new_read_builder().new_predicate_builder()
    assert [r["key"] for r in _rows(t, pb.less_than("key", 3), by="key")] == [1, 2]  # key stats of old files
    assert [r["key"] for r in _rows(t, pb.equal("value", 30), by="key")] == [3]
    # the streaming reader maps old files the same way
    rb = t.new_read_builder()
    streamed = rb.new_read().to_arrow_batch_reader(rb.new_scan().plan().splits()).read_all()
    assert sorted(streamed.to_pylist(), key=lambda r: r["key"]) == expected
    assert 0 in _live_schema_ids(t)
    t.compact(full=True)
    # the merge of old and new files is written under the current schema
    assert _live_schema_ids(t) == [1]
    assert _rows(t, by="key") == expected


def test_append_compaction_rewrites_old_files_under_latest(catalog, append_table):
    catalog.alter_table("db.t", [SC.rename_column("s", "label"), SC.add_column("n", pa.int32()),
                                 SC.update_column_type("a", pa.int64())])
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"id": [3], "a": [5], "f": pa.array([0.5], pa.float32()),
                            "d": pa.array([Decimal("1.00")], pa.decimal128(10, 2)), "label": ["z"],
                            "gone": ["g3"], "n": pa.array([1], pa.int32())}))
    before = _rows(t)
    t.compact(full=True)
    assert _live_schema_ids(t) == [1]
    assert _rows(t) == before


# ---------------------------------------------------------------------------- races and commits


def test_racing_alters_one_wins_loser_rebuilds_on_new_schema(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    calls = []

    def racing_build(latest):
        # another alter lands schema-1 between our read of schema-0 and our create of schema-1
        calls.append(latest.id)
        if len(calls) == 1:
            catalog.alter_table("db.t", [SC.add_column("a", pa.int32())])
        from impl.schema import apply_changes
        return apply_changes(latest, [SC.add_column("b", pa.int32())], has_snapshots=lambda: False)

    SchemaManager(t.file_io, t.core.paths).commit_changes(racing_build, "db.t")
    assert calls == [0, 1]
    s = catalog.get_table("db.t").schema
    assert s.id == 2 and s.field_names == ["id", "a", "b"] and [f.id for f in s.fields] == [0, 1, 2]


def test_racing_alters_threads_every_change_lands_once(catalog):
    catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    errors = []

    def alter(i):
        try:
            catalog.alter_table("db.t", [SC.add_column(f"c{i}", pa.int32())])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=alter, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    s = catalog.get_table("db.t").schema
    assert s.id == 4 and sorted(s.field_names) == ["c0", "c1", "c2", "c3", "id"]
    assert sorted(f.id for f in s.fields) == [0, 1, 2, 3, 4]


def test_racing_alters_loser_refused_when_its_change_no_longer_applies(catalog):
    catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int32())]))
    first = []

    def build(latest):
        if not first:
            first.append(1)
            catalog.alter_table("db.t", [SC.drop_column("v")])
        from impl.schema import apply_changes
        return apply_changes(latest, [SC.rename_column("v", "w")], has_snapshots=lambda: False)

    t = catalog.get_table("db.t")
    with pytest.raises(ColumnNotExistError, match="'v'"):
        SchemaManager(t.file_io, t.core.paths).commit_changes(build, "db.t")
    assert _schema_files(t) == [0, 1]


def _prepare(table, data):
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(data)
    return wb, w.prepare_commit(), w


def test_commit_prepared_under_old_schema_published_under_latest_when_compatible(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int32())]), primary_keys=["id"],
                             options={"bucket": "2"})
    wb, msgs, w = _prepare(t, pa.table({"id": [1, 2], "v": pa.array([1, 2], pa.int32())}))
    catalog.alter_table("db.t", [SC.rename_column("v", "w"), SC.update_column_type("w", pa.int64()),
                                 SC.add_column("n", pa.string()), SC.set_option("snapshot.num-retained.min", "3")])
    c = wb.new_commit()
    c.commit(msgs)
    w.close()
    c.close()
    t2 = catalog.get_table("db.t")
    assert t2.latest_snapshot().schema_id == 1  # the snapshot takes the latest schema id
    assert set(_live_schema_ids(t2)) == {0}  # its files keep the schema they were written under
    assert _rows(t2) == [{"id": 1, "w": 1, "n": None}, {"id": 2, "w": 2, "n": None}]


def test_commit_prepared_under_old_schema_refused_when_layout_changed(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int32())]), primary_keys=["id"],
                             options={"bucket": "2"})
    wb, msgs, w = _prepare(t, pa.table({"id": [1, 2, 3], "v": pa.array([1, 2, 3], pa.int32())}))
    catalog.alter_table("db.t", [SC.set_option("bucket", "4")])  # allowed: no snapshot yet
    manifests_before = t.file_io.list_names(t.core.paths.manifest_dir)
    c = wb.new_commit()
    with pytest.raises(SchemaChangedError) as info:
        c.commit(msgs)
    w.close()
    c.close()
    assert (info.value.prepared_schema_id, info.value.latest_schema_id) == (0, 1)
    assert "'bucket' changed from '2' to '4'" in str(info.value)
    assert isinstance(info.value, impl.CommitConflictError)
    assert t.latest_snapshot() is None  # nothing published
    assert t.file_io.list_names(t.core.paths.manifest_dir) == manifests_before  # no manifest left behind


def test_reads_of_an_older_table_view_still_work_after_alter(catalog, append_table):
    old_view = append_table  # holds schema 0
    catalog.alter_table("db.t", [SC.drop_column("gone"), SC.add_column("n", pa.int32())])
    catalog.get_table("db.t").write_arrow(pa.table({"id": [3], "a": pa.array([3], pa.int8()),
                                                    "f": pa.array([3.0], pa.float32()),
                                                    "d": pa.array([Decimal("3.00")], pa.decimal128(10, 2)),
                                                    "s": ["z"], "n": pa.array([9], pa.int32())}))
    # a reader opened under schema 0 maps the new file (schema 1) to schema 0 by field id
    rows = _rows(old_view)
    assert [r["gone"] for r in rows] == ["g1", "g2", None] and "n" not in rows[0]


def test_data_type_forms_accepted(catalog):
    catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    catalog.alter_table("db.t", [SC.add_column("a", "DECIMAL(10, 2)"), SC.add_column("b", DataType("INT")),
                                 SC.add_column("c", pa.timestamp("ms")), SC.add_column("d", pa.list_(pa.int32()))])
    s = catalog.get_table("db.t").schema
    assert [str(f.type) for f in s.fields[1:]] == ["DECIMAL(10, 2)", "INT", "TIMESTAMP(3)", "ARRAY<INT>"]
    with pytest.raises(SchemaChangeError, match="'e'"):
        catalog.alter_table("db.t", [SC.add_column("e", object())])
    with pytest.raises(SchemaChangeError, match="list of SchemaChange"):
        catalog.alter_table("db.t", SC.add_column("e", pa.int32()))


def test_column_comment_and_position(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.int32())]))
    t.write_arrow(pa.table({"id": [1], "a": pa.array([2], pa.int32()), "b": pa.array([3], pa.int32())}))
    catalog.alter_table("db.t", [SC.update_column_comment("a", "the a"),
                                 SC.update_column_position(Move.after("id", "b")),
                                 SC.add_column("c", pa.int32(), move=Move.before("c", "a"))])
    t = catalog.get_table("db.t")
    assert t.schema.field_names == ["c", "a", "b", "id"]
    assert t.schema.field("a").description == "the a"
    assert t.to_arrow().to_pylist() == [{"c": None, "a": 2, "b": 3, "id": 1}]
    with pytest.raises(ColumnNotExistError, match="'zz'"):
        catalog.alter_table("db.t", [SC.update_column_position(Move.first("zz"))])

"""Snapshot and schema JSON: pypaimon 2.1.0's files parse, round trips, null keys omitted."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impl.data.types import BIGINT, DECIMAL, DOUBLE, STRING, TIMESTAMP, DataField, DataType
from impl.schema.records import TableSchema
from impl.snapshot.records import CommitKind, Snapshot

REQUIRED_SNAPSHOT_KEYS = {"version", "id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser",
                          "commitIdentifier", "commitKind", "timeMillis"}
KEY_OF = {
    "total_record_count": "totalRecordCount", "delta_record_count": "deltaRecordCount",
    "changelog_manifest_list": "changelogManifestList", "index_manifest": "indexManifest",
    "changelog_record_count": "changelogRecordCount", "watermark": "watermark", "statistics": "statistics",
    "properties": "properties", "base_manifest_list_size": "baseManifestListSize",
    "delta_manifest_list_size": "deltaManifestListSize",
    "changelog_manifest_list_size": "changelogManifestListSize",
}


def test_reference_snapshots_parse(reference_dump):
    snaps = reference_dump.snapshots()
    assert len(snaps) == 7
    for path, raw in snaps.items():
        o = json.loads(raw)
        s = Snapshot.from_json_bytes(raw, path)
        assert path.endswith(f"snapshot-{s.id}")
        assert (s.id, s.schema_id, s.base_manifest_list, s.delta_manifest_list) == (
            o["id"], o["schemaId"], o["baseManifestList"], o["deltaManifestList"])
        assert s.commit_kind is CommitKind(o["commitKind"]) is CommitKind.APPEND
        assert s.commit_identifier == 2**63 - 1 == o["commitIdentifier"]
        assert (s.commit_user, s.time_millis) == (o["commitUser"], o["timeMillis"])
        assert (s.total_record_count, s.delta_record_count) == (o["totalRecordCount"], o["deltaRecordCount"])
        assert (s.base_manifest_list_size, s.delta_manifest_list_size) == (
            o["baseManifestListSize"], o["deltaManifestListSize"])
        assert s.changelog_manifest_list == o.get("changelogManifestList")
        assert s.changelog_record_count == o.get("changelogRecordCount")
        assert s.changelog_manifest_list_size == o.get("changelogManifestListSize")
        # writing it back gives pypaimon's JSON minus the keys we do not model
        ours = json.loads(s.to_json_bytes())
        theirs = {k: v for k, v in o.items() if k not in ("uuid", "writerVersion")}
        assert ours == theirs, path
    assert Snapshot.from_json_bytes(snaps["db.db/cl_t/snapshot/snapshot-2"], "x").changelog_record_count == 2


def test_reference_latest_hints_name_the_newest_snapshot(reference_dump):
    for hint_path, text in reference_dump.hints.items():
        table = hint_path.split("/")[1]
        ids = [Snapshot.from_json_bytes(raw, p).id for p, raw in reference_dump.snapshots().items()
               if p.split("/")[1] == table]
        assert int(text) == max(ids)


def test_reference_schemas_parse_and_write_back_identically(reference_dump):
    schemas = reference_dump.schemas()
    assert len(schemas) == 3
    for path, raw in schemas.items():
        s = TableSchema.from_json_bytes(raw, path)
        o = json.loads(raw)
        assert s.id == 0 and s.field_names == [f["name"] for f in o["fields"]]
        assert json.loads(s.to_json_bytes()) == o, path
    pk = TableSchema.from_json_bytes(schemas["db.db/pk_t/schema/schema-0"], "x")
    assert pk.partition_keys == ("dt",) and pk.primary_keys == ("dt", "id")
    assert pk.trimmed_primary_keys == ("id",)
    assert pk.field("dt").type == STRING(False) and pk.field("id").type == BIGINT(False)
    assert pk.field("amount").type == DOUBLE()
    assert pk.options == {"bucket": "2", "file.format": "parquet", "rowkind.field": "op"}


def test_unknown_keys_are_ignored():
    base = {"version": 3, "id": 4, "schemaId": 0, "baseManifestList": "b", "deltaManifestList": "d",
            "commitUser": "u", "commitIdentifier": 1, "commitKind": "COMPACT", "timeMillis": 5,
            "uuid": "x", "writerVersion": "python-2.1.0", "logOffsets": {}, "someFutureKey": [1, 2]}
    s = Snapshot.from_json_bytes(json.dumps(base).encode(), "p")
    assert s.id == 4 and s.commit_kind is CommitKind.COMPACT
    schema = {"version": 3, "id": 1, "fields": [{"id": 0, "name": "a", "type": "INT", "futureKey": 1}],
              "highestFieldId": 0, "partitionKeys": [], "primaryKeys": [], "options": {}, "comment": None,
              "timeMillis": 1, "anotherFutureKey": True}
    assert TableSchema.from_json_bytes(json.dumps(schema).encode(), "p").field_names == ["a"]


def test_null_keys_are_omitted_on_write():
    s = Snapshot(1, 0, "base", "delta", "user", 7, CommitKind.APPEND, 123)
    o = json.loads(s.to_json_bytes())
    assert set(o) == REQUIRED_SNAPSHOT_KEYS
    assert o["version"] == 3
    assert None not in o.values()


_text = st.text(min_size=1, max_size=20)
_i64 = st.integers(-(2**63), 2**63 - 1)
_opt_i64 = st.none() | _i64
_snapshots = st.builds(
    Snapshot,
    id=st.integers(1, 2**40), schema_id=st.integers(0, 1000),
    base_manifest_list=_text, delta_manifest_list=_text, commit_user=_text,
    commit_identifier=_i64, commit_kind=st.sampled_from(list(CommitKind)), time_millis=st.integers(0, 2**45),
    total_record_count=_opt_i64, delta_record_count=_opt_i64,
    changelog_manifest_list=st.none() | _text, index_manifest=st.none() | _text,
    changelog_record_count=_opt_i64, watermark=_opt_i64, statistics=st.none() | _text,
    properties=st.none() | st.dictionaries(_text, st.text(max_size=10), min_size=1, max_size=3),
    base_manifest_list_size=_opt_i64, delta_manifest_list_size=_opt_i64,
    changelog_manifest_list_size=_opt_i64,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_snapshots)
def test_snapshot_round_trip(snap):
    raw = snap.to_json_bytes()
    o = json.loads(raw)
    assert None not in o.values()
    expected_keys = REQUIRED_SNAPSHOT_KEYS | {json_key for attr, json_key in KEY_OF.items()
                                             if getattr(snap, attr) is not None}
    assert set(o) == expected_keys
    assert o["commitKind"] == snap.commit_kind.value
    assert Snapshot.from_json_bytes(raw, "p") == snap


_atomic_types = st.sampled_from([
    STRING(), STRING(False), BIGINT(), BIGINT(False), DOUBLE(), DECIMAL(10, 2), DECIMAL(38, 18, False),
    TIMESTAMP(3), TIMESTAMP(6), DataType("BOOLEAN"), DataType("DATE", False), DataType("VARBINARY", length=2147483647),
    DataType("CHAR", length=5), DataType("VARCHAR", length=20),
])


@settings(max_examples=100, deadline=None)
@given(st.lists(_atomic_types, min_size=1, max_size=6), st.integers(0, 50),
       st.dictionaries(_text, st.text(max_size=10), max_size=3), st.none() | st.text(max_size=10))
def test_schema_round_trip(types, schema_id, options, comment):
    fields = tuple(DataField(i, f"c{i}", t) for i, t in enumerate(types))
    s = TableSchema(schema_id, fields, ("c0",), ("c0",) if len(types) == 1 else ("c0", "c1"), options, comment, 42)
    raw = s.to_json_bytes()
    back = TableSchema.from_json_bytes(raw, "p")
    assert back.fields == fields
    assert (back.id, back.partition_keys, back.primary_keys, dict(back.options), back.comment, back.time_millis) == (
        schema_id, s.partition_keys, s.primary_keys, options, comment, 42)
    assert json.loads(raw)["highestFieldId"] == len(types) - 1

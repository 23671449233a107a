"""Pure builders of Iceberg metadata for a Paimon table (Iceberg spec v2, as Paimon Java 1.4.2's
``IcebergCommitCallback`` lays it out): the schema with Paimon's field ids, the identity
partition spec (partition field ids from 1000), the name mapping, the Avro schemas of manifests
and manifest lists (Iceberg's field ids), and the table metadata JSON.

No I/O here: :mod:`impl.iceberg.commit` reads the Paimon snapshot and writes the files.
"""

from __future__ import annotations

import datetime
import json
import struct
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from impl.options.iceberg import iceberg_type
from impl.schema.records import TableSchema

FORMAT_VERSION = 2
PARTITION_SPEC_ID = 0
PARTITION_FIELD_ID_START = 1000  # Iceberg's first partition field id (PartitionSpec)
UNPARTITIONED_LAST_ID = 999

_EPOCH_DAY = datetime.date(1970, 1, 1)

# Iceberg's manifest_entry status values
STATUS_EXISTING = 0
STATUS_ADDED = 1
STATUS_DELETED = 2
CONTENT_DATA = 0

# Paimon commit kind -> Iceberg snapshot operation
OPERATIONS = {"APPEND": "append", "COMPACT": "replace", "OVERWRITE": "overwrite"}


def schema_json(schema: TableSchema) -> dict | None:
    """Iceberg's schema of a Paimon schema: same field ids and names, schema id = Paimon's; None
    if a column has no Iceberg type (an older schema: the current one is checked at create/alter)."""
    fields = []
    for f in schema.fields:
        t = iceberg_type(f.type)
        if t is None:
            return None
        fields.append({"id": f.id, "name": f.name, "required": not f.type.nullable, "type": t})
    return {"type": "struct", "schema-id": schema.id, "fields": fields}


def partition_fields(schema: TableSchema) -> list[dict]:
    """The identity partition fields of the spec, in partition-key order."""
    return [{"name": k, "transform": "identity", "source-id": schema.field(k).id,
             "field-id": PARTITION_FIELD_ID_START + i} for i, k in enumerate(schema.partition_keys)]


def name_mapping(schemas: Sequence[TableSchema]) -> str:
    """Iceberg's ``schema.name-mapping.default``: every name a field id had in any schema, so a
    reader resolves columns of Parquet files that carry no field ids (impl's) by name."""
    names: dict[int, list[str]] = {}
    for s in schemas:
        for f in s.fields:
            seen = names.setdefault(f.id, [])
            if f.name not in seen:
                seen.append(f.name)
    return json.dumps([{"field-id": fid, "names": ns} for fid, ns in sorted(names.items())])


_AVRO_PARTITION = {"BOOLEAN": "boolean", "INT": "int", "BIGINT": "long", "VARCHAR": "string", "CHAR": "string",
                   "DATE": {"type": "int", "logicalType": "date"}}


# Iceberg's column-statistics maps of a data file (name, field id, key id, value id, value type):
# impl writes them empty (readers then assume any value may be present), but present: Paimon
# Java copies them when it rewrites a manifest, and fails on a null map
_STATS_MAPS = (("null_value_counts", 110, 121, 122, "long"), ("lower_bounds", 125, 126, 127, "bytes"),
               ("upper_bounds", 128, 129, 130, "bytes"))


def _stats_map(name: str, field_id: int, key_id: int, value_id: int, value: str) -> dict:
    return {"name": name, "field-id": field_id, "default": None, "type": ["null", {
        "type": "array", "logicalType": "map", "items": {"type": "record", "name": f"k{key_id}_v{value_id}", "fields": [
            {"name": "key", "type": "int", "field-id": key_id}, {"name": "value", "type": value, "field-id": value_id}]}}]}


def with_stats_maps(entry: Mapping[str, Any]) -> dict:
    """``entry`` with its data file's statistics maps present (empty where it had none)."""
    data_file = dict(entry["data_file"])
    for name, *_ in _STATS_MAPS:
        if data_file.get(name) is None:
            data_file[name] = []
    return {**entry, "data_file": data_file}


def manifest_entry_avro_schema(schema: TableSchema) -> dict:
    """The Avro schema of a v2 data manifest (manifest_entry with Iceberg's field ids, the
    data file's fields as Paimon Java writes them)."""
    partition = {"type": "record", "name": "r102", "fields": [
        {"name": k, "type": ["null", _AVRO_PARTITION[schema.field(k).type.root]], "default": None,
         "field-id": PARTITION_FIELD_ID_START + i} for i, k in enumerate(schema.partition_keys)]}
    data_file = {"type": "record", "name": "r2", "fields": [
        {"name": "content", "type": "int", "field-id": 134},
        {"name": "file_path", "type": "string", "field-id": 100},
        {"name": "file_format", "type": "string", "field-id": 101},
        {"name": "partition", "type": partition, "field-id": 102},
        {"name": "record_count", "type": "long", "field-id": 103},
        {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
        *(_stats_map(name, fid, kid, vid, value) for name, fid, kid, vid, value in _STATS_MAPS),
        {"name": "referenced_data_file", "type": ["null", "string"], "default": None, "field-id": 143},
        {"name": "content_offset", "type": ["null", "long"], "default": None, "field-id": 144},
        {"name": "content_size_in_bytes", "type": ["null", "long"], "default": None, "field-id": 145},
    ]}
    return {"type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int", "field-id": 0},
        {"name": "snapshot_id", "type": ["null", "long"], "default": None, "field-id": 1},
        {"name": "sequence_number", "type": ["null", "long"], "default": None, "field-id": 3},
        {"name": "file_sequence_number", "type": ["null", "long"], "default": None, "field-id": 4},
        {"name": "data_file", "type": data_file, "field-id": 2},
    ]}


MANIFEST_LIST_AVRO_SCHEMA: dict = {"type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "type": "string", "field-id": 500},
    {"name": "manifest_length", "type": "long", "field-id": 501},
    {"name": "partition_spec_id", "type": "int", "field-id": 502},
    {"name": "content", "type": "int", "field-id": 517},
    {"name": "sequence_number", "type": "long", "field-id": 515},
    {"name": "min_sequence_number", "type": "long", "field-id": 516},
    {"name": "added_snapshot_id", "type": "long", "field-id": 503},
    {"name": "added_files_count", "type": "int", "field-id": 504},
    {"name": "existing_files_count", "type": "int", "field-id": 505},
    {"name": "deleted_files_count", "type": "int", "field-id": 506},
    {"name": "added_rows_count", "type": "long", "field-id": 512},
    {"name": "existing_rows_count", "type": "long", "field-id": 513},
    {"name": "deleted_rows_count", "type": "long", "field-id": 514},
    # one summary per partition field (Java's reader needs them; readers prune manifests by them)
    {"name": "partitions", "type": ["null", {"type": "array", "element-id": 508, "items": {
        "type": "record", "name": "r508", "fields": [
            {"name": "contains_null", "type": "boolean", "field-id": 509},
            {"name": "contains_nan", "type": ["null", "boolean"], "default": None, "field-id": 518},
            {"name": "lower_bound", "type": ["null", "bytes"], "default": None, "field-id": 510},
            {"name": "upper_bound", "type": ["null", "bytes"], "default": None, "field-id": 511}]}}],
     "default": None, "field-id": 507},
]}


@dataclass(frozen=True)
class DataFile:
    """One live Paimon data file as an Iceberg data file."""

    path: str
    partition: Mapping[str, Any]
    record_count: int
    size: int


def exposed_level(primary_keys: Sequence[str], num_levels: int) -> int | None:
    """Which Paimon data files the Iceberg view lists (Java's ``shouldAddFileToIceberg``): all
    of an append table's (None); of a primary-key table only those at the highest level
    ``num_levels - 1``, whose rows are merged (one sorted run per bucket, deletes dropped):
    the view is the table as of its last full compaction, never rows a merge would replace."""
    return num_levels - 1 if primary_keys else None


def manifest_entry(f: DataFile, snapshot_id: int) -> dict:
    """An ADDED entry of Iceberg snapshot ``snapshot_id`` (data and file sequence number = id)."""
    return {"status": STATUS_ADDED, "snapshot_id": snapshot_id, "sequence_number": snapshot_id,
            "file_sequence_number": snapshot_id,
            "data_file": {"content": CONTENT_DATA, "file_path": f.path, "file_format": "PARQUET",
                          "partition": dict(f.partition), "record_count": f.record_count,
                          "file_size_in_bytes": f.size}}


def carried_entry(entry: Mapping[str, Any], removed: bool, snapshot_id: int) -> dict:
    """A live entry of an earlier manifest rewritten into snapshot ``snapshot_id``'s: DELETED
    (with this snapshot's id, as the spec asks) when the file left the table, else EXISTING;
    sequence numbers are kept (the rows' age does not change)."""
    return {**entry, "status": STATUS_DELETED if removed else STATUS_EXISTING,
            "snapshot_id": snapshot_id if removed else entry.get("snapshot_id")}


def aged_entry(entry: Mapping[str, Any], snapshot_id: int) -> dict | None:
    """An entry as a merged manifest of snapshot ``snapshot_id`` keeps it (Java's manifest
    compaction): earlier ADDED ones become EXISTING, earlier DELETED ones are dropped (None)."""
    status = entry.get("status")
    if status == STATUS_EXISTING or entry.get("snapshot_id") == snapshot_id:
        return dict(entry)
    if status == STATUS_ADDED:
        return {**entry, "status": STATUS_EXISTING}
    return None


def is_live(entry: Mapping[str, Any]) -> bool:
    return entry.get("status") != STATUS_DELETED


def _single_value(root: str, v: Any) -> bytes:
    """Iceberg's single-value binary serialization (spec appendix D) of a partition value."""
    if root == "BOOLEAN":
        return b"\x01" if v else b"\x00"
    if root == "INT":
        return struct.pack("<i", v)
    if root == "DATE":
        return struct.pack("<i", (v - _EPOCH_DAY).days)
    if root == "BIGINT":
        return struct.pack("<q", v)
    return str(v).encode("utf-8")  # VARCHAR / CHAR


def _sort_key(root: str, raw: bytes) -> Any:
    """A summary bound (single-value bytes) as a value that orders as the partition values do."""
    if root in ("INT", "DATE"):
        return struct.unpack("<i", raw)[0]
    if root == "BIGINT":
        return struct.unpack("<q", raw)[0]
    return raw  # BOOLEAN (0 < 1), VARCHAR / CHAR (UTF-8 byte order = code point order)


def partition_summaries(schema: TableSchema, partitions: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The manifest list's field summaries of a manifest whose entries have these partition
    values: per partition field, whether one is null and the lower / upper bound of the non-null
    values (str order = UTF-8 byte order, as Iceberg's)."""
    out = []
    for k in schema.partition_keys:
        root = schema.field(k).type.root
        values = [p[k] for p in partitions if p[k] is not None]
        has_null = len(values) < len(partitions)
        lower = _single_value(root, min(values)) if values else None
        upper = _single_value(root, max(values)) if values else None
        out.append({"contains_null": has_null, "contains_nan": False, "lower_bound": lower, "upper_bound": upper})
    return out


def may_hold_partition(schema: TableSchema, summaries: Sequence[Mapping[str, Any]] | None,
                       partition: Mapping[str, Any]) -> bool:
    """Whether a manifest with these partition summaries may hold a file of ``partition``
    (True when the summaries do not say: the manifest is read)."""
    keys = schema.partition_keys
    if not keys:
        return True
    if summaries is None or len(summaries) != len(keys):
        return True
    for k, summary in zip(keys, summaries, strict=True):
        v = partition[k]
        if v is None:
            if not summary.get("contains_null", True):
                return False
            continue
        lower, upper = summary.get("lower_bound"), summary.get("upper_bound")
        if lower is None or upper is None:
            return False  # only nulls in this manifest
        root = schema.field(k).type.root
        key = _sort_key(root, _single_value(root, v))
        if not _sort_key(root, lower) <= key <= _sort_key(root, upper):
            return False
    return True


def manifest_file_record(path: str, length: int, snapshot_id: int, schema: TableSchema,
                         entries: Sequence[Mapping[str, Any]]) -> dict:
    """The manifest list's record of a manifest written for snapshot ``snapshot_id`` holding
    ``entries`` (counts by status, partition summaries over every entry, as Iceberg's writer)."""
    counts = {STATUS_ADDED: [0, 0], STATUS_EXISTING: [0, 0], STATUS_DELETED: [0, 0]}
    for e in entries:
        c = counts[e["status"]]
        c[0] += 1
        c[1] += e["data_file"]["record_count"]
    live_seqs = [e["sequence_number"] for e in entries if is_live(e) and e.get("sequence_number") is not None]
    return {"manifest_path": path, "manifest_length": length, "partition_spec_id": PARTITION_SPEC_ID,
            "content": CONTENT_DATA, "sequence_number": snapshot_id,
            "min_sequence_number": min(live_seqs, default=snapshot_id), "added_snapshot_id": snapshot_id,
            "added_files_count": counts[STATUS_ADDED][0], "existing_files_count": counts[STATUS_EXISTING][0],
            "deleted_files_count": counts[STATUS_DELETED][0], "added_rows_count": counts[STATUS_ADDED][1],
            "existing_rows_count": counts[STATUS_EXISTING][1], "deleted_rows_count": counts[STATUS_DELETED][1],
            "partitions": partition_summaries(schema, [e["data_file"]["partition"] for e in entries])}


def live_totals(manifests: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(data files, records) of a snapshot from its manifest list's counts (added + existing)."""
    files = sum(int(m.get("added_files_count") or 0) + int(m.get("existing_files_count") or 0) for m in manifests)
    rows = sum(int(m.get("added_rows_count") or 0) + int(m.get("existing_rows_count") or 0) for m in manifests)
    return files, rows


def snapshot_json(snapshot_id: int, parent_id: int | None, time_millis: int, operation: str, schema_id: int,
                  manifest_list: str, totals: Mapping[str, int]) -> dict:
    """Iceberg's snapshot of Paimon snapshot ``snapshot_id`` (same id; sequence number = id);
    ``totals``: ``total-records``, ``total-data-files`` and, when known, ``total-files-size``."""
    summary = {"operation": operation, **{k: str(v) for k, v in totals.items()},
               "total-delete-files": "0", "total-position-deletes": "0", "total-equality-deletes": "0"}
    out: dict = {"snapshot-id": snapshot_id, "sequence-number": snapshot_id, "timestamp-ms": time_millis,
                 "summary": summary, "manifest-list": manifest_list, "schema-id": schema_id}
    if parent_id is not None:
        out["parent-snapshot-id"] = parent_id
    return out


def table_metadata(*, table_uuid: str, location: str, schema: TableSchema, older_schemas: Sequence[TableSchema],
                   name_map: str, snapshots: Sequence[dict], current: dict) -> dict:
    """The ``vN.metadata.json`` document: ``snapshots`` are the earlier Iceberg snapshots still
    mirrored (their Paimon snapshots exist), ``current`` the one of the newest Paimon snapshot
    (under ``schema``); an earlier snapshot whose schema has no Iceberg form is left out."""
    schemas = {schema.id: schema_json(schema)}
    for s in older_schemas:
        if s.id not in schemas:
            schemas[s.id] = schema_json(s)
    known = {sid: js for sid, js in schemas.items() if js is not None}
    if schema.id not in known:
        raise ValueError(f"schema {schema.id} has a column with no Iceberg type")  # checked before: a bug
    all_snapshots = [*(s for s in snapshots if s.get("schema-id") in known), current]
    spec = partition_fields(schema)
    return {
        "format-version": FORMAT_VERSION,
        "table-uuid": table_uuid,
        "location": location,
        "last-sequence-number": current["sequence-number"],
        "last-updated-ms": current["timestamp-ms"],
        "last-column-id": max((f["id"] for js in known.values() for f in js["fields"]), default=0),
        "current-schema-id": schema.id,
        "schemas": [known[sid] for sid in sorted(known)],
        "default-spec-id": PARTITION_SPEC_ID,
        "partition-specs": [{"spec-id": PARTITION_SPEC_ID, "fields": spec}],
        "last-partition-id": PARTITION_FIELD_ID_START + len(spec) - 1 if spec else UNPARTITIONED_LAST_ID,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {"schema.name-mapping.default": name_map},
        "current-snapshot-id": current["snapshot-id"],
        "refs": {"main": {"snapshot-id": current["snapshot-id"], "type": "branch"}},
        "snapshots": all_snapshots,
        "snapshot-log": [{"snapshot-id": s["snapshot-id"], "timestamp-ms": s["timestamp-ms"]} for s in all_snapshots],
        "metadata-log": [],
    }

"""Snapshot JSON (version 3) and schema JSON (version 3), as Apache Paimon writes them.

Unknown keys are ignored on read (newer writers add fields); keys that are null are omitted
on write. A file that is not JSON, is not an object, has a version other than 3, or misses a
required key or gives it the wrong type raises :class:`CorruptMetadataError` naming the file.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from impl.errors import CorruptMetadataError, UnsupportedTypeError, UnsupportedVersionError
from impl.format.types import DataField

SNAPSHOT_VERSION = 3
SCHEMA_VERSION = 3


class CommitKind(str, enum.Enum):
    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


# ---------------------------------------------------------------------------- helpers

def _load_object(data: bytes, path: str) -> dict:
    if not data:
        raise CorruptMetadataError(path, "file is empty")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CorruptMetadataError(path, f"not valid JSON ({e})") from e
    if not isinstance(obj, dict):
        raise CorruptMetadataError(path, f"expected a JSON object, found {type(obj).__name__}")
    return obj


def _check_version(obj: dict, path: str, expected: int) -> None:
    if "version" not in obj:
        raise CorruptMetadataError(path, "missing required key 'version'")
    if obj["version"] != expected:
        raise UnsupportedVersionError(path, f"version {obj['version']!r} is not supported (expected {expected})")


def _req(obj: dict, key: str, kind: type, path: str):
    if key not in obj or obj[key] is None:
        raise CorruptMetadataError(path, f"missing required key {key!r}")
    return _typed(obj[key], key, kind, path)


def _opt(obj: dict, key: str, kind: type, path: str):
    v = obj.get(key)
    return None if v is None else _typed(v, key, kind, path)


def _typed(v, key: str, kind: type, path: str):
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise CorruptMetadataError(path, f"key {key!r} must be an integer, found {v!r}")
    elif not isinstance(v, kind):
        raise CorruptMetadataError(path, f"key {key!r} must be {kind.__name__}, found {type(v).__name__}")
    return v


def _key_list(obj: dict, key: str, names: list[str], path: str) -> tuple[str, ...]:
    keys = _opt(obj, key, list, path) or []
    for k in keys:
        if not isinstance(k, str) or k not in names:
            raise CorruptMetadataError(path, f"{key} entry {k!r} does not name a field of {names}")
    return tuple(keys)


def _dump(obj: dict) -> bytes:
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------------------- snapshot

@dataclass(frozen=True)
class Snapshot:
    """One published version of a table (``snapshot/snapshot-<id>``)."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int | None = None
    delta_record_count: int | None = None
    changelog_manifest_list: str | None = None
    index_manifest: str | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: Mapping[str, str] | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list_size: int | None = None
    next_row_id: int | None = None
    version: int = SNAPSHOT_VERSION

    def to_json_bytes(self) -> bytes:
        pairs: list[tuple[str, Any]] = [
            ("version", self.version),
            ("id", self.id),
            ("schemaId", self.schema_id),
            ("baseManifestList", self.base_manifest_list),
            ("baseManifestListSize", self.base_manifest_list_size),
            ("deltaManifestList", self.delta_manifest_list),
            ("deltaManifestListSize", self.delta_manifest_list_size),
            ("changelogManifestList", self.changelog_manifest_list),
            ("changelogManifestListSize", self.changelog_manifest_list_size),
            ("indexManifest", self.index_manifest),
            ("commitUser", self.commit_user),
            ("commitIdentifier", self.commit_identifier),
            ("commitKind", self.commit_kind.value),
            ("timeMillis", self.time_millis),
            ("totalRecordCount", self.total_record_count),
            ("deltaRecordCount", self.delta_record_count),
            ("changelogRecordCount", self.changelog_record_count),
            ("watermark", self.watermark),
            ("statistics", self.statistics),
            ("properties", dict(self.properties) if self.properties else None),
            ("nextRowId", self.next_row_id),
        ]
        return _dump({k: v for k, v in pairs if v is not None})

    @staticmethod
    def from_json_bytes(data: bytes, path: str) -> "Snapshot":
        o = _load_object(data, path)
        _check_version(o, path, SNAPSHOT_VERSION)
        kind_text = _req(o, "commitKind", str, path)
        try:
            kind = CommitKind(kind_text)
        except ValueError:
            raise CorruptMetadataError(path, f"unknown commitKind {kind_text!r}") from None
        props = o.get("properties")
        if props is not None and not isinstance(props, dict):
            raise CorruptMetadataError(path, "key 'properties' must be an object")
        return Snapshot(
            id=_req(o, "id", int, path),
            schema_id=_req(o, "schemaId", int, path),
            base_manifest_list=_req(o, "baseManifestList", str, path),
            delta_manifest_list=_req(o, "deltaManifestList", str, path),
            commit_user=_req(o, "commitUser", str, path),
            commit_identifier=_req(o, "commitIdentifier", int, path),
            commit_kind=kind,
            time_millis=_req(o, "timeMillis", int, path),
            total_record_count=_opt(o, "totalRecordCount", int, path),
            delta_record_count=_opt(o, "deltaRecordCount", int, path),
            changelog_manifest_list=_opt(o, "changelogManifestList", str, path),
            index_manifest=_opt(o, "indexManifest", str, path),
            changelog_record_count=_opt(o, "changelogRecordCount", int, path),
            watermark=_opt(o, "watermark", int, path),
            statistics=_opt(o, "statistics", str, path),
            properties=props,
            base_manifest_list_size=_opt(o, "baseManifestListSize", int, path),
            delta_manifest_list_size=_opt(o, "deltaManifestListSize", int, path),
            changelog_manifest_list_size=_opt(o, "changelogManifestListSize", int, path),
            next_row_id=_opt(o, "nextRowId", int, path),
        )


# ---------------------------------------------------------------------------- schema

@dataclass(frozen=True)
class TableSchema:
    """One schema version of a table (``schema/schema-<id>``)."""

    id: int
    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    highest_field_id: int | None = None
    version: int = SCHEMA_VERSION

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """Primary key fields without the partition fields (what _KEY_ columns and min/max keys hold)."""
        tk = tuple(k for k in self.primary_keys if k not in self.partition_keys)
        return tk if tk else self.primary_keys

    def to_json_bytes(self) -> bytes:
        highest = self.highest_field_id if self.highest_field_id is not None else max((f.id for f in self.fields), default=-1)
        return _dump({
            "version": self.version,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": highest,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
            "comment": self.comment,
            "timeMillis": self.time_millis,
        })

    @staticmethod
    def from_json_bytes(data: bytes, path: str) -> "TableSchema":
        o = _load_object(data, path)
        _check_version(o, path, SCHEMA_VERSION)
        raw_fields = _req(o, "fields", list, path)
        try:
            fields = tuple(DataField.from_json(f) for f in raw_fields)
        except UnsupportedTypeError:
            raise  # a valid schema of a type this library does not represent: refused, not corrupt
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptMetadataError(path, f"bad field definition ({type(e).__name__}: {e})") from e
        options = _opt(o, "options", dict, path) or {}
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise CorruptMetadataError(path, f"duplicate field names in {names}")
        ids = [f.id for f in fields]
        if len(set(ids)) != len(ids):
            raise CorruptMetadataError(path, f"duplicate field ids in {ids}")
        partition_keys = _key_list(o, "partitionKeys", names, path)
        primary_keys = _key_list(o, "primaryKeys", names, path)
        bad_options = [k for k, v in options.items() if v is None or isinstance(v, (dict, list))]
        if bad_options:
            raise CorruptMetadataError(path, f"options {bad_options} must have string values")
        return TableSchema(
            id=_req(o, "id", int, path),
            fields=fields,
            partition_keys=partition_keys,
            primary_keys=primary_keys,
            options={str(k): str(v) for k, v in options.items()},
            comment=o.get("comment"),
            time_millis=_opt(o, "timeMillis", int, path) or 0,
            highest_field_id=_opt(o, "highestFieldId", int, path),
        )

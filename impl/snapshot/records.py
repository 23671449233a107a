"""The snapshot record (``snapshot/snapshot-<id>``, JSON version 3), as Apache Paimon writes it.

Unknown keys are ignored on read (newer writers add fields); keys that are null are omitted
on write. A file that is not JSON, is not an object, has a version other than 3, or misses a
required key or gives it the wrong type raises :class:`CorruptMetadataError` naming the file.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping

from impl.errors import CorruptMetadataError
from impl.format.json_fields import check_version, dump, load_object, optional, required

SNAPSHOT_VERSION = 3


class CommitKind(str, enum.Enum):
    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


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
        return dump({k: v for k, v in pairs if v is not None})

    @staticmethod
    def from_json_bytes(data: bytes, path: str) -> "Snapshot":
        o = load_object(data, path)
        check_version(o, path, SNAPSHOT_VERSION)
        kind_text = required(o, "commitKind", str, path)
        try:
            kind = CommitKind(kind_text)
        except ValueError:
            raise CorruptMetadataError(path, f"unknown commitKind {kind_text!r}") from None
        props = o.get("properties")
        if props is not None and not isinstance(props, dict):
            raise CorruptMetadataError(path, "key 'properties' must be an object")
        return Snapshot(
            id=required(o, "id", int, path),
            schema_id=required(o, "schemaId", int, path),
            base_manifest_list=required(o, "baseManifestList", str, path),
            delta_manifest_list=required(o, "deltaManifestList", str, path),
            commit_user=required(o, "commitUser", str, path),
            commit_identifier=required(o, "commitIdentifier", int, path),
            commit_kind=kind,
            time_millis=required(o, "timeMillis", int, path),
            total_record_count=optional(o, "totalRecordCount", int, path),
            delta_record_count=optional(o, "deltaRecordCount", int, path),
            changelog_manifest_list=optional(o, "changelogManifestList", str, path),
            index_manifest=optional(o, "indexManifest", str, path),
            changelog_record_count=optional(o, "changelogRecordCount", int, path),
            watermark=optional(o, "watermark", int, path),
            statistics=optional(o, "statistics", str, path),
            properties=props,
            base_manifest_list_size=optional(o, "baseManifestListSize", int, path),
            delta_manifest_list_size=optional(o, "deltaManifestListSize", int, path),
            changelog_manifest_list_size=optional(o, "changelogManifestListSize", int, path),
            next_row_id=optional(o, "nextRowId", int, path),
        )

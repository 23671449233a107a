"""The schema record (``schema/schema-<id>``, JSON version 3), as Apache Paimon writes it.

Unknown keys are ignored on read (newer writers add fields). A file that is not JSON, is not
an object, has a version other than 3, or misses a required key or gives it the wrong type
raises :class:`CorruptMetadataError` naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from impl.data.types import DataField
from impl.errors import CorruptMetadataError, UnsupportedTypeError
from impl.format.json_fields import check_version, dump, key_list, load_object, optional, required

SCHEMA_VERSION = 3


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
        return dump({
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
        o = load_object(data, path)
        check_version(o, path, SCHEMA_VERSION)
        raw_fields = required(o, "fields", list, path)
        try:
            fields = tuple(DataField.from_json(f) for f in raw_fields)
        except UnsupportedTypeError:
            raise  # a valid schema of a type this library does not represent: refused, not corrupt
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptMetadataError(path, f"bad field definition ({type(e).__name__}: {e})") from e
        options = optional(o, "options", dict, path) or {}
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise CorruptMetadataError(path, f"duplicate field names in {names}")
        ids = [f.id for f in fields]
        if len(set(ids)) != len(ids):
            raise CorruptMetadataError(path, f"duplicate field ids in {ids}")
        partition_keys = key_list(o, "partitionKeys", names, path)
        primary_keys = key_list(o, "primaryKeys", names, path)
        bad_options = [k for k, v in options.items() if v is None or isinstance(v, (dict, list))]
        if bad_options:
            raise CorruptMetadataError(path, f"options {bad_options} must have string values")
        return TableSchema(
            id=required(o, "id", int, path),
            fields=fields,
            partition_keys=partition_keys,
            primary_keys=primary_keys,
            options={str(k): str(v) for k, v in options.items()},
            comment=o.get("comment"),
            time_millis=optional(o, "timeMillis", int, path) or 0,
            highest_field_id=optional(o, "highestFieldId", int, path),
        )

"""Paimon's REST catalog protocol, shared by the client and the server: resource paths, the
JSON bodies (field names as Paimon's OpenAPI description ``rest-catalog-open-api.yaml`` spells
them), the ``ErrorResponse`` codes, and the codecs between those bodies and impl's records.

Everything here is pure: no I/O.
"""

from __future__ import annotations

import enum
import json
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from impl.data.types import DataField, DataType, parse_type_json
from impl.schema.changes import (
    AddColumn,
    DropColumn,
    Move,
    MoveType,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
    to_data_type,
)
from impl.schema.records import TableSchema

V1 = "v1"
DEFAULT_PREFIX = "paimon"
# catalog options, as Paimon spells them
URI = "uri"
TOKEN = "token"
TOKEN_PROVIDER = "token.provider"
BEAR_TOKEN_PROVIDER = "bear"
WAREHOUSE = "warehouse"
PREFIX = "prefix"
DATA_TOKEN_ENABLED = "data-token.enabled"
METASTORE = "metastore"
REST_METASTORE = "rest"
# query parameters of paged lists
MAX_RESULTS = "maxResults"
PAGE_TOKEN = "pageToken"
AUTHORIZATION = "Authorization"
BEARER = "Bearer "
# ``t$branch_b``: a branch of table t, as Paimon's Identifier writes it in a URL
BRANCH_SEPARATOR = "$branch_"
# a database or table name becomes one path segment of the warehouse: file systems (ext4, xfs,
# S3 keys' segments as s3fs maps them) take at most 255 bytes there
MAX_NAME_BYTES = 255
# nesting of a request body: Paimon's deepest (a ROW type in a schema) is a few levels per nested
# type; json.loads recurses per level and would raise RecursionError near 1000
MAX_JSON_DEPTH = 64


class ResourceType(enum.Enum):
    """``ErrorResponse.resourceType``: what the error is about."""

    DATABASE = "DATABASE"
    TABLE = "TABLE"
    COLUMN = "COLUMN"
    SNAPSHOT = "SNAPSHOT"


class BadRequest(ValueError):
    """A request body or parameter that does not follow the protocol (answered 400)."""


@dataclass(frozen=True)
class ErrorBody:
    """An ``ErrorResponse``: HTTP code, message, and the resource it is about."""

    code: int
    message: str
    resource_type: ResourceType | None = None
    resource_name: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, "code": self.code,
                "resourceType": self.resource_type.value if self.resource_type else None,
                "resourceName": self.resource_name}

    @staticmethod
    def from_json(code: int, body: bytes) -> "ErrorBody":
        """The error a server answered with ``code`` and ``body``; a body that is no
        ErrorResponse still gives its code and (the start of) its text."""
        try:
            o = json.loads(body)
        except ValueError:
            o = None
        if not isinstance(o, dict):
            return ErrorBody(code, body[:200].decode("utf-8", "replace"))
        kind = o.get("resourceType")
        try:
            resource_type = ResourceType(kind) if kind else None
        except ValueError:
            resource_type = None
        name = o.get("resourceName")
        return ErrorBody(code, str(o.get("message") or ""), resource_type, name if isinstance(name, str) else None)


# ------------------------------------------------------------------ paths

def encode(name: str) -> str:
    """One path segment, percent-encoded as Paimon's RESTUtil.encodeString does."""
    return urllib.parse.quote(name, safe="")


@dataclass(frozen=True)
class ResourcePaths:
    """The URL paths of one catalog prefix (``/v1/<prefix>/...``)."""

    prefix: str = DEFAULT_PREFIX

    @property
    def base(self) -> str:
        return f"/{V1}/{encode(self.prefix)}" if self.prefix else f"/{V1}"

    @staticmethod
    def config() -> str:
        return f"/{V1}/config"

    def databases(self) -> str:
        return f"{self.base}/databases"

    def database(self, name: str) -> str:
        return f"{self.databases()}/{encode(name)}"

    def tables(self, database: str) -> str:
        return f"{self.database(database)}/tables"

    def table(self, database: str, table: str) -> str:
        return f"{self.tables(database)}/{encode(table)}"

    def rename_table(self) -> str:
        return f"{self.base}/tables/rename"

    def commit(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/commit"

    def snapshot(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/snapshot"

    def token(self, database: str, table: str) -> str:
        return f"{self.table(database, table)}/token"


def split_path(path: str, prefix: str) -> list[str] | None:
    """The decoded segments of ``path`` after ``/v1/<prefix>``, or None when ``path`` is not
    under it."""
    head = ResourcePaths(prefix).base + "/"
    if not path.startswith(head):
        return None
    return [urllib.parse.unquote(s) for s in path[len(head):].split("/")]


def branch_table_name(table: str, branch: str) -> str:
    """The object name of ``table``'s ``branch`` (``t`` for main, ``t$branch_b`` otherwise)."""
    return table if branch == "main" else f"{table}{BRANCH_SEPARATOR}{branch}"


# ------------------------------------------------------------------ paging

def page(names: Sequence[str], max_results: str | None, page_token: str | None) -> tuple[list[str], str | None]:
    """One page of sorted ``names`` after ``page_token`` (a name: the last one of the page
    before), at most ``max_results`` long (all when absent); the next page's token, or None
    after the last page. BadRequest for a max_results that is no positive integer."""
    ordered = sorted(names)
    if page_token:
        ordered = [n for n in ordered if n > page_token]
    if max_results is None or max_results == "":
        return ordered, None
    if not max_results.isascii() or not max_results.isdigit() or int(max_results) <= 0:
        raise BadRequest(f"query parameter {MAX_RESULTS}={max_results!r} is not a positive integer")
    limit = int(max_results)
    chunk = ordered[:limit]
    return chunk, (chunk[-1] if len(ordered) > limit else None)


# ------------------------------------------------------------------ bodies

def require(o: Any, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """``o[key]`` of type ``kind``; BadRequest naming ``what`` and the key otherwise."""
    if not isinstance(o, dict):
        raise BadRequest(f"{what} must be a JSON object, got {type(o).__name__}")
    if key not in o or o[key] is None:
        raise BadRequest(f"{what} misses {key!r}")
    value = o[key]
    if not isinstance(value, kind) or isinstance(value, bool) and bool not in _tuple(kind):
        raise BadRequest(f"{what}: {key!r} must be {_kind_name(kind)}, got {type(value).__name__}")
    return value


def optional(o: dict, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    return None if o.get(key) is None else require(o, key, kind, what)


def _tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _tuple(kind))


def string_map(o: Any, what: str) -> dict[str, str]:
    """A JSON object of strings (options, a token); BadRequest otherwise."""
    if o is None:
        return {}
    if not isinstance(o, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in o.items()):
        raise BadRequest(f"{what} must be an object of strings")
    return dict(o)


def check_name_length(name: str, what: str) -> str:
    """``name`` when it fits one path segment (MAX_NAME_BYTES of UTF-8); BadRequest otherwise."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        raise BadRequest(f"{what}: the name {name[:40]!r}... is {size} bytes of UTF-8, over {MAX_NAME_BYTES}")
    return name


# a JSON string (escapes included): what is inside one holds no structure
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPENERS = np.frombuffer(b"[{", np.uint8)


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``data`` (0 for a scalar), found
    without parsing (strings removed, then a running sum over the brackets)."""
    structure = np.frombuffer(_JSON_STRING.sub(b"", data), np.uint8)
    brackets = structure[(structure == 91) | (structure == 93) | (structure == 123) | (structure == 125)]
    if not len(brackets):
        return 0
    steps = np.where(np.isin(brackets, _OPENERS), 1, -1).astype(np.int32)
    return int(np.cumsum(steps, dtype=np.int32).max())


def parse_body(data: bytes, what: str, max_depth: int = MAX_JSON_DEPTH) -> dict[str, Any]:
    """A request body: one JSON object nested at most ``max_depth`` deep; BadRequest otherwise."""
    depth = json_depth(data)
    if depth > max_depth:
        raise BadRequest(f"{what}: body nests {depth} levels deep, over the limit of {max_depth}")
    try:
        o = json.loads(data or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise BadRequest(f"{what}: body is not JSON ({e})") from None
    if not isinstance(o, dict):
        raise BadRequest(f"{what}: body must be a JSON object")
    return o


def identifier_json(database: str, table: str) -> dict[str, str]:
    return {"database": database, "object": table}


def parse_identifier_json(o: Any, what: str) -> tuple[str, str]:
    return require(o, "database", str, what), require(o, "object", str, what)


# ------------------------------------------------------------------ schemas

def schema_json(schema: TableSchema) -> dict[str, Any]:
    """A ``Schema`` body: fields, keys, options, comment (no id: ``schemaId`` travels beside)."""
    return {"fields": [f.to_json() for f in schema.fields], "partitionKeys": list(schema.partition_keys),
            "primaryKeys": list(schema.primary_keys), "options": dict(schema.options), "comment": schema.comment}


@dataclass(frozen=True)
class SchemaBody:
    """A ``Schema`` request body, parsed."""

    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: Mapping[str, str]
    comment: str | None


def parse_schema_json(o: Any, what: str = "schema") -> SchemaBody:
    raw_fields = require(o, "fields", list, what)
    fields = []
    for i, f in enumerate(raw_fields):
        name = require(f, "name", str, f"{what} field {i}")
        field_id = require(f, "id", int, f"{what} field {name!r}")
        if "type" not in f:
            raise BadRequest(f"{what} field {name!r} misses 'type'")
        description = optional(f, "description", str, f"{what} field {name!r}")
        fields.append(DataField(field_id, name, data_type_of(f["type"], f"{what} field {name!r}"), description))
    keys = {}
    for key in ("partitionKeys", "primaryKeys"):
        values = optional(o, key, list, what) or []
        if not all(isinstance(v, str) for v in values):
            raise BadRequest(f"{what}: {key!r} must be a list of column names")
        keys[key] = tuple(values)
    return SchemaBody(tuple(fields), keys["partitionKeys"], keys["primaryKeys"],
                      string_map(o.get("options"), f"{what} options"), optional(o, "comment", str, what))


def data_type_of(value: Any, what: str) -> DataType:
    try:
        return parse_type_json(value)
    except Exception as e:  # noqa: BLE001 - any parse failure of client input is a bad request
        raise BadRequest(f"{what}: type {value!r} is not a Paimon type ({e})") from None


# ------------------------------------------------------------------ schema changes

def _move_json(move: Move | None) -> dict[str, Any] | None:
    if move is None:
        return None
    return {"fieldName": move.field_name, "referenceFieldName": move.reference_field_name, "type": move.type.value}


def _type_json(t: Any, column: str) -> Any:
    return to_data_type(t, column).to_json()


def change_json(change: SchemaChange) -> dict[str, Any]:
    """A ``SchemaChange`` body (its ``action`` and fields, as Paimon's JSON names them)."""
    c: Any = change
    if isinstance(change, SetOption):
        return {"action": "setOption", "key": c.key, "value": str(c.value)}
    if isinstance(change, RemoveOption):
        return {"action": "removeOption", "key": c.key}
    if isinstance(change, UpdateComment):
        return {"action": "updateComment", "comment": c.comment}
    if isinstance(change, AddColumn):
        return {"action": "addColumn", "fieldNames": list(c.field_names),
                "dataType": _type_json(c.data_type, ".".join(c.field_names)), "comment": c.comment,
                "move": _move_json(c.move)}
    if isinstance(change, RenameColumn):
        return {"action": "renameColumn", "fieldNames": list(c.field_names), "newName": c.new_name}
    if isinstance(change, DropColumn):
        return {"action": "dropColumn", "fieldNames": list(c.field_names)}
    if isinstance(change, UpdateColumnType):
        return {"action": "updateColumnType", "fieldNames": list(c.field_names),
                "newDataType": _type_json(c.new_data_type, ".".join(c.field_names)),
                "keepNullability": c.keep_nullability}
    if isinstance(change, UpdateColumnNullability):
        return {"action": "updateColumnNullability", "fieldNames": list(c.field_names),
                "newNullability": c.new_nullability}
    if isinstance(change, UpdateColumnComment):
        return {"action": "updateColumnComment", "fieldNames": list(c.field_names), "newComment": c.comment}
    if isinstance(change, UpdateColumnPosition):
        return {"action": "updateColumnPosition", "move": _move_json(c.move)}
    raise BadRequest(f"schema change {change!r} has no REST form")


def _names(o: dict, what: str) -> tuple[str, ...]:
    names = require(o, "fieldNames", list, what)
    if not names or not all(isinstance(n, str) for n in names):
        raise BadRequest(f"{what}: 'fieldNames' must be a non-empty list of names")
    return tuple(names)


def _parse_move(o: Any, what: str) -> Move | None:
    if o is None:
        return None
    kind = require(o, "type", str, what)
    try:
        move_type = MoveType(kind)
    except ValueError:
        raise BadRequest(f"{what}: move type {kind!r} is not one of {[m.value for m in MoveType]}") from None
    return Move(require(o, "fieldName", str, what), optional(o, "referenceFieldName", str, what), move_type)


def parse_change_json(o: Any, what: str = "schema change") -> SchemaChange:
    """The SchemaChange a body describes; BadRequest for an unknown action or a malformed one."""
    action = require(o, "action", str, what)
    what = f"{what} {action!r}"
    if action == "setOption":
        return SetOption(require(o, "key", str, what), require(o, "value", str, what))
    if action == "removeOption":
        return RemoveOption(require(o, "key", str, what))
    if action == "updateComment":
        return UpdateComment(optional(o, "comment", str, what))
    if action == "addColumn":
        return AddColumn(_names(o, what), data_type_of(o.get("dataType"), what), optional(o, "comment", str, what),
                         _parse_move(o.get("move"), what))
    if action == "renameColumn":
        return RenameColumn(_names(o, what), require(o, "newName", str, what))
    if action == "dropColumn":
        return DropColumn(_names(o, what))
    if action == "updateColumnType":
        keep = optional(o, "keepNullability", bool, what)
        return UpdateColumnType(_names(o, what), data_type_of(o.get("newDataType"), what), bool(keep))
    if action == "updateColumnNullability":
        return UpdateColumnNullability(_names(o, what), require(o, "newNullability", bool, what))
    if action == "updateColumnComment":
        return UpdateColumnComment(_names(o, what), optional(o, "newComment", str, what))
    if action == "updateColumnPosition":
        move = _parse_move(require(o, "move", dict, what), what)
        assert move is not None
        return UpdateColumnPosition(move)
    raise BadRequest(f"{what}: unknown action")

"""JSON field access for Paimon's metadata files (snapshot, schema, tag JSON): typed reads that
raise :class:`CorruptMetadataError` naming the file, and the compact writer Paimon's files use."""

from __future__ import annotations

import json

from impl.errors import CorruptMetadataError, UnsupportedVersionError


def load_object(data: bytes, path: str) -> dict:
    if not data:
        raise CorruptMetadataError(path, "file is empty")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CorruptMetadataError(path, f"not valid JSON ({e})") from e
    if not isinstance(obj, dict):
        raise CorruptMetadataError(path, f"expected a JSON object, found {type(obj).__name__}")
    return obj


def check_version(obj: dict, path: str, expected: int) -> None:
    if "version" not in obj:
        raise CorruptMetadataError(path, "missing required key 'version'")
    if obj["version"] != expected:
        raise UnsupportedVersionError(path, f"version {obj['version']!r} is not supported (expected {expected})")


def required(obj: dict, key: str, kind: type, path: str):
    if key not in obj or obj[key] is None:
        raise CorruptMetadataError(path, f"missing required key {key!r}")
    return _typed(obj[key], key, kind, path)


def optional(obj: dict, key: str, kind: type, path: str):
    v = obj.get(key)
    return None if v is None else _typed(v, key, kind, path)


def _typed(v, key: str, kind: type, path: str):
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise CorruptMetadataError(path, f"key {key!r} must be an integer, found {v!r}")
    elif not isinstance(v, kind):
        raise CorruptMetadataError(path, f"key {key!r} must be {kind.__name__}, found {type(v).__name__}")
    return v


def key_list(obj: dict, key: str, names: list[str], path: str) -> tuple[str, ...]:
    keys = optional(obj, key, list, path) or []
    for k in keys:
        if not isinstance(k, str) or k not in names:
            raise CorruptMetadataError(path, f"{key} entry {k!r} does not name a field of {names}")
    return tuple(keys)


def dump(obj: dict) -> bytes:
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")

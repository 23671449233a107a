"""Schema evolution rules that readers and committers share: safe casts, mapping a data file's
columns to the current schema by field id, and the check a commit prepared under an older
schema must pass.

Every data file records the id of the schema it was written under (``_SCHEMA_ID``). Columns
are matched by field id, never by name: a renamed column keeps its id (its data is found
under the old name), a dropped column's id is gone from the current schema (its data is not
read), an added column has an id the old schema lacks (read as nulls), and a column dropped
then re-added under the same name has a new id (old files read null for it, never the
dropped data). Types widened since are cast on read (only :func:`is_safe_cast` widenings
are allowed by ``alter_table``).

All functions here are pure.
"""

from __future__ import annotations

from typing import Mapping

from impl.data.types import DataType
from impl.schema.records import TableSchema

KEY_PREFIX = "_KEY_"

_INT_RANK = {"TINYINT": 1, "SMALLINT": 2, "INT": 3, "BIGINT": 4}
# decimal digits an integer type needs (the integer part of a DECIMAL it widens to)
_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
# integer types every value of which a float type holds exactly
_EXACT_IN = {"FLOAT": {"TINYINT", "SMALLINT"}, "DOUBLE": {"TINYINT", "SMALLINT", "INT"}}
_LENGTHED = {"CHAR": "VARCHAR", "BINARY": "VARBINARY"}
_PRECISION_ONLY = ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME")


def is_safe_cast(source: DataType, target: DataType) -> bool:
    """True when every value of ``source`` is exactly a value of ``target`` (nullability aside).

    The widenings Java's implicit casts allow that lose nothing: TINYINT -> SMALLINT -> INT ->
    BIGINT; small integers to FLOAT / DOUBLE where exact; FLOAT -> DOUBLE; integers to a
    DECIMAL with room for their digits; DECIMAL(p, s) -> DECIMAL(p', s) with p' >= p;
    CHAR / VARCHAR / BINARY / VARBINARY length growth (CHAR -> VARCHAR, BINARY -> VARBINARY);
    TIMESTAMP / TIME precision growth. Nested types only to themselves.
    """
    s, t = source.root, target.root
    if s == t:
        if s in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            return (target.length or 0) >= (source.length or 0)
        if s == "DECIMAL":
            return target.scale == source.scale and (target.precision or 0) >= (source.precision or 0)
        if s in _PRECISION_ONLY:
            return (target.precision or 0) >= (source.precision or 0)
        if s in ("ARRAY", "MAP", "ROW"):
            return source.copy(True).type_string() == target.copy(True).type_string()
        return True
    if s in _INT_RANK and t in _INT_RANK:
        return _INT_RANK[t] > _INT_RANK[s]
    if t in _EXACT_IN:
        return s in _EXACT_IN[t] or (s, t) == ("FLOAT", "DOUBLE")
    if s in _INT_DIGITS and t == "DECIMAL":
        return (target.precision or 0) - (target.scale or 0) >= _INT_DIGITS[s]
    if _LENGTHED.get(s) == t:
        return (target.length or 0) >= (source.length or 0)
    return False


def column_sources(file_schema: TableSchema, table_schema: TableSchema) -> dict[str, str | None]:
    """For each user column of ``table_schema``: its name in a file written under
    ``file_schema`` (matched by field id), or None when that file has no such field."""
    by_id = {f.id: f.name for f in file_schema.fields}
    return {f.name: by_id.get(f.id) for f in table_schema.fields}


def file_column(name: str, sources: Mapping[str, str | None]) -> str | None:
    """The physical column of an old file holding current column ``name`` (a user column, a
    ``_KEY_<k>`` column of a primary-key file, or a system column, which never changes)."""
    if name in sources:
        return sources[name]
    if name.startswith(KEY_PREFIX) and name[len(KEY_PREFIX):] in sources:
        src = sources[name[len(KEY_PREFIX):]]
        return None if src is None else KEY_PREFIX + src
    return name


def plan_columns(wanted, present, sources: Mapping[str, str | None] | None) -> list[tuple[str, str]]:
    """(current name, physical name) of each ``wanted`` column a file with columns ``present``
    holds; ``sources`` from :func:`column_sources`, or None for a file of the current schema."""
    out = []
    for name in wanted:
        phys = name if sources is None else file_column(name, sources)
        if phys is not None and phys in present:
            out.append((name, phys))
    return out


# Options that decide where rows go or how a bucket's files combine: a commit prepared under
# one value must not be published under another (its files were laid out for the old value).
LAYOUT_OPTIONS = ("bucket", "merge-engine", "deletion-vectors.enabled")
# Options naming columns that decide layout or merge order; compared by field id, so a rename
# (which rewrites these options) is not a change.
LAYOUT_COLUMN_OPTIONS = ("bucket-key", "sequence.field", "rowkind.field")


def _ids(schema: TableSchema, names) -> tuple:
    by_name = {f.name: f.id for f in schema.fields}
    return tuple(by_name.get(n, n) for n in names)


def _option_columns(schema: TableSchema, key: str) -> tuple:
    raw = schema.options.get(key)
    if raw is None:
        return ()
    return _ids(schema, [c.strip() for c in raw.split(",") if c.strip()])


def commit_schema_problem(prepared: TableSchema, latest: TableSchema) -> str | None:
    """Why files written under ``prepared`` must not be published under ``latest``, or None.

    The rule (mirrored by ``model.schema.commit_schema_problem``): a commit prepared under an
    older schema is published (its snapshot takes the latest schema id; its files keep their
    own) when the schemas between changed nothing its files depend on:

    - the partition keys and the primary keys are the same fields (by id; renames are fine);
    - the layout options (``bucket``, ``merge-engine``, ``deletion-vectors.enabled``) have the
      same values, and ``bucket-key`` / ``sequence.field`` / ``rowkind.field`` name the same fields;
    - every field of ``prepared`` still in ``latest`` has a type its values read as
      (:func:`is_safe_cast`) and is not NOT NULL where it was nullable;
    - every field ``latest`` added is nullable (the files read null for it).

    Dropped columns and comment or other option changes do not matter.
    """
    if latest.id == prepared.id:
        return None
    if _ids(prepared, prepared.partition_keys) != _ids(latest, latest.partition_keys):
        return f"partition keys changed from {list(prepared.partition_keys)} to {list(latest.partition_keys)}"
    if _ids(prepared, prepared.primary_keys) != _ids(latest, latest.primary_keys):
        return f"primary keys changed from {list(prepared.primary_keys)} to {list(latest.primary_keys)}"
    for key in LAYOUT_OPTIONS:
        if prepared.options.get(key) != latest.options.get(key):
            return f"option {key!r} changed from {prepared.options.get(key)!r} to {latest.options.get(key)!r}"
    for key in LAYOUT_COLUMN_OPTIONS:
        if _option_columns(prepared, key) != _option_columns(latest, key):
            return f"option {key!r} now names other columns ({latest.options.get(key)!r})"
    old = {f.id: f for f in prepared.fields}
    for f in latest.fields:
        was = old.get(f.id)
        if was is None:
            if not f.type.nullable:
                return f"column {f.name!r} was added as NOT NULL"
            continue
        if not is_safe_cast(was.type, f.type):
            return f"column {f.name!r} changed type from {was.type} to {f.type}, which its values do not read as"
        if was.type.nullable and not f.type.nullable:
            return f"column {f.name!r} became NOT NULL"
    return None


__all__ = ["is_safe_cast", "column_sources", "file_column", "plan_columns", "commit_schema_problem", "LAYOUT_OPTIONS",
           "LAYOUT_COLUMN_OPTIONS"]

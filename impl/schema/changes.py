"""Schema changes (pypaimon 2.1.0's ``SchemaChange`` names) and the rules that apply them.

>>> SchemaChange.add_column("c", pa.int32(), comment="new")          # doctest: +SKIP
>>> catalog.alter_table("db.t", [SchemaChange.rename_column("a", "b")])  # doctest: +SKIP

:func:`apply_changes` is a pure function from the latest :class:`TableSchema` and a list of
changes to the next one (id + 1), following Java's ``SchemaManager.generateTableSchema`` and
pypaimon's ``_generate_table_schema``. It refuses, with a :class:`SchemaChangeError` naming the
column and the rule, everything that would make existing files unreadable or change what a
key means:

- dropping a primary-key or partition column, or the last column;
- renaming a partition column (primary-key columns may be renamed: keys are matched by id);
- changing the type of a primary-key or partition column, or any type change that is not a
  safe widening (:func:`impl.schema.evolution.is_safe_cast`);
- making a primary-key or partition column nullable; making any nullable column NOT NULL
  (existing files may hold nulls: stricter than pypaimon, which allows it behind an option);
- adding a NOT NULL column (old files have no value for it), a duplicate or reserved name;
- naming a column that does not exist; nested paths (``["a", "b"]``) are not supported;
- setting or removing ``type``, and, once the table has a snapshot, an immutable option
  (:data:`IMMUTABLE_OPTIONS`: pypaimon's list plus ``bucket``: impl cannot rescale buckets).

Field ids: a new column takes ``highestFieldId + 1`` and its nested fields the ids after it;
``highestFieldId`` never decreases (dropping the highest id does not free it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Callable, Sequence, Union

import pyarrow as pa

from impl.data.types import DataField, DataType, from_arrow, parse_type, reassign_nested_ids
from impl.environment import wall_clock_millis
from impl.errors import ColumnAlreadyExistError, ColumnNotExistError, SchemaChangeError, TypeParseError
from impl.schema.evolution import is_safe_cast
from impl.schema.records import TableSchema

TypeLike = Union[DataType, pa.DataType, str]

# pypaimon's CoreOptions.IMMUTABLE_OPTIONS (Java's @Immutable options), plus "bucket": Java
# rescales a fixed bucket count through an overwrite, which impl does not implement.
IMMUTABLE_OPTIONS = frozenset({
    "type", "bucket", "bucket-key", "bucket-function.type", "data-file.path-directory", "merge-engine",
    "sequence.snapshot-ordering", "aggregation.remove-record-on-delete", "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group", "rowkind.field", "primary-key", "primary-key.nullable",
    "partition", "dynamic-bucket.initial-buckets", "force-lookup", "row-tracking.enabled",
    "data-evolution.enabled", "index-file-in-data-file-dir", "blob-field", "video-frame-field",
    "blob-descriptor-field", "blob-view-field", "pk-clustering-override",
})
_RESERVED = ("_SEQUENCE_NUMBER", "_VALUE_KIND")
_RESERVED_PREFIX = "_KEY_"


class MoveType(enum.Enum):
    FIRST = "FIRST"
    AFTER = "AFTER"
    BEFORE = "BEFORE"
    LAST = "LAST"


@dataclass(frozen=True)
class Move:
    """Where ``add_column`` puts the new column (pypaimon's ``Move``)."""

    field_name: str
    reference_field_name: str | None
    type: MoveType

    @staticmethod
    def first(field_name: str) -> "Move":
        return Move(field_name, None, MoveType.FIRST)

    @staticmethod
    def after(field_name: str, reference_field_name: str) -> "Move":
        return Move(field_name, reference_field_name, MoveType.AFTER)

    @staticmethod
    def before(field_name: str, reference_field_name: str) -> "Move":
        return Move(field_name, reference_field_name, MoveType.BEFORE)

    @staticmethod
    def last(field_name: str) -> "Move":
        return Move(field_name, None, MoveType.LAST)


class SchemaChange:
    """Factory of schema changes, with pypaimon's names; each returns a frozen record."""

    @staticmethod
    def set_option(key: str, value) -> "SetOption":
        return SetOption(str(key), "true" if value is True else "false" if value is False else str(value))

    @staticmethod
    def remove_option(key: str) -> "RemoveOption":
        return RemoveOption(str(key))

    @staticmethod
    def update_comment(comment: str | None) -> "UpdateComment":
        return UpdateComment(comment)

    @staticmethod
    def add_column(field_name: str | Sequence[str], data_type: TypeLike, comment: str | None = None,
                   move: Move | None = None) -> "AddColumn":
        return AddColumn(_path(field_name), data_type, comment, move)

    @staticmethod
    def rename_column(field_name: str | Sequence[str], new_name: str) -> "RenameColumn":
        return RenameColumn(_path(field_name), new_name)

    @staticmethod
    def drop_column(field_name: str | Sequence[str]) -> "DropColumn":
        return DropColumn(_path(field_name))

    @staticmethod
    def update_column_type(field_name: str | Sequence[str], new_data_type: TypeLike,
                           keep_nullability: bool = False) -> "UpdateColumnType":
        return UpdateColumnType(_path(field_name), new_data_type, keep_nullability)

    @staticmethod
    def update_column_nullability(field_name: str | Sequence[str], new_nullability: bool) -> "UpdateColumnNullability":
        return UpdateColumnNullability(_path(field_name), bool(new_nullability))

    @staticmethod
    def update_column_comment(field_name: str | Sequence[str], comment: str | None) -> "UpdateColumnComment":
        return UpdateColumnComment(_path(field_name), comment)

    @staticmethod
    def update_column_position(move: Move) -> "UpdateColumnPosition":
        return UpdateColumnPosition(move)


def _path(field_name) -> tuple[str, ...]:
    return (field_name,) if isinstance(field_name, str) else tuple(field_name)


@dataclass(frozen=True)
class SetOption(SchemaChange):
    key: str
    value: str


@dataclass(frozen=True)
class RemoveOption(SchemaChange):
    key: str


@dataclass(frozen=True)
class UpdateComment(SchemaChange):
    comment: str | None


@dataclass(frozen=True)
class AddColumn(SchemaChange):
    field_names: tuple[str, ...]
    data_type: TypeLike
    comment: str | None = None
    move: Move | None = None


@dataclass(frozen=True)
class RenameColumn(SchemaChange):
    field_names: tuple[str, ...]
    new_name: str


@dataclass(frozen=True)
class DropColumn(SchemaChange):
    field_names: tuple[str, ...]


@dataclass(frozen=True)
class UpdateColumnType(SchemaChange):
    field_names: tuple[str, ...]
    new_data_type: TypeLike
    keep_nullability: bool = False


@dataclass(frozen=True)
class UpdateColumnNullability(SchemaChange):
    field_names: tuple[str, ...]
    new_nullability: bool


@dataclass(frozen=True)
class UpdateColumnComment(SchemaChange):
    field_names: tuple[str, ...]
    comment: str | None


@dataclass(frozen=True)
class UpdateColumnPosition(SchemaChange):
    move: Move


# ---------------------------------------------------------------------------- rules


def to_data_type(t: TypeLike, column: str) -> DataType:
    """A Paimon type from a pyarrow type (nullable), an impl DataType or a Paimon type string."""
    try:
        if isinstance(t, DataType):
            return t
        if isinstance(t, pa.DataType):
            return from_arrow(t, True)
        if isinstance(t, str):
            return parse_type(t)
    except TypeParseError as e:
        raise SchemaChangeError(f"column {column!r}: {e}", column, "the type must map to a Paimon type") from e
    raise SchemaChangeError(f"column {column!r}: {t!r} is not a data type (pyarrow type, DataType or type string)",
                            column, "the type must map to a Paimon type")


def _top_level(path: tuple[str, ...], what: str) -> str:
    if len(path) != 1 or not isinstance(path[0], str) or not path[0]:
        raise SchemaChangeError(
            f"{what} {'.'.join(map(str, path))!r}: only top-level columns can be changed (nested paths are not supported)",
            ".".join(map(str, path)), "nested column changes are not supported")
    return path[0]


def _index(fields: list[DataField], name: str, what: str) -> int:
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    raise ColumnNotExistError(f"{what}: column {name!r} does not exist (columns: {[f.name for f in fields]})",
                              name, "the column must exist")


def _check_new_name(fields: list[DataField], name: str, schema: TableSchema, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise SchemaChangeError(f"{what}: {name!r} is not a column name", str(name), "a column needs a non-empty name")
    if any(f.name == name for f in fields):
        raise ColumnAlreadyExistError(f"{what}: column {name!r} already exists", name, "column names are unique")
    if schema.primary_keys and (name in _RESERVED or name.startswith(_RESERVED_PREFIX)):
        raise SchemaChangeError(f"{what}: column {name!r} clashes with the system columns of primary-key data files",
                                name, "names _SEQUENCE_NUMBER, _VALUE_KIND and _KEY_* are reserved")


def _place(fields: list[DataField], new: DataField, move: Move | None) -> None:
    if move is None or move.type is MoveType.LAST:
        fields.append(new)
        return
    if move.type is MoveType.FIRST:
        fields.insert(0, new)
        return
    ref = move.reference_field_name or ""
    i = _index(fields, ref, f"move of {new.name!r}")
    fields.insert(i + 1 if move.type is MoveType.AFTER else i, new)


def _rename_in_options(options: dict[str, str], renames: dict[str, str]) -> dict[str, str]:
    """Options that name columns follow a rename (Java's applyRenameColumnsToOptions)."""
    out: dict[str, str] = {}
    for k, v in options.items():
        if k in ("bucket-key", "sequence.field", "rowkind.field"):
            v = ",".join(renames.get(c.strip(), c.strip()) for c in v.split(","))
        elif k.startswith("fields.") and k.count(".") >= 2:
            name, suffix = k[len("fields."):].rsplit(".", 1)
            k = f"fields.{renames.get(name, name)}.{suffix}"
        out[k] = v
    return out


def apply_changes(old: TableSchema, changes: Sequence[SchemaChange], *, has_snapshots: Callable[[], bool],
                  time_millis: int | None = None) -> TableSchema:
    """The schema ``old.id + 1`` that ``changes`` (in order) make of ``old``; raises
    :class:`SchemaChangeError` (naming the column and the rule) for a refused change.

    ``has_snapshots`` is asked only when an immutable option changes."""
    if isinstance(changes, SchemaChange) or not isinstance(changes, (list, tuple)):
        raise SchemaChangeError("alter_table takes a list of SchemaChange", None, "changes must be a list")
    fields = list(old.fields)
    options = dict(old.options)
    comment = old.comment
    highest = [old.highest_field_id if old.highest_field_id is not None else max((f.id for f in fields), default=-1)]
    pks, parts = set(old.primary_keys), set(old.partition_keys)
    renames: dict[str, str] = {}
    for ch in changes:
        if isinstance(ch, (SetOption, RemoveOption)):
            key = ch.key
            value = ch.value if isinstance(ch, SetOption) else None
            if options.get(key) == value:
                continue
            if key == "type":
                raise SchemaChangeError("option 'type' cannot be changed", None, "the table type is fixed at creation")
            if key in ("primary-key", "partition"):
                raise SchemaChangeError(f"option {key!r} cannot be changed: keys are fixed at creation",
                                        None, "keys are fixed at creation")
            if key in IMMUTABLE_OPTIONS and has_snapshots():
                raise SchemaChangeError(
                    f"option {key!r} cannot be changed once the table has snapshots "
                    f"(from {options.get(key)!r} to {value!r}): existing files were laid out by it",
                    None, "immutable options are fixed once data is written")
            if value is None:
                options.pop(key, None)
            else:
                options[key] = value
        elif isinstance(ch, UpdateComment):
            comment = ch.comment
        elif isinstance(ch, AddColumn):
            name = _top_level(ch.field_names, "add_column")
            _check_new_name(fields, name, old, "add_column")
            t = to_data_type(ch.data_type, name)
            if not t.nullable:
                raise SchemaChangeError(
                    f"add_column {name!r}: a new column cannot be NOT NULL (files written before have no value for it)",
                    name, "added columns must be nullable")
            highest[0] += 1
            fid = highest[0]
            _place(fields, DataField(fid, name, reassign_nested_ids(t, highest), ch.comment), ch.move)
        elif isinstance(ch, RenameColumn):
            name = _top_level(ch.field_names, "rename_column")
            i = _index(fields, name, "rename_column")
            if name in parts:
                raise SchemaChangeError(f"rename_column {name!r}: partition columns cannot be renamed "
                                        "(partition directories carry the name)", name,
                                        "partition columns cannot be renamed")
            _check_new_name(fields, ch.new_name, old, "rename_column")
            fields[i] = replace(fields[i], name=ch.new_name)
            for original, current in list(renames.items()):
                if current == name:
                    renames[original] = ch.new_name
            renames.setdefault(name, ch.new_name)
            if name in pks:
                pks = (pks - {name}) | {ch.new_name}
        elif isinstance(ch, DropColumn):
            name = _top_level(ch.field_names, "drop_column")
            i = _index(fields, name, "drop_column")
            if name in parts or name in pks:
                role = "partition" if name in parts else "primary key"
                raise SchemaChangeError(f"drop_column {name!r}: {role} columns cannot be dropped", name,
                                        f"{role} columns cannot be dropped")
            if len(fields) == 1:
                raise SchemaChangeError(f"drop_column {name!r}: it is the last column of the table", name,
                                        "a table keeps at least one column")
            del fields[i]
        elif isinstance(ch, UpdateColumnType):
            name = _top_level(ch.field_names, "update_column_type")
            i = _index(fields, name, "update_column_type")
            if name in parts or name in pks:
                role = "partition" if name in parts else "primary key"
                raise SchemaChangeError(f"update_column_type {name!r}: the type of a {role} column cannot change",
                                        name, f"{role} column types are fixed")
            src = fields[i].type
            t = to_data_type(ch.new_data_type, name)
            if ch.keep_nullability or isinstance(ch.new_data_type, pa.DataType):
                t = t.copy(src.nullable)  # a pyarrow type carries no nullability
            if not is_safe_cast(src, t):
                raise SchemaChangeError(
                    f"update_column_type {name!r}: {src} -> {t} is not a safe widening "
                    "(allowed: integer widening, FLOAT -> DOUBLE, DECIMAL precision growth at the same scale, "
                    "CHAR/VARCHAR/BINARY/VARBINARY length growth, TIMESTAMP precision growth)",
                    name, "types may only widen")
            if src.nullable and not t.nullable:
                raise SchemaChangeError(f"update_column_type {name!r}: a nullable column cannot become NOT NULL "
                                        "(existing files may hold nulls)", name, "nullable columns stay nullable")
            fields[i] = replace(fields[i], type=_keep_child_ids(src, t))
        elif isinstance(ch, UpdateColumnNullability):
            name = _top_level(ch.field_names, "update_column_nullability")
            i = _index(fields, name, "update_column_nullability")
            src = fields[i].type
            if ch.new_nullability and (name in pks or name in parts):
                role = "partition" if name in parts else "primary key"
                raise SchemaChangeError(f"update_column_nullability {name!r}: a {role} column cannot be nullable",
                                        name, "key columns are NOT NULL")
            if src.nullable and not ch.new_nullability:
                raise SchemaChangeError(f"update_column_nullability {name!r}: a nullable column cannot become "
                                        "NOT NULL (existing files may hold nulls)", name,
                                        "nullable columns stay nullable")
            fields[i] = replace(fields[i], type=src.copy(ch.new_nullability))
        elif isinstance(ch, UpdateColumnComment):
            name = _top_level(ch.field_names, "update_column_comment")
            i = _index(fields, name, "update_column_comment")
            fields[i] = replace(fields[i], description=ch.comment)
        elif isinstance(ch, UpdateColumnPosition):
            i = _index(fields, ch.move.field_name, "update_column_position")
            moved = fields.pop(i)
            _place(fields, moved, ch.move)
        else:
            raise SchemaChangeError(f"{ch!r} is not a SchemaChange", None, "changes must be SchemaChange records")
    return TableSchema(
        id=old.id + 1,
        fields=tuple(fields),
        partition_keys=old.partition_keys,
        primary_keys=tuple(renames.get(k, k) for k in old.primary_keys),
        options=_rename_in_options(options, renames),
        comment=comment,
        time_millis=wall_clock_millis() if time_millis is None else time_millis,
        highest_field_id=highest[0],
        version=old.version,
    )


def _keep_child_ids(src: DataType, t: DataType) -> DataType:
    # a nested type only "widens" to itself: keep the field ids the table already gave it
    return src.copy(t.nullable) if src.root in ("ARRAY", "MAP", "ROW") else t


__all__ = [
    "SchemaChange", "SetOption", "RemoveOption", "UpdateComment", "AddColumn", "RenameColumn", "DropColumn",
    "UpdateColumnType", "UpdateColumnNullability", "UpdateColumnComment", "UpdateColumnPosition", "Move",
    "MoveType", "apply_changes", "IMMUTABLE_OPTIONS", "to_data_type",
]

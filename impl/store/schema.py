"""Table definitions: from a pyarrow schema plus keys and options to a Paimon TableSchema (JSON v3).

Field ids count from 0 in column order; primary-key fields become NOT NULL
(as Paimon does). Everything that makes a table unusable is rejected here, at creation,
with :class:`InvalidSchemaError` / :class:`InvalidOptionError` naming what was wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import pyarrow as pa

from impl.bucket.routing import POSTPONE_BUCKET
from impl.data.types import DataField, from_arrow, reassign_nested_ids, to_arrow
from impl.environment import wall_clock_millis
from impl.errors import (
    InvalidOptionError,
    InvalidSchemaError,
    PaimonError,
    TypeParseError,
    UnsupportedTableFeatureError,
)
from impl.options import core_options as co
from impl.options.iceberg import check_iceberg_table
from impl.options.registry import check_create
from impl.options.values import MergeEngine
from impl.schema.records import TableSchema
from impl.store.options import TableOptions

# Columns of primary-key data files that user fields must not shadow.
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"
# Row-tracking system columns (Paimon's SpecialFields), readable on row-tracking tables
ROW_ID = "_ROW_ID"
ROW_TRACKING_COLUMNS = (ROW_ID, SEQUENCE_NUMBER)
_NESTED = ("ARRAY", "MAP", "ROW")


@dataclass(frozen=True)
class Schema:
    """A table definition before creation (pypaimon's ``Schema.from_pyarrow_schema``)."""

    pa_schema: pa.Schema
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    @staticmethod
    def from_pyarrow_schema(pa_schema: pa.Schema, partition_keys: Sequence[str] | None = None,
                            primary_keys: Sequence[str] | None = None, options: Mapping | None = None,
                            comment: str | None = None) -> "Schema":
        return Schema(pa_schema, tuple(partition_keys or ()), tuple(primary_keys or ()),
                      dict(options or {}), comment)


def _option_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _names(kind: str, keys: Iterable[str] | None) -> tuple[str, ...]:
    if keys is None:
        return ()
    if isinstance(keys, str):
        keys = [k.strip() for k in keys.split(",") if k.strip()]
    out = tuple(keys)
    for k in out:
        if not isinstance(k, str) or not k:
            raise InvalidSchemaError(f"{kind}: {k!r} is not a field name")
    if len(set(out)) != len(out):
        raise InvalidSchemaError(f"{kind} {list(out)} name a field twice")
    return out


def _bucket_option(opts: Mapping[str, str]) -> int | None:
    """The table's ``bucket`` option (default -1); None when it does not parse (reported by the
    option checks of :func:`validate_for_create`)."""
    try:
        return co.BUCKET.get(opts)
    except (PaimonError, ValueError):
        return None


def build_table_schema(pa_schema: pa.Schema, *, primary_keys: Sequence[str] | None = None,
                       partition_keys: Sequence[str] | None = None, options: Mapping | None = None,
                       comment: str | None = None, schema_id: int = 0,
                       time_millis: int | None = None) -> TableSchema:
    """Validate a table definition and build its :class:`TableSchema` (schema id 0)."""
    if not isinstance(pa_schema, pa.Schema):
        raise InvalidSchemaError(f"schema must be a pyarrow.Schema, got {type(pa_schema).__name__}")
    if len(pa_schema) == 0:
        raise InvalidSchemaError("a table needs at least one column")
    pks = _names("primary keys", primary_keys)
    parts = _names("partition keys", partition_keys)
    opts = {str(k): _option_text(v) for k, v in (options or {}).items()}

    names = list(pa_schema.names)
    seen: set[str] = set()
    for n in names:
        if not n:
            raise InvalidSchemaError("a column has an empty name")
        if n in seen:
            raise InvalidSchemaError(f"column {n!r} appears twice")
        seen.add(n)
    for k in parts:
        if k not in seen:
            raise InvalidSchemaError(f"partition key {k!r} is not a column (columns: {names})")
    for k in pks:
        if k not in seen:
            raise InvalidSchemaError(f"primary key {k!r} is not a column (columns: {names})")
    if pks:
        missing = [p for p in parts if p not in pks]
        if missing and _bucket_option(opts) != -1:
            # Paimon's SchemaValidation: only dynamic bucket mode runs cross-partition upserts
            # (a global key index, impl.write.cross_partition)
            raise InvalidSchemaError(
                f"primary keys {list(pks)} must include every partition key when 'bucket' is not -1; missing "
                f"{missing}. Add {missing} to the primary key, or set 'bucket' = -1 (cross-partition upserts: a "
                f"key moves between partitions)")
        if missing and opts.get("sequence.field"):
            # Paimon's SchemaValidation: a moved key's DELETE would lose to an older sequence value
            raise InvalidSchemaError(
                f"'sequence.field' cannot be used in cross-partition upserts (primary keys {list(pks)} do not "
                f"include partition keys {missing})")
        if set(pks) == set(parts):
            raise InvalidSchemaError(
                f"primary keys {list(pks)} equal the partition keys: each partition would hold one row")
        reserved = [n for n in names if n in (SEQUENCE_NUMBER, VALUE_KIND) or n.startswith(KEY_PREFIX)]
        if reserved:
            raise InvalidSchemaError(f"columns {reserved} clash with the system columns of primary-key data files")

    not_null = set(pks)  # as Paimon Java: partition columns keep their nullability (a null is partition.default-name)
    fields = []
    highest = [-1]  # field ids are unique across nesting levels, as Paimon assigns them
    for f in pa_schema:
        try:
            t = from_arrow(f.type, f.nullable)
        except TypeParseError as e:
            raise InvalidSchemaError(f"column {f.name!r}: {e}") from e
        if f.name in not_null:
            if t.root in _NESTED:
                role = "primary key" if f.name in pks else "partition key"
                raise InvalidSchemaError(f"{role} {f.name!r} has nested type {t}, which cannot be a key")
            t = t.copy(False)
        highest[0] += 1
        field_id = highest[0]
        fields.append(DataField(field_id, f.name, reassign_nested_ids(t, highest)))

    schema = TableSchema(
        id=schema_id,
        fields=tuple(fields),
        partition_keys=parts,
        primary_keys=pks,
        options=opts,
        comment=comment,
        time_millis=wall_clock_millis() if time_millis is None else time_millis,
        highest_field_id=highest[0],
    )
    validate_for_create(schema)
    return schema


def is_row_tracking_column(name: str) -> bool:
    return name in ROW_TRACKING_COLUMNS


def row_tracking_field(name: str) -> pa.Field:
    """The Arrow field of a row-tracking system column (BIGINT NOT NULL, as Paimon reads it)."""
    return pa.field(name, pa.int64(), nullable=False)


def mergetree():
    """The ``impl.mergetree`` module, or UnsupportedTableFeatureError if it cannot be imported."""
    try:
        # imported on first use, so that append-only use never loads the merge tree
        import impl.mergetree as mt
        return mt
    except ImportError as e:
        raise UnsupportedTableFeatureError(
            f"primary-key tables need impl.mergetree, which is not available ({e})") from e


def merge_tree_options(options: TableOptions, schema: TableSchema):
    """Parse and validate the merge-tree options of a primary-key table (InvalidOptionError if
    wrong): the merge tree's view of the table's parsed options, sharing its write formats and
    file indexes."""
    mt = mergetree()
    try:
        opts = mt.MergeTreeOptions.from_parsed(options.parsed, write_formats=options.write_formats,
                                               file_index=options.file_index)
        mt.MergeSpec.from_schema(schema, opts)
    except InvalidOptionError:
        raise
    except (PaimonError, ValueError) as e:
        raise InvalidOptionError(str(e)) from e
    return opts


def validate_for_create(schema: TableSchema, *, warn_unknown: bool = True,
                        previous_options: Mapping[str, str] | None = None) -> TableOptions:
    """Checks a new table must pass (stricter than what reading an existing table needs).
    ``previous_options``: an alter's old options; a refused Paimon option the table already
    carries is not refused again here (reads and writes refuse it)."""
    options = TableOptions.from_options(schema.options, warn_unknown=warn_unknown)
    validate_options(schema, options)
    # Iceberg metadata (metadata.iceberg.storage) of a table kind or type impl cannot mirror
    check_iceberg_table(schema.options, schema.primary_keys, schema.fields, schema.partition_keys,
                        "the new table" if previous_options is None else "the altered table")
    # a Paimon option impl does not implement, set (or changed) to a non-default value
    check_create(schema.options, "the new table" if previous_options is None else "the altered table",
                 previous_options)
    if schema.primary_keys:
        try:
            mergetree()
        except UnsupportedTableFeatureError:
            return options  # merge tree not installed: checked again on first write
        merge_tree_options(options, schema)
    return options


def _check_deletion_vectors(schema: TableSchema, options: TableOptions) -> None:
    """What ``deletion-vectors.enabled`` is allowed for: primary-key tables with any engine but
    first-row (Paimon refuses it: first-row never supersedes a stored row), 32-bit bitmaps
    (Paimon's default). Engines other than deduplicate (and ``sequence.field``) merge the key's
    looked-up row into the new one at compaction (Paimon's LookupMergeFunction). Append tables
    take deletion vectors from row-level DELETE / UPDATE (``impl.spark.delete``), as in Paimon;
    not with row tracking (row ids of deleted rows are not implemented)."""
    if not schema.primary_keys:
        if options.row_tracking:
            raise UnsupportedTableFeatureError(
                "option 'deletion-vectors.enabled' with 'row-tracking.enabled' is not implemented")
    if options.merge_engine is MergeEngine.FIRST_ROW:
        # Paimon's SchemaValidation refuses it too: first-row never supersedes a stored row
        raise InvalidOptionError(
            "option 'deletion-vectors.enabled' is not allowed with merge-engine 'first-row': first-row never "
            "deletes old data (later rows of a key are dropped by compaction), so it needs no deletion vectors")


def _check_row_tracking(schema: TableSchema, options: TableOptions) -> None:
    """Paimon's SchemaValidation for these modes: row tracking only on append tables with
    ``bucket`` = -1; data evolution only with row tracking and without deletion vectors."""
    if options.row_tracking:
        if schema.primary_keys:
            raise InvalidOptionError("option 'row-tracking.enabled' cannot be used with a primary key "
                                     f"(primary keys {list(schema.primary_keys)})")
        if options.bucket != -1:
            raise InvalidOptionError(f"option 'row-tracking.enabled' needs 'bucket' = -1, not {options.bucket}")
        for name in ROW_TRACKING_COLUMNS:
            if name in schema.field_names:
                raise InvalidOptionError(f"option 'row-tracking.enabled': column {name!r} conflicts with the "
                                         "row-tracking system column of that name")
    if options.data_evolution:
        if not options.row_tracking:
            raise InvalidOptionError("option 'data-evolution.enabled' needs 'row-tracking.enabled' = true")
        if options.deletion_vectors:
            raise InvalidOptionError("option 'data-evolution.enabled' cannot be used with 'deletion-vectors.enabled'")


def check_table_kind_kept(schema: TableSchema, dynamic: Mapping[str, str]) -> None:
    """A dynamic option cannot switch row tracking or data evolution on or off: reads would
    take column-update files for rows, or writes would skip row ids (InvalidOptionError)."""
    for option in (co.ROW_TRACKING_ENABLED, co.DATA_EVOLUTION_ENABLED):
        if option.key_in(dynamic) and option.get(dynamic) != option.get(schema.options):
            raise InvalidOptionError(f"option {option.key!r} is fixed when the table is created "
                                     f"({option.get(schema.options)}); a dynamic option cannot change it")


def check_index_file_layout(schema: TableSchema, options: TableOptions) -> None:
    """Refuse ``index-file-in-data-file-dir`` = true on a table that has index files (deletion
    vectors, dynamic bucket mode): their directory is not implemented, and looking for them in
    ``index/`` would miss them."""
    if options.parsed[co.INDEX_FILE_IN_DATA_FILE_DIR] and (
            options.deletion_vectors or (schema.primary_keys and options.bucket == -1)):
        raise UnsupportedTableFeatureError(
            "option 'index-file-in-data-file-dir' = true (index files in bucket directories) is not supported "
            "on tables with deletion vectors or dynamic buckets")


def validate_options(schema: TableSchema, options: TableOptions) -> None:
    """Cross-checks between options and fields, shared by table creation and ``Table.copy``."""
    names = schema.field_names
    pk_table = bool(schema.primary_keys)
    if options.deletion_vectors:
        _check_deletion_vectors(schema, options)
    _check_row_tracking(schema, options)
    if options.bucket_key is not None:
        for k in options.bucket_key:
            if k not in names:
                raise InvalidOptionError(f"option 'bucket-key': {k!r} is not a column (columns: {names})")
            if k in schema.partition_keys:
                raise InvalidOptionError(f"option 'bucket-key': {k!r} is a partition key")
            if pk_table and k not in schema.primary_keys:
                raise InvalidOptionError(f"option 'bucket-key': {k!r} is not a primary key {list(schema.primary_keys)}")
        for k in options.bucket_key:
            if schema.field(k).type.root in _NESTED:
                raise InvalidOptionError(f"option 'bucket-key': {k!r} has nested type {schema.field(k).type}")
    if options.bucket == -1 and options.bucket_key is not None:
        # bucket-unaware and dynamic bucket mode hash nothing / the primary key (Paimon and pypaimon refuse it too)
        raise InvalidOptionError("option 'bucket-key' needs a fixed 'bucket' count (bucket is -1)")
    if not pk_table:
        if options.bucket == POSTPONE_BUCKET:
            # Paimon's SchemaValidation: "The number of buckets needs to be greater than 0."
            raise InvalidOptionError("option 'bucket': -2 (postpone bucket mode) needs a primary-key table")
        if options.bucket > 0 and options.bucket_key is None:
            raise InvalidOptionError(
                f"append table with 'bucket' = {options.bucket} needs option 'bucket-key' (the columns to hash)")
        if options.changelog_producer != "none":
            raise InvalidOptionError("option 'changelog-producer' needs a primary-key table")
        if "merge-engine" in options.raw:
            raise InvalidOptionError("option 'merge-engine' needs a primary-key table")
    if options.rowkind_field is not None and options.rowkind_field not in names:
        raise InvalidOptionError(f"option 'rowkind.field': {options.rowkind_field!r} is not a column")
    if options.rowkind_field is not None and not schema.field(options.rowkind_field).type.is_string:
        raise InvalidOptionError(f"option 'rowkind.field': column {options.rowkind_field!r} must be a string column")
    for k in options.sequence_field or ():
        if k not in names:
            raise InvalidOptionError(f"option 'sequence.field': {k!r} is not a column")
    for key in options.raw:
        if key.startswith("fields.") and key.count(".") >= 2:
            fname = key[len("fields."):].rsplit(".", 1)[0]
            if fname not in names and fname != "default-aggregate-function":
                raise InvalidOptionError(f"option {key!r}: {fname!r} is not a column")


def arrow_schema(schema: TableSchema) -> pa.Schema:
    """The pyarrow schema of the table's user columns (NOT NULL fields are non-nullable)."""
    return pa.schema([pa.field(f.name, to_arrow(f.type), nullable=f.type.nullable) for f in schema.fields])


def bucket_key_names(schema: TableSchema, options: TableOptions) -> tuple[str, ...]:
    """Columns whose BinaryRow is hashed for the bucket: ``bucket-key``, else the trimmed primary key."""
    if options.bucket_key is not None:
        return options.bucket_key
    if schema.primary_keys:
        return schema.trimmed_primary_keys
    return ()

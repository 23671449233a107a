"""The ``paimon_py`` data source's options and write preparation, shared by the batch source
(:mod:`impl.spark.source`) and the streaming sink (:mod:`impl.spark.stream_writer`).

Options sort into connector options (``path``, keys, time travel, read tuning: each declared
below as a :class:`impl.options.ConfigOption`, key, parser, default and description, as the
table options are in :mod:`impl.options.core_options`), Paimon table options and storage
options; :func:`prepare_write` creates the table if missing and checks a DataFrame schema
against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from impl.catalog.filesystem import split_system_table
from impl.errors import SystemTableReadOnlyError
from impl.jobs.tables import TableRef, canonical_storage_key, is_storage_key, split_table_path
from impl.jobs.units import DEFAULT_TARGET_BYTES
from impl.jobs.writer import WriteJob, unsupported_write_reason
from impl.options.config_option import ConfigOption
from impl.options.registry import classify, nearest_key
from impl.options.values import parse_bool, parse_int, parse_names, parse_text
from impl.spark.errors import SparkConnectorError
from impl.spark.types import arrow_schema_for_create, check_write_schema
from impl.store.options import KNOWN_KEYS

FORMAT_NAME = "paimon_py"
# internal: restricts a read to the files :func:`impl.spark.fast_read.read_table` leaves to this source
ONLY_FILES_KEY = "__only-files"

# ---------------------------------------------------------------------------- connector options (not table options)

PATH: ConfigOption[str | None] = ConfigOption(
    "path", parse_text, None, "The table's directory, <warehouse>/<db>.db/<table> (.load(path) / .save(path)).")
PRIMARY_KEY: ConfigOption[tuple[str, ...]] = ConfigOption(
    "primary-key", parse_names, (), "Comma-separated primary key of a table a write creates; an existing "
    "table's must match.", fallback_keys=("primary-keys",))
PARTITION: ConfigOption[tuple[str, ...]] = ConfigOption(
    "partition", parse_names, (), "Comma-separated partition columns of a table a write creates; an existing "
    "table's must match.", fallback_keys=("partition-keys",))
SNAPSHOT_ID: ConfigOption[str | None] = ConfigOption(
    "snapshot-id", parse_text, None, "Time travel: read this snapshot (passed on as scan.snapshot-id).")
TIMESTAMP_MILLIS: ConfigOption[str | None] = ConfigOption(
    "timestamp-millis", parse_text, None,
    "Time travel: read the snapshot of this epoch millisecond (passed on as scan.timestamp-millis).")
WRITE_ROW_KIND_COLUMN: ConfigOption[str | None] = ConfigOption(
    "row-kind-column", parse_text, None,
    "Writes: the DataFrame column holding each row's kind (+I, -U, +U, -D); it is not written.")
READ_PARALLELISM: ConfigOption[int | None] = ConfigOption(
    "read.parallelism", parse_int, None, "Partitions of a read; unset: planned from read.split-size.")
READ_SPLIT_SIZE: ConfigOption[int] = ConfigOption(
    "read.split-size", parse_int, DEFAULT_TARGET_BYTES, "Target bytes of one read partition.")
PUSHDOWN: ConfigOption[bool] = ConfigOption(
    "pushdown", parse_bool, False,
    "Prune the planned read with Spark's pushed filters (off by default: Spark 4.3 shares one planned read "
    "among all scans of a loaded relation).")
READ_CHANGELOG: ConfigOption[bool] = ConfigOption(
    "read.changelog", parse_bool, False, "Reads return Paimon's rowkind column before the table's columns.")
CONNECTOR_OPTIONS: tuple[ConfigOption[Any], ...] = (
    PATH, PRIMARY_KEY, PARTITION, SNAPSHOT_ID, TIMESTAMP_MILLIS, WRITE_ROW_KIND_COLUMN, READ_PARALLELISM, READ_SPLIT_SIZE,
    PUSHDOWN, READ_CHANGELOG)

_CONNECTOR_KEYS = frozenset(k for option in CONNECTOR_OPTIONS for k in option.keys) | {ONLY_FILES_KEY}
# connector time travel -> the table option it stands for
_TIME_TRAVEL = {SNAPSHOT_ID.key: "scan.snapshot-id", TIMESTAMP_MILLIS.key: "scan.timestamp-millis"}


def connector_names(connector: Mapping[str, str], option: ConfigOption[tuple[str, ...]]) -> list[str]:
    """The names of a list option, from the first of its keys with a non-empty value."""
    return list(option.get({k: v for k, v in connector.items() if k not in option.keys or v}))


def _names(value: str | None) -> list[str]:
    return [s.strip() for s in (value or "").split(",") if s.strip()]


def _paimon_key(key: str) -> bool:
    """A key Paimon declares (or a key family it has, ``fields.<f>.aggregate-function``), or one
    impl reads: any other key, ``scan.snapshot-idd`` or ``scan.foo`` too, is refused."""
    return key in KNOWN_KEYS or classify(key) is not None


def _unknown_message(unknown: list[str]) -> str:
    """The unknown keys, each with the nearest Paimon key when one is close."""
    parts = []
    for k in unknown:
        near = nearest_key(k)
        parts.append(f"{k!r} (did you mean {near!r}?)" if near else repr(k))
    return f"{FORMAT_NAME}: unknown option(s) {', '.join(parts)}"


def check_table_options(options: dict[str, str]) -> None:
    """Refuse keys that are no Paimon table option (a typo would otherwise silently do nothing)."""
    unknown = sorted(k for k in options if not _paimon_key(k))
    if unknown:
        raise SparkConnectorError(f"{_unknown_message(unknown)}; storage options start with fs., "
                                  f"s3. or s3a., other keys must be Paimon table options")


@dataclass(frozen=True)
class SourceOptions:
    """The data source options, sorted by what they configure."""

    path: str
    connector: dict[str, str]  # connector options (_CONNECTOR_KEYS)
    table: dict[str, str]  # Paimon table options (time travel translated to scan.*)
    storage: dict[str, str]  # storage options (fs.*, s3.*, s3a.*): how to reach the store


def parse_options(options) -> SourceOptions:
    """The table path and the connector, Paimon table and storage options of the data source options."""
    opts = {str(k).lower() if str(k).lower() in _CONNECTOR_KEYS else str(k): str(v)
            for k, v in dict(options).items() if v is not None}
    path = PATH.get(opts)
    if not path:
        raise SparkConnectorError(f"{FORMAT_NAME}: no table path; use .load(path) / .save(path) or "
                                  f"OPTIONS (path '<warehouse>/<db>.db/<table>')")
    connector, table_opts, storage, unknown = {}, {}, {}, []
    for k, v in opts.items():
        if k in _CONNECTOR_KEYS:
            connector[k] = v
        elif is_storage_key(k):
            storage[canonical_storage_key(k)] = v
        elif _paimon_key(k):
            table_opts[k] = v
        else:
            unknown.append(k)
    if unknown:
        raise SparkConnectorError(f"{_unknown_message(sorted(unknown))}; connector options are "
                                  f"{sorted(_CONNECTOR_KEYS)}, storage options start with fs., s3. or s3a., other "
                                  f"keys must be Paimon table options")
    for k, scan_key in _TIME_TRAVEL.items():
        if k in connector:
            table_opts[scan_key] = connector[k]
    return SourceOptions(path, connector, table_opts, storage)



def refuse_system_table_write(path: str, operation: str) -> None:
    """Raise ``SystemTableReadOnlyError`` when ``path`` names a system table (``t$snapshots``)."""

    _, db, name = split_table_path(path)
    if split_system_table(name)[1] is not None:
        raise SystemTableReadOnlyError(f"{db}.{name}", operation)


def prepare_write(path: str, df_schema, connector: dict[str, str], table_opts: dict[str, str], *,
                  drop_columns=(), fs_factory=None, storage_options: dict[str, str] | None = None):
    """Create the table if missing, check the DataFrame schema, and build the WriteJob.
    ``table_opts`` must hold no storage option (they would be stored in the schema)."""

    row_kind = WRITE_ROW_KIND_COLUMN.get(connector)
    hidden = set(drop_columns) | ({row_kind} if row_kind else set())
    data_schema = type(df_schema)([f for f in df_schema.fields if f.name not in hidden])
    misplaced = sorted(k for k in table_opts if is_storage_key(k))
    if misplaced:
        raise SparkConnectorError(f"{FORMAT_NAME}: storage options {misplaced} given as table options; they "
                                  f"would be written into the table's schema")
    base = TableRef.from_path(path, fs_factory=fs_factory, storage_options=storage_options)
    for k in _TIME_TRAVEL.values():
        if k in table_opts:
            raise SparkConnectorError(f"{FORMAT_NAME}: time travel options do not apply to writes")
    catalog = base.catalog()
    if not catalog.table_exists(base.identifier):
        catalog.create_database(base.database, ignore_if_exists=True)
        pks = connector_names(connector, PRIMARY_KEY)
        parts = connector_names(connector, PARTITION)
        if pks and int(table_opts.get("bucket", "-1")) < 1:
            raise SparkConnectorError(
                f"{FORMAT_NAME}: a primary-key table needs a fixed bucket count, e.g. .option('bucket', '4') "
                f"(dynamic bucket mode is not supported); table {base.identifier} was not created")
        catalog.create_table(base.identifier, schema=arrow_schema_for_create(data_schema), primary_keys=pks or None,
                             partition_keys=parts or None, options=table_opts, ignore_if_exists=True)
        dynamic = {}
    else:
        _check_existing(base.table(), connector, table_opts)
        dynamic = {k: v for k, v in table_opts.items() if k not in ("bucket", "bucket-key")}
    ref = base.with_options(dynamic) if dynamic else base
    table = ref.table()
    refused = unsupported_write_reason(table, "Spark")
    if refused:
        raise SparkConnectorError(f"{FORMAT_NAME}: {refused}")
    mapping = check_write_schema(data_schema, table.schema, table.identifier)
    column_map = [(f.name, src) for f, src in zip(table.schema.fields, mapping, strict=True)]
    latest = table.snapshot_manager().latest_snapshot_id() or 0
    return WriteJob.new(ref, column_map, since_snapshot_id=latest, row_kind_column=row_kind,
                        drop_columns=tuple(drop_columns))


def _check_existing(table, connector: dict[str, str], table_opts: dict[str, str]) -> None:
    """Table-defining options given for an existing table must match it."""
    problems = []
    pks = connector_names(connector, PRIMARY_KEY)
    if pks and pks != list(table.primary_keys):
        problems.append(f"primary-key {pks} (table: {list(table.primary_keys)})")
    parts = connector_names(connector, PARTITION)
    if parts and parts != list(table.partition_keys):
        problems.append(f"partition {parts} (table: {list(table.partition_keys)})")
    if "bucket" in table_opts and int(table_opts["bucket"]) != table.options.bucket:
        problems.append(f"bucket {table_opts['bucket']} (table: {table.options.bucket})")
    if "bucket-key" in table_opts and _names(table_opts["bucket-key"]) != list(table.bucket_keys):
        problems.append(f"bucket-key {table_opts['bucket-key']} (table: {list(table.bucket_keys)})")
    if problems:
        raise SparkConnectorError(f"table {table.identifier} exists with a different definition: "
                                  f"{'; '.join(problems)}")


__all__ = ["FORMAT_NAME", "ONLY_FILES_KEY", "SourceOptions", "check_table_options", "parse_options", "prepare_write",
           "refuse_system_table_write"]

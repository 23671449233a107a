"""The commands of ``paimon-py``, each a function of the catalog and its parsed arguments
returning what to print (:class:`impl.cli.output.Rows` or :class:`~impl.cli.output.Document`).

Everything goes through impl's public API: the catalog, tables and their maintenance calls, and
the system tables (``db.t$snapshots`` ...), whose rows the ``show`` commands print as they are.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

import pyarrow as pa

from impl._optional import require
from impl.cli.errors import SqlError
from impl.cli.output import Document, Result, Rows, progress
from impl.errors import (
    IcebergMetadataNotExistError,
    InvalidIdentifierError,
    InvalidOptionError,
    InvalidPredicateError,
)
from impl.fs.names import check_tag

if TYPE_CHECKING:
    # for annotations only: the tables' modules are imported when a command runs
    from impl.catalog import Catalog
    from impl.system import SystemTable
    from impl.table import FileStoreTable

# the system tables a `show` command prints, by command name (Paimon Java's table names)
SYSTEM_TABLE_COMMANDS: dict[str, str] = {
    "snapshots": "the table's snapshots ($snapshots)",
    "schemas": "every schema version ($schemas)",
    "options": "the table's options ($options)",
    "manifests": "the manifest files of the latest snapshot ($manifests)",
    "files": "the live data files of the latest snapshot ($files)",
    "partitions": "the partitions of the latest snapshot ($partitions)",
    "buckets": "the buckets of the latest snapshot ($buckets)",
    "tags": "the table's tags ($tags)",
    "branches": "the table's branches ($branches)",
}

DEFAULT_READ_LIMIT = 20


@dataclass
class Context:
    """What every command gets: the catalog, the storage options it was opened with, and
    whether a progress bar may be shown."""

    catalog: Catalog
    options: dict[str, str]
    show_progress: bool


Command = Callable[[Context, argparse.Namespace], Result]


# ---------------------------------------------------------------------------- helpers


def data_table(ctx: Context, identifier: str) -> FileStoreTable:
    """The data table (or branch view ``db.t$branch_b``) ``identifier``; a system table is refused."""
    # imported here, as every module a command (not --help) needs: paimon-py --help stays light
    from impl.system import SystemTable

    table = ctx.catalog.get_table(identifier)
    if isinstance(table, SystemTable):
        raise InvalidIdentifierError(f"{identifier!r} is a system table; this command takes a data table (db.t)")
    return table


def column_list(text: str | None) -> list[str] | None:
    """``--columns a,b`` as a list (None: every column)."""
    if text is None:
        return None
    names = [c.strip() for c in text.split(",")]
    if not all(names):
        raise InvalidPredicateError(f"--columns {text!r} has an empty column name")
    return names


def read_rows(table: FileStoreTable | SystemTable, where: str | None, columns: str | None,
              limit: int | None) -> pa.Table:
    """The first ``limit`` rows (None: all) of ``table`` passing ``where``, projected to
    ``columns``; stops reading once it has them."""
    # imported here, as every module a command (not --help) needs: paimon-py --help stays light
    from impl.predicate.where import parse_where

    rb = table.new_read_builder()
    if where is not None:
        rb = rb.with_filter(parse_where(where, rb.new_predicate_builder(), table.arrow_schema))
    rb = rb.with_projection(column_list(columns))
    if limit is not None:
        rb = rb.with_limit(limit)
    reader = rb.to_arrow_batch_reader()
    batches: list[pa.RecordBatch] = []
    count = 0
    for batch in reader:
        if limit is not None and count + batch.num_rows >= limit:
            batches.append(batch.slice(0, limit - count))
            break
        batches.append(batch)
        count += batch.num_rows
    return pa.Table.from_batches(batches, schema=reader.schema)


_DURATION = re.compile(r"^\s*\d+\s*[A-Za-z]+\s*$")


def time_millis(text: str, now_millis: int, flag: str) -> int:
    """Epoch millis of ``text``: a local timestamp (``2024-01-01 12:00:00``, as Paimon's
    procedures take it) or a duration before now (``1 d``, ``12 h``)."""
    # imported here, as every module a command (not --help) needs: paimon-py --help stays light
    from impl.options.values import parse_duration_millis

    if _DURATION.match(text):
        return now_millis - parse_duration_millis(flag, text.strip())
    try:
        ts = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidOptionError(f"{flag} {text!r} is neither a timestamp ('2024-01-01 12:00:00') "
                                 "nor a duration ('1 d', '12 h')") from None
    if ts.tzinfo is None:
        ts = ts.astimezone()  # local time, as Paimon reads its procedures' timestamps
    return int(ts.timestamp() * 1000)


def file_count(ctx: Context, table: FileStoreTable) -> int:
    """How many live data files the latest snapshot has (its ``$files`` rows)."""
    return ctx.catalog.get_table(f"{table.identifier}$files").to_arrow(projection=["file_path"]).num_rows


# ---------------------------------------------------------------------------- catalog


def cmd_databases(ctx: Context, args: argparse.Namespace) -> Result:
    return Rows(pa.table({"database": pa.array(ctx.catalog.list_databases(), pa.string())}))


def cmd_tables(ctx: Context, args: argparse.Namespace) -> Result:
    databases = [args.database] if args.database else ctx.catalog.list_databases()
    pairs = [(db, t) for db in databases for t in ctx.catalog.list_tables(db)]
    return Rows(pa.table({"database": pa.array([p[0] for p in pairs], pa.string()),
                          "table": pa.array([p[1] for p in pairs], pa.string())}))


def cmd_describe(ctx: Context, args: argparse.Namespace) -> Result:
    table = data_table(ctx, args.table)
    schema = table.schema
    fields = schema.fields
    columns = pa.table({
        "id": pa.array([f.id for f in fields], pa.int32()),
        "name": pa.array([f.name for f in fields], pa.string()),
        "type": pa.array([str(f.type) for f in fields], pa.string()),
        "key": pa.array(["PRI" if f.name in schema.primary_keys else
                         "PART" if f.name in schema.partition_keys else "" for f in fields], pa.string()),
        "comment": pa.array([f.description for f in fields], pa.string()),
    })
    latest = table.latest_snapshot()
    return Document({
        "table": table.identifier,
        "branch": table.branch,
        "path": table.path,
        "schema_id": schema.id,
        "primary_keys": list(schema.primary_keys),
        "partition_keys": list(schema.partition_keys),
        "bucket": table.options.bucket,
        "bucket_keys": list(table.bucket_keys),
        "latest_snapshot_id": None if latest is None else latest.id,
        "record_count": None if latest is None else latest.total_record_count,
        "comment": schema.comment,
        "columns": Rows(columns),
        "options": dict(sorted(schema.options.items())),
    })


def show_system_table(name: str) -> Command:
    def run(ctx: Context, args: argparse.Namespace) -> Result:
        data_table(ctx, args.table)  # a system table's own system tables do not exist: say so plainly
        table = ctx.catalog.get_table(f"{args.table}${name}")
        return Rows(read_rows(table, args.where, args.columns, args.limit))
    return run


def cmd_read(ctx: Context, args: argparse.Namespace) -> Result:
    table = ctx.catalog.get_table(args.table)
    travel = {}
    if args.snapshot is not None:
        travel["scan.snapshot-id"] = str(args.snapshot)
    if args.tag is not None:
        # checked here: an empty option value means "no tag" and would read the latest snapshot
        travel["scan.tag-name"] = check_tag(args.tag)
    if getattr(args, "scan_version", None) is not None:
        travel["scan.version"] = args.scan_version
    if travel:
        table = table.copy(travel)
    return Rows(read_rows(table, args.where, args.columns, args.limit or None))


# ---------------------------------------------------------------------------- maintenance


def cmd_compact(ctx: Context, args: argparse.Namespace) -> Result:
    table = data_table(ctx, args.table)
    before = file_count(ctx, table)
    if args.spark:
        spark_module = require("impl.spark", "compact --spark", extra="spark")
        with progress(f"compacting {table.identifier} on Spark", ctx.show_progress):
            spark = spark_module.session()
            result = spark_module.compact(spark, table.path, args.full, options=storage_options(ctx))
        snapshot_ids = list(result.snapshot_ids)
    else:
        with progress(f"compacting {table.identifier}", ctx.show_progress):
            stats = table.compact(full=args.full)
        snapshot_ids = [] if stats is None else list(stats.snapshot_ids)
    return Document({"table": table.identifier, "engine": "spark" if args.spark else "local", "full": args.full,
                     "snapshot_ids": snapshot_ids, "files_before": before, "files_after": file_count(ctx, table)})


def storage_options(ctx: Context) -> dict[str, str]:
    """The ``--option`` values that Spark's processes open the store and the catalog with (the
    warehouse and the default metastore dropped)."""
    return {k: v for k, v in ctx.options.items()
            if k != "warehouse" and not (k == "metastore" and v == "filesystem")}


def cmd_expire_snapshots(ctx: Context, args: argparse.Namespace) -> Result:
    table = data_table(ctx, args.table)
    now = table.core.env.clock_millis()
    time_retained_ms = None if args.older_than is None else now - time_millis(args.older_than, now, "--older-than")
    with progress(f"expiring snapshots of {table.identifier}", ctx.show_progress):
        result = table.expire_snapshots(retain_min=args.retain_min, retain_max=args.retain_max,
                                        time_retained_ms=time_retained_ms, max_deletes=args.max_deletes,
                                        now_millis=now)
    return Document({
        "table": table.identifier,
        "expired_snapshot_ids": list(result.expired_snapshot_ids),
        "deleted_data_files": len(result.deleted_data_files),
        "deleted_changelog_files": len(result.deleted_changelog_files),
        "deleted_metadata_files": len(result.deleted_metadata_files),
    })


def cmd_remove_orphan_files(ctx: Context, args: argparse.Namespace) -> Result:
    table = data_table(ctx, args.table)
    older_than = None
    if args.older_than is not None:
        older_than = time_millis(args.older_than, table.core.env.clock_millis(), "--older-than")
    with progress(f"looking for orphan files of {table.identifier}", ctx.show_progress):
        paths = table.remove_orphan_files(older_than_millis=older_than, dry_run=args.dry_run)
    return Document({"table": table.identifier, "dry_run": args.dry_run, "count": len(paths),
                     "files": Rows(pa.table({"path": pa.array(sorted(paths), pa.string())}))})


def cmd_rollback_to(ctx: Context, args: argparse.Namespace) -> Result:
    table = data_table(ctx, args.table)
    target: int | str = args.snapshot if args.snapshot is not None else args.tag
    deleted = table.rollback_to(target)
    latest = table.latest_snapshot()
    return Document({"table": table.identifier, "target": target,
                     "latest_snapshot_id": None if latest is None else latest.id, "deleted_files": len(deleted)})


def cmd_doctor(ctx: Context, args: argparse.Namespace) -> Result:
    table = data_table(ctx, args.table)
    health = table.doctor()
    damaged = pa.table({
        "path": pa.array([d.path for d in health.damages], pa.string()),
        "kind": pa.array([d.role.value for d in health.damages], pa.string()),
        "reason": pa.array([d.reason for d in health.damages], pa.string()),
        "breaks": pa.array([d.breaks for d in health.damages], pa.string()),
    })
    return Document({"table": table.identifier, "healthy": health.healthy,
                     "latest_snapshot_id": health.latest_id, "readable_snapshot_id": health.readable_id,
                     "checked_snapshots": health.checked_snapshots, "checked_tags": health.checked_tags,
                     "damaged": Rows(damaged)})


def cmd_repair(ctx: Context, args: argparse.Namespace) -> Result:
    table = data_table(ctx, args.table)
    plan = table.repair(dry_run=args.dry_run)
    return Document({"table": table.identifier, "dry_run": args.dry_run, "latest_snapshot_id": plan.target_id,
                     "set_aside": Rows(pa.table({"snapshot": pa.array([p for p, _ in plan.quarantine], pa.string()),
                                                 "moved_to": pa.array([q for _, q in plan.quarantine], pa.string())}))})


def cmd_iceberg(ctx: Context, args: argparse.Namespace) -> Result:
    """The table's Iceberg view (``impl.iceberg.view``); ``--sync`` first brings its Iceberg
    metadata level with the newest Paimon snapshot (the repair after a crash between the two)."""
    # imported here, as every module a command (not --help) needs: paimon-py --help stays light
    from impl.iceberg.view import iceberg_view

    table = data_table(ctx, args.table)
    before: int | None = None
    if args.sync:
        try:
            before = iceberg_view(table.core).current_snapshot_id
        except IcebergMetadataNotExistError:
            pass  # none written yet: the sync below writes it (or, with the option off, says so)
        commit = table.new_batch_write_builder().new_commit()
        try:
            commit.sync_iceberg()
        finally:
            commit.close()
    view = iceberg_view(table.core)
    return Document({
        "table": table.identifier, "storage": view.storage, "metadata_location": view.metadata_location,
        "table_uuid": view.table_uuid, "current_snapshot_id": view.current_snapshot_id,
        "mirrors_paimon_snapshot_id": view.mirrored_paimon_snapshot_id,
        "latest_paimon_snapshot_id": view.latest_paimon_snapshot_id, "behind": view.behind,
        # whether --sync moved the view (it was behind, or had none)
        "synced": bool(args.sync) and before != view.current_snapshot_id,
        "schema": Rows(pa.table({
            "field_id": pa.array([f.field_id for f in view.fields], pa.int32()),
            "name": pa.array([f.name for f in view.fields], pa.string()),
            "type": pa.array([f.type for f in view.fields], pa.string()),
            "required": pa.array([f.required for f in view.fields], pa.bool_())})),
        "partition_spec": Rows(pa.table({
            "field_id": pa.array([p.field_id for p in view.partition_spec], pa.int32()),
            "name": pa.array([p.name for p in view.partition_spec], pa.string()),
            "source_id": pa.array([p.source_id for p in view.partition_spec], pa.int32()),
            "transform": pa.array([p.transform for p in view.partition_spec], pa.string())})),
        "snapshots": Rows(pa.table({
            "snapshot_id": pa.array([s.snapshot_id for s in view.snapshots], pa.int64()),
            "parent_id": pa.array([s.parent_id for s in view.snapshots], pa.int64()),
            "timestamp_utc": pa.array([s.timestamp_ms for s in view.snapshots], pa.int64()).cast(pa.timestamp("ms")),
            "operation": pa.array([s.operation for s in view.snapshots], pa.string()),
            "total_records": pa.array([s.total_records for s in view.snapshots], pa.int64())})),
    })


def cmd_create_tag(ctx: Context, args: argparse.Namespace) -> Result:
    table = data_table(ctx, args.table)
    tag = table.create_tag(args.tag_name, args.snapshot, time_retained=args.time_retained)
    return Document({"table": table.identifier, "tag_name": tag.name, "snapshot_id": tag.snapshot.id})


def cmd_delete_tag(ctx: Context, args: argparse.Namespace) -> Result:
    table = data_table(ctx, args.table)
    deleted = table.delete_tag(args.tag_name)
    return Document({"table": table.identifier, "tag_name": args.tag_name, "deleted_files": len(deleted)})


# ---------------------------------------------------------------------------- sql


# `db.t`, `"db"."t$snapshots"`: qualified names a query may mean as tables
_QUALIFIED = re.compile(r'(?:"((?:[^"]|"")+)"|([A-Za-z_][\w$]*))\s*\.\s*(?:"((?:[^"]|"")+)"|([A-Za-z_][\w$]*))')


def referenced_names(sql: str) -> list[tuple[str, str, bool]]:
    """Every ``a.b`` of ``sql`` as (a, b, quoted): the candidates for ``database.table``
    (column references ``alias.column`` among them, which match no table)."""
    out: list[tuple[str, str, bool]] = []
    for m in _QUALIFIED.finditer(sql):
        qdb, db, qt, t = m.groups()
        name = (qdb.replace('""', '"') if qdb else db, qt.replace('""', '"') if qt else t,
                bool(qdb or qt))
        if name not in out:
            out.append(name)
    return out


def _resolve(catalog: Catalog, names: Iterable[tuple[str, str, bool]]) -> list[tuple[str, str, str]]:
    """(SQL database, SQL table, catalog identifier) for the names that are tables of the catalog.
    Unquoted SQL names are case-insensitive, as in DuckDB."""
    databases = catalog.list_databases()
    tables: dict[str, list[str]] = {}
    out = []
    for db, t, quoted in names:
        real_db = db if db in databases else next((d for d in databases if not quoted and d.lower() == db.lower()), None)
        if real_db is None:
            continue
        base = t.split("$", 1)[0]
        if real_db not in tables:
            tables[real_db] = catalog.list_tables(real_db)
        real_base = base if base in tables[real_db] else next(
            (x for x in tables[real_db] if not quoted and x.lower() == base.lower()), None)
        if real_base is None:
            continue
        out.append((db, t, f"{real_db}.{real_base}{t[len(base):]}"))
    return out


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# `db.name-with-dash`: a Paimon table name SQL reads as a subtraction unless it is quoted
_DASHED = re.compile(r'(?<![\w"$.])([A-Za-z_]\w*)\.([A-Za-z_][\w$]*(?:-[\w$]+)+)')


def quoting_hint(catalog: Catalog, sql: str) -> str:
    """For a query that names a table whose name needs quoting in SQL (a dash) without quotes:
    how to write it, to put before DuckDB's error (empty when there is none)."""
    needed = []
    for m in _DASHED.finditer(sql):
        db, name = m.groups()
        if db in catalog.list_databases() and name.split("$", 1)[0] in catalog.list_tables(db):
            needed.append(f"{db}.{_quote(name)}")
    return f"a table name with a dash is quoted in SQL: write {', '.join(needed)}; DuckDB says: " if needed else ""


def cmd_sql(ctx: Context, args: argparse.Namespace) -> Result:
    duckdb = require("duckdb", "paimon-py sql")
    # imported here, not at the top: impl.duckdb's dataset subclasses pyarrow.dataset.Dataset,
    # whose import pulls in pandas (0.15-0.3 s) that every other command would pay
    from impl.duckdb.dataset import TableDataset
    con = duckdb.connect(database=":memory:")
    try:
        for i, (db, t, identifier) in enumerate(_resolve(ctx.catalog, referenced_names(args.query))):
            table = ctx.catalog.get_table(identifier)
            # a dataset DuckDB pushes the query's filters and columns into (merged rows, read when scanned)
            con.register(f"__paimon_{i}", TableDataset(table))
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(db)}")
            con.execute(f"CREATE OR REPLACE VIEW {_quote(db)}.{_quote(t)} AS SELECT * FROM __paimon_{i}")
        try:
            relation = con.sql(args.query)
            result = relation.to_arrow_table() if relation is not None else pa.table({})
        except duckdb.Error as e:
            if isinstance(e, duckdb.InternalException):
                raise
            raise SqlError(args.query, quoting_hint(ctx.catalog, args.query) + str(e)) from e
    finally:
        con.close()
    return Rows(result)


__all__ = ["Context", "Command", "SYSTEM_TABLE_COMMANDS", "DEFAULT_READ_LIMIT", "cmd_databases", "cmd_tables",
           "cmd_describe", "show_system_table", "cmd_read", "cmd_compact", "cmd_expire_snapshots",
           "cmd_remove_orphan_files", "cmd_rollback_to", "cmd_doctor", "cmd_repair", "cmd_create_tag", "cmd_delete_tag", "cmd_sql",
           "referenced_names", "read_rows", "time_millis"]

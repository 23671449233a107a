"""Filesystem catalog: ``<warehouse>/<db>.db/<table>``, a table existing when it has a schema file.

>>> cat = FileSystemCatalog("/tmp/warehouse")                        # doctest: +SKIP
>>> cat.create_database("db", ignore_if_exists=True)                  # doctest: +SKIP
>>> t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))  # doctest: +SKIP
"""

from __future__ import annotations

import os
import posixpath
from typing import Callable, Mapping, Sequence

import fsspec
import pyarrow as pa

from impl.catalog.base import FILESYSTEM_METASTORE, Catalog, Database, metastore_of
from impl.catalog.options import FILESYSTEM_OPTIONS, METASTORE, WAREHOUSE, check_catalog_keys
from impl.environment import PRODUCTION, Environment
from impl.errors import (
    DatabaseAlreadyExistError,
    DatabaseNotEmptyError,
    DatabaseNotExistError,
    FileIOError,
    InvalidIdentifierError,
    InvalidSchemaError,
    InvalidWarehouseError,
    StaleTableDirectoryError,
    SystemTableReadOnlyError,
    TableAlreadyExistError,
    TableNotExistError,
    UnknownSystemTableError,
    UnsupportedCatalogOptionError,
    UnsupportedTableFeatureError,
)
from impl.fs.file_io import FileIO
from impl.fs.names import check_database, check_table, path_problem
from impl.fs.object_store import check_bucket_reachable, storage_options
from impl.fs.paths import SNAPSHOT_PREFIX, TablePaths
from impl.schema.changes import SchemaChange, apply_changes
from impl.schema.manager import SchemaManager, schema_ids_in
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotCommit, SnapshotManager
from impl.store.core import load_latest_schema
from impl.store.options import warn_unknown_keys
from impl.store.schema import Schema, build_table_schema, validate_for_create
from impl.system import SYSTEM_TABLES, SystemTable
from impl.table.table import FileStoreTable, open_branch

DB_SUFFIX = ".db"
SYSTEM_TABLE_SPLITTER = "$"
BRANCH_SUFFIX_PREFIX = "branch_"


def split_table_path(table_path: str) -> tuple[str, str, str]:
    """``<warehouse>/<db>.db/<table>`` (a local path, made absolute, or an fsspec URL) ->
    (warehouse, database, table); InvalidIdentifierError for another form."""
    if not isinstance(table_path, str) or not table_path.strip():
        raise InvalidIdentifierError(f"table path {table_path!r} is empty")
    path = table_path.strip()
    if "://" not in path:
        path = os.path.abspath(os.path.expanduser(path))
    parent, table = posixpath.split(path.rstrip("/"))
    warehouse, db_dir = posixpath.split(parent)
    if not table or not db_dir.endswith(DB_SUFFIX) or len(db_dir) == len(DB_SUFFIX) or not warehouse:
        raise InvalidIdentifierError(
            f"table path {table_path!r} is not '<warehouse>/<database>.db/<table>'")
    if warehouse.endswith(":/") or warehouse.endswith(":"):  # "memory://db.db/t"
        warehouse = warehouse + "/"
    return warehouse, db_dir[: -len(DB_SUFFIX)], table


def open_table_path(table_path: str, filesystem=None) -> "FileStoreTable | SystemTable":
    """The table at ``<warehouse>/<db>.db/<table>`` (TableNotExistError naming the path when
    there is none there)."""
    warehouse, db, name = split_table_path(table_path)
    try:
        return FileSystemCatalog(warehouse, filesystem=filesystem).get_table(f"{db}.{name}")
    except (TableNotExistError, DatabaseNotExistError):
        err = TableNotExistError(f"{db}.{name}")
        err.args = (f"table {err.identifier!r} does not exist (no Paimon table at {table_path})",)
        raise err from None


def split_system_table(table: str) -> tuple[str, str | None]:
    """``"t$snapshots"`` -> ("t", "snapshots"); ``"t"`` -> ("t", None). ``$`` is reserved for
    system tables, as in Paimon."""
    base, sep, system = table.partition("$")
    if not sep:
        return table, None
    if not base:
        raise InvalidIdentifierError(f"table name {table!r} has no data table before '$'")
    return base, system


def parse_identifier(identifier) -> tuple[str, str]:
    """``"db.table"`` or ``("db", "table")`` into (database, table)."""
    if isinstance(identifier, (tuple, list)) and len(identifier) == 2:
        db, table = identifier
    elif isinstance(identifier, str) and "." in identifier:
        db, table = identifier.split(".", 1)
    else:
        raise InvalidIdentifierError(f"table identifier {identifier!r} is not 'database.table'")
    db = check_database(db)
    table = check_table(table)
    if "." in table:
        raise InvalidIdentifierError(f"table name {table!r} contains '.'", kind="table", name=table)
    return db, table


def check_catalog_options(warehouse: str, options: Mapping[str, str] | None) -> None:
    """Refuse the catalog options this filesystem catalog does not implement, naming the key
    (its options: :data:`impl.catalog.options.FILESYSTEM_OPTIONS`)."""
    check_catalog_keys(options, FILESYSTEM_OPTIONS)
    options = options or {}
    if METASTORE.key_in(options) and metastore_of(options) != FILESYSTEM_METASTORE:
        raise UnsupportedCatalogOptionError(METASTORE.key, options[METASTORE.key],
                                            "a filesystem catalog's metastore is 'filesystem'")
    given = WAREHOUSE.get(options)
    if given is not None and given.rstrip("/") != warehouse.rstrip("/"):
        raise UnsupportedCatalogOptionError(WAREHOUSE.key, given, f"differs from the catalog's warehouse {warehouse!r}")


def schema_to_create(identifier, schema: pa.Schema | Schema | TableSchema, ignore_if_exists: bool, *,
                     primary_keys: Sequence[str] | None, partition_keys: Sequence[str] | None,
                     options: Mapping | None, comment: str | None, time_millis: int) -> tuple[str, str, TableSchema]:
    """``create_table``'s arguments checked and built into (database, table, its schema 0):
    the rules every catalog applies before it writes or sends anything."""
    if not isinstance(ignore_if_exists, bool):
        raise InvalidSchemaError(
            f"create_table's third argument is ignore_if_exists (a bool, pypaimon's order), got "
            f"{ignore_if_exists!r}; pass primary_keys=, partition_keys=, options= by keyword")
    db, name = parse_identifier(identifier)
    if "$" in name:
        raise InvalidIdentifierError(
            f"table name {name!r} contains '$', which is reserved for system tables (db.t$snapshots)")
    if isinstance(schema, TableSchema):  # built by this function before; checked again
        if any(x is not None for x in (primary_keys, partition_keys, options, comment)):
            raise InvalidSchemaError("a built table schema carries its keys, options and comment: pass none beside it")
        if schema.id != 0:
            raise InvalidSchemaError(f"a new table's schema has id 0, got {schema.id}")
        validate_for_create(schema, warn_unknown=False)
        return db, name, schema
    if isinstance(schema, Schema):
        pa_schema = schema.pa_schema
        primary_keys = primary_keys if primary_keys is not None else schema.primary_keys
        partition_keys = partition_keys if partition_keys is not None else schema.partition_keys
        options = {**schema.options, **(options or {})}
        comment = comment if comment is not None else schema.comment
    else:
        pa_schema = schema
    return db, name, build_table_schema(pa_schema, primary_keys=primary_keys, partition_keys=partition_keys,
                                        options=options, comment=comment, time_millis=time_millis)


def resolve_table(db: str, name: str,
                  data_table: Callable[[str], FileStoreTable]) -> FileStoreTable | SystemTable:
    """Table ``name`` of ``db`` from its data table (``data_table(base name)``): the table, a view of
    its branch (``t$branch_b``, BranchNotExistError if absent), or a system table
    (``t$snapshots``, ``t$branch_b$files``). One rule for every catalog."""
    base, system = split_system_table(name)
    table = data_table(base)
    if system is None:
        return table
    if system.startswith(BRANCH_SUFFIX_PREFIX):
        branch, _, rest = system[len(BRANCH_SUFFIX_PREFIX):].partition(SYSTEM_TABLE_SPLITTER)
        table = open_branch(table.file_io, table.path,
                            f"{db}.{base}{SYSTEM_TABLE_SPLITTER}{BRANCH_SUFFIX_PREFIX}{branch}", branch,
                            env=table.env, snapshot_commit=table.core.snapshot_commit)
        if not rest:
            return table
        system = rest
    spec = SYSTEM_TABLES.get(system.lower())
    if spec is None:
        raise UnknownSystemTableError(f"{db}.{name}", system, list(SYSTEM_TABLES))
    return SystemTable(table, spec)


class FileSystemCatalog(Catalog):
    """A filesystem catalog over a local path or any fsspec URL / file system instance.

    Object stores take Paimon's storage options (pypaimon's names, or Java's):

    >>> cat = FileSystemCatalog("s3://bucket/warehouse", options={                 # doctest: +SKIP
    ...     "fs.s3.endpoint": "http://127.0.0.1:9000", "fs.s3.region": "us-east-1",
    ...     "fs.s3.accessKeyId": "...", "fs.s3.accessKeySecret": "..."})

    Without keys, credentials come from the environment (``AWS_ACCESS_KEY_ID``, profiles,
    instance roles). An object-store warehouse is checked on construction: a missing bucket,
    refused credentials or an unreachable endpoint raise :class:`InvalidWarehouseError`.
    """

    def __init__(self, warehouse: str, filesystem: fsspec.AbstractFileSystem | None = None,
                 options: Mapping[str, str] | None = None, *, env: Environment = PRODUCTION):
        """``env``: where the tables' writes take time, ids and randomness from (default: the
        real clock, uuid4 and OS-seeded generators; :meth:`Environment.seeded` for replays)."""
        if not isinstance(warehouse, str) or not warehouse:
            raise InvalidIdentifierError(f"warehouse {warehouse!r} is not a path")
        check_catalog_options(warehouse, options)
        self.file_io, root = FileIO.for_path(warehouse, filesystem, options=storage_options(options))
        if filesystem is None and self.file_io.is_object_store:
            check_bucket_reachable(self.file_io.fs, root)
        elif self.file_io.fs.isfile(root):
            # (on object stores a key and a prefix of the same name can coexist: no check there)
            raise InvalidWarehouseError(f"warehouse {warehouse!r} is a regular file, not a directory")
        self.warehouse = root.rstrip("/") or "/"
        self.location = warehouse  # as given: errors name it so
        self.options = dict(options or {})
        self.env = env

    @classmethod
    def from_location(cls, location: str | None, filesystem: fsspec.AbstractFileSystem | None,
                      options: Mapping[str, str] | None, *, env: Environment = PRODUCTION,
                      warehouse: str | None = None) -> FileSystemCatalog:
        """The catalog over the warehouse ``location`` (``warehouse``, if given, must name the same)."""
        if warehouse is not None and warehouse != location:
            raise UnsupportedCatalogOptionError("warehouse", warehouse, f"differs from the location {location!r}")
        return cls(location, filesystem, options, env=env)  # type: ignore[arg-type]  # None: refused by __init__

    def check_warehouse(self) -> None:
        """InvalidWarehouseError when the warehouse directory does not exist."""
        if not self.file_io.exists(self.warehouse):
            raise InvalidWarehouseError(f"warehouse {self.location!r} does not exist")

    # ------------------------------------------------------------------ paths

    def database_path(self, database: str) -> str:
        return posixpath.join(self.warehouse, check_database(database) + DB_SUFFIX)

    def table_path(self, identifier) -> str:
        db, table = parse_identifier(identifier)
        return posixpath.join(self.database_path(db), table)

    # ------------------------------------------------------------------ databases

    def _database_exists(self, database: str) -> bool:
        return self.file_io.exists(self.database_path(database))

    def create_database(self, name: str, ignore_if_exists: bool = False, properties: Mapping | None = None) -> None:
        path = self.database_path(name)
        if self.file_io.exists(path):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistError(name)
        self.file_io.mkdirs(path)

    def get_database(self, name: str) -> Database:
        """The database ``name`` (DatabaseNotExistError if there is none). A filesystem catalog
        keeps no database properties, so ``options`` is empty, as in pypaimon."""
        if not self._database_exists(name):
            raise DatabaseNotExistError(name)
        return Database(name)

    def list_databases(self) -> list[str]:
        return sorted(n[: -len(DB_SUFFIX)] for n in self.file_io.list_names(self.warehouse)
                      if n.endswith(DB_SUFFIX) and len(n) > len(DB_SUFFIX) and path_problem(n[: -len(DB_SUFFIX)]) is None
                      and self.file_io.fs.isdir(posixpath.join(self.warehouse, n)))

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        if not self._database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotExistError(name)
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(name, tables)
        self._remove_database(name)

    def _remove_database(self, name: str) -> None:
        """Remove database ``name`` and its tables (checks done)."""
        self._remove_tree(self.database_path(name))

    # ------------------------------------------------------------------ tables

    def list_tables(self, database: str) -> list[str]:
        if not self._database_exists(database):
            raise DatabaseNotExistError(database)
        db_path = self.database_path(database)
        out = []
        for n in self.file_io.list_names(db_path):
            if path_problem(n) is not None:  # no table can have it (dot-files included): no path is built
                continue
            if schema_ids_in(self.file_io, TablePaths(posixpath.join(db_path, n)).schema_dir):
                out.append(n)
        return sorted(out)

    def _has_table(self, db: str, name: str) -> bool:
        """Whether data table ``db.name`` exists: it has a schema (a metastore's catalog asks its
        metastore)."""
        return bool(schema_ids_in(self.file_io, TablePaths(self.table_path((db, name))).schema_dir))

    def table_exists(self, identifier) -> bool:
        db, name = parse_identifier(identifier)
        base, system = split_system_table(name)
        if system is not None and system.lower() not in SYSTEM_TABLES:
            return False
        return self._has_table(db, base)

    def create_table(self, identifier, schema: pa.Schema | Schema | TableSchema, ignore_if_exists: bool = False, *,
                     primary_keys: Sequence[str] | None = None, partition_keys: Sequence[str] | None = None,
                     options: Mapping | None = None, comment: str | None = None) -> FileStoreTable:
        """Create a table (schema/schema-0) and return it.

        ``schema`` is a pyarrow schema (keys and options as keyword arguments) or an
        :class:`impl.store.schema.Schema` (pypaimon's ``Schema.from_pyarrow_schema``), or a schema 0
        :func:`schema_to_create` built (exact Paimon types: a catalog server's clients'); the third
        argument is ``ignore_if_exists``, as in pypaimon's ``create_table(identifier, schema,
        ignore_if_exists)``. The database must exist.
        """
        db, name, table_schema = schema_to_create(
            identifier, schema, ignore_if_exists, primary_keys=primary_keys, partition_keys=partition_keys,
            options=options, comment=comment, time_millis=self.env.clock_millis())
        if not self._database_exists(db):
            raise DatabaseNotExistError(db)
        ident = f"{db}.{name}"
        paths = TablePaths(self.table_path((db, name)))
        if schema_ids_in(self.file_io, paths.schema_dir):
            if ignore_if_exists:
                return self._get_data_table(db, name)
            raise TableAlreadyExistError(ident)
        leftover = sorted(n for n in self.file_io.list_names(paths.snapshot_dir) if n.startswith(SNAPSHOT_PREFIX))
        if leftover:
            raise StaleTableDirectoryError(ident, paths.table_path, leftover)
        self.file_io.mkdirs(paths.schema_dir)
        if not self.file_io.try_write_atomic(paths.schema_path(0), table_schema.to_json_bytes()):
            if ignore_if_exists:
                return self._get_data_table(db, name)
            raise TableAlreadyExistError(ident)
        return FileStoreTable(self.file_io, paths.table_path, table_schema, ident, env=self.env,
                              snapshot_commit=self._snapshot_commit(db, name, paths.table_path))

    def get_table(self, identifier) -> FileStoreTable | SystemTable:
        """The table ``db.t``; a view of its branch ``b`` with ``db.t$branch_b`` (Paimon's
        identifier syntax; BranchNotExistError if the branch does not exist); or a read-only
        system table (:class:`impl.system.SystemTable`) ``db.t$snapshots`` (``$schemas``,
        ``$options``, ``$manifests``, ``$files``, ``$partitions``, ``$buckets``, ``$tags``,
        ``$branches``), also of a branch: ``db.t$branch_b$snapshots``."""
        db, name = parse_identifier(identifier)
        return resolve_table(db, name, lambda base: self._get_data_table(db, base))

    def _get_data_table(self, db: str, name: str) -> FileStoreTable:
        ident = f"{db}.{name}"
        paths = TablePaths(self.table_path((db, name)))
        self._table_exists_or_raise(db, name, False)
        return FileStoreTable(self.file_io, paths.table_path, load_latest_schema(self.file_io, paths, ident), ident,
                              env=self.env, snapshot_commit=self._snapshot_commit(db, name, paths.table_path))

    def _snapshot_commit(self, db: str, name: str, table_path: str) -> SnapshotCommit | None:
        """Who publishes the snapshots of table ``db.name`` (None: the snapshot manager's atomic
        create on the file system; a catalog with a lock wraps it)."""
        return None

    def alter_table(self, identifier, changes: Sequence[SchemaChange], ignore_if_not_exists: bool = False) -> None:
        """Apply ``changes`` (a list of :class:`impl.SchemaChange`) as the table's next schema.

        The new ``schema/schema-<id+1>`` is created atomically; when a concurrent alter takes
        that id first, the changes are rebuilt on its schema (and refused if they no longer
        apply). A refused change raises :class:`impl.errors.SchemaChangeError` naming the column
        and the rule (or :class:`InvalidOptionError` for an option value) and writes nothing.
        Files written before keep their schema id and are read by field id.
        """
        db, name = parse_identifier(identifier)
        ident = f"{db}.{name}"
        paths = TablePaths(self.table_path((db, name)))
        if not self._table_exists_or_raise(db, name, ignore_if_not_exists):
            return
        changes = list(changes) if isinstance(changes, (list, tuple)) else changes
        snapshots = SnapshotManager(self.file_io, paths)
        old_options = dict(load_latest_schema(self.file_io, paths, ident).options)

        def build(latest):
            new = apply_changes(latest, changes, has_snapshots=lambda: snapshots.latest_snapshot() is not None,
                                time_millis=self.env.clock_millis())
            # the new schema must be a table one could create (keeping the options it had)
            validate_for_create(new, warn_unknown=False, previous_options=latest.options)
            return new

        new = SchemaManager(self.file_io, paths).commit_changes(build, ident)
        # unknown options are stored as given; warn about the ones this alter set, once
        warn_unknown_keys({k: v for k, v in new.options.items() if k not in old_options})

    def drop_table(self, identifier, ignore_if_not_exists: bool = False) -> None:
        db, name = parse_identifier(identifier)
        if split_system_table(name)[1] is not None:
            raise SystemTableReadOnlyError(f"{db}.{name}", "drop_table")
        if self._table_exists_or_raise(db, name, ignore_if_not_exists):
            self._remove_table(db, name)

    def _remove_table(self, db: str, name: str) -> None:
        """Remove data table ``db.name`` (checks done)."""
        self._remove_tree(self.table_path((db, name)))

    def _table_exists_or_raise(self, db: str, name: str, ignore_if_not_exists: bool) -> bool:
        """Whether data table ``db.name`` exists (it has a schema); if not, False when
        ``ignore_if_not_exists``, else DatabaseNotExistError or TableNotExistError."""
        if self._has_table(db, name):
            return True
        if ignore_if_not_exists:
            return False
        if not self._database_exists(db):
            raise DatabaseNotExistError(db)
        raise TableNotExistError(f"{db}.{name}")

    def rename_table(self, source_identifier, target_identifier, ignore_if_not_exists: bool = False) -> None:
        """Rename table ``db.a`` to ``db2.b`` (the target database must exist, the target table must
        not): its directory is renamed, on a local file system only, where that is one atomic
        step. Handles taken before keep the old path and are refused on commit
        (:class:`StaleTableHandleError`)."""
        src_db, src = parse_identifier(source_identifier)
        dst_db, dst = parse_identifier(target_identifier)
        for ident, name in ((f"{src_db}.{src}", src), (f"{dst_db}.{dst}", dst)):
            if split_system_table(name)[1] is not None:
                raise SystemTableReadOnlyError(ident, "rename_table")
        if self.file_io.is_object_store:
            raise UnsupportedTableFeatureError(
                f"rename_table of {src_db}.{src}: an object store has no atomic directory rename (it would copy "
                "every file while writers may still commit to the old path)")
        if not self._table_exists_or_raise(src_db, src, ignore_if_not_exists):
            return
        source = self.table_path((src_db, src))
        if not self._database_exists(dst_db):
            raise DatabaseNotExistError(dst_db)
        target = self.table_path((dst_db, dst))
        if self.file_io.exists(target):
            raise TableAlreadyExistError(f"{dst_db}.{dst}")
        try:
            self.file_io.fs.mv(source, target, recursive=True)
        except OSError as e:
            raise FileIOError(f"cannot rename {source} to {target}: {e}") from e

    def _remove_tree(self, path: str) -> None:
        try:
            self.file_io.fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise FileIOError(f"cannot delete {path}: {e}") from e

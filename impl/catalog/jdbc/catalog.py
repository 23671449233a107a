"""Paimon's JDBC catalog: databases and tables are rows in a SQLite or PostgreSQL database, in
Paimon Java's JdbcCatalog layout (impl.catalog.jdbc.store), and the tables' schema and data files live
in the warehouse exactly as in the filesystem catalog, so Paimon Java's and pypaimon's JDBC
catalogs over the same database and warehouse see the same tables.

Order of the two sides, so that a failure between them leaves them consistent:

- create_table: the schema file first (under the table's lock when locks are enabled), then the
  table's row and properties in one transaction; if that fails the table directory just made is
  removed (Java and pypaimon write in this order).
- drop_table / drop_database: the rows first (one transaction), then the files; a failure
  between leaves files that no catalog lists, never a listed table without files.
- rename_table: the directory first, then the rows (one transaction); if the rows cannot be
  moved the directory is moved back.
"""

from __future__ import annotations

from typing import Mapping

import fsspec

from impl.catalog.base import JDBC_METASTORE, Database
from impl.catalog.filesystem import FileSystemCatalog, parse_identifier
from impl.catalog.jdbc.lock import LockedSnapshotCommit, LockRules, table_lock
from impl.catalog.jdbc.store import DATABASE_EXISTS_PROPERTY, JdbcStore
from impl.catalog.jdbc.uri import connection_properties, parse_jdbc_uri, redact
from impl.catalog.options import (
    CATALOG_KEY,
    CLIENT_POOL_SIZE,
    JDBC_OPTIONS,
    LOCK_ACQUIRE_TIMEOUT,
    LOCK_CHECK_MAX_SLEEP,
    LOCK_ENABLED,
    LOCK_KEY_MAX_LENGTH,
    SYNC_ALL_PROPERTIES,
    check_catalog_keys,
)
from impl.environment import PRODUCTION, Environment
from impl.errors import (
    DatabaseAlreadyExistError,
    DatabaseNotExistError,
    TableAlreadyExistError,
    TableNotExistError,
    UnsupportedCatalogOptionError,
)
from impl.fs.names import check_database
from impl.fs.object_store import STORAGE_OPTION_PREFIXES
from impl.snapshot.manager import SnapshotCommit
from impl.table.table import FileStoreTable

DB_LOCATION_PROP = "location"
DEFAULT_CONNECT_TIMEOUT_SECONDS = 10.0


def _split_options(uri_or_warehouse: str, warehouse: str | None,
                   options: Mapping[str, str] | None) -> tuple[str, str, dict[str, str]]:
    """(uri, warehouse, options) from the two spellings: ``("jdbc:...", warehouse=...)`` and
    ``(warehouse, options={"metastore": "jdbc", "uri": ...})``; unknown options refused by name."""
    opts = {str(k): v for k, v in (options or {}).items()}
    uri: object
    if isinstance(uri_or_warehouse, str) and uri_or_warehouse.startswith("jdbc:"):
        uri = uri_or_warehouse
        if opts.get("uri", uri) != uri:
            raise UnsupportedCatalogOptionError("uri", redact(str(opts["uri"])), f"differs from {redact(uri)!r}")
        warehouse = warehouse or opts.get("warehouse")
    else:
        uri = opts.get("uri")
        if warehouse is not None and warehouse != uri_or_warehouse:
            raise UnsupportedCatalogOptionError("warehouse", warehouse, f"differs from {uri_or_warehouse!r}")
        warehouse = uri_or_warehouse
    if not isinstance(uri, str) or not uri:
        raise UnsupportedCatalogOptionError("uri", uri, "is required for the JDBC catalog (jdbc:sqlite:<file> or "
                                                        "jdbc:postgresql://<host>/<database>)")
    if not isinstance(warehouse, str) or not warehouse:
        raise UnsupportedCatalogOptionError("warehouse", warehouse, "is required for the JDBC catalog (where the "
                                                                    "tables' files live)")
    if opts.get("warehouse", warehouse) != warehouse:
        raise UnsupportedCatalogOptionError("warehouse", opts["warehouse"], f"differs from {warehouse!r}")
    check_catalog_keys(opts, JDBC_OPTIONS)
    if str(opts.get("metastore", JDBC_METASTORE)).strip().lower() != JDBC_METASTORE:
        raise UnsupportedCatalogOptionError("metastore", opts["metastore"], f"a {uri.split(':')[0]}: URI makes a JDBC "
                                                                          "catalog")
    return uri, warehouse, {**opts, "metastore": JDBC_METASTORE, "uri": uri, "warehouse": warehouse}


class JdbcCatalog(FileSystemCatalog):
    """A catalog whose databases and tables are rows of a JDBC database (Paimon's
    ``metastore`` = ``jdbc``).

    >>> cat = impl.Catalog("jdbc:sqlite:/tmp/cat.db", warehouse="/tmp/wh")  # doctest: +SKIP
    >>> cat = impl.Catalog("/tmp/wh", options={"metastore": "jdbc", "uri": "jdbc:postgresql://127.0.0.1/paimon",
    ...                                        "jdbc.user": "u", "jdbc.password": "p"})  # doctest: +SKIP

    Options as Paimon and pypaimon spell them: ``uri``, ``warehouse``, ``catalog-key`` (default
    ``jdbc``: several catalogs can share one database), ``jdbc.<property>`` (``jdbc.user``,
    ``jdbc.password``, ``jdbc.connectTimeout`` in seconds), ``lock.enabled`` (default: on for an
    object-store warehouse), ``lock-check-max-sleep``, ``lock-acquire-timeout``,
    ``lock-key-max-length``, ``sync-all-properties`` (default true: the table's options and keys
    are mirrored in ``paimon_table_properties``). A database that cannot be reached or refuses
    the login raises :class:`impl.CatalogConnectionError` within the connect timeout; a bad option
    value :class:`impl.InvalidOptionError`, before anything is opened.
    """

    def __init__(self, uri_or_warehouse: str, filesystem: fsspec.AbstractFileSystem | None = None,
                 options: Mapping[str, str] | None = None, *, env: Environment = PRODUCTION,
                 warehouse: str | None = None):
        uri, warehouse, opts = _split_options(uri_or_warehouse, warehouse, options)
        jdbc_uri = parse_jdbc_uri(uri)
        storage = {k: v for k, v in opts.items() if k.startswith(STORAGE_OPTION_PREFIXES)}
        super().__init__(warehouse, filesystem, options=storage, env=env)
        self.options = opts
        self.catalog_key = CATALOG_KEY.get(opts)
        lock_enabled = LOCK_ENABLED.get(opts)
        self.lock_rules = LockRules(
            enabled=self.file_io.is_object_store if lock_enabled is None else lock_enabled,
            check_max_sleep_millis=LOCK_CHECK_MAX_SLEEP.get(opts),
            acquire_timeout_millis=LOCK_ACQUIRE_TIMEOUT.get(opts),
            key_max_length=LOCK_KEY_MAX_LENGTH.get(opts))
        CLIENT_POOL_SIZE.get(opts)  # checked, though one connection serves the catalog
        self.sync_all_properties = SYNC_ALL_PROPERTIES.get(opts)
        self.store = JdbcStore(jdbc_uri, connection_properties(opts), self.catalog_key,
                               connect_timeout_seconds=DEFAULT_CONNECT_TIMEOUT_SECONDS)
        if self.lock_rules.enabled:
            self.store.create_lock_table(self.lock_rules.key_max_length)

    @classmethod
    def from_location(cls, location: str | None, filesystem: fsspec.AbstractFileSystem | None,
                      options: Mapping[str, str] | None, *, env: Environment = PRODUCTION,
                      warehouse: str | None = None) -> JdbcCatalog:
        """``("jdbc:...", warehouse=...)`` or ``(warehouse, options={"uri": "jdbc:...", ...})``."""
        return cls(location, filesystem, options, env=env, warehouse=warehouse)  # type: ignore[arg-type]

    def check_warehouse(self) -> None:
        """Nothing to check: the databases are rows of the catalog's database (reached when the
        catalog was opened) and the warehouse directory appears with the first table."""

    def close(self) -> None:
        """Close the connection to the database."""
        self.store.close()

    # ------------------------------------------------------------------ databases

    def _database_exists(self, database: str) -> bool:
        return self.store.database_exists(check_database(database))

    def create_database(self, name: str, ignore_if_exists: bool = False, properties: Mapping | None = None) -> None:
        """A database is its rows (Java's 'exists' and 'location' properties and the given ones);
        its directory appears with its first table."""
        if self._database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistError(name)
        props = {DATABASE_EXISTS_PROPERTY: "true", **{str(k): str(v) for k, v in (properties or {}).items()}}
        props.setdefault(DB_LOCATION_PROP, self.database_path(name))
        self.store.insert_database(name, props)

    def get_database(self, name: str) -> Database:
        """The database ``name`` and its properties (with ``location``), as Java returns them."""
        if not self._database_exists(name):
            raise DatabaseNotExistError(name)
        props = self.store.database_properties(name)
        props.pop(DATABASE_EXISTS_PROPERTY, None)
        props.setdefault(DB_LOCATION_PROP, self.database_path(name))
        return Database(name, props)

    def list_databases(self) -> list[str]:
        return self.store.list_databases()

    def _remove_database(self, name: str) -> None:
        self.store.delete_database(name)  # the rows first: files left by a failure are listed nowhere
        super()._remove_database(name)

    # ------------------------------------------------------------------ tables

    def _has_table(self, db: str, name: str) -> bool:
        return self.store.table_exists(db, name)

    def _get_data_table(self, db: str, name: str) -> FileStoreTable:
        try:
            return super()._get_data_table(db, name)
        except TableNotExistError as e:
            if self._has_table(db, name):  # listed, but its files are gone
                e.args = (f"table '{db}.{name}' is listed by catalog {self.store.name} but has no schema under "
                          f"{self.table_path((db, name))}",)
            raise

    def _snapshot_commit(self, db: str, name: str, table_path: str) -> SnapshotCommit | None:
        if not self.lock_rules.enabled:
            return None
        return LockedSnapshotCommit(self.file_io, table_path, self.store, self.lock_rules, db, name, self.env)

    def list_tables(self, database: str) -> list[str]:
        if not self._database_exists(database):
            raise DatabaseNotExistError(database)
        return self.store.list_tables(database)

    def create_table(self, identifier, schema, ignore_if_exists: bool = False, **kwargs) -> FileStoreTable:
        """As :meth:`impl.Catalog.create_table`; the table's row is written after its schema."""
        db, name = parse_identifier(identifier)
        if isinstance(ignore_if_exists, bool) and self._has_table(db, name):
            if ignore_if_exists:
                return self._get_data_table(db, name)
            raise TableAlreadyExistError(f"{db}.{name}")
        try:
            with table_lock(self.store, self.lock_rules, db, name, self.env):
                # only the writer of schema-0 writes the row (and removes the directory on failure);
                # a non-bool is passed on for the filesystem catalog to refuse
                strict = False if isinstance(ignore_if_exists, bool) else ignore_if_exists
                table = super().create_table(identifier, schema, strict, **kwargs)
        except TableAlreadyExistError:
            if ignore_if_exists is True and self._has_table(db, name):
                return self._get_data_table(db, name)
            raise
        try:
            self.store.insert_table(db, name, self._properties(table) if self.sync_all_properties else None)
        except BaseException as e:
            self._remove_tree(table.path)
            if self.store.is_integrity_error(e):  # a racing creator's row
                raise TableAlreadyExistError(f"{db}.{name}") from e
            raise
        return table

    def alter_table(self, identifier, changes, ignore_if_not_exists: bool = False) -> None:
        db, name = parse_identifier(identifier)
        if not self._table_exists_or_raise(db, name, ignore_if_not_exists):
            return
        with table_lock(self.store, self.lock_rules, db, name, self.env):
            super().alter_table(identifier, changes, ignore_if_not_exists)
        if self.sync_all_properties:
            self.store.replace_table_properties(db, name, self._properties(self._get_data_table(db, name)))

    def _remove_table(self, db: str, name: str) -> None:
        self.store.delete_table(db, name)  # the rows first, as for a database
        super()._remove_table(db, name)

    def rename_table(self, source_identifier, target_identifier, ignore_if_not_exists: bool = False) -> None:
        source = parse_identifier(source_identifier)
        target = parse_identifier(target_identifier)
        if self._has_table(*target):
            raise TableAlreadyExistError(".".join(target))
        super().rename_table(source_identifier, target_identifier, ignore_if_not_exists)  # checks, moves the directory
        if not self._has_table(*source):
            return  # ignore_if_not_exists and there was none
        try:
            self.store.rename_table(source, target)
        except BaseException:
            self.file_io.fs.mv(self.table_path(target), self.table_path(source), recursive=True)
            raise

    @staticmethod
    def _properties(table: FileStoreTable) -> dict[str, str]:
        """What Java's sync-all-properties mirrors: the options, primary-key, partition and
        bucket-key (the trimmed primary key when no bucket-key is set)."""
        schema = table.schema
        props = dict(schema.options)
        if schema.primary_keys:
            props["primary-key"] = ",".join(schema.primary_keys)
        if schema.partition_keys:
            props["partition"] = ",".join(schema.partition_keys)
        bucket_keys = props.get("bucket-key") or (",".join(schema.trimmed_primary_keys) if schema.primary_keys
                                                  else "")
        if bucket_keys:
            props["bucket-key"] = bucket_keys
        return props


"""The catalog API every catalog has, and the factory that opens one from its options.

:class:`Catalog` is abstract: the filesystem catalog (:class:`impl.catalog.filesystem.FileSystemCatalog`),
the JDBC catalog (:class:`impl.catalog.jdbc.JdbcCatalog`) and the REST catalog client
(:class:`impl.catalog.rest.client.RESTCatalog`) implement it. Which one ``metastore`` names is
looked up in :data:`METASTORES`, an explicit registry (pyiceberg's ``load_catalog`` style): no
catalog registers itself by being imported, and each is imported only when asked for, so a
missing optional dependency of one does not stop the others.

>>> cat = load_catalog({"warehouse": "/tmp/wh"})                            # doctest: +SKIP
>>> cat = Catalog("/tmp/wh")       # the same: Catalog(...) opens the catalog its arguments name  # doctest: +SKIP
>>> isinstance(cat, Catalog)                                                 # doctest: +SKIP
True
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import fsspec
import pyarrow as pa

from impl._optional import require
from impl.environment import PRODUCTION, Environment
from impl.errors import SystemTableReadOnlyError, UnsupportedCatalogOptionError
from impl.schema.changes import SchemaChange
from impl.store.schema import Schema
from impl.system import SystemTable
from impl.table.table import FileStoreTable

METASTORE = "metastore"
FILESYSTEM_METASTORE = "filesystem"
JDBC_METASTORE = "jdbc"
REST_METASTORE = "rest"
JDBC_URI_PREFIX = "jdbc:"


@dataclass(frozen=True)
class CatalogClass:
    """Where a metastore's catalog class lives (imported when that metastore is asked for)."""

    module: str
    name: str


# metastore -> its catalog; the one place a catalog is registered
METASTORES: Mapping[str, CatalogClass] = {
    FILESYSTEM_METASTORE: CatalogClass("impl.catalog.filesystem", "FileSystemCatalog"),
    JDBC_METASTORE: CatalogClass("impl.catalog.jdbc", "JdbcCatalog"),
    REST_METASTORE: CatalogClass("impl.catalog.rest.client", "RESTCatalog"),
}


def metastore_of(options: Mapping[str, object] | None, location: object = None) -> str:
    """The metastore ``options`` name (default ``filesystem``; a ``jdbc:`` location means ``jdbc``),
    refused by name when no catalog implements it."""
    raw = (options or {}).get(METASTORE)
    metastore = FILESYSTEM_METASTORE if raw is None else str(raw).strip().lower()
    if metastore == FILESYSTEM_METASTORE and isinstance(location, str) and location.startswith(JDBC_URI_PREFIX):
        metastore = JDBC_METASTORE
    if metastore not in METASTORES:
        raise UnsupportedCatalogOptionError(METASTORE, raw, f"metastores implemented: {', '.join(METASTORES)}")
    return metastore


def catalog_class(metastore: str) -> type[Catalog]:
    """The catalog class of ``metastore`` (a key of :data:`METASTORES`), imported now."""
    spec = METASTORES[metastore]
    # imported by name: the catalogs sit above this module (they subclass Catalog), and JDBC's
    # PostgreSQL driver is an extra
    module = require(spec.module, f"the {metastore} catalog")
    cls = getattr(module, spec.name)
    assert isinstance(cls, type) and issubclass(cls, Catalog)
    return cls


def open_catalog(location: str | None = None, filesystem: fsspec.AbstractFileSystem | None = None,
                 options: Mapping[str, str] | None = None, *, env: Environment = PRODUCTION,
                 warehouse: str | None = None) -> Catalog:
    """The catalog of ``Catalog(location, filesystem, options, env=..., warehouse=...)``: a
    filesystem catalog over the warehouse ``location``; a JDBC catalog for a ``jdbc:`` location
    (with ``warehouse``) or ``metastore`` = ``jdbc``; a REST catalog client for ``metastore`` =
    ``rest`` (``location``: the catalog's warehouse name at the server)."""
    cls = catalog_class(metastore_of(options, location))
    return cls.from_location(location, filesystem, options, env=env, warehouse=warehouse)


def load_catalog(options: Mapping[str, str], *, env: Environment = PRODUCTION) -> Catalog:
    """The catalog ``options`` describe (pypaimon's ``CatalogFactory.create``): ``warehouse`` is
    required; ``metastore`` (default ``filesystem``, or ``jdbc``, ``rest``) picks the catalog and
    the other options are that catalog's, an unknown one refused by name."""
    options = dict(options)
    warehouse = options.get("warehouse")
    if not isinstance(warehouse, str) or not warehouse:
        raise UnsupportedCatalogOptionError("warehouse", warehouse, "is required (the warehouse path or URL)")
    return catalog_class(metastore_of(options)).from_location(warehouse, None, options, env=env)


class _CatalogType(abc.ABCMeta):
    """``Catalog(...)`` opens the catalog its arguments name (:func:`open_catalog`), as it did when
    the filesystem catalog was the class; a subclass is constructed as any class is."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Catalog:
            return open_catalog(*args, **kwargs)
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True)
class Database:
    """A database of the catalog (pypaimon's ``Database``): its name, options and comment."""

    name: str
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None


class Catalog(metaclass=_CatalogType):
    """Where tables are found by name (pypaimon's ``Catalog``): databases, tables, schema changes.

    Identifiers are ``"db.table"`` or ``("db", "table")``; ``get_table`` also opens a branch
    (``db.t$branch_b``) and system tables (``db.t$snapshots``). ``Catalog(...)`` itself returns the
    implementation its arguments name (:func:`open_catalog`).
    """

    options: dict[str, str]
    env: Environment

    @classmethod
    @abc.abstractmethod
    def from_location(cls, location: str | None, filesystem: fsspec.AbstractFileSystem | None,
                      options: Mapping[str, str] | None, *, env: Environment = PRODUCTION,
                      warehouse: str | None = None) -> Catalog:
        """This catalog from the arguments of ``Catalog(...)`` (see :func:`open_catalog`)."""

    # ------------------------------------------------------------------ databases

    @abc.abstractmethod
    def list_databases(self) -> list[str]:
        """The names of the databases, sorted."""

    @abc.abstractmethod
    def create_database(self, name: str, ignore_if_exists: bool = False, properties: Mapping | None = None) -> None:
        """Create database ``name`` (DatabaseAlreadyExistError unless ``ignore_if_exists``)."""

    @abc.abstractmethod
    def get_database(self, name: str) -> Database:
        """The database ``name`` (DatabaseNotExistError if there is none)."""

    @abc.abstractmethod
    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        """Drop database ``name`` (DatabaseNotEmptyError when it has tables and not ``cascade``)."""

    # ------------------------------------------------------------------ tables

    @abc.abstractmethod
    def list_tables(self, database: str) -> list[str]:
        """The names of the database's tables, sorted."""

    @abc.abstractmethod
    def table_exists(self, identifier) -> bool:
        """Whether table ``identifier`` exists."""

    @abc.abstractmethod
    def create_table(self, identifier, schema: pa.Schema | Schema, ignore_if_exists: bool = False, *,
                     primary_keys: Sequence[str] | None = None, partition_keys: Sequence[str] | None = None,
                     options: Mapping | None = None, comment: str | None = None) -> FileStoreTable:
        """Create a table and return it (pypaimon's argument order; keys and options by keyword)."""

    @abc.abstractmethod
    def get_table(self, identifier) -> FileStoreTable | SystemTable:
        """The table ``db.t``, its branch ``db.t$branch_b`` or its system table ``db.t$snapshots``."""

    @abc.abstractmethod
    def alter_table(self, identifier, changes: Sequence[SchemaChange], ignore_if_not_exists: bool = False) -> None:
        """Apply ``changes`` (:class:`impl.SchemaChange`) as the table's next schema."""

    @abc.abstractmethod
    def drop_table(self, identifier, ignore_if_not_exists: bool = False) -> None:
        """Drop the table and its files."""

    @abc.abstractmethod
    def rename_table(self, source_identifier, target_identifier, ignore_if_not_exists: bool = False) -> None:
        """Rename table ``db.a`` to ``db2.b``."""

    def drop_partitions(self, identifier, partitions: Sequence[Mapping[str, object]]) -> None:
        """Delete every row of the given partitions (specs such as ``{"dt": "2024-01-01"}``, each a
        prefix of the partition keys) in one OVERWRITE snapshot, as pypaimon's and Paimon's
        ``drop_partitions`` do."""
        table = self.get_table(identifier)
        if not isinstance(table, FileStoreTable):
            raise SystemTableReadOnlyError(str(identifier), "drop_partitions")
        commit = table.new_batch_write_builder().new_commit()
        try:
            commit.truncate_partitions(partitions)
        finally:
            commit.close()

    # ------------------------------------------------------------------ the catalog itself

    def check_warehouse(self) -> None:
        """Raise :class:`impl.InvalidWarehouseError` when the catalog has nothing to look at where
        it was opened (a command that creates nothing calls it, so that a mistyped warehouse is an
        error rather than an empty listing). Here: nothing to check (a metastore's catalog was
        reached when it was opened)."""

    def close(self) -> None:
        """Release what the catalog holds open (a database connection); nothing by default."""

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CatalogFactory:
    """pypaimon's entry point: ``CatalogFactory.create({"warehouse": ...})`` is :func:`load_catalog`.

    The options are the filesystem catalog's (``warehouse``, ``metastore`` = ``filesystem``, and
    storage options), ``metastore`` = ``jdbc`` with ``uri`` and the JDBC catalog's options
    (:class:`impl.catalog.jdbc.JdbcCatalog`), or ``metastore`` = ``rest`` with a REST catalog
    server's ``uri``, ``warehouse``, ``token.provider`` = ``bear`` and ``token``
    (:class:`impl.catalog.rest.client.RESTCatalog`); another metastore (``hive``, ...) is refused by
    name with :class:`UnsupportedCatalogOptionError`.
    """

    @staticmethod
    def create(catalog_options: Mapping[str, str], *, env: Environment = PRODUCTION) -> Catalog:
        return load_catalog(catalog_options, env=env)


__all__ = ["Catalog", "CatalogFactory", "CatalogClass", "Database", "METASTORES", "catalog_class", "load_catalog",
           "metastore_of", "open_catalog"]

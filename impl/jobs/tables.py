"""Picklable handles on a table, from its directory ``<warehouse>/<db>.db/<table>``.

An engine (Spark, Ray) ships these to its tasks and to the processes that plan reads and commit
writes; each opens the table itself through ``impl.Catalog`` (nothing unpicklable crosses a process).

Object stores: a :class:`TableRef` carries the storage options (``fs.s3.endpoint``,
``fs.s3.accessKeyId``, ... : every key under ``fs.``, ``s3.``, ``s3a.``) as plain strings, and
every process builds its own s3fs client from them (:func:`open_filesystem`). A client never
crosses a process: its event loop and connections belong to the process that made it.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import impl
from impl.catalog.filesystem import split_table_path as catalog_split_table_path
from impl.catalog.options import JDBC_OPTIONS, JDBC_PROPERTY_PREFIX, REST_HEADER_PREFIX, REST_OPTIONS
from impl.errors import ConnectorError, DatabaseNotExistError, InvalidWarehouseError, TableNotExistError
from impl.fs.object_store import (
    ACCESS_KEY_KEYS,
    CONNECT_TIMEOUT_KEY,
    ENDPOINT_KEYS,
    MAX_ATTEMPTS_KEY,
    PATH_STYLE_KEYS,
    READ_TIMEOUT_KEY,
    REGION_KEYS,
    SECRET_KEY_KEYS,
    SESSION_TOKEN_KEYS,
    STORAGE_OPTION_PREFIXES,
    check_bucket_reachable,
    filesystem_for_url,
    is_object_store_url,
)


def _normalize(path: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise ConnectorError(f"table path {path!r} is empty")
    path = path.strip()
    if "://" not in path:
        path = os.path.abspath(os.path.expanduser(path))
    return path.rstrip("/")


def split_table_path(table_path: str) -> tuple[str, str, str]:
    """``<warehouse>/<db>.db/<table>`` -> (warehouse, database, table)."""
    return catalog_split_table_path(_normalize(table_path))


# Options of the catalog that lists the table (declared in impl.catalog.options: ``metastore`` =
# ``jdbc``, ``uri``, ``catalog-key``, ``lock.enabled``, ``jdbc.user``, ...; a REST catalog's ``uri``,
# ``warehouse`` (the catalog's name at the server), ``token.provider``, ``token``): they travel
# with the storage options, and each process opens the catalog from them.
CATALOG_OPTION_KEYS = JDBC_OPTIONS.keys | REST_OPTIONS.keys
REST_METASTORE = "rest"


def is_catalog_key(key: str) -> bool:
    return key in CATALOG_OPTION_KEYS or key.startswith((JDBC_PROPERTY_PREFIX, REST_HEADER_PREFIX))


def is_storage_key(key: str) -> bool:
    """Storage options (``fs.*``, ``s3.*``, ``s3a.*``) configure the store, and catalog options
    the catalog, never the table: they are not written into the table's schema (which would
    publish credentials to every reader)."""
    return key.startswith(STORAGE_OPTION_PREFIXES) or is_catalog_key(key)


# Spark hands a data source its options with lower-cased keys (a case-insensitive map), so
# ``fs.s3.accessKeyId`` arrives as ``fs.s3.accesskeyid``: the store is opened with the spelling
# the storage layer reads.
_CANONICAL_STORAGE_KEYS = {k.lower(): k for k in (
    *ENDPOINT_KEYS, *ACCESS_KEY_KEYS, *SECRET_KEY_KEYS, *SESSION_TOKEN_KEYS, *REGION_KEYS, *PATH_STYLE_KEYS,
    CONNECT_TIMEOUT_KEY, READ_TIMEOUT_KEY, MAX_ATTEMPTS_KEY)}


def canonical_storage_key(key: str) -> str:
    """``key`` as the storage layer spells it (case restored), or unchanged if unknown."""
    return _CANONICAL_STORAGE_KEYS.get(key.lower(), key)


def split_storage_options(options: Mapping[str, Any] | None) -> tuple[dict[str, str], dict[str, str]]:
    """(storage options, every other option) of ``options``, values as strings."""
    storage: dict[str, str] = {}
    rest: dict[str, str] = {}
    for k, v in (options or {}).items():
        if is_storage_key(str(k)):
            storage[canonical_storage_key(str(k))] = str(v)
        else:
            rest[str(k)] = str(v)
    return storage, rest


# One file system per process and store configuration. Building an s3fs client costs a session
# and a connection pool, and a Spark task opens the table several times. Keyed by the process id
# too: a forked Python worker must not use its parent's client (whose event loop thread did not
# survive the fork).
_STORES: dict[tuple, Any] = {}
_CHECKED_BUCKETS: set[tuple] = set()
_STORES_LOCK = threading.Lock()


def open_filesystem(warehouse: str, storage: tuple[tuple[str, str], ...]):
    """The file system of an object-store warehouse URL for this process (built from ``storage``
    on first use; each bucket checked once). Raises :class:`InvalidWarehouseError` naming the
    options to give when the store cannot be reached."""
    protocol, rest = warehouse.split("://", 1)
    key = (os.getpid(), protocol.lower(), storage)
    bucket_key = (*key, rest.split("/", 1)[0])
    with _STORES_LOCK:
        fs = _STORES.get(key)
        if fs is not None and bucket_key in _CHECKED_BUCKETS:
            return fs
    try:
        if fs is None:
            fs, _ = filesystem_for_url(warehouse, dict(storage))
        check_bucket_reachable(fs, rest.rstrip("/"))
    except InvalidWarehouseError as e:
        given = sorted(k for k, _ in storage)
        hint = ("" if any(k in ENDPOINT_KEYS or k in ACCESS_KEY_KEYS for k in given) else
                "; the connector got no endpoint and no credentials: give them as data source options "
                "(.option('fs.s3.endpoint', ...), .option('fs.s3.accessKeyId', ...), "
                ".option('fs.s3.accessKeySecret', ...), .option('fs.s3.region', ...)) or as options={...} "
                "to write_dataframe / compact")
        raise InvalidWarehouseError(f"{e} (storage options given: {given or 'none'}){hint}") from e
    with _STORES_LOCK:
        _CHECKED_BUCKETS.add(bucket_key)
        return _STORES.setdefault(key, fs)


@dataclass(frozen=True)
class TableRef:
    """Where a table lives and how to open it, in a form every engine process (Spark, Ray) can unpickle.

    ``fs_factory`` (optional, picklable, no arguments) builds the fsspec file system to use
    instead of the one the path implies: tests use it to inject faults in executors.
    ``dynamic_options`` are applied with ``table.copy`` (time travel, write-only, ...).
    ``storage`` holds the storage options each process opens an object store with.
    """

    table_path: str
    warehouse: str
    database: str
    name: str
    fs_factory: Callable | None = None
    dynamic_options: tuple[tuple[str, str], ...] = field(default=())
    storage: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may hold secrets: never printed

    @staticmethod
    def from_path(table_path: str, *, fs_factory: Callable | None = None,
                  dynamic_options: Mapping[str, str] | None = None,
                  storage_options: Mapping[str, str] | None = None) -> "TableRef":
        warehouse, db, name = split_table_path(table_path)
        opts = tuple(sorted((str(k), str(v)) for k, v in (dynamic_options or {}).items()))
        storage, other = split_storage_options(storage_options)
        if other:
            raise ConnectorError(f"{sorted(other)} are not storage options (fs.*, s3.*, s3a.*)")
        return TableRef(_normalize(table_path), warehouse, db, name, fs_factory, opts, tuple(sorted(storage.items())))

    @property
    def identifier(self) -> str:
        return f"{self.database}.{self.name}"

    def with_options(self, options: Mapping[str, str]) -> "TableRef":
        merged = dict(self.dynamic_options)
        merged.update({str(k): str(v) for k, v in options.items()})
        return TableRef(self.table_path, self.warehouse, self.database, self.name, self.fs_factory,
                        tuple(sorted(merged.items())), self.storage)

    @property
    def on_object_store(self) -> bool:
        return self.fs_factory is None and is_object_store_url(self.warehouse)

    def filesystem(self):
        """The fsspec file system of this table: ``fs_factory()``, this process's client of the
        object store (see :func:`open_filesystem`), or the one the path implies."""
        if self.fs_factory is not None:
            return self.fs_factory()
        if self.on_object_store:
            return open_filesystem(self.warehouse, self.storage)
        import fsspec

        fs, _ = fsspec.core.url_to_fs(self.warehouse)
        return fs

    @property
    def through_rest(self) -> bool:
        """Whether a REST catalog server lists this table and publishes its snapshots."""
        return any(k == "metastore" and v.strip().lower() == REST_METASTORE for k, v in self.storage)

    def catalog(self, filesystem=None):
        """The catalog that lists the table: the filesystem catalog of its warehouse, or the one
        its catalog options name (JDBC, REST)."""
        if self.through_rest:
            # the server names the table's path and publishes its snapshots; the data token it
            # hands out opens the store (the path given to Spark must be that path: see table())
            return impl.Catalog(None, options=dict(self.storage))
        options = {k: v for k, v in self.storage if is_catalog_key(k)}
        return impl.Catalog(self.warehouse, filesystem=self._catalog_filesystem(filesystem), options=options or None)

    def paths_catalog(self, filesystem=None):
        """A catalog answering where the table's files live (``warehouse``, ``table_path``): the
        filesystem catalog of its warehouse, whichever catalog lists it."""
        if not self.through_rest:
            return self.catalog(filesystem)
        storage = {k: v for k, v in self.storage if not is_catalog_key(k)}
        return impl.Catalog(self.warehouse, filesystem=self._catalog_filesystem(filesystem), options=storage or None)

    def _catalog_filesystem(self, filesystem):
        """``filesystem``, else the one this process opens for the table when the path alone would
        not do (a fault-injecting factory, an object store's shared client)."""
        if filesystem is None and (self.fs_factory is not None or self.on_object_store):
            return self.filesystem()
        return filesystem

    def exists(self, filesystem=None) -> bool:
        return self.catalog(filesystem).table_exists(self.identifier)

    def table(self, filesystem=None, *, extra_options: Mapping[str, str] | None = None):
        """Open the table (raises TableNotExistError naming it and its path when there is none)."""

        try:
            t = self.catalog(filesystem).get_table(self.identifier)
        except (TableNotExistError, DatabaseNotExistError):
            err = TableNotExistError(self.identifier)
            err.args = (f"table {self.identifier!r} does not exist (no Paimon table at {self.table_path})",)
            raise err from None
        if self.through_rest and _without_protocol(t.path) != _without_protocol(self.table_path):
            raise ConnectorError(
                f"the REST catalog serves {self.identifier} at {t.path}, not at {self.table_path}: give Spark or Ray "
                f"the path the catalog names (the connectors' writers and cleanups work on that path)")
        opts = dict(self.dynamic_options)
        opts.update(extra_options or {})
        return t.copy(opts) if opts else t


def _without_protocol(path: str) -> str:
    return path.split("://", 1)[-1].rstrip("/")


__all__ = ["TableRef", "split_table_path", "split_storage_options", "is_storage_key",
           "open_filesystem", "canonical_storage_key"]

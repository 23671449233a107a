"""A Paimon REST catalog client: :class:`RESTCatalog`, with the public methods of impl's
filesystem :class:`impl.Catalog`, talking Paimon's REST API to a catalog server (impl's own,
``python -m impl.rest``, or any server of the protocol).

Tables come back as impl :class:`FileStoreTable` objects at the path the server names, with the
storage options (data token) the server hands out; their snapshots are published by the server
(``POST .../commit``), while conflict detection and retries run in the client's commit core
as on a file system.

>>> cat = CatalogFactory.create({"metastore": "rest", "uri": "http://127.0.0.1:8181",   # doctest: +SKIP
...                              "warehouse": "wh", "token.provider": "bear", "token": "secret"})
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping, Sequence

import fsspec
import pyarrow as pa

from impl.catalog import options as catalog_options
from impl.catalog.base import Catalog, Database
from impl.catalog.filesystem import parse_identifier, resolve_table, schema_to_create, split_system_table
from impl.catalog.options import REST_OPTIONS, check_catalog_keys
from impl.catalog.rest.protocol import (
    AUTHORIZATION,
    BEAR_TOKEN_PROVIDER,
    BEARER,
    MAX_RESULTS,
    METASTORE,
    PAGE_TOKEN,
    REST_METASTORE,
    TOKEN,
    TOKEN_PROVIDER,
    URI,
    WAREHOUSE,
    BadRequest,
    ErrorBody,
    ResourcePaths,
    ResourceType,
    branch_table_name,
    change_json,
    identifier_json,
    require,
    schema_json,
    string_map,
)
from impl.environment import PRODUCTION, Environment
from impl.errors import (
    CatalogAuthError,
    CatalogRequestError,
    CatalogUnavailableError,
    ColumnAlreadyExistError,
    ColumnNotExistError,
    CommitRefusedError,
    DatabaseAlreadyExistError,
    DatabaseNotEmptyError,
    DatabaseNotExistError,
    SystemTableReadOnlyError,
    TableAlreadyExistError,
    TableNotExistError,
    UnsupportedCatalogOptionError,
    UnsupportedTableFeatureError,
)
from impl.fs.file_io import FileIO
from impl.fs.names import BranchName
from impl.fs.object_store import storage_options
from impl.fs.paths import TablePaths
from impl.schema.changes import SchemaChange
from impl.schema.manager import SchemaManager
from impl.snapshot.records import Snapshot
from impl.store.schema import Schema
from impl.system import SystemTable
from impl.table.table import FileStoreTable

DEFAULT_TIMEOUT_SECONDS = 30.0


class RESTClient:
    """JSON over HTTP to one catalog server, with a bearer token and a timeout per request;
    every failure a typed error naming the catalog's URI."""

    def __init__(self, uri: str, token: str | None, timeout_seconds: float):
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UnsupportedCatalogOptionError(URI, uri, "is not an http:// or https:// URL of a REST catalog server")
        self.uri = uri.rstrip("/")
        self.token = token
        self.timeout_seconds = timeout_seconds

    def call(self, method: str, path: str, what: str, body: Mapping[str, Any] | None = None,
             query: Mapping[str, str] | None = None) -> tuple[dict[str, Any] | None, ErrorBody | None]:
        """(answer, None) on 2xx; (None, error) on an ErrorResponse the caller maps; raises
        CatalogAuthError on 401/403 and CatalogUnavailableError when no HTTP answer came."""
        url = self.uri + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token is not None:
            request.add_header(AUTHORIZATION, BEARER + self.token)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_seconds) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        except (urllib.error.URLError, OSError, socket.timeout) as e:
            reason = getattr(e, "reason", e)
            raise CatalogUnavailableError(self.uri, what, f"no answer within {self.timeout_seconds:g} s ({reason})") from e
        if status in (401, 403):
            error = ErrorBody.from_json(status, raw)
            raise CatalogAuthError(self.uri, what, f"HTTP {status}, credentials refused: {error.message}", status)
        if 200 <= status < 300:
            if not raw:
                return None, None
            try:
                answer = json.loads(raw)
            except ValueError:
                raise CatalogUnavailableError(self.uri, what, f"HTTP {status} with a body that is not JSON: "
                                                              f"{raw[:80]!r}", status) from None
            if not isinstance(answer, dict):
                raise CatalogUnavailableError(self.uri, what, f"HTTP {status} with a JSON {type(answer).__name__}, "
                                                              f"not an object", status)
            return answer, None
        error = ErrorBody.from_json(status, raw)
        if status >= 500 and status != 501 and error.message == raw[:200].decode("utf-8", "replace") and raw:
            raise CatalogUnavailableError(self.uri, what, f"HTTP {status} without an ErrorResponse: {raw[:80]!r}",
                                          status)
        return None, error

    def fail(self, what: str, error: ErrorBody) -> CatalogRequestError | UnsupportedTableFeatureError:
        """The typed error of an ErrorResponse no caller mapped to a catalog error."""
        if error.code == 501:
            return UnsupportedTableFeatureError(f"REST catalog {self.uri}: {what}: {error.message}")
        return CatalogRequestError(self.uri, what, f"HTTP {error.code}: {error.message}", error.code)


def _answer(client: RESTClient, what: str, answer: dict[str, Any] | None) -> dict[str, Any]:
    if answer is None:
        raise CatalogUnavailableError(client.uri, what, "answered no body where Paimon's REST API has one")
    return answer


class RESTSnapshotCommit:
    """Publishes a table's snapshots through the catalog server (``POST .../commit``)."""

    def __init__(self, client: RESTClient, paths: ResourcePaths, database: str, table: str, table_id: str | None):
        self.client = client
        self.paths = paths
        self.database = database
        self.table = table
        self.table_id = table_id

    def commit(self, snapshot: Snapshot, branch: BranchName) -> bool:
        name = branch_table_name(self.table, branch)
        what = f"commit snapshot {snapshot.id} of {self.database}.{name}"
        body = {"tableId": self.table_id, "snapshot": json.loads(snapshot.to_json_bytes()), "statistics": []}
        try:
            answer, error = self.client.call("POST", self.paths.commit(self.database, name), what, body)
        except CatalogAuthError as e:
            raise CommitRefusedError(str(e)) from e
        if error is not None:
            if error.code < 500:
                # a definite refusal: nothing was published (no answer or a server failure leave
                # the outcome unknown, which the commit core resolves before it retries)
                raise CommitRefusedError(f"REST catalog {self.client.uri}: {what} refused: HTTP {error.code}: "
                                         f"{error.message}")
            raise self.client.fail(what, error)
        success = _answer(self.client, what, answer).get("success")
        if not isinstance(success, bool):
            raise CatalogUnavailableError(self.client.uri, what, f"'success' is {success!r}, not a boolean")
        return success


class RESTCatalog(Catalog):
    """A Paimon REST catalog: the :class:`impl.Catalog` API (databases, tables, schema
    changes, system tables ``db.t$snapshots`` and branches ``db.t$branch_b``), through a
    catalog server at ``options["uri"]``.

    Options as Paimon spells them: ``uri``, ``warehouse`` (the catalog's name at the server),
    ``token.provider`` = ``bear`` with ``token``, and storage options (``fs.*``, ``s3.*``) used
    beside the data token the server hands out. Every request ends within ``timeout_seconds``.
    """

    def __init__(self, options: Mapping[str, str], *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
                 env: Environment = PRODUCTION):
        options = {str(k): str(v) for k, v in options.items()}
        check_catalog_keys(options, REST_OPTIONS)
        if options.get(METASTORE, REST_METASTORE).strip().lower() != REST_METASTORE:
            raise UnsupportedCatalogOptionError(METASTORE, options[METASTORE], "a RESTCatalog's metastore is 'rest'")
        uri = options.get(URI)
        if not uri:
            raise UnsupportedCatalogOptionError(URI, uri, "is required (the catalog server's http:// URL)")
        provider = options.get(TOKEN_PROVIDER, BEAR_TOKEN_PROVIDER if TOKEN in options else None)
        if provider is not None and provider != BEAR_TOKEN_PROVIDER:
            raise UnsupportedCatalogOptionError(TOKEN_PROVIDER, provider, f"only {BEAR_TOKEN_PROVIDER!r} (a bearer "
                                                                          "token) is implemented")
        if provider == BEAR_TOKEN_PROVIDER and not options.get(TOKEN):
            raise UnsupportedCatalogOptionError(TOKEN, None, "is required with token.provider=bear")
        self.client = RESTClient(uri, options.get(TOKEN), timeout_seconds)
        self.env = env
        query = {WAREHOUSE: options[WAREHOUSE]} if options.get(WAREHOUSE) else None
        answer, error = self.client.call("GET", ResourcePaths.config(), "get config", query=query)
        if error is not None:
            raise self.client.fail("get config", error)
        config = _answer(self.client, "get config", answer)
        try:
            defaults = string_map(config.get("defaults"), "config defaults")
            overrides = string_map(config.get("overrides"), "config overrides")
        except BadRequest as e:
            raise CatalogUnavailableError(self.client.uri, "get config", str(e)) from None
        self.options = {**defaults, **options, **overrides}
        self.paths = ResourcePaths(catalog_options.PREFIX.get(self.options))
        self.data_token_enabled = catalog_options.DATA_TOKEN_ENABLED.get(self.options)

    @classmethod
    def from_location(cls, location: str | None, filesystem: fsspec.AbstractFileSystem | None,
                      options: Mapping[str, str] | None, *, env: Environment = PRODUCTION,
                      warehouse: str | None = None) -> RESTCatalog:
        """``Catalog(name, options={"metastore": "rest", "uri": ...})``: ``name`` (or ``warehouse``)
        is the catalog's warehouse at the server; the server names the file system, so a
        ``filesystem`` is refused."""
        if filesystem is not None:
            raise UnsupportedCatalogOptionError("filesystem", type(filesystem).__name__,
                                                "a REST catalog's tables live where its server says")
        named = dict(options or {})
        for given in (warehouse, location):
            if given:
                if named.get(WAREHOUSE, given) != given:
                    raise UnsupportedCatalogOptionError(WAREHOUSE, named[WAREHOUSE], f"differs from {given!r}")
                named[WAREHOUSE] = given
        return cls(named, env=env)

    @property
    def uri(self) -> str:
        return self.client.uri

    def _call(self, method: str, path: str, what: str, body: Mapping[str, Any] | None = None,
              query: Mapping[str, str] | None = None, *, database: str | None = None,
              table: str | None = None) -> dict[str, Any] | None:
        """One call; an ErrorResponse raised as impl's typed error for ``database`` / ``table``."""
        answer, error = self.client.call(method, path, what, body, query)
        if error is None:
            return answer
        kind = error.resource_type
        ident = f"{database}.{table}" if table is not None else None
        if error.code == 404:
            if kind is ResourceType.DATABASE or (kind is None and ident is None and database is not None):
                raise DatabaseNotExistError(database or error.resource_name or "?")
            if kind is ResourceType.TABLE and ident is not None:
                raise TableNotExistError(ident)
            if kind is ResourceType.COLUMN:
                raise ColumnNotExistError(error.message, error.resource_name)
        if error.code == 409:
            if kind is ResourceType.DATABASE:
                raise DatabaseAlreadyExistError(database or error.resource_name or "?")
            if kind is ResourceType.TABLE:
                raise TableAlreadyExistError(ident or error.resource_name or "?")
            if kind is ResourceType.COLUMN:
                raise ColumnAlreadyExistError(error.message, error.resource_name)
        raise self.client.fail(what, error)

    def _paged(self, path: str, key: str, what: str, database: str | None = None) -> list[str]:
        out: list[str] = []
        token: str | None = None
        while True:
            page, token = self._page(path, key, what, None, token, database)
            out.extend(page)
            if not token or not page:
                return out

    def _page(self, path: str, key: str, what: str, max_results: int | None, page_token: str | None,
              database: str | None) -> tuple[list[str], str | None]:
        query = {}
        if max_results is not None:
            query[MAX_RESULTS] = str(max_results)
        if page_token:
            query[PAGE_TOKEN] = page_token
        answer = _answer(self.client, what, self._call("GET", path, what, query=query or None, database=database))
        names = answer.get(key) or []
        token = answer.get("nextPageToken")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names) \
                or not (token is None or isinstance(token, str)):
            raise CatalogUnavailableError(self.uri, what, f"{key!r} / 'nextPageToken' are not names")
        return names, token

    # ------------------------------------------------------------------ databases

    def list_databases(self) -> list[str]:
        return self._paged(self.paths.databases(), "databases", "list databases")

    def list_databases_paged(self, max_results: int | None = None,
                             page_token: str | None = None) -> tuple[list[str], str | None]:
        """One page of database names and the token of the next page (None after the last)."""
        return self._page(self.paths.databases(), "databases", "list databases", max_results, page_token, None)

    def create_database(self, name: str, ignore_if_exists: bool = False, properties: Mapping | None = None) -> None:
        parse_identifier((name, "t"))  # the name rules of the filesystem catalog
        body = {"name": name, "options": {str(k): str(v) for k, v in (properties or {}).items()}}
        try:
            self._call("POST", self.paths.databases(), f"create database {name}", body, database=name)
        except DatabaseAlreadyExistError:
            if not ignore_if_exists:
                raise

    def get_database(self, name: str) -> Database:
        answer = _answer(self.client, f"get database {name}",
                         self._call("GET", self.paths.database(name), f"get database {name}", database=name))
        try:
            options = string_map(answer.get("options"), "database options")
        except BadRequest as e:
            raise CatalogUnavailableError(self.uri, f"get database {name}", str(e)) from None
        return Database(name, options, options.get("comment"))

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        try:
            if not cascade:
                tables = self.list_tables(name)
                if tables:
                    raise DatabaseNotEmptyError(name, tables)
            self._call("DELETE", self.paths.database(name), f"drop database {name}", database=name)
        except DatabaseNotExistError:
            if not ignore_if_not_exists:
                raise

    # ------------------------------------------------------------------ tables

    def list_tables(self, database: str) -> list[str]:
        return self._paged(self.paths.tables(database), "tables", f"list tables of {database}", database)

    def list_tables_paged(self, database: str, max_results: int | None = None,
                          page_token: str | None = None) -> tuple[list[str], str | None]:
        """One page of the database's table names and the token of the next page."""
        return self._page(self.paths.tables(database), "tables", f"list tables of {database}", max_results,
                          page_token, database)

    def table_exists(self, identifier) -> bool:
        try:
            self.get_table(identifier)
        except (TableNotExistError, DatabaseNotExistError):
            return False
        return True

    def create_table(self, identifier, schema: pa.Schema | Schema, ignore_if_exists: bool = False, *,
                     primary_keys: Sequence[str] | None = None, partition_keys: Sequence[str] | None = None,
                     options: Mapping | None = None, comment: str | None = None) -> FileStoreTable:
        """Create a table at the server (arguments as :meth:`impl.Catalog.create_table`) and return it."""
        # validated here as the filesystem catalog validates it, before anything is sent
        db, name, table_schema = schema_to_create(
            identifier, schema, ignore_if_exists, primary_keys=primary_keys, partition_keys=partition_keys,
            options=options, comment=comment, time_millis=self.env.clock_millis())
        body = {"identifier": identifier_json(db, name), "schema": schema_json(table_schema)}
        try:
            self._call("POST", self.paths.tables(db), f"create table {db}.{name}", body, database=db, table=name)
        except TableAlreadyExistError:
            if not ignore_if_exists:
                raise
        return self._get_data_table(db, name)

    def get_table(self, identifier) -> FileStoreTable | SystemTable:
        """The table ``db.t`` (a branch with ``db.t$branch_b``, a system table with ``db.t$snapshots``)."""
        db, name = parse_identifier(identifier)
        return resolve_table(db, name, lambda base: self._get_data_table(db, base))

    def _get_data_table(self, db: str, name: str) -> FileStoreTable:
        what = f"get table {db}.{name}"
        answer = _answer(self.client, what, self._call("GET", self.paths.table(db, name), what, database=db,
                                                       table=name))
        try:
            path = require(answer, "path", str, what)
            schema_id = require(answer, "schemaId", int, what)
            table_id = answer.get("id") if isinstance(answer.get("id"), str) else None
        except BadRequest as e:
            raise CatalogUnavailableError(self.uri, what, str(e)) from None
        options = storage_options(self.options)
        if self.data_token_enabled:
            options.update(self._data_token(db, name))
        file_io, table_path = FileIO.for_path(path, options=options)
        schema = SchemaManager(file_io, TablePaths(table_path)).schema(schema_id)
        commit = RESTSnapshotCommit(self.client, self.paths, db, name, table_id)
        return FileStoreTable(file_io, table_path, schema, f"{db}.{name}", env=self.env, snapshot_commit=commit)

    def _data_token(self, db: str, name: str) -> dict[str, str]:
        what = f"get data token of {db}.{name}"
        answer = _answer(self.client, what, self._call("GET", self.paths.token(db, name), what, database=db,
                                                       table=name))
        try:
            return string_map(answer.get("token"), "data token")
        except BadRequest as e:
            raise CatalogUnavailableError(self.uri, what, str(e)) from None

    def alter_table(self, identifier, changes: Sequence[SchemaChange], ignore_if_not_exists: bool = False) -> None:
        """Apply ``changes`` at the server (it refuses a change that does not apply, writing nothing)."""
        db, name = parse_identifier(identifier)
        body = {"changes": [change_json(c) for c in changes]}
        try:
            self._call("POST", self.paths.table(db, name), f"alter table {db}.{name}", body, database=db, table=name)
        except TableNotExistError:
            if not ignore_if_not_exists:
                raise

    def drop_table(self, identifier, ignore_if_not_exists: bool = False) -> None:
        db, name = parse_identifier(identifier)
        if split_system_table(name)[1] is not None:
            raise SystemTableReadOnlyError(f"{db}.{name}", "drop_table")
        try:
            self._call("DELETE", self.paths.table(db, name), f"drop table {db}.{name}", database=db, table=name)
        except (TableNotExistError, DatabaseNotExistError):
            if not ignore_if_not_exists:
                raise

    def rename_table(self, source_identifier, target_identifier, ignore_if_not_exists: bool = False) -> None:
        src_db, src = parse_identifier(source_identifier)
        dst_db, dst = parse_identifier(target_identifier)
        body = {"source": identifier_json(src_db, src), "destination": identifier_json(dst_db, dst)}
        try:
            self._call("POST", self.paths.rename_table(), f"rename table {src_db}.{src} to {dst_db}.{dst}", body,
                       database=src_db, table=src)
        except TableNotExistError:
            if not ignore_if_not_exists:
                raise


__all__ = ["RESTCatalog", "RESTClient", "RESTSnapshotCommit"]

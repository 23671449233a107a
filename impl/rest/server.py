"""A Paimon REST catalog server over a warehouse on local disk or S3, through impl's filesystem
catalog (the HTTP shell of :mod:`impl.rest.http_server`: one thread per connection, with the
limits, deadlines, framing rules and TLS an exposed port needs).

It answers Paimon's REST API (``rest-catalog-open-api.yaml``): config, databases, tables,
schema changes, the latest snapshot, data tokens, and commits. A commit publishes the client's
snapshot the way impl's commit core does on a file system (an atomic create of
``snapshot-<id>``, then the LATEST hint), so the client's own conflict detection and retries run
on the answer ``success: false`` for a lost race. A snapshot is published only when it continues
the latest one (id = latest + 1, its base manifest list holding exactly the files live in the
latest, its record count the latest's plus its delta) and every metadata file it names exists, so
a malformed, stale or replayed commit never leaves a gap, a dangling snapshot or lost rows.

Authentication is required: a server without a token must be asked for with ``no_auth=True``.
Data tokens carry no secret of the server's unless credential vending is configured
(:mod:`impl.rest.credentials`).

>>> server = RESTCatalogServer("/tmp/warehouse", token="secret").start()   # doctest: +SKIP
>>> server.uri                                                           # doctest: +SKIP
'http://127.0.0.1:41234'
"""

from __future__ import annotations

import collections
import dataclasses
import errno
import hmac
import json
import logging
import posixpath
import threading
import uuid
from typing import Any, Callable, Mapping

import pyarrow as pa

from impl.catalog.filesystem import FileSystemCatalog, schema_to_create
from impl.catalog.rest.protocol import (
    AUTHORIZATION,
    BEARER,
    BRANCH_SEPARATOR,
    DATA_TOKEN_ENABLED,
    DEFAULT_PREFIX,
    MAX_RESULTS,
    PAGE_TOKEN,
    PREFIX,
    WAREHOUSE,
    BadRequest,
    ErrorBody,
    ResourcePaths,
    ResourceType,
    check_name_length,
    page,
    parse_body,
    parse_change_json,
    parse_identifier_json,
    parse_schema_json,
    require,
    schema_json,
    split_path,
    string_map,
)
from impl.data.types import DataType, to_arrow
from impl.environment import wall_clock_millis
from impl.errors import (
    ColumnAlreadyExistError,
    ColumnNotExistError,
    CorruptMetadataError,
    DatabaseAlreadyExistError,
    DatabaseNotEmptyError,
    DatabaseNotExistError,
    InvalidIdentifierError,
    InvalidSchemaError,
    PaimonError,
    SchemaChangeError,
    SystemTableReadOnlyError,
    TableAlreadyExistError,
    TableError,
    TableNotExistError,
    TypeParseError,
    UnsupportedCatalogOptionError,
    UnsupportedTableFeatureError,
)
from impl.fs.file_io import FileIO
from impl.fs.names import check_branch
from impl.fs.object_store import storage_options
from impl.fs.paths import LATEST_HINT, MAIN_BRANCH, TablePaths
from impl.manifest.manifest_file import ManifestList
from impl.manifest.records import ManifestFileMeta
from impl.rest.credentials import CredentialVending, CredentialVendor
from impl.rest.http_server import HTTPShell, Reply, ServerLimits, error_reply, tls_context
from impl.schema.manager import SchemaManager, schema_ids_in
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import Snapshot
from impl.store.schema import arrow_schema
from impl.table.table import FileStoreTable

log = logging.getLogger(__name__)

# the lifetime of an empty data token (no credential vending): it holds nothing that expires, so
# the figure only tells clients when to ask again (pypaimon refreshes a token with less than an
# hour left, so an hour would mean a refresh per file access)
TOKEN_LIFETIME_MS = 24 * 3_600_000
DEFAULT_LIMITS = ServerLimits()


class CatalogService:
    """The REST API over one warehouse: ``handle(method, path, query, headers, body)`` -> Reply.
    No socket here (the HTTP server below is a thin shell around it)."""

    def __init__(self, warehouse: str, *, options: Mapping[str, str] | None = None, token: str | None = None,
                 prefix: str = DEFAULT_PREFIX, vending: CredentialVending | None = None):
        self.warehouse_url = warehouse.rstrip("/") or "/"
        if "://" not in self.warehouse_url:
            self.warehouse_url = posixpath.abspath(self.warehouse_url)
        self.storage_options = storage_options(options)
        self.catalog = FileSystemCatalog(self.warehouse_url, options=self.storage_options)
        # the warehouse's root as the file system names it (a local path, or bucket/key on S3):
        # cut from error messages, which must not tell a client where the server keeps its files
        self._roots = sorted({self.warehouse_url, self.catalog.warehouse}, key=len, reverse=True)
        self.token = token
        self.vendor = CredentialVendor(vending, self.storage_options) if vending is not None else None
        self.paths = ResourcePaths(prefix)
        self.prefix = prefix
        self._probed: set[str] = set()
        self._probe_lock = threading.Lock()
        self._lists: dict[str, ManifestList] = {}
        # commit requests answered, by outcome ("published" / "lost" a race / "stale": not built on the
        # latest snapshot): for tests and benchmarks
        self.commit_counts: collections.Counter[str] = collections.Counter()

    # ------------------------------------------------------------------ dispatch

    def authorize(self, headers: Mapping[str, str]) -> Reply | None:
        """None when ``headers`` (lower-case names) carry the bearer token (or none is set); the
        401 answer otherwise. The HTTP shell calls it before reading a body."""
        if self.token is None:
            return None
        given = headers.get(AUTHORIZATION.lower(), "")
        if hmac.compare_digest(given.encode(), (BEARER + self.token).encode()):
            return None
        return error_reply(ErrorBody(401, "missing or refused bearer token"))

    def handle(self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str],
               body: bytes) -> Reply:
        refusal = self.authorize(headers)
        if refusal is not None:
            return refusal
        try:
            return self._route(method, path, query, body)
        except Exception as e:  # noqa: BLE001 - every failure is answered with an ErrorResponse
            error = error_body(e)
            return error_reply(dataclasses.replace(error, message=self.scrub(error.message)))

    def scrub(self, message: str) -> str:
        """``message`` with the warehouse's root written ``<warehouse>``."""
        for root in self._roots:
            if root and root != "/":
                message = message.replace(root, "<warehouse>")
        return message

    def _route(self, method: str, path: str, query: Mapping[str, str], body: bytes) -> Reply:
        if path == ResourcePaths.config():
            return self._only(method, "GET", lambda: self.config())
        segments = split_path(path, self.prefix)
        if segments is None or not segments or "" in segments:
            return error_reply(ErrorBody(404, f"no resource at {path}"))
        n = len(segments)
        if segments == ["tables", "rename"]:
            return self._only(method, "POST", lambda: self.rename_table(parse_body(body, "rename table")))
        if segments[0] != "databases":
            return error_reply(ErrorBody(404, f"no resource at {path}"))
        if n == 1:
            if method == "GET":
                return self.list_databases(query)
            return self._only(method, "POST", lambda: self.create_database(parse_body(body, "create database")))
        db = check_name_length(segments[1], "database")
        if n == 2:
            handlers: dict[str, Callable[[], Reply]] = {
                "GET": lambda: self.get_database(db), "DELETE": lambda: self.drop_database(db),
                "POST": lambda: self.alter_database(db)}
            return self._dispatch(method, handlers)
        if segments[2] != "tables":
            return error_reply(ErrorBody(404, f"no resource at {path}"))
        if n == 3:
            if method == "GET":
                return self.list_tables(db, query)
            return self._only(method, "POST", lambda: self.create_table(db, parse_body(body, "create table")))
        table = check_name_length(segments[3], "table")
        if n == 4:
            handlers = {"GET": lambda: self.get_table(db, table), "DELETE": lambda: self.drop_table(db, table),
                        "POST": lambda: self.alter_table(db, table, parse_body(body, "alter table"))}
            return self._dispatch(method, handlers)
        if n == 5 and segments[4] == "commit":
            return self._only(method, "POST", lambda: self.commit(db, table, parse_body(body, "commit")))
        if n == 5 and segments[4] == "snapshot":
            return self._only(method, "GET", lambda: self.latest_snapshot(db, table))
        if n == 5 and segments[4] == "token":
            return self._only(method, "GET", lambda: self.data_token(db, table))
        return error_reply(ErrorBody(404, f"no resource at {path}"))

    @staticmethod
    def _only(method: str, allowed: str, handler: Callable[[], Reply]) -> Reply:
        return CatalogService._dispatch(method, {allowed: handler})

    @staticmethod
    def _dispatch(method: str, handlers: Mapping[str, Callable[[], Reply]]) -> Reply:
        handler = handlers.get(method)
        if handler is None:
            return error_reply(ErrorBody(405, f"method {method} is not one of {sorted(handlers)} here"))
        return handler()

    # ------------------------------------------------------------------ config

    def config(self) -> Reply:
        defaults = {PREFIX: self.prefix, WAREHOUSE: self.warehouse_url}
        if self.vendor is not None:
            defaults[DATA_TOKEN_ENABLED] = "true"
        return Reply(200, {"defaults": defaults, "overrides": {}})

    # ------------------------------------------------------------------ databases

    def list_databases(self, query: Mapping[str, str]) -> Reply:
        names, token = page(self.catalog.list_databases(), query.get(MAX_RESULTS), query.get(PAGE_TOKEN))
        return Reply(200, {"databases": names, "nextPageToken": token})

    def create_database(self, body: dict[str, Any]) -> Reply:
        name = check_name_length(require(body, "name", str, "create database"), "create database")
        options = string_map(body.get("options"), "create database options")
        if options:
            # the filesystem warehouse keeps no database properties: refused, not dropped silently
            raise UnsupportedTableFeatureError(
                f"database {name!r}: a filesystem warehouse keeps no database options (got {sorted(options)})")
        self.catalog.create_database(name)
        return Reply(200, {"id": name, "name": name, "options": {}})

    def get_database(self, name: str) -> Reply:
        self.catalog.get_database(name)
        return Reply(200, {"id": name, "name": name, "location": self._url(self.catalog.database_path(name)),
                           "options": {}})

    def drop_database(self, name: str) -> Reply:
        # the client checks emptiness before (Paimon's RESTCatalog does): the server drops
        self.catalog.drop_database(name, cascade=True)
        return Reply(200)

    def alter_database(self, name: str) -> Reply:
        self.catalog.get_database(name)
        raise UnsupportedTableFeatureError(f"alter database {name!r}: a filesystem warehouse keeps no database options")

    # ------------------------------------------------------------------ tables

    def list_tables(self, db: str, query: Mapping[str, str]) -> Reply:
        names, token = page(self.catalog.list_tables(db), query.get(MAX_RESULTS), query.get(PAGE_TOKEN))
        return Reply(200, {"tables": names, "nextPageToken": token})

    def create_table(self, db: str, body: dict[str, Any]) -> Reply:
        body_db, name = parse_identifier_json(body.get("identifier"), "create table identifier")
        if body_db != db:
            raise BadRequest(f"create table: identifier's database {body_db!r} is not the path's {db!r}")
        check_name_length(name, "create table")
        schema = parse_schema_json(body.get("schema"), "create table schema")
        # checked and given field ids by the rules of impl's create_table, through arrow; then
        # the exact types arrow cannot carry (VARCHAR(10), CHAR(3), BINARY(8)) are put back
        try:
            pa_schema = arrow_schema(TableSchema(id=0, fields=schema.fields))
        except (TypeParseError, pa.ArrowException) as e:
            raise InvalidSchemaError(f"create table {db}.{name}: {e}") from e
        _, _, built = schema_to_create(
            (db, name), pa_schema, False, primary_keys=schema.primary_keys or None,
            partition_keys=schema.partition_keys or None, options=schema.options, comment=schema.comment,
            time_millis=wall_clock_millis())
        asked = {f.name: f.type for f in schema.fields}
        fields = tuple(dataclasses.replace(f, type=exact_type(asked[f.name], f.type)) for f in built.fields)
        self.catalog.create_table((db, name), dataclasses.replace(built, fields=fields))
        return Reply(200)

    def _table(self, db: str, name: str, operation: str | None = None) -> FileStoreTable:
        """The data table ``db.name``; ``operation`` (a change) on a system table ``t$snapshots``
        is SystemTableReadOnlyError, reading one TableNotExistError (read through the data table)."""
        if "$" in name:
            if operation is not None and BRANCH_SEPARATOR not in name:
                raise SystemTableReadOnlyError(f"{db}.{name}", operation)
            raise TableNotExistError(f"{db}.{name}")
        table = self.catalog.get_table(f"{db}.{name}")
        assert isinstance(table, FileStoreTable)
        return table

    def get_table(self, db: str, name: str) -> Reply:
        table = self._table(db, name)
        first = self._first_schema(table.path)
        return Reply(200, {
            "id": self._uuid(table.path, first), "name": name, "path": self._url(table.path),
            "isExternal": False, "schemaId": table.schema.id, "schema": schema_json(table.schema),
            "owner": "impl.rest", "createdAt": first.time_millis, "createdBy": "impl.rest",
            "updatedAt": table.schema.time_millis, "updatedBy": "impl.rest"})

    def _first_schema(self, table_path: str) -> TableSchema:
        """The table's oldest schema: schema 0 (one GET), else the oldest listed. Not cached: a
        table dropped and re-created under the same name has a new one."""
        file_io = self.catalog.file_io
        paths = TablePaths(table_path)
        try:
            return TableSchema.from_json_bytes(file_io.read_bytes(paths.schema_path(0)), paths.schema_path(0))
        except FileNotFoundError:
            manager = SchemaManager(file_io, paths)
            return manager.schema(min(manager.list_ids(), default=0))

    def _uuid(self, table_path: str, first: TableSchema) -> str:
        return table_uuid(self._url(table_path), first)

    def drop_table(self, db: str, name: str) -> Reply:
        self._table(db, name, "drop table")
        self.catalog.drop_table(f"{db}.{name}")
        return Reply(200)

    def alter_table(self, db: str, name: str, body: dict[str, Any]) -> Reply:
        raw = require(body, "changes", list, "alter table")
        changes = [parse_change_json(c, f"alter table change {i}") for i, c in enumerate(raw)]
        self._table(db, name, "alter table")
        self.catalog.alter_table(f"{db}.{name}", changes)
        return Reply(200)

    def rename_table(self, body: dict[str, Any]) -> Reply:
        src = parse_identifier_json(body.get("source"), "rename table source")
        dst = parse_identifier_json(body.get("destination"), "rename table destination")
        check_name_length(dst[0], "rename table destination")
        check_name_length(dst[1], "rename table destination")
        self.catalog.rename_table(src, dst)
        return Reply(200)

    # ------------------------------------------------------------------ snapshots

    def _table_paths(self, db: str, name: str) -> TablePaths:
        """The paths of table ``name`` (``t`` or its branch ``t$branch_b``), without I/O. The
        branch name is checked by the name rule (impl.fs.names: 400 for ``b/../..``); the path
        was URL-decoded once, so a ``%`` left in it is a literal character of the name."""
        base, sep, branch = name.partition(BRANCH_SEPARATOR)
        if "$" in base or (sep and not branch):
            raise TableNotExistError(f"{db}.{name}")
        return TablePaths(self.catalog.table_path((db, base)), branch=check_branch(branch) if sep else MAIN_BRANCH)

    def _located(self, db: str, name: str) -> TablePaths:
        """The paths of table ``name`` (``t`` or its branch ``t$branch_b``); TableNotExistError /
        DatabaseNotExistError when there is no such table. Lighter than loading the table."""
        paths = self._table_paths(db, name)
        file_io = self.catalog.file_io
        main_ids = schema_ids_in(file_io, TablePaths(paths.table_path).schema_dir)
        if not main_ids:
            self.catalog.get_database(db)  # DatabaseNotExistError names the missing database
            raise TableNotExistError(f"{db}.{name.partition(BRANCH_SEPARATOR)[0]}")
        if paths.branch != MAIN_BRANCH and not schema_ids_in(file_io, paths.schema_dir):
            raise TableNotExistError(f"{db}.{name}")
        return paths

    def latest_snapshot(self, db: str, name: str) -> Reply:
        paths = self._located(db, name)
        file_io = self.catalog.file_io
        manager = SnapshotManager(file_io, paths)
        latest = manager.latest_snapshot()
        if latest is None:
            return error_reply(ErrorBody(404, f"table {db}.{name} has no snapshot", ResourceType.SNAPSHOT, name))
        raw = json.loads(file_io.read_bytes(manager.snapshot_path(latest.id)))
        # a GetTableSnapshotResponse holds a TableSnapshot: the snapshot and table statistics
        # (file statistics are kept by no filesystem warehouse, and not computed per read)
        return Reply(200, {"snapshot": {"snapshot": raw, "recordCount": latest.total_record_count or 0,
                                        "fileSizeInBytes": 0, "fileCount": 0,
                                        "lastFileCreationTime": latest.time_millis}})

    def commit(self, db: str, name: str, body: dict[str, Any]) -> Reply:
        """Publish the body's snapshot on the latest one; ``success: false`` when another writer
        took its id or the snapshot does not continue the latest (a stale or replayed body: the
        client rebuilds it on the new latest and retries)."""
        raw = require(body, "snapshot", dict, "commit")
        table_id = body.get("tableId")
        if table_id is not None and not isinstance(table_id, str):
            raise BadRequest("commit: 'tableId' must be a string")
        statistics = body.get("statistics")
        if statistics is not None and not isinstance(statistics, list):
            raise BadRequest("commit: 'statistics' must be a list")
        if "$" in name.partition(BRANCH_SEPARATOR)[0]:
            raise SystemTableReadOnlyError(f"{db}.{name}", "commit")
        paths = self._table_paths(db, name)
        data = json.dumps(raw, indent=2).encode()
        try:
            snapshot = Snapshot.from_json_bytes(data, "commit request snapshot")
        except CorruptMetadataError as e:
            raise BadRequest(f"commit: {e.reason}") from None
        file_io = self.catalog.file_io
        # the table (or branch) exists and has the snapshot's schema: one HEAD on the usual path
        if snapshot.schema_id < 0 or not file_io.file_exists(paths.schema_path(snapshot.schema_id)):
            self._located(db, name)  # 404 when the database, table or branch does not exist
            raise BadRequest(f"commit: snapshot names schema {snapshot.schema_id}, which the table does not have")
        if table_id is not None and table_id != self._uuid(paths.table_path, self._first_schema(paths.table_path)):
            raise TableNotExistError(f"{db}.{name} with id {table_id}")  # dropped and re-created since
        self._check_references(file_io, paths, snapshot)
        manager = SnapshotManager(file_io, paths)
        latest = manager.latest_snapshot()
        latest_id = latest.id if latest is not None else None
        if latest_id is not None and snapshot.id <= latest_id:
            self._count("lost")
            return Reply(200, {"success": False})
        if snapshot.id != (latest_id or 0) + 1:
            raise BadRequest(f"commit: snapshot {snapshot.id} of {db}.{name} would leave a gap after "
                             f"{'no snapshot' if latest_id is None else f'snapshot {latest_id}'}")
        lists = self._manifest_lists(paths)
        try:
            new_base = lists.read_base_manifests(snapshot)
        except CorruptMetadataError as e:
            raise BadRequest(f"commit: snapshot {snapshot.id}'s base manifest list: {e.reason}") from None
        problem = continuity_problem(snapshot, latest, live_file_count(new_base),
                                     live_file_count(lists.read_data_manifests(latest)) if latest is not None else 0)
        if problem is not None:
            # a replayed or stale body (built on an older snapshot): publishing it would drop the
            # files committed since; refused like a lost race, so a client rebuilds on the latest
            log.info("commit to %s.%s refused: %s", db, name, problem)
            self._count("stale")
            return Reply(200, {"success": False})
        self._probe_atomic_create(paths)
        published = file_io.try_write_atomic(paths.snapshot_path(snapshot.id), data)
        if published:
            manager.commit_hint(LATEST_HINT, snapshot.id)
        self._count("published" if published else "lost")
        return Reply(200, {"success": published})

    def _manifest_lists(self, paths: TablePaths) -> ManifestList:
        """The manifest-list reader of one table (branch), kept for the tables committed to last:
        lists are immutable under unique names, so the base list a commit checks is, one commit
        later, the latest's and read from memory."""
        key = paths.manifest_dir
        with self._probe_lock:
            lists = self._lists.pop(key, None) or ManifestList(self.catalog.file_io, paths, cache_max_lists=8)
            self._lists[key] = lists  # most recent last
            while len(self._lists) > 64:
                self._lists.pop(next(iter(self._lists)))
        return lists

    def _count(self, outcome: str) -> None:
        with self._probe_lock:
            self.commit_counts[outcome] += 1

    @staticmethod
    def _check_references(file_io: FileIO, paths: TablePaths, snapshot: Snapshot) -> None:
        """Every manifest the snapshot names exists (else it would dangle): BadRequest."""
        if snapshot.id < 1:
            raise BadRequest(f"commit: snapshot id {snapshot.id} is not positive")
        names = [snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.changelog_manifest_list,
                 snapshot.index_manifest]
        for name in names:
            if name is None:
                continue
            if not name or "/" in name or name.startswith("."):
                raise BadRequest(f"commit: manifest name {name!r} is not a file name")
            if not file_io.file_exists(paths.manifest_path(name)):
                raise BadRequest(f"commit: snapshot names manifest {name!r}, which does not exist")

    def _probe_atomic_create(self, paths: TablePaths) -> None:
        with self._probe_lock:
            if paths.snapshot_dir in self._probed:
                return
            self.catalog.file_io.ensure_atomic_create(paths.snapshot_dir)
            self._probed.add(paths.snapshot_dir)

    def data_token(self, db: str, name: str) -> Reply:
        """An empty token (clients use their own storage credentials), or with credential vending
        configured short-lived credentials scoped to the table's prefix."""
        paths = self._located(db, name)
        if self.vendor is None:
            return Reply(200, {"token": {}, "expiresAtMillis": wall_clock_millis() + TOKEN_LIFETIME_MS})
        token, expires = self.vendor.vend(self._url(paths.table_path), f"impl-rest-{db}.{name}")
        return Reply(200, {"token": token, "expiresAtMillis": expires})

    def _url(self, path: str) -> str:
        """A path of the catalog's file system as clients address it (with the store's scheme)."""
        if "://" not in self.warehouse_url:
            return path
        scheme = self.warehouse_url.split("://", 1)[0]
        return f"{scheme}://{path}"


def exact_type(asked: DataType, built: DataType) -> DataType:
    """The type a client asked for where it is the built one but for a length arrow cannot carry
    (an atomic type mapped to the same arrow type), with the built nullability (keys are NOT NULL)."""
    if asked.children or built.children or asked.root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        return built
    try:
        same = to_arrow(asked) == to_arrow(built)
    except TypeParseError:
        return built
    return asked.copy(built.nullable) if same else built


def live_file_count(manifests: list[ManifestFileMeta]) -> int:
    """Data files live in a set of manifests: each ADD entry counts one, each DELETE minus one."""
    return sum(m.num_added_files - m.num_deleted_files for m in manifests)


def continuity_problem(new: Snapshot, latest: Snapshot | None, new_base_live: int, latest_live: int) -> str | None:
    """Why snapshot ``new`` (id latest + 1) does not continue ``latest``, or None when it does.

    A commit (Paimon's and impl's alike) writes a fresh base manifest list: the latest's base and
    delta manifests, possibly merged. Merging cancels an ADD against its DELETE, so the files live
    in the new base are exactly those live in the latest (``new_base_live`` = ``latest_live``);
    and its ``totalRecordCount`` is the latest's plus its ``deltaRecordCount``. A body built on an
    older snapshot (replayed, or stale) breaks one of these whenever a file was committed since."""
    if latest is None:
        if new_base_live:
            return f"snapshot {new.id} is the first, yet its base manifest list holds {new_base_live} live files"
        return None
    if new.base_manifest_list in (latest.base_manifest_list, latest.delta_manifest_list):
        return (f"snapshot {new.id} reuses manifest list {new.base_manifest_list!r} of snapshot {latest.id} as its "
                "base; a commit writes a new one")
    if new_base_live != latest_live:
        return (f"snapshot {new.id}'s base manifest list holds {new_base_live} live files, snapshot {latest.id} "
                f"{latest_live}: it was not built on snapshot {latest.id}")
    if None not in (new.total_record_count, new.delta_record_count, latest.total_record_count):
        assert new.total_record_count is not None and new.delta_record_count is not None
        assert latest.total_record_count is not None
        if new.total_record_count != latest.total_record_count + new.delta_record_count:
            return (f"snapshot {new.id} records {new.total_record_count} rows, but snapshot {latest.id}'s "
                    f"{latest.total_record_count} plus its delta {new.delta_record_count} make "
                    f"{latest.total_record_count + new.delta_record_count}")
    return None


def table_uuid(table_url: str, first_schema: TableSchema) -> str:
    """A table's id: stable while the table lives, new when a table of the same name is
    re-created (its first schema's time differs)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{table_url}#{first_schema.time_millis}"))


def error_body(e: Exception) -> ErrorBody:
    """The ErrorResponse of a failure: 404 / 409 naming the resource, 400 for bad input, 501 for
    what a filesystem warehouse does not do, 500 otherwise."""
    if isinstance(e, DatabaseNotExistError):
        return ErrorBody(404, str(e), ResourceType.DATABASE, e.database)
    if isinstance(e, TableNotExistError):
        return ErrorBody(404, str(e), ResourceType.TABLE, e.identifier.rpartition(".")[2])
    if isinstance(e, DatabaseAlreadyExistError):
        return ErrorBody(409, str(e), ResourceType.DATABASE, e.database)
    if isinstance(e, TableAlreadyExistError):
        return ErrorBody(409, str(e), ResourceType.TABLE, e.identifier.rpartition(".")[2])
    if isinstance(e, ColumnNotExistError):
        return ErrorBody(404, str(e), ResourceType.COLUMN)
    if isinstance(e, ColumnAlreadyExistError):
        return ErrorBody(409, str(e), ResourceType.COLUMN)
    if isinstance(e, UnsupportedTableFeatureError):
        return ErrorBody(501, str(e))
    if isinstance(e, DatabaseNotEmptyError):
        return ErrorBody(409, str(e), ResourceType.DATABASE, e.database)
    if isinstance(e, SystemTableReadOnlyError):
        # Paimon's catalog refuses a change of a system table with IllegalArgumentException: 400
        return ErrorBody(400, str(e), ResourceType.TABLE, e.identifier.rpartition(".")[2])
    if isinstance(e, (BadRequest, InvalidIdentifierError, InvalidSchemaError, SchemaChangeError, ValueError)):
        return ErrorBody(400, str(e))
    if isinstance(e, OSError) and e.errno == errno.ENAMETOOLONG:
        return ErrorBody(400, "a name in the request is too long for the warehouse's file system")
    if isinstance(e, (TableError, PaimonError)):
        log.warning("REST catalog request failed: %s: %s", type(e).__name__, e)
        return ErrorBody(500, f"{type(e).__name__}: {e}")
    # not an error impl raises on purpose: its text (a file's absolute path, a library's internals)
    # stays in the server's log
    log.exception("REST catalog request failed")
    return ErrorBody(500, f"internal error ({type(e).__name__}); see the server's log")


# ---------------------------------------------------------------------- the server

class RESTCatalogServer:
    """The REST catalog on ``host:port`` (port 0: a free one), serving from a thread:
    ``start()`` / ``stop()``, or a context manager.

    ``token``: the bearer token every request must carry; a server without one must be asked for
    with ``no_auth=True`` (UnsupportedCatalogOptionError otherwise). ``limits``: body size,
    deadlines, connections and backlog (:class:`ServerLimits`). ``certfile`` / ``keyfile``: serve
    HTTPS. ``vending``: hand out short-lived per-table S3 credentials as data tokens (none by
    default: clients use their own). Requests are logged on ``impl.rest.access``.
    """

    def __init__(self, warehouse: str, *, host: str = "127.0.0.1", port: int = 0,
                 options: Mapping[str, str] | None = None, token: str | None = None, prefix: str = DEFAULT_PREFIX,
                 no_auth: bool = False, limits: ServerLimits = DEFAULT_LIMITS, certfile: str | None = None,
                 keyfile: str | None = None, vending: CredentialVending | None = None):
        if not token and not no_auth:
            raise UnsupportedCatalogOptionError(
                "token", None, "the REST catalog server needs a bearer token (--token-file, $PAIMON_REST_TOKEN); "
                               "serving without authentication must be asked for with no_auth=True (--no-auth)")
        if token and no_auth:
            raise UnsupportedCatalogOptionError("token", "<set>", "was given together with no_auth=True")
        self.service = CatalogService(warehouse, options=options, token=token or None, prefix=prefix,
                                      vending=vending)
        context = tls_context(certfile, keyfile) if certfile else None
        self._shell = HTTPShell(self.service, host, port, limits, context)

    @property
    def uri(self) -> str:
        host, port = self._shell.address
        return f"{self._shell.scheme}://{host}:{port}"

    def start(self) -> "RESTCatalogServer":
        self._shell.start()
        return self

    def serve_forever(self) -> None:
        self._shell.serve_forever()

    def stop(self) -> None:
        self._shell.stop()

    def __enter__(self) -> "RESTCatalogServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

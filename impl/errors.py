"""Typed errors raised by impl below the table API.

Every error a caller can cause or observe is a subclass of :class:`PaimonError`, and its
message names the table, file or value that was wrong. Conflict errors carry the files
involved so a caller (or a test) can tell exactly what collided.

Where errors live (two homes, checked by tests/core/test_error_names.py):

- here, ``impl.errors``: the bases (:class:`PaimonError`, :class:`TableError`) and every error
  of the library: storage (``impl.fs``), formats and types, manifests, snapshots, commit, merge
  tree, schema, options, tags and branches, and the catalogs and the table API (their errors
  live here, at the bottom of the layers, so that every package may raise them), and the
  engine-neutral job layer's (``impl.jobs``: :class:`ConnectorError`, the base of every
  connector's errors, :class:`WriteRoutingError`, :class:`WriteClosedError`);
- ``impl.spark.errors``: errors of the Spark connector (``impl.spark``).

An error goes to the home of the lowest package that raises it, so no package imports an
error from a package above it. This module imports nothing from impl.
"""

from __future__ import annotations

from typing import Mapping


class PaimonError(Exception):
    """Base class of every error impl raises on purpose."""

    # Set by FileStoreCommit on an error that ends a commit or overwrite call: the snapshots
    # that call had published before it failed. Only declared here (no class default), since
    # callers tell "raised by a commit call" from "raised elsewhere" by its presence.
    published_snapshot_ids: list[int]


class MissingExtraError(PaimonError, ImportError):
    """An optional library is not installed; the message names the extra that installs it."""

    def __init__(self, module: str, extra: str, purpose: str):
        self.module = module
        self.extra = extra
        # ImportError's own name attribute: what failed to import
        super().__init__(f"{purpose} needs {module!r}, which is not installed; install the {extra!r} extra: "
                         f"pip install 'paimon-py-core[{extra}]' (from a checkout: pip install -e \".[{extra}]\")",
                         name=module)


# --------------------------------------------------------------------------- storage


class FileIOError(PaimonError):
    """A storage operation failed in a way the caller should see (wraps OSError)."""


class UnsupportedFileSystemError(PaimonError):
    """The file system offers no atomic create-if-absent, so snapshots cannot be published safely."""


class InvalidWarehouseError(PaimonError):
    """A warehouse or table location cannot be used: a URL without a bucket, a bucket that does
    not exist, refused credentials, an endpoint that does not answer, or bad storage options."""


# --------------------------------------------------------------------------- metadata


class CorruptMetadataError(PaimonError):
    """A metadata file (snapshot, schema, manifest, manifest list, hint) is truncated,
    garbage, misses a required key or has a wrong type. ``path`` names the file."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"corrupt metadata file {path}: {reason}")


class DamagedSnapshotError(CorruptMetadataError):
    """A snapshot file that is there but cannot be read (truncated, garbage, another id). The
    message says the way out: ``doctor`` names what is damaged, ``repair`` moves a table whose
    latest snapshot is damaged back to its newest readable one; ``reason`` stays the bare cause."""

    def __init__(self, path: str, reason: str):
        super().__init__(path, reason)
        self.args = (f"corrupt metadata file {path}: {reason}; `paimon-py doctor DB.TABLE` (table.doctor()) names "
                     "what is damaged, `paimon-py repair DB.TABLE` (table.repair()) moves a table whose latest "
                     "snapshot is damaged back to its newest readable snapshot (README: Troubleshooting)",)


class UnsupportedVersionError(CorruptMetadataError):
    """A metadata file declares a format version this library does not read."""


class CorruptFileIndexError(PaimonError):
    """A data-file index (embedded bytes or a ``.index`` file) fails its checks: wrong magic, an
    unknown version, truncated, or an index type this library does not know. Readers never
    trust such an index: the data file is read. ``where`` names the index."""

    def __init__(self, where: str, reason: str):
        self.where = where
        self.reason = reason
        super().__init__(f"file index {where}: {reason}")


class UnsupportedFileIndexError(PaimonError, NotImplementedError):
    """A ``file-index.<type>.columns`` option naming a column the table lacks, or a column type
    the index type does not support (Paimon's writer refuses both)."""


class DataFileError(PaimonError):
    """A data file a snapshot references is missing, unreadable, or does not hold what its
    metadata says. ``path`` names the file."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"data file {path}: {reason}")


class SnapshotNotExistError(PaimonError):
    """The requested snapshot id does not exist (never written, or expired)."""

    def __init__(self, table: str, snapshot_id: int):
        """``table``: the table as the user named it (``db.t``), its path when it was opened by one."""
        self.table = table
        self.snapshot_id = snapshot_id
        super().__init__(f"snapshot {snapshot_id} of table {table} does not exist")


class TableNotRepairableError(PaimonError):
    """``repair`` (or a rollback past damaged snapshots) cannot move the table back safely:
    no snapshot is readable, or one is written in a format version this library does not read
    (not damaged, so never set aside). Nothing was changed. ``table_path`` names the table."""

    def __init__(self, table_path: str, reason: str):
        self.table_path = table_path
        self.reason = reason
        super().__init__(f"table {table_path} cannot be repaired: {reason}")


class NoSnapshotError(SnapshotNotExistError):
    """An operation needs a snapshot (e.g. tagging the latest) and the table has none yet."""

    def __init__(self, table: str, what: str):
        PaimonError.__init__(self, f"table {table} has no snapshot yet: {what}")
        self.table = table
        self.snapshot_id = 0


class DuplicateFileError(PaimonError):
    """A stream of manifest entries adds the same file identity twice."""

    def __init__(self, file_name: str, detail: str = ""):
        self.file_name = file_name
        super().__init__(f"file {file_name} is added twice{': ' + detail if detail else ''}")


# --------------------------------------------------------------------------- formats and types


class TypeParseError(PaimonError, ValueError):
    """A Paimon type string or pyarrow type has no mapping."""


class UnsupportedTypeError(TypeParseError, NotImplementedError):
    """A column's Paimon type is one this library cannot represent (refused when a table is
    opened, naming the column and the type, never read wrongly)."""


class UnsupportedFileFormatError(PaimonError, NotImplementedError):
    """A data file or ``file.format`` names a format this library does not read or write."""


class UnsupportedPartitionValueError(PaimonError, NotImplementedError):
    """A partition value whose directory name Paimon Java spells in a way no reader can
    reproduce (a binary value under ``partition.legacy-name`` = true, a TIMESTAMP WITH LOCAL
    TIME ZONE under false): refused, never guessed (``impl.data.partition_names``)."""


# --------------------------------------------------------------------------- merge tree


class LevelsError(PaimonError):
    """Files of one level >= 1 overlap in key range (corrupt table state or a bug)."""


class MergeEngineError(PaimonError, ValueError):
    """Rows cannot be merged under the table's merge engine (e.g. a retraction it cannot apply)."""


# --------------------------------------------------------------------------- commit


class CommitError(PaimonError):
    """A commit did not complete."""


class CommitConflictError(CommitError):
    """The commit's changes contradict the latest snapshot; it is aborted, not retried.

    ``files`` lists the data file names involved.
    """

    def __init__(self, message: str, files: tuple[str, ...] = ()):
        self.files = tuple(files)
        super().__init__(message)


class BucketCountChangedError(CommitConflictError):
    """A partition's total bucket count would change without an overwrite."""


class FileAlreadyLiveError(CommitConflictError):
    """The commit adds a file that is already live in the table."""


class FileNotLiveError(CommitConflictError):
    """The commit deletes a file that is not live (already deleted by another commit, or never added)."""


class KeyRangeOverlapError(CommitConflictError):
    """On a primary-key table, two files of one (partition, bucket, level >= 1) would overlap in key range."""


class IndexFileConflictError(CommitConflictError):
    """The commit's index-file changes contradict the latest snapshot. HASH index (dynamic bucket
    mode): rows routed by an index another commit changed since, an index file deleted that is
    not live, or a bucket's HASH index added without replacing the live one. Deletion vectors: an
    index file deleted that is no longer live (another commit replaced the bucket's vectors) or
    added twice, one data file given two vectors, or a vector left naming a data file that is not
    live. The writer must write again on the new latest snapshot."""


class RowIdConflictError(CommitConflictError):
    """Data evolution: a column update's row-id range is not the range of a live file (the rows it
    rewrites were overwritten or deleted), or another commit updated the same range after the
    snapshot this update read (one of the two updates would be lost). Read and update again."""


class KeyIndexConflictError(CommitConflictError):
    """Cross-partition upserts: another writer added rows after the snapshot this writer's global
    key index was built from, so a key both wrote could now live in two partitions. Write the data
    again with a new writer (its index is built from the new latest snapshot)."""


class CommitRetriesExhaustedError(CommitError):
    """Every attempt lost the race for the next snapshot id (``commit.max-retries`` or ``commit.timeout``)."""


class CommitOutcomeUnknownError(CommitError):
    """Publishing the snapshot failed in a way that leaves unknown whether it landed.

    Nothing the attempt wrote was deleted. Retrying the same commit (same commit user and
    identifier) is safe: it first looks for its own snapshot.
    """


class CommitRefusedError(CommitError):
    """The catalog that publishes snapshots (a REST catalog's server) refused this one for good:
    the table is gone, the credentials or the request were refused. Nothing was published, so
    the commit is not retried; the message names the catalog and its reason."""


class CommitRecoveryError(CommitError):
    """Recovery (``filter_committed``) found a part to re-commit whose files are gone.

    The part was either published in a snapshot that expired before the recovery looked
    (recovery must happen within snapshot retention), or never published and its files were
    removed as orphans. Re-committing it would reference missing files, so it is refused.
    """

    def __init__(self, message: str, missing_paths: list[str]):
        super().__init__(message)
        self.missing_paths = missing_paths


# --------------------------------------------------------------------------- tables


class WriterClosedError(PaimonError):
    """A writer or committer was used after ``close()`` or after its one-shot ``prepare_commit`` / ``commit``."""


class TableError(PaimonError):
    """Base class for catalog and table misuse."""


class InvalidOptionError(TableError, ValueError):
    """A table option has a value of the wrong form."""


class UnsupportedOptionError(TableError, NotImplementedError):
    """A Paimon table option impl does not implement is set to a value other than Paimon's
    default, where honouring it matters (``impl.options.registry``): refused by name rather
    than ignored, which would read or write wrong rows. ``key`` and ``value`` name it, ``kind``
    is ``"refused read"`` or ``"refused write"``, ``others`` the other refused keys."""

    def __init__(self, key: str, value: str, kind: str, what: str, others: list[str] | None = None):
        self.key = key
        self.value = value
        self.kind = kind
        self.others = list(others or ())
        more = f" (also refused: {', '.join(self.others)})" if self.others else ""
        super().__init__(f"{what}: option {key!r} = {value!r} is not implemented by impl ({kind}){more}")


class SchemaMismatchError(TableError, ValueError):
    """Written data does not match the table schema."""


class OverwritePartitionError(CommitError, ValueError):
    """An overwrite of some partitions carries files that belong to other partitions."""


# --------------------------------------------------------------------------- schema evolution


class SchemaChangeError(TableError, ValueError):
    """``alter_table`` refused a change; nothing was written.

    ``column`` names the column the change was about (None for option and comment changes),
    ``rule`` says which rule refused it (e.g. ``"primary key columns cannot be dropped"``).
    """

    def __init__(self, message: str, column: str | None = None, rule: str = ""):
        self.column = column
        self.rule = rule
        super().__init__(message)


class ColumnNotExistError(SchemaChangeError):
    """A schema change names a column the table does not have."""


class ColumnAlreadyExistError(SchemaChangeError):
    """A schema change adds or renames to a column name the table already has."""


class SchemaChangedError(CommitConflictError):
    """A commit prepared under an older schema meets a newer schema whose change makes the
    prepared files unpublishable (a layout option or a key changed, or a column's type moved
    to one the files cannot be read as). Nothing is published; write again under the new schema."""

    def __init__(self, message: str, prepared_schema_id: int, latest_schema_id: int):
        self.prepared_schema_id = prepared_schema_id
        self.latest_schema_id = latest_schema_id
        super().__init__(message)


# --------------------------------------------------------------------------- tags and branches


class InvalidNameError(TableError, ValueError):
    """A database, table, branch or tag name breaks the name rule (``impl.fs.names``: blank, a
    path separator or control character, ``.``/``..``, too long, ...). ``kind`` is the kind of
    name (``"branch"`` ...), ``name`` the name as given (None when the error is about the form
    of an identifier rather than one name)."""

    def __init__(self, message: str, kind: str | None = None, name: object = None):
        self.kind = kind
        self.name = name
        super().__init__(message)


class InvalidIdentifierError(InvalidNameError):
    """A database or table name is malformed (empty, contains '/', wrong 'db.table' form)."""


class InvalidTagNameError(InvalidNameError):
    """A tag name breaks the rules: blank, or not usable as a file name (``/``, ``\\``, NUL,
    a leading ``.``; see ``impl.fs.names``)."""


class TagAlreadyExistError(TableError):
    """``create_tag`` of a name that is taken (the tag file is created only if absent)."""

    def __init__(self, table: str, tag_name: str):
        self.tag_name = tag_name
        super().__init__(f"tag {tag_name!r} of table {table} already exists; delete it first or pick another name")


class TagNotExistError(TableError):
    """The named tag does not exist."""

    def __init__(self, table: str, tag_name: str):
        self.tag_name = tag_name
        super().__init__(f"tag {tag_name!r} of table {table} does not exist")


class TagsUnsettledError(TableError):
    """Pending tags kept being published or withdrawn between every listing of the tag
    directory and their reading, so what an expiration must keep could not be read; nothing was
    deleted for it. Retry the expiration."""

    def __init__(self, table: str, listings: int):
        self.listings = listings
        super().__init__(f"the tags of table {table} kept changing over {listings} listings; retry")


class InvalidBranchNameError(InvalidNameError):
    """A branch name breaks Paimon's rules ('main', blank, only digits) or is not usable as a
    directory name (see ``impl.fs.names``)."""


class BranchAlreadyExistError(TableError):
    """``create_branch`` of a name that is taken."""

    def __init__(self, table: str, branch: str):
        self.branch = branch
        super().__init__(f"branch {branch!r} of table {table} already exists")


class BranchNotExistError(TableError):
    """The named branch does not exist."""

    def __init__(self, table: str, branch: str):
        self.branch = branch
        super().__init__(f"branch {branch!r} of table {table} does not exist")


class BranchStateError(TableError):
    """A branch operation that the branch's state does not allow (fast-forward of a branch
    without snapshots, fast-forward from the branch itself)."""


# ---------------------------------------------------------------- the catalog and the table API

class DatabaseNotExistError(TableError):
    """The named database does not exist in the catalog."""

    def __init__(self, database: str):
        self.database = database
        super().__init__(f"database {database!r} does not exist")


class DatabaseAlreadyExistError(TableError):
    """``create_database`` of a database that exists (without ``ignore_if_exists``)."""

    def __init__(self, database: str):
        self.database = database
        super().__init__(f"database {database!r} already exists")


class DatabaseNotEmptyError(TableError):
    """``drop_database`` of a database that still holds tables (without ``cascade``)."""

    def __init__(self, database: str, tables: list[str]):
        self.database = database
        self.tables = list(tables)
        super().__init__(f"database {database!r} is not empty (tables: {', '.join(tables)}); use cascade=True")


class TableNotExistError(TableError):
    """The named table does not exist."""

    def __init__(self, identifier: str):
        self.identifier = identifier
        super().__init__(f"table {identifier!r} does not exist")


class TableAlreadyExistError(TableError):
    """``create_table`` of a table that exists (without ``ignore_if_exists``)."""

    def __init__(self, identifier: str):
        self.identifier = identifier
        super().__init__(f"table {identifier!r} already exists")


class InvalidSchemaError(TableError, ValueError):
    """A table definition is inconsistent: unknown key fields, duplicate names, bad bucket key, ..."""


class NullKeyError(SchemaMismatchError):
    """Written data holds nulls in a NOT NULL column (primary-key, partition or declared NOT NULL)."""


class ColumnCastError(SchemaMismatchError):
    """A written pandas column does not cast to the table's type without losing values (an
    overflow, a fractional float into an integer, a time zone where the column has none, ...).
    ``column`` names it, ``source_type`` is its pandas dtype, ``target_type`` the table's type."""

    def __init__(self, table: str, column: str, source_type: str, target_type: str, reason: str):
        self.table = table
        self.column = column
        self.source_type = source_type
        self.target_type = target_type
        self.reason = reason
        super().__init__(f"write to {table}: column {column!r} ({source_type}) does not cast to {target_type}: {reason}")


class InvalidPredicateError(TableError, ValueError):
    """A predicate names an unknown field or carries a literal of the wrong type."""


class RequestedSchemaError(TableError, ValueError):
    """An Arrow consumer asked (``requested_schema`` of ``__arrow_c_stream__``) for a schema the
    rows cannot be cast to: a column missing, extra, out of order or of an incompatible type."""

    def __init__(self, column: str, message: str):
        super().__init__(f"requested schema, column {column!r}: {message}")
        self.column = column


class UnsupportedTableFeatureError(TableError, NotImplementedError):
    """The table asks for something this library does not implement (e.g. dynamic bucket mode)."""


class IcebergMetadataNotExistError(TableError):
    """A table keeps no Iceberg metadata to show (``metadata.iceberg.storage`` is off), or none
    has been written yet; ``reason`` says which and what writes it."""

    def __init__(self, identifier: str, reason: str):
        self.identifier = identifier
        self.reason = reason
        super().__init__(f"table {identifier!r} has no Iceberg metadata: {reason}")


class RowIdNotExistError(TableError, ValueError):
    """A column update names a ``_ROW_ID`` no live row of the table has."""

    def __init__(self, table: str, row_id: int):
        super().__init__(f"update of {table}: no live row has _ROW_ID {row_id}")
        self.row_id = row_id


class CommitUsageError(TableError, ValueError):
    """A commit call is malformed: not CommitMessages, or a stream commit without an identifier."""


class UnknownSystemTableError(TableNotExistError):
    """``db.t$name`` names no system table; ``known`` lists the names that exist."""

    def __init__(self, identifier: str, name: str, known: list[str]):
        self.name = name
        self.known = list(known)
        TableError.__init__(self, f"table {identifier!r}: {name!r} is not a system table "
                                  f"(system tables: {', '.join('$' + k for k in known)})")
        self.identifier = identifier


class SystemTableReadOnlyError(TableError):
    """A write, commit or maintenance call on a system table (``db.t$snapshots`` ...), which
    only describes its data table and cannot be changed."""

    def __init__(self, identifier: str, operation: str):
        self.identifier = identifier
        self.operation = operation
        super().__init__(f"system table {identifier!r} is read-only: {operation} is not allowed "
                         "(write to the data table instead)")


class StaleTableHandleError(TableError):
    """A commit through a table handle whose schema no longer exists as it was read: the table
    was dropped (and perhaps created again) after the handle was taken. Nothing is committed."""

    def __init__(self, identifier: str, schema_path: str, reason: str):
        self.identifier = identifier
        self.schema_path = schema_path
        super().__init__(f"commit to {identifier!r} refused: the schema it was prepared under ({schema_path}) "
                         f"{reason}; the table was dropped after this handle was taken. "
                         "Get the table from the catalog again and rewrite the data")


class StaleTableDirectoryError(TableError):
    """``create_table`` over a directory that holds snapshots but no schema (what a commit through
    a stale handle, or an interrupted drop or copy, leaves behind). Adopting those snapshots would
    bring back rows of a table that no longer exists."""

    def __init__(self, identifier: str, path: str, snapshots: list[str]):
        self.identifier = identifier
        self.path = path
        self.snapshots = snapshots
        super().__init__(f"cannot create table {identifier!r}: {path} holds snapshots ({', '.join(snapshots[:5])}"
                         f"{', ...' if len(snapshots) > 5 else ''}) but no schema; remove the directory first")


class UnsupportedCatalogOptionError(TableError, ValueError):
    """A catalog option this filesystem catalog does not implement (another ``metastore``, a
    metastore's ``uri``, ``table-default.*``, ...): refused by name rather than ignored, which
    would silently make a different catalog than the one asked for."""

    def __init__(self, key: str, value: object, reason: str):
        self.key = key
        self.value = value
        super().__init__(f"catalog option {key!r}={value!r}: {reason}")


class CatalogConnectionError(TableError):
    """A catalog's metastore cannot be reached or refused the connection (a JDBC database that
    is down, a refused password, a file that is not a database): names the catalog (its URI,
    without a password) and what was refused."""

    def __init__(self, catalog: str, reason: str):
        self.catalog = catalog
        self.reason = reason
        super().__init__(f"catalog {catalog}: cannot connect: {reason}")


class CatalogStoreError(TableError):
    """A statement of a catalog's metastore failed (the database went away, a lock could not be
    acquired in time): names the catalog, the operation and the database's reason."""

    def __init__(self, catalog: str, operation: str, reason: str):
        self.catalog = catalog
        self.operation = operation
        self.reason = reason
        super().__init__(f"catalog {catalog}: {operation} failed: {reason}")


class DynamicBucketError(TableError):
    """The dynamic bucket index cannot serve a write (buckets exhausted, or data without an index)."""


__all__ = [
    "DatabaseNotExistError", "DatabaseAlreadyExistError", "DatabaseNotEmptyError", "TableNotExistError",
    "TableAlreadyExistError", "InvalidIdentifierError", "InvalidSchemaError", "NullKeyError",
    "InvalidPredicateError", "UnsupportedTableFeatureError", "RowIdNotExistError", "WriterClosedError",
    "CommitUsageError", "DataFileError",
    "UnknownSystemTableError", "SystemTableReadOnlyError", "StaleTableHandleError", "StaleTableDirectoryError",
    "UnsupportedCatalogOptionError", "DynamicBucketError", "RequestedSchemaError", "ColumnCastError",
    "FileIndexLiteralError", "FilterSyntaxError", "SqlError", "RayConnectorError",
    "ConnectorError", "WriteRoutingError", "WriteClosedError",
]


class FileIndexLiteralError(InvalidPredicateError):
    """A filter on a column with a data-file index whose literal does not have the column's
    type: asking the index would answer "no rows" for a value the column cannot even hold."""


class FilterSyntaxError(InvalidPredicateError):
    """A ``paimon-py --where`` filter that is not in the small SQL subset the command line parses:
    names what was found, where, and what is supported."""

    def __init__(self, text: str, position: int, problem: str):
        self.text = text
        self.position = position
        shown = text if len(text) <= 200 else f"{text[:200]}...({len(text)} characters)"
        super().__init__(f"--where {shown!r} at position {position}: {problem} (supported: comparisons "
                         "=, !=, <>, <, <=, >, >= of a column and a literal, IN (...), NOT IN (...), "
                         "BETWEEN a AND b, IS NULL, IS NOT NULL, AND, OR, parentheses)")


class SqlError(TableError):
    """DuckDB refused the query of ``paimon-py sql`` (a syntax error, an unknown table or column
    ...): its message, as DuckDB gives it."""

    def __init__(self, query: str, message: str):
        self.query = query
        super().__init__(f"sql: {message}")


class ConnectorError(PaimonError, ValueError):
    """Misuse of an engine connector (``impl.spark``, ``impl.ray``) or of the job layer they share
    (``impl.jobs``): a table path or storage option that cannot be used, a row kind that is not
    one. Every connector's errors subclass it (``SparkConnectorError``, :class:`RayConnectorError`),
    so ``except ConnectorError`` catches what any engine's parallel job refuses."""


class WriteRoutingError(ConnectorError):
    """Two tasks of one parallel write (Spark, Ray) wrote the same primary key (the order of its
    versions is undefined), so the write was refused and its files removed (``impl.jobs.keycheck``).

    ``key`` (column -> value), ``partition`` (column -> value) and ``bucket`` name one such key.
    """

    def __init__(self, message: str, *, key: Mapping[str, object] | None = None,
                 partition: Mapping[str, object] | None = None, bucket: int | None = None):
        super().__init__(message)
        self.key = dict(key or {})
        self.partition = dict(partition or {})
        self.bucket = bucket


class WriteClosedError(ConnectorError):
    """A task attempt of a parallel write started after the driver had already committed or
    aborted that write (``impl.jobs.tracking``): it writes nothing. (Not :class:`WriterClosedError`,
    a table writer used after ``close()``.)"""


class RayConnectorError(ConnectorError, TableError):
    """An argument of ``impl.ray`` that cannot be used (unknown write mode, a datasink used for a
    second write, a table object that Ray workers cannot open)."""


class CatalogServerError(TableError):
    """A catalog server (the REST catalog at ``uri``) refused or failed a call; the message names
    the catalog and what was refused. ``code`` is the HTTP status (None when none came back)."""

    def __init__(self, uri: str, what: str, reason: str, code: int | None = None):
        self.uri = uri
        self.code = code
        super().__init__(f"REST catalog {uri}: {what}: {reason}")


class CatalogUnavailableError(CatalogServerError):
    """The catalog server did not answer within the timeout, refused the connection, or
    answered with something that is not Paimon's REST protocol."""


class CatalogAuthError(CatalogServerError):
    """The catalog server refused the credentials (HTTP 401) or the access (HTTP 403)."""


class CatalogRequestError(CatalogServerError, ValueError):
    """The catalog server refused a request as malformed (HTTP 400), not implemented (501), or
    failed it (5xx)."""


# Old names, kept so that code written against earlier releases keeps working. The rule is
# Paimon's spelling: ``...NotExistError`` / ``...AlreadyExistError``.
SnapshotNotFoundError = SnapshotNotExistError
TagAlreadyExistsError = TagAlreadyExistError
TagNotFoundError = TagNotExistError
BranchAlreadyExistsError = BranchAlreadyExistError
BranchNotFoundError = BranchNotExistError

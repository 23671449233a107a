"""Typed errors of the catalog and the table API (``impl.table``; all subclasses of
:class:`impl.errors.TableError`).

Where errors live (three homes, checked by tests/core/test_error_names.py): ``impl.errors``
holds the bases and every error raised below the table API (storage, formats and types,
manifests, snapshots, commit, merge tree, schema, options, tags and branches); this module the
errors of the catalog and the table API; ``impl.spark.errors`` those of the Spark connector.
An error goes to the home of the lowest package that raises it.
"""

from __future__ import annotations

from impl.errors import (  # InvalidIdentifierError: defined with the name rule's errors, still importable here
    DataFileError,
    InvalidIdentifierError,
    SchemaMismatchError,
    TableError,
    WriterClosedError,
)


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


class RayConnectorError(TableError, ValueError):
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

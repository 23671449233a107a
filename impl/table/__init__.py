"""Tables: the filesystem catalog, the table core, and every operation on a table.

``core`` holds :class:`TableCore`, one table view's plumbing (paths, file IO, schema and its
manager, options, snapshot / manifest / index / tag / branch managers, partition cache, and
the :class:`impl.environment.Environment`); ``scan``, ``read``, ``write``, ``commit``,
``compact``, ``maintenance``, ``tags``, ``dynamic_bucket``, ``pk`` and ``system`` take a core.
``table`` is :class:`FileStoreTable`, the public API over a core; ``api`` the :class:`Table`
protocol it shares with :class:`SystemTable`. ``schema`` and ``options`` validate table
definitions, ``bucket`` and ``predicate`` are the routing and filter rules.
"""

from impl.table.api import Table
from impl.table.bucket import BucketMode
from impl.table.builders import BatchWriteBuilder, ReadBuilder, StreamWriteBuilder
from impl.table.catalog import Catalog, CatalogFactory, Database
from impl.table.commit import TableCommit
from impl.table.errors import (
    CommitUsageError,
    DatabaseAlreadyExistError,
    DatabaseNotEmptyError,
    DatabaseNotExistError,
    DataFileError,
    InvalidIdentifierError,
    InvalidPredicateError,
    InvalidSchemaError,
    NullKeyError,
    SystemTableReadOnlyError,
    TableAlreadyExistError,
    TableNotExistError,
    UnknownSystemTableError,
    UnsupportedTableFeatureError,
    WriterClosedError,
)
from impl.table.options import TableOptions
from impl.table.predicate import CompoundPredicate, LeafPredicate, Predicate, PredicateBuilder
from impl.table.read import TableRead
from impl.table.scan import DataSplit, Plan, SplitKind, TableScan
from impl.table.schema import Schema
from impl.table.system import SystemTable
from impl.table.table import FileStoreTable
from impl.table.write import TableWrite

# mypy checks that both kinds of table satisfy the Table protocol
TABLE_KINDS: tuple[type[Table], ...] = (FileStoreTable, SystemTable)

__all__ = [
    "BatchWriteBuilder", "ReadBuilder", "StreamWriteBuilder", "Catalog", "CatalogFactory", "Database", "TableCommit",
    "DatabaseAlreadyExistError", "DatabaseNotEmptyError", "DatabaseNotExistError", "DataFileError",
    "InvalidIdentifierError", "InvalidPredicateError", "InvalidSchemaError", "NullKeyError",
    "TableAlreadyExistError", "TableNotExistError", "UnsupportedTableFeatureError", "WriterClosedError",
    "CommitUsageError", "SystemTable", "SystemTableReadOnlyError", "UnknownSystemTableError",
    "TableOptions", "CompoundPredicate", "LeafPredicate", "Predicate", "PredicateBuilder", "TableRead",
    "DataSplit", "Plan", "SplitKind", "TableScan", "Schema", "FileStoreTable", "TableWrite", "BucketMode",
    "Table", "TABLE_KINDS",
]

"""The table API (Paimon's ``table`` package): :class:`FileStoreTable`, the facade over one table
view, its write and read builders, and the :class:`Table` protocol it shares with system tables.

The layers under it (see specs/architecture.md): ``impl.store`` (the table core every operation
takes), ``impl.read`` (scan planning and reads), ``impl.write`` (writers and the table commit),
``impl.maintenance`` (compaction, orphan removal, rollback, tags) and ``impl.system`` (system
tables, above this package); catalogs (``impl.catalog``) open tables.
"""

from impl.bucket.routing import BucketMode
from impl.errors import (
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
from impl.predicate.predicate import CompoundPredicate, LeafPredicate, Predicate, PredicateBuilder
from impl.read.scan import DataSplit, Plan, SplitKind, TableScan
from impl.read.table_read import TableRead
from impl.store.options import TableOptions
from impl.store.schema import Schema
from impl.table.api import Table
from impl.table.builders import BatchWriteBuilder, ReadBuilder, StreamWriteBuilder
from impl.table.table import FileStoreTable
from impl.write.table_commit import TableCommit
from impl.write.table_write import TableWrite

__all__ = [
    "BatchWriteBuilder", "ReadBuilder", "StreamWriteBuilder", "TableCommit",
    "DatabaseAlreadyExistError", "DatabaseNotEmptyError", "DatabaseNotExistError", "DataFileError",
    "InvalidIdentifierError", "InvalidPredicateError", "InvalidSchemaError", "NullKeyError",
    "TableAlreadyExistError", "TableNotExistError", "UnsupportedTableFeatureError", "WriterClosedError",
    "CommitUsageError", "SystemTableReadOnlyError", "UnknownSystemTableError",
    "TableOptions", "CompoundPredicate", "LeafPredicate", "Predicate", "PredicateBuilder", "TableRead",
    "DataSplit", "Plan", "SplitKind", "TableScan", "Schema", "FileStoreTable", "TableWrite", "BucketMode",
    "Table",
]

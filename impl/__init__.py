"""impl: a Python implementation of Apache Paimon's table storage core.

>>> import impl
>>> cat = impl.Catalog("/tmp/warehouse")            # doctest: +SKIP
"""

from impl.errors import (
    BranchAlreadyExistsError,
    BranchNotFoundError,
    BranchStateError,
    BucketCountChangedError,
    ColumnAlreadyExistError,
    ColumnNotExistError,
    CommitConflictError,
    CommitError,
    CorruptMetadataError,
    InvalidBranchNameError,
    InvalidOptionError,
    InvalidTagNameError,
    NoSnapshotError,
    PaimonError,
    SchemaChangedError,
    SchemaChangeError,
    SchemaMismatchError,
    SnapshotNotFoundError,
    TableError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from impl.schema import Move, SchemaChange
from impl.table import (
    Catalog,
    DatabaseAlreadyExistError,
    DatabaseNotEmptyError,
    DatabaseNotExistError,
    DataFileError,
    DataSplit,
    FileStoreTable,
    InvalidSchemaError,
    NullKeyError,
    Predicate,
    PredicateBuilder,
    Schema,
    SystemTable,
    SystemTableReadOnlyError,
    TableAlreadyExistError,
    TableNotExistError,
    UnknownSystemTableError,
    UnsupportedTableFeatureError,
)

__all__ = [
    "Catalog", "Schema", "FileStoreTable", "DataSplit", "Predicate", "PredicateBuilder",
    "PaimonError", "TableError", "CommitError", "CommitConflictError", "BucketCountChangedError",
    "CorruptMetadataError", "InvalidOptionError", "SchemaMismatchError", "SnapshotNotFoundError",
    "DatabaseAlreadyExistError", "DatabaseNotEmptyError", "DatabaseNotExistError", "DataFileError",
    "InvalidSchemaError", "NullKeyError", "TableAlreadyExistError", "TableNotExistError",
    "UnsupportedTableFeatureError", "SystemTable", "SystemTableReadOnlyError", "UnknownSystemTableError",
    "SchemaChange", "Move", "SchemaChangeError", "SchemaChangedError",
    "ColumnNotExistError", "ColumnAlreadyExistError",
    "TagAlreadyExistsError", "TagNotFoundError", "InvalidTagNameError", "NoSnapshotError",
    "BranchAlreadyExistsError", "BranchNotFoundError", "BranchStateError", "InvalidBranchNameError",
]

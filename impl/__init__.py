"""impl: a Python implementation of Apache Paimon's table storage core.

>>> import impl
>>> cat = impl.Catalog("/tmp/warehouse")            # doctest: +SKIP
"""

from impl._version import package_version
from impl.environment import Environment
from impl.errors import (  # old names of the errors above, kept for earlier callers
    BranchAlreadyExistError,
    BranchAlreadyExistsError,
    BranchNotExistError,
    BranchNotFoundError,
    BranchStateError,
    BucketCountChangedError,
    ColumnAlreadyExistError,
    ColumnNotExistError,
    CommitConflictError,
    CommitError,
    CommitOutcomeUnknownError,
    CommitRecoveryError,
    CommitRetriesExhaustedError,
    CorruptFileIndexError,
    CorruptMetadataError,
    DuplicateFileError,
    FileAlreadyLiveError,
    FileIOError,
    FileNotLiveError,
    IndexFileConflictError,
    InvalidBranchNameError,
    InvalidOptionError,
    InvalidTagNameError,
    InvalidWarehouseError,
    KeyRangeOverlapError,
    LevelsError,
    MergeEngineError,
    MissingExtraError,
    NoSnapshotError,
    OverwritePartitionError,
    PaimonError,
    SchemaChangedError,
    SchemaChangeError,
    SchemaMismatchError,
    SnapshotNotExistError,
    SnapshotNotFoundError,
    TableError,
    TagAlreadyExistError,
    TagAlreadyExistsError,
    TagNotExistError,
    TagNotFoundError,
    TypeParseError,
    UnsupportedFileFormatError,
    UnsupportedFileIndexError,
    UnsupportedFileSystemError,
    UnsupportedTypeError,
    UnsupportedVersionError,
    WriterClosedError,
)
from impl.schema import Move, SchemaChange
from impl.table import (
    Catalog,
    CatalogFactory,
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
    Table,
    TableAlreadyExistError,
    TableNotExistError,
    UnknownSystemTableError,
    UnsupportedTableFeatureError,
)
from impl.table.errors import (
    ColumnCastError,
    CommitUsageError,
    DynamicBucketError,
    FileIndexLiteralError,
    InvalidIdentifierError,
    InvalidPredicateError,
    RequestedSchemaError,
    StaleTableDirectoryError,
    StaleTableHandleError,
    UnsupportedCatalogOptionError,
)

__version__: str = package_version()

__all__ = [
    "__version__",
    "Catalog", "CatalogFactory", "Schema", "FileStoreTable", "DataSplit", "Predicate", "PredicateBuilder",
    "PaimonError", "TableError", "CommitError", "CommitConflictError", "BucketCountChangedError",
    # what a committer catches: conflicts (rebuild and write again), an unknown outcome (recover
    # through filter_committed), retries exhausted, a failed recovery, an overwrite refused
    "FileAlreadyLiveError", "FileNotLiveError", "KeyRangeOverlapError", "IndexFileConflictError",
    "CommitOutcomeUnknownError", "CommitRetriesExhaustedError", "CommitRecoveryError", "OverwritePartitionError",
    "WriterClosedError",
    "SnapshotNotFoundError", "TagAlreadyExistsError", "TagNotFoundError", "BranchAlreadyExistsError",
    "BranchNotFoundError",
    "CorruptMetadataError", "InvalidOptionError", "SchemaMismatchError", "SnapshotNotExistError",
    "DatabaseAlreadyExistError", "DatabaseNotEmptyError", "DatabaseNotExistError", "DataFileError",
    "InvalidSchemaError", "NullKeyError", "TableAlreadyExistError", "TableNotExistError",
    "UnsupportedTableFeatureError", "Table", "Environment", "SystemTable", "SystemTableReadOnlyError", "UnknownSystemTableError",
    "SchemaChange", "Move", "SchemaChangeError", "SchemaChangedError",
    "ColumnNotExistError", "ColumnAlreadyExistError",
    "TagAlreadyExistError", "TagNotExistError", "InvalidTagNameError", "NoSnapshotError",
    "BranchAlreadyExistError", "BranchNotExistError", "BranchStateError", "InvalidBranchNameError",
    # every other error of the two core homes (impl.errors, impl.table.errors): storage and
    # warehouse, formats and types, merge tree, catalog and table API
    "DuplicateFileError", "FileIOError", "InvalidWarehouseError", "LevelsError", "MergeEngineError", "MissingExtraError",
    "TypeParseError", "UnsupportedFileFormatError", "UnsupportedFileSystemError", "UnsupportedTypeError", "UnsupportedVersionError",
    "CommitUsageError", "DynamicBucketError", "InvalidIdentifierError", "InvalidPredicateError",
    "StaleTableDirectoryError", "StaleTableHandleError", "UnsupportedCatalogOptionError", "RequestedSchemaError",
    "ColumnCastError", "CorruptFileIndexError", "UnsupportedFileIndexError", "FileIndexLiteralError",
]

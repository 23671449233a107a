"""impl: a Python implementation of Apache Paimon's table storage core.

>>> import impl
>>> cat = impl.Catalog("/tmp/warehouse")            # doctest: +SKIP
"""

from impl._version import package_version
from impl.catalog import Catalog, CatalogFactory
from impl.catalog.jdbc import JdbcCatalog  # registers metastore "jdbc" with impl.Catalog
from impl.environment import Environment
from impl.errors import (  # old names of the errors above, kept for earlier callers
    BranchAlreadyExistError,
    BranchAlreadyExistsError,
    BranchNotExistError,
    BranchNotFoundError,
    BranchStateError,
    BucketCountChangedError,
    CatalogAuthError,
    CatalogConnectionError,
    CatalogRequestError,
    CatalogServerError,
    CatalogStoreError,
    CatalogUnavailableError,
    ColumnAlreadyExistError,
    ColumnCastError,
    ColumnNotExistError,
    CommitConflictError,
    CommitError,
    CommitOutcomeUnknownError,
    CommitRecoveryError,
    CommitRefusedError,
    CommitRetriesExhaustedError,
    CommitUsageError,
    CorruptFileIndexError,
    CorruptMetadataError,
    DamagedSnapshotError,
    DuplicateFileError,
    DynamicBucketError,
    FileAlreadyLiveError,
    FileIndexLiteralError,
    FileIOError,
    FileNotLiveError,
    FilterSyntaxError,
    IndexFileConflictError,
    InvalidBranchNameError,
    InvalidIdentifierError,
    InvalidNameError,
    InvalidOptionError,
    InvalidPredicateError,
    InvalidTagNameError,
    InvalidWarehouseError,
    KeyIndexConflictError,
    KeyRangeOverlapError,
    LevelsError,
    MergeEngineError,
    MissingExtraError,
    NoSnapshotError,
    OverwritePartitionError,
    PaimonError,
    RayConnectorError,
    RequestedSchemaError,
    RowIdConflictError,
    RowIdNotExistError,
    SchemaChangedError,
    SchemaChangeError,
    SchemaMismatchError,
    SnapshotNotExistError,
    SnapshotNotFoundError,
    SqlError,
    StaleTableDirectoryError,
    StaleTableHandleError,
    TableError,
    TableNotRepairableError,
    TagAlreadyExistError,
    TagAlreadyExistsError,
    TagNotExistError,
    TagNotFoundError,
    TagsUnsettledError,
    TypeParseError,
    UnsupportedCatalogOptionError,
    UnsupportedFileFormatError,
    UnsupportedFileIndexError,
    UnsupportedFileSystemError,
    UnsupportedOptionError,
    UnsupportedPartitionValueError,
    UnsupportedTypeError,
    UnsupportedVersionError,
    WriterClosedError,
)
from impl.schema import Move, SchemaChange
from impl.system import SystemTable
from impl.table import (
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
    SystemTableReadOnlyError,
    Table,
    TableAlreadyExistError,
    TableNotExistError,
    UnknownSystemTableError,
    UnsupportedTableFeatureError,
)


def __getattr__(name: str) -> str:
    """``impl.__version__``, looked up on first access rather than at import: the lookup reads
    the installed distribution's metadata (a walk of sys.path), which ``import impl`` and every
    ``paimon-py`` call would otherwise pay although few read the version."""
    if name == "__version__":
        version = package_version()
        globals()["__version__"] = version  # later reads find it without calling here again
        return version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "__version__",
    "Catalog", "CatalogFactory", "JdbcCatalog", "Schema", "FileStoreTable", "DataSplit", "Predicate", "PredicateBuilder",
    "PaimonError", "TableError", "CommitError", "CommitConflictError", "BucketCountChangedError",
    # what a committer catches: conflicts (rebuild and write again), an unknown outcome (recover
    # through filter_committed), retries exhausted, a failed recovery, an overwrite refused
    "FileAlreadyLiveError", "FileNotLiveError", "KeyRangeOverlapError", "IndexFileConflictError", "RowIdConflictError",
    "CommitOutcomeUnknownError", "CommitRetriesExhaustedError", "CommitRecoveryError", "OverwritePartitionError",
    "WriterClosedError",
    "SnapshotNotFoundError", "TagAlreadyExistsError", "TagNotFoundError", "BranchAlreadyExistsError",
    "BranchNotFoundError",
    "CorruptMetadataError", "InvalidOptionError", "UnsupportedOptionError", "SchemaMismatchError", "SnapshotNotExistError",
    "DatabaseAlreadyExistError", "DatabaseNotEmptyError", "DatabaseNotExistError", "DataFileError",
    "InvalidSchemaError", "NullKeyError", "TableAlreadyExistError", "TableNotExistError",
    "UnsupportedTableFeatureError", "Table", "Environment", "SystemTable", "SystemTableReadOnlyError", "UnknownSystemTableError",
    "SchemaChange", "Move", "SchemaChangeError", "SchemaChangedError",
    "ColumnNotExistError", "ColumnAlreadyExistError",
    "TagAlreadyExistError", "TagNotExistError", "TagsUnsettledError", "InvalidTagNameError", "NoSnapshotError",
    "BranchAlreadyExistError", "BranchNotExistError", "BranchStateError", "InvalidBranchNameError", "InvalidNameError",
    # every other error of the two core homes (impl.errors, impl.errors): storage and
    # warehouse, formats and types, merge tree, catalog and table API
    "DuplicateFileError", "FileIOError", "InvalidWarehouseError", "KeyIndexConflictError", "LevelsError", "MergeEngineError", "MissingExtraError",
    "TypeParseError", "UnsupportedFileFormatError", "UnsupportedPartitionValueError", "UnsupportedFileSystemError", "UnsupportedTypeError", "UnsupportedVersionError",
    "CommitUsageError", "DynamicBucketError", "InvalidIdentifierError", "InvalidPredicateError",
    "StaleTableDirectoryError", "StaleTableHandleError", "UnsupportedCatalogOptionError", "RequestedSchemaError",
    "RowIdNotExistError", "ColumnCastError", "CorruptFileIndexError", "UnsupportedFileIndexError",
    "FileIndexLiteralError", "FilterSyntaxError", "SqlError", "RayConnectorError",
    "CatalogConnectionError", "CatalogStoreError", "TableNotRepairableError", "DamagedSnapshotError",
    # a catalog server's (impl.rest) refusals and failures
    "CatalogServerError", "CatalogUnavailableError", "CatalogAuthError", "CatalogRequestError", "CommitRefusedError",
]

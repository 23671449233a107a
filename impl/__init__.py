"""impl: a Python implementation of Apache Paimon's table storage core.

>>> import impl
>>> cat = impl.Catalog("/tmp/warehouse")            # doctest: +SKIP
"""

import importlib
from typing import TYPE_CHECKING, Any

from impl._version import package_version
from impl.errors import (  # every error of the library, old names too (kept for earlier callers)
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
    ConnectorError,
    CorruptFileIndexError,
    CorruptMetadataError,
    DamagedSnapshotError,
    DatabaseAlreadyExistError,
    DatabaseNotEmptyError,
    DatabaseNotExistError,
    DataFileError,
    DuplicateFileError,
    DynamicBucketError,
    FileAlreadyLiveError,
    FileIndexLiteralError,
    FileIOError,
    FileNotLiveError,
    FilterSyntaxError,
    IcebergMetadataNotExistError,
    IndexFileConflictError,
    InvalidBranchNameError,
    InvalidIdentifierError,
    InvalidNameError,
    InvalidOptionError,
    InvalidPredicateError,
    InvalidSchemaError,
    InvalidTagNameError,
    InvalidWarehouseError,
    KeyIndexConflictError,
    KeyRangeOverlapError,
    LevelsError,
    MergeEngineError,
    MissingExtraError,
    NoSnapshotError,
    NullKeyError,
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
    SystemTableReadOnlyError,
    TableAlreadyExistError,
    TableError,
    TableNotExistError,
    TableNotRepairableError,
    TagAlreadyExistError,
    TagAlreadyExistsError,
    TagNotExistError,
    TagNotFoundError,
    TagsUnsettledError,
    TypeParseError,
    UnknownSystemTableError,
    UnsupportedCatalogOptionError,
    UnsupportedFileFormatError,
    UnsupportedFileIndexError,
    UnsupportedFileSystemError,
    UnsupportedOptionError,
    UnsupportedPartitionValueError,
    UnsupportedTableFeatureError,
    UnsupportedTypeError,
    UnsupportedVersionError,
    WriteClosedError,
    WriterClosedError,
    WriteRoutingError,
)

if TYPE_CHECKING:
    # for type checkers: at run time __getattr__ below imports these on first access
    from impl.catalog import Catalog, CatalogFactory, FileSystemCatalog, load_catalog
    from impl.catalog.jdbc import JdbcCatalog
    from impl.environment import Environment
    from impl.schema import Move, SchemaChange
    from impl.system import SystemTable
    from impl.table import DataSplit, FileStoreTable, Predicate, PredicateBuilder, Schema, Table

# The facade's classes by the module that defines them. They are imported on first access
# (module __getattr__, PEP 562), all together, rather than by ``import impl``: they bring in
# most of the library (about 140 modules, 0.3-2 s with the machine's load) which ``import impl``
# and ``paimon-py --help`` would otherwise pay. The errors above are imported eagerly: they are
# light, and ``except impl.CommitError`` must not depend on a first access.
_LAZY: dict[str, tuple[str, ...]] = {
    'impl.catalog': ('Catalog', 'CatalogFactory', 'FileSystemCatalog', 'load_catalog'),
    'impl.catalog.jdbc': ('JdbcCatalog',),
    'impl.environment': ('Environment',),
    'impl.schema': ('Move', 'SchemaChange'),
    'impl.system': ('SystemTable',),
    'impl.table': ('DataSplit', 'FileStoreTable', 'Predicate', 'PredicateBuilder', 'Schema', 'Table'),
}


def _load_facade() -> None:
    """Import every module of _LAZY and bind its names here, as the eager imports of earlier
    versions did."""
    for module, names in _LAZY.items():
        loaded = importlib.import_module(module)
        for name in names:
            globals()[name] = getattr(loaded, name)


def __getattr__(name: str) -> Any:
    """The facade's classes (_LAZY) and ``impl.__version__`` on first access; a subpackage
    (``impl.catalog``) by its name as before, when importing the facade binds it."""
    if name == "__version__":
        version = package_version()  # reads installed metadata: a walk of sys.path
        globals()["__version__"] = version  # later reads find it without calling here again
        return version
    if not name.startswith("__"):
        # a facade class, or a subpackage (impl.catalog, impl.table, ...) bound here by the
        # facade's imports: what an eager ``import impl`` had, nothing more
        _load_facade()
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "__version__",
    "Catalog", "CatalogFactory", "FileSystemCatalog", "JdbcCatalog", "load_catalog", "Schema", "FileStoreTable", "DataSplit", "Predicate", "PredicateBuilder",
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
    "DuplicateFileError", "FileIOError", "IcebergMetadataNotExistError", "InvalidWarehouseError", "KeyIndexConflictError", "LevelsError", "MergeEngineError", "MissingExtraError",
    "TypeParseError", "UnsupportedFileFormatError", "UnsupportedPartitionValueError", "UnsupportedFileSystemError", "UnsupportedTypeError", "UnsupportedVersionError",
    "CommitUsageError", "DynamicBucketError", "InvalidIdentifierError", "InvalidPredicateError",
    "StaleTableDirectoryError", "StaleTableHandleError", "UnsupportedCatalogOptionError", "RequestedSchemaError",
    "RowIdNotExistError", "ColumnCastError", "CorruptFileIndexError", "UnsupportedFileIndexError",
    "FileIndexLiteralError", "FilterSyntaxError", "SqlError", "RayConnectorError",
    "CatalogConnectionError", "CatalogStoreError", "TableNotRepairableError", "DamagedSnapshotError",
    # the engine connectors' base error and the parallel write protocol's (impl.jobs)
    "ConnectorError", "WriteRoutingError", "WriteClosedError",
    # a catalog server's (impl.rest) refusals and failures
    "CatalogServerError", "CatalogUnavailableError", "CatalogAuthError", "CatalogRequestError", "CommitRefusedError",
]

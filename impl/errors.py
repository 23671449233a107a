"""Typed errors raised by impl below the table API.

Every error a caller can cause or observe is a subclass of :class:`PaimonError`, and its
message names the table, file or value that was wrong. Conflict errors carry the files
involved so a caller (or a test) can tell exactly what collided.

Where errors live (three homes, checked by tests/core/test_error_names.py):

- here, ``impl.errors``: the bases (:class:`PaimonError`, :class:`TableError`) and every error
  raised below the table API: storage (``impl.fs``), formats and types (``impl.format``),
  manifests, snapshots, commit, merge tree, schema, options, tags and branches;
- ``impl.table.errors``: errors of the catalog and the table API (``impl.table``);
- ``impl.spark.errors``: errors of the Spark connector (``impl.spark``).

An error goes to the home of the lowest package that raises it, so no package imports an
error from a package above it. This module imports nothing from impl.
"""

from __future__ import annotations


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
    TIME ZONE under false): refused, never guessed (``impl.format.partition_names``)."""


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


# Old names, kept so that code written against earlier releases keeps working. The rule is
# Paimon's spelling: ``...NotExistError`` / ``...AlreadyExistError``.
SnapshotNotFoundError = SnapshotNotExistError
TagAlreadyExistsError = TagAlreadyExistError
TagNotFoundError = TagNotExistError
BranchAlreadyExistsError = BranchAlreadyExistError
BranchNotFoundError = BranchNotExistError

"""Errors the model raises. Names match impl/errors.py: tests compare ``type(e).__name__``."""

from __future__ import annotations


class ModelError(Exception):
    """Base class of every error the model raises on purpose."""


class DuplicateFileError(ModelError):
    """``merge_entries`` met an ADD of an identity already in the map (not a commit conflict)."""

    def __init__(self, file_name: str, detail: str = ""):
        self.file_name = file_name
        self.files = (file_name,)
        super().__init__(f"file {file_name} is added twice{': ' + detail if detail else ''}")


class SnapshotNotExistError(ModelError):
    """The snapshot id was never published, or has expired."""

    def __init__(self, snapshot_id: int):
        self.snapshot_id = snapshot_id
        super().__init__(f"snapshot {snapshot_id} does not exist")


class CommitConflictError(ModelError):
    """The changes contradict the latest snapshot; nothing is published. ``files`` names the files."""

    def __init__(self, message: str, files: tuple[str, ...] = ()):
        self.files = tuple(files)
        super().__init__(message)


class BucketCountChangedError(CommitConflictError):
    """A partition's total bucket count would change without an overwrite."""


class FileAlreadyLiveError(CommitConflictError):
    """The commit adds a file that is already live."""


class FileNotLiveError(CommitConflictError):
    """The commit deletes a file that is not live."""


class KeyRangeOverlapError(CommitConflictError):
    """Primary-key table: two files of one (partition, bucket, level >= 1) overlap in key range."""


class IndexFileConflictError(CommitConflictError):
    """The commit's index changes contradict the snapshot: a HASH index made on a stale index (rules 5-7) or
    deletion-vector changes that cannot apply (impl.errors.IndexFileConflictError)."""


class SchemaChangedError(CommitConflictError):
    """A commit prepared under an older schema meets a schema its files cannot be published under."""

    def __init__(self, message: str, prepared_schema_id: int, latest_schema_id: int):
        self.prepared_schema_id = prepared_schema_id
        self.latest_schema_id = latest_schema_id
        super().__init__(message)


class InvalidTagNameError(ModelError):
    """A tag name is blank."""


class TagAlreadyExistError(ModelError):
    """A tag of that name exists; tags are created only if absent."""


class TagNotExistError(ModelError):
    """No tag has that name."""

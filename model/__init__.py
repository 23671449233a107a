"""Executable reference model of the Paimon commit protocol: pure Python, no I/O, no impl.

rules.py  -- file facts, entries, merge_entries, check_conflicts, merge_rows (pure functions)
table.py  -- Model: retained snapshots and tags; commit, overwrite, expire, read, tag, rollback
errors.py -- error classes, named as in impl.errors
"""

from model.errors import (
    BucketCountChangedError,
    CommitConflictError,
    DuplicateFileError,
    FileAlreadyLiveError,
    FileNotLiveError,
    InvalidTagNameError,
    KeyRangeOverlapError,
    ModelError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from model.rules import (
    ADD,
    APPEND,
    COMPACT,
    DELETE,
    DELETE_ROW,
    INSERT,
    OVERWRITE,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Entry,
    FileFacts,
    Identity,
    check_conflicts,
    files_kept,
    identity,
    merge_entries,
    merge_rows,
)
from model.table import Model, Snapshot

__all__ = [
    "ADD", "APPEND", "COMPACT", "DELETE", "DELETE_ROW", "INSERT", "OVERWRITE",
    "UPDATE_AFTER", "UPDATE_BEFORE",
    "BucketCountChangedError", "CommitConflictError", "DuplicateFileError",
    "FileAlreadyLiveError", "FileNotLiveError", "KeyRangeOverlapError", "ModelError",
    "SnapshotNotFoundError", "InvalidTagNameError", "TagAlreadyExistsError", "TagNotFoundError",
    "Entry", "FileFacts", "Identity", "Model", "Snapshot",
    "check_conflicts", "files_kept", "identity", "merge_entries", "merge_rows",
]

"""Executable reference model of the Paimon commit protocol: pure Python, no I/O, no impl.

rules.py  -- file facts, entries, merge_entries, check_conflicts, merge_rows (pure functions);
             index facts of dynamic bucket mode: fold_index, check_index_conflicts, assign_buckets
table.py  -- Model: retained snapshots; commit, overwrite, expire, read
errors.py -- error classes, named as in impl.errors
deletion_vectors.py -- deletion vectors: the no-merge read, the two safety invariants, the
                       commit rules on DV index files (import model.deletion_vectors)
"""

from model.errors import (
    BucketCountChangedError,
    CommitConflictError,
    DuplicateFileError,
    FileAlreadyLiveError,
    FileNotLiveError,
    IndexFileConflictError,
    KeyRangeOverlapError,
    ModelError,
    SnapshotNotFoundError,
)
from model.rules import (
    ADD,
    APPEND,
    COMPACT,
    DELETE,
    DELETE_ROW,
    HASH,
    INSERT,
    OVERWRITE,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Entry,
    FileFacts,
    Identity,
    IndexEntry,
    IndexFacts,
    IndexIdentity,
    assign_buckets,
    check_conflicts,
    check_index_conflicts,
    check_index_invariant,
    fold_index,
    identity,
    index_identity,
    merge_entries,
    merge_rows,
)
from model.table import Model, Snapshot

__all__ = [
    "ADD", "APPEND", "COMPACT", "DELETE", "DELETE_ROW", "HASH", "INSERT", "OVERWRITE",
    "UPDATE_AFTER", "UPDATE_BEFORE",
    "BucketCountChangedError", "CommitConflictError", "DuplicateFileError",
    "FileAlreadyLiveError", "FileNotLiveError", "IndexFileConflictError", "KeyRangeOverlapError", "ModelError",
    "SnapshotNotFoundError",
    "Entry", "FileFacts", "Identity", "IndexEntry", "IndexFacts", "IndexIdentity", "Model", "Snapshot",
    "assign_buckets", "check_conflicts", "check_index_conflicts", "check_index_invariant", "fold_index",
    "identity", "index_identity", "merge_entries", "merge_rows",
]

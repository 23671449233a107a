"""Executable reference model of the Paimon commit protocol: pure Python, no I/O, no impl.

rules.py  -- file facts, entries, merge_entries, check_conflicts, merge_rows (pure functions)
table.py  -- Model: retained snapshots; commit, overwrite, expire, read; schema ids (alter)
schema.py -- schema facts and the rule for a commit prepared under an older schema
errors.py -- error classes, named as in impl.errors
"""

from model.errors import (
    BucketCountChangedError,
    CommitConflictError,
    DuplicateFileError,
    FileAlreadyLiveError,
    FileNotLiveError,
    KeyRangeOverlapError,
    ModelError,
    SchemaChangedError,
    SnapshotNotFoundError,
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
    identity,
    merge_entries,
    merge_rows,
)
from model.schema import FieldFacts, SchemaFacts, commit_schema_problem
from model.table import Model, Snapshot

__all__ = [
    "ADD", "APPEND", "COMPACT", "DELETE", "DELETE_ROW", "INSERT", "OVERWRITE",
    "UPDATE_AFTER", "UPDATE_BEFORE",
    "BucketCountChangedError", "CommitConflictError", "DuplicateFileError",
    "FileAlreadyLiveError", "FileNotLiveError", "KeyRangeOverlapError", "ModelError",
    "SnapshotNotFoundError", "SchemaChangedError", "FieldFacts", "SchemaFacts", "commit_schema_problem",
    "Entry", "FileFacts", "Identity", "Model", "Snapshot",
    "check_conflicts", "identity", "merge_entries", "merge_rows",
]

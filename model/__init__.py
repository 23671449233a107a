"""Executable reference model of the Paimon commit protocol: pure Python, no I/O, no impl.

rules.py  -- file facts, entries, merge_entries, check_conflicts, merge_rows (pure functions);
             files_kept / file_names_kept (what storage holds, extra files such as .index included);
             index facts of dynamic bucket mode: fold_index, check_index_conflicts, assign_buckets;
             postpone bucket mode: postpone_bucket_count, check_postpone_compaction, replay_postponed
table.py  -- Model: retained snapshots and tags; commit, overwrite, expire, read, tag, rollback;
             schema ids (alter)
schema.py -- schema facts and the rule for a commit prepared under an older schema
errors.py -- error classes, named as in impl.errors
row_ids.py -- row tracking: first row ids and nextRowId assigned at commit, and the row-id
              invariants of a published history (import model.row_ids)
deletion_vectors.py -- deletion vectors: the no-merge read, the two safety invariants, the
                       commit rules on DV index files (import model.deletion_vectors)
iceberg.py -- Iceberg metadata: which Paimon snapshot each Iceberg snapshot mirrors (the same
              id) and the crash-safety rules of the Iceberg view (import model.iceberg)
"""

from model.errors import (
    BucketCountChangedError,
    CommitConflictError,
    DuplicateFileError,
    FileAlreadyLiveError,
    FileNotLiveError,
    IndexFileConflictError,
    InvalidTagNameError,
    KeyRangeOverlapError,
    ModelError,
    SchemaChangedError,
    SnapshotNotExistError,
    TagAlreadyExistError,
    TagNotExistError,
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
    POSTPONE_BUCKET,
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
    check_extra_file_owners,
    check_index_conflicts,
    check_index_invariant,
    check_postpone_compaction,
    file_names_kept,
    files_kept,
    fold_index,
    identity,
    index_identity,
    merge_entries,
    merge_rows,
    postpone_bucket_count,
    replay_postponed,
)
from model.schema import FieldFacts, SchemaFacts, commit_schema_problem
from model.table import Model, Snapshot

__all__ = [
    "ADD", "APPEND", "COMPACT", "DELETE", "DELETE_ROW", "HASH", "INSERT", "OVERWRITE", "POSTPONE_BUCKET",
    "UPDATE_AFTER", "UPDATE_BEFORE",
    "BucketCountChangedError", "CommitConflictError", "DuplicateFileError",
    "FileAlreadyLiveError", "FileNotLiveError", "IndexFileConflictError", "KeyRangeOverlapError", "ModelError",
    "SnapshotNotExistError", "SchemaChangedError", "FieldFacts", "SchemaFacts", "commit_schema_problem",
    "InvalidTagNameError", "TagAlreadyExistError", "TagNotExistError",
    "Entry", "FileFacts", "Identity", "IndexEntry", "IndexFacts", "IndexIdentity", "Model", "Snapshot",
    "assign_buckets", "check_conflicts", "check_index_conflicts", "files_kept", "check_index_invariant", "fold_index",
    "identity", "index_identity", "merge_entries", "merge_rows",
    "check_postpone_compaction", "postpone_bucket_count", "replay_postponed",
    "check_extra_file_owners", "file_names_kept",
]

"""The commit protocol: CommitMessage, conflict rules, and FileStoreCommit (optimistic commits
with conflict detection, APPEND then COMPACT snapshot, OVERWRITE, manifest merging, recovery of
unknown outcomes through ``filter_committed``, and ``abort``)."""

from impl.commit.conflicts import check_conflicts
from impl.commit.file_store_commit import CommitStats, FileStoreCommit
from impl.commit.messages import (
    BATCH_COMMIT_IDENTIFIER,
    CollectedChanges,
    CommitMessage,
    ManifestCommittable,
    collect_changes,
)
from impl.commit.options import CommitOptions

__all__ = [
    "check_conflicts", "CommitStats", "FileStoreCommit", "BATCH_COMMIT_IDENTIFIER", "CollectedChanges",
    "CommitMessage", "ManifestCommittable", "collect_changes", "CommitOptions",
]

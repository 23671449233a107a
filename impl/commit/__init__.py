"""The commit protocol: CommitMessage, conflict rules, and FileStoreCommit (optimistic commits
with conflict detection, APPEND then COMPACT snapshot, OVERWRITE, manifest merging, recovery of
unknown outcomes through ``filter_committed``, and ``abort``).

Split by job, as Paimon's ``operation/commit/``: ``file_store_commit`` (the API and the rules
of one commit), ``retry`` (the retry loop with backoff), ``metadata_writer`` (manifests and lists,
cleaning up what a lost try wrote), ``outcome`` (whether an unknown publish landed),
``attempt`` (one snapshot's tries and the stats). Time, sleep, ids and jitter come from the
:class:`impl.environment.Environment` the committer is given."""

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

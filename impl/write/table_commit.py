"""TableCommit: publishes CommitMessages through :class:`impl.commit.FileStoreCommit`.

Batch commits (``new_batch_write_builder().new_commit()``) commit once, under Paimon's batch
identifier (Long.MAX_VALUE); with ``overwrite(...)`` on the builder they publish an OVERWRITE
snapshot instead. Stream commits take an explicit, growing ``commit_identifier`` per call, and
``filter_and_commit`` re-commits only what is not yet published (recovery after a crash).

When a commit fails before publishing, the data files of the unpublished part are deleted
(no snapshot can reference them): for batch commits on any error, for stream commits on
conflicts only (a stream job may retry the same messages after, say, an I/O error). On
``CommitOutcomeUnknownError`` nothing is ever deleted: the snapshot may have landed.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from impl.commit.file_store_commit import CommitStats, FileStoreCommit
from impl.commit.messages import BATCH_COMMIT_IDENTIFIER, CommitMessage, ManifestCommittable
from impl.errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    CommitUsageError,
    FileAlreadyLiveError,
    OverwritePartitionError,
    StaleTableHandleError,
    WriterClosedError,
)
from impl.iceberg.commit import check_table as check_iceberg_table
from impl.iceberg.commit import sync_after_commit, sync_iceberg
from impl.schema.records import TableSchema
from impl.store.core import TableCore

NO_OVERWRITE = object()


class TableCommit:
    """Commits the messages of one commit user to one table."""

    def __init__(self, core: TableCore, commit_user: str, *, streaming: bool = False,
                 overwrite_partition=NO_OVERWRITE):
        self.core = core
        self.commit_user = commit_user
        self.streaming = streaming
        self.overwrite_partition = overwrite_partition
        self.file_store_commit = FileStoreCommit(
            core.file_io, core.path, core.schema, commit_user=commit_user, options=core.options.commit,
            table_name=core.identifier, manifest_file=core.manifest_file, branch=core.branch, env=core.env,
            snapshot_commit=core.snapshot_commit)
        # refused before anything is published: a table whose Iceberg view impl cannot write
        self._iceberg = check_iceberg_table(core) is not None
        self._committed = False
        self._closed = False

    def commit(self, messages: Sequence[CommitMessage], commit_identifier: int | None = None) -> CommitStats:
        """Publish the messages (APPEND then COMPACT snapshot, or one OVERWRITE snapshot).

        Batch commits take no identifier and may be called once; stream commits need one.
        """
        self._check_open()
        if self.streaming:
            if commit_identifier is None:
                raise CommitUsageError(f"stream commit to {self.core.identifier} needs a commit_identifier")
        else:
            if self._committed:
                raise WriterClosedError(f"batch commit of {self.core.identifier} was already used")
            if commit_identifier is None:
                commit_identifier = BATCH_COMMIT_IDENTIFIER
        messages = list(messages)
        for m in messages:
            if not isinstance(m, CommitMessage):
                raise CommitUsageError(f"commit to {self.core.identifier} takes the CommitMessages of "
                                       f"prepare_commit, got {type(m).__name__}")
        self._committed = True
        self._check_schema_still_exists(messages)
        committable = ManifestCommittable(commit_identifier, tuple(messages))
        try:
            if self.overwrite_partition is not NO_OVERWRITE:
                spec = self.overwrite_partition
                dynamic = (not spec and bool(self.core.schema.partition_keys)
                           and self.core.options.dynamic_partition_overwrite)
                return self._after(self.file_store_commit.overwrite(spec or None, committable, dynamic=dynamic))
            return self._after(self.file_store_commit.commit(committable))
        except Exception as e:
            retryable = not isinstance(e, (CommitConflictError, OverwritePartitionError))
            if (isinstance(e, CommitOutcomeUnknownError) or (self.streaming and retryable)
                    or not hasattr(e, "published_snapshot_ids")):
                raise  # the snapshots may have landed, or the caller may retry: keep the files
            if isinstance(e, FileAlreadyLiveError):
                # The same messages committed twice (a retried or duplicated commit): their files
                # are live through the first commit, so deleting them would lose published rows.
                # Leaving unreferenced ones behind is harmless (orphan cleanup removes them).
                raise
            published = e.published_snapshot_ids
            rejected = [m.without_append_part() for m in messages] if published else messages
            self.abort(rejected)
            raise

    def truncate_partitions(self, partitions: Sequence[Mapping[str, object]]) -> CommitStats:
        """Delete every row of the given partitions (``[{"dt": "2024-01-01"}, ...]``) in one
        OVERWRITE snapshot (pypaimon's ``truncate_partitions``); a batch commit is used once."""
        self._check_open()
        if not self.streaming and self._committed:
            raise WriterClosedError(f"batch commit of {self.core.identifier} was already used")
        self._committed = True
        return self._after(self.file_store_commit.drop_partitions(partitions))

    def filter_and_commit(self, committables: Mapping[int, Sequence[CommitMessage]]) -> list[CommitStats]:
        """Commit those of ``{identifier: messages}`` this commit user has not published yet."""
        self._check_open()
        self._check_schema_still_exists([m for ms in committables.values() for m in ms])
        pending = [ManifestCommittable(i, tuple(ms)) for i, ms in sorted(committables.items())]
        todo = self.file_store_commit.filter_committed(pending)
        stats = [self.file_store_commit.commit(c) for c in todo]
        if self._iceberg:
            self._sync_iceberg()  # also after a recovery that published nothing: catches up a crashed sync
        return stats

    def _after(self, stats: CommitStats) -> CommitStats:
        """After a commit returned (its snapshots are published): the Iceberg metadata, if on."""
        if self._iceberg:
            self._sync_iceberg()
        return stats

    def _sync_iceberg(self) -> None:
        fsc = self.file_store_commit
        sync_after_commit(self.core, fsc.read_live_entries, fsc.data_file_path)

    def sync_iceberg(self) -> str | None:
        """Bring the table's Iceberg metadata level with its newest Paimon snapshot (the repair
        after a crash between the two; nothing is written if it is level already). The path of
        the ``vN.metadata.json`` it names, None if Iceberg metadata is off or there is no
        snapshot. Errors are raised, not logged (a commit's own sync only logs them).

        >>> table.new_batch_write_builder().new_commit().sync_iceberg()  # doctest: +SKIP
        '/wh/db.db/t/metadata/v3.metadata.json'
        """
        self._check_open()
        fsc = self.file_store_commit
        return sync_iceberg(self.core, fsc.read_live_entries, fsc.data_file_path)

    def _check_schema_still_exists(self, messages: Sequence[CommitMessage]) -> None:
        """Refuse the commit if the schema this handle was prepared under is gone or was replaced.

        After ``drop_table`` the table directory is removed; a commit through a handle taken
        before would otherwise recreate ``snapshot/`` and ``manifest/`` there, and a later
        ``create_table`` of the same name would adopt that snapshot. Comparing the stored schema
        with the handle's (their ``timeMillis`` differs when the table was created again) also
        catches a drop followed by a new table of the same name. One small read per commit; a drop
        racing this check between it and the snapshot's publication is not covered.
        """
        fio = self.core.file_io
        path = self.core.paths.schema_path(self.core.schema.id)
        try:
            stored = TableSchema.from_json_bytes(fio.read_bytes(path), path)
        except FileNotFoundError:
            stored = None
        # compared as written: a freshly built schema and its parsed file differ in defaults
        if stored is not None and stored.to_json_bytes() == self.core.schema.to_json_bytes():
            return
        # the writers' files can never be committed to this table: remove them, so that the
        # dropped table's directory is not recreated with data nobody references
        self.abort(messages)
        raise StaleTableHandleError(self.core.identifier, path,
                                    "no longer exists" if stored is None else "was replaced by a new table's")

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the data and index files the messages' writers created (they will never be
        committed); see :meth:`FileStoreCommit.abort`, the one home of this rule."""
        self.file_store_commit.abort(messages)

    def close(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise WriterClosedError(f"commit of {self.core.identifier} is closed")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

"""FileStoreCommit: turns CommitMessages into published snapshots (Paimon's FileStoreCommitImpl).

One ``commit`` call publishes up to two snapshots under one commit identifier:

1. APPEND, with the new files (plus changelog and index files), if there are any;
2. COMPACT, with compact-before as DELETE and compact-after as ADD, if there are any.

Each is one :class:`~impl.commit.attempt.Attempt` (the part's entries, the call's committable
and statistics, and what its tries learn) and goes through the retry loop
(:mod:`impl.commit.retry`) of ``_try_commit_once``: read the latest snapshot, check
conflicts against it (skipped when that snapshot is exactly the one already checked: the
optimistic path of seed 003), merge the previous base + delta manifests into the new base
list, write this snapshot's delta manifests and lists, then publish
``snapshot-<latest+1>`` with an atomic create-if-absent. Losing that race retries from the
new latest, re-checking conflicts only against the snapshots that came in between, with
exponential backoff and jitter.

Cleanup contract: a failure before publication deletes every manifest and list the attempt
wrote (:class:`~impl.commit.metadata_writer.WrittenFiles`, owned by the metadata writer).
When the publish call itself fails, whether the snapshot landed is unknown: nothing is
deleted, and the retry first looks for its own snapshot (same commit user, identifier and
kind) before trying again (:mod:`impl.commit.outcome` decides, with an ``Outcome``).

This module keeps the public API and one try; the jobs around it live in their own modules:
:mod:`impl.commit.retry` (the retry loop and backoff), :mod:`impl.commit.metadata_writer`
(manifests, lists, index manifest, the snapshot record, and their cleanup),
:mod:`impl.commit.outcome` (whether an unknown publish landed) and :mod:`impl.commit.attempt`
(what a publication carries through its tries).
"""

from __future__ import annotations

import logging
import random
import threading
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from impl.commit.attempt import Attempt, Checked, CommitStats, Part, UnknownOutcome
from impl.commit.conflicts import Fold, KeySortKey, check_conflicts, foreign_writes_since
from impl.commit.live_files import LiveFiles
from impl.commit.messages import (
    BATCH_COMMIT_IDENTIFIER,
    CollectedChanges,
    CommitMessage,
    ManifestCommittable,
    collect_changes,
    without_published_parts,
)
from impl.commit.metadata_writer import MetadataWriter, PartChanges
from impl.commit.options import CommitOptions
from impl.commit.outcome import Outcome, OutcomeResolver
from impl.commit.retry import publish_with_retries
from impl.commit.row_ids import assign_row_tracking, check_column_updates, with_assigned
from impl.data.binary_row import decode_row, sort_key
from impl.data.partition_names import PartitionNaming
from impl.data.types import DataType
from impl.datafile.meta import DataFileMeta
from impl.environment import PRODUCTION, Environment
from impl.errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    CommitRecoveryError,
    CommitRefusedError,
    CorruptMetadataError,
    KeyIndexConflictError,
    OverwritePartitionError,
    PaimonError,
    RowIdConflictError,
    SchemaChangedError,
    SnapshotNotExistError,
    UnsupportedFileSystemError,
)
from impl.fs.file_io import FileIO
from impl.fs.names import BranchName
from impl.fs.paths import LATEST_HINT, MAIN_BRANCH, IdFactory, TablePaths
from impl.manifest.entries import live_entries
from impl.manifest.manifest_file import (
    AVRO,
    IndexManifestFile,
    ManifestFile,
    ManifestList,
    checked_format,
    manifest_avro_codec,
    manifest_format_option,
    may_hold_partitions,
)
from impl.manifest.merger import ManifestFileMerger
from impl.manifest.records import FileKind, ManifestEntry, ManifestFileMeta
from impl.schema.evolution import commit_schema_problem
from impl.schema.manager import SchemaManager
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotCommit, SnapshotManager
from impl.snapshot.records import CommitKind, Snapshot
from impl.snapshot.references import data_file_paths

log = logging.getLogger(__name__)


class FileStoreCommit:
    """Commits CommitMessages of one table as one commit user.

    >>> commit = FileStoreCommit(FileIO(), "/tmp/wh/db.db/t", schema, commit_user="job-1")  # doctest: +SKIP
    >>> commit.commit(ManifestCommittable(1, messages)).snapshot_ids                         # doctest: +SKIP
    [1, 2]
    """

    def __init__(
        self,
        file_io: FileIO,
        table_path: str,
        schema: TableSchema,
        *,
        commit_user: str | None = None,
        options: CommitOptions | None = None,
        table_name: str | None = None,
        env: Environment = PRODUCTION,
        manifest_file: ManifestFile | None = None,
        branch: BranchName = MAIN_BRANCH,
        clock_millis: Callable[[], int] | None = None,
        sleep: Callable[[float], None] | None = None,
        monotonic: Callable[[], float] | None = None,
        jitter: random.Random | None = None,
        id_factory: IdFactory | None = None,
        snapshot_commit: SnapshotCommit | None = None,
    ):
        """``env``: the wall clock of snapshot times, the retry loop's ``sleep`` and
        ``monotonic`` clock (its timeout), the random source of the backoff's jitter and the ids
        of new file names and of the default commit user (the real ones by default).
        ``clock_millis``, ``sleep``, ``monotonic``, ``jitter`` and ``id_factory`` override one
        part of it each (the explorer's per-writer clocks). ``snapshot_commit``: who publishes
        the snapshots (default: an atomic create on ``file_io``; a REST catalog's server)."""
        env = env.with_parts(clock_millis=clock_millis, monotonic=monotonic, sleep=sleep, new_id=id_factory)
        self.env = env
        self.file_io = file_io
        # a branch's snapshots go to branch/branch-<name>/snapshot; manifests are shared
        self.options = options or CommitOptions.from_options(schema.options)
        self.paths = TablePaths(table_path, id_factory=env.new_id, branch=branch, layout=self.options.layout)
        self.schema = schema
        self.commit_user = commit_user or env.new_id()
        self.table_name = table_name or self.paths.table_path
        self._sleep = env.sleep
        self._monotonic = env.monotonic
        # the default environment's jitter stays the ``random`` module's (None), as before the seam
        self._jitter = jitter if jitter is not None else (
            None if env.new_random is PRODUCTION.new_random else env.new_random())

        self.partition_names = list(schema.partition_keys)
        self.partition_type: list[DataType] = [schema.field(k).type for k in schema.partition_keys]
        self.partition_naming = PartitionNaming(tuple(self.partition_names), tuple(self.partition_type),
                                                self.options.partition_default_name, self.options.partition_legacy_name)
        self.key_type: list[DataType] | None = (
            [schema.field(k).type for k in schema.trimmed_primary_keys] if schema.primary_keys else None
        )
        self.snapshot_manager = SnapshotManager(file_io, self.paths, snapshot_commit=snapshot_commit)
        self.schema_manager = SchemaManager(file_io, self.paths)
        self.schema_manager.remember(schema)
        self._latest_schema = schema  # newest schema seen; the next probe starts after it
        # refused now, before anything is written: Java reads the metadata of such a table in
        # no format this could write
        manifest_format = checked_format(manifest_format_option(schema.options))
        codec = manifest_avro_codec(schema.options)
        if manifest_format == AVRO:
            codec.checked()
        self.manifest_file = manifest_file or ManifestFile(
            file_io, self.paths, self.partition_type, schema_id=schema.id,
            target_file_size_bytes=self.options.merge.target_file_size_bytes, manifest_format=manifest_format,
            codec=codec,
        )
        self.manifest_list = ManifestList(file_io, self.paths, manifest_format=manifest_format, codec=codec)
        self.index_manifest_file = IndexManifestFile(file_io, self.paths, manifest_format=manifest_format, codec=codec)
        self.merger = ManifestFileMerger(self.manifest_file, self.options.merge)
        self._metadata = MetadataWriter(
            file_io, self.paths, manifest_file=self.manifest_file, manifest_list=self.manifest_list,
            index_manifest_file=self.index_manifest_file, merger=self.merger, key_type=self.key_type,
            describe_partition=self.describe_partition, read_live=self._read_live, clock_millis=env.clock_millis)
        # the conflict check compares key ranges only on primary-key tables
        self._key_sort_key: KeySortKey | None = (
            _CachedKeySortKey(self.key_type) if self.key_type is not None else None)
        self._live: LiveFiles | None = None  # live files of the newest snapshot this committer knows
        # publications whose outcome was unknown when they gave up, by (identifier, kind):
        # resolved before the same identifier is committed again, so a repeat never doubles it
        self._unknown_outcomes: dict[tuple[int, CommitKind], UnknownOutcome] = {}
        self._lock = threading.RLock()
        self._last_published: Snapshot | None = None

    # ================================================================== public API

    def commit(self, committable: ManifestCommittable | Sequence[CommitMessage],
               identifier: int = BATCH_COMMIT_IDENTIFIER) -> CommitStats:
        """Publish an APPEND snapshot for the new files, then a COMPACT one for compaction changes.

        A conflict raises a :class:`CommitConflictError` subclass; ``error.published_snapshot_ids``
        lists what this call had already published (the APPEND snapshot stays when only the
        COMPACT part conflicts).
        """
        self._require_atomic_create()
        committable = self._as_committable(committable, identifier)
        changes = original = collect_changes(committable.messages)
        stats = CommitStats()
        with self._lock:
            try:
                checked: Checked | None = None
                if changes.has_append and self._resolve_unknown(committable.identifier, CommitKind.APPEND,
                                                                original, stats):
                    changes = replace(changes, append_table=[], append_changelog=[], append_index=[],
                                      append_index_views={})
                if changes.has_compact and self._resolve_unknown(committable.identifier, CommitKind.COMPACT,
                                                                 original, stats):
                    changes = replace(changes, compact_table=[], compact_changelog=[], compact_index=[])
                compact = Part.of(changes, CommitKind.COMPACT)
                if changes.has_append:
                    # optimistic path: check once against the latest now; _try_commit skips
                    # re-checking if nobody else commits in between
                    append = Part.of(changes, CommitKind.APPEND)
                    checked = self._check_now(self.snapshot_manager.latest_snapshot(), append, CommitKind.APPEND)
                    sid = self._try_commit(Attempt(CommitKind.APPEND, append, committable, stats, checked))
                    # assume the COMPACT snapshot follows ours directly; re-checked if not
                    checked = self._check_now(self._published_snapshot(sid), compact,
                                              CommitKind.COMPACT) if changes.has_compact else None
                if changes.has_compact:
                    self._try_commit(Attempt(CommitKind.COMPACT, compact, committable, stats, checked))
            except PaimonError as e:
                self._on_failure(e, committable.identifier, original, stats)
                raise
        return stats

    def _published_snapshot(self, snapshot_id: int) -> Snapshot | None:
        """Snapshot ``snapshot_id`` that this committer just published: the object it wrote,
        or read back when the id was found after an unknown outcome."""
        own = self._last_published
        if own is not None and own.id == snapshot_id:
            return own
        # found after an unknown outcome, it may be expired already: the latest then serves as
        # the COMPACT part's first base (its check is repeated against whatever is latest anyway)
        return self.snapshot_manager.try_snapshot(snapshot_id) or self.snapshot_manager.latest_snapshot()

    def _expired_meanwhile(self, snapshot: Snapshot | None, error: FileNotFoundError) -> bool:
        """True when ``snapshot`` was expired (or rolled back) while we read its metadata, which
        is why a file it names was missing; otherwise a retained snapshot lost a file, which is
        corruption and raised as such."""
        if snapshot is not None and not self.snapshot_manager.snapshot_exists(snapshot.id):
            return True
        missing = error.filename or (error.args[0] if error.args else "?")
        where = f"snapshot {snapshot.id}" if snapshot is not None else "the table"
        raise CorruptMetadataError(str(missing), f"referenced by {where} of {self.table_name} but missing") from error

    def _check_now(self, snapshot: Snapshot | None, part: Part, kind: CommitKind) -> Checked | None:
        """The optimistic check of ``part`` against ``snapshot``; None when it expired while we
        read it (the retry loop then checks against the new latest)."""
        try:
            live = self._live_at(snapshot, self._live_scope(part, overwrite=False))
        except FileNotFoundError as e:
            if self._expired_meanwhile(snapshot, e):
                return None
            raise
        fold = check_conflicts(live, part.table, kind, self._key_sort_key, describe_partition=self.describe_partition)
        return Checked(snapshot.id if snapshot else None, snapshot.delta_manifest_list if snapshot else None, fold,
                        snapshot)

    def overwrite(
        self,
        partition: Mapping[str, Any] | None,
        committable: ManifestCommittable | Sequence[CommitMessage],
        identifier: int = BATCH_COMMIT_IDENTIFIER,
        *,
        dynamic: bool = False,
    ) -> CommitStats:
        """Replace the files of the matching partitions with the new files, in one OVERWRITE snapshot.

        ``partition`` is a static spec (``{"dt": "2024-01-01"}``; a prefix of the partition
        keys) or None for the whole table. With ``dynamic=True`` and no spec, only partitions
        that receive new files are replaced, and nothing is published if there are none.
        Compaction changes in the messages follow in a COMPACT snapshot.
        """
        self._require_atomic_create()
        committable = self._as_committable(committable, identifier)
        changes = collect_changes(committable.messages)
        stats = CommitStats()
        matches = self._overwrite_matcher(partition, changes, dynamic)
        with self._lock:
            return self._overwrite_locked(partition, changes, committable, stats, matches)

    def drop_partitions(self, partitions: Sequence[Mapping[str, Any]],
                        identifier: int = BATCH_COMMIT_IDENTIFIER) -> CommitStats:
        """Delete every file of the partitions matching any of ``partitions`` (each a non-empty
        spec as for :meth:`overwrite`) in one OVERWRITE snapshot with no new files (Paimon's
        dropPartitions)."""
        specs = [dict(p) for p in partitions]
        if not specs or any(not p for p in specs):
            raise OverwritePartitionError(f"drop_partitions of {self.table_name} needs non-empty partition specs, "
                                          f"got {specs}")
        self._require_atomic_create()
        committable = self._as_committable([], identifier)
        changes = collect_changes(committable.messages)
        matchers = [self._overwrite_matcher(p, changes, False) for p in specs]

        def matches(p: bytes) -> bool:
            return any(m is not None and m(p) for m in matchers)

        with self._lock:
            return self._overwrite_locked(None, changes, committable, CommitStats(), matches)

    def _overwrite_locked(self, partition: Mapping[str, Any] | None, changes: CollectedChanges,
                          committable: ManifestCommittable, stats: CommitStats,
                          matches: Callable[[bytes], bool] | None) -> CommitStats:
        original = changes
        try:
            if matches is not None and self._resolve_unknown(committable.identifier, CommitKind.OVERWRITE,
                                                             original, stats):
                matches = None
            if matches is not None and self._is_overwrite_remainder(committable):
                matches = None  # its OVERWRITE landed already: only the COMPACT part is left
            if changes.has_compact and self._resolve_unknown(committable.identifier, CommitKind.COMPACT,
                                                             original, stats):
                changes = replace(changes, compact_table=[], compact_changelog=[], compact_index=[])
            if matches is not None:
                if partition:
                    strays = [e.file.file_name for e in changes.append_table if not matches(e.partition)]
                    if strays:
                        raise OverwritePartitionError(
                            f"overwrite of partition {dict(partition)} of {self.table_name} carries files of "
                            f"other partitions: {', '.join(strays)}")
                self._try_commit(Attempt(CommitKind.OVERWRITE, Part.of(changes, CommitKind.OVERWRITE),
                                          committable, stats, overwrite_matches=matches))
            if changes.has_compact:
                self._try_commit(Attempt(CommitKind.COMPACT, Part.of(changes, CommitKind.COMPACT),
                                          committable, stats))
        except PaimonError as e:
            self._on_failure(e, committable.identifier, original, stats)
            raise
        return stats

    def _on_failure(self, error: PaimonError, identifier: int, changes: CollectedChanges, stats: CommitStats) -> None:
        error.published_snapshot_ids = list(stats.snapshot_ids)
        if isinstance(error, CommitOutcomeUnknownError):
            # the caller is told to repeat the call: the parts that did land must not be redone
            for kind, sid in zip(stats.snapshot_kinds, stats.snapshot_ids, strict=True):
                self._unknown_outcomes[(identifier, kind)] = UnknownOutcome(landed_snapshot_id=sid,
                                                                             part=Part.of(changes, kind))

    def filter_committed(self, committables: Sequence[ManifestCommittable]) -> list[ManifestCommittable]:
        """The committables (or parts of them) not yet published by this commit user.

        For recovery after a crash or an unknown outcome: a part (APPEND or COMPACT) is
        committed if a snapshot of this user has the same identifier and kind; and, since a
        user's identifiers only grow, everything below the user's newest identifier is too.
        Re-committing what this returns completes each committable exactly once.
        """
        if not committables:
            return []
        min_identifier = min(c.identifier for c in committables)
        done: set[tuple[int, CommitKind]] = set()
        newest_identifier: int | None = None
        scanned_below = False  # the scan reached a snapshot older than every identifier asked about
        for snap in self.snapshot_manager.snapshots_of_user(self.commit_user):
            if newest_identifier is None:
                newest_identifier = snap.commit_identifier
            done.add((snap.commit_identifier, snap.commit_kind))
            if snap.commit_identifier < min_identifier:
                scanned_below = True
                break
        out = []
        for c in committables:
            if newest_identifier is not None and c.identifier < newest_identifier:
                continue
            overwritten = (c.identifier, CommitKind.OVERWRITE) in done
            messages = list(c.messages)
            # an overwrite publishes its new files as the OVERWRITE part, its compaction as COMPACT
            if overwritten or (c.identifier, CommitKind.APPEND) in done:
                messages = [m.without_append_part() for m in messages]
            if (c.identifier, CommitKind.COMPACT) in done:
                messages = [m.without_compact_part() for m in messages]
            messages = [m for m in messages if not m.is_empty()]
            # an empty committable can still mean something (an overwrite that truncates):
            # it is dropped only once its own OVERWRITE snapshot exists (checked above)
            if messages or (not c.messages and not overwritten):
                out.append(replace(c, messages=tuple(messages)))
        if out and not scanned_below and (self.snapshot_manager.earliest_snapshot_id() or 1) > 1:
            # The retained snapshots may not reach back to when these parts were committed:
            # a part published in a snapshot expired since looks uncommitted. Its files tell:
            # named by a retained snapshot (live, or deleted since), the others gone with expired
            # snapshots, means published; all gone means no one can tell any more.
            published = self._files_named_by_retained_snapshots()
            gone = {f.file_name for c in out for m in c.messages for f in m.written_data_files()
                    if f.file_name not in published
                    and not self.file_io.file_exists(self.data_file_path(m.partition, m.bucket, f))}
            out = [replace(c, messages=tuple(without_published_parts(c.messages, published, gone))) for c in out]
            out = [c for c in out if c.messages]
            self._check_recoverable(out)
        return out

    def _files_named_by_retained_snapshots(self) -> set[str]:
        """Names of the data files live in the latest snapshot or deleted by a retained one
        (a file is deleted only after a snapshot added it)."""
        latest = self.snapshot_manager.latest_snapshot()
        if latest is None:
            return set()
        names = {e.file.file_name for e in self._read_live(latest)}
        earliest = self.snapshot_manager.earliest_snapshot_id() or latest.id
        for snapshot_id in range(earliest, latest.id + 1):
            try:
                snap = self.snapshot_manager.snapshot(snapshot_id)
            except SnapshotNotExistError:
                # expired during this scan: a part only it deleted the files of is then caught by the
                # existence check once expiration removed them (the race any recovery outside the
                # retention window has)
                continue
            for e in self.manifest_file.read_all(self.manifest_list.read_delta_manifests(snap)):
                if e.kind == FileKind.DELETE:
                    names.add(e.file.file_name)
        return names

    def _check_recoverable(self, committables: Sequence[ManifestCommittable]) -> None:
        """CommitRecoveryError if a file a part to re-commit names is gone (found by the
        deterministic explorer: a crashed committer's APPEND, overwritten, then expired with
        its file, was published a second time on recovery, naming the deleted file)."""
        paths = [self.data_file_path(m.partition, m.bucket, f) for c in committables for m in c.messages
                 for f in m.written_data_files()]
        missing = [p for p in paths if not self.file_io.file_exists(p)]
        if missing:
            raise CommitRecoveryError(
                f"recovery of {self.commit_user} on {self.table_name}: {len(missing)} file(s) of the parts to "
                f"commit again are gone (first: {missing[0]}). The parts were published in snapshots that expired "
                f"before this recovery (recover within snapshot.num-retained.min / snapshot.time-retained), or "
                f"their files were removed as orphans; committing them would name missing files", missing)

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the data, changelog and index files the messages' writers created (the commit
        will not happen), each data file with its extra files (its ``.index``). A file a
        compaction only moved to another level (named in both ``compact_before`` and
        ``compact_after``) is live and is kept."""
        for m in messages:
            where = self.partition_path(m.partition)
            self.file_io.delete_quietly([p for f in m.written_files()
                                         for p in data_file_paths(self.paths, where, m.bucket, f)])
            # the index files the writer created (e.g. a changed bucket's new HASH index)
            self.file_io.delete_quietly([f.external_path or self.paths.index_file_path(f.file_name)
                                         for f in (*m.new_index_files, *m.compact_new_index_files)])

    # ================================================================== helpers for callers

    def describe_partition(self, partition: bytes) -> str:
        if not self.partition_type:
            return "<unpartitioned>"
        try:
            values = decode_row(partition, self.partition_type)
        except PaimonError:
            return partition.hex()
        return "{" + ", ".join(f"{k}={v!r}" for k, v in zip(self.partition_names, values, strict=False)) + "}"

    def partition_path(self, partition: bytes) -> str:
        return self.partition_naming.path_of_row(partition)

    def data_file_path(self, partition: bytes, bucket: int, f: DataFileMeta) -> str:
        return self.paths.data_file_path(self.partition_path(partition), bucket, f.file_name, f.external_path)

    def read_live_entries(self, snapshot: Snapshot | None) -> list[ManifestEntry]:
        return self._read_live(snapshot)

    # ================================================================== internals

    def _resolve_unknown(self, identifier: int, kind: CommitKind, changes: CollectedChanges,
                         stats: CommitStats) -> bool:
        """True if an earlier call's publication of this part (identifier, kind and the entries
        of ``changes`` for that kind), whose outcome was unknown, did land; if it did not, its
        leftover metadata is deleted."""
        record = self._unknown_outcomes.get((identifier, kind))
        if record is None or record.part != Part.of(changes, kind):
            # nothing pending, or a record of another committable under this identifier (a batch
            # commit after an unrepeated failed one): it says nothing about this part
            return False
        if record.landed_snapshot_id is not None:
            del self._unknown_outcomes[(identifier, kind)]
            stats.record_published(record.landed_snapshot_id, kind)
            return True
        # If a read here fails, the record stays: the outcome is still unknown, and dropping
        # it would let the next repeat publish the part a second time.
        latest = self.snapshot_manager.latest_snapshot()
        own = self._outcomes().find_own_snapshot(record.unknown_snapshot_id, latest, identifier, kind)
        del self._unknown_outcomes[(identifier, kind)]
        if own is not None:
            stats.record_published(own, kind)
            return True
        record.resolved_not_landed()
        return False

    def _is_overwrite_remainder(self, committable: ManifestCommittable) -> bool:
        """True for what filter_committed returns of an overwrite whose OVERWRITE snapshot
        landed: only compaction changes left, and this user's (identifier, OVERWRITE) exists."""
        if not committable.messages or any(m.has_append_part() for m in committable.messages):
            return False
        for snap in self.snapshot_manager.snapshots_of_user(self.commit_user):
            if snap.commit_identifier == committable.identifier and snap.commit_kind is CommitKind.OVERWRITE:
                return True
            if snap.commit_identifier < committable.identifier:
                return False
        return False

    def _require_atomic_create(self) -> None:
        if self.snapshot_manager.snapshot_commit is not None:
            return  # the catalog publishes: its store's guarantees count, not this file system's
        if not self.file_io.supports_atomic_create():
            raise UnsupportedFileSystemError(
                f"cannot commit to {self.table_name}: file system {type(self.file_io.fs).__name__} has no atomic "
                "create-if-absent, so two writers could both publish the same snapshot id")
        # An object store is probed once (does it refuse a second If-None-Match PUT?) before
        # this commit writes any file, so a store that ignores the condition is left untouched.
        self.file_io.ensure_atomic_create(self.paths.snapshot_dir)

    def _as_committable(self, c: ManifestCommittable | Sequence[CommitMessage],
                        identifier: int) -> ManifestCommittable:
        if isinstance(c, ManifestCommittable):
            return c
        return ManifestCommittable(identifier, tuple(c))

    def _read_live(self, snapshot: Snapshot | None, partitions: frozenset[bytes] | None = None,
                   metas: list[ManifestFileMeta] | None = None) -> list[ManifestEntry]:
        """Live entries of ``snapshot`` (every manifest's size and entry count checked), of
        ``partitions`` only when given: then manifests whose partition statistics rule them
        all out are not read, and the others are decoded for those partitions only. ``metas``:
        the snapshot's data manifests, when the caller has read them already."""
        if snapshot is None:
            return []
        metas = self._data_manifests(snapshot) if metas is None else metas
        if partitions is None or not self.partition_type:
            entries = live_entries(self.manifest_file.read_all(metas))
            return entries if partitions is None else [e for e in entries if e.partition in partitions]
        if not partitions:
            return []
        decoded = [decode_row(p, self.partition_type) for p in partitions]
        metas = [m for m in metas if may_hold_partitions(m, decoded, self.partition_type)]
        # an identity includes its partition: folding one partition's entries alone is exact
        keep = partitions.__contains__
        return live_entries([e for m in metas for e in self.manifest_file.read_manifest(m, keep)])

    def _read_live_scope(self, snapshot: Snapshot, partitions: frozenset[bytes] | None
                         ) -> tuple[list[ManifestEntry], frozenset[bytes] | None]:
        """The live entries of ``partitions`` (None: all) and the partitions they cover. Data
        manifests smaller together than one settled manifest are read whole: decoding them costs
        about what one partition's manifest does, and a later commit into another partition
        would read them again (a small table's cold commit reads each manifest once)."""
        metas = self._data_manifests(snapshot)
        if partitions is not None and self.partition_type \
                and sum(m.file_size for m in metas) >= self.options.merge.settled_size_bytes:
            return self._read_live(snapshot, partitions, metas), partitions
        return self._read_live(snapshot, None, metas), None

    def _data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        return self.manifest_list.read_data_manifests(snapshot)

    def _live_scope(self, part: Part, *, overwrite: bool) -> frozenset[bytes] | None:
        """The partitions whose live files a try of ``part`` needs (None: every partition).

        The conflict rules (:mod:`impl.commit.conflicts`) look only at the partitions the
        changes touch; an OVERWRITE deletes every live file of the partitions it replaces, and
        column updates of a data-evolution table are checked against every live file."""
        if overwrite or self.options.data_evolution:
            return None
        return part.touched_partitions()

    def _live_at(self, latest: Snapshot | None, scope: frozenset[bytes] | None = None) -> LiveFiles:
        """The live files of ``latest``, at least of the partitions ``scope`` names (None: of
        every partition): the cached index moved forward by the deltas of the snapshots in
        between, or read when that is not possible (cold start, expired snapshots in between,
        or a rollback that reused snapshot ids). Partitions the index does not hold yet are
        read from ``latest``'s manifests that may hold them."""
        if latest is None:
            self._live = LiveFiles()
            return self._live
        cached = self._live
        try:
            if cached is not None and cached.snapshot_id is not None and cached.snapshot_id <= latest.id:
                if not (cached.snapshot_id == latest.id and cached.snapshot_tag == latest.delta_manifest_list) \
                        and not (cached.snapshot_id < latest.id and self._advance(cached, cached.snapshot_id, latest)):
                    cached = None
            else:
                cached = None
            if cached is not None and not cached.covers(scope):
                if scope is None:
                    cached = None  # every partition is wanted: read them all at once
                else:
                    held = cached.partitions or frozenset()
                    entries, covered = self._read_live_scope(latest, scope - held)
                    if covered is None:  # read whole: the index holds every partition now
                        cached = LiveFiles(latest.id, latest.delta_manifest_list, entries)
                    else:
                        cached.extend(covered, entries)
            if cached is None:
                self._live = None
                entries, covered = self._read_live_scope(latest, scope)
                cached = LiveFiles(latest.id, latest.delta_manifest_list, entries, covered)
            self._live = cached
            return cached
        except BaseException:
            self._live = None  # a half-advanced index must never be used
            raise

    def _advance(self, cached: LiveFiles, cached_id: int, latest: Snapshot) -> bool:
        """Move ``cached`` (the live files of snapshot ``cached_id``) forward to ``latest`` by
        the deltas in between; False, with nothing changed, when one of those snapshots is gone
        or the cached one was replaced (a rollback reused its id)."""
        base = self.snapshot_manager.try_snapshot(cached_id)
        between = [latest if i == latest.id else self.snapshot_manager.try_snapshot(i)
                   for i in range(cached_id + 1, latest.id + 1)]
        present = [snap for snap in between if snap is not None]
        if base is None or base.delta_manifest_list != cached.snapshot_tag or len(present) != len(between):
            return False
        for snap in present:
            cached.advance(snap.id, snap.delta_manifest_list, self._delta_entries(snap))
        return True

    def _delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return self.manifest_file.read_all(self.manifest_list.read_delta_manifests(snapshot))

    def _overwrite_matcher(self, partition: Mapping[str, Any] | None, changes: CollectedChanges,
                           dynamic: bool) -> Callable[[bytes], bool] | None:
        """Predicate over serialized partitions to replace, or None when nothing is to be replaced."""
        if dynamic and not partition:
            targets = {e.partition for e in changes.append_table}
            if not targets:
                return None
            return targets.__contains__
        if not partition:
            return lambda p: True
        unknown = [k for k in partition if k not in self.partition_names]
        if unknown:
            raise OverwritePartitionError(f"{self.table_name} has no partition keys {unknown} "
                                          f"(partition keys: {self.partition_names})")
        spec = dict(partition)
        positions = [(self.partition_names.index(k), v) for k, v in spec.items()]

        def matches(p: bytes) -> bool:
            values = decode_row(p, self.partition_type)
            return all(_same_partition_value(values[i], v) for i, v in positions)

        return matches

    # ------------------------------------------------------------------ the retry loop (impl.commit.retry)

    def _try_commit(self, attempt: Attempt) -> int:
        """Publish the attempt's snapshot, retrying lost races; its id. An outcome still unknown
        when the loop gives up is kept, to be resolved before the same part is committed again."""
        try:
            return publish_with_retries(
                attempt, self._try_commit_once, options=self.options, table_name=self.table_name,
                commit_user=self.commit_user, monotonic=self._monotonic, sleep=self._sleep, jitter=self._jitter)
        except CommitOutcomeUnknownError:
            attempt.unknown.part = attempt.part
            self._unknown_outcomes[(attempt.committable.identifier, attempt.kind)] = attempt.unknown
            raise

    # ------------------------------------------------------------------ one try

    def _try_commit_once(self, attempt: Attempt, first_try: bool = False) -> int | None:
        """Publish once; the new snapshot id, or None when another writer took the id first."""
        unknown = attempt.unknown
        try:
            if first_try and attempt.checked is not None and not unknown.outcome_unknown:
                latest = attempt.checked.snapshot  # read a moment ago by the optimistic check
            else:
                latest = self.snapshot_manager.latest_snapshot()
        except Exception as e:
            if unknown.outcome_unknown:
                raise CommitOutcomeUnknownError(
                    f"cannot tell whether snapshot {unknown.unknown_snapshot_id} of {self.table_name} landed: {e}"
                ) from e
            raise

        if unknown.outcome_unknown:
            own = self._outcomes().resolve_try(attempt, unknown, latest)
            if own is not None:
                return own  # the previous try did land

        written = self._metadata.new_written()
        try:
            live = self._live_at(latest, self._live_scope(attempt.part,
                                                          overwrite=attempt.overwrite_matches is not None))
            changes, fold = self._checked_changes(attempt, live, latest)
            next_row_id = latest.next_row_id if latest is not None else None
            if self.options.row_tracking:
                # on every try, from the snapshot this try builds on: racing writers never share ids
                changes, next_row_id = assign_row_tracking(
                    changes, latest.id + 1 if latest is not None else 1, next_row_id or 0)
                fold = with_assigned(fold, changes)
            if self.options.data_evolution:
                self._check_column_updates(attempt, changes, live, latest)
            if attempt.part.key_index_from is not None:
                self._check_key_index(attempt.part.key_index_from, latest)
            schema_id = self._checked_schema_id()
            # deletes what it wrote if it fails
            snapshot = self._metadata.write(
                written, latest=latest, part=PartChanges(changes, attempt.part.changelog, attempt.part.index,
                                                         attempt.part.index_views, attempt.overwrite_matches),
                live=live, fold=fold, schema_id=schema_id, commit_user=self.commit_user,
                committable=attempt.committable, kind=attempt.kind, merges=attempt.stats.manifest_merges,
                next_row_id=next_row_id)
        except FileNotFoundError as e:
            if self._expired_meanwhile(latest, e):
                return None  # like a lost race: retry on the new latest
            raise

        try:
            base_gone = latest is not None and not self.snapshot_manager.snapshot_exists(latest.id)
        except BaseException:
            written.discard()  # nothing was published: a failed try leaves nothing
            raise
        if base_gone:
            # Our base expired (or was rolled back) while we worked: its id, and maybe ours,
            # can be free again, and creating ours would put a snapshot below the latest on a
            # base that is gone. Take it as a lost race and retry on the new latest. (Found by
            # the deterministic explorer; a committer that stalls between this check and the
            # create is caught after it, by OutcomeResolver.joined.)
            written.discard()
            return None
        joined = Outcome.LANDED
        outcomes = self._outcomes()
        try:
            published = self.snapshot_manager.try_create(snapshot)
            if published:
                joined = outcomes.joined(attempt.added_names(), snapshot.id, latest)
                if joined is Outcome.NOT_LANDED:
                    outcomes.withdraw(snapshot.id)
        except (UnsupportedFileSystemError, CommitRefusedError):
            written.discard()  # refused before anything was published
            raise
        except Exception as e:  # noqa: BLE001 - any failure here leaves the outcome unknown
            log.warning("publishing snapshot %s of %s failed, outcome unknown: %s", snapshot.id, self.table_name, e)
            unknown.record(snapshot.id, written, latest)
            return None
        if joined is Outcome.UNKNOWN:
            unknown.record(snapshot.id, written, latest)
            raise outcomes.stale_id_error(attempt, snapshot.id, latest)
        if published and joined is Outcome.LANDED:
            self.snapshot_manager.commit_hint(LATEST_HINT, snapshot.id)
            live.advance(snapshot.id, snapshot.delta_manifest_list, _fold_as_delta(live, fold))
            self._last_published = snapshot
            return snapshot.id
        # Lost the race for this id, or withdrew a snapshot that re-took an expired id:
        # nothing references what we wrote.
        written.discard()
        return None

    def _check_key_index(self, start: int, latest: Snapshot | None) -> None:
        """Cross-partition upserts: no snapshot after ``start`` (the one the writer's key index
        was built from) added rows for another commit user (KeyIndexConflictError)."""
        if latest is None or latest.id <= start:
            return
        foreign = foreign_writes_since(self.snapshot_manager, start, latest, self.commit_user)
        if foreign is not None:
            raise KeyIndexConflictError(
                f"{self.table_name}: {foreign}, after snapshot {start} this writer's cross-partition key index "
                "was built from; a key both wrote could be in two partitions. Write the data again with a new "
                "writer", ())

    def _check_column_updates(self, attempt: Attempt, changes: Sequence[ManifestEntry], live: LiveFiles,
                              latest: Snapshot | None) -> None:
        """Data evolution: the part's column updates against the live files and against what the
        snapshots after the one they read added (:func:`impl.commit.row_ids.check_column_updates`)."""
        start = attempt.part.row_id_check_from
        read_next: int | None = None
        later: list[ManifestEntry] = []
        if start is not None and latest is not None and latest.id > start:
            read = self.snapshot_manager.try_snapshot(start)
            if read is None:
                raise RowIdConflictError(
                    f"the column updates of {attempt.describe(self.table_name)} read snapshot {start}, which "
                    "expired before they could be checked against later commits")
            read_next = read.next_row_id or 0
            for sid in range(start + 1, latest.id + 1):
                snap = latest if sid == latest.id else self.snapshot_manager.snapshot(sid)
                if snap.commit_kind is not CommitKind.COMPACT:
                    later.extend(e for e in self._delta_entries(snap) if e.kind is FileKind.ADD)
        check_column_updates(changes, live.entries(), read_next, later)

    def _checked_changes(self, attempt: Attempt, live: LiveFiles,
                         latest: Snapshot | None) -> tuple[list[ManifestEntry], Fold]:
        """The table changes this try writes (an OVERWRITE adds DELETEs of the replaced files)
        and their fold onto ``live``, checked for conflicts unless the optimistic check still holds."""
        if attempt.overwrite_matches is not None:
            matches = attempt.overwrite_matches
            deletes = [e.with_kind(FileKind.DELETE) for e in live.entries() if matches(e.partition)]
            changes = deletes + list(attempt.part.table)
            return changes, check_conflicts(live, changes, attempt.kind, self._key_sort_key,
                                            describe_partition=self.describe_partition)
        changes = list(attempt.part.table)
        checked = attempt.checked
        latest_tag = latest.delta_manifest_list if latest else None
        if checked is not None and (checked.snapshot_id, checked.delta_manifest_list) == (live.snapshot_id, latest_tag):
            return changes, checked.fold  # nobody committed since the check: skip it (seed 003)
        return changes, check_conflicts(live, changes, attempt.kind, self._key_sort_key,
                                        describe_partition=self.describe_partition)

    def _outcomes(self) -> OutcomeResolver:
        """Outcome resolution through the current snapshot manager (which may be swapped after
        construction, as the deterministic explorer does)."""
        return OutcomeResolver(self.file_io, self.snapshot_manager, self.manifest_file, self.manifest_list,
                               commit_user=self.commit_user, table_name=self.table_name, read_live=self._read_live)

    # ------------------------------------------------------------------ the schema of one try

    def _checked_schema_id(self) -> int:
        """The schema id the next snapshot takes: the table's latest, once the commit passes the
        schema rule (:func:`impl.schema.evolution.commit_schema_problem`) against it.

        A commit prepared under schema N that meets a newer schema L is published under L when
        nothing its files depend on changed (its files keep schema id N and are read by field
        id); otherwise it is refused with :class:`SchemaChangedError` before anything is
        written. The latest schema is found by probing ``schema-(id+1)`` (one HEAD, no listing)."""
        latest = self.schema_manager.latest_from(self._latest_schema)
        self._latest_schema = latest
        problem = commit_schema_problem(self.schema, latest)
        if problem is not None:
            raise SchemaChangedError(
                f"commit to {self.table_name} was prepared under schema {self.schema.id}, but the table is now at "
                f"schema {latest.id}: {problem}. Nothing was published; write the data again under the new schema",
                self.schema.id, latest.id)
        return latest.id



class _CachedKeySortKey:
    """Serialized primary key -> comparable value, memoized: the conflict check compares the
    same boundary keys of live files on every commit."""

    _MAX_ENTRIES = 100_000

    def __init__(self, key_type: Sequence[DataType]):
        self._key_type = key_type
        self._cache: dict[bytes, Any] = {}

    def __call__(self, key: bytes) -> Any:
        v = self._cache.get(key)
        if v is None:
            v = sort_key(decode_row(key, self._key_type))
            if len(self._cache) > self._MAX_ENTRIES:
                self._cache.clear()
            self._cache[key] = v
        return v



def _fold_as_delta(live: LiveFiles, fold: Fold) -> list[ManifestEntry]:
    deletes = [live.by_identity[i].with_kind(FileKind.DELETE) for i in fold.removed if i in live.by_identity]
    return deletes + list(fold.added.values())


def _same_partition_value(actual: Any, wanted: Any) -> bool:
    if actual == wanted:
        return True
    # partition specs usually come as strings ({"dt": "2024-01-01"}, {"hr": "10"})
    return actual is not None and str(actual) == str(wanted)


__all__ = ["FileStoreCommit", "CommitStats", "CommitConflictError"]

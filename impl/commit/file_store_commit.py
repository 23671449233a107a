"""FileStoreCommit: turns CommitMessages into published snapshots (Paimon's FileStoreCommitImpl).

One ``commit`` call publishes up to two snapshots under one commit identifier:

1. APPEND, with the new files (plus changelog and index files), if there are any;
2. COMPACT, with compact-before as DELETE and compact-after as ADD, if there are any.

Each is one ``_Attempt`` (the part's entries, the call's committable and statistics, and
what its tries learn) and goes through ``_try_commit``: read the latest snapshot, check
conflicts against it (skipped when that snapshot is exactly the one already checked: the
optimistic path of seed 003), merge the previous base + delta manifests into the new base
list, write this snapshot's delta manifests and lists, then publish
``snapshot-<latest+1>`` with an atomic create-if-absent. Losing that race retries from the
new latest, re-checking conflicts only against the snapshots that came in between, with
exponential backoff and jitter.

Cleanup contract: a failure before publication deletes every manifest and list the attempt
wrote. When the publish call itself fails, whether the snapshot landed is unknown: nothing
is deleted, and the retry first looks for its own snapshot (same commit user, identifier
and kind) before trying again.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from impl.commit.conflicts import (
    Fold,
    KeySortKey,
    check_conflicts,
    check_deletion_vector_conflicts,
    check_index_conflicts,
)
from impl.commit.live_files import LiveFiles
from impl.commit.messages import (
    BATCH_COMMIT_IDENTIFIER,
    CollectedChanges,
    CommitMessage,
    ManifestCommittable,
    collect_changes,
)
from impl.commit.options import CommitOptions
from impl.errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    CommitRecoveryError,
    CommitRetriesExhaustedError,
    CorruptMetadataError,
    OverwritePartitionError,
    PaimonError,
    SchemaChangedError,
    UnsupportedFileSystemError,
)
from impl.format.binary_row import decode_row, sort_key
from impl.format.json_records import CommitKind, Snapshot, TableSchema
from impl.format.records import (
    DataFileMeta,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
)
from impl.format.types import DataType
from impl.fs.file_io import FileIO
from impl.fs.paths import LATEST_HINT, MAIN_BRANCH, IdFactory, TablePaths, partition_path, random_id
from impl.manifest.entries import live_entries
from impl.manifest.manifest_file import (
    IndexManifestFile,
    ManifestFile,
    ManifestList,
    checked_format,
    fold_index_entries,
    manifest_format_option,
)
from impl.manifest.merger import ManifestFileMerger, ManifestMergeKind
from impl.schema.evolution import commit_schema_problem
from impl.schema.manager import SchemaManager
from impl.snapshot.manager import SnapshotManager

log = logging.getLogger(__name__)


@dataclass
class CommitStats:
    """What one ``commit`` / ``overwrite`` call did (for callers, simulations and benchmarks)."""

    snapshot_ids: list[int] = field(default_factory=list)
    snapshot_kinds: list[CommitKind] = field(default_factory=list)  # the kind of each of snapshot_ids
    attempts: int = 0
    lost_races: int = 0
    manifest_merges: list[ManifestMergeKind] = field(default_factory=list)  # the merges that changed the base

    def record_published(self, snapshot_id: int, kind: CommitKind) -> None:
        """Note a snapshot of this call: published now, or found published by an earlier try."""
        self.snapshot_ids.append(snapshot_id)
        self.snapshot_kinds.append(kind)


@dataclass(frozen=True)
class _Part:
    """The entries of one part of a call: the APPEND (or OVERWRITE) part or the COMPACT part."""

    table: tuple[ManifestEntry, ...]
    changelog: tuple[ManifestEntry, ...]
    index: tuple[IndexManifestEntry, ...]
    # (partition, HASH index file names) its rows were routed by: checked at every try
    index_views: tuple[tuple[bytes, frozenset[str]], ...] = ()

    @staticmethod
    def of(changes: CollectedChanges, kind: CommitKind) -> _Part:
        if kind is CommitKind.COMPACT:
            return _Part(tuple(changes.compact_table), tuple(changes.compact_changelog), tuple(changes.compact_index))
        views = () if kind is CommitKind.OVERWRITE else tuple(sorted(changes.append_index_views.items()))
        return _Part(tuple(changes.append_table), tuple(changes.append_changelog), tuple(changes.append_index),
                     views)


@dataclass
class _UnknownOutcome:
    """What is known about a publication whose outcome is (or was) unknown, kept from one try
    of a snapshot to the next and, once the call gave up, until the same part is committed again."""

    outcome_unknown: bool = False  # the last publish call raised
    unknown_snapshot_id: int = 0  # the id that call tried to take
    written_files: list[str] = field(default_factory=list)  # manifests/lists of the last try
    base: Snapshot | None = None  # the snapshot that try built on (checked again if it landed)
    # set when this part did land but a later part of the same call ended unknown: a repeat
    # of the call must skip it (its files are live now) and report this snapshot again
    landed_snapshot_id: int | None = None
    # the part's entries: a later call under the same identifier is a repeat of this one only
    # if it carries the same part (batch commits all share one identifier)
    part: _Part | None = None


@dataclass(frozen=True)
class _Checked:
    """This part's conflicts were checked against snapshot ``snapshot_id`` (``tag`` tells which
    snapshot of that id), giving ``fold``: reused as long as that snapshot is still the latest."""

    snapshot_id: int | None
    tag: str | None
    fold: Fold
    # The snapshot checked against: the first try publishes on top of it without reading the
    # latest again (a lost race re-reads; the conditional create decides, not this read).
    snapshot: Snapshot | None = None


@dataclass(frozen=True)
class _Attempt:
    """One snapshot to publish (one part of a call), carried through its tries."""

    kind: CommitKind
    part: _Part
    committable: ManifestCommittable
    stats: CommitStats  # of the whole call, updated as the tries go
    checked: _Checked | None = None  # the optimistic check, reused while its snapshot stays the latest
    overwrite_matches: Callable[[bytes], bool] | None = None  # partitions an OVERWRITE replaces
    unknown: _UnknownOutcome = field(default_factory=_UnknownOutcome)

    def describe(self, table_name: str) -> str:
        return f"commit {self.committable.identifier} ({self.kind.value}) of {table_name}"

    def added_names(self) -> set[str]:
        """Names of the files this part ADDs: new for the table, so only this part can make them live."""
        return {e.file.file_name for e in self.part.table if e.kind is FileKind.ADD}


@dataclass(frozen=True)
class _WrittenLists:
    """The manifest lists and index manifest one try wrote for its snapshot."""

    base_list: str
    base_list_size: int
    delta_list: str
    delta_list_size: int
    changelog_list: str | None
    changelog_list_size: int | None
    index_manifest: str | None


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
        clock_millis: Callable[[], int] = lambda: int(time.time() * 1000),
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        manifest_file: ManifestFile | None = None,
        jitter: random.Random | None = None,
        id_factory: IdFactory | None = None,
        branch: str = MAIN_BRANCH,
    ):
        """``clock_millis``, ``sleep``, ``monotonic`` (the retry timeout's clock), ``jitter``
        (the backoff's random source, default the ``random`` module) and ``id_factory`` (the
        uuid part of new file names and the default commit user) are seams for the
        deterministic simulation; the defaults are the real ones."""
        self.file_io = file_io
        # a branch's snapshots go to branch/branch-<name>/snapshot; manifests are shared
        self.paths = TablePaths(table_path, id_factory=id_factory, branch=branch)
        self.schema = schema
        self.commit_user = commit_user or (id_factory or random_id)()
        self.options = options or CommitOptions.from_options(schema.options)
        self.table_name = table_name or self.paths.table_path
        self._clock_millis = clock_millis
        self._sleep = sleep
        self._monotonic = monotonic
        self._jitter = jitter

        self.partition_names = list(schema.partition_keys)
        self.partition_type: list[DataType] = [schema.field(k).type for k in schema.partition_keys]
        self.key_type: list[DataType] | None = (
            [schema.field(k).type for k in schema.trimmed_primary_keys] if schema.primary_keys else None
        )
        self.snapshot_manager = SnapshotManager(file_io, self.paths)
        self.schema_manager = SchemaManager(file_io, self.paths)
        self.schema_manager.remember(schema)
        self._latest_schema = schema  # newest schema seen; the next probe starts after it
        # refused now, before anything is written: Java reads the metadata of such a table in
        # no format this could write
        manifest_format = checked_format(manifest_format_option(schema.options))
        self.manifest_file = manifest_file or ManifestFile(
            file_io, self.paths, self.partition_type, schema_id=schema.id,
            target_file_size_bytes=self.options.merge.target_file_size_bytes, manifest_format=manifest_format,
        )
        self.manifest_list = ManifestList(file_io, self.paths, manifest_format=manifest_format)
        self.index_manifest_file = IndexManifestFile(file_io, self.paths, manifest_format=manifest_format)
        self.merger = ManifestFileMerger(self.manifest_file, self.options.merge)
        # the conflict check compares key ranges only on primary-key tables
        self._key_sort_key: KeySortKey | None = (
            _CachedKeySortKey(self.key_type) if self.key_type is not None else None)
        self._live: LiveFiles | None = None  # live files of the newest snapshot this committer knows
        # publications whose outcome was unknown when they gave up, by (identifier, kind):
        # resolved before the same identifier is committed again, so a repeat never doubles it
        self._unknown_outcomes: dict[tuple[int, CommitKind], _UnknownOutcome] = {}
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
                checked: _Checked | None = None
                if changes.has_append and self._resolve_unknown(committable.identifier, CommitKind.APPEND,
                                                                original, stats):
                    changes = replace(changes, append_table=[], append_changelog=[], append_index=[],
                                      append_index_views={})
                if changes.has_compact and self._resolve_unknown(committable.identifier, CommitKind.COMPACT,
                                                                 original, stats):
                    changes = replace(changes, compact_table=[], compact_changelog=[], compact_index=[])
                if changes.has_append:
                    # optimistic path: check once against the latest now; _try_commit skips
                    # re-checking if nobody else commits in between
                    checked = self._check_now(self.snapshot_manager.latest_snapshot(), changes.append_table,
                                              CommitKind.APPEND)
                    sid = self._try_commit(_Attempt(CommitKind.APPEND, _Part.of(changes, CommitKind.APPEND),
                                                    committable, stats, checked))
                    # assume the COMPACT snapshot follows ours directly; re-checked if not
                    checked = self._check_now(self._published_snapshot(sid), changes.compact_table,
                                              CommitKind.COMPACT) if changes.has_compact else None
                if changes.has_compact:
                    self._try_commit(_Attempt(CommitKind.COMPACT, _Part.of(changes, CommitKind.COMPACT),
                                              committable, stats, checked))
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

    def _check_now(self, snapshot: Snapshot | None, changes: Sequence[ManifestEntry],
                   kind: CommitKind) -> _Checked | None:
        """The optimistic check against ``snapshot``; None when it expired while we read it
        (the retry loop then checks against the new latest)."""
        try:
            live = self._live_at(snapshot)
        except FileNotFoundError as e:
            if self._expired_meanwhile(snapshot, e):
                return None
            raise
        fold = check_conflicts(live, changes, kind, self._key_sort_key, describe_partition=self.describe_partition)
        return _Checked(snapshot.id if snapshot else None, snapshot.delta_manifest_list if snapshot else None, fold,
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
                self._try_commit(_Attempt(CommitKind.OVERWRITE, _Part.of(changes, CommitKind.OVERWRITE),
                                          committable, stats, overwrite_matches=matches))
            if changes.has_compact:
                self._try_commit(_Attempt(CommitKind.COMPACT, _Part.of(changes, CommitKind.COMPACT),
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
                self._unknown_outcomes[(identifier, kind)] = _UnknownOutcome(landed_snapshot_id=sid,
                                                                             part=_Part.of(changes, kind))

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
            # a part published in a snapshot expired since looks uncommitted. Its files tell.
            self._check_recoverable(out)
        return out

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
        will not happen). A file a compaction only moved to another level (named in both
        ``compact_before`` and ``compact_after``) is live and is kept."""
        for m in messages:
            self.file_io.delete_quietly([self.data_file_path(m.partition, m.bucket, f) for f in m.written_files()])
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
        return partition_path(self.partition_names, decode_row(partition, self.partition_type),
                              self.options.partition_default_name)

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
        if record is None or record.part != _Part.of(changes, kind):
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
        own = self._find_own_snapshot(record.unknown_snapshot_id, latest, identifier, kind)
        del self._unknown_outcomes[(identifier, kind)]
        if own is not None:
            stats.record_published(own, kind)
            return True
        self._delete_manifests(record.written_files)
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

    def _read_live(self, snapshot: Snapshot | None) -> list[ManifestEntry]:
        """Live entries of ``snapshot`` (every manifest's size and entry count checked)."""
        if snapshot is None:
            return []
        entries = []
        for m in self._data_manifests(snapshot):
            entries.extend(self.manifest_file.read(m.file_name, m.file_size, m.num_added_files + m.num_deleted_files))
        return live_entries(entries)

    def _data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        return self.manifest_list.read_data_manifests(snapshot)

    def _live_at(self, latest: Snapshot | None) -> LiveFiles:
        """The live files of ``latest``: the cached index moved forward by the deltas of the
        snapshots in between, or read in full when that is not possible (cold start, expired
        snapshots in between, or a rollback that reused snapshot ids)."""
        if latest is None:
            self._live = LiveFiles()
            return self._live
        cached = self._live
        try:
            if cached is not None and cached.snapshot_id is not None and cached.snapshot_id <= latest.id:
                if cached.snapshot_id == latest.id and cached.snapshot_tag == latest.delta_manifest_list:
                    return cached
                if cached.snapshot_id < latest.id and self._advance(cached, cached.snapshot_id, latest):
                    return cached
            self._live = None
            self._live = LiveFiles(latest.id, latest.delta_manifest_list, self._read_live(latest))
            return self._live
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

    # ------------------------------------------------------------------ retry loop

    def _try_commit(self, attempt: _Attempt) -> int:
        """Publish the attempt's snapshot, retrying lost races; its id."""
        try:
            return self._retry_loop(attempt)
        except CommitOutcomeUnknownError:
            attempt.unknown.part = attempt.part
            self._unknown_outcomes[(attempt.committable.identifier, attempt.kind)] = attempt.unknown
            raise

    def _retry_loop(self, attempt: _Attempt) -> int:
        started = self._monotonic()
        retries = 0
        stats = attempt.stats
        first_try = True
        while True:
            stats.attempts += 1
            sid = self._try_commit_once(attempt, first_try)
            first_try = False
            if sid is not None:
                stats.record_published(sid, attempt.kind)
                return sid
            stats.lost_races += 1
            elapsed_ms = (self._monotonic() - started) * 1000
            timed_out = self.options.timeout_ms is not None and elapsed_ms > self.options.timeout_ms
            if retries >= self.options.max_retries or timed_out:
                if attempt.unknown.outcome_unknown:
                    raise CommitOutcomeUnknownError(
                        f"{attempt.describe(self.table_name)} by {self.commit_user}: publishing snapshot "
                        f"{attempt.unknown.unknown_snapshot_id} failed and its outcome is still unknown; nothing "
                        f"was deleted. Commit the same identifier again on this committer, or recover through "
                        f"filter_committed: either completes it once")
                raise CommitRetriesExhaustedError(
                    f"{attempt.describe(self.table_name)} gave up after {retries} retries in {elapsed_ms:.0f} ms: "
                    f"other writers kept taking the next snapshot id")
            self._sleep(self._retry_wait_seconds(retries))
            retries += 1

    def _retry_wait_seconds(self, retry: int) -> float:
        wait_ms = min(self.options.min_retry_wait_ms * (2 ** retry), self.options.max_retry_wait_ms)
        source = self._jitter if self._jitter is not None else random
        wait_ms += source.uniform(0, max(1.0, wait_ms * 0.2))
        return wait_ms / 1000.0

    # ------------------------------------------------------------------ one try

    def _try_commit_once(self, attempt: _Attempt, first_try: bool = False) -> int | None:
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
            own = self._resolve_unknown_try(attempt, unknown, latest)
            if own is not None:
                return own  # the previous try did land

        written: list[str] = []
        try:
            live = self._live_at(latest)
            changes, fold = self._checked_changes(attempt, live, latest)
            schema_id = self._checked_schema_id()
            snapshot = self._write_metadata(attempt, latest, changes, written, live, fold, schema_id)
        except FileNotFoundError as e:
            self._delete_manifests(written)
            if self._expired_meanwhile(latest, e):
                return None  # like a lost race: retry on the new latest
            raise
        except BaseException:
            self._delete_manifests(written)
            raise

        try:
            base_gone = latest is not None and not self.snapshot_manager.snapshot_exists(latest.id)
        except BaseException:
            self._delete_manifests(written)  # nothing was published: a failed try leaves nothing
            raise
        if base_gone:
            # Our base expired (or was rolled back) while we worked: its id, and maybe ours,
            # can be free again, and creating ours would put a snapshot below the latest on a
            # base that is gone. Take it as a lost race and retry on the new latest. (Found by
            # the deterministic explorer; a committer that stalls between this check and the
            # create is caught after it, by _joined.)
            self._delete_manifests(written)
            return None
        joined: bool | None = True
        try:
            published = self.snapshot_manager.try_create(snapshot)
            if published:
                joined = self._joined(attempt, snapshot.id, latest)
                if joined is False:
                    self._withdraw(snapshot.id)
        except UnsupportedFileSystemError:
            self._delete_manifests(written)
            raise
        except Exception as e:  # noqa: BLE001 - any failure here leaves the outcome unknown
            log.warning("publishing snapshot %s of %s failed, outcome unknown: %s", snapshot.id, self.table_name, e)
            self._record_unknown(unknown, snapshot.id, written, latest)
            return None
        if joined is None:
            self._record_unknown(unknown, snapshot.id, written, latest)
            raise self._stale_id_error(attempt, snapshot.id, latest)
        if published and joined:
            self.snapshot_manager.commit_hint(LATEST_HINT, snapshot.id)
            live.advance(snapshot.id, snapshot.delta_manifest_list, _fold_as_delta(live, fold))
            self._last_published = snapshot
            return snapshot.id
        # Lost the race for this id, or withdrew a snapshot that re-took an expired id:
        # nothing references what we wrote.
        self._delete_manifests(written)
        return None

    def _checked_changes(self, attempt: _Attempt, live: LiveFiles,
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
        if checked is not None and (checked.snapshot_id, checked.tag) == (live.snapshot_id, latest_tag):
            return changes, checked.fold  # nobody committed since the check: skip it (seed 003)
        return changes, check_conflicts(live, changes, attempt.kind, self._key_sort_key,
                                        describe_partition=self.describe_partition)

    @staticmethod
    def _record_unknown(unknown: _UnknownOutcome, snapshot_id: int, written: list[str], base: Snapshot | None) -> None:
        unknown.outcome_unknown = True
        unknown.unknown_snapshot_id = snapshot_id
        unknown.written_files = written
        unknown.base = base

    def _joined(self, attempt: _Attempt, snapshot_id: int, base: Snapshot | None) -> bool | None:
        """After creating ``snapshot_id`` on ``base``: whether it joined the table's history
        (True), provably did not (False), or no read tells (None).

        The create is conditional, but an id can be free twice: if this committer stalled
        between its base check and the create while others published that id and more and
        expiration deleted them, the create re-takes an expired id below the latest (found by
        the deterministic explorer). Expiration deletes snapshots in increasing id order, so a
        base still on storage, unchanged, proves that our id was never expired before the
        create: the common case, one GET. Otherwise the snapshot after ours decides: it was
        built on ours exactly when the files we added are live in its base (their names are
        ours alone); with none after ours, whether any snapshot above exists decides.
        """
        if base is None or self.snapshot_manager.still_holds(base):
            return True
        added = attempt.added_names()
        try:
            successor = self.snapshot_manager.try_snapshot(snapshot_id + 1)
            if successor is None:
                # Had ours joined, a successor could only be expired after ours was. So with
                # ours still there and no successor: a snapshot above means ours re-took an
                # expired id; none means ours is the latest, on a base expired since.
                if self.snapshot_manager.try_snapshot(snapshot_id) is None:
                    return None
                latest_id = self.snapshot_manager.latest_snapshot_id()
                if latest_id == snapshot_id:
                    return True
                return False if latest_id is not None and latest_id > snapshot_id + 1 else None
            if not added:
                return None
            after = {e.file.file_name for e in live_entries(
                self.manifest_file.read_all(self.manifest_list.read_base_manifests(successor)))}
        except FileNotFoundError:
            return None  # the successor expired while we read it
        if added <= after:
            return True
        return False if added.isdisjoint(after) else None

    def _withdraw(self, snapshot_id: int) -> None:
        """Delete the snapshot this committer created on an expired id. No one builds on it: the
        snapshot after it existed before it did, so every search for the latest passes it."""
        log.warning("snapshot %s of %s re-took an id expiration had freed; withdrawn", snapshot_id, self.table_name)
        self.file_io.delete(self.snapshot_manager.snapshot_path(snapshot_id))

    def _stale_id_error(self, attempt: _Attempt, snapshot_id: int, base: Snapshot | None) -> CommitOutcomeUnknownError:
        # The LATEST hint is not moved onto a snapshot that may be stale. Retention
        # (snapshot.num-retained.min, snapshot.time-retained) keeps this window closed in
        # practice; the deterministic explorer opens it on purpose.
        base_id = base.id if base is not None else "?"
        return CommitOutcomeUnknownError(
            f"{attempt.describe(self.table_name)} by {self.commit_user}: snapshot {snapshot_id} was created, but its "
            f"base snapshot {base_id} was expired or replaced meanwhile, so whether snapshot {snapshot_id} joined the "
            f"table's history or re-took an id that expiration had freed cannot be told. Nothing was deleted. Check "
            f"the table before committing this identifier again, and keep snapshot.num-retained.min and "
            f"snapshot.time-retained larger than any commit can stall")

    def _resolve_unknown_try(self, attempt: _Attempt, unknown: _UnknownOutcome, latest: Snapshot | None) -> int | None:
        """The id of the previous try's snapshot if it landed (and joined the history); None
        when it provably did not, after deleting what it wrote. Still undecidable, or a read
        failing on the way: CommitOutcomeUnknownError, nothing deleted."""
        tried = unknown.unknown_snapshot_id
        try:
            own = self._find_own_snapshot(tried, latest, attempt.committable.identifier, attempt.kind)
            if own is None:
                expired = self._landed_and_expired(attempt, tried, latest)
                if expired is None:
                    raise self._expired_unknown_error(attempt, tried)
                if expired:
                    return tried  # it landed; expiration already removed it
            else:
                own_joined = self._joined(attempt, own, unknown.base)
                if own_joined is None:
                    raise self._stale_id_error(attempt, own, unknown.base)
                if own_joined:
                    if latest is not None and latest.id == own:  # the hint its create did not get
                        self.snapshot_manager.commit_hint(LATEST_HINT, own)
                    return own  # its files are now referenced
                self._withdraw(own)  # it re-took an expired id: it never joined the history
        except CommitOutcomeUnknownError:
            raise
        except Exception as e:  # noqa: BLE001 - the outcome stays unknown; nothing was deleted
            raise CommitOutcomeUnknownError(
                f"cannot tell whether snapshot {tried} of {self.table_name} landed: {e}") from e
        # Known now: it did not land. Its files are ours to remove.
        self._delete_manifests(unknown.written_files)
        unknown.outcome_unknown = False
        unknown.written_files = []
        return None

    def _landed_and_expired(self, attempt: _Attempt, tried_id: int, latest: Snapshot | None) -> bool | None:
        """With no snapshot of ours among ids >= ``tried_id``: whether the unknown try did land
        and expiration removed it since (True), provably did not land (False: its files may go),
        or no read tells (None: its files must stay, a retained snapshot may list them).

        Found by the deterministic explorer: a lost response on the create, another writer
        built on our snapshot, expiration removed ours, and our cleanup then deleted a delta
        manifest the other writer's snapshot still listed.
        """
        if latest is None or latest.id < tried_id:
            return False  # nobody ever took the id
        if self.snapshot_manager.snapshot_exists(tried_id):
            return False  # another writer holds it (the scan saw it was not ours)
        added = attempt.added_names()
        earliest = self.snapshot_manager.earliest_snapshot()
        if not added or earliest is None:
            return None
        try:
            live = {e.file.file_name for e in self._read_live(earliest)}
        except FileNotFoundError:
            return None  # expired while we read it
        # our file names are ours alone: live in a retained snapshot means our snapshot landed
        return True if added <= live else None

    def _expired_unknown_error(self, attempt: _Attempt, tried_id: int) -> CommitOutcomeUnknownError:
        return CommitOutcomeUnknownError(
            f"{attempt.describe(self.table_name)} by {self.commit_user}: the outcome of publishing snapshot {tried_id} "
            f"was unknown, and snapshot {tried_id} has been expired since, so whether it was ours cannot be told. "
            f"Nothing was deleted (orphan removal reclaims what no snapshot uses). Check the table before "
            f"committing this identifier again")

    def _find_own_snapshot(self, tried_id: int, latest: Snapshot | None, identifier: int,
                           kind: CommitKind) -> int | None:
        """Our snapshot among ids >= the one the unknown try tried to take, if it landed."""
        if latest is None:
            return None
        # oldest first: a publication that landed took exactly tried_id
        for snap in self.snapshot_manager.snapshots_of_user(self.commit_user, range(tried_id, latest.id + 1),
                                                            known=latest):
            if snap.commit_identifier == identifier and snap.commit_kind is kind:
                return snap.id
        return None

    def _delete_manifests(self, names: Sequence[str]) -> None:
        self.file_io.delete_quietly(self.paths.manifest_path(n) for n in names)

    # ------------------------------------------------------------------ metadata of one try

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

    def _write_metadata(self, attempt: _Attempt, latest: Snapshot | None, changes: Sequence[ManifestEntry],
                        written: list[str], live: LiveFiles, fold: Fold, schema_id: int) -> Snapshot:
        """Write merged base list, delta manifests + list, changelog and index manifests; the
        snapshot that references them.

        Every file name goes into ``written`` as soon as it exists, for cleanup.
        """
        base_list, base_size = self._write_base_list(latest, written, attempt.stats)
        delta_list, delta_size = self._write_manifests_and_list(changes, written)
        changelog_list = changelog_size = None
        if attempt.part.changelog:
            changelog_list, changelog_size = self._write_manifests_and_list(attempt.part.changelog, written,
                                                                            name_suffix="changelog")
        index_manifest = self._write_index_manifest(latest, attempt, written, live, fold)
        lists = _WrittenLists(base_list, base_size, delta_list, delta_size, changelog_list, changelog_size,
                              index_manifest)
        previous_total = self._total_record_count(latest)
        return _new_snapshot(
            previous=latest, previous_total_records=previous_total, lists=lists, changes=changes,
            changelog=attempt.part.changelog, schema_id=schema_id, commit_user=self.commit_user,
            committable=attempt.committable, kind=attempt.kind, time_millis=self._clock_millis())

    def _write_base_list(self, latest: Snapshot | None, written: list[str], stats: CommitStats) -> tuple[str, int]:
        """Merge the previous base + delta manifests and write them as the new base list."""
        previous = self._data_manifests(latest) if latest is not None else []
        merge = self.merger.merge(previous)
        written.extend(m.file_name for m in merge.written)
        if merge.kind is not ManifestMergeKind.NONE:
            stats.manifest_merges.append(merge.kind)
        # names go into `written` before the write: a write can land and still report failure
        base_list = self.paths.new_manifest_list_name()
        written.append(base_list)
        _, size = self.manifest_list.write(merge.manifests, name=base_list)
        return base_list, size

    def _write_manifests_and_list(self, entries: Sequence[ManifestEntry], written: list[str], *,
                                  name_suffix: str = "") -> tuple[str, int]:
        """Write ``entries`` as new manifests and a list of them (a delta or changelog list)."""
        manifests = self.manifest_file.write(entries, name_suffix=name_suffix)
        written.extend(m.file_name for m in manifests)
        list_name = self.paths.new_manifest_list_name()
        written.append(list_name)
        _, size = self.manifest_list.write(manifests, name=list_name)
        return list_name, size

    def _write_index_manifest(self, latest: Snapshot | None, attempt: _Attempt, written: list[str],
                              live: LiveFiles, fold: Fold) -> str | None:
        """The index manifest of the new snapshot: the previous one, or a new one when the
        index files change (None once no index file is left).

        The index changes and the index views of the part's rows are checked against the
        previous index first (rules 5 to 7 of :mod:`impl.commit.conflicts`); deletion-vector
        index files also against the data files the snapshot will hold
        (:func:`check_deletion_vector_conflicts`). An OVERWRITE drops the index files (HASH and
        deletion vectors) of the partitions it replaces, as Paimon does: their data files all go."""
        index_manifest = latest.index_manifest if latest is not None else None
        index_changes = list(attempt.part.index)
        views = dict(attempt.part.index_views)
        if (not index_changes and not views and attempt.overwrite_matches is None
                and not (index_manifest and fold.removed)):
            return index_manifest
        previous_index = self.index_manifest_file.read(index_manifest) if index_manifest else []
        if attempt.overwrite_matches is not None:
            index_changes = _overwrite_index_changes(previous_index, index_changes, attempt.overwrite_matches)
        check_index_conflicts(previous_index, index_changes, views, describe_partition=self.describe_partition)
        added_names: dict[tuple[bytes, int], set[str]] = {}
        for e in fold.added.values():
            added_names.setdefault((e.partition, e.bucket), set()).add(e.file.file_name)

        def live_names(partition: bytes, bucket: int) -> set[str]:
            if self.key_type is None:
                # append tables: Paimon's vectors (row-level DELETE / UPDATE) name level-0 files
                names = {i.file_name for i, e in live.by_identity.items() if (e.partition, e.bucket) == (partition, bucket)}
            else:
                names = set(live.upper_level_names(partition, bucket))
            names -= {i.file_name for i in fold.removed if (i.partition, i.bucket) == (partition, bucket)}
            return names | added_names.get((partition, bucket), set())

        check_deletion_vector_conflicts(previous_index, index_changes, {(i.partition, i.bucket) for i in fold.removed},
                                        live_names, describe_partition=self.describe_partition)
        if not index_changes:
            return index_manifest
        live_index = fold_index_entries(previous_index, index_changes)
        if not live_index:
            return None
        name = self.paths.new_index_manifest_name()
        written.append(name)
        self.index_manifest_file.write(live_index, name=name)
        return name

    def _total_record_count(self, snapshot: Snapshot | None) -> int:
        """Rows live in ``snapshot``: its recorded count, or counted from its manifests when an
        older writer left the count out."""
        if snapshot is None:
            return 0
        if snapshot.total_record_count is not None:
            return snapshot.total_record_count
        return sum(e.file.row_count for e in self._read_live(snapshot))


def delta_record_count(changes: Sequence[ManifestEntry]) -> int:
    """Rows a snapshot's table changes add: ADDed files count up, DELETEd ones down."""
    return sum(e.file.row_count if e.kind is FileKind.ADD else -e.file.row_count for e in changes)


def next_watermark(committed: int | None, previous: int | None) -> int | None:
    """A snapshot's watermark: the committed one, never below the previous snapshot's."""
    if previous is None:
        return committed
    return previous if committed is None else max(committed, previous)


def _new_snapshot(*, previous: Snapshot | None, previous_total_records: int, lists: _WrittenLists,
                  changes: Sequence[ManifestEntry], changelog: Sequence[ManifestEntry], schema_id: int,
                  commit_user: str, committable: ManifestCommittable, kind: CommitKind,
                  time_millis: int) -> Snapshot:
    """The snapshot following ``previous`` that references the written ``lists``."""
    delta_records = delta_record_count(changes)
    return Snapshot(
        id=(previous.id + 1) if previous is not None else 1,
        schema_id=schema_id,
        base_manifest_list=lists.base_list,
        delta_manifest_list=lists.delta_list,
        commit_user=commit_user,
        commit_identifier=committable.identifier,
        commit_kind=kind,
        time_millis=time_millis,
        total_record_count=previous_total_records + delta_records,
        delta_record_count=delta_records,
        changelog_manifest_list=lists.changelog_list,
        index_manifest=lists.index_manifest,
        changelog_record_count=sum(e.file.row_count for e in changelog) if changelog else None,
        watermark=next_watermark(committable.watermark, previous.watermark if previous is not None else None),
        properties=dict(committable.properties) or None,
        base_manifest_list_size=lists.base_list_size,
        delta_manifest_list_size=lists.delta_list_size,
        changelog_manifest_list_size=lists.changelog_list_size,
    )


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


def _overwrite_index_changes(previous: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry],
                             matches: Callable[[bytes], bool]) -> list[IndexManifestEntry]:
    """An OVERWRITE's index changes: DELETE every live index file (HASH and deletion vectors) of a
    replaced partition (its data files all go), then the overwrite's own ADDs; its own DELETEs are
    covered by those."""
    drops = [replace(e, kind=FileKind.DELETE) for e in previous
             if e.kind is FileKind.ADD and matches(e.partition)]
    dropped = {e.identity for e in drops}
    own = [c for c in changes if not (c.kind is FileKind.DELETE and c.identity in dropped)]
    return drops + own


def _fold_as_delta(live: LiveFiles, fold: Fold) -> list[ManifestEntry]:
    deletes = [live.by_identity[i].with_kind(FileKind.DELETE) for i in fold.removed if i in live.by_identity]
    return deletes + list(fold.added.values())


def _same_partition_value(actual: Any, wanted: Any) -> bool:
    if actual == wanted:
        return True
    # partition specs usually come as strings ({"dt": "2024-01-01"}, {"hr": "10"})
    return actual is not None and str(actual) == str(wanted)


__all__ = ["FileStoreCommit", "CommitStats", "CommitConflictError"]

"""FileStoreCommit: turns CommitMessages into published snapshots (Paimon's FileStoreCommitImpl).

One ``commit`` call publishes up to two snapshots under one commit identifier:

1. APPEND, with the new files (plus changelog and index files), if there are any;
2. COMPACT, with compact-before as DELETE and compact-after as ADD, if there are any.

Each goes through ``_try_commit``: read the latest snapshot, check conflicts against it
(skipped when that snapshot is exactly the one already checked: the optimistic path of
seed 003), merge the previous base + delta manifests into the new base list, write this
snapshot's delta manifests and lists, then publish ``snapshot-<latest+1>`` with an atomic
create-if-absent. Losing that race retries from the new latest, re-checking conflicts only
against the snapshots that came in between, with exponential backoff and jitter.

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
import uuid as uuid_mod
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from impl.commit.conflicts import Fold, check_conflicts
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
    CommitRetriesExhaustedError,
    OverwritePartitionError,
    PaimonError,
    UnsupportedFileSystemError,
)
from impl.format.binary_row import decode_row, sort_key
from impl.format.json_records import CommitKind, Snapshot, TableSchema
from impl.format.records import FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta
from impl.format.types import DataType
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths, partition_path
from impl.manifest.entries import live_entries
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList, fold_index_entries
from impl.manifest.merger import ManifestFileMerger
from impl.snapshot.manager import SnapshotManager

log = logging.getLogger(__name__)


@dataclass
class CommitStats:
    """What one ``commit`` / ``overwrite`` call did (for callers, simulations and benchmarks)."""

    snapshot_ids: list[int] = field(default_factory=list)
    snapshot_kinds: list[CommitKind] = field(default_factory=list)  # the kind of each of snapshot_ids
    attempts: int = 0
    lost_races: int = 0
    manifest_merges: list[str] = field(default_factory=list)


@dataclass
class _Attempt:
    """State carried from one attempt of a snapshot to the next."""

    outcome_unknown: bool = False  # the last publish call raised
    unknown_snapshot_id: int = 0  # the id that call tried to take
    written_files: list[str] = field(default_factory=list)  # manifests/lists of the last attempt
    # set when this part did land but a later part of the same call ended unknown: a repeat
    # of the call must skip it (its files are live now) and report this snapshot again
    landed_snapshot_id: int | None = None
    # the part's entries: a later call under the same identifier is a repeat of this one only
    # if it carries the same part (batch commits all share one identifier)
    part: tuple = ()


@dataclass(frozen=True)
class _Checked:
    """This part's conflicts were checked against snapshot ``snapshot_id`` (``tag`` tells which
    snapshot of that id), giving ``fold``: reused as long as that snapshot is still the latest."""

    snapshot_id: int | None
    tag: str | None
    fold: Fold


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
        manifest_file: ManifestFile | None = None,
    ):
        self.file_io = file_io
        self.paths = TablePaths(table_path)
        self.schema = schema
        self.commit_user = commit_user or str(uuid_mod.uuid4())
        self.options = options or CommitOptions.from_options(schema.options)
        self.table_name = table_name or self.paths.table_path
        self._clock_millis = clock_millis
        self._sleep = sleep

        self.partition_names = list(schema.partition_keys)
        self.partition_type: list[DataType] = [schema.field(k).type for k in schema.partition_keys]
        self.key_type: list[DataType] | None = (
            [schema.field(k).type for k in schema.trimmed_primary_keys] if schema.primary_keys else None
        )
        self.snapshot_manager = SnapshotManager(file_io, self.paths)
        self.manifest_file = manifest_file or ManifestFile(
            file_io, self.paths, self.partition_type, schema_id=schema.id,
            target_file_size_bytes=self.options.merge.target_file_size_bytes,
        )
        self.manifest_list = ManifestList(file_io, self.paths)
        self.index_manifest_file = IndexManifestFile(file_io, self.paths)
        self.merger = ManifestFileMerger(self.manifest_file, self.options.merge)
        self._key_cache: dict[bytes, Any] = {}
        self._live: LiveFiles | None = None  # live files of the newest snapshot this committer knows
        # publications whose outcome was unknown when they gave up, by (identifier, kind):
        # resolved before the same identifier is committed again, so a repeat never doubles it
        self._unknown_outcomes: dict[tuple[int, CommitKind], _Attempt] = {}
        self._lock = threading.RLock()

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
                    changes = replace(changes, append_table=[], append_changelog=[], append_index=[])
                if changes.has_compact and self._resolve_unknown(committable.identifier, CommitKind.COMPACT,
                                                                 original, stats):
                    changes = replace(changes, compact_table=[], compact_changelog=[], compact_index=[])
                if changes.has_append:
                    # optimistic path: check once against the latest now; _try_commit skips
                    # re-checking if nobody else commits in between
                    checked = self._check_now(self.snapshot_manager.latest_snapshot(), changes.append_table,
                                              CommitKind.APPEND)
                    sid = self._try_commit(CommitKind.APPEND, changes.append_table, changes.append_changelog,
                                           changes.append_index, committable, stats, checked)
                    # assume the COMPACT snapshot follows ours directly; re-checked if not
                    checked = self._check_now(self.snapshot_manager.snapshot(sid), changes.compact_table,
                                              CommitKind.COMPACT) if changes.has_compact else None
                if changes.has_compact:
                    self._try_commit(CommitKind.COMPACT, changes.compact_table, changes.compact_changelog,
                                     changes.compact_index, committable, stats, checked)
            except PaimonError as e:
                self._on_failure(e, committable.identifier, original, stats)
                raise
        return stats

    def _check_now(self, snapshot: Snapshot | None, changes: list[ManifestEntry], kind: CommitKind) -> _Checked:
        fold = check_conflicts(self._live_at(snapshot), changes, kind, self._key_sort_key,
                               describe_partition=self.describe_partition)
        return _Checked(snapshot.id if snapshot else None, snapshot.delta_manifest_list if snapshot else None, fold)

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

    def _overwrite_locked(self, partition, changes: CollectedChanges, committable, stats, matches) -> CommitStats:
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
                self._try_commit(CommitKind.OVERWRITE, changes.append_table, changes.append_changelog,
                                 changes.append_index, committable, stats, None, overwrite_matches=matches)
            if changes.has_compact:
                self._try_commit(CommitKind.COMPACT, changes.compact_table, changes.compact_changelog,
                                 changes.compact_index, committable, stats, None)
        except PaimonError as e:
            self._on_failure(e, committable.identifier, original, stats)
            raise
        return stats

    def _on_failure(self, error: PaimonError, identifier: int, changes: CollectedChanges, stats: CommitStats) -> None:
        error.published_snapshot_ids = list(stats.snapshot_ids)
        if isinstance(error, CommitOutcomeUnknownError):
            # the caller is told to repeat the call: the parts that did land must not be redone
            for kind, sid in zip(stats.snapshot_kinds, stats.snapshot_ids):
                self._unknown_outcomes[(identifier, kind)] = _Attempt(landed_snapshot_id=sid,
                                                                      part=_part_key(changes, kind))

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
        for sid in reversed(self.snapshot_manager.snapshot_ids()):
            snap = self.snapshot_manager.try_snapshot(sid)
            if snap is None or snap.commit_user != self.commit_user:
                continue
            if newest_identifier is None:
                newest_identifier = snap.commit_identifier
            done.add((snap.commit_identifier, snap.commit_kind))
            if snap.commit_identifier < min_identifier:
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
        return out

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the data files the messages' writers created (the commit will not happen)."""
        for m in messages:
            bucket_dir_files = [self.data_file_path(m.partition, m.bucket, f) for f in m.written_files()]
            self.file_io.delete_quietly(bucket_dir_files)

    # ================================================================== helpers for callers

    def describe_partition(self, partition: bytes) -> str:
        if not self.partition_type:
            return "<unpartitioned>"
        try:
            values = decode_row(partition, self.partition_type)
        except PaimonError:
            return partition.hex()
        return "{" + ", ".join(f"{k}={v!r}" for k, v in zip(self.partition_names, values)) + "}"

    def partition_path(self, partition: bytes) -> str:
        return partition_path(self.partition_names, decode_row(partition, self.partition_type))

    def data_file_path(self, partition: bytes, bucket: int, f) -> str:
        return self.paths.data_file_path(self.partition_path(partition), bucket, f.file_name, f.external_path)

    def read_live_entries(self, snapshot: Snapshot | None) -> list[ManifestEntry]:
        return self._read_live(snapshot)

    # ================================================================== internals

    def _resolve_unknown(self, identifier: int, kind: CommitKind, changes: CollectedChanges,
                         stats: CommitStats) -> bool:
        """True if an earlier call's publication of this part (identifier, kind and the entries
        of ``changes`` for that kind), whose outcome was unknown, did land; if it did not, its
        leftover metadata is deleted."""
        attempt = self._unknown_outcomes.get((identifier, kind))
        if attempt is None or attempt.part != _part_key(changes, kind):
            # nothing pending, or a record of another committable under this identifier (a batch
            # commit after an unrepeated failed one): it says nothing about this part
            return False
        if attempt.landed_snapshot_id is not None:
            del self._unknown_outcomes[(identifier, kind)]
            stats.snapshot_ids.append(attempt.landed_snapshot_id)
            stats.snapshot_kinds.append(kind)
            return True
        latest = self.snapshot_manager.latest_snapshot()  # if this fails, the outcome stays unknown
        del self._unknown_outcomes[(identifier, kind)]
        own = self._find_own_snapshot(attempt.unknown_snapshot_id, latest, identifier, kind)
        if own is not None:
            stats.snapshot_ids.append(own)
            stats.snapshot_kinds.append(kind)
            return True
        self.file_io.delete_quietly(self.paths.manifest_path(n) for n in attempt.written_files)
        return False

    def _is_overwrite_remainder(self, committable: ManifestCommittable) -> bool:
        """True for what filter_committed returns of an overwrite whose OVERWRITE snapshot
        landed: only compaction changes left, and this user's (identifier, OVERWRITE) exists."""
        if not committable.messages or any(m.has_append_part() for m in committable.messages):
            return False
        for sid in reversed(self.snapshot_manager.snapshot_ids()):
            snap = self.snapshot_manager.try_snapshot(sid)
            if snap is None or snap.commit_user != self.commit_user:
                continue
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

    def _as_committable(self, c, identifier: int) -> ManifestCommittable:
        if isinstance(c, ManifestCommittable):
            return c
        return ManifestCommittable(identifier, tuple(c))

    def _key_sort_key_impl(self, key: bytes):
        v = self._key_cache.get(key)
        if v is None:
            v = sort_key(decode_row(key, self.key_type))
            if len(self._key_cache) > 100_000:
                self._key_cache.clear()
            self._key_cache[key] = v
        return v

    @property
    def _key_sort_key(self):
        return self._key_sort_key_impl if self.key_type is not None else None

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
                if cached.snapshot_id < latest.id:
                    base = self.snapshot_manager.try_snapshot(cached.snapshot_id)
                    between = [latest if i == latest.id else self.snapshot_manager.try_snapshot(i)
                               for i in range(cached.snapshot_id + 1, latest.id + 1)]
                    if (base is not None and base.delta_manifest_list == cached.snapshot_tag
                            and all(s is not None for s in between)):
                        for snap in between:
                            cached.advance(snap.id, snap.delta_manifest_list, self._delta_entries(snap))
                        return cached
            self._live = None
            self._live = LiveFiles(latest.id, latest.delta_manifest_list, self._read_live(latest))
            return self._live
        except BaseException:
            self._live = None  # a half-advanced index must never be used
            raise

    def _delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return self.manifest_file.read_all(self.manifest_list.read_delta_manifests(snapshot))

    def _overwrite_matcher(self, partition, changes: CollectedChanges, dynamic: bool):
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

    def _try_commit(
        self,
        kind: CommitKind,
        table_changes: list[ManifestEntry],
        changelog: list[ManifestEntry],
        index_changes: list[IndexManifestEntry],
        committable: ManifestCommittable,
        stats: CommitStats,
        checked: _Checked | None,
        overwrite_matches: Callable[[bytes], bool] | None = None,
    ) -> int:
        attempt = _Attempt()
        try:
            return self._retry_loop(kind, table_changes, changelog, index_changes, committable, stats, checked,
                                    overwrite_matches, attempt)
        except CommitOutcomeUnknownError:
            attempt.part = _part_key_of(table_changes, changelog, index_changes)
            self._unknown_outcomes[(committable.identifier, kind)] = attempt
            raise

    def _retry_loop(self, kind, table_changes, changelog, index_changes, committable, stats, checked,
                    overwrite_matches, attempt: _Attempt) -> int:
        started = time.monotonic()
        retries = 0
        while True:
            stats.attempts += 1
            sid = self._try_commit_once(kind, table_changes, changelog, index_changes, committable,
                                        attempt, checked, stats, overwrite_matches)
            if sid is not None:
                stats.snapshot_ids.append(sid)
                stats.snapshot_kinds.append(kind)
                return sid
            stats.lost_races += 1
            elapsed_ms = (time.monotonic() - started) * 1000
            timed_out = self.options.timeout_ms is not None and elapsed_ms > self.options.timeout_ms
            if retries >= self.options.max_retries or timed_out:
                if attempt.outcome_unknown:
                    raise CommitOutcomeUnknownError(
                        f"commit {committable.identifier} ({kind.value}) of {self.table_name} by "
                        f"{self.commit_user}: publishing snapshot {attempt.unknown_snapshot_id} failed and "
                        f"its outcome is still unknown; nothing was deleted. Commit the same identifier again "
                        f"on this committer, or recover through filter_committed: either completes it once")
                raise CommitRetriesExhaustedError(
                    f"commit {committable.identifier} ({kind.value}) of {self.table_name} gave up after "
                    f"{retries} retries in {elapsed_ms:.0f} ms: other writers kept taking the next snapshot id")
            self._sleep(self._retry_wait_seconds(retries))
            retries += 1

    def _retry_wait_seconds(self, retry: int) -> float:
        wait_ms = min(self.options.min_retry_wait_ms * (2 ** retry), self.options.max_retry_wait_ms)
        wait_ms += random.uniform(0, max(1.0, wait_ms * 0.2))
        return wait_ms / 1000.0

    # ------------------------------------------------------------------ one attempt

    def _try_commit_once(
        self,
        kind: CommitKind,
        table_changes: list[ManifestEntry],
        changelog: list[ManifestEntry],
        index_changes: list[IndexManifestEntry],
        committable: ManifestCommittable,
        attempt: _Attempt,
        checked: _Checked | None,
        stats: CommitStats,
        overwrite_matches: Callable[[bytes], bool] | None,
    ) -> int | None:
        """Publish once; the new snapshot id, or None when another writer took the id first."""
        try:
            latest = self.snapshot_manager.latest_snapshot()
        except Exception as e:
            if attempt.outcome_unknown:
                raise CommitOutcomeUnknownError(
                    f"cannot tell whether snapshot {attempt.unknown_snapshot_id} of {self.table_name} landed: {e}"
                ) from e
            raise

        if attempt.outcome_unknown:
            own = self._find_own_snapshot(attempt.unknown_snapshot_id, latest, committable.identifier, kind)
            if own is not None:
                return own  # the previous attempt did land; its files are now referenced
            # Known now: it did not land. Its files are ours to remove.
            self.file_io.delete_quietly(self.paths.manifest_path(n) for n in attempt.written_files)
            attempt.outcome_unknown = False
            attempt.written_files = []

        live = self._live_at(latest)
        if overwrite_matches is not None:
            deletes = [e.with_kind(FileKind.DELETE) for e in live.entries() if overwrite_matches(e.partition)]
            changes = deletes + table_changes
            fold = check_conflicts(live, changes, kind, self._key_sort_key, describe_partition=self.describe_partition)
        else:
            changes = table_changes
            latest_tag = latest.delta_manifest_list if latest else None
            if checked is not None and (checked.snapshot_id, checked.tag) == (live.snapshot_id, latest_tag):
                fold = checked.fold  # nobody committed since the check: skip it (seed 003)
            else:
                fold = check_conflicts(live, changes, kind, self._key_sort_key,
                                       describe_partition=self.describe_partition)

        written: list[str] = []
        try:
            snapshot = self._write_metadata(kind, latest, changes, changelog, index_changes, committable,
                                            written, stats)
        except BaseException:
            self.file_io.delete_quietly(self.paths.manifest_path(n) for n in written)
            raise

        try:
            published = self.snapshot_manager.try_publish(snapshot)
        except UnsupportedFileSystemError:
            self.file_io.delete_quietly(self.paths.manifest_path(n) for n in written)
            raise
        except Exception as e:  # noqa: BLE001 - any failure here leaves the outcome unknown
            log.warning("publishing snapshot %s of %s failed, outcome unknown: %s", snapshot.id, self.table_name, e)
            attempt.outcome_unknown = True
            attempt.unknown_snapshot_id = snapshot.id
            attempt.written_files = written
            return None
        if published:
            live.advance(snapshot.id, snapshot.delta_manifest_list, _fold_as_delta(live, fold))
            return snapshot.id
        # Lost the race for this id: nothing references what we wrote.
        self.file_io.delete_quietly(self.paths.manifest_path(n) for n in written)
        return None

    def _find_own_snapshot(self, tried_id: int, latest: Snapshot | None, identifier: int,
                           kind: CommitKind) -> int | None:
        """Our snapshot among ids >= the one the unknown attempt tried to take, if it landed."""
        if latest is None:
            return None
        for sid in range(tried_id, latest.id + 1):
            snap = latest if sid == latest.id else self.snapshot_manager.try_snapshot(sid)
            if (snap is not None and snap.commit_user == self.commit_user
                    and snap.commit_identifier == identifier and snap.commit_kind is kind):
                return sid
        return None

    def _write_metadata(
        self,
        kind: CommitKind,
        latest: Snapshot | None,
        changes: list[ManifestEntry],
        changelog: list[ManifestEntry],
        index_changes: list[IndexManifestEntry],
        committable: ManifestCommittable,
        written: list[str],
        stats: CommitStats,
    ) -> Snapshot:
        """Write merged base list, delta manifests + list, changelog and index manifests.

        Every file name goes into ``written`` as soon as it exists, for cleanup.
        """
        previous = self._data_manifests(latest) if latest is not None else []
        merge = self.merger.merge(previous)
        written.extend(m.file_name for m in merge.written)
        if merge.kind != "none":
            stats.manifest_merges.append(merge.kind)
        # names go into `written` before the write: a write can land and still report failure
        base_list = self.paths.new_manifest_list_name()
        written.append(base_list)
        _, base_size = self.manifest_list.write(merge.manifests, name=base_list)

        delta_manifests = self.manifest_file.write(changes)
        written.extend(m.file_name for m in delta_manifests)
        delta_list = self.paths.new_manifest_list_name()
        written.append(delta_list)
        _, delta_size = self.manifest_list.write(delta_manifests, name=delta_list)

        changelog_list = changelog_size = changelog_records = None
        if changelog:
            cl_manifests = self.manifest_file.write(changelog, name_suffix="changelog")
            written.extend(m.file_name for m in cl_manifests)
            changelog_list = self.paths.new_manifest_list_name()
            written.append(changelog_list)
            _, changelog_size = self.manifest_list.write(cl_manifests, name=changelog_list)
            changelog_records = sum(e.file.row_count for e in changelog)

        index_manifest = latest.index_manifest if latest is not None else None
        if index_changes:
            previous_index = self.index_manifest_file.read(index_manifest) if index_manifest else []
            live_index = fold_index_entries(previous_index, index_changes)
            index_manifest = None
            if live_index:
                index_manifest = self.paths.new_index_manifest_name()
                written.append(index_manifest)
                self.index_manifest_file.write(live_index, name=index_manifest)

        delta_records = sum(e.file.row_count if e.kind is FileKind.ADD else -e.file.row_count for e in changes)
        previous_total = 0
        if latest is not None:
            previous_total = (latest.total_record_count if latest.total_record_count is not None
                              else sum(e.file.row_count for e in self._read_live(latest)))
        watermark = committable.watermark
        if latest is not None and latest.watermark is not None:
            watermark = latest.watermark if watermark is None else max(watermark, latest.watermark)
        return Snapshot(
            id=(latest.id + 1) if latest is not None else 1,
            schema_id=self.schema.id,
            base_manifest_list=base_list,
            delta_manifest_list=delta_list,
            commit_user=self.commit_user,
            commit_identifier=committable.identifier,
            commit_kind=kind,
            time_millis=self._clock_millis(),
            total_record_count=previous_total + delta_records,
            delta_record_count=delta_records,
            changelog_manifest_list=changelog_list,
            index_manifest=index_manifest,
            changelog_record_count=changelog_records,
            watermark=watermark,
            properties=dict(committable.properties) or None,
            base_manifest_list_size=base_size,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list_size=changelog_size,
        )


def _part_key_of(table_changes, changelog, index_changes) -> tuple:
    return (tuple(table_changes), tuple(changelog), tuple(index_changes))


def _part_key(changes: CollectedChanges, kind: CommitKind) -> tuple:
    """The entries of one part of a call: the APPEND (or OVERWRITE) part or the COMPACT part."""
    if kind is CommitKind.COMPACT:
        return _part_key_of(changes.compact_table, changes.compact_changelog, changes.compact_index)
    return _part_key_of(changes.append_table, changes.append_changelog, changes.append_index)


def _fold_as_delta(live: LiveFiles, fold: Fold) -> list[ManifestEntry]:
    deletes = [live.by_identity[i].with_kind(FileKind.DELETE) for i in fold.removed if i in live.by_identity]
    return deletes + list(fold.added.values())


def _same_partition_value(actual: Any, wanted: Any) -> bool:
    if actual == wanted:
        return True
    # partition specs usually come as strings ({"dt": "2024-01-01"}, {"hr": "10"})
    return actual is not None and str(actual) == str(wanted)


__all__ = ["FileStoreCommit", "CommitStats", "CommitConflictError"]

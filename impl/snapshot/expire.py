"""Snapshot expiration (Paimon's ExpireSnapshotsImpl rules).

Which snapshots: with ``earliest`` .. ``latest`` present, snapshots below
``latest - retain_max + 1`` always go; snapshots up to ``latest - retain_min`` go if they are
older than ``older_than_millis``, stopping at the first that is not; at most ``max_deletes``
per call; the latest snapshot never goes (``retain_min`` >= 1).

What is deleted: first every list below is computed (it needs the expired snapshots'
metadata), then the expired snapshot files go, oldest first, and the EARLIEST hint is set;
only then the files below. So a crash at any point leaves every snapshot that is still
present complete, and at worst some unreferenced files, which orphan removal finds.
(Paimon deletes data before snapshot files; a crash there leaves a present snapshot whose
files are gone.)

1. data files deleted by the deltas of snapshots ``begin+1 .. end`` (``end`` being the first
   retained snapshot): they were live only in expired snapshots. A DELETE followed by an ADD
   of the same file in one delta is a level upgrade and keeps the file; as a safety net,
   nothing live in snapshot ``end`` is ever deleted;
2. changelog files of the expired snapshots;
3. manifests, manifest lists and index manifests / index files of expired snapshots that
   snapshot ``end`` does not reference (every later snapshot's base derives from ``end``'s
   base + delta, so what ``end`` does not reference no later snapshot does).

Tags: a name in ``protected`` is never deleted, whatever the rules above say: the snapshot
file of a tagged snapshot goes, its files stay until the tag goes. ``protected`` is a set of
names or a function of the expired range ``(begin, end)`` that returns one, called only when
there is something to expire; the table layer passes the files of the tags
:func:`tags_to_skip` selects and of every tag and present snapshot of the other branches.
A function is called again once the expired snapshot files are gone, for a tag created
meanwhile: with ``create_tag`` withdrawing a tag whose snapshot is gone after the tag is
written, every tag of an expired snapshot is either seen or withdrawn (apache/paimon#9220).

What a snapshot references is :mod:`impl.snapshot.references`' rule. Snapshot ``end`` must be
complete (a missing file of it is CorruptMetadataError); a missing file of an expired
snapshot was removed by an interrupted earlier run.

The result reports the files actually deleted; one whose delete failed stays an orphan.
"""

from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass
from typing import Callable, Sequence, Union

from impl.errors import PaimonError
from impl.fs.file_io import FileIO
from impl.fs.paths import EARLIEST_HINT, TablePaths
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList
from impl.manifest.records import FileKind, ManifestEntry
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.references import Missing, SnapshotFileReader, entry_paths

log = logging.getLogger(__name__)

MAX_RETAINED = 2**31 - 1

# names expiration must not delete, or a function of the expired range (begin, end) giving them
Protected = Union[frozenset[str], Callable[[int, int], frozenset[str]]]


def tags_to_skip(tag_ids: Sequence[int], begin: int, end: int) -> list[int]:
    """The tagged snapshot ids whose files expiring ``begin .. end - 1`` must keep (Paimon's
    findSkippingTags): the newest tag at or before ``begin`` and every tag before ``end``.

    Why no others: a data file is added once and deleted once, so the snapshots it is live in
    form one contiguous range. Expiration only deletes files DELETEd by deltas up to ``end``
    and not live in ``end``: such a file's range ends before ``end``, and if it reaches an
    older tag it also reaches the newest tag at or before ``begin``. Tags of ``end`` or later
    cannot hold it.
    """
    ids = sorted(set(tag_ids))
    before = [t for t in ids if t <= begin]
    start = before[-1] if before else begin
    return [t for t in ids if start <= t < end]


@dataclass(frozen=True)
class ExpireConfig:
    """Retention rules of one expiration run (Paimon's ExpireConfig)."""

    retain_min: int = 10
    retain_max: int = MAX_RETAINED
    older_than_millis: int = 0  # snapshots committed before this instant may expire
    max_deletes: int = 10
    clean_empty_directories: bool = False

    def __post_init__(self):
        if self.retain_min < 1:
            raise ValueError(f"retain_min must be >= 1 (the latest snapshot is never expired), got {self.retain_min}")
        if self.retain_max < self.retain_min:
            raise ValueError(f"retain_max {self.retain_max} is below retain_min {self.retain_min}")
        if self.max_deletes < 1:
            raise ValueError(f"max_deletes must be >= 1, got {self.max_deletes}")


@dataclass(frozen=True)
class ExpireResult:
    """What one expiration run removed (paths are in the file system's form)."""

    expired_snapshot_ids: tuple[int, ...] = ()
    deleted_data_files: tuple[str, ...] = ()
    deleted_changelog_files: tuple[str, ...] = ()
    deleted_metadata_files: tuple[str, ...] = ()


class SnapshotExpiration:
    """Expires snapshots of one table.

    ``partition_path_of`` maps a serialized partition to its directory (``dt=2024-01-01``).
    """

    def __init__(self, file_io: FileIO, paths: TablePaths, manifest_file: ManifestFile,
                 partition_path_of: Callable[[bytes], str]):
        self.file_io = file_io
        self.paths = paths
        self.manifest_file = manifest_file
        self.manifest_list = ManifestList(file_io, paths)
        self.index_manifest_file = IndexManifestFile(file_io, paths)
        self.references = SnapshotFileReader(self.manifest_list, manifest_file, self.index_manifest_file, paths)
        self.snapshot_manager = SnapshotManager(file_io, paths)
        self.partition_path_of = partition_path_of

    # ------------------------------------------------------------------ choosing

    def expire(self, config: ExpireConfig, protected: Protected = frozenset()) -> ExpireResult:
        sm = self.snapshot_manager
        latest = sm.latest_snapshot_id()
        earliest = sm.earliest_snapshot_id()
        if latest is None or earliest is None:
            return ExpireResult()
        lowest_kept_by_max = max(latest - config.retain_max + 1, earliest)
        max_exclusive = latest - config.retain_min + 1
        max_exclusive = min(max_exclusive, earliest + config.max_deletes)
        end = max_exclusive
        for sid in range(lowest_kept_by_max, max_exclusive):
            snap = sm.try_snapshot(sid)
            if snap is not None and config.older_than_millis <= snap.time_millis:
                end = sid
                break
        return self.expire_until(earliest, end, config, protected)

    # ------------------------------------------------------------------ deleting

    def expire_until(self, earliest: int, end_exclusive: int, config: ExpireConfig = ExpireConfig(),
                     protected: Protected = frozenset()) -> ExpireResult:
        """Expire snapshots ``earliest .. end_exclusive - 1``; snapshot ``end_exclusive`` must exist.
        No file whose name is in ``protected`` is deleted."""
        sm = self.snapshot_manager
        if end_exclusive <= earliest:
            return ExpireResult()
        begin = earliest
        for sid in range(end_exclusive - 1, earliest - 1, -1):
            if not sm.snapshot_exists(sid):
                begin = sid + 1  # an interrupted run already removed the ones below
                break
        end_snapshot = sm.snapshot(end_exclusive)
        protected_of = protected if callable(protected) else None
        if callable(protected):
            protected = protected(begin, end_exclusive)  # may raise (a corrupt tag): nothing deleted yet
        expired = [s for s in (sm.try_snapshot(i) for i in range(begin, end_exclusive)) if s is not None]

        # what the first retained snapshot needs, and what the expired ones reference
        keep = self.references.files(end_snapshot, Missing.RAISE)
        keep_data = {self._data_key(e) for e in keep.data_files}
        keep_meta = keep.metadata_names()
        keep_index = set(keep.index_files)
        expired_files = [self.references.files(s, Missing.SKIP, with_data=False) for s in expired]

        # 1. data files deleted by the deltas of begin+1 .. end
        data_paths: dict[tuple, str] = {}
        for sid in range(begin + 1, end_exclusive + 1):
            snap = end_snapshot if sid == end_exclusive else sm.try_snapshot(sid)
            if snap is None:
                continue
            pending: dict[tuple, ManifestEntry] = {}
            for e in self.references.delta_entries(snap, Missing.SKIP):
                key = self._data_key(e)
                if e.kind is FileKind.DELETE:
                    pending[key] = e
                else:
                    pending.pop(key, None)  # DELETE + ADD in one delta: a level upgrade
            for key, e in pending.items():
                if key not in keep_data:
                    for p in self._file_paths(e):
                        data_paths[(key, p)] = p
        data_candidates = sorted(set(data_paths.values()))

        # 2. changelog files of the expired snapshots
        changelog_candidates: list[str] = []
        for files in expired_files:
            for e in files.changelog_files:
                if self._data_key(e) not in keep_data:
                    changelog_candidates.extend(self._file_paths(e))

        # 3. manifests, lists, index manifests and index files only expired snapshots use
        meta_candidates: list[str] = []
        for files in expired_files:
            for name in sorted(files.metadata_names() - keep_meta):
                meta_candidates.append(self.paths.manifest_path(name))
            for name in sorted(set(files.index_files) - keep_index):
                meta_candidates.append(self.paths.index_file_path(name))
        meta_candidates = list(dict.fromkeys(meta_candidates))
        if protected:
            data_candidates = unprotected(data_candidates, protected)
            changelog_candidates = unprotected(changelog_candidates, protected)
            meta_candidates = unprotected(meta_candidates, protected)

        # the snapshot files, oldest first, then the hint; from here on the files above are
        # referenced by no present snapshot
        ids = []
        for snap in expired:
            self.file_io.delete(self.paths.snapshot_path(snap.id))
            ids.append(snap.id)
        sm.commit_hint(EARLIEST_HINT, end_exclusive)
        if protected_of is not None:
            # A tag written since the first reading keeps an expired snapshot: read them again
            # now that the snapshot files are gone (create_tag withdraws a tag whose snapshot
            # is gone after the tag is written, so every later one is withdrawn; apache/paimon#9220)
            again = protected_of(begin, end_exclusive)
            data_candidates = unprotected(data_candidates, again)
            changelog_candidates = unprotected(changelog_candidates, again)
            meta_candidates = unprotected(meta_candidates, again)

        deleted_data = self._delete_each(data_candidates)
        deleted_changelog = self._delete_each(changelog_candidates)
        deleted_meta = self._delete_each(meta_candidates)
        if config.clean_empty_directories:
            self._clean_empty_dirs(deleted_data + deleted_changelog)
        return ExpireResult(tuple(ids), tuple(deleted_data), tuple(deleted_changelog), tuple(deleted_meta))

    def _delete_each(self, paths: list[str]) -> list[str]:
        """Delete each path; return those really deleted (a failure leaves an orphan, logged)."""
        done = []
        for p in paths:
            try:
                self.file_io.delete(p, missing_ok=False)
                done.append(p)
            except FileNotFoundError:
                continue
            except Exception as e:  # noqa: BLE001 - an orphan is recoverable, a half-expired table is not
                log.warning("expiration could not delete %s (left for orphan removal): %s", p, e)
        return done

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _data_key(e: ManifestEntry) -> tuple:
        return (e.partition, e.bucket, e.file.file_name)

    def _file_paths(self, e: ManifestEntry) -> list[str]:
        return entry_paths(self.paths, self.partition_path_of(e.partition), e)

    def _clean_empty_dirs(self, files: list[str]) -> None:
        fs = self.file_io.fs
        dirs = sorted({posixpath.dirname(p) for p in files}, key=len, reverse=True)
        root = self.paths.table_path
        seen: set[str] = set()
        for d in dirs:
            while d and d != root and d.startswith(root) and d not in seen:
                seen.add(d)
                try:
                    if fs.ls(d, detail=False):
                        break
                    fs.rmdir(d)
                except (OSError, PaimonError):
                    break
                d = posixpath.dirname(d)


def unprotected(paths: list[str], protected: frozenset[str]) -> list[str]:
    """The paths whose file name is not protected (by a tag or another branch)."""
    return [p for p in paths if posixpath.basename(p) not in protected]


__all__ = ["ExpireConfig", "ExpireResult", "Protected", "SnapshotExpiration", "tags_to_skip", "unprotected"]

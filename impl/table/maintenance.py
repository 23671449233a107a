"""Orphan-file removal and rollback.

Both rest on :func:`used_file_names`: every file name a present snapshot references, by the
rule of :mod:`impl.snapshot.references` (shared with expiration).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from impl.errors import CorruptMetadataError
from impl.format.json_records import Snapshot
from impl.fs.paths import LATEST_HINT, TablePaths
from impl.manifest.manifest_file import IndexManifestFile
from impl.snapshot.references import Missing, PartitionPathOf, SnapshotFileReader, SnapshotFiles

if TYPE_CHECKING:  # pragma: no cover
    from impl.table.table import FileStoreTable


def snapshot_file_reader(table: "FileStoreTable") -> SnapshotFileReader:
    return SnapshotFileReader(table.manifest_list, table.manifest_file,
                              IndexManifestFile(table.file_io, table.paths), table.paths)


def used_file_names(table: "FileStoreTable", snapshots: Iterable[Snapshot] | None = None) -> set[str]:
    """Every file name the given (default: all present) snapshots reference.

    CorruptMetadataError if a metadata file of one of them is missing or corrupt: a present
    snapshot must be complete, and guessing would delete files it needs.
    """
    reader = snapshot_file_reader(table)
    used: set[str] = set()
    if snapshots is not None:
        for snap in snapshots:
            used |= reader.files(snap, Missing.RAISE).names()
        return used
    # Every present snapshot, in increasing id order, then those published since the listing,
    # until none is new: a concurrent commit's snapshot may carry older manifests forward. A
    # snapshot expired while we read it is skipped: expiration goes in increasing id order, so
    # whatever it referenced that is still in use, a later snapshot we read references too.
    # (Both found by the deterministic explorer's orphan-removal actor.)
    sm = table.snapshot_manager
    ids = sm.snapshot_ids()
    seen = 0
    while ids:
        for sid in ids:
            present = sm.try_snapshot(sid)
            if present is None:
                continue
            try:
                used |= reader.files(present, Missing.RAISE).names()
            except CorruptMetadataError:
                if sm.snapshot_exists(sid):
                    raise
        seen = max(seen, ids[-1])
        latest = sm.latest_snapshot_id()
        ids = list(range(seen + 1, latest + 1)) if latest is not None else []
    return used


def _is_candidate(table: "FileStoreTable", path: str) -> bool:
    """Files orphan cleanup may touch: data / changelog files in bucket directories, manifests,
    index files, and dot-prefixed temp files. Never schema, snapshot or hint files."""
    rel = posixpath.relpath(path, table.path)
    parts = rel.split("/")
    name = parts[-1]
    if name.startswith(".") and name.endswith(".tmp"):
        return True
    if parts[0] in ("schema", "snapshot"):
        return False
    if parts[0] in ("manifest", "index") and len(parts) == 2:
        return True
    return len(parts) >= 2 and parts[-2].startswith("bucket-")


def remove_orphan_files(table: "FileStoreTable", older_than_millis: int) -> list[str]:
    """Delete unreferenced files last modified before ``older_than_millis``; return their paths."""
    files = [f for f in table.file_io.walk_files(table.path) if _is_candidate(table, f.path)]
    if not files:
        return []
    used = used_file_names(table)  # raises before deleting anything if a snapshot is unreadable
    doomed = [f.path for f in files
              if posixpath.basename(f.path) not in used
              and f.modified_millis is not None and f.modified_millis < older_than_millis]
    table.file_io.delete_quietly(doomed)
    return doomed


# ============================================================================ rollback


@dataclass(frozen=True)
class RollbackPlan:
    """What rolling back to ``target_id`` removes.

    ``snapshot_ids`` are the newer snapshots, newest first (deleted in that order, a crash
    leaves a contiguous range); ``candidates`` maps the name of every file they reference to
    its path. Which candidates go is known only once they are gone: :meth:`files_to_delete`.
    """

    target_id: int
    snapshot_ids: tuple[int, ...]
    candidates: Mapping[str, str]

    def files_to_delete(self, still_used: Iterable[str]) -> list[str]:
        """Paths of the candidates no remaining snapshot references."""
        keep = set(still_used)
        return [p for name, p in self.candidates.items() if name not in keep]


def plan_rollback(target_id: int, newer: Sequence[SnapshotFiles], table_paths: TablePaths,
                  partition_path_of: PartitionPathOf) -> RollbackPlan:
    """The rollback to ``target_id`` given what each newer snapshot references (pure)."""
    candidates: dict[str, str] = {}
    for files in sorted(newer, key=lambda f: f.snapshot_id):
        candidates.update(files.paths(table_paths, partition_path_of))
    ids = tuple(sorted((f.snapshot_id for f in newer), reverse=True))
    return RollbackPlan(target_id, ids, candidates)


def rollback_to(table: "FileStoreTable", snapshot_id: int) -> list[str]:
    """Make ``snapshot_id`` the latest snapshot.

    Newer snapshot files are deleted newest first, the LATEST hint is set, then the files only
    the removed snapshots referenced are deleted. Returns the deleted data / metadata file
    paths. Not safe while other writers commit.
    """
    sm = table.snapshot_manager
    sm.snapshot(snapshot_id)  # SnapshotNotFoundError if it does not exist
    latest = sm.latest_snapshot_id()
    if latest is None or latest <= snapshot_id:
        return []
    reader = snapshot_file_reader(table)
    # a file of a newer snapshot already gone (an interrupted rollback) only cannot be deleted again
    newer = [reader.files(s, Missing.SKIP)
             for s in (sm.try_snapshot(i) for i in range(snapshot_id + 1, latest + 1)) if s is not None]
    plan = plan_rollback(snapshot_id, newer, table.paths, table.partition_cache.path)
    for sid in plan.snapshot_ids:
        table.file_io.delete(table.paths.snapshot_path(sid))
    sm.commit_hint(LATEST_HINT, snapshot_id)
    doomed = plan.files_to_delete(used_file_names(table))
    table.file_io.delete_quietly(doomed)
    return doomed

"""Orphan-file removal and rollback.

Both rest on :func:`used_file_names`: every file name any present snapshot needs (its
manifest lists, the manifests in them, the data files live in it and their extra files, its
changelog files, the index manifest and its index files). A data file that a snapshot's
manifests only name in a DELETE entry is not needed by it: counting those would keep
forever a file whose deletion by an expiration failed. File names carry a UUID, so a name
identifies a file within the table.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Iterable

from impl.errors import CorruptMetadataError
from impl.format.json_records import Snapshot
from impl.format.records import FileKind
from impl.fs.paths import LATEST_HINT
from impl.manifest.entries import live_entries
from impl.manifest.manifest_file import IndexManifestFile

if TYPE_CHECKING:  # pragma: no cover
    from impl.table.table import FileStoreTable


def _snapshot_file_names(table: "FileStoreTable", snap: Snapshot) -> set[str]:
    """Names of every file ``snap`` references; CorruptMetadataError if one of its metadata files is missing."""
    names: set[str] = set()
    data_entries = []
    for list_name in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list):
        if not list_name:
            continue
        names.add(list_name)
        try:
            metas = table.manifest_list.read(list_name)
        except FileNotFoundError as e:
            raise CorruptMetadataError(table.paths.manifest_path(list_name),
                                       f"manifest list of snapshot {snap.id} is missing") from e
        for m in metas:
            names.add(m.file_name)
            try:
                entries = table.manifest_file.read(m.file_name)
            except FileNotFoundError as e:
                raise CorruptMetadataError(table.paths.manifest_path(m.file_name),
                                           f"manifest of snapshot {snap.id} is missing") from e
            if list_name == snap.changelog_manifest_list:
                changelog_adds = [e for e in entries if e.kind is FileKind.ADD]
                for e in changelog_adds:
                    names.add(e.file.file_name)
                    names.update(e.file.extra_files)
            else:
                data_entries.extend(entries)
    for e in live_entries(data_entries):
        names.add(e.file.file_name)
        names.update(e.file.extra_files)
    if snap.index_manifest:
        names.add(snap.index_manifest)
        try:
            idx = IndexManifestFile(table.file_io, table.paths).read(snap.index_manifest)
        except FileNotFoundError as e:
            raise CorruptMetadataError(table.paths.manifest_path(snap.index_manifest),
                                       f"index manifest of snapshot {snap.id} is missing") from e
        names.update(e.index_file.file_name for e in idx if e.kind is FileKind.ADD)
    return names


def used_file_names(table: "FileStoreTable", snapshots: Iterable[Snapshot] | None = None) -> set[str]:
    """Every file name the given (default: all present) snapshots reference."""
    used: set[str] = set()
    for snap in (table.snapshot_manager.snapshots() if snapshots is None else snapshots):
        used |= _snapshot_file_names(table, snap)
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


def rollback_to(table: "FileStoreTable", snapshot_id: int) -> list[str]:
    """Make ``snapshot_id`` the latest snapshot.

    Newer snapshot files are deleted newest first (a crash leaves a contiguous prefix), the
    LATEST hint is set, then the files only the removed snapshots referenced are deleted.
    Returns the deleted data / metadata file paths. Not safe while other writers commit.
    """
    sm = table.snapshot_manager
    sm.snapshot(snapshot_id)  # SnapshotNotFoundError if it does not exist
    latest = sm.latest_snapshot_id()
    if latest is None or latest <= snapshot_id:
        return []
    newer = [s for s in (sm.try_snapshot(i) for i in range(snapshot_id + 1, latest + 1)) if s is not None]
    candidates: dict[str, str] = {}  # name -> path
    for snap in newer:
        for list_name in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list):
            if not list_name:
                continue
            candidates[list_name] = table.paths.manifest_path(list_name)
            try:
                metas = table.manifest_list.read(list_name)
            except FileNotFoundError:
                continue
            for m in metas:
                candidates[m.file_name] = table.paths.manifest_path(m.file_name)
        for list_name in (snap.delta_manifest_list, snap.changelog_manifest_list):
            if not list_name:
                continue
            try:
                metas = table.manifest_list.read(list_name)
            except FileNotFoundError:
                continue
            for m in metas:
                try:
                    entries = table.manifest_file.read(m.file_name)
                except FileNotFoundError:
                    continue
                for e in entries:
                    if e.kind is not FileKind.ADD:
                        continue
                    ppath = table.partition_cache.path(e.partition)
                    f = e.file
                    candidates[f.file_name] = table.paths.data_file_path(ppath, e.bucket, f.file_name, f.external_path)
                    bdir = table.paths.bucket_dir(ppath, e.bucket)
                    for x in f.extra_files:
                        candidates[x] = posixpath.join(bdir, x)
        if snap.index_manifest:
            candidates[snap.index_manifest] = table.paths.manifest_path(snap.index_manifest)
            try:
                idx = IndexManifestFile(table.file_io, table.paths).read(snap.index_manifest)
            except FileNotFoundError:
                idx = []
            for e in idx:
                if e.kind is FileKind.ADD:
                    candidates[e.index_file.file_name] = table.paths.index_file_path(e.index_file.file_name)

    for snap in sorted(newer, key=lambda s: s.id, reverse=True):
        table.file_io.delete(table.paths.snapshot_path(snap.id))
    sm.commit_hint(LATEST_HINT, snapshot_id)

    used = used_file_names(table)
    doomed = [p for name, p in candidates.items() if name not in used]
    table.file_io.delete_quietly(doomed)
    return doomed

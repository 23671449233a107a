"""Which files a snapshot references: the one rule expiration, rollback and orphan removal share.

A snapshot references its manifest lists, the manifests in them, the data files live in it
(base and delta entries folded, with the extra files of each), its changelog files (the ADD
entries of its changelog list, with their extra files), its index manifest and the index files
that manifest adds. A data file that its manifests only name in a DELETE entry is not
referenced: counting those would keep forever a file whose deletion by an expiration failed.
File names carry a UUID, so a name identifies a file within the table.

:func:`snapshot_files` is the rule, a pure function of metadata already read;
:class:`SnapshotFileReader` reads that metadata (manifest sizes and entry counts checked, as
on every read path) and says what a missing file means (:class:`Missing`).
"""

from __future__ import annotations

import enum
import posixpath
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from impl.datafile.meta import DataFileMeta
from impl.errors import CorruptMetadataError
from impl.fs.paths import TablePaths
from impl.manifest.entries import live_entries
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList
from impl.manifest.records import FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta
from impl.snapshot.records import Snapshot

PartitionPathOf = Callable[[bytes], str]


@dataclass(frozen=True)
class SnapshotFiles:
    """Every file one snapshot references, by kind (names; :meth:`paths` places them)."""

    snapshot_id: int
    manifest_lists: tuple[str, ...] = ()
    manifests: tuple[str, ...] = ()
    index_manifest: str | None = None
    data_files: tuple[ManifestEntry, ...] = ()  # live ADD entries; empty when read without data
    changelog_files: tuple[ManifestEntry, ...] = ()  # ADD entries of the changelog list
    index_files: tuple[str, ...] = ()

    def metadata_names(self) -> frozenset[str]:
        """Names in the manifest directory: manifest lists, manifests, the index manifest."""
        index = (self.index_manifest,) if self.index_manifest else ()
        return frozenset((*self.manifest_lists, *self.manifests, *index))

    def names(self) -> frozenset[str]:
        """Every referenced file name, extra files of data and changelog files included."""
        out = set(self.metadata_names())
        for e in (*self.data_files, *self.changelog_files):
            out.add(e.file.file_name)
            out.update(e.file.extra_files)
        out.update(self.index_files)
        return frozenset(out)

    def paths(self, table_paths: TablePaths, partition_path_of: PartitionPathOf) -> dict[str, str]:
        """Name -> path of every referenced file."""
        out = {n: table_paths.manifest_path(n) for n in sorted(self.metadata_names())}
        for e in (*self.data_files, *self.changelog_files):
            names = (e.file.file_name, *e.file.extra_files)
            out.update(zip(names, entry_paths(table_paths, partition_path_of(e.partition), e), strict=True))
        out.update((n, table_paths.index_file_path(n)) for n in self.index_files)
        return out


def entry_paths(table_paths: TablePaths, partition_path: str, e: ManifestEntry) -> list[str]:
    """Path of an entry's data (or changelog) file, then of each of its extra files."""
    return data_file_paths(table_paths, partition_path, e.bucket, e.file)


def data_file_paths(table_paths: TablePaths, partition_path: str, bucket: int, f: DataFileMeta) -> list[str]:
    """Path of a data (or changelog) file, then of each of its extra files (its ``.index``),
    which live and die with it."""
    bucket_dir = table_paths.bucket_dir(partition_path, bucket)
    return [table_paths.data_file_path(partition_path, bucket, f.file_name, f.external_path),
            *(posixpath.join(bucket_dir, x) for x in f.extra_files)]


def snapshot_files(snap: Snapshot, lists: Mapping[str, Sequence[ManifestFileMeta]],
                   data_entries: Sequence[ManifestEntry], changelog_entries: Sequence[ManifestEntry],
                   index_entries: Sequence[IndexManifestEntry]) -> SnapshotFiles:
    """The files ``snap`` references, given what was read of it.

    ``lists`` maps each of its manifest lists that could be read to its manifests;
    ``data_entries`` are the entries of its base and delta manifests in order (empty to skip
    data files), ``changelog_entries`` those of its changelog manifests, ``index_entries``
    those of its index manifest.
    """
    list_names = tuple(n for n in (snap.base_manifest_list, snap.delta_manifest_list,
                                   snap.changelog_manifest_list) if n)
    manifests = tuple(dict.fromkeys(m.file_name for n in list_names for m in lists.get(n, ())))
    return SnapshotFiles(
        snapshot_id=snap.id,
        manifest_lists=list_names,
        manifests=manifests,
        index_manifest=snap.index_manifest or None,
        data_files=tuple(live_entries(data_entries)),
        changelog_files=tuple(e for e in changelog_entries if e.kind is FileKind.ADD),
        index_files=tuple(dict.fromkeys(e.index_file.file_name for e in index_entries if e.kind is FileKind.ADD)),
    )


class Missing(enum.Enum):
    """What reading a snapshot's metadata does when one of its files is not there."""

    RAISE = "raise"  # CorruptMetadataError naming the snapshot: a present snapshot must be complete
    SKIP = "skip"  # read it as empty: an interrupted expiration or rollback already removed it


class SnapshotFileReader:
    """Reads the metadata of snapshots and applies :func:`snapshot_files` to it."""

    def __init__(self, manifest_list: ManifestList, manifest_file: ManifestFile,
                 index_manifest_file: IndexManifestFile, table_paths: TablePaths):
        self.manifest_list = manifest_list
        self.manifest_file = manifest_file
        self.index_manifest_file = index_manifest_file
        self.paths = table_paths

    def files(self, snap: Snapshot, missing: Missing, *, with_data: bool = True) -> SnapshotFiles:
        """What ``snap`` references; ``with_data=False`` skips reading its data manifests
        (``data_files`` stays empty), which is all expiration needs of an expired snapshot."""
        lists: dict[str, list[ManifestFileMeta]] = {}
        for name, size in ((snap.base_manifest_list, snap.base_manifest_list_size),
                           (snap.delta_manifest_list, snap.delta_manifest_list_size),
                           (snap.changelog_manifest_list, snap.changelog_manifest_list_size)):
            if name:
                lists[name] = self._list(snap, name, size, missing)
        data: list[ManifestEntry] = []
        if with_data:
            for name in (snap.base_manifest_list, snap.delta_manifest_list):
                data.extend(self.entries(snap, lists.get(name, ()), missing))
        changelog = self.entries(snap, lists.get(snap.changelog_manifest_list or "", ()), missing)
        return snapshot_files(snap, lists, data, changelog, self._index(snap, missing))

    def delta_entries(self, snap: Snapshot, missing: Missing) -> list[ManifestEntry]:
        """The entries of ``snap``'s delta manifests, in order (what the snapshot changed)."""
        return self.entries(snap, self._list(snap, snap.delta_manifest_list, snap.delta_manifest_list_size,
                                             missing), missing)

    def entries(self, snap: Snapshot, metas: Sequence[ManifestFileMeta], missing: Missing) -> list[ManifestEntry]:
        out: list[ManifestEntry] = []
        for m in metas:
            try:
                out.extend(self.manifest_file.read_manifest(m))
            except FileNotFoundError as e:
                self._missing(snap, "manifest", m.file_name, missing, e)
        return out

    def _list(self, snap: Snapshot, name: str, size: int | None, missing: Missing) -> list[ManifestFileMeta]:
        if not name:
            return []
        try:
            return self.manifest_list.read(name, size)
        except FileNotFoundError as e:
            self._missing(snap, "manifest list", name, missing, e)
            return []

    def _index(self, snap: Snapshot, missing: Missing) -> list[IndexManifestEntry]:
        if not snap.index_manifest:
            return []
        try:
            return self.index_manifest_file.read(snap.index_manifest)
        except FileNotFoundError as e:
            self._missing(snap, "index manifest", snap.index_manifest, missing, e)
            return []

    def _missing(self, snap: Snapshot, role: str, name: str, missing: Missing, error: FileNotFoundError) -> None:
        if missing is Missing.RAISE:
            raise CorruptMetadataError(self.paths.manifest_path(name),
                                       f"{role} of snapshot {snap.id} is missing") from error


__all__ = ["Missing", "SnapshotFileReader", "SnapshotFiles", "data_file_paths", "entry_paths", "snapshot_files"]

"""The metadata of one try: manifests, manifest lists, the index manifest and the snapshot record.

:class:`MetadataWriter` writes them and owns their cleanup. Every name goes into the try's
:class:`WrittenFiles` before its write starts (a write can land and still report failure),
and a write failing half-way deletes what the try wrote. Once the snapshot is written, the
caller decides its fate: published, the files are the snapshot's; otherwise it calls
:meth:`WrittenFiles.discard`, except while the outcome of the publish call is unknown
(a snapshot that landed lists them), until that outcome is resolved.

The rules (record counts, watermark, the snapshot record, an OVERWRITE's index changes) are
pure functions below; the class holds the I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

from impl.commit.conflicts import DescribePartition, Fold, check_deletion_vector_conflicts, check_index_conflicts
from impl.commit.live_files import LiveFiles
from impl.commit.messages import ManifestCommittable
from impl.data.types import DataType
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList, fold_index_entries
from impl.manifest.merger import ManifestFileMerger, ManifestMergeKind
from impl.manifest.records import FileKind, IndexManifestEntry, ManifestEntry
from impl.snapshot.records import CommitKind, Snapshot


class WrittenFiles:
    """The manifest-directory files (manifests, lists, index manifest) one try wrote: deleted
    by :meth:`discard` when the try does not publish them."""

    def __init__(self, file_io: FileIO, paths: TablePaths):
        self._file_io = file_io
        self._paths = paths
        self.names: list[str] = []

    def add(self, name: str) -> None:
        self.names.append(name)

    def discard(self) -> None:
        """Delete every file of the try (best effort: a leftover is an orphan, not an error)."""
        self._file_io.delete_quietly(self._paths.manifest_path(n) for n in self.names)


@dataclass(frozen=True)
class WrittenLists:
    """The manifest lists and index manifest one try wrote for its snapshot."""

    base_list: str
    base_list_size: int
    delta_list: str
    delta_list_size: int
    changelog_list: str | None
    changelog_list_size: int | None
    index_manifest: str | None


@dataclass(frozen=True)
class PartChanges:
    """What one try of a part writes: the table changes (an OVERWRITE's DELETEs of the
    replaced files included), its changelog and index changes, and the index views its rows
    were routed by."""

    table: Sequence[ManifestEntry]
    changelog: Sequence[ManifestEntry]
    index: Sequence[IndexManifestEntry]
    index_views: Sequence[tuple[bytes, frozenset[str]]]
    overwrite_matches: Callable[[bytes], bool] | None  # partitions an OVERWRITE replaces


class MetadataWriter:
    """Writes one try's metadata on top of the latest snapshot; see the module docstring.

    ``read_live`` (the live entries of a snapshot) serves the record-count fallback for a
    snapshot an older writer left without a count; ``clock_millis`` stamps the snapshot (a
    seam of the deterministic simulation)."""

    def __init__(self, file_io: FileIO, paths: TablePaths, *, manifest_file: ManifestFile, manifest_list: ManifestList,
                 index_manifest_file: IndexManifestFile, merger: ManifestFileMerger,
                 key_type: Sequence[DataType] | None, describe_partition: DescribePartition,
                 read_live: Callable[[Snapshot], list[ManifestEntry]], clock_millis: Callable[[], int]):
        self.file_io = file_io
        self.paths = paths
        self.manifest_file = manifest_file
        self.manifest_list = manifest_list
        self.index_manifest_file = index_manifest_file
        self.merger = merger
        self._key_type = key_type
        self._describe_partition = describe_partition
        self._read_live = read_live
        self._clock_millis = clock_millis

    def new_written(self) -> WrittenFiles:
        return WrittenFiles(self.file_io, self.paths)

    def write(self, written: WrittenFiles, *, latest: Snapshot | None, part: PartChanges, live: LiveFiles,
              fold: Fold, schema_id: int, commit_user: str, committable: ManifestCommittable, kind: CommitKind,
              merges: list[ManifestMergeKind], next_row_id: int | None = None) -> Snapshot:
        """Write merged base list, delta manifests + list, changelog and index manifests; the
        snapshot that references them (not yet published). A failure deletes what was written.

        The index changes are checked against the previous index on the way (rules 5 to 7 of
        :mod:`impl.commit.conflicts`), since only here is that index read. Merges that changed
        the base are appended to ``merges``. ``next_row_id``: the snapshot's ``nextRowId``."""
        try:
            base_list, base_size = self._write_base_list(latest, written, merges)
            delta_list, delta_size = self._write_manifests_and_list(part.table, written)
            changelog_list = changelog_size = None
            if part.changelog:
                changelog_list, changelog_size = self._write_manifests_and_list(part.changelog, written,
                                                                                name_suffix="changelog")
            index_manifest = self._write_index_manifest(latest, part, written, live, fold)
            lists = WrittenLists(base_list, base_size, delta_list, delta_size, changelog_list, changelog_size,
                                 index_manifest)
            previous_total = self._total_record_count(latest)
        except BaseException:
            written.discard()
            raise
        return new_snapshot(
            previous=latest, previous_total_records=previous_total, lists=lists, changes=part.table,
            changelog=part.changelog, schema_id=schema_id, commit_user=commit_user,
            committable=committable, kind=kind, time_millis=self._clock_millis(), next_row_id=next_row_id)

    def _write_base_list(self, latest: Snapshot | None, written: WrittenFiles,
                         merges: list[ManifestMergeKind]) -> tuple[str, int]:
        """Merge the previous base + delta manifests and write them as the new base list."""
        previous = self.manifest_list.read_data_manifests(latest) if latest is not None else []
        merge = self.merger.merge(previous)
        for m in merge.written:
            written.add(m.file_name)
        if merge.kind is not ManifestMergeKind.NONE:
            merges.append(merge.kind)
        # names go into `written` before the write: a write can land and still report failure
        base_list = self.paths.new_manifest_list_name()
        written.add(base_list)
        _, size = self.manifest_list.write(merge.manifests, name=base_list)
        return base_list, size

    def _write_manifests_and_list(self, entries: Sequence[ManifestEntry], written: WrittenFiles, *,
                                  name_suffix: str = "") -> tuple[str, int]:
        """Write ``entries`` as new manifests and a list of them (a delta or changelog list)."""
        manifests = self.manifest_file.write(entries, name_suffix=name_suffix)
        for m in manifests:
            written.add(m.file_name)
        list_name = self.paths.new_manifest_list_name()
        written.add(list_name)
        _, size = self.manifest_list.write(manifests, name=list_name)
        return list_name, size

    def _write_index_manifest(self, latest: Snapshot | None, part: PartChanges, written: WrittenFiles,
                              live: LiveFiles, fold: Fold) -> str | None:
        """The index manifest of the new snapshot: the previous one, or a new one when the
        index files change (None once no index file is left).

        The index changes and the index views of the part's rows are checked against the
        previous index first (rules 5 to 7 of :mod:`impl.commit.conflicts`); deletion-vector
        index files also against the data files the snapshot will hold
        (:func:`check_deletion_vector_conflicts`). An OVERWRITE drops the index files (HASH and
        deletion vectors) of the partitions it replaces, as Paimon does: their data files all go."""
        index_manifest = latest.index_manifest if latest is not None else None
        index_changes = list(part.index)
        views = dict(part.index_views)
        if (not index_changes and not views and part.overwrite_matches is None
                and not (index_manifest and fold.removed)):
            return index_manifest
        previous_index = self.index_manifest_file.read(index_manifest) if index_manifest else []
        if part.overwrite_matches is not None:
            index_changes = overwrite_index_changes(previous_index, index_changes, part.overwrite_matches)
        check_index_conflicts(previous_index, index_changes, views, describe_partition=self._describe_partition)
        added_names: dict[tuple[bytes, int], set[str]] = {}
        for e in fold.added.values():
            added_names.setdefault((e.partition, e.bucket), set()).add(e.file.file_name)

        def live_names(partition: bytes, bucket: int) -> set[str]:
            if self._key_type is None:
                # append tables: Paimon's vectors (row-level DELETE / UPDATE) name level-0 files
                names = {i.file_name for i, e in live.by_identity.items() if (e.partition, e.bucket) == (partition, bucket)}
            else:
                names = set(live.upper_level_names(partition, bucket))
            names -= {i.file_name for i in fold.removed if (i.partition, i.bucket) == (partition, bucket)}
            return names | added_names.get((partition, bucket), set())

        check_deletion_vector_conflicts(previous_index, index_changes, {(i.partition, i.bucket) for i in fold.removed},
                                        live_names, describe_partition=self._describe_partition)
        if not index_changes:
            return index_manifest
        live_index = fold_index_entries(previous_index, index_changes)
        if not live_index:
            return None
        name = self.paths.new_index_manifest_name()
        written.add(name)
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


def new_snapshot(*, previous: Snapshot | None, previous_total_records: int, lists: WrittenLists,
                 changes: Sequence[ManifestEntry], changelog: Sequence[ManifestEntry], schema_id: int,
                 commit_user: str, committable: ManifestCommittable, kind: CommitKind,
                 time_millis: int, next_row_id: int | None = None) -> Snapshot:
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
        next_row_id=next_row_id,
    )


def overwrite_index_changes(previous: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry],
                            matches: Callable[[bytes], bool]) -> list[IndexManifestEntry]:
    """An OVERWRITE's index changes: DELETE every live index file (HASH and deletion vectors) of a
    replaced partition (its data files all go), then the overwrite's own ADDs; its own DELETEs are
    covered by those."""
    drops = [replace(e, kind=FileKind.DELETE) for e in previous
             if e.kind is FileKind.ADD and matches(e.partition)]
    dropped = {e.identity for e in drops}
    own = [c for c in changes if not (c.kind is FileKind.DELETE and c.identity in dropped)]
    return drops + own

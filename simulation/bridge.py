"""The bridge between the model's vocabulary and impl's, for one fixed test schema.

The test table has ``p INT NOT NULL`` (the partition), ``k BIGINT NOT NULL`` and ``v BIGINT``.
As a primary-key table its key is ``(p, k)``, so a data file's min/max keys are BinaryRows of one
BIGINT (the partition field is trimmed from the key); as an append-only table it has no key and
the model's ``min_key`` / ``max_key`` are None.

Only metadata moves through here: a :class:`model.FileFacts` becomes a :class:`DataFileMeta`
without any Parquet file behind it, which is all the commit path needs. The way back is
:class:`ModelFactsReader`: published snapshots, read from storage, in model terms.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from impl.commit.messages import CommitMessage, ManifestCommittable
from impl.data.binary_row import EMPTY_ROW, decode_row, encode_row
from impl.data.types import BIGINT, INT, DataField
from impl.datafile.meta import DataFileMeta
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.manifest.manifest_file import IndexManifestFile
from impl.manifest.records import FileKind, IndexFileMeta, IndexType, ManifestEntry, ManifestFileMeta
from impl.read.scan import SnapshotReader
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import Snapshot
from impl.table.table import FileStoreTable
from model.errors import ModelError
from model.rules import ADD, DELETE, Entry, FileFacts, Identity, merge_entries

PARTITION_TYPE = (INT(False),)
KEY_TYPE = (BIGINT(False),)

GroupKey = tuple[int, int, int]  # (partition, bucket, total_buckets): one CommitMessage
IndexFileRef = tuple[int, int, int, str]  # an index file of a plan: (partition, bucket, total_buckets, name)


def sim_schema(options: Mapping[str, str] | None = None, *, primary_key: bool = True) -> TableSchema:
    """The test table's schema (id 0) with the given table options."""
    return TableSchema(
        id=0,
        fields=(DataField(0, "p", INT(False)), DataField(1, "k", BIGINT(False)), DataField(2, "v", BIGINT())),
        partition_keys=("p",),
        primary_keys=("p", "k") if primary_key else (),
        options=dict(options or {}),
    )


def partition_bytes(p: int) -> bytes:
    """The BinaryRow of partition ``p``."""
    return encode_row([p], PARTITION_TYPE)


def key_bytes(k: int | None) -> bytes:
    """The BinaryRow of key ``k`` (the empty row for an append-only table's None)."""
    return EMPTY_ROW if k is None else encode_row([k], KEY_TYPE)


def file_size_bytes_of(f: FileFacts) -> int:
    """A made-up but deterministic data file size (the commit path only carries it along)."""
    return 1000 + 10 * f.row_count


def to_meta(f: FileFacts) -> DataFileMeta:
    """The data file metadata of ``f``, with no file behind it."""
    return DataFileMeta(
        file_name=f.file_name,
        file_size=file_size_bytes_of(f),
        row_count=f.row_count,
        min_key=key_bytes(f.min_key),
        max_key=key_bytes(f.max_key),
        level=f.level,
    )


def to_messages(
    new_files: Iterable[FileFacts] = (),
    deleted_files: Iterable[FileFacts] = (),
    compact_before: Iterable[FileFacts] = (),
    compact_after: Iterable[FileFacts] = (),
    changelog_files: Iterable[FileFacts] = (),
    new_index_files: Iterable[IndexFileRef] = (),
    deleted_index_files: Iterable[IndexFileRef] = (),
) -> tuple[CommitMessage, ...]:
    """One CommitMessage per (partition, bucket, total_buckets), in order of first appearance.

    Within each part the order of files is kept, so the entries impl collects are, per part, the
    model's entries grouped by message (the conflict outcome does not depend on that order).
    Index files are given as (partition, bucket, total_buckets, file_name) and go into the
    APPEND part, as HASH index files.
    """
    new = _data_by_group(new_files)
    deleted = _data_by_group(deleted_files)
    before = _data_by_group(compact_before)
    after = _data_by_group(compact_after)
    changelog = _data_by_group(changelog_files)
    new_index = _index_by_group(new_index_files)
    deleted_index = _index_by_group(deleted_index_files)
    groups = dict.fromkeys(k for g in (new, deleted, before, after, changelog, new_index, deleted_index) for k in g)
    messages = []
    for key in groups:
        p, b, t = key
        messages.append(CommitMessage(
            partition_bytes(p), b, t, new_files=new.get(key, ()), deleted_files=deleted.get(key, ()),
            compact_before=before.get(key, ()), compact_after=after.get(key, ()),
            changelog_files=changelog.get(key, ()), new_index_files=new_index.get(key, ()),
            deleted_index_files=deleted_index.get(key, ())))
    return tuple(messages)


def _partition_of(f: FileFacts) -> int:
    if not isinstance(f.partition, int):
        raise TypeError(f"the sim table's partition is an INT, not {f.partition!r} (file {f.file_name})")
    return f.partition


def _data_by_group(files: Iterable[FileFacts]) -> dict[GroupKey, tuple[DataFileMeta, ...]]:
    out: dict[GroupKey, list[DataFileMeta]] = {}
    for f in files:
        out.setdefault((_partition_of(f), f.bucket, f.total_buckets), []).append(to_meta(f))
    return {k: tuple(v) for k, v in out.items()}


def _index_by_group(index_files: Iterable[IndexFileRef]) -> dict[GroupKey, tuple[IndexFileMeta, ...]]:
    out: dict[GroupKey, list[IndexFileMeta]] = {}
    for p, b, total, name in index_files:
        out.setdefault((p, b, total), []).append(IndexFileMeta(IndexType.HASH, name, 100, 10))
    return {k: tuple(v) for k, v in out.items()}


def to_committable(identifier: int, **parts: Iterable[Any]) -> ManifestCommittable:
    """One committable of the given parts (the keyword arguments of :func:`to_messages`)."""
    return ManifestCommittable(identifier, to_messages(**parts))


def facts_of(entry: ManifestEntry, primary_key: bool = True) -> FileFacts:
    """The model's facts of a sim table's manifest entry."""
    f = entry.file
    (p,) = decode_row(entry.partition, PARTITION_TYPE)
    lo = hi = None
    if primary_key:
        (lo,) = decode_row(f.min_key, KEY_TYPE)
        (hi,) = decode_row(f.max_key, KEY_TYPE)
    return FileFacts(p, entry.bucket, entry.total_buckets, f.level, f.file_name, lo, hi, f.row_count)


def to_model_entry(entry: ManifestEntry, primary_key: bool = True) -> Entry:
    """A sim table's manifest entry as the model's entry."""
    return Entry(ADD if entry.kind is FileKind.ADD else DELETE, facts_of(entry, primary_key))


class CorruptFoldError(AssertionError):
    """Folding a snapshot's manifests left a DELETE (or met a second ADD): the history is broken."""


class ModelFactsReader:
    """Reads the published snapshots of a sim table from storage, in model terms.

    The reading goes through impl's public API (SnapshotManager, ManifestList, ManifestFile,
    IndexManifestFile and the scan's SnapshotReader) over a fresh table object, so nothing is
    shared with the committers under test. Folding uses the model's ``merge_entries``, not
    impl's, so a bug in impl's entry merging cannot hide itself from the check.
    """

    def __init__(self, file_io: FileIO, table_path: str, *, primary_key: bool = True):
        # The schema is the sim schema, not read from storage: the commit-level tests write no
        # schema file, and reading metadata needs only the partition type.
        self.table = FileStoreTable(file_io, table_path, sim_schema(primary_key=primary_key))
        self.primary_key = primary_key
        self._scan = SnapshotReader(self.table.core)
        self._lists: dict[str, list[ManifestFileMeta]] = {}  # lists are immutable: cache by name

    @property
    def file_io(self) -> FileIO:
        return self.table.file_io

    @property
    def paths(self) -> TablePaths:
        return self.table.paths

    @property
    def snapshots(self) -> SnapshotManager:
        return self.table.snapshot_manager()

    def _list(self, name: str, size_bytes: int | None) -> list[ManifestFileMeta]:
        metas = self._lists.get(name)
        if metas is None:
            metas = self._lists[name] = self.table.manifest_list.read(name, size_bytes)
        return metas

    def snapshot_ids(self) -> list[int]:
        return self.snapshots.snapshot_ids()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshots.snapshot(snapshot_id)

    def base_manifests(self, snap: Snapshot) -> list[ManifestFileMeta]:
        return self._list(snap.base_manifest_list, snap.base_manifest_list_size)

    def delta_manifests(self, snap: Snapshot) -> list[ManifestFileMeta]:
        return self._list(snap.delta_manifest_list, snap.delta_manifest_list_size)

    def changelog_manifests(self, snap: Snapshot) -> list[ManifestFileMeta]:
        if not snap.changelog_manifest_list:
            return []
        return self._list(snap.changelog_manifest_list, snap.changelog_manifest_list_size)

    def entries(self, metas: Iterable[ManifestFileMeta]) -> list[Entry]:
        return [to_model_entry(e, self.primary_key) for e in self._scan.read_entries(metas)]

    def delta_entries(self, snap: Snapshot) -> list[Entry]:
        return self.entries(self.delta_manifests(snap))

    def referenced_files(self, snap: Snapshot) -> set[str]:
        """Names (in the manifest directory) of every list and manifest the snapshot needs:
        base, delta and changelog lists and their manifests, and the index manifest."""
        names = {snap.base_manifest_list, snap.delta_manifest_list}
        for m in [*self.base_manifests(snap), *self.delta_manifests(snap), *self.changelog_manifests(snap)]:
            names.add(m.file_name)
        if snap.changelog_manifest_list:
            names.add(snap.changelog_manifest_list)
        if snap.index_manifest:
            names.add(snap.index_manifest)
        return names

    def changelog_names(self, snap: Snapshot) -> list[str]:
        return sorted(e.file.file_name for e in self._scan.read_entries(self.changelog_manifests(snap)))

    def index_files(self, snap: Snapshot) -> set[tuple[int, int, str]]:
        """The live index files the snapshot's index manifest lists, as (partition, bucket, name)."""
        if not snap.index_manifest:
            return set()
        out = set()
        for e in IndexManifestFile(self.file_io, self.paths).read(snap.index_manifest):
            (p,) = decode_row(e.partition, PARTITION_TYPE)
            out.add((p, e.bucket, e.index_file.file_name))
        return out

    def live(self, snap: Snapshot) -> dict[Identity, FileFacts]:
        """The fold of base + delta of ``snap``: its live files, in model terms."""
        try:
            merged = merge_entries(self.entries([*self.base_manifests(snap), *self.delta_manifests(snap)]))
        except ModelError as e:
            raise CorruptFoldError(f"snapshot {snap.id}: {e}") from e
        deletes = sorted(e.file.file_name for e in merged.values() if e.kind == DELETE)
        if deletes:
            raise CorruptFoldError(f"snapshot {snap.id}: DELETE of files never added survives the fold: {deletes}")
        return {k: e.file for k, e in merged.items()}

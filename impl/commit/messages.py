"""What writers hand to the committer, and how it becomes manifest entries."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import AbstractSet, Mapping, Sequence

from impl.datafile.meta import DataFileMeta
from impl.manifest.records import FileKind, IndexFileMeta, IndexManifestEntry, ManifestEntry

# Batch jobs commit once per commit user; Paimon uses Long.MAX_VALUE as their identifier.
BATCH_COMMIT_IDENTIFIER = 2**63 - 1


@dataclass(frozen=True)
class CommitMessage:
    """The file changes of one (partition, bucket) produced by one writer's prepare_commit.

    ``new_files`` / ``deleted_files`` / ``changelog_files`` and the ``new_index_files`` /
    ``deleted_index_files`` go into the APPEND snapshot; ``compact_before`` /
    ``compact_after`` / ``compact_changelog`` and the ``compact_*_index_files`` into the
    COMPACT snapshot.
    """

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    deleted_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()
    new_index_files: tuple[IndexFileMeta, ...] = ()
    deleted_index_files: tuple[IndexFileMeta, ...] = ()
    compact_new_index_files: tuple[IndexFileMeta, ...] = ()
    compact_deleted_index_files: tuple[IndexFileMeta, ...] = ()
    # Dynamic bucket mode: names of the partition's HASH index files the writer assigned this
    # message's rows from (None: no claim). The APPEND part conflicts if the partition's live
    # HASH files differ at commit: another writer changed the index the rows were routed by.
    hash_index_view: frozenset[str] | None = None
    # Column updates of a data-evolution table (files with write columns and the first row id of
    # the range they rewrite): the snapshot the writer read those rows from. The APPEND part
    # conflicts if a later snapshot added a file over one of its ranges (another update).
    row_id_check_from: int | None = None
    # Cross-partition upserts: the snapshot whose keys the writer's global key index was built
    # from (0: an empty table). The APPEND part conflicts if a later snapshot of another commit
    # user added rows: the writer routed keys without knowing where that writer put them.
    key_index_from: int | None = None

    def __post_init__(self) -> None:
        for name in ("new_files", "deleted_files", "changelog_files", "compact_before", "compact_after",
                     "compact_changelog", "new_index_files", "deleted_index_files",
                     "compact_new_index_files", "compact_deleted_index_files"):
            v = getattr(self, name)
            if not isinstance(v, tuple):
                object.__setattr__(self, name, tuple(v))

    def has_append_part(self) -> bool:
        return bool(self.new_files or self.deleted_files or self.changelog_files
                    or self.new_index_files or self.deleted_index_files)

    def has_compact_part(self) -> bool:
        return bool(self.compact_before or self.compact_after or self.compact_changelog
                    or self.compact_new_index_files or self.compact_deleted_index_files)

    def is_empty(self) -> bool:
        return not (self.has_append_part() or self.has_compact_part())

    def without_append_part(self) -> "CommitMessage":
        return replace(self, new_files=(), deleted_files=(), changelog_files=(),
                       new_index_files=(), deleted_index_files=(), hash_index_view=None, row_id_check_from=None)

    def without_compact_part(self) -> "CommitMessage":
        return replace(self, compact_before=(), compact_after=(), compact_changelog=(),
                       compact_new_index_files=(), compact_deleted_index_files=())

    def written_files(self) -> list[DataFileMeta]:
        """Files this message's writer created (what an abort deletes)."""
        return [*self.new_files, *self.changelog_files, *self._compaction_outputs(), *self.compact_changelog]

    def written_file_names(self) -> set[str]:
        """Names of every file this message's writer created: its data and changelog files, their
        extra files (a data file's ``.index``) and its new index files (deletion vectors, HASH
        indexes). What a cleanup of the write must keep once the message is committed."""
        names = {n for f in self.written_files() for n in (f.file_name, *f.extra_files)}
        names.update(f.file_name for f in (*self.new_index_files, *self.compact_new_index_files))
        return names

    def written_data_files(self) -> list[DataFileMeta]:
        """The data files (no changelog) this message's writer created."""
        return [*self.new_files, *self._compaction_outputs()]

    def _compaction_outputs(self) -> list[DataFileMeta]:
        # A compaction that only moves a file to another level lists the same file name in
        # compact_before and compact_after: that file is live and is not ours.
        upgraded = {f.file_name for f in self.compact_before}
        return [f for f in self.compact_after if f.file_name not in upgraded]


@dataclass(frozen=True)
class ManifestCommittable:
    """Everything one commit publishes, under one commit identifier."""

    identifier: int
    messages: tuple[CommitMessage, ...]
    watermark: int | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))


def without_published_parts(messages: Sequence[CommitMessage], published: AbstractSet[str],
                            gone: AbstractSet[str] = frozenset()) -> list[CommitMessage]:
    """One committable's ``messages`` without the parts a table snapshot published, told by the
    parts' own new files (one snapshot publishes a part of every message at once, so the part is
    judged over all of them): published when a snapshot named one of its files (live now, or
    deleted by a later snapshot) and each of the others is named too or ``gone`` (deleted from
    storage with an expired snapshot that deleted it). A writer's names are unique, so only the
    part itself can have published them; a part that re-adds another writer's live file (a
    caller error) still has its own unnamed files on storage, and is not taken for published.
    For recovery when the snapshots that published a part expired."""
    out = list(messages)
    if _published([f for m in out for f in m.new_files], published, gone):
        out = [m.without_append_part() for m in out]
    if _published([f for m in out for f in m._compaction_outputs()], published, gone):
        out = [m.without_compact_part() for m in out]
    return [m for m in out if not m.is_empty()]


def _published(files: Sequence[DataFileMeta], published: AbstractSet[str], gone: AbstractSet[str]) -> bool:
    names = [f.file_name for f in files]
    return any(n in published for n in names) and all(n in published or n in gone for n in names)


@dataclass(frozen=True)
class CollectedChanges:
    """A call's messages as manifest entries, split into the APPEND part and the COMPACT part."""

    append_table: list[ManifestEntry]
    append_changelog: list[ManifestEntry]
    append_index: list[IndexManifestEntry]
    compact_table: list[ManifestEntry]
    compact_changelog: list[ManifestEntry]
    compact_index: list[IndexManifestEntry]
    # partition -> the HASH index file names its APPEND rows were routed by (dynamic bucket mode)
    append_index_views: dict[bytes, frozenset[str]] = field(default_factory=dict)
    # the oldest snapshot the APPEND part's column updates read (CommitMessage.row_id_check_from)
    append_row_id_check_from: int | None = None
    # the oldest snapshot the APPEND part's key indexes were built from (CommitMessage.key_index_from)
    append_key_index_from: int | None = None

    @property
    def has_append(self) -> bool:
        return bool(self.append_table or self.append_changelog or self.append_index)

    @property
    def has_compact(self) -> bool:
        return bool(self.compact_table or self.compact_changelog or self.compact_index)


def collect_changes(messages: Sequence[CommitMessage]) -> CollectedChanges:
    """Turn messages into entries: ADD new files, DELETE deleted ones; DELETE compact-before, ADD compact-after."""
    reads = [m.row_id_check_from for m in messages if m.row_id_check_from is not None and m.has_append_part()]
    built = [m.key_index_from for m in messages if m.key_index_from is not None and m.has_append_part()]
    c = CollectedChanges([], [], [], [], [], [], append_row_id_check_from=min(reads) if reads else None,
                         append_key_index_from=min(built) if built else None)
    for m in messages:
        def entry(kind: FileKind, f: DataFileMeta, m: CommitMessage = m) -> ManifestEntry:
            return ManifestEntry(kind, m.partition, m.bucket, m.total_buckets, f)

        def index(kind: FileKind, f: IndexFileMeta, m: CommitMessage = m) -> IndexManifestEntry:
            return IndexManifestEntry(kind, m.partition, m.bucket, f)

        c.append_table.extend(entry(FileKind.ADD, f) for f in m.new_files)
        c.append_table.extend(entry(FileKind.DELETE, f) for f in m.deleted_files)
        c.append_changelog.extend(entry(FileKind.ADD, f) for f in m.changelog_files)
        c.append_index.extend(index(FileKind.ADD, f) for f in m.new_index_files)
        c.append_index.extend(index(FileKind.DELETE, f) for f in m.deleted_index_files)
        c.compact_table.extend(entry(FileKind.DELETE, f) for f in m.compact_before)
        c.compact_table.extend(entry(FileKind.ADD, f) for f in m.compact_after)
        c.compact_changelog.extend(entry(FileKind.ADD, f) for f in m.compact_changelog)
        c.compact_index.extend(index(FileKind.ADD, f) for f in m.compact_new_index_files)
        c.compact_index.extend(index(FileKind.DELETE, f) for f in m.compact_deleted_index_files)
        if m.hash_index_view is not None and m.has_append_part():
            seen = c.append_index_views.setdefault(m.partition, m.hash_index_view)
            if seen != m.hash_index_view:
                # messages of two writes that read different indexes of one partition: the
                # committer checks both claims by keeping the one that cannot hold
                c.append_index_views[m.partition] = frozenset({"<inconsistent views>"})
    return c

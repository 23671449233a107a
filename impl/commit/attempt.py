"""What one snapshot publication carries through its tries, and what a call reports.

Shared by :mod:`impl.commit.file_store_commit` (which builds them), :mod:`impl.commit.retry`
(which counts tries on them) and :mod:`impl.commit.metadata_writer` (which writes their
entries); kept apart so those modules need not import one another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from impl.commit.conflicts import Fold
from impl.commit.messages import CollectedChanges, ManifestCommittable
from impl.commit.metadata_writer import WrittenFiles
from impl.manifest.merger import ManifestMergeKind
from impl.manifest.records import FileKind, IndexManifestEntry, ManifestEntry
from impl.snapshot.records import CommitKind, Snapshot


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
class Part:
    """The entries of one part of a call: the APPEND (or OVERWRITE) part or the COMPACT part."""

    table: tuple[ManifestEntry, ...]
    changelog: tuple[ManifestEntry, ...]
    index: tuple[IndexManifestEntry, ...]
    # (partition, HASH index file names) its rows were routed by: checked at every try
    index_views: tuple[tuple[bytes, frozenset[str]], ...] = ()
    # the snapshot its column updates read (checked at every try, impl.commit.row_ids)
    row_id_check_from: int | None = None
    # the snapshot its rows' global key index was built from (checked at every try)
    key_index_from: int | None = None

    @staticmethod
    def of(changes: CollectedChanges, kind: CommitKind) -> Part:
        if kind is CommitKind.COMPACT:
            return Part(tuple(changes.compact_table), tuple(changes.compact_changelog), tuple(changes.compact_index))
        views = () if kind is CommitKind.OVERWRITE else tuple(sorted(changes.append_index_views.items()))
        return Part(tuple(changes.append_table), tuple(changes.append_changelog), tuple(changes.append_index),
                    views, changes.append_row_id_check_from, changes.append_key_index_from)

    def touched_partitions(self) -> frozenset[bytes]:
        """The partitions whose live files the conflict rules of this part look at: those of its
        table and index changes and of the index views its rows were routed by (an OVERWRITE
        also reads the partitions it replaces, which this does not know)."""
        return frozenset([*(e.partition for e in self.table), *(e.partition for e in self.index),
                          *(p for p, _ in self.index_views)])

    def added_names(self) -> set[str]:
        """Names of the files this part ADDs: new for the table, so only this part can make them live."""
        return {e.file.file_name for e in self.table if e.kind is FileKind.ADD}


@dataclass
class UnknownOutcome:
    """What is known about a publication whose outcome is (or was) unknown, kept from one try
    of a snapshot to the next and, once the call gave up, until the same part is committed again."""

    outcome_unknown: bool = False  # the last publish call raised
    unknown_snapshot_id: int = 0  # the id that call tried to take
    # manifests/lists of the last try: kept while the outcome is unknown (a landed snapshot
    # lists them), deleted once it is known not to have landed
    written: WrittenFiles | None = None
    base: Snapshot | None = None  # the snapshot that try built on (checked again if it landed)
    # set when this part did land but a later part of the same call ended unknown: a repeat
    # of the call must skip it (its files are live now) and report this snapshot again
    landed_snapshot_id: int | None = None
    # the part's entries: a later call under the same identifier is a repeat of this one only
    # if it carries the same part (batch commits all share one identifier)
    part: Part | None = None

    def record(self, snapshot_id: int, written: WrittenFiles, base: Snapshot | None) -> None:
        """The publish call of ``snapshot_id`` on ``base`` failed: its outcome is unknown."""
        self.outcome_unknown = True
        self.unknown_snapshot_id = snapshot_id
        self.written = written
        self.base = base

    def resolved_not_landed(self) -> None:
        """Known now: the unknown try did not land. Its files are deleted; nothing is pending."""
        if self.written is not None:
            self.written.discard()
        self.outcome_unknown = False
        self.written = None


@dataclass(frozen=True)
class Checked:
    """This part's conflicts were checked against snapshot ``snapshot_id`` (whose delta manifest
    list, unique to one snapshot, is ``delta_manifest_list``: it tells a snapshot from another
    that re-took its id after a rollback), giving ``fold``: reused as long as that snapshot is
    still the latest."""

    snapshot_id: int | None
    delta_manifest_list: str | None
    fold: Fold
    # The snapshot checked against: the first try publishes on top of it without reading the
    # latest again (a lost race re-reads; the conditional create decides, not this read).
    snapshot: Snapshot | None = None


@dataclass(frozen=True)
class Attempt:
    """One snapshot to publish (one part of a call), carried through its tries."""

    kind: CommitKind
    part: Part
    committable: ManifestCommittable
    stats: CommitStats  # of the whole call, updated as the tries go
    checked: Checked | None = None  # the optimistic check, reused while its snapshot stays the latest
    overwrite_matches: Callable[[bytes], bool] | None = None  # partitions an OVERWRITE replaces
    unknown: UnknownOutcome = field(default_factory=UnknownOutcome)

    def describe(self, table_name: str) -> str:
        return f"commit {self.committable.identifier} ({self.kind.value}) of {table_name}"

    def added_names(self) -> set[str]:
        """Names of the files this part ADDs: new for the table, so only this part can make them live."""
        return self.part.added_names()

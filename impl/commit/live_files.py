"""LiveFiles: the live data files of one snapshot, indexed for incremental conflict checks.

Folding every live entry on every commit makes commit cost grow with table size. Instead a
committer keeps the live files of the last snapshot it knows and moves them forward by the
delta of each newer snapshot, so a check costs O(changes + touched LSM groups).

The conflict rules only look at the partitions a commit touches, so a committer may hold the
live files of some partitions only (``partitions``; None means all of them). A cold committer
then reads only the manifests whose partition statistics may hold those partitions, and only
their entries, instead of the whole table; :meth:`LiveFiles.extend` adds partitions later.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from impl.manifest.records import FileIdentity, FileKind, ManifestEntry


class LiveFiles:
    """Live ADD entries by identity, plus the per-partition bucket counts and the level >= 1
    groups that the conflict rules look up.

    ``partitions``: the serialized partitions whose live files this holds, every one of them
    (None: every partition of the table). Deltas of other partitions are ignored."""

    def __init__(self, snapshot_id: int | None = None, snapshot_tag: str | None = None,
                 entries: Iterable[ManifestEntry] = (), partitions: frozenset[bytes] | None = None):
        self.snapshot_id = snapshot_id
        # identifies *which* snapshot with that id (its delta list name): after a rollback a
        # new snapshot can reuse an id, and then this index must not be advanced from it
        self.snapshot_tag = snapshot_tag
        self.by_identity: dict[FileIdentity, ManifestEntry] = {}
        self._buckets: dict[bytes, dict[int, set[FileIdentity]]] = defaultdict(lambda: defaultdict(set))
        self._groups: dict[tuple[bytes, int, int], set[FileIdentity]] = defaultdict(set)
        self._max_level = 0  # highest level ever seen (bounds the level groups of a bucket)
        self.partitions = partitions
        for e in entries:
            self._add(e)

    @staticmethod
    def of(entries: Iterable[ManifestEntry]) -> "LiveFiles":
        return LiveFiles(None, None, entries)

    def __len__(self) -> int:
        return len(self.by_identity)

    def __contains__(self, ident: FileIdentity) -> bool:
        return ident in self.by_identity

    def entries(self) -> list[ManifestEntry]:
        return list(self.by_identity.values())

    def covers(self, partitions: frozenset[bytes] | None) -> bool:
        """Whether this holds every live file of ``partitions`` (None: of the whole table)."""
        if self.partitions is None:
            return True
        return partitions is not None and partitions <= self.partitions

    def extend(self, partitions: frozenset[bytes], entries: Iterable[ManifestEntry]) -> None:
        """Add ``partitions`` with their live ``entries``, read from this very snapshot (entries of
        partitions held already are skipped: this knows them)."""
        held = self.partitions
        if held is None:
            return
        new = partitions - held
        for e in entries:
            if e.partition in new:
                self._add(e)
        self.partitions = held | new

    def bucket_counts(self, partition: bytes) -> dict[int, set[FileIdentity]]:
        """total_buckets value -> live files of ``partition`` that carry it (values > 0 only)."""
        return self._buckets.get(partition, {})

    def group(self, partition: bytes, bucket: int, level: int) -> set[FileIdentity]:
        return self._groups.get((partition, bucket, level), set())

    def upper_level_names(self, partition: bytes, bucket: int) -> set[str]:
        """File names of the live files of one bucket at levels >= 1."""
        return {i.file_name for level in range(1, self._max_level + 1)
                for i in self._groups.get((partition, bucket, level), ())}

    # ------------------------------------------------------------------ mutation

    def _add(self, e: ManifestEntry) -> None:
        ident = e.identity
        self.by_identity[ident] = e
        if e.total_buckets > 0:
            self._buckets[e.partition][e.total_buckets].add(ident)
        if e.file.level >= 1:
            self._groups[(e.partition, e.bucket, e.file.level)].add(ident)
            self._max_level = max(self._max_level, e.file.level)

    def _remove(self, ident: FileIdentity) -> None:
        e = self.by_identity.pop(ident, None)
        if e is None:
            return
        if e.total_buckets > 0:
            per = self._buckets[e.partition]
            per[e.total_buckets].discard(ident)
            if not per[e.total_buckets]:
                del per[e.total_buckets]
            if not per:
                del self._buckets[e.partition]
        if e.file.level >= 1:
            key = (e.partition, e.bucket, e.file.level)
            self._groups[key].discard(ident)
            if not self._groups[key]:
                del self._groups[key]

    def advance(self, snapshot_id: int, snapshot_tag: str | None, delta: Iterable[ManifestEntry]) -> None:
        """Apply a published snapshot's delta entries in order, becoming that snapshot (entries of
        partitions this does not hold are skipped: their live files are unknown here)."""
        held = self.partitions
        for e in delta:
            if held is not None and e.partition not in held:
                continue
            if e.kind is FileKind.ADD:
                self._add(e)
            else:
                self._remove(e.identity)
        self.snapshot_id = snapshot_id
        self.snapshot_tag = snapshot_tag

"""ManifestFileMerger: keeps a snapshot's base manifest list small (Paimon's algorithm).

Each commit merges the previous base + delta manifests before writing the new base list:

- Full merge, tried first: leading manifests with no DELETE entries and at least the
  target size are "base" and kept; the rest are "delta". If the delta manifests add up to
  the full-compaction threshold, their entries are folded, DELETEs are applied to the base
  manifests that hold the deleted files (only those are rewritten), and the survivors are
  written as new manifests. DELETE entries disappear: every older manifest took part.
- Minor merge otherwise: walk the manifests in order, gathering small ones; each time the
  gathered size reaches the target, fold them into new manifests. A trailing group is
  folded only if it has at least ``merge_min_count`` files. A minor merge keeps DELETEs
  whose ADD is not in its group.

Both kinds write their merged entries grouped by partition (in partition order; the order of
one partition's entries is kept), and end a manifest at a partition boundary once it reaches
the *settled size* (``MergeOptions.settled_size_bytes``, 1/32 of the target, at least 64 kB
or the target): each merged manifest then covers a narrow partition range, so a read or a
commit of one partition decodes the few manifests whose partition statistics may hold it. A
manifest of at least the settled size is what the rules above call "at least the target": a
merge leaves it alone, so merging costs what the new manifests weigh, not what the table does.

Merging never changes the live file set. If a merge fails, the manifests it wrote are
deleted and the error propagates.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Iterable, Iterator, Sequence

from impl.data.binary_row import decode_row, sort_key
from impl.manifest.entries import merge_entries
from impl.manifest.manifest_file import ManifestFile, may_hold_partitions
from impl.manifest.records import FileIdentity, FileKind, ManifestEntry, ManifestFileMeta

DEFAULT_TARGET_FILE_SIZE_BYTES = 8 * 1024 * 1024
DEFAULT_FULL_COMPACTION_THRESHOLD_BYTES = 16 * 1024 * 1024
DEFAULT_MERGE_MIN_COUNT = 30


# the settled size is the target / this, but never below min(target, SETTLED_FLOOR_BYTES)
SETTLED_SIZE_DIVISOR = 32
SETTLED_FLOOR_BYTES = 64 * 1024


@dataclass(frozen=True)
class MergeOptions:
    """Thresholds of the manifest merge (``manifest.*`` table options), with Paimon's defaults."""

    target_file_size_bytes: int = DEFAULT_TARGET_FILE_SIZE_BYTES
    full_compaction_threshold_bytes: int = DEFAULT_FULL_COMPACTION_THRESHOLD_BYTES
    merge_min_count: int = DEFAULT_MERGE_MIN_COUNT

    @property
    def settled_size_bytes(self) -> int:
        """Size from which a merge leaves a manifest alone and ends a merged one at a partition
        boundary (see the module doc). Paimon uses the target itself, so with the default 8 MB
        a table of 100,000 files (~3 MB of manifests) keeps one manifest spanning every
        partition, read whole by every cold commit and rewritten by every minor merge."""
        target = self.target_file_size_bytes
        return max(target // SETTLED_SIZE_DIVISOR, min(target, SETTLED_FLOOR_BYTES))


class ManifestMergeKind(StrEnum):
    """What a merge did to the base manifest list. The values are what commit statistics and
    test events print."""

    NONE = "none"  # the list is unchanged
    MINOR = "minor"  # small manifests were concatenated; DELETEs without their ADD stay
    FULL = "full"  # every manifest took part; no DELETE survives


@dataclass(frozen=True)
class MergeResult:
    manifests: list[ManifestFileMeta]  # the new base, in order
    written: list[ManifestFileMeta]  # manifests this merge created (to delete if the commit fails)
    kind: ManifestMergeKind


class ManifestFileMerger:
    """Merges a snapshot's previous base + delta manifests into its new base (see the module doc)."""

    def __init__(self, manifest_file: ManifestFile, options: MergeOptions = MergeOptions()):
        self.manifest_file = manifest_file
        self.options = options

    def merge(self, manifests: Sequence[ManifestFileMeta]) -> MergeResult:
        """The merged base list; on failure the manifests this call wrote are deleted first."""
        written: list[ManifestFileMeta] = []
        try:
            full = self._try_full(list(manifests), written)
            if full is not None:
                return MergeResult(full, written, ManifestMergeKind.FULL)
            result = self._minor(list(manifests), written)
            # a group whose entries all cancel out is merged into nothing: nothing written,
            # yet the list changed
            changed = bool(written) or [m.file_name for m in result] != [m.file_name for m in manifests]
            return MergeResult(result, written, ManifestMergeKind.MINOR if changed else ManifestMergeKind.NONE)
        except BaseException:
            self.manifest_file.delete_quietly(m.file_name for m in written)
            raise

    # ------------------------------------------------------------------ minor

    def _minor(self, manifests: list[ManifestFileMeta], written: list[ManifestFileMeta]) -> list[ManifestFileMeta]:
        result: list[ManifestFileMeta] = []
        candidates: list[ManifestFileMeta] = []
        total = 0
        for m in manifests:
            total += m.file_size
            candidates.append(m)
            if total >= self.options.settled_size_bytes:
                self._merge_candidates(candidates, result, written)
                candidates, total = [], 0
        if len(candidates) >= self.options.merge_min_count:
            self._merge_candidates(candidates, result, written)
        else:
            result.extend(candidates)
        return result

    def _merge_candidates(self, candidates: list[ManifestFileMeta], result: list[ManifestFileMeta],
                          written: list[ManifestFileMeta]) -> None:
        if len(candidates) == 1:
            result.append(candidates[0])
            return
        merged = merge_entries(self.manifest_file.read_all(candidates))
        new = self._write_by_partition(merged.values())
        written.extend(new)
        result.extend(new)

    # ------------------------------------------------------------------ full

    def _try_full(self, manifests: list[ManifestFileMeta],
                  written: list[ManifestFileMeta]) -> list[ManifestFileMeta] | None:
        """The fully merged list, or None when the delta manifests are below the threshold."""
        target = self.options.settled_size_bytes
        i = 0
        while i < len(manifests) and manifests[i].num_deleted_files == 0 and manifests[i].file_size >= target:
            i += 1
        base, delta = manifests[:i], manifests[i:]
        if sum(m.file_size for m in delta) < self.options.full_compaction_threshold_bytes:
            return None

        delta_merged = merge_entries(self.manifest_file.read_all(delta))
        deleted: set[FileIdentity] = {k for k, e in delta_merged.items() if e.kind is FileKind.DELETE}
        result: list[ManifestFileMeta] = []
        j = 0
        if not deleted:
            # nothing in the delta deletes: every base manifest stays as it is
            result.extend(base)
            j = len(base)
        else:
            # skip base manifests whose partitions cannot hold a deleted file, without reading them
            pt = self.manifest_file.partition_type
            if pt:
                del_parts = [decode_row(p, pt) for p in {k.partition for k in deleted}]
                while j < len(base) and not may_hold_partitions(base[j], del_parts, pt):
                    result.append(base[j])
                    j += 1
        kept_from_read: list[ManifestEntry] = []
        while j < len(base):
            m = base[j]
            entries = self.manifest_file.read(m.file_name, m.file_size, m.num_added_files + m.num_deleted_files)
            survivors = [e for e in entries if e.identity not in deleted]
            j += 1
            if len(survivors) != len(entries):
                kept_from_read = survivors
                break
            result.append(base[j - 1])
        rest = self.manifest_file.read_all(base[j:])

        def surviving() -> Iterator[ManifestEntry]:
            yield from kept_from_read
            for e in rest:
                if e.identity not in deleted:
                    yield e
            for e in delta_merged.values():
                if e.kind is FileKind.ADD:
                    yield e

        new = self._write_by_partition(surviving())
        written.extend(new)
        result.extend(new)
        return result

    def _write_by_partition(self, entries: Iterable[ManifestEntry]) -> list[ManifestFileMeta]:
        """``entries`` (folded: no identity twice) as manifests grouped by partition, in
        partition order, rolled at partition boundaries once settled (see the module doc).
        The sort is stable, so the entries of one partition (of one bucket: an append bucket's
        read order) keep their order."""
        pt = self.manifest_file.partition_type
        out = list(entries)
        if pt:
            keys: dict[bytes, tuple] = {}
            for e in out:
                if e.partition not in keys:
                    keys[e.partition] = sort_key(decode_row(e.partition, pt))
            if len(keys) > 1:
                out.sort(key=lambda e: keys[e.partition])
        return self.manifest_file.write(out, partition_roll_bytes=self.options.settled_size_bytes)


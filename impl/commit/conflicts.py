"""Commit conflict rules, as one pure function (``model.check_conflicts`` mirrors it).

Evaluated against the live files of the latest snapshot, in this order:

1. unless OVERWRITE, a partition's total bucket count never changes;
2. folding the changes onto the live files must not ADD a file that is already there, nor
   re-ADD a file the same change list DELETEs (its manifest would hold a DELETE then an ADD of
   one identity, which no later manifest merge can fold);
3. no DELETE may survive the fold (it names a file that is not live);
4. on primary-key tables, files of one (partition, bucket, level >= 1) must not overlap in
   key range. Level 0 holds freshly flushed, overlapping sorted runs by design.

The fold is computed as an overlay on the indexed live files, so the cost is proportional
to the changes, not to the table. Rules 1 and 4 look only at partitions and LSM groups the
changes touch: on any state these rules produced, untouched ones are already consistent.

Index files (:func:`check_index_conflicts`), against the live index entries of the latest snapshot:

5. a DELETE of an index file must name a live one (else another commit replaced it);
6. an ADD of a bucket's HASH index must DELETE that bucket's live HASH index, if it has one
   (else the writer assigned keys without seeing it: two writers both opened the bucket), and
   one commit ADDs at most one HASH index per bucket;
7. a partition whose rows were routed by its HASH index (the message's ``hash_index_view``)
   must still have exactly those HASH files: a key's bucket depends on every bucket of its
   partition (which are full, which exist), so any change there, another writer's new keys or
   an overwrite, may have put the same key elsewhere. OVERWRITE parts make no such claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Callable, Iterable, Mapping, NoReturn, Sequence

from impl.commit.live_files import LiveFiles
from impl.errors import (
    BucketCountChangedError,
    FileAlreadyLiveError,
    FileNotLiveError,
    IndexFileConflictError,
    KeyRangeOverlapError,
)
from impl.manifest.records import FileIdentity, FileKind, IndexManifestEntry, IndexType, ManifestEntry
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import CommitKind, Snapshot

KeySortKey = Callable[[bytes], Any]  # serialized key BinaryRow -> comparable value
DescribePartition = Callable[[bytes], str]  # serialized partition -> text for error messages


@dataclass
class Fold:
    """The effect of a change list on the live files: what it removes and what it adds."""

    removed: set[FileIdentity] = field(default_factory=set)
    added: dict[FileIdentity, ManifestEntry] = field(default_factory=dict)


def check_conflicts(
    live: LiveFiles | Iterable[ManifestEntry],
    changes: Sequence[ManifestEntry],
    kind: CommitKind,
    key_sort_key: KeySortKey | None,
    *,
    describe_partition: DescribePartition = lambda p: p.hex(),
) -> Fold:
    """Raise a CommitConflictError subclass if ``changes`` cannot be applied to ``live``;
    otherwise return the fold of the changes."""
    if not isinstance(live, LiveFiles):
        live = LiveFiles.of(live)

    if kind is not CommitKind.OVERWRITE:
        _check_bucket_counts(live, changes, describe_partition)

    fold = Fold()
    pending_deletes: dict[FileIdentity, ManifestEntry] = {}
    for e in changes:
        ident = e.identity
        is_live = ident in fold.added or (ident in live and ident not in fold.removed)
        if e.kind is FileKind.ADD:
            if is_live or ident in pending_deletes or ident in fold.removed:
                raise FileAlreadyLiveError(
                    f"file {e.file.file_name} is already live, or deleted and re-added by this commit; "
                    f"another commit added it, or this commit adds it twice",
                    files=(e.file.file_name,))
            fold.added[ident] = e
        elif ident in fold.added:
            del fold.added[ident]  # added earlier in this very change list: they cancel
        elif is_live:
            fold.removed.add(ident)
        else:
            pending_deletes.setdefault(ident, e)  # its ADD must be older: it is not live
    if pending_deletes:
        names = [e.file.file_name for e in pending_deletes.values()]
        raise FileNotLiveError(
            f"commit deletes files that are not live (deleted by another commit, or never added): {', '.join(names)}",
            files=tuple(names))

    if key_sort_key is not None:
        _check_key_ranges(live, fold, key_sort_key, describe_partition)
    return fold


def _check_bucket_counts(live: LiveFiles, changes: Sequence[ManifestEntry],
                         describe_partition: DescribePartition) -> None:
    established: dict[bytes, tuple[int, str]] = {}
    for e in changes:
        if e.total_buckets <= 0:
            continue
        if e.partition not in established:
            counts = live.bucket_counts(e.partition)
            if counts:
                (total, idents), *others = sorted(counts.items())
                first = next(iter(idents)).file_name
                if others:
                    other_total, other_idents = others[0]
                    _bucket_error(e.partition, total, first, other_total, next(iter(other_idents)).file_name,
                                  describe_partition)
                established[e.partition] = (total, first)
            else:
                established[e.partition] = (e.total_buckets, e.file.file_name)
        total, first = established[e.partition]
        if total != e.total_buckets:
            _bucket_error(e.partition, total, first, e.total_buckets, e.file.file_name, describe_partition)


def _bucket_error(partition: bytes, old: int, old_file: str, new: int, new_file: str,
                  describe_partition: DescribePartition) -> NoReturn:
    raise BucketCountChangedError(
        f"total buckets of partition {describe_partition(partition)} changed from {old} (file {old_file}) "
        f"to {new} (file {new_file}) without overwrite",
        files=(old_file, new_file))


def _check_key_ranges(live: LiveFiles, fold: Fold, key_sort_key: KeySortKey,
                      describe_partition: DescribePartition) -> None:
    touched = {(e.partition, e.bucket, e.file.level) for e in fold.added.values() if e.file.level >= 1}
    for partition, bucket, level in sorted(touched):  # a fixed order: the same conflict is reported every run
        files = [live.by_identity[i] for i in live.group(partition, bucket, level) if i not in fold.removed]
        files += [e for e in fold.added.values() if (e.partition, e.bucket, e.file.level) == (partition, bucket, level)]
        files.sort(key=lambda e: (key_sort_key(e.file.min_key), e.file.file_name))
        for a, b in pairwise(files):
            if key_sort_key(a.file.max_key) >= key_sort_key(b.file.min_key):
                raise KeyRangeOverlapError(
                    f"key ranges of {a.file.file_name} and {b.file.file_name} overlap in partition "
                    f"{describe_partition(partition)}, bucket {bucket}, level {level}",
                    files=(a.file.file_name, b.file.file_name))


# ---------------------------------------------------------------------------- deletion vectors

LiveNames = Callable[[bytes, int], set[str]]  # (partition, bucket) -> live data file names after the commit


def check_deletion_vector_conflicts(previous: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry],
                                    removed_buckets: Iterable[tuple[bytes, int]], live_names: LiveNames, *,
                                    describe_partition: DescribePartition = lambda p: p.hex()) -> None:
    """Raise IndexFileConflictError if the deletion-vector index changes cannot be applied.

    Rules (``model.check_deletion_vectors`` mirrors them): a DELETE names a live DV index
    file (else another commit replaced the bucket's vectors since this writer read them); an
    ADD is not live yet; after the commit, no data file has two deletion vectors and every
    deletion vector names a live data file. The last two are checked for the buckets the index
    changes touch and the buckets whose data files the commit removes (``removed_buckets``).
    """
    live = {e.identity: e for e in previous if e.kind is FileKind.ADD and e.index_file.index_type == IndexType.DELETION_VECTORS}
    touched = set(removed_buckets)
    for c in changes:
        if c.index_file.index_type != IndexType.DELETION_VECTORS:
            continue
        where = f"partition {describe_partition(c.partition)}, bucket {c.bucket}"
        touched.add((c.partition, c.bucket))
        if c.kind is FileKind.ADD:
            if c.identity in live:
                raise IndexFileConflictError(f"deletion vector index file {c.index_file.file_name} ({where}) is already live")
            live[c.identity] = c
        elif live.pop(c.identity, None) is None:
            raise IndexFileConflictError(
                f"commit deletes deletion vector index file {c.index_file.file_name} ({where}), which is not live: "
                f"another commit replaced this bucket's deletion vectors; restart the writer from the latest snapshot")
    by_bucket: dict[tuple[bytes, int], list[IndexManifestEntry]] = {}
    for e in live.values():
        if (e.partition, e.bucket) in touched:
            by_bucket.setdefault((e.partition, e.bucket), []).append(e)
    for (partition, bucket), entries in sorted(by_bucket.items()):
        names = live_names(partition, bucket)
        seen: dict[str, str] = {}
        for e in entries:
            for r in e.index_file.deletion_vector_ranges or ():
                where = f"partition {describe_partition(partition)}, bucket {bucket}"
                if r.data_file_name in seen:
                    raise IndexFileConflictError(
                        f"data file {r.data_file_name} ({where}) would have two deletion vectors, in "
                        f"{seen[r.data_file_name]} and {e.index_file.file_name}", files=(r.data_file_name,))
                seen[r.data_file_name] = e.index_file.file_name
                if r.data_file_name not in names:
                    raise IndexFileConflictError(
                        f"deletion vector in {e.index_file.file_name} names data file {r.data_file_name} ({where}), "
                        f"which is not live after this commit (compacted or deleted by another commit)",
                        files=(r.data_file_name,))


def check_index_conflicts(live: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry],
                          views: Mapping[bytes, frozenset[str]] | None = None, *,
                          describe_partition: DescribePartition = lambda p: p.hex()) -> None:
    """Rules 5 to 7: IndexFileConflictError if ``changes`` were made, or rows routed, on a stale index."""
    for partition, view in sorted((views or {}).items()):
        now = frozenset(e.index_file.file_name for e in live if e.kind is FileKind.ADD
                        and e.index_file.index_type == IndexType.HASH and e.partition == partition)
        if now != view:
            raise IndexFileConflictError(
                f"the HASH index of partition {describe_partition(partition)} changed since this writer routed its "
                f"rows by it ({len(view)} file(s) then, {len(now)} now, {len(now & view)} in common): another "
                f"commit assigned keys or overwrote the partition meanwhile. Write the data again on the latest "
                f"snapshot", tuple(sorted(now ^ view)))
    live_ids = {e.identity for e in live if e.kind is FileKind.ADD}
    deleted = set()
    for c in changes:
        if c.kind is FileKind.DELETE:
            if c.identity not in live_ids:
                raise IndexFileConflictError(
                    f"index file {c.index_file.file_name} ({c.index_file.index_type}) of partition "
                    f"{describe_partition(c.partition)} bucket {c.bucket} is not live: another commit replaced it "
                    f"since this writer read the index. Write the data again on the latest snapshot",
                    (c.index_file.file_name,))
            deleted.add(c.identity)
    hash_live = {(e.partition, e.bucket): e for e in live
                 if e.kind is FileKind.ADD and e.index_file.index_type == IndexType.HASH}
    added: dict[tuple[bytes, int], str] = {}
    for c in changes:
        if c.kind is FileKind.ADD and c.index_file.index_type == IndexType.HASH:
            first = added.setdefault((c.partition, c.bucket), c.index_file.file_name)
            if first != c.index_file.file_name:
                raise IndexFileConflictError(
                    f"HASH indexes {first} and {c.index_file.file_name} of partition {describe_partition(c.partition)} "
                    f"bucket {c.bucket} in one commit: two writers assigned keys to this bucket independently",
                    (first, c.index_file.file_name))
            current = hash_live.get((c.partition, c.bucket))
            if current is not None and current.identity not in deleted:
                raise IndexFileConflictError(
                    f"HASH index {c.index_file.file_name} of partition {describe_partition(c.partition)} bucket "
                    f"{c.bucket} was built without {current.index_file.file_name}, which another commit published "
                    f"meanwhile: both writers assigned keys to this bucket. Write the data again on the latest "
                    f"snapshot", (c.index_file.file_name, current.index_file.file_name))


def foreign_writes_since(snapshots: SnapshotManager, start: int, latest: Snapshot, commit_user: str) -> str | None:
    """Cross-partition upserts: the first snapshot after ``start`` up to ``latest`` that added
    rows for another commit user than ``commit_user`` (APPEND or OVERWRITE), described, or None.
    A snapshot of the range that expired cannot be checked: it is reported too."""
    for sid in range(start + 1, latest.id + 1):
        snap = latest if sid == latest.id else snapshots.try_snapshot(sid)
        if snap is None:
            return f"snapshot {sid} expired before it could be checked for other writers' rows"
        if snap.commit_kind in (CommitKind.APPEND, CommitKind.OVERWRITE) and snap.commit_user != commit_user:
            return f"snapshot {sid} ({snap.commit_kind.value}, commit user {snap.commit_user!r}) added rows"
    return None

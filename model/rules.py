"""The data of the commit protocol and its pure rules: identity, entry merging, conflict checks.

Each function here has a counterpart in impl (impl.manifest entry merging, impl.commit conflict
detection) and is meant to be read side by side with it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Hashable, Iterable, Mapping

from model.errors import (
    BucketCountChangedError,
    DuplicateFileError,
    FileAlreadyLiveError,
    FileNotLiveError,
    IndexFileConflictError,
    KeyRangeOverlapError,
)

ADD, DELETE = "ADD", "DELETE"  # entry kinds
APPEND, COMPACT, OVERWRITE = "APPEND", "COMPACT", "OVERWRITE"  # snapshot (commit) kinds

Identity = tuple  # (partition, bucket, level, file_name)


@dataclass(frozen=True)
class FileFacts:
    """What the protocol knows about one data file. Keys are None on append-only tables.

    ``extra_files``: the names of the files that belong to this data file alone and live
    exactly as long as it does (its ``_EXTRA_FILES``: a separate file index
    ``<file_name>.index``); they sit beside it and are not part of its identity."""

    partition: Hashable
    bucket: int
    total_buckets: int
    level: int
    file_name: str
    min_key: Any = None
    max_key: Any = None
    row_count: int = 0
    extra_files: tuple[str, ...] = ()


def identity(facts: FileFacts) -> Identity:
    """Two entries refer to the same file iff their identities are equal."""
    return (facts.partition, facts.bucket, facts.level, facts.file_name)


@dataclass(frozen=True)
class Entry:
    """One manifest entry: a file added to or deleted from the table."""

    kind: str  # ADD or DELETE
    file: FileFacts

    def __post_init__(self) -> None:
        if self.kind not in (ADD, DELETE):
            raise ValueError(f"entry kind must be ADD or DELETE, not {self.kind!r}")


def merge_entries(entries: Iterable[Entry]) -> dict[Identity, Entry]:
    """Fold entries in order into {identity: entry}; what is left are net ADDs and net DELETEs."""
    merged: dict[Identity, Entry] = {}
    for entry in entries:
        key = identity(entry.file)
        old = merged.get(key)
        if entry.kind == ADD:
            if old is not None:  # a second ADD, or an ADD after a kept DELETE
                raise DuplicateFileError(entry.file.file_name, f"identity {key}")
            merged[key] = entry
        elif old is None:
            merged[key] = entry  # DELETE whose ADD lives in an older manifest: keep it
        elif old.kind == ADD:
            del merged[key]  # ADD then DELETE cancel: the file is gone for good
        # else: a DELETE of an identity already deleted here stays one kept DELETE
    return merged


def check_conflicts(
    live: Mapping[Identity, FileFacts],
    changes: Iterable[Entry],
    kind: str,
    primary_key: bool,
) -> dict[Identity, FileFacts]:
    """Check ``changes`` against the latest live files; return the new live set (the fold).

    Order of the checks (the first failing one raises): a. bucket count, b. file already live,
    c. file not live, d. key-range overlap (primary-key tables only).
    """
    changes = list(changes)
    live_files = list(live.values())
    if kind != OVERWRITE:  # a. an overwrite may change the bucket count of a partition
        _check_bucket_counts(live_files + [e.file for e in changes])
    try:  # b.
        merged = merge_entries([Entry(ADD, f) for f in live_files] + changes)
    except DuplicateFileError as e:
        raise FileAlreadyLiveError(f"file {e.file_name} is already live", e.files) from None
    deleted_here: set = set()
    for change in changes:  # b'. re-adding a file this commit deletes leaves DELETE+ADD no merge can fold
        if change.kind == ADD and identity(change.file) in deleted_here:
            raise FileAlreadyLiveError(f"file {change.file.file_name} is deleted and re-added",
                                       (change.file.file_name,))
        if change.kind == DELETE:
            deleted_here.add(identity(change.file))
    not_live = tuple(entry.file.file_name for entry in merged.values() if entry.kind == DELETE)
    if not_live:  # c.
        raise FileNotLiveError(f"files {list(not_live)} are deleted but not live", not_live)
    new_live = {key: entry.file for key, entry in merged.items()}
    if primary_key:  # d.
        _check_key_ranges(new_live.values())
    return new_live


def _check_bucket_counts(files: Iterable[FileFacts]) -> None:
    """All files of one partition with total_buckets > 0 must agree (the first one seen rules)."""
    first: dict[Hashable, FileFacts] = {}
    for f in files:
        if f.total_buckets <= 0:
            continue
        ref = first.setdefault(f.partition, f)
        if ref.total_buckets != f.total_buckets:
            raise BucketCountChangedError(
                f"partition {f.partition}: file {f.file_name} has {f.total_buckets} buckets, "
                f"file {ref.file_name} has {ref.total_buckets}",
                (ref.file_name, f.file_name),
            )


def _check_key_ranges(files: Iterable[FileFacts]) -> None:
    """Files of one (partition, bucket, level >= 1) form one sorted run: no two may overlap."""
    runs: dict[tuple, list[FileFacts]] = defaultdict(list)
    for f in files:
        if f.level >= 1:  # level-0 files are each their own sorted run and may overlap
            runs[(f.partition, f.bucket, f.level)].append(f)
    for run in runs.values():
        run.sort(key=lambda f: f.min_key)
        for a, b in pairwise(run):
            if a.max_key >= b.min_key:  # touching ranges (a.max_key == b.min_key) overlap too
                raise KeyRangeOverlapError(
                    f"level {a.level}: key ranges of {a.file_name} [{a.min_key}, {a.max_key}] and "
                    f"{b.file_name} [{b.min_key}, {b.max_key}] overlap",
                    (a.file_name, b.file_name),
                )


def files_kept(retained: Iterable[Mapping[Identity, FileFacts]],
               tagged: Iterable[Mapping[Identity, FileFacts]]) -> frozenset[Identity]:
    """What storage must hold: the files live in a retained snapshot or in a tagged one.

    Expiration removes snapshots, never tags: a tagged snapshot's files stay until its last
    tag goes, even after the snapshot itself expired (impl: the ``protected`` names of
    impl.snapshot.expire and the tag deletion of impl.maintenance.cleanup).
    """
    return frozenset(key for live in (*retained, *tagged) for key in live)


def file_names_kept(retained: Iterable[Mapping[Identity, FileFacts]],
                    tagged: Iterable[Mapping[Identity, FileFacts]]) -> frozenset[str]:
    """The data-file names storage must hold, and the only ones it may hold once orphan removal
    has run past its grace period: each file of ``files_kept`` and its extra files. An extra
    file (a ``.index``) is written with its data file, kept while any retained or tagged
    snapshot holds that file, and deleted with it (impl: the ``names`` of
    impl.snapshot.references.SnapshotFiles, which expiration, tag deletion, rollback and
    orphan removal share)."""
    return frozenset(name for live in (*retained, *tagged) for f in live.values()
                     for name in (f.file_name, *f.extra_files))


def check_extra_file_owners(owners: dict[str, str], files: Iterable[FileFacts]) -> None:
    """Each extra file belongs to one data file for its whole life: a file compaction writes
    carries new extra files, never another file's (a file moved to another level keeps its
    name and its own). ``owners`` (extra file name -> data file name, over the table's
    history) is updated."""
    for f in files:
        for name in f.extra_files:
            owner = owners.setdefault(name, f.file_name)
            if owner != f.file_name:
                raise AssertionError(f"extra file {name} of {f.file_name} already belongs to {owner}")


# Row kinds, as in Paimon: +I, -U, +U, -D.
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE_ROW = 0, 1, 2, 3


def merge_rows(rows: Iterable[tuple[Any, int, int, Any]]) -> dict[Any, Any]:
    """Deduplicate merge engine over (key, sequence_number, row_kind, value) rows -> {key: value}.

    Per key the row with the highest sequence number wins (on a tie, the later row: Paimon's
    sequence numbers are unique per bucket, so ties do not occur there); if it is +I or +U the key
    reads as its value, if it is -U or -D the key is absent.
    """
    winner: dict[Any, tuple] = {}
    for row in rows:
        key, seq = row[0], row[1]
        if key not in winner or seq >= winner[key][1]:
            winner[key] = row
    return {key: row[3] for key, row in winner.items() if row[2] in (INSERT, UPDATE_AFTER)}


# ============================================================================ index files (dynamic bucket mode)

HASH = "HASH"  # the index type of a dynamic bucket's key hashes

IndexIdentity = tuple  # (partition, bucket, index_type, file_name)


@dataclass(frozen=True)
class IndexFacts:
    """One index file. A HASH file lists the key hashes of its (partition, bucket)."""

    partition: Hashable
    bucket: int
    index_type: str
    file_name: str
    hashes: frozenset[int] = frozenset()


def index_identity(facts: IndexFacts) -> IndexIdentity:
    return (facts.partition, facts.bucket, facts.index_type, facts.file_name)


@dataclass(frozen=True)
class IndexEntry:
    """One index manifest change: an index file added or deleted."""

    kind: str  # ADD or DELETE
    index: IndexFacts


def check_index_conflicts(live: Mapping[IndexIdentity, IndexFacts], changes: Iterable[IndexEntry],
                          views: Mapping[Hashable, frozenset[str]] | None = None) -> None:
    """impl.commit.conflicts.check_index_conflicts: 7. a partition's rows were routed by exactly
    its live HASH files (``views``: partition -> file names); 5. a DELETE names a live index
    file; 6. an ADD of a bucket's HASH file DELETEs the bucket's live HASH file, if it has one,
    and is the only HASH ADD of that bucket in the change list."""
    for partition, view in (views or {}).items():
        now = frozenset(f.file_name for f in live.values() if f.index_type == HASH and f.partition == partition)
        if now != view:
            raise IndexFileConflictError(f"HASH index of partition {partition} changed: {sorted(view)} -> {sorted(now)}",
                                         tuple(sorted(now ^ view)))
    changes = list(changes)
    deleted = set()
    for c in changes:
        if c.kind == DELETE:
            if index_identity(c.index) not in live:
                raise IndexFileConflictError(f"index file {c.index.file_name} is not live", (c.index.file_name,))
            deleted.add(index_identity(c.index))
    hash_live = {(f.partition, f.bucket): f for f in live.values() if f.index_type == HASH}
    added: dict[tuple, str] = {}
    for c in changes:
        if c.kind == ADD and c.index.index_type == HASH:
            first = added.setdefault((c.index.partition, c.index.bucket), c.index.file_name)
            if first != c.index.file_name:
                raise IndexFileConflictError(f"two HASH indexes {first}, {c.index.file_name} for one bucket",
                                             (first, c.index.file_name))
            current = hash_live.get((c.index.partition, c.index.bucket))
            if current is not None and index_identity(current) not in deleted:
                raise IndexFileConflictError(
                    f"HASH index {c.index.file_name} does not replace the live {current.file_name}",
                    (c.index.file_name, current.file_name))


def fold_index(live: Mapping[IndexIdentity, IndexFacts], changes: Iterable[IndexEntry]) -> dict[IndexIdentity, IndexFacts]:
    """impl.manifest.manifest_file.fold_index_entries: DELETEs first, then ADDs; a HASH ADD
    replaces its bucket's HASH file (Paimon's bucketed combiner)."""
    changes = list(changes)
    out = dict(live)
    for c in changes:
        if c.kind == DELETE:
            out.pop(index_identity(c.index), None)
    for c in changes:
        if c.kind == ADD:
            if c.index.index_type == HASH:
                out = {k: f for k, f in out.items()
                       if not (f.index_type == HASH and (f.partition, f.bucket) == (c.index.partition, c.index.bucket))}
            out[index_identity(c.index)] = c.index
    return out


def check_index_invariant(live: Mapping[IndexIdentity, IndexFacts]) -> None:
    """At most one HASH file per (partition, bucket); no key hash in two buckets of a partition."""
    seen_bucket: set = set()
    owner: dict[tuple, int] = {}
    for f in live.values():
        if f.index_type != HASH:
            continue
        assert (f.partition, f.bucket) not in seen_bucket, f"two HASH files for {(f.partition, f.bucket)}"
        seen_bucket.add((f.partition, f.bucket))
        for h in f.hashes:
            other = owner.setdefault((f.partition, h), f.bucket)
            assert other == f.bucket, f"hash {h} of partition {f.partition} in buckets {other} and {f.bucket}"


def assign_buckets(owner: dict[int, int], key_hashes: Iterable[int], target_row_num: int) -> list[int]:
    """impl.write.dynamic_bucket.PartitionIndex.assign, row by row (unlimited max-buckets).

    ``owner`` maps the partition's known key hashes to their buckets and is updated: a known
    key keeps its bucket; a new key goes to the lowest bucket holding fewer than
    ``target_row_num`` keys, else to the lowest unused bucket id."""
    out = []
    for h in key_hashes:
        if h not in owner:
            counts: dict[int, int] = defaultdict(int)
            for b in owner.values():
                counts[b] += 1
            room = sorted(b for b, c in counts.items() if c < target_row_num)
            if room:
                owner[h] = room[0]
            else:
                owner[h] = next(b for b in range(len(counts) + 1) if b not in counts)
        out.append(owner[h])
    return out


# ============================================================================ postpone bucket mode (bucket -2)

POSTPONE_BUCKET = -2  # the bucket (and total bucket count) of rows waiting for a bucket


def postpone_bucket_count(live: Iterable[FileFacts], partition: Hashable, default_bucket_num: int) -> int:
    """impl.write.postpone.bucket_count_for: the bucket count of the partition's real-bucket
    files if it has any (they agree: rule a. of check_conflicts), else ``postpone.default-bucket-num``."""
    for f in live:
        if f.partition == partition and f.bucket >= 0 and f.total_buckets > 0:
            return f.total_buckets
    return default_bucket_num


def check_postpone_compaction(before: Mapping[Identity, FileFacts], changes: Iterable[Entry],
                              default_bucket_num: int) -> None:
    """What one postpone compaction publishes (impl.write.postpone.compact_postponed_partition),
    in one COMPACT snapshot: for each partition it touches, every postponed file of the
    partition leaves; the files that appear are real-bucket files (0 <= bucket < n, total
    buckets n, n = ``postpone_bucket_count`` before the compaction) of those partitions; files
    that leave besides the postponed ones are real-bucket files of the same partitions (merged
    by the buckets' writers); no postponed file appears."""
    changes = list(changes)
    touched = {e.file.partition for e in changes if e.kind == DELETE and e.file.bucket == POSTPONE_BUCKET}
    postponed = {k for k, f in before.items() if f.bucket == POSTPONE_BUCKET and f.partition in touched}
    left = {identity(e.file) for e in changes if e.kind == DELETE and e.file.bucket == POSTPONE_BUCKET}
    assert left == postponed, f"postponed files left behind: {sorted(postponed - left)}"
    counts = {p: postpone_bucket_count(before.values(), p, default_bucket_num) for p in touched}
    for e in changes:
        f = e.file
        assert f.partition in touched, f"{e.kind} of {f.file_name}: partition {f.partition} has no postponed file"
        if f.bucket == POSTPONE_BUCKET:
            assert e.kind == DELETE, f"a compaction adds postponed file {f.file_name}"
            continue
        n = counts[f.partition]
        assert 0 <= f.bucket < n and f.total_buckets == n, \
            f"{f.file_name}: bucket {f.bucket} of {f.total_buckets}, the partition has {n} buckets"


def replay_postponed(bucket_rows: Iterable[tuple[Any, int, int, Any]],
                     postponed: Iterable[tuple[Any, int, Any]]) -> dict[Any, Any]:
    """A real bucket's rows after a postpone compaction: its (key, sequence_number, row_kind,
    value) rows, then the postponed (key, row_kind, value) rows routed to it in replay order
    (file creation time, then row order), numbered after the bucket's highest sequence number
    (postponed rows carry none), merged by the deduplicate engine. Before the compaction a read
    sees ``merge_rows(bucket_rows)`` alone: batch scans skip bucket -2."""
    rows = list(bucket_rows)
    start = max((r[1] for r in rows), default=-1) + 1
    rows += [(key, start + i, kind, value) for i, (key, kind, value) in enumerate(postponed)]
    return merge_rows(rows)

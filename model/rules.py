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
    KeyRangeOverlapError,
)

ADD, DELETE = "ADD", "DELETE"  # entry kinds
APPEND, COMPACT, OVERWRITE = "APPEND", "COMPACT", "OVERWRITE"  # snapshot (commit) kinds

Identity = tuple  # (partition, bucket, level, file_name)


@dataclass(frozen=True)
class FileFacts:
    """What the protocol knows about one data file. Keys are None on append-only tables."""

    partition: Hashable
    bucket: int
    total_buckets: int
    level: int
    file_name: str
    min_key: Any = None
    max_key: Any = None
    row_count: int = 0


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
    impl.snapshot.expire and the tag deletion of impl.table.maintenance).
    """
    return frozenset(key for live in (*retained, *tagged) for key in live)


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

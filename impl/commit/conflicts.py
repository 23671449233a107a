"""Commit conflict rules, as one pure function (``model.check_conflicts`` mirrors it).

Evaluated against the live files of the latest snapshot in the partitions the commit
touches, in this order:

1. unless OVERWRITE, a partition's total bucket count never changes;
2. the fold of live files + changes must not ADD a file that is already there;
3. no DELETE may survive the fold (it names a file that is not live);
4. on primary-key tables, files of one (partition, bucket, level >= 1) must not overlap in
   key range. Level 0 holds freshly flushed, overlapping sorted runs by design.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable, Sequence

from impl.errors import (
    BucketCountChangedError,
    DuplicateFileError,
    FileAlreadyLiveError,
    FileNotLiveError,
    KeyRangeOverlapError,
)
from impl.format.json_records import CommitKind
from impl.format.records import FileKind, ManifestEntry
from impl.manifest.entries import merge_entries

KeySortKey = Callable[[bytes], Any]  # serialized key BinaryRow -> comparable value


def check_conflicts(
    live: Iterable[ManifestEntry],
    changes: Sequence[ManifestEntry],
    kind: CommitKind,
    key_sort_key: KeySortKey | None,
    *,
    describe_partition: Callable[[bytes], str] = lambda p: p.hex(),
) -> None:
    """Raise a CommitConflictError subclass if ``changes`` cannot be applied to ``live``."""
    all_entries = [*live, *changes]

    if kind is not CommitKind.OVERWRITE:
        total_buckets: dict[bytes, tuple[int, str]] = {}
        for e in all_entries:
            if e.total_buckets <= 0:
                continue
            seen = total_buckets.setdefault(e.partition, (e.total_buckets, e.file.file_name))
            if seen[0] != e.total_buckets:
                raise BucketCountChangedError(
                    f"total buckets of partition {describe_partition(e.partition)} changed from {seen[0]} "
                    f"(file {seen[1]}) to {e.total_buckets} (file {e.file.file_name}) without overwrite",
                    files=(seen[1], e.file.file_name),
                )

    try:
        merged = merge_entries(all_entries)
    except DuplicateFileError as e:
        raise FileAlreadyLiveError(
            f"file {e.file_name} is already live; another commit added it, or this commit adds it twice",
            files=(e.file_name,),
        ) from e

    not_live = [e.file.file_name for e in merged.values() if e.kind is FileKind.DELETE]
    if not_live:
        raise FileNotLiveError(
            f"commit deletes files that are not live (deleted by another commit, or never added): "
            f"{', '.join(not_live)}",
            files=tuple(not_live),
        )

    if key_sort_key is None:
        return
    levels: dict[tuple[bytes, int, int], list[ManifestEntry]] = defaultdict(list)
    for e in merged.values():
        if e.file.level >= 1:
            levels[(e.partition, e.bucket, e.file.level)].append(e)
    for (partition, bucket, level), files in levels.items():
        files.sort(key=lambda e: key_sort_key(e.file.min_key))
        for a, b in zip(files, files[1:]):
            if key_sort_key(a.file.max_key) >= key_sort_key(b.file.min_key):
                raise KeyRangeOverlapError(
                    f"key ranges of {a.file.file_name} and {b.file.file_name} overlap in partition "
                    f"{describe_partition(partition)}, bucket {bucket}, level {level}",
                    files=(a.file.file_name, b.file.file_name),
                )

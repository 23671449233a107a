"""The rules of manifest entries, as pure functions (the model in ``model/`` mirrors these).

- ADD then DELETE of the same identity cancel: the file came and went.
- A DELETE whose ADD is not in the stream is kept: its ADD lives in an older manifest.
- A second ADD of an identity already in the map is an error (every file is added once).
- A second DELETE of an identity already deleted in the stream stays one DELETE. (Paimon's
  Java cancels the pair, which would let a double delete of a file that is not live pass
  the conflict check; keeping it makes that commit fail as it should.)
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable

from impl.errors import DuplicateFileError
from impl.manifest.records import FileIdentity, FileKind, ManifestEntry


def merge_entries(entries: Iterable[ManifestEntry]) -> dict[FileIdentity, ManifestEntry]:
    """Fold entries in order into the surviving ones, keyed by identity (insertion ordered)."""
    return {k: e for k, (_, e) in _fold(enumerate(entries), lambda e: e.identity).items()}


def live_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """The ADD entries that survive a full fold (what a snapshot's reader sees), in fold order.

    Only entries whose file name occurs more than once can cancel or repeat (an identity
    includes the file name), so only those are folded; every other entry stands where it is.
    Planning a 100,000-file table where nothing was deleted then costs one count of the names
    instead of 100,000 identity keys. The answer is the full fold's, order included (a test
    checks it against ``merge_entries`` on random ADD/DELETE sequences)."""
    entries = entries if isinstance(entries, list) else list(entries)
    counts = Counter(e.file.file_name for e in entries)
    if len(counts) == len(entries):
        return [e for e in entries if e.kind is FileKind.ADD]
    repeated = ((i, e) for i, e in enumerate(entries) if counts[e.file.file_name] > 1)
    survivors = dict(_fold(repeated, _identity_tuple).values())  # position -> entry
    return [e for i, e in enumerate(entries)
            if e.kind is FileKind.ADD and (counts[e.file.file_name] == 1 or survivors.get(i) is e)]


def _identity_tuple(e: ManifestEntry) -> tuple:
    # FileIdentity's fields as a plain tuple: the same equality, without the NamedTuple
    # construction that made up most of the fold's cost when planning 100k-file tables
    f = e.file
    return (e.partition, e.bucket, f.level, f.file_name, f.extra_files, f.embedded_file_index, f.external_path)


def _fold(entries: Iterable[tuple[int, ManifestEntry]],
          key: Callable[[ManifestEntry], Any]) -> dict[Any, tuple[int, ManifestEntry]]:
    """The rule: (position, entry) pairs in order folded into identity -> (position of the
    insertion that stands, entry)."""
    merged: dict[Any, tuple[int, ManifestEntry]] = {}
    for pos, entry in entries:
        ident = key(entry)
        if entry.kind is FileKind.ADD:
            if ident in merged:
                raise DuplicateFileError(entry.file.file_name, _describe(entry))
            merged[ident] = (pos, entry)
        elif ident not in merged:
            merged[ident] = (pos, entry)
        elif merged[ident][1].kind is FileKind.ADD:
            del merged[ident]
    return merged


def _describe(entry: ManifestEntry) -> str:
    return f"bucket {entry.bucket}, level {entry.file.level}, partition bytes {entry.partition.hex()}"

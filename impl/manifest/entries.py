"""The rules of manifest entries, as pure functions (the model in ``model/`` mirrors these).

- ADD then DELETE of the same identity cancel: the file came and went.
- A DELETE whose ADD is not in the stream is kept: its ADD lives in an older manifest.
- A second ADD of an identity already in the map is an error (every file is added once).
- A second DELETE of an identity already deleted in the stream stays one DELETE. (Paimon's
  Java cancels the pair, which would let a double delete of a file that is not live pass
  the conflict check; keeping it makes that commit fail as it should.)
"""

from __future__ import annotations

from typing import Iterable

from impl.errors import DuplicateFileError
from impl.format.records import FileIdentity, FileKind, ManifestEntry


def merge_entries(entries: Iterable[ManifestEntry]) -> dict[FileIdentity, ManifestEntry]:
    """Fold entries in order into the surviving ones, keyed by identity (insertion ordered)."""
    merged: dict[FileIdentity, ManifestEntry] = {}
    for entry in entries:
        ident = entry.identity
        if entry.kind is FileKind.ADD:
            if ident in merged:
                raise DuplicateFileError(entry.file.file_name, _describe(entry))
            merged[ident] = entry
        elif ident not in merged:
            merged[ident] = entry
        elif merged[ident].kind is FileKind.ADD:
            del merged[ident]
    return merged


def live_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """The ADD entries that survive a full fold (what a snapshot's reader sees)."""
    return [e for e in merge_entries(entries).values() if e.kind is FileKind.ADD]


def _describe(entry: ManifestEntry) -> str:
    return f"bucket {entry.bucket}, level {entry.file.level}, partition bytes {entry.partition.hex()}"

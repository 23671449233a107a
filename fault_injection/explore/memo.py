"""What the explorer keeps from one schedule to the next: decoded manifests, by content.

A schedule is a fresh run from a fresh table, so every schedule decodes again the manifests
the last one decoded (the same records: names and contents are deterministic), and decoding
a manifest (polars' Avro reader, then the entry objects) was half the time of a schedule.
Decoding is a pure function of the bytes, so :func:`memoized_manifest_decoding` keeps the
entries of each distinct manifest content for the explorer's runs. The bytes differ between
runs only in the Avro container's sync marker (16 random bytes each writer draws, which end
the header and every block, so they are the file's last 16 bytes): the key is the content
with that marker blanked. Every storage operation
(the GET of the manifest included) still runs and is scheduled as before; only the decoding
of bytes already decoded once is skipped. impl is not changed: the memo wraps impl's
column-wise decoder (``impl.format.avro_columns.manifest_entries``) while a search runs and
puts it back after.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator

from impl.format import avro_columns
from impl.format.records import ManifestEntry

_SYNC_BYTES = 16
_MAX_MANIFESTS = 20_000  # distinct manifest contents kept; the memo starts over beyond

_lock = threading.Lock()
_depth = 0  # nested searches (shrinking inside random mode) install the memo once
_entries: dict[bytes, tuple[ManifestEntry, ...]] = {}
_original: Callable[[bytes], list[ManifestEntry] | None] | None = None  # impl's decoder while wrapped


def content_key(data: bytes) -> bytes:
    """An Avro container's bytes with its sync marker (its last 16 bytes) blanked."""
    if len(data) < _SYNC_BYTES:
        return data
    return data.replace(data[-_SYNC_BYTES:], bytes(_SYNC_BYTES))


def _memoized(decode: Callable[[bytes], list[ManifestEntry] | None]) -> Callable[[bytes], list[ManifestEntry] | None]:
    def manifest_entries(data: bytes) -> list[ManifestEntry] | None:
        key = content_key(data)
        kept = _entries.get(key)
        if kept is not None:
            return list(kept)  # entries are frozen; the list is the caller's
        decoded = decode(data)
        if decoded is not None:  # None: impl falls back to fastavro, which reports corruption
            if len(_entries) >= _MAX_MANIFESTS:
                _entries.clear()
            _entries[key] = tuple(decoded)
        return decoded

    return manifest_entries


@contextlib.contextmanager
def memoized_manifest_decoding() -> Iterator[None]:
    """Within: manifests whose bytes were decoded before are not decoded again."""
    global _depth, _original
    with _lock:
        _depth += 1
        if _depth == 1:
            _original = avro_columns.manifest_entries
            avro_columns.manifest_entries = _memoized(_original)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _original is not None:
                avro_columns.manifest_entries = _original
                _original = None
                _entries.clear()

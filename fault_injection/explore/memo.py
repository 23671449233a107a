"""What the explorer keeps from one schedule to the next: decoded metadata files, by content.

A schedule is a fresh run from a fresh table, so every schedule decodes again the manifests
and manifest lists the last one decoded (the same records: names and contents are
deterministic), and decoding them (polars' and fastavro's Avro readers, then the entry
objects) was half the time of a schedule. Decoding is a pure function of the bytes, so
:func:`memoized_decoding` keeps the result for each distinct content while the explorer
runs. Every storage operation (the GET of the file included) still runs and is scheduled as
before; only the decoding of bytes already decoded once is skipped. impl is not changed: the
memo wraps impl's two Avro decoders (``impl.manifest.columnar_entries.manifest_entries``, the
column-wise manifest decoder, and ``impl.format.avro.read_avro``, the record decoder of
manifest lists) while a search runs and puts them back after. A file that does not decode
(None, or an error) is not kept: it is decoded, and reported, every time.

The bytes of one content differ between runs only in the Avro container's sync marker (16
random bytes each writer draws, which end the header and every block, so they are the file's
last 16 bytes): the key is the content with that marker blanked.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from impl.format import avro
from impl.manifest import columnar_entries

_SYNC_BYTES = 16
_MAX_FILES = 20_000  # distinct contents kept per decoder; the memo starts over beyond

_lock = threading.Lock()
_depth = 0  # nested searches (shrinking inside random mode) install the memo once
_originals: dict[str, Callable[..., Any]] = {}


def content_key(data: bytes) -> bytes:
    """An Avro container's bytes with its sync marker (its last 16 bytes) blanked."""
    if len(data) < _SYNC_BYTES:
        return data
    return data.replace(data[-_SYNC_BYTES:], bytes(_SYNC_BYTES))


def _manifest_entries(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    kept: dict[bytes, tuple[Any, ...]] = {}

    def manifest_entries(data: bytes) -> Any:
        key = content_key(data)
        hit = kept.get(key)
        if hit is not None:
            return list(hit)  # the entries are frozen; the list is the caller's
        decoded = decode(data)
        if decoded is not None:  # None: impl falls back to fastavro, which reports corruption
            _bounded(kept)[key] = tuple(decoded)
        return decoded

    return manifest_entries


def _read_avro(decode: Callable[..., list[dict]]) -> Callable[..., list[dict]]:
    kept: dict[tuple[bytes, str, tuple[str, ...]], tuple[dict, ...]] = {}

    def read_avro(data: bytes, path: str, expected_record: str, required_fields: Any = ()) -> list[dict]:
        key = (content_key(data), expected_record, tuple(required_fields))
        hit = kept.get(key)
        if hit is not None:
            return [dict(r) for r in hit]  # impl's readers build frozen records from these
        records = decode(data, path, expected_record, key[2])  # an error names this path
        _bounded(kept)[key] = tuple(dict(r) for r in records)
        return records

    return read_avro


def _bounded(kept: dict) -> dict:
    if len(kept) >= _MAX_FILES:
        kept.clear()
    return kept


_WRAPPED = ((columnar_entries, "manifest_entries", _manifest_entries), (avro, "read_avro", _read_avro))


@contextlib.contextmanager
def memoized_decoding() -> Iterator[None]:
    """Within: metadata files whose bytes were decoded before are not decoded again."""
    global _depth
    with _lock:
        _depth += 1
        if _depth == 1:
            for module, name, wrap in _WRAPPED:
                _originals[name] = getattr(module, name)
                setattr(module, name, wrap(_originals[name]))
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for module, name, _ in _WRAPPED:
                    setattr(module, name, _originals.pop(name))

"""Paimon's file index container (``FileIndexFormat``, version 1): one blob per data file holding
every (column, index type) index, embedded in the manifest entry or written as ``<data-file>.index``.

Layout (big-endian)::

    magic i64 = 1493475289347502 | version i32 = 1 | head length i32
    column count i32, then per column: name (Java writeUTF) | index count i32,
        then per index: type name (writeUTF) | start i32 (from the blob's first byte) | length i32
        (start = -1, length 0: an empty index, e.g. a map key never seen)
    redundant length i32 = 0
    body: the index payloads, in header order

Paimon Java orders columns and index types by ``HashMap`` iteration; :func:`java_hash_order`
reproduces it so impl writes the bytes Java writes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, TypeVar

from impl.fileindex.errors import CorruptFileIndexError

MAGIC = 1493475289347502
VERSION_1 = 1
EMPTY_INDEX_FLAG = -1

K = TypeVar("K")


# ---------------------------------------------------------------------------- Java helpers


def java_string_hash(s: str) -> int:
    """``String.hashCode()`` (over UTF-16 code units), as a signed int32."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_hash_order(keys: Iterable[K], hash_code: Callable[[K], int], *, head_insert: bool = False,
                    called_after_last_insert: bool = False) -> list[K]:
    """``keys`` (distinct, in insertion order) in the iteration order of the ``java.util.HashMap``
    they were put into: by bucket ``(h ^ h >>> 16) & (capacity - 1)``, then within a bucket in
    insertion order (``put``) or reverse insertion order (``computeIfAbsent``, which links a new
    key at the head of its bucket; ``head_insert``).

    The table starts at 16 slots and doubles when its size passes 3/4 of them: ``put`` checks
    after inserting, ``computeIfAbsent`` before each call, so its last insertion resizes only if
    another call follows (``called_after_last_insert``). Resizing keeps the relative order within
    a bucket, so the final capacity alone decides. (Buckets that turned into trees, 8+ colliding
    keys in a 64+ slot table, may iterate differently.)
    """
    keys = list(keys)
    capacity = 16
    for size in range(1, len(keys) + 1):
        if head_insert:
            if size - 1 > capacity * 3 // 4:
                capacity *= 2
        elif size > capacity * 3 // 4:
            capacity *= 2
    if head_insert and called_after_last_insert and len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(k: K) -> int:
        h = hash_code(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)
    slots = [bucket(k) for k in keys]
    n = len(keys)
    order = sorted(range(n), key=lambda i: (slots[i], n - i if head_insert else i))
    return [keys[i] for i in order]


def write_utf(s: str) -> bytes:
    """Java ``DataOutput.writeUTF``: a u16 byte length, then modified UTF-8."""
    out = bytearray()
    for ch in s.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass"):
        cp = ord(ch)
        if cp > 0xFFFF:  # supplementary: each UTF-16 surrogate as three bytes
            for unit in struct.unpack(">2H", ch.encode("utf-16-be")):
                out += bytes((0xE0 | unit >> 12, 0x80 | (unit >> 6) & 0x3F, 0x80 | unit & 0x3F))
        elif 0 < cp < 0x80:
            out.append(cp)
        elif cp < 0x800:
            out += bytes((0xC0 | cp >> 6, 0x80 | cp & 0x3F))
        else:
            out += bytes((0xE0 | cp >> 12, 0x80 | (cp >> 6) & 0x3F, 0x80 | cp & 0x3F))
    if len(out) > 0xFFFF:
        raise ValueError(f"name too long for writeUTF: {s[:40]!r}...")
    return struct.pack(">H", len(out)) + bytes(out)


def _read_utf(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", data, pos)
    raw = data[pos + 2: pos + 2 + n]
    if len(raw) != n:
        raise struct.error("truncated name")
    # modified UTF-8 differs from UTF-8 only in NUL (C0 80) and supplementary characters
    # (surrogate pairs): decode surrogates through surrogatepass, then pair them up
    text = raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
    return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be"), pos + 2 + n


# ---------------------------------------------------------------------------- the container


@dataclass(frozen=True)
class IndexSlot:
    """Where one (column, index type) payload lies in the blob (start -1: empty index)."""

    start: int
    length: int


def encode_file_index(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """The container holding ``indexes`` (column -> index type -> payload), in mapping order."""
    body = bytearray()
    slots: list[tuple[str, list[tuple[str, int, int]]]] = []
    for column, by_type in indexes.items():
        entries = []
        for index_type, payload in by_type.items():
            if payload is None:
                entries.append((index_type, EMPTY_INDEX_FLAG, 0))
            else:
                entries.append((index_type, len(body), len(payload)))
                body += payload
        slots.append((column, entries))
    names = b"".join(write_utf(c) + b"".join(write_utf(t) for t, _, _ in es) for c, es in slots)
    head_length = 8 + 4 + 4 + 4 + 8 * sum(len(es) for _, es in slots) + 4 * len(slots) + 4 + len(names)
    out = bytearray(struct.pack(">qii", MAGIC, VERSION_1, head_length))
    out += struct.pack(">i", len(slots))
    for column, es in slots:
        out += write_utf(column) + struct.pack(">i", len(es))
        for index_type, start, length in es:
            out += write_utf(index_type)
            out += struct.pack(">ii", EMPTY_INDEX_FLAG if start == EMPTY_INDEX_FLAG else start + head_length, length)
    out += struct.pack(">i", 0)  # redundant length
    return bytes(out + body)


def decode_header(data: bytes, where: str) -> dict[str, dict[str, IndexSlot]]:
    """Column -> index type -> slot of a container; CorruptFileIndexError on anything off."""
    try:
        magic, version, head_length = struct.unpack_from(">qii", data, 0)
        if magic != MAGIC:
            raise CorruptFileIndexError(where, f"bad magic {magic} (a file index starts with {MAGIC})")
        if version != VERSION_1:
            raise CorruptFileIndexError(where, f"version {version} is not supported (only {VERSION_1})")
        if head_length < 24 or head_length > len(data):
            raise CorruptFileIndexError(where, f"head length {head_length} does not fit {len(data)} bytes")
        (columns,) = struct.unpack_from(">i", data, 16)
        pos = 20
        out: dict[str, dict[str, IndexSlot]] = {}
        for _ in range(columns):
            column, pos = _read_utf(data, pos)
            (count,) = struct.unpack_from(">i", data, pos)
            pos += 4
            by_type = out.setdefault(column, {})
            for _ in range(count):
                index_type, pos = _read_utf(data, pos)
                start, length = struct.unpack_from(">ii", data, pos)
                pos += 8
                if start != EMPTY_INDEX_FLAG and (start < head_length or length < 0 or start + length > len(data)):
                    raise CorruptFileIndexError(
                        where, f"index {column}/{index_type} at {start}+{length} lies outside {len(data)} bytes")
                by_type[index_type] = IndexSlot(start, length)
        if pos + 4 > head_length:
            raise CorruptFileIndexError(where, "header overruns its declared length")
        return out
    except struct.error as e:
        raise CorruptFileIndexError(where, f"truncated ({len(data)} bytes): {e}") from e

"""Paimon's ``bitmap`` file index: one RoaringBitmap32 of row positions per distinct value.

Payload (big-endian), version byte first (1 or 2; Paimon 1.4 writes 2 unless
``file-index.bitmap.<col>.version`` says 1):

- V1: row count i32 | distinct non-null values i32 | has-null bool | [null offset i32] |
  per value: key | offset i32 | bitmaps.
- V2: row count i32 | distinct values i32 | has-null bool | [null offset i32 | null bitmap
  length i32] | block count i32 | per block: first key | block offset i32 | blocks' byte size
  i32 | per block: entries i32, per entry: key | offset i32 | length i32 (entries sorted by key,
  blocks of at most ``index-block-size``, default 16 KiB) | bitmaps.

An offset is relative to the start of the bitmaps; a value (or null) found in exactly one row
has no bitmap: its offset is ``-1 - row``. Bitmaps are Roaring's portable serialization after
``runOptimize``; the null bitmap (when 2+ rows are null) comes first, then the values' bitmaps
in Java ``HashMap`` iteration order of the values (reproduced by
:func:`impl.fileindex.format.java_hash_order`). Keys: int8/16/32/64, float, double, bool
(one byte), strings as i32 length + UTF-8. Binaries and decimals are refused, as in Paimon.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from impl.bucket.routing import hash_bytes
from impl.fileindex.errors import CorruptFileIndexError, UnsupportedFileIndexError
from impl.fileindex.format import java_hash_order
from impl.fileindex.keys import ColumnKeys, KeyKind

INDEX_TYPE = "bitmap"
VERSION_1 = 1
VERSION_2 = 2
DEFAULT_BLOCK_SIZE_BYTES = 16 * 1024

_FORMATS = {KeyKind.BYTE: ">b", KeyKind.SHORT: ">h", KeyKind.INT: ">i", KeyKind.LONG: ">q",
            KeyKind.FLOAT: ">f", KeyKind.DOUBLE: ">d", KeyKind.BOOLEAN: ">?"}


def check_supported(kind: KeyKind | None, column: str) -> None:
    """UnsupportedFileIndexError for the column types Paimon's bitmap index refuses."""
    if kind is None or kind is KeyKind.BINARY:
        raise UnsupportedFileIndexError(
            f"file-index.bitmap.columns: column {column!r} has a type the bitmap index does not support")


# ---------------------------------------------------------------------------- keys


def _key_bytes(kind: KeyKind, key) -> bytes:
    if kind is KeyKind.STRING:
        return struct.pack(">i", len(key)) + key
    return struct.pack(_FORMATS[kind], key)


def _read_key(kind: KeyKind, data: bytes, pos: int):
    if kind is KeyKind.STRING:
        (n,) = struct.unpack_from(">i", data, pos)
        if n < 0 or pos + 4 + n > len(data):
            raise struct.error("string key overruns the index")
        return bytes(data[pos + 4: pos + 4 + n]), pos + 4 + n
    fmt = _FORMATS[kind]
    return struct.unpack_from(fmt, data, pos)[0], pos + struct.calcsize(fmt)


def _keys_and_offsets(kind: KeyKind, data: bytes, pos: int, count: int) -> tuple[list[tuple[object, int]], int]:
    """``count`` (key, offset i32) pairs from ``pos``, and the position after them."""
    out = []
    for _ in range(count):
        key, pos = _read_key(kind, data, pos)
        (off,) = struct.unpack_from(">i", data, pos)
        out.append((key, off))
        pos += 4
    return out, pos


def lookup_key(kind: KeyKind, key):
    """A key as the reader's dictionary holds it: floats by their bits (Java's ``Float.equals``)."""
    if kind is KeyKind.FLOAT:
        return ("f", struct.pack(">f", key))
    if kind is KeyKind.DOUBLE:
        return ("d", struct.pack(">d", key))
    return key


def java_hash_codes(kind: KeyKind, keys: list) -> list[int]:
    """``hashCode()`` of the Java objects the bitmap writer keys its HashMap by."""
    if kind is KeyKind.STRING:  # BinaryString: Paimon's MurmurHash3 of the bytes
        return hash_bytes(keys).tolist()
    return [java_hash_code(kind, k) for k in keys]


def java_hash_code(kind: KeyKind, key) -> int:
    """``hashCode()`` of one Java key object (not strings: see :func:`java_hash_codes`)."""
    if kind in (KeyKind.BYTE, KeyKind.SHORT, KeyKind.INT):
        return int(key)
    if kind is KeyKind.LONG:
        v = int(key) & 0xFFFFFFFFFFFFFFFF
        return (v ^ (v >> 32)) & 0xFFFFFFFF
    if kind is KeyKind.FLOAT:
        return struct.unpack(">i", struct.pack(">f", key))[0] if key == key else 0x7FC00000
    if kind is KeyKind.DOUBLE:
        bits = struct.unpack(">Q", struct.pack(">d", key))[0] if key == key else 0x7FF8000000000000
        return (bits ^ (bits >> 32)) & 0xFFFFFFFF
    if kind is KeyKind.BOOLEAN:
        return 1231 if key else 1237
    raise TypeError(f"no single-key hash for {kind.value} keys")


def _sort_key(kind: KeyKind):
    if kind in (KeyKind.FLOAT, KeyKind.DOUBLE):  # Float.compare: -0.0 < 0.0, NaN last
        return lambda v: (v != v, v if v == v else 0.0, not (v == 0 and str(v).startswith("-")))
    return lambda v: v


# ---------------------------------------------------------------------------- writing


def _serialize(rows: np.ndarray) -> bytes:
    bm = BitMap(rows.astype(np.uint32))
    bm.run_optimize()
    return bm.serialize()


class BitmapIndexBuilder:
    """Collects a column's keys batch by batch; :meth:`payload` is the index bytes Paimon writes."""

    def __init__(self, kind: KeyKind, version: int = VERSION_2, block_size_bytes: int = DEFAULT_BLOCK_SIZE_BYTES):
        if version not in (VERSION_1, VERSION_2):
            raise UnsupportedFileIndexError(f"bitmap index version {version} (Paimon writes 1 or 2)")
        self.kind = kind
        self.version = version
        self.block_size_bytes = block_size_bytes
        self._chunks: list[ColumnKeys] = []

    def add(self, keys: ColumnKeys) -> None:
        self._chunks.append(keys)

    def _nulls(self) -> np.ndarray:
        return np.concatenate([c.nulls for c in self._chunks]) if self._chunks else np.zeros(0, bool)

    def _groups(self) -> tuple[int, np.ndarray, list, list[np.ndarray]]:
        """(rows, null rows, distinct keys in first-seen order, their rows)."""
        nulls = self._nulls()
        kind = self.kind
        if kind is KeyKind.STRING:
            arr = pa.array([v for c in self._chunks for v in c.values], type=pa.binary())
        elif kind is KeyKind.FLOAT:
            arr = pa.array(np.concatenate([np.asarray(c.values, np.float32) for c in self._chunks]).view(np.int32))
        elif kind is KeyKind.DOUBLE:
            arr = pa.array(np.concatenate([np.asarray(c.values, np.float64) for c in self._chunks]).view(np.int64))
        else:
            arr = pa.array(np.concatenate([np.asarray(c.values) for c in self._chunks]))
        present = np.flatnonzero(~nulls)
        enc = pc.dictionary_encode(arr.take(pa.array(present))) if len(present) else None
        if enc is None:
            return len(nulls), np.flatnonzero(nulls), [], []
        codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        dictionary = enc.dictionary.to_pylist()
        if kind is KeyKind.FLOAT:
            dictionary = np.asarray(dictionary, np.int32).view(np.float32).tolist()
        elif kind is KeyKind.DOUBLE:
            dictionary = np.asarray(dictionary, np.int64).view(np.float64).tolist()
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(dictionary) + 1))
        rows_sorted = present[order]
        groups = [rows_sorted[bounds[i]:bounds[i + 1]] for i in range(len(dictionary))]
        return len(nulls), np.flatnonzero(nulls), dictionary, groups

    def payload(self) -> bytes:
        kind = self.kind
        row_count, null_rows, keys, groups = self._groups()
        by_key = dict(zip(range(len(keys)), groups, strict=False))
        # id2bitmap.computeIfAbsent once per non-null row: a row after the last new value's first
        # one may still grow the table
        last_row = int(np.flatnonzero(~self._nulls())[-1]) if keys else -1
        codes = java_hash_codes(kind, keys)
        order = java_hash_order(range(len(keys)), codes.__getitem__, head_insert=True,
                                called_after_last_insert=bool(keys) and int(groups[-1][0]) < last_row)
        null_bytes = _serialize(null_rows)
        offset = 0 if len(null_rows) <= 1 else len(null_bytes)
        offsets: list[tuple[int, int]] = []
        bodies: list[bytes] = []
        lengths: dict[int, int] = {}
        for i in order:
            rows = by_key[i]
            if len(rows) == 1:
                offsets.append((i, -1 - int(rows[0])))
            else:
                b = _serialize(rows)
                bodies.append(b)
                offsets.append((i, offset))
                lengths[i] = len(b)
                offset += len(b)
        has_null = len(null_rows) > 0
        null_offset = -1 - int(null_rows[0]) if len(null_rows) == 1 else 0
        out = bytearray(struct.pack(">b", self.version))
        out += struct.pack(">ii?", row_count, len(keys), has_null)
        if self.version == VERSION_1:
            if has_null:
                out += struct.pack(">i", null_offset)
            for i, off in offsets:
                out += _key_bytes(kind, keys[i]) + struct.pack(">i", off)
        else:
            if has_null:
                out += struct.pack(">ii", null_offset, len(null_bytes))
            out += self._v2_blocks(keys, offsets, lengths)
        if len(null_rows) > 1:
            out += null_bytes
        for b in bodies:
            out += b
        return bytes(out)

    def _v2_blocks(self, keys: list, offsets: list[tuple[int, int]], lengths: dict[int, int]) -> bytes:
        kind = self.kind
        sk = _sort_key(kind)
        entries = sorted(offsets, key=lambda e: sk(keys[e[0]]))
        blocks: list[list[tuple[int, int, int]]] = []
        block_bytes: list[int] = []
        for i, off in entries:
            size = 8 + len(_key_bytes(kind, keys[i]))
            if not blocks or (len(blocks[-1]) and block_bytes[-1] + size > self.block_size_bytes):
                blocks.append([])
                block_bytes.append(4)
            blocks[-1].append((i, off, lengths.get(i, -1)))
            block_bytes[-1] += size
        out = bytearray(struct.pack(">i", len(blocks)))
        block_offset = 0
        for block, nbytes in zip(blocks, block_bytes, strict=False):
            out += _key_bytes(kind, keys[block[0][0]]) + struct.pack(">i", block_offset)
            block_offset += nbytes
        out += struct.pack(">i", block_offset)
        for block in blocks:
            out += struct.pack(">i", len(block))
            for i, off, length in block:
                out += _key_bytes(kind, keys[i]) + struct.pack(">ii", off, length)
        return bytes(out)


# ---------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Entry:
    offset: int
    length: int  # -1: unknown (V1's last bitmap, or a single-row entry)


class BitmapIndex:
    """A bitmap payload, read: the rows holding given keys."""

    def __init__(self, payload: bytes, kind: KeyKind, where: str):
        self.kind = kind
        self.where = where
        self._data = payload
        try:
            self._parse()
        except struct.error as e:
            raise CorruptFileIndexError(where, f"bitmap index truncated: {e}") from e

    def _parse(self) -> None:
        data, kind = self._data, self.kind
        version = data[0] if data else None
        if version not in (VERSION_1, VERSION_2):
            raise CorruptFileIndexError(self.where, f"bitmap index version {version} is not supported (1 or 2)")
        self.row_count, distinct, has_null = struct.unpack_from(">ii?", data, 1)
        pos = 10
        self.null: _Entry | None = None
        self.entries: dict[object, _Entry] = {}
        if version == VERSION_1:
            null_offset = 0
            if has_null:
                (null_offset,) = struct.unpack_from(">i", data, pos)
                pos += 4
            raw, pos = _keys_and_offsets(kind, data, pos, distinct)
            self.body_start = pos
            # lengths follow from consecutive non-negative offsets (the null bitmap first)
            stored = [off for _, off in raw if off >= 0]
            nexts = dict(zip(stored, stored[1:], strict=False))
            first = stored[0] if stored else None
            if has_null:
                self.null = _Entry(null_offset, first - null_offset if null_offset >= 0 and first is not None else -1)
            for key, off in raw:
                self.entries[lookup_key(kind, key)] = _Entry(off, nexts[off] - off if off in nexts else -1)
            return
        null_offset = null_length = 0
        if has_null:
            null_offset, null_length = struct.unpack_from(">ii", data, pos)
            pos += 8
            self.null = _Entry(null_offset, null_length)
        (blocks,) = struct.unpack_from(">i", data, pos)
        pos += 4
        firsts, pos = _keys_and_offsets(kind, data, pos, blocks)
        block_offsets = [off for _, off in firsts]
        (blocks_size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        entries_start = pos
        self.body_start = entries_start + blocks_size
        if self.body_start > len(data):
            raise CorruptFileIndexError(self.where, "bitmap index blocks overrun the payload")
        for off in block_offsets:
            p = entries_start + off
            (n,) = struct.unpack_from(">i", data, p)
            p += 4
            for _ in range(n):
                key, p = _read_key(kind, data, p)
                o, length = struct.unpack_from(">ii", data, p)
                p += 8
                self.entries[lookup_key(kind, key)] = _Entry(o, length)
        if len(self.entries) != distinct:
            raise CorruptFileIndexError(self.where, f"bitmap index lists {len(self.entries)} of {distinct} values")

    def _bitmap(self, e: _Entry) -> BitMap:
        if e.offset < 0:
            return BitMap([-1 - e.offset])
        start = self.body_start + e.offset
        end = len(self._data) if e.length < 0 else start + e.length
        if end > len(self._data):
            raise CorruptFileIndexError(self.where, "a bitmap overruns the payload")
        try:
            return BitMap.deserialize(self._data[start:end])
        except (ValueError, RuntimeError) as ex:
            raise CorruptFileIndexError(self.where, f"unreadable bitmap: {ex}") from ex

    def rows(self, key) -> BitMap:
        """Rows holding ``key`` (None: the null rows)."""
        if key is None:
            return self._bitmap(self.null) if self.null is not None else BitMap()
        e = self.entries.get(lookup_key(self.kind, key))
        return self._bitmap(e) if e is not None else BitMap()

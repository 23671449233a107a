"""Row routing, vectorized: Paimon's bucket of every row, and the partition of every row.

Bucket of a row = ``abs(hash % num_buckets)`` (Java's truncated ``%`` on a signed int32),
``hash`` = Paimon's ``BinaryRow.hashCode()``: MurmurHash3_x86_32 with seed 42 over the row
bytes read as 4-byte little-endian words (``hashBytesByWords``: mixK1 / mixH1 per word, then
``fmix(h1 ^ length)``), the row being the BinaryRow of the bucket-key columns *without* the
4-byte arity prefix, header byte 0.

Everything here works on whole Arrow arrays with numpy: the BinaryRows of all rows are built
in one flat ``uint8`` buffer (fixed-width values scattered into their 8-byte slots, string
bytes scattered into the variable-length tails), then hashed word by word across all rows.
The only per-row Python is the fallback for DECIMAL with precision > 18, which Paimon
stores as variable-length big-endian bytes (rare as a bucket key).

With ``bucket-function.type`` = mod the bucket is ``floorMod(key, num_buckets)`` of the single
INT or BIGINT bucket key (Paimon's ModBucketFunction; a null key reads as 0, as Java's
``BinaryRow.getInt`` of a null slot does); ``hive`` is refused by name.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.data.binary_row import encode_row, encode_row_unserialized, null_bits_size_in_bytes
from impl.data.types import DataType
from impl.errors import InvalidOptionError
from impl.format.memory_pool import write_pool
from impl.fs.paths import POSTPONE_BUCKET_ID
from impl.options.values import BucketFunctionType

SEED = 42
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)


# ============================================================================ murmur


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k: np.ndarray) -> np.ndarray:
    k = k * _C1
    k = _rotl(k, 15)
    return k * _C2


def _mix_h1(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    h = h ^ k
    h = _rotl(h, 13)
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix(h: np.ndarray, length: np.ndarray) -> np.ndarray:
    h = h ^ length.astype(np.uint32)
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def _mix_block(h: np.ndarray, block: np.ndarray) -> np.ndarray:
    """Mix the columns of a [rows, words] uint32 block, in order, into the hashes of those rows."""
    for i in range(block.shape[1]):
        h = _mix_h1(h, _mix_k1(block[:, i]))
    return h


def _mix_ragged(h: np.ndarray, words: np.ndarray, starts: np.ndarray, nwords: np.ndarray) -> np.ndarray:
    """Mix ``words[starts[i] : starts[i] + nwords[i]]`` into ``h[i]`` for every row i.

    Rows are grouped by word count (usually a handful of distinct counts), each group gathered
    as one 2D block; with very many distinct counts, rows sorted by count are mixed one word
    position at a time over the prefix that still has a word there.
    """
    h = h.copy()
    distinct = np.unique(nwords)
    if len(distinct) <= 64:
        for w in distinct.tolist():
            if w == 0:
                continue
            rows = np.flatnonzero(nwords == w)
            block = words[starts[rows][:, None] + np.arange(w)]
            h[rows] = _mix_block(h[rows], block)
        return h
    order = np.argsort(-nwords, kind="stable")
    s_starts, s_nwords, hs = starts[order], nwords[order], h[order]
    max_words = int(s_nwords[0])
    active_counts = len(h) - np.searchsorted(s_nwords[::-1], np.arange(max_words), side="right")
    for i in range(max_words):
        active = int(active_counts[i])
        hs[:active] = _mix_h1(hs[:active], _mix_k1(words[s_starts[:active] + i]))
    h[order] = hs
    return h


def hash_rows(buf: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Paimon's ``hashBytesByWords`` of each row ``buf[offsets[i]:offsets[i+1]]`` (int32 per row).

    Row lengths must be multiples of 4 (BinaryRows are multiples of 8).
    """
    n = len(offsets) - 1
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    words = buf.view("<u4")
    lengths = np.diff(offsets)
    nwords = lengths // 4
    with np.errstate(over="ignore"):
        h = np.full(n, SEED, dtype=np.uint32)
        if nwords.min() == nwords.max():
            h = _mix_block(h, words.reshape(n, int(nwords[0])))
        else:
            h = _mix_ragged(h, words, offsets[:-1] // 4, nwords)
        h = _fmix(h, lengths)
    return h.view(np.int32)


def hash_bytes(values: Sequence[bytes]) -> np.ndarray:
    """Paimon's ``MurmurHashUtils.hashBytes`` of each value (``BinaryString.hashCode()``), int32:
    the 4-byte little-endian words as in :func:`hash_rows`, then each remaining byte (sign-extended)
    mixed as a word of its own, then ``fmix(h1 ^ length)``."""
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=n)
    buf = np.frombuffer(b"".join(values), dtype=np.uint8)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    aligned = lengths - lengths % 4
    with np.errstate(over="ignore"):
        h = np.full(n, SEED, dtype=np.uint32)
        # the aligned words, gathered into their own buffer so every row starts on a word
        word_offsets = np.concatenate(([0], np.cumsum(aligned)))
        take = np.repeat(starts, aligned) + (np.arange(int(word_offsets[-1])) - np.repeat(word_offsets[:-1], aligned))
        words = buf[take].view("<u4") if len(take) else np.zeros(0, dtype=np.uint32)
        h = _mix_ragged(h, words, word_offsets[:-1] // 4, aligned // 4)
        for i in range(3):  # the tail bytes, one at a time
            rows = np.flatnonzero(lengths - aligned > i)
            if len(rows):
                byte = buf[starts[rows] + aligned[rows] + i].view(np.int8).astype(np.int32).view(np.uint32)
                h[rows] = _mix_h1(h[rows], _mix_k1(byte))
        h = _fmix(h, lengths)
    return h.view(np.int32)


def _hash_parts(parts: "RowParts") -> np.ndarray:
    """``hash_rows`` of rows given as parts: the fixed part is one uniform block, tails ragged."""
    n = parts.head.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    with np.errstate(over="ignore"):
        h = np.full(n, SEED, dtype=np.uint32)
        h = _mix_block(h, parts.head.view("<u4"))
        tail_len = np.diff(parts.tail_offsets)
        if parts.pending is not None:
            h = _mix_value_words(h, *parts.pending)
        elif len(parts.tail) and tail_len.min() == tail_len.max():  # equal tails: one block
            h = _mix_block(h, parts.tail.view("<u4").reshape(n, -1))
        elif len(parts.tail):
            h = _mix_ragged(h, parts.tail.view("<u4"), parts.tail_offsets[:-1] // 4, tail_len // 4)
        h = _fmix(h, parts.head.shape[1] + tail_len)
    return h.view(np.int32)


def _mix_value_words(h: np.ndarray, rows: np.ndarray, data: np.ndarray, starts: np.ndarray,
                     lens: np.ndarray) -> np.ndarray:
    """Mix into ``h[rows]`` the tails of BinaryRows whose tail is one value each (``data`` from
    ``starts``, ``lens`` bytes, zero-padded to 8): read 8 bytes at a time from an unaligned view
    of ``data`` and mixed as two words, as :func:`_scatter_words` would lay them out and
    :func:`_mix_ragged` read them back, without building the tail buffer."""
    at_byte = _unaligned_words(data)
    nwords = (lens + 7) // 8
    hs = h[rows]
    for k in range(int(nwords.max(initial=0))):
        active = nwords > k
        sel = slice(None) if active.all() else np.flatnonzero(active)
        words = _value_word(at_byte, starts[sel], lens[sel], k)
        hk = _mix_h1(hs[sel], _mix_k1((words & np.uint64(0xFFFFFFFF)).astype(np.uint32)))
        hs[sel] = _mix_h1(hk, _mix_k1((words >> np.uint64(32)).astype(np.uint32)))
    h = h.copy()
    h[rows] = hs
    return h


def bucket_of_hashes(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """``Math.abs(hash % numBuckets)`` with Java's truncated remainder, as int32."""
    return np.abs(np.fmod(hashes.astype(np.int64), num_buckets)).astype(np.int32)


# ============================================================================ BinaryRow building


def _round8(x: np.ndarray) -> np.ndarray:
    return (x + 7) & ~7


def _as_array(col) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return col


def _valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _fixed_values(arr: pa.Array, t: DataType) -> tuple[np.ndarray, int]:
    """(little-endian bytes [n, width], width) of a fixed-width field's slot value; nulls are 0."""
    r = t.root
    if r == "BOOLEAN":
        v = pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return v.reshape(-1, 1), 1
    if r == "DECIMAL":
        filled = pc.fill_null(arr, pa.scalar(0, arr.type)) if arr.null_count else arr
        raw = np.frombuffer(filled.buffers()[1], dtype="<i8", count=2 * (len(filled) + filled.offset))
        lo = raw[2 * filled.offset::2][: len(filled)].astype("<i8")
        return lo.view(np.uint8).reshape(-1, 8), 8
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = arr.type.unit
        ints = pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).astype("<i8")
        millis = {"s": ints * 1000, "ms": ints, "us": ints // 1000, "ns": ints // 1_000_000}[unit]
        return millis.astype("<i8").view(np.uint8).reshape(-1, 8), 8
    if r == "TIME":
        ints = arr.cast(pa.int64() if pa.types.is_time64(arr.type) else pa.int32())
        v = pc.fill_null(ints, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        unit = arr.type.unit
        millis = {"s": v * 1000, "ms": v, "us": v // 1000, "ns": v // 1_000_000}[unit]
        return millis.astype("<i4").view(np.uint8).reshape(-1, 4), 4
    if r == "DATE":
        days = arr.cast(pa.int32()) if pa.types.is_date32(arr.type) else pc.cast(arr, pa.date32()).cast(pa.int32())
        v = pc.fill_null(days, 0).to_numpy(zero_copy_only=False).astype("<i4")
        return v.view(np.uint8).reshape(-1, 4), 4
    dtype = {"TINYINT": "<i1", "SMALLINT": "<i2", "INT": "<i4", "BIGINT": "<i8", "FLOAT": "<f4", "DOUBLE": "<f8"}[r]
    filled = pc.fill_null(arr, pa.scalar(0, arr.type)) if arr.null_count else arr
    v = np.ascontiguousarray(filled.to_numpy(zero_copy_only=False).astype(dtype))
    w = np.dtype(dtype).itemsize
    return v.view(np.uint8).reshape(-1, w), w


def _string_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes, start offset per row, length per row) of a string/binary array (nulls: length 0)."""
    if pa.types.is_string_view(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string())
    elif pa.types.is_binary_view(arr.type) or pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    elif pa.types.is_fixed_size_binary(arr.type):
        arr = arr.cast(pa.binary())
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    bufs = arr.buffers()
    otype = "<i8" if large else "<i4"
    offs = np.frombuffer(bufs[1], dtype=otype, count=len(arr) + arr.offset + 1)[arr.offset:].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts = offs[:-1]
    lens = np.diff(offs)
    if arr.null_count:
        lens = np.where(_valid_mask(arr), lens, 0)
    return data, starts, lens


def _scatter_bytes(buf: np.ndarray, dest_starts: np.ndarray, data: np.ndarray, src_starts: np.ndarray,
                   lens: np.ndarray) -> None:
    """buf[dest_starts[i] + j] = data[src_starts[i] + j] for j < lens[i], for every i (vectorized)."""
    total = int(lens.sum())
    if total == 0:
        return
    # the usual case: the selected values lie back to back in ``data`` (no gaps, in order)
    contiguous = len(lens) == 1 or bool(np.array_equal(src_starts[1:], src_starts[:-1] + lens[:-1]))
    if contiguous:
        s0 = int(src_starts[0])
        length = int(lens[0])
        if length and np.all(lens == length):  # equal lengths: one 2D block copy
            src = data[s0:s0 + total].reshape(-1, length)
            stride = int(dest_starts[1] - dest_starts[0]) if len(dest_starts) > 1 else length
            if stride >= length and np.all(np.diff(dest_starts) == stride):  # evenly spaced targets
                d0 = int(dest_starts[0])
                view = np.lib.stride_tricks.as_strided(buf[d0:], shape=src.shape, strides=(stride, 1))
                view[...] = src
            else:
                buf[dest_starts[:, None] + np.arange(length)] = src
            return
        positions = np.arange(s0, s0 + total, dtype=np.int64)
        buf[positions + np.repeat(dest_starts - src_starts, lens)] = data[s0:s0 + total]
        return
    excl = np.cumsum(lens) - lens
    within = np.arange(total, dtype=np.int64) - np.repeat(excl, lens)
    buf[np.repeat(dest_starts, lens) + within] = data[np.repeat(src_starts, lens) + within]


def _scatter_words(buf: np.ndarray, dest_starts: np.ndarray, data: np.ndarray, src_starts: np.ndarray,
                   lens: np.ndarray) -> bool:
    """:func:`_scatter_bytes` 8 bytes at a time, into a zeroed ``buf`` whose targets are 8-byte
    aligned (BinaryRow tails): each value is read as little-endian words from an unaligned view
    of ``data`` (the last word masked to the value's bytes), a gather per word position instead
    of one per byte. False (nothing written) when the targets are not aligned."""
    if len(buf) % 8 or np.any(dest_starts % 8):
        return False
    at_byte = _unaligned_words(data)
    out = buf.view("<u8")
    nwords = (lens + 7) // 8
    dest_words = dest_starts // 8
    for k in range(int(nwords.max(initial=0))):
        active = nwords > k
        rows = slice(None) if active.all() else np.flatnonzero(active)
        out[dest_words[rows] + k] = _value_word(at_byte, src_starts[rows], lens[rows], k)
    return True


def _unaligned_words(data: np.ndarray) -> np.ndarray:
    """Little-endian uint64 read at every byte position of ``data`` (zero-padded past its end)."""
    padded = np.concatenate([data, np.zeros(8, dtype=np.uint8)])
    return np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))


# the low n bytes of a little-endian word, n = 0..8
_BYTE_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)


def _value_word(at_byte: np.ndarray, starts: np.ndarray, lens: np.ndarray, k: int) -> np.ndarray:
    """Word ``k`` of each value (``lens`` bytes from ``starts``), bytes past the value's end zero."""
    left = lens - 8 * k  # bytes of the value from this word on
    words = at_byte[starts + 8 * k]
    if len(left) and int(left.min()) < 8:  # some value ends in this word: keep only its bytes
        words &= _BYTE_MASKS[np.minimum(left, 8)]
    return words


def _rows(mask: np.ndarray):
    """Index of the rows where ``mask`` holds: a slice when that is every row (cheaper to index with)."""
    return slice(None) if mask.all() else np.flatnonzero(mask)


def _is_var(t: DataType) -> bool:
    return t.is_string or t.is_binary


@dataclass(frozen=True)
class RowParts:
    """BinaryRows of many rows in two pieces: row i is ``head[i]`` followed by
    ``tail[tail_offsets[i]:tail_offsets[i + 1]]`` (empty for rows without variable-length data)."""

    head: np.ndarray  # uint8 [n, fixed]: null bits and slots
    tail: np.ndarray  # uint8, tails of all rows back to back (each a multiple of 8 bytes)
    tail_offsets: np.ndarray  # int64 [n + 1]
    # (rows, data, starts, lengths) of a tail left unbuilt (``tail`` then empty): one value per row
    pending: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None


def binary_row_parts(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], *,
                     for_hash: bool = False) -> RowParts:
    """The BinaryRows of every row, as :class:`RowParts` (see :func:`binary_rows`). ``for_hash``:
    a tail that is one value per row (one string / binary column) is left unbuilt (``pending``),
    for :func:`_hash_parts` to read straight from the column's data."""
    arrays = [_as_array(c) for c in columns]
    n = len(arrays[0]) if arrays else 0
    arity = len(types)
    nb = null_bits_size_in_bytes(arity)
    fixed = nb + 8 * arity
    head = np.zeros((n, fixed), dtype=np.uint8)
    head_flat = head.reshape(-1)
    row_base = np.arange(n, dtype=np.int64) * fixed
    tail_len = np.zeros(n, dtype=np.int64)
    # (rows, offset of the value within the row, source bytes, source starts, lengths)
    tail_writes = []

    for j, (a, t) in enumerate(zip(arrays, types, strict=True)):
        slot = nb + 8 * j
        valid = _valid_mask(a)
        if not valid.all():
            bit = j + 8
            head[~valid, bit >> 3] |= np.uint8(1 << (bit & 7))
        if _is_var(t):
            data, starts, lens = _string_parts(a)
            inline = valid & (lens <= 7)
            long_ = valid & (lens > 7)
            if inline.any():
                rows = _rows(inline)
                _scatter_bytes(head_flat, row_base[rows] + slot, data, starts[rows], lens[rows])
                head[rows, slot + 7] = (0x80 | lens[rows]).astype(np.uint8)
            if long_.any():
                rows = _rows(long_)
                off = fixed + tail_len[rows]
                words = ((off << 32) | lens[rows]).astype("<i8")
                head[rows, slot:slot + 8] = words.view(np.uint8).reshape(-1, 8)
                tail_writes.append((rows, off, data, starts[rows], lens[rows]))
                tail_len[rows] += _round8(lens[rows])
        elif t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and not t.is_fixed_in_binary_row():
            ints = pc.fill_null(a.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).astype(np.int64)
            unit = a.type.unit
            if unit == "ns":
                millis, nanos = np.divmod(ints, 1_000_000)
            elif unit == "us":
                millis, rem = np.divmod(ints, 1000)
                nanos = rem * 1000
            else:  # s / ms stored in a TIMESTAMP(p > 3) column
                millis = ints * 1000 if unit == "s" else ints
                nanos = np.zeros(n, dtype=np.int64)
            off = fixed + tail_len  # reserved even for nulls, as Paimon does
            words = np.where(valid, (off << 32) | nanos, off << 32).astype("<i8")
            head[:, slot:slot + 8] = words.view(np.uint8).reshape(-1, 8)
            rows = np.flatnonzero(valid)
            millis_bytes = np.ascontiguousarray(millis[rows].astype("<i8")).view(np.uint8)
            tail_writes.append((rows, off[rows], millis_bytes, np.arange(len(rows), dtype=np.int64) * 8,
                                np.full(len(rows), 8, dtype=np.int64)))
            tail_len += 8
        else:
            vals, w = _fixed_values(a, t)
            if not valid.all():
                vals = np.where(valid[:, None], vals, 0).astype(np.uint8)
            head[:, slot:slot + w] = vals

    tail_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(tail_len, out=tail_offsets[1:])
    if (for_hash and len(tail_writes) == 1 and np.all(tail_writes[0][1] == fixed)
            and int(tail_offsets[-1]) == int(_round8(tail_writes[0][4]).sum())):  # no tail without a value
        rows, _, data, starts, lens = tail_writes[0]
        rows = np.arange(n, dtype=np.int64)[rows]  # a slice when every row has a tail
        return RowParts(head, np.zeros(0, dtype=np.uint8), tail_offsets, (rows, data, starts, lens))
    tail = np.zeros(int(tail_offsets[-1]), dtype=np.uint8)
    for rows, off, data, starts, lens in tail_writes:
        dest = tail_offsets[:-1][rows] + (off - fixed)
        if not _scatter_words(tail, dest, data, starts, lens):
            _scatter_bytes(tail, dest, data, starts, lens)
    return RowParts(head, tail, tail_offsets)


def binary_rows(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]) -> tuple[np.ndarray, np.ndarray]:
    """BinaryRows (no arity prefix) of every row: (flat uint8 buffer, int64 offsets of n + 1).

    Byte-identical to :func:`impl.data.binary_row.encode_row_unserialized` per row.
    """
    if any(t.root == "DECIMAL" and not t.is_fixed_in_binary_row() for t in types):
        return _binary_rows_per_row([_as_array(c) for c in columns], types)
    parts = binary_row_parts(columns, types)
    n, fixed = parts.head.shape
    if not len(parts.tail):
        return parts.head.reshape(-1), np.arange(n + 1, dtype=np.int64) * fixed
    tail_len = np.diff(parts.tail_offsets)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(fixed + tail_len, out=offsets[1:])
    buf = np.zeros(int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1]
    buf[(starts[:, None] + np.arange(fixed)).reshape(-1)] = parts.head.reshape(-1)
    _scatter_bytes(buf, starts + fixed, parts.tail, parts.tail_offsets[:-1], tail_len)
    return buf, offsets


def _binary_rows_per_row(arrays: list[pa.Array], types: Sequence[DataType]) -> tuple[np.ndarray, np.ndarray]:
    pyrows = list(zip(*[a.to_pylist() for a in arrays], strict=True))
    encoded = [encode_row_unserialized(r, types) for r in pyrows]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def row_hashes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]) -> np.ndarray:
    """``BinaryRow.hashCode()`` of the row of ``columns`` at every position (int32)."""
    if any(t.root == "DECIMAL" and not t.is_fixed_in_binary_row() for t in types):
        return hash_rows(*binary_rows(columns, types))
    fixed = _fixed_row_hashes(columns, types)
    if fixed is not None:
        return fixed
    return _hash_parts(binary_row_parts(columns, types, for_hash=True))


def _fixed_row_hashes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]) -> np.ndarray | None:
    """:func:`row_hashes` of rows of fixed-width fields without nulls (a bucket key of integers,
    the common case), None for any other rows.

    Such a row is its null-bit words, all zero, then one 8-byte slot per field, so its hash
    mixes a constant prefix, then each slot's two words taken straight from the column: the
    BinaryRow bytes are never built (a 30k-row BIGINT key: 0.2 ms against 1.1 ms)."""
    if not columns or any(_is_var(t) or (t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and not t.is_fixed_in_binary_row())
                          for t in types):
        return None
    arrays = [_as_array(c) for c in columns]
    if any(a.null_count for a in arrays):
        return None
    n = len(arrays[0])
    nb = null_bits_size_in_bytes(len(types))
    with np.errstate(over="ignore"):
        prefix = _mix_block(np.full(1, SEED, dtype=np.uint32), np.zeros((1, nb // 4), dtype=np.uint32))
        h = np.full(n, prefix[0], dtype=np.uint32)
        for a, t in zip(arrays, types, strict=True):
            vals, width = _fixed_values(a, t)
            if width == 8:
                slot = vals.view("<u8").reshape(n)
            else:  # the value's bytes, then zeros, as in the row
                slot = np.zeros(n, dtype="<u8")
                slot.view(np.uint8).reshape(n, 8)[:, :width] = vals
            h = _mix_h1(h, _mix_k1((slot & np.uint64(0xFFFFFFFF)).astype(np.uint32)))
            h = _mix_h1(h, _mix_k1((slot >> np.uint64(32)).astype(np.uint32)))
        h = _fmix(h, np.array(nb + 8 * len(types)))
    return h.view(np.int32)


def compute_buckets(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType],
                    num_buckets: int, function: BucketFunctionType = BucketFunctionType.DEFAULT) -> np.ndarray:
    """The fixed bucket of every row (int32) by Paimon's bucket ``function`` (InvalidOptionError
    for a function this library does not implement or a bucket key it does not take)."""
    check_bucket_function(function, types)
    if function is BucketFunctionType.MOD:
        return mod_buckets(columns[0], num_buckets)
    return bucket_of_hashes(row_hashes(columns, types), num_buckets)


def bucket_function_problem(function: BucketFunctionType, types: Sequence[DataType]) -> str | None:
    """Why ``function`` cannot place rows of a bucket key of ``types`` (None when it can)."""
    if function is BucketFunctionType.HIVE:
        return "bucket-function.type 'hive' is not supported (Hive's bucketing hash is not implemented)"
    if function is BucketFunctionType.MOD and (len(types) != 1 or types[0].root not in ("INT", "BIGINT")):
        # ModBucketFunction's own checks
        return (f"bucket-function.type 'mod' needs exactly one INT or BIGINT bucket key field, the bucket key is "
                f"({', '.join(str(t) for t in types)})")
    return None


def check_bucket_function(function: BucketFunctionType, types: Sequence[DataType]) -> None:
    """InvalidOptionError naming :func:`bucket_function_problem`'s reason, if any."""
    problem = bucket_function_problem(function, types)
    if problem:
        raise InvalidOptionError(problem)


def mod_buckets(column: pa.Array | pa.ChunkedArray, num_buckets: int) -> np.ndarray:
    """``Math.floorMod(key, num_buckets)`` of an INT / BIGINT key column (int32; null keys -> 0)."""
    values = pc.fill_null(_as_array(column).cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    return np.mod(values, np.int64(num_buckets)).astype(np.int32)  # numpy's integer mod is a floor mod


# ============================================================================ bucket mode


# Paimon's bucket id (and total bucket count) of the rows a postpone-mode table holds back
# until a compaction assigns them a bucket; their directory is ``bucket-postpone``.
POSTPONE_BUCKET = POSTPONE_BUCKET_ID


class BucketMode(enum.Enum):
    """How a table assigns rows to buckets (Paimon's BucketMode)."""

    HASH_FIXED = "HASH_FIXED"  # bucket >= 1: the hash of the bucket key modulo the bucket count
    HASH_DYNAMIC = "HASH_DYNAMIC"  # primary key holding every partition field, bucket -1 (impl.write.dynamic_bucket)
    CROSS_PARTITION = "CROSS_PARTITION"  # primary key without some partition field, bucket -1 (impl.write.cross_partition)
    BUCKET_UNAWARE = "BUCKET_UNAWARE"  # append table, bucket -1: files in bucket 0, total buckets -1
    # primary key, bucket -2: writes land in bucket -2 (bucket-postpone), unmerged, unread by batch
    # scans, until a compaction moves them into real buckets (impl.write.postpone)
    POSTPONE = "POSTPONE_MODE"


def bucket_mode(bucket: int, primary_keys: Sequence[str], partition_keys: Sequence[str]) -> BucketMode:
    """The bucket mode of a table with option ``bucket`` and these keys."""
    if bucket > 0:
        return BucketMode.HASH_FIXED
    if bucket == POSTPONE_BUCKET and primary_keys:
        return BucketMode.POSTPONE
    if not primary_keys:
        return BucketMode.BUCKET_UNAWARE
    if set(partition_keys) <= set(primary_keys):
        return BucketMode.HASH_DYNAMIC
    return BucketMode.CROSS_PARTITION


# ============================================================================ partitions


@dataclass(frozen=True)
class RowGroups:
    """Rows grouped by a key: ``ids[i]`` is the group of row i; ``values[g]`` the key of group g."""

    ids: np.ndarray  # int64 per row
    values: tuple[tuple, ...]  # python values of each group's key columns


def group_rows(columns: Sequence[pa.Array | pa.ChunkedArray]) -> RowGroups:
    """Group rows by the values of ``columns`` (dictionary-encodes each column; no per-row Python)."""
    if not columns:
        raise ValueError("group_rows needs at least one column")
    n = len(columns[0])
    if n == 0:
        return RowGroups(np.zeros(0, dtype=np.int64), ())
    combined = np.zeros(n, dtype=np.int64)
    dictionaries = []
    radix = 1
    overflow = False
    codes = []
    for c in columns:
        enc = pc.dictionary_encode(_as_array(c), null_encoding="encode")
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        dictionaries.append(enc.dictionary.to_pylist())
        codes.append(idx)
        size = max(len(enc.dictionary), 1)
        if radix > (2**62) // size:
            overflow = True
        else:
            combined += idx * radix
            radix *= size
    if overflow:
        stacked = np.stack(codes, axis=1)
        uniq, ids = np.unique(stacked, axis=0, return_inverse=True)
        values = tuple(tuple(d[int(i)] for d, i in zip(dictionaries, row, strict=True)) for row in uniq)
        return RowGroups(ids.reshape(-1).astype(np.int64), values)
    uniq, first, ids = np.unique(combined, return_index=True, return_inverse=True)
    values = tuple(tuple(d[int(code[f])] for d, code in zip(dictionaries, codes, strict=True)) for f in first)
    return RowGroups(ids.reshape(-1).astype(np.int64), values)


def split_by_group(table: pa.Table, group_ids: np.ndarray) -> list[tuple[int, pa.Table]]:
    """(group id, rows of that group in input order) for each group present, ascending by id."""
    n = table.num_rows
    if n == 0:
        return []
    if group_ids.min() == group_ids.max():
        return [(int(group_ids[0]), table)]
    # numpy's stable sort is a radix sort for 16-bit integers (a merge sort for wider ones):
    # (partition, bucket) group ids are small, so sort them as int16 when they fit
    narrow = group_ids.astype(np.int16) if 0 <= group_ids.min() and group_ids.max() < 2**15 else group_ids
    order = np.argsort(narrow, kind="stable")
    sorted_ids = group_ids[order]
    cuts = np.flatnonzero(np.diff(sorted_ids)) + 1
    bounds = np.concatenate(([0], cuts, [n]))
    # One take per group (not slices of one taken table): each group owns its memory, so a
    # writer that buffers one group does not keep every other group's rows alive with it; from
    # the write pool, as a write buffer keeps them (impl.format.memory_pool.write_pool)
    pool = write_pool()
    return [(int(sorted_ids[bounds[i]]), pc.take(table, pa.array(order[bounds[i]:bounds[i + 1]]), memory_pool=pool))
            for i in range(len(bounds) - 1)]


def encode_partition(values: Sequence, types: Sequence[DataType]) -> bytes:
    """Serialized BinaryRow of one partition (computed once per distinct partition)."""
    return encode_row(list(values), list(types))

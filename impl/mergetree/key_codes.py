"""Order-preserving integer codes of string and binary keys (normalized keys), for the merge order.

Merging sorted runs of string keys with Arrow's comparison sort costs a string comparison per
step; numpy's stable sort of integers (a timsort, which merges the pre-sorted runs it finds) is
several times cheaper. A string key maps to an unsigned 64-bit word that orders as the string
does up to ties: the prefix every key shares is dropped (found 8 bytes at a time from the
smallest and largest word), and the next 8 bytes, zero-padded, are read as a big-endian integer. Rows with
different words hold keys in the words' order (bytewise, which is Arrow's order for string and
binary arrays). Rows with equal words differ, if at all, after those 8 bytes or in trailing zero
bytes; when no key has more than 8 bytes after the common prefix, the remaining length breaks
every tie exactly (of two keys with equal padded bytes, the shorter is the smaller), so
(word, length) is then the key itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from impl.format.memory_pool import pooled_array

_WORD_BYTES = 8
# _HIGH_BYTES[r]: the mask keeping a big-endian word's first r bytes
_HIGH_BYTES = np.array([0] + [((1 << (8 * r)) - 1) << (8 * (_WORD_BYTES - r)) for r in range(1, _WORD_BYTES + 1)],
                       dtype=np.uint64)


@dataclass(frozen=True)
class KeyCodes:
    """Per row, ``words`` (uint64, ordered like the keys up to ties) and ``lengths`` (key bytes
    after the common prefix). ``exact``: (word, length) equal means the keys are equal."""

    words: np.ndarray
    lengths: np.ndarray
    exact: bool


def _leading_equal_bytes(a: int, b: int) -> int:
    """How many leading bytes two big-endian 64-bit words share."""
    return _WORD_BYTES if a == b else (_WORD_BYTES * 8 - (a ^ b).bit_length()) // 8


def _offset_type(t: pa.DataType) -> type | None:
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return np.int32
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return np.int64
    return None


def _chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return [c for c in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]) if len(c)]


def _key_data(arr: pa.Array, otype: type) -> tuple[np.ndarray, np.ndarray]:
    """(the offsets of ``arr``'s values, its data buffer's bytes), both views."""
    buffers = arr.buffers()
    offsets: np.ndarray = np.frombuffer(buffers[1], dtype=otype)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
    return offsets, data


def _words_at(data: np.ndarray, starts: np.ndarray, out: np.ndarray) -> None:
    """``out[i]`` = the big-endian 8-byte word at byte ``starts[i]`` of ``data`` (non-decreasing
    starts, each at most ``len(data)``), bytes past the buffer read as zeros. Read through an
    unaligned strided view, no copy; only the words that would run past the buffer's end (the
    last few keys) come from a zero-padded copy of its last bytes. Fancy indexing, as numpy's
    ``take(out=...)`` is 3x slower on this unaligned view."""
    limit = len(data) - _WORD_BYTES  # the last byte a whole word starts at
    k = int(np.searchsorted(starts, limit, side="right")) if limit >= 0 else 0
    if k:
        view = np.ndarray(shape=(limit + 1,), dtype=">u8", buffer=data, strides=(1,))
        out[:k] = view[starts[:k]]
    if k < len(starts):
        base = limit + 1 if limit >= 0 else 0
        tail = np.zeros(len(data) - base + _WORD_BYTES, dtype=np.uint8)
        tail[:len(data) - base] = data[base:]
        view = np.ndarray(shape=(len(tail) - _WORD_BYTES + 1,), dtype=">u8", buffer=tail, strides=(1,))
        out[k:] = view[starts[k:] - base]


def _gather(chunks: list[tuple[np.ndarray, np.ndarray]], starts: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """The big-endian word at ``starts[i]`` of key i's chunk, as uint64 values (in ``raw``'s memory)."""
    at = 0
    for off, data in chunks:
        m = len(off) - 1
        _words_at(data, starts[at:at + m], raw[at:at + m])
        at += m
    raw.byteswap(inplace=True)  # the bytes now hold the values in native order
    return raw.view(np.uint64)


def string_key_codes(column: pa.Array | pa.ChunkedArray) -> KeyCodes | None:
    """The codes of a string / binary key column without nulls, or None for any other column.

    Chunk by chunk into arrays allocated once, then in place: every temporary of a read is
    fresh memory the kernel faults in page by page, which cost more than the gathers
    themselves (issue 49: 15-17 ms a 250k-row bucket with a copy of the keys and a new array
    per step, 3-4 ms so).

    >>> c = string_key_codes(pa.array(["user-b", "user-a", "user-ab"]))
    >>> c.words.argsort(kind="stable").tolist(), c.lengths.tolist(), c.exact
    ([1, 2, 0], [1, 1, 2], True)
    """
    otype = _offset_type(column.type)
    if otype is None or column.null_count:
        return None
    chunks = [_key_data(c, otype) for c in _chunks(column)]
    n = sum(len(off) - 1 for off, _ in chunks)
    starts = pooled_array(n, np.int64)  # per key, its first byte after the common prefix
    lengths = pooled_array(n, np.int64)  # per key, its bytes from there
    at = 0
    for off, _ in chunks:
        m = len(off) - 1
        starts[at:at + m] = off[:-1]
        np.subtract(off[1:], off[:-1], out=lengths[at:at + m])
        at += m
    raw = pooled_array(n, ">u8")
    if n == 0:
        return KeyCodes(raw.view(np.uint64), lengths, True)
    shortest = int(lengths.min())
    common = 0
    while True:  # grow the common prefix 8 bytes at a time, as long as every key shares them
        # Unmasked, a word's bytes past its key are the next key's: they do not matter here,
        # as the common prefix is bounded by the shortest key.
        words = _gather(chunks, starts, raw)
        step = min(_leading_equal_bytes(int(words.min()), int(words.max())), shortest - common)
        if step == 0:
            break
        common += step
        starts += step
        lengths -= step
        if step < _WORD_BYTES or common == shortest:
            words = _gather(chunks, starts, raw)
            break
    clipped = np.minimum(lengths, _WORD_BYTES, out=starts)  # starts are done with
    words &= np.take(_HIGH_BYTES, clipped, out=pooled_array(n, np.uint64), mode="clip")  # clipped: 0-8
    return KeyCodes(words, lengths, int(lengths.max()) <= _WORD_BYTES)

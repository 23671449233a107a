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

from impl.format.memory_pool import read_pool

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


def string_key_codes(column: pa.Array | pa.ChunkedArray) -> KeyCodes | None:
    """The codes of a string / binary key column without nulls, or None for any other column."""
    otype = _offset_type(column.type)
    if otype is None or column.null_count:
        return None
    # a temporary as large as the keys: from the read pool (see impl.format.memory_pool)
    arr = column.combine_chunks(read_pool()) if isinstance(column, pa.ChunkedArray) else column
    n = len(arr)
    if n == 0:
        z = np.zeros(0, dtype=np.uint64)
        return KeyCodes(z, z.astype(np.int64), True)
    offsets_buf, data_buf = arr.buffers()[1], arr.buffers()[2]
    offsets = np.frombuffer(offsets_buf, dtype=otype)[arr.offset:arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    padded = np.concatenate([data[:int(offsets[-1])], np.zeros(_WORD_BYTES, dtype=np.uint8)])
    # the big-endian 8-byte word starting at every byte (an unaligned strided view, no copy)
    at_byte = np.ndarray(shape=(len(padded) - _WORD_BYTES + 1,), dtype=">u8", buffer=padded, strides=(1,))
    full = offsets[1:] - offsets[:-1]
    shortest = int(full.min())
    common = 0
    while True:  # grow the common prefix 8 bytes at a time, as long as every key shares them
        lengths = full - common
        words = at_byte[offsets[:-1] + common].astype(np.uint64) & _HIGH_BYTES[np.minimum(lengths, _WORD_BYTES)]
        step = min(_leading_equal_bytes(int(words.min()), int(words.max())), shortest - common)
        if step == 0:
            break
        common += step
        if step < _WORD_BYTES:
            lengths = full - common
            words = at_byte[offsets[:-1] + common].astype(np.uint64) & _HIGH_BYTES[np.minimum(lengths, _WORD_BYTES)]
            break
    return KeyCodes(words, lengths, int(lengths.max()) <= _WORD_BYTES)

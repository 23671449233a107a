"""Paimon's ``bloom-filter`` file index: a ``BloomFilter64`` over ``FastHash`` values.

Payload: the number of hash functions (i32, big-endian), then the bit set, bit ``i`` at byte
``i >> 3``, mask ``1 << (i & 7)``. Sizing: ``items`` (default 1,000,000) and ``fpp`` (0.1) give
``nb = int(-items * ln(fpp) / ln(2)^2)`` bits rounded up to the next byte (a full byte more when
already aligned, as Java does) and ``max(1, round(bits / items * ln 2))`` functions. A 64-bit hash
``h`` sets, for ``i`` in 1..k, bit ``c % bits`` where ``c = int32(h) + i * int32(h >>> 32)``
(int32 arithmetic, ``~c`` when negative).

``FastHash``: integral values (widened to long, see :mod:`impl.fileindex.keys`) and float /
double bits (``floatToIntBits`` / ``doubleToLongBits``) go through Thomas Wang's 64-bit integer
hash; strings and binaries through XXH64 (seed 0) of their bytes. Booleans and decimals are
refused by Paimon's writer and here.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import xxhash

from impl.fileindex.errors import CorruptFileIndexError, UnsupportedFileIndexError
from impl.fileindex.keys import INTEGRAL, ColumnKeys, KeyKind

INDEX_TYPE = "bloom-filter"
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1


def _thomas_wang(key: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash (Paimon's ``getLongHash``), on int64 with wrap-around."""
    k = key.astype(np.int64, copy=True)
    with np.errstate(over="ignore"):
        k = (~k) + (k << 21)
        k = k ^ (k >> 24)
        k = (k + (k << 3)) + (k << 8)
        k = k ^ (k >> 14)
        k = (k + (k << 2)) + (k << 4)
        k = k ^ (k >> 28)
        k = k + (k << 31)
    return k


def fast_hash(keys: ColumnKeys) -> np.ndarray:
    """Paimon's ``FastHash`` of the non-null keys, as int64."""
    keep = ~keys.nulls
    kind = keys.kind
    if kind in INTEGRAL:
        return _thomas_wang(np.asarray(keys.values)[keep])
    if kind is KeyKind.FLOAT:
        v = np.asarray(keys.values, dtype=np.float32)[keep]
        bits = v.view(np.int32).astype(np.int64)
        return _thomas_wang(np.where(np.isnan(v), 0x7FC00000, bits))
    if kind is KeyKind.DOUBLE:
        v = np.asarray(keys.values, dtype=np.float64)[keep]
        return _thomas_wang(np.where(np.isnan(v), np.int64(0x7FF8000000000000), v.view(np.int64)))
    if kind in (KeyKind.STRING, KeyKind.BINARY):
        values = [v for v, n in zip(keys.values, keys.nulls.tolist(), strict=False) if not n]
        distinct = list(dict.fromkeys(values))  # one XXH64 per distinct value
        hashes = np.array([xxhash.xxh64_intdigest(v) for v in distinct], dtype=np.uint64).view(np.int64)
        return hashes
    raise UnsupportedFileIndexError(f"the bloom-filter index does not support {kind.value} columns")


def check_supported(kind: KeyKind | None, column: str) -> None:
    """UnsupportedFileIndexError for the column types Paimon's bloom filter refuses."""
    if kind is None or kind is KeyKind.BOOLEAN:
        raise UnsupportedFileIndexError(
            f"file-index.bloom-filter.columns: column {column!r} has a type the bloom-filter index does not support")


def sizing(items: int, fpp: float) -> tuple[int, int]:
    """(bits, hash functions) of ``BloomFilter64(items, fpp)``."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    bits = nb + (8 - nb % 8)
    functions = max(1, math.floor(bits / items * math.log(2) + 0.5))
    return bits, functions


def _positions(hashes: np.ndarray, functions: int, bits: int) -> np.ndarray:
    h = hashes.astype(np.int64)
    h1 = (h & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    h2 = ((h >> 32) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    out = []
    with np.errstate(over="ignore"):
        for i in range(1, functions + 1):
            c = h1 + np.int32(i) * h2
            c = np.where(c < 0, ~c, c)
            out.append(c.astype(np.int64) % bits)
    return np.stack(out) if out else np.zeros((0, len(h)), dtype=np.int64)


class BloomFilterBuilder:
    """Folds hashes into a bloom filter batch by batch; :meth:`payload` is the index bytes."""

    def __init__(self, items: int = DEFAULT_ITEMS, fpp: float = DEFAULT_FPP):
        self.bits, self.functions = sizing(items, fpp)
        self._set = np.zeros(self.bits, dtype=bool)

    def add(self, keys: ColumnKeys) -> None:
        hashes = fast_hash(keys)
        if len(hashes):
            self._set[_positions(hashes, self.functions, self.bits).ravel()] = True

    def payload(self) -> bytes:
        return struct.pack(">i", self.functions) + np.packbits(self._set, bitorder="little").tobytes()


class BloomFilterIndex:
    """A bloom-filter payload, read: may a key be in the file?"""

    def __init__(self, payload: bytes, where: str):
        if len(payload) < 5:
            raise CorruptFileIndexError(where, f"bloom filter of {len(payload)} bytes")
        (self.functions,) = struct.unpack_from(">i", payload, 0)
        if not 0 < self.functions <= 64:
            raise CorruptFileIndexError(where, f"bloom filter with {self.functions} hash functions")
        self._bytes = np.frombuffer(payload, dtype=np.uint8, offset=4)
        self.bits = len(self._bytes) * 8

    def may_contain(self, keys: ColumnKeys) -> np.ndarray:
        """Per non-null key: might the file hold it (False: certainly not)."""
        hashes = fast_hash(keys)
        pos = _positions(hashes, self.functions, self.bits)
        hit = (self._bytes[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1
        return np.all(hit == 1, axis=0)

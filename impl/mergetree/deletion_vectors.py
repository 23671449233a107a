"""Deletion vectors: which row positions of a data file are deleted, stored in Paimon's format.

Byte format (Apache Paimon's ``DeletionFileWriter`` / ``BitmapDeletionVector``, read the same
way by pypaimon 2.1.0):

- an index file under ``<table>/index/`` (named ``index-<uuid>-<n>``) starts with the version
  byte 1, then holds one entry per data file: int32 ``size`` (big-endian), then ``size`` bytes
  of data = int32 magic 1581511376 (big-endian) + a 32-bit RoaringBitmap in the portable
  serialization (little-endian), then int32 CRC32 of the data (big-endian);
- its index manifest entry (type ``DELETION_VECTORS``) has row count = number of entries and
  ``deletionVectorsRanges`` mapping data file name -> (offset of the size int, size, cardinality).

With ``deletion-vectors.bitmap64`` = true (default false) Paimon 1.4.2 writes its 64-bit
variant instead (``Bitmap64DeletionVector``, after Iceberg): the same int32 ``size`` (big-endian)
and CRC32 of the data (big-endian) around data = int32 magic 1681511377 **little-endian**, then an
``OptimizedRoaringBitmap64`` in the portable 64-bit serialization (little-endian): int64 number
of 32-bit bitmaps, then for each, in ascending order, its int32 key (the high 32 bits of the
positions) and a 32-bit RoaringBitmap (portable serialization) of the low 32 bits. Its index
manifest range's length counts the whole entry (size int + data + crc), where the 32-bit
variant's counts the data alone. Readers tell the two apart by the magic, entry by entry, so
one index file may hold both (Java keeps a restored 32-bit vector 32-bit).

The bitmaps are encoded and decoded with numpy per 65536-row container (never per row). We
write array and bitmap containers only (no run containers, which the portable format makes
optional); we read all three kinds, as Java and pyroaring may write run containers.

:class:`DeletionVectorsMaintainer` keeps the deletion vectors of one bucket for its writer:
restored from the bucket's index files, updated by compactions, written back as one new index
file (replacing the old ones) when a commit is prepared.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from impl.errors import CorruptMetadataError
from impl.fs.file_io import FileIO
from impl.fs.paths import FileNamer, IdFactory, TablePaths
from impl.manifest.records import DeletionVectorMeta, IndexFileMeta, IndexType

INDEX_FILE_VERSION = 1
BITMAP_MAGIC = 1581511376
BITMAP64_MAGIC = 1681511377  # Bitmap64DeletionVector's, stored little-endian
_MAX_POSITION = 2**31 - 1  # BitmapDeletionVector: files of at most 2^31 - 1 rows

_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_ARRAY_MAX = 4096  # containers of more values are bitmaps
_NO_OFFSET_THRESHOLD = 4

Positions = np.ndarray  # sorted, unique, uint32 row positions


def as_positions(values: Iterable[int] | np.ndarray) -> Positions:
    """Sorted unique uint32 positions; ValueError for a negative or too large position."""
    arr = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.int64)
    if arr.size and (arr.min() < 0 or arr.max() > _MAX_POSITION):
        raise ValueError(f"deletion vector positions must be in 0..{_MAX_POSITION}")
    return np.unique(arr).astype(np.uint32)


# ---------------------------------------------------------------------------- roaring bitmap


def serialize_roaring32(positions: Positions) -> bytes:
    """The portable RoaringBitmap serialization of ``positions`` (sorted unique uint32)."""
    pos = np.asarray(positions, dtype=np.uint32)
    hi = (pos >> 16).astype(np.uint16)
    lo = (pos & 0xFFFF).astype(np.uint16)
    keys, starts, counts = np.unique(hi, return_index=True, return_counts=True)
    n = len(keys)
    header = struct.pack("<II", _SERIAL_COOKIE_NO_RUN, n)
    desc = np.empty(2 * n, dtype="<u2")
    desc[0::2] = keys
    desc[1::2] = counts - 1
    sizes = np.where(counts > _ARRAY_MAX, 8192, 2 * counts).astype(np.int64)
    first = len(header) + 4 * n + 4 * n
    offsets = (first + np.concatenate(([0], np.cumsum(sizes)[:-1]))).astype("<u4") if n else np.empty(0, "<u4")
    parts = [header, desc.tobytes(), offsets.tobytes()]
    for start, count in zip(starts.tolist(), counts.tolist(), strict=True):
        values = lo[start:start + count]
        if count > _ARRAY_MAX:
            bits = np.zeros(65536, dtype=bool)
            bits[values] = True
            # little-endian bit order: bit x of the container is bit x % 64 of word x // 64
            parts.append(np.packbits(bits, bitorder="little").tobytes())
        else:
            parts.append(values.astype("<u2").tobytes())
    return b"".join(parts)


def deserialize_roaring32(data: bytes | memoryview, where: str = "<bitmap>") -> Positions:
    """Positions of a portable RoaringBitmap (array, bitmap and run containers)."""
    return _roaring32_at(memoryview(data), 0, where)[0]


def _roaring32_at(buf: memoryview, start: int, where: str) -> tuple[Positions, int]:
    """(positions, end offset) of the portable RoaringBitmap at ``buf[start:]``."""
    try:
        (cookie,) = struct.unpack_from("<I", buf, start)
        if cookie & 0xFFFF == _SERIAL_COOKIE:
            n = (cookie >> 16) + 1
            run_bytes = (n + 7) // 8
            is_run = np.unpackbits(np.frombuffer(buf, np.uint8, run_bytes, start + 4),
                                   bitorder="little")[:n].astype(bool)
            pos = start + 4 + run_bytes
            has_offsets = n >= _NO_OFFSET_THRESHOLD
        elif cookie == _SERIAL_COOKIE_NO_RUN:
            (n,) = struct.unpack_from("<I", buf, start + 4)
            if 8 * n > len(buf) - start:  # bounded work: every container takes >= 8 header bytes
                raise ValueError(f"{n} containers in {len(buf) - start} bytes")
            is_run = np.zeros(n, dtype=bool)
            pos = start + 8
            has_offsets = True
        else:
            raise ValueError(f"unknown roaring cookie {cookie}")
        desc = np.frombuffer(buf, "<u2", 2 * n, pos)
        keys = desc[0::2].astype(np.uint32)
        cards = desc[1::2].astype(np.int64) + 1
        pos += 4 * n + (4 * n if has_offsets else 0)
        out = []
        for i in range(n):
            if is_run[i]:
                (runs,) = struct.unpack_from("<H", buf, pos)
                pairs = np.frombuffer(buf, "<u2", 2 * runs, pos + 2).astype(np.int64)
                pos += 2 + 4 * runs
                starts, lengths = pairs[0::2], pairs[1::2] + 1
                # expand every run [start, start + length) without a Python loop over runs
                idx = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
                values = np.repeat(starts, lengths) + idx
            elif cards[i] > _ARRAY_MAX:
                bits = np.unpackbits(np.frombuffer(buf, np.uint8, 8192, pos), bitorder="little")
                values = np.flatnonzero(bits)
                pos += 8192
            else:
                values = np.frombuffer(buf, "<u2", int(cards[i]), pos).astype(np.int64)
                pos += 2 * int(cards[i])
            out.append((keys[i].astype(np.int64) << 16) + values)
    except (struct.error, ValueError) as e:
        raise CorruptMetadataError(where, f"bad roaring bitmap ({e})") from e
    if not out:
        return np.empty(0, dtype=np.uint32), pos
    return np.concatenate(out).astype(np.uint32), pos


def serialize_roaring64(positions: Positions) -> bytes:
    """The portable 64-bit serialization (``OptimizedRoaringBitmap64``) of uint32 ``positions``:
    one 32-bit bitmap under key 0, none when empty (Java writes a bitmap for every key from 0 to
    the largest, and positions here all have key 0)."""
    if not len(positions):
        return struct.pack("<q", 0)
    return struct.pack("<qi", 1, 0) + serialize_roaring32(positions)


def deserialize_roaring64(data: bytes | memoryview, where: str = "<bitmap>") -> Positions:
    """Positions of a portable 64-bit roaring bitmap whose positions all fit in 32 bits (a
    position of 2^32 or more, in a data file of that many rows, is refused as corrupt)."""
    buf = memoryview(data)
    try:
        (count,) = struct.unpack_from("<q", buf, 0)
    except struct.error as e:
        raise CorruptMetadataError(where, f"bad 64-bit roaring bitmap ({e})") from e
    # every bitmap takes at least 12 bytes (key + cookie + count): bounded work for a bad count
    if count < 0 or 12 * count > len(buf) - 8:
        raise CorruptMetadataError(where, f"bad 64-bit roaring bitmap ({count} bitmaps in {len(buf)} bytes)")
    pos, last_key = 8, -1
    out: list[Positions] = []
    for _ in range(count):
        try:
            (key,) = struct.unpack_from("<i", buf, pos)
        except struct.error as e:
            raise CorruptMetadataError(where, f"bad 64-bit roaring bitmap ({e})") from e
        if key <= last_key:
            raise CorruptMetadataError(where, f"bad 64-bit roaring bitmap (key {key} after {last_key})")
        values, pos = _roaring32_at(buf, pos + 4, where)
        if key > 0 and len(values):
            raise CorruptMetadataError(where, f"deletes row positions from {key << 32} on, beyond what a data "
                                              "file holds (2^32 rows)")
        out.append(values)
        last_key = key
    if pos != len(buf):
        raise CorruptMetadataError(where, f"64-bit roaring bitmap of {pos} bytes followed by {len(buf) - pos} more")
    return np.concatenate(out) if out else np.empty(0, dtype=np.uint32)


# ---------------------------------------------------------------------------- Paimon entries


def serialize_entry(positions: Positions, bitmap64: bool = False) -> tuple[bytes, int]:
    """One deletion vector entry (size, magic + bitmap, crc) and the length its index manifest
    range records: a BitmapDeletionVector's (the ``size`` field), or with ``bitmap64`` a
    Bitmap64DeletionVector's (the whole entry)."""
    if bitmap64:
        data = struct.pack("<i", BITMAP64_MAGIC) + serialize_roaring64(positions)
    else:
        data = struct.pack(">i", BITMAP_MAGIC) + serialize_roaring32(positions)
    entry = struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)
    return entry, len(entry) if bitmap64 else len(data)


def encode_index_file(vectors: Mapping[str, Positions], bitmap64: bool = False
                      ) -> tuple[bytes, tuple[DeletionVectorMeta, ...]]:
    """The bytes of one deletion-vector index file and its ranges, entries in the given order
    (64-bit bitmaps with ``bitmap64``, the table's ``deletion-vectors.bitmap64``)."""
    parts = [bytes([INDEX_FILE_VERSION])]
    offset = 1
    metas = []
    for name, positions in vectors.items():
        entry, size = serialize_entry(positions, bitmap64)
        metas.append(DeletionVectorMeta(name, offset, size, int(len(positions))))
        parts.append(entry)
        offset += len(entry)
    return b"".join(parts), tuple(metas)


def decode_index_file(data: bytes, ranges: Sequence[DeletionVectorMeta], path: str) -> dict[str, Positions]:
    """The deletion vectors of one index file, by data file name (CorruptMetadataError if bad)."""
    if not data or data[0] != INDEX_FILE_VERSION:
        raise CorruptMetadataError(path, f"deletion vector index file version {data[:1].hex() or 'missing'}, "
                                         f"expected {INDEX_FILE_VERSION}")
    out: dict[str, Positions] = {}
    for r in ranges:
        where = f"{path} (deletion vector of {r.data_file_name})"
        if r.offset < 1 or r.offset + 8 > len(data):
            raise CorruptMetadataError(where, f"range {r.offset}+{r.length} is outside the file of {len(data)} bytes")
        size, magic = struct.unpack_from(">ii", data, r.offset)
        if size < 4 or r.offset + 8 + size > len(data):
            raise CorruptMetadataError(where, f"entry of {size} bytes at {r.offset} is outside the file of "
                                              f"{len(data)} bytes")
        (magic_le,) = struct.unpack_from("<i", data, r.offset + 4)
        if magic == BITMAP_MAGIC:  # the range's length is the data's
            wide, expected = False, size
        elif magic_le == BITMAP64_MAGIC:  # the range's length is the whole entry's
            wide, expected = True, size + 8
        else:
            raise CorruptMetadataError(where, f"magic {magic} is neither the 32-bit bitmap's {BITMAP_MAGIC} nor "
                                              f"the 64-bit bitmap's {BITMAP64_MAGIC} (little-endian)")
        if r.length != expected:
            raise CorruptMetadataError(where, f"entry size {size} does not fit the manifest's length {r.length}")
        body = data[r.offset + 4:r.offset + 4 + size]
        (crc,) = struct.unpack_from(">I", data, r.offset + 4 + size)
        if crc != zlib.crc32(body) & 0xFFFFFFFF:
            raise CorruptMetadataError(where, "checksum mismatch")
        positions = (deserialize_roaring64 if wide else deserialize_roaring32)(memoryview(body)[4:], where)
        if r.cardinality is not None and r.cardinality != len(positions):
            raise CorruptMetadataError(where, f"holds {len(positions)} positions, the manifest says {r.cardinality}")
        out[r.data_file_name] = positions
    return out


def read_deletion_vectors(file_io: FileIO, paths: TablePaths, index_files: Iterable[IndexFileMeta]
                          ) -> dict[str, Positions]:
    """The deletion vectors of a bucket's DELETION_VECTORS index files, by data file name."""
    out: dict[str, Positions] = {}
    for f in index_files:
        if f.index_type != IndexType.DELETION_VECTORS:
            continue
        path = f.external_path or paths.index_file_path(f.file_name)
        try:
            data = file_io.read_bytes(path)
        except FileNotFoundError as e:
            raise CorruptMetadataError(path, "deletion vector index file is missing") from e
        out.update(decode_index_file(data, f.deletion_vector_ranges or (), path))
    return out


def keep_mask(positions: Positions | None, start: int, length: int) -> np.ndarray | None:
    """Rows ``start .. start+length`` of a file not deleted by ``positions`` (None: keep all)."""
    if positions is None or not len(positions):
        return None
    lo, hi = np.searchsorted(positions, [start, start + length])
    if lo == hi:
        return None
    mask = np.ones(length, dtype=bool)
    mask[positions[lo:hi].astype(np.int64) - start] = False
    return mask


# ---------------------------------------------------------------------------- maintainer


@dataclass(frozen=True)
class IndexChange:
    """Index files a prepared commit adds and removes for one bucket."""

    added: tuple[IndexFileMeta, ...] = ()
    removed: tuple[IndexFileMeta, ...] = ()


class DeletionVectorsMaintainer:
    """The deletion vectors of one bucket, owned by its writer.

    ``apply`` folds a compaction in (drops the vectors of files it removed, adds the positions
    it deleted); ``write`` writes all vectors as one new index file replacing the current ones
    (Paimon rewrites a bucket's deletion vectors the same way) and returns that change.
    """

    def __init__(self, file_io: FileIO, paths: TablePaths, restored: Sequence[IndexFileMeta] = (),
                 id_factory: IdFactory | None = None, restored_vectors: Mapping[str, Positions] | None = None,
                 bitmap64: bool = False):
        """``id_factory``: the uuid source of new index file names (the environment's ids);
        ``restored_vectors``: the vectors of ``restored`` when the caller read them already;
        ``bitmap64``: write 64-bit bitmaps (the table's ``deletion-vectors.bitmap64``)."""
        self.file_io = file_io
        self.paths = paths
        self._bitmap64 = bitmap64
        self._files = tuple(f for f in restored if f.index_type == IndexType.DELETION_VECTORS)
        self._vectors: dict[str, Positions] = (dict(restored_vectors) if restored_vectors is not None
                                               else read_deletion_vectors(file_io, paths, self._files))
        self._namer = FileNamer("index-", id_factory=id_factory)
        self._modified = False

    @property
    def vectors(self) -> Mapping[str, Positions]:
        return self._vectors

    def of(self, names: Iterable[str]) -> dict[str, Positions]:
        """The vectors of the named files (those that have one)."""
        return {n: self._vectors[n] for n in names if n in self._vectors}

    def apply(self, removed_files: Iterable[str], deletions: Mapping[str, Positions]) -> None:
        for name in removed_files:
            if self._vectors.pop(name, None) is not None:
                self._modified = True
        for name, positions in deletions.items():
            if not len(positions):
                continue
            old = self._vectors.get(name)
            merged = positions if old is None else np.union1d(old, positions).astype(np.uint32)
            if old is None or len(merged) != len(old):
                self._vectors[name] = merged
                self._modified = True

    def write(self) -> IndexChange:
        """Write the vectors as a new index file if they changed since the last write."""
        if not self._modified:
            return IndexChange()
        added: tuple[IndexFileMeta, ...] = ()
        if self._vectors:
            data, ranges = encode_index_file(dict(sorted(self._vectors.items())), self._bitmap64)
            name = self._namer.next()
            self.file_io.write_bytes(self.paths.index_file_path(name), data)
            added = (IndexFileMeta(IndexType.DELETION_VECTORS, name, len(data), len(ranges), ranges),)
        change = IndexChange(added, self._files)
        self._files = added
        self._modified = False
        return change

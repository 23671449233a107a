"""Avro binary encoding of record rows, column by column with numpy (for ``avro_data.AvroWriter``).

Avro's block body is row-major: each record is its fields' encodings one after another. Each
column is encoded here for all rows at once into *parts* (a flat byte buffer plus the bytes each
row takes in it: a union branch, a length prefix, a value), and the parts are interleaved into
rows by one scatter over the output buffer. Encodings are fastavro's byte for byte: zigzag
varints for int / long and lengths, little-endian IEEE floats, one byte booleans, a nullable
field's union branch as 0 (null) / 2 (branch 1 of ``["null", T]``), a decimal as its unscaled
value's big-endian two's complement in ``(bit_length(|v|) + 8) // 8`` bytes.

Columns of nested types are encoded value by value by fastavro (``encode_values``), the rest here.
"""

from __future__ import annotations

import io
import sys
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.format.avro import fastavro_module

if sys.version_info >= (3, 14):
    from compression import zstd as _zstd
else:
    from backports import zstd as _zstd

_MAX_VARINT_BYTES = 10
SYNC_SIZE = 16
MAGIC = b"Obj\x01"  # an Avro container file's first bytes


@dataclass(frozen=True)
class Part:
    """Bytes of one column piece for every row: row i's bytes are the next ``lengths[i]`` of ``data``."""

    data: np.ndarray  # uint8
    lengths: np.ndarray  # int64, one per row


def zigzag_varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Avro's zigzag varints of int64 ``values``: (flat bytes, bytes per value)."""
    v = values.astype(np.int64, copy=False)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    counts = np.ones(len(z), dtype=np.int64)
    for k in range(1, _MAX_VARINT_BYTES):
        counts += (z >> np.uint64(7 * k)) != 0
    width = int(counts.max()) if len(counts) else 1
    shifts = (np.arange(width, dtype=np.uint64) * np.uint64(7))[None, :]
    groups = ((z[:, None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    position = np.arange(width)[None, :]
    groups |= np.where(position < (counts - 1)[:, None], np.uint8(0x80), np.uint8(0))
    return groups[position < counts[:, None]], counts


def _scatter_lengths(valid: np.ndarray | None, per_valid: np.ndarray) -> np.ndarray:
    if valid is None:
        return per_valid.astype(np.int64, copy=False)
    out = np.zeros(len(valid), dtype=np.int64)
    out[valid] = per_valid
    return out


def _bit_length_u64(x: np.ndarray) -> np.ndarray:
    n = np.zeros(len(x), dtype=np.int64)
    x = x.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        big = x >= (np.uint64(1) << np.uint64(shift))
        n += np.where(big, shift, 0)
        x = np.where(big, x >> np.uint64(shift), x)
    return n + (x != 0)


def _decimal_bytes(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Big-endian two's complement of decimal128 values (no nulls), fastavro's length rule."""
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16:(arr.offset + len(arr)) * 16]
    words = raw.view("<u8").reshape(-1, 2)
    lo, hi = words[:, 0].copy(), words[:, 1].copy()
    negative = (hi >> np.uint64(63)) != 0
    # |v| in 128 bits: two's complement negation of the negative ones
    neg_lo = ~lo + np.uint64(1)
    neg_hi = ~hi + (neg_lo == 0).astype(np.uint64)
    abs_lo = np.where(negative, neg_lo, lo)
    abs_hi = np.where(negative, neg_hi, hi)
    bits = np.where(abs_hi != 0, 64 + _bit_length_u64(abs_hi), _bit_length_u64(abs_lo))
    counts = (bits + 8) // 8
    big_endian = raw.reshape(-1, 16)[:, ::-1]
    keep = np.arange(16)[None, :] >= (16 - counts)[:, None]
    return big_endian[keep], counts


def _length_prefixed(payload: np.ndarray, lengths: np.ndarray, valid: np.ndarray | None) -> list[Part]:
    prefix, prefix_counts = zigzag_varints(lengths)
    return [Part(prefix, _scatter_lengths(valid, prefix_counts)), Part(payload, _scatter_lengths(valid, lengths))]


def _binary_parts(arr: pa.Array, valid: np.ndarray | None) -> list[Part]:
    if valid is not None:
        arr = arr.filter(pa.array(valid))
    if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        offset_type: Any = np.int64
    else:
        offset_type = np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=offset_type)[arr.offset:arr.offset + len(arr) + 1]
    data_buffer = arr.buffers()[2]
    data = (np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0]:offsets[-1]] if data_buffer is not None
            else np.zeros(0, dtype=np.uint8))
    return _length_prefixed(data, np.diff(offsets).astype(np.int64), valid)


def _numpy_values(arr: pa.Array, valid: np.ndarray | None) -> np.ndarray:
    if valid is not None:
        arr = arr.filter(pa.array(valid))
    return arr.to_numpy(zero_copy_only=False)


def encodes(t: pa.DataType) -> bool:
    """Whether a column of Arrow type ``t`` (temporal types already plain integers) is encoded here."""
    return (pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_decimal128(t))


def column_parts(arr: pa.Array, nullable: bool) -> list[Part]:
    """The parts of one column (``encodes(arr.type)``; no nulls unless ``nullable``)."""
    n = len(arr)
    valid: np.ndarray | None = None
    parts: list[Part] = []
    if nullable:
        valid = (pc.is_valid(arr).to_numpy(zero_copy_only=False) if arr.null_count
                 else np.ones(n, dtype=bool))
        parts.append(Part(np.where(valid, np.uint8(2), np.uint8(0)), np.ones(n, dtype=np.int64)))
        if not arr.null_count:
            valid = None
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return parts + _binary_parts(arr, valid)
    if pa.types.is_decimal128(t):
        filtered = arr.filter(pa.array(valid)) if valid is not None else arr
        payload, counts = _decimal_bytes(filtered)
        return parts + _length_prefixed(payload, counts, valid)
    values = _numpy_values(arr, valid)
    if pa.types.is_boolean(t):
        return parts + [Part(values.astype(np.uint8), _scatter_lengths(valid, np.ones(len(values), np.int64)))]
    if pa.types.is_floating(t):
        width = 4 if pa.types.is_float32(t) else 8
        flat = np.ascontiguousarray(values.astype(f"<f{width}", copy=False)).view(np.uint8)
        return parts + [Part(flat, _scatter_lengths(valid, np.full(len(values), width, np.int64)))]
    if pa.types.is_uint64(t) and len(values) and values.max() > np.iinfo(np.int64).max:
        raise OverflowError(f"value {values.max()} does not fit an Avro long")
    flat, counts = zigzag_varints(values.astype(np.int64))
    return parts + [Part(flat, _scatter_lengths(valid, counts))]


def encode_values(values: Sequence[Any], schema: Any) -> Part:
    """Values of a column fastavro encodes one by one (nested types), as a part."""
    fastavro = fastavro_module()
    parsed = fastavro.parse_schema(schema)
    out = io.BytesIO()
    ends = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        fastavro.schemaless_writer(out, parsed, value)
        ends[i] = out.tell()
    lengths = np.diff(ends, prepend=0)
    return Part(np.frombuffer(out.getbuffer(), dtype=np.uint8).copy(), lengths)


def _as_binary(part: Part) -> pa.Array:
    offsets = np.zeros(len(part.lengths) + 1, dtype=np.int64)
    np.cumsum(part.lengths, out=offsets[1:])
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(part.lengths),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(part.data)])


def interleave(parts: Sequence[Part], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows' bytes one after another (parts in order within a row), and each row's end offset."""
    if not parts:
        return np.zeros(0, dtype=np.uint8), np.zeros(rows, dtype=np.int64)
    # Arrow concatenates the parts row by row in C++: each part is a binary column of row slices
    joined = pc.binary_join_element_wise(*[_as_binary(p) for p in parts], pa.scalar(b"", pa.large_binary()))
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int64)[joined.offset:joined.offset + rows + 1]
    data = joined.buffers()[2]
    body = (np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]] if data is not None
            else np.zeros(0, dtype=np.uint8))
    return body, offsets[1:] - offsets[0]


def block_bounds(row_ends: np.ndarray, sync_interval: int) -> list[tuple[int, int, int, int]]:
    """(first row, end row, first byte, end byte) of each block: a block ends with the row that
    brings it to ``sync_interval`` bytes, as fastavro's Writer cuts them."""
    out = []
    rows = len(row_ends)
    start_row, start_byte = 0, 0
    while start_row < rows:
        end_row = min(int(np.searchsorted(row_ends, start_byte + sync_interval, "left")) + 1, rows)
        end_byte = int(row_ends[end_row - 1])
        out.append((start_row, end_row, start_byte, end_byte))
        start_row, start_byte = end_row, end_byte
    return out


def varint(value: int) -> bytes:
    """One zigzag varint (for headers and block counts, not rows)."""
    z = (value << 1) ^ (value >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def avro_bytes(value: bytes) -> bytes:
    """Avro bytes / string: length, then the bytes."""
    return varint(len(value)) + value


def header(schema_json: bytes, codec: str, sync_marker: bytes, metadata: Mapping[str, bytes] | None = None) -> bytes:
    """An Avro container header: magic, the metadata map (codec, then schema, fastavro's order,
    then ``metadata``: keys of the file's own, which Avro readers keep and otherwise ignore),
    the sync marker."""
    items = [(b"avro.codec", codec.encode()), (b"avro.schema", schema_json),
             *((k.encode(), v) for k, v in (metadata or {}).items())]
    meta = b"".join(avro_bytes(k) + avro_bytes(v) for k, v in items)
    return MAGIC + varint(len(items)) + meta + varint(0) + sync_marker


@dataclass(frozen=True)
class ContainerHeader:
    """The header of an Avro container file: its metadata map, sync marker, and where the blocks start."""

    metadata: dict[str, bytes]
    sync_marker: bytes
    end: int  # the offset of the first block


def read_long(data: bytes, pos: int) -> tuple[int, int]:
    """The Avro long at ``pos`` and the position after it."""
    b = data[pos]
    pos += 1
    n = b & 0x7F
    shift = 7
    while b & 0x80:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


def read_header(data: bytes) -> ContainerHeader:
    """The header of the Avro container ``data`` (ValueError / IndexError when it is none or cut)."""
    if data[:4] != MAGIC:
        raise ValueError("not an Avro container")
    pos = 4
    meta: dict[str, bytes] = {}
    while True:
        count, pos = read_long(data, pos)
        if count == 0:
            break
        if count < 0:  # a map block with its byte size
            count = -count
            _, pos = read_long(data, pos)
        for _ in range(count):
            size, pos = read_long(data, pos)
            key = data[pos:pos + size].decode()
            pos += size
            size, pos = read_long(data, pos)
            meta[key] = data[pos:pos + size]
            pos += size
    sync = data[pos:pos + SYNC_SIZE]
    if len(sync) != SYNC_SIZE:
        raise ValueError("cut header")
    return ContainerHeader(meta, sync, pos + SYNC_SIZE)


def with_metadata(data: bytes, metadata: Mapping[str, bytes]) -> bytes:
    """The Avro container ``data`` with ``metadata`` added to its header's map (its blocks, and
    the sync marker that ends each, as they are)."""
    head = read_header(data)
    reserved = [k for k in metadata if k.startswith("avro.")]
    if reserved:
        raise ValueError(f"metadata keys {reserved} are reserved by Avro")
    own = {k: v for k, v in head.metadata.items() if not k.startswith("avro.")}
    own.update(metadata)
    return b"".join([header(head.metadata["avro.schema"], head.metadata.get("avro.codec", b"null").decode(),
                            head.sync_marker, own), memoryview(data)[head.end:]])


def block(count: int, compressed: bytes, sync_marker: bytes) -> bytes:
    """One block: record count, byte size, the (compressed) rows, the sync marker."""
    return varint(count) + varint(len(compressed)) + compressed + sync_marker


def block_compressor(codec: str, level: int | None) -> Callable[[np.ndarray], bytes]:
    """The block compression of an Avro codec (null, deflate, zstandard), as fastavro's."""
    if codec == "null":
        return lambda body: body.tobytes()
    if codec == "deflate":
        # Avro's deflate is raw (no zlib header or checksum), as Java's Deflater(nowrap) writes it
        def deflate(body: np.ndarray) -> bytes:
            compressor = zlib.compressobj(wbits=-15)
            return compressor.compress(body.tobytes()) + compressor.flush()
        return deflate
    if codec == "zstandard":
        return lambda body: _zstd.compress(body.tobytes(), level=level) if level is not None else _zstd.compress(body.tobytes())
    raise ValueError(f"Avro codec {codec!r} is not written here")

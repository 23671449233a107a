"""Paimon's BinaryRow, byte for byte.

Layout of a row with ``n`` fields (all integers little-endian):

    [null bitset: header byte (row kind) + one bit per field, rounded up to 8-byte words]
    [n fixed 8-byte slots]
    [variable-length tail, each value padded to 8 bytes]

A slot holds a fixed-width value directly; a string or byte string of at most 7 bytes is
inlined (data in the low bytes, ``0x80 | length`` in the highest byte); a longer one holds
``offset << 32 | length`` pointing into the tail. TIMESTAMP with precision > 3 keeps its
millis in the tail and nano-of-milli in the slot; DECIMAL with precision > 18 keeps its
unscaled big-endian two's complement bytes in a 16-byte tail area.

The serialized form used in manifests (partition, min/max key, stats) prefixes the row with
its field count as a 4-byte big-endian int (Paimon's ``SerializationUtils.serializeBinaryRow``).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
from typing import Any, Sequence

from impl.data.types import DataType
from impl.errors import CorruptMetadataError

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_HEADER_BITS = 8


def null_bits_size_in_bytes(arity: int) -> int:
    return ((arity + 63 + _HEADER_BITS) // 64) * 8


def _round_to_word(n: int) -> int:
    return (n + 7) & ~7


# -------------------------------------------------------------------- value conversions

def date_to_days(v: Any) -> int:
    if isinstance(v, _dt.datetime):
        v = v.date()
    if isinstance(v, _dt.date):
        return (v - _EPOCH_DATE).days
    return int(v)


def days_to_date(days: int) -> _dt.date:
    return _EPOCH_DATE + _dt.timedelta(days=days)


def timestamp_to_millis_nanos(v: Any) -> tuple[int, int]:
    """(epoch millis, nano of milli) of a naive datetime (wall clock read as UTC) or an int of micros."""
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        delta = v - _EPOCH
        micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    else:
        micros = int(v)
    millis, rem_micros = divmod(micros, 1000)
    return millis, rem_micros * 1000


def millis_nanos_to_timestamp(millis: int, nanos: int = 0) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=millis, microseconds=nanos // 1000)


# Python's default context keeps 28 digits; DECIMAL goes to 38, so convert in a wider one.
_DECIMAL_CONTEXT = decimal.Context(prec=80)


def decimal_to_unscaled(v: Any, scale: int) -> int:
    if isinstance(v, int):
        return v * (10 ** scale)
    d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(str(v))
    return int(d.scaleb(scale, _DECIMAL_CONTEXT).to_integral_value(rounding=decimal.ROUND_HALF_UP,
                                                                     context=_DECIMAL_CONTEXT))


def unscaled_to_decimal(unscaled: int, scale: int) -> decimal.Decimal:
    return decimal.Decimal(unscaled).scaleb(-scale, _DECIMAL_CONTEXT)


# -------------------------------------------------------------------- encoding

class _RowWriter:
    def __init__(self, arity: int):
        self.arity = arity
        self.null_bits = null_bits_size_in_bytes(arity)
        self.fixed_size = self.null_bits + 8 * arity
        self.buf = bytearray(self.fixed_size)

    def slot(self, pos: int) -> int:
        return self.null_bits + 8 * pos

    def set_null_bit(self, pos: int) -> None:
        bit = pos + _HEADER_BITS
        self.buf[bit >> 3] |= 1 << (bit & 7)

    def put_slot(self, pos: int, fmt: str, value) -> None:
        struct.pack_into(fmt, self.buf, self.slot(pos), value)

    def append_var(self, data: bytes, reserve: int | None = None) -> int:
        """Append ``data`` to the tail padded to 8 bytes (or to ``reserve`` bytes); return its offset."""
        offset = len(self.buf)
        size = reserve if reserve is not None else _round_to_word(len(data))
        self.buf += data + bytes(size - len(data))
        return offset


def encode_row_unserialized(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """The BinaryRow bytes of ``values`` (no arity prefix)."""
    if len(values) != len(types):
        raise ValueError(f"row has {len(values)} values for {len(types)} fields")
    w = _RowWriter(len(types))
    for pos, (v, t) in enumerate(zip(values, types, strict=True)):
        _write_field(w, pos, v, t)
    return bytes(w.buf)


def encode_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """Serialized BinaryRow: 4-byte big-endian field count, then the row bytes."""
    return struct.pack(">i", len(types)) + encode_row_unserialized(values, types)


EMPTY_ROW = encode_row((), ())


def _write_field(w: _RowWriter, pos: int, v: Any, t: DataType) -> None:
    r = t.root
    if v is None:
        # Non-compact TIMESTAMP / DECIMAL reserve their tail space even when null, as Paimon does.
        if r in ("TIMESTAMP", "TIMESTAMP_LTZ") and not t.is_fixed_in_binary_row():
            w.set_null_bit(pos)
            offset = w.append_var(b"", reserve=8)
            w.put_slot(pos, "<q", offset << 32)
        elif r == "DECIMAL" and not t.is_fixed_in_binary_row():
            w.set_null_bit(pos)
            offset = w.append_var(b"", reserve=16)
            w.put_slot(pos, "<q", offset << 32)
        else:
            w.set_null_bit(pos)
        return
    if r == "BOOLEAN":
        w.put_slot(pos, "<?", bool(v))
    elif r == "TINYINT":
        w.put_slot(pos, "<b", int(v))
    elif r == "SMALLINT":
        w.put_slot(pos, "<h", int(v))
    elif r == "INT":
        w.put_slot(pos, "<i", int(v))
    elif r == "DATE":
        w.put_slot(pos, "<i", date_to_days(v))
    elif r == "TIME":
        if isinstance(v, _dt.time):
            v = ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
        w.put_slot(pos, "<i", int(v))
    elif r == "BIGINT":
        w.put_slot(pos, "<q", int(v))
    elif r == "FLOAT":
        w.put_slot(pos, "<f", float(v))
    elif r == "DOUBLE":
        w.put_slot(pos, "<d", float(v))
    elif r in ("VARCHAR", "CHAR", "VARBINARY", "BINARY"):
        data = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        n = len(data)
        if n <= 7:
            slot = w.slot(pos)
            w.buf[slot : slot + n] = data
            w.buf[slot + 7] = 0x80 | n
        else:
            offset = w.append_var(data)
            w.put_slot(pos, "<q", (offset << 32) | n)
    elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        millis, nanos = timestamp_to_millis_nanos(v)
        if t.is_fixed_in_binary_row():
            w.put_slot(pos, "<q", millis)
        else:
            offset = w.append_var(struct.pack("<q", millis))
            w.put_slot(pos, "<q", (offset << 32) | nanos)
    elif r == "DECIMAL":
        unscaled = decimal_to_unscaled(v, t.scale or 0)
        if t.is_fixed_in_binary_row():
            w.put_slot(pos, "<q", unscaled)
        else:
            # minimal two's complement, as Java's BigInteger.toByteArray()
            n = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
            data = unscaled.to_bytes(n, "big", signed=True)
            offset = w.append_var(data, reserve=16)
            w.put_slot(pos, "<q", (offset << 32) | len(data))
    else:
        raise ValueError(f"type {t} cannot be stored in a BinaryRow key or partition")


# -------------------------------------------------------------------- decoding

def decode_row(data: bytes, types: Sequence[DataType], *, path: str = "<bytes>", exact_timestamps: bool = False) -> tuple:
    """Values of a serialized BinaryRow (with its 4-byte arity prefix).

    ``exact_timestamps``: TIMESTAMP values as Paimon's (epoch millis, nano of milli) pair
    instead of a datetime (which keeps microseconds only), for spellings that need the nanos.

    A row with fewer fields than ``types`` (written under an older schema) yields None for the
    missing trailing fields. Malformed bytes raise :class:`CorruptMetadataError` naming ``path``.
    """
    if len(data) < 4:
        raise CorruptMetadataError(path, f"BinaryRow of {len(data)} bytes has no field count")
    (arity,) = struct.unpack_from(">i", data, 0)
    if arity < 0 or arity > len(types) + 1024:
        raise CorruptMetadataError(path, f"BinaryRow field count {arity} is not plausible")
    try:
        values = decode_row_unserialized(memoryview(data)[4:], types[:arity], arity, exact_timestamps)
    except (struct.error, IndexError, UnicodeDecodeError, ValueError) as e:
        raise CorruptMetadataError(path, f"malformed BinaryRow: {e}") from e
    if arity < len(types):
        values = values + (None,) * (len(types) - arity)
    return values


def decode_row_unserialized(row: memoryview | bytes, types: Sequence[DataType], arity: int | None = None,
                            exact_timestamps: bool = False) -> tuple:
    arity = len(types) if arity is None else arity
    null_bits = null_bits_size_in_bytes(arity)
    if len(row) < null_bits + 8 * arity:
        raise ValueError(f"row of {len(row)} bytes is shorter than its {arity} fixed slots")
    out: list = []
    for pos, t in enumerate(types):
        bit = pos + _HEADER_BITS
        if row[bit >> 3] & (1 << (bit & 7)):
            out.append(None)
            continue
        out.append(_read_field(row, null_bits + 8 * pos, t, exact_timestamps))
    return tuple(out)


def _read_field(row, slot: int, t: DataType, exact_timestamps: bool = False):
    r = t.root
    if r == "BOOLEAN":
        return row[slot] != 0
    if r == "TINYINT":
        return struct.unpack_from("<b", row, slot)[0]
    if r == "SMALLINT":
        return struct.unpack_from("<h", row, slot)[0]
    if r in ("INT", "TIME"):
        return struct.unpack_from("<i", row, slot)[0]
    if r == "DATE":
        return days_to_date(struct.unpack_from("<i", row, slot)[0])
    if r == "BIGINT":
        return struct.unpack_from("<q", row, slot)[0]
    if r == "FLOAT":
        return struct.unpack_from("<f", row, slot)[0]
    if r == "DOUBLE":
        return struct.unpack_from("<d", row, slot)[0]
    if r in ("VARCHAR", "CHAR", "VARBINARY", "BINARY"):
        mark = row[slot + 7]
        if mark & 0x80:
            n = mark & 0x7F
            data = bytes(row[slot : slot + n])
        else:
            (word,) = struct.unpack_from("<q", row, slot)
            offset, n = word >> 32, word & 0xFFFFFFFF
            if offset + n > len(row):
                raise ValueError(f"variable-length field at {offset}+{n} past row end {len(row)}")
            data = bytes(row[offset : offset + n])
        return data.decode("utf-8") if r in ("VARCHAR", "CHAR") else data
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if t.is_fixed_in_binary_row():
            (millis,) = struct.unpack_from("<q", row, slot)
            return (millis, 0) if exact_timestamps else millis_nanos_to_timestamp(millis)
        (word,) = struct.unpack_from("<q", row, slot)
        offset, nanos = word >> 32, word & 0xFFFFFFFF
        (millis,) = struct.unpack_from("<q", row, offset)
        return (millis, nanos) if exact_timestamps else millis_nanos_to_timestamp(millis, nanos)
    if r == "DECIMAL":
        if t.is_fixed_in_binary_row():
            return unscaled_to_decimal(struct.unpack_from("<q", row, slot)[0], t.scale or 0)
        (word,) = struct.unpack_from("<q", row, slot)
        offset, n = word >> 32, word & 0xFFFFFFFF
        return unscaled_to_decimal(int.from_bytes(bytes(row[offset : offset + n]), "big", signed=True), t.scale or 0)
    raise ValueError(f"type {t} cannot be read from a BinaryRow")


# -------------------------------------------------------------------- comparison

def sort_key(values: tuple) -> tuple:
    """A total order over decoded rows: field by field, nulls first (Paimon's key order)."""
    return tuple((v is not None, v) for v in values)

"""Avro data files: decoded column-wise by polars (``impl.format.avro_columns``), encoded column-wise (``avro_encode``).

The writer schema is Paimon Java's (``AvroSchemaConverter``): a record named
``org.apache.paimon.avro.generated.record``, a nullable field as the union ``["null", T]`` with
default null, TINYINT / SMALLINT as int, DATE as int ``date``, TIME as int ``time-millis``,
TIMESTAMP(p) as long ``timestamp-millis`` (p <= 3) or ``timestamp-micros`` (p <= 6),
TIMESTAMP_LTZ as ``local-timestamp-millis`` / ``-micros``, DECIMAL as bytes ``decimal``,
ARRAY as array, MAP with string keys as map, ROW as a record named ``<parent>_<field>``.
Avro files carry no field ids: Java matches an Avro file's columns through the file's schema id,
as this library does. The codec is ``avro.codec`` when set, else ``file.compression``
(zstd as ``zstandard`` at ``file.compression.zstd-level``, none as ``null``), as Java's
``AvroFileFormat`` picks it.

Reading decodes the blocks with polars in Rust (zstandard / deflate blocks are decompressed
first, see ``avro_columns``); a schema polars cannot decode falls back to fastavro record by
record. Types are Avro's own (int for TINYINT, timestamps tagged UTC): the caller casts.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any, BinaryIO, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from impl.data.types import DataField, DataType
from impl.errors import InvalidOptionError, SchemaMismatchError, UnsupportedFileFormatError
from impl.format import avro_columns, avro_encode
from impl.format.avro import fastavro_module
from impl.format.file_format import (
    FileFormat,
    FormatReader,
    FormatWriter,
    WriteOptions,
    check_writable,
)

RECORD_NAME = "org.apache.paimon.avro.generated.record"
# Paimon's file.compression / avro.codec -> fastavro codec
_CODECS = {"zstd": "zstandard", "zstandard": "zstandard", "none": "null", "null": "null", "deflate": "deflate"}
_SYNC_INTERVAL_BYTES = 64 * 1024  # Avro's default block size
# codecs of Avro data files read here (Java also writes bzip2 and xz on request: refused by name)
_READ_CODECS = ("null", "deflate", "zstandard", "snappy")


# ---------------------------------------------------------------------------- schema


def avro_type(t: DataType, row_name: str) -> Any:
    """The Avro schema of a Paimon type (nullable as ``["null", T]``), as Java's AvroSchemaConverter."""
    r = t.root
    base: Any
    if r == "BOOLEAN":
        base = "boolean"
    elif r in ("TINYINT", "SMALLINT", "INT"):
        base = "int"
    elif r == "BIGINT":
        base = "long"
    elif r == "FLOAT":
        base = "float"
    elif r == "DOUBLE":
        base = "double"
    elif r in ("CHAR", "VARCHAR"):
        base = "string"
    elif r in ("BINARY", "VARBINARY"):
        base = "bytes"
    elif r == "DATE":
        base = {"type": "int", "logicalType": "date"}
    elif r == "TIME":
        base = {"type": "int", "logicalType": "time-millis"}
    elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = t.precision if t.precision is not None else 6
        if p > 6:
            raise UnsupportedFileFormatError(f"Avro data files hold timestamps up to precision 6, not {t}")
        unit = "millis" if p <= 3 else "micros"
        base = {"type": "long", "logicalType": f"{'local-' if r == 'TIMESTAMP_LTZ' else ''}timestamp-{unit}"}
    elif r == "DECIMAL":
        base = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    elif r == "ARRAY":
        base = {"type": "array", "items": avro_type(t.children[0], row_name)}
    elif r == "MAP":
        if t.children[0].root not in ("CHAR", "VARCHAR"):
            raise UnsupportedFileFormatError(f"Avro data files with a {t} column (non-string map keys) are not "
                                             "implemented")
        base = {"type": "map", "values": avro_type(t.children[1], row_name)}
    elif r == "ROW":
        base = record_schema(t.children, row_name)
    else:
        raise UnsupportedFileFormatError(f"type {t} has no Avro form here")
    return ["null", base] if t.nullable else base


def record_schema(fields: Sequence[DataField], name: str = RECORD_NAME) -> dict:
    out = []
    for f in fields:
        entry: dict = {"name": f.name, "type": avro_type(f.type, f"{name}_{f.name}")}
        if f.type.nullable:
            entry["default"] = None
        out.append(entry)
    return {"type": "record", "name": name, "fields": out}


def _arrow_of(schema: Any) -> tuple[pa.DataType, bool]:
    """(Arrow type, nullable) of an Avro schema node: for empty files and the fastavro fallback."""
    if isinstance(schema, list):
        rest = [s for s in schema if s != "null"]
        if len(rest) != 1:
            raise ValueError(f"Avro union {schema} is not [null, T]")
        return _arrow_of(rest[0])[0], True
    if isinstance(schema, str):
        simple = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
                  "double": pa.float64(), "string": pa.string(), "bytes": pa.binary()}
        if schema not in simple:
            raise ValueError(f"Avro type {schema!r}")
        return simple[schema], False
    logical = schema.get("logicalType")
    kind = schema.get("type")
    if logical == "date":
        return pa.date32(), False
    if logical == "time-millis":
        return pa.time32("ms"), False
    if logical == "time-micros":
        return pa.time64("us"), False
    if logical in ("timestamp-millis", "local-timestamp-millis"):
        return pa.timestamp("ms"), False
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return pa.timestamp("us"), False
    if logical == "decimal":
        return pa.decimal128(schema["precision"], schema.get("scale", 0)), False
    if kind == "array":
        item, nullable = _arrow_of(schema["items"])
        return pa.list_(pa.field("element", item)), False
    if kind == "map":
        item, nullable = _arrow_of(schema["values"])
        return pa.map_(pa.string(), pa.field("value", item)), False
    if kind == "record":
        # children nullable: under a null record slot they read as null
        return pa.struct([pa.field(f["name"], _arrow_of(f["type"])[0]) for f in schema["fields"]]), False
    if kind == "fixed":
        return pa.binary(schema["size"]), False
    return _arrow_of(kind)


# ---------------------------------------------------------------------------- reading

# logical types polars decodes as Paimon means them (it panics on Avro maps, outside Python's
# exceptions, so a schema is checked before polars sees it)
_POLARS_LOGICAL = {None, "date", "time-millis", "timestamp-millis", "timestamp-micros", "decimal"}


def _polars_decodes(schema: Any) -> bool:
    if isinstance(schema, list):
        return all(_polars_decodes(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    kind = schema.get("type")
    if kind == "map" or schema.get("logicalType") not in _POLARS_LOGICAL:
        return False
    if kind == "array":
        return _polars_decodes(schema["items"])
    if kind == "record":
        return all(_polars_decodes(f["type"]) for f in schema["fields"])
    return _polars_decodes(kind) if isinstance(kind, (dict, list)) else True



class AvroReader(FormatReader):
    format_name = "Avro"

    def __init__(self, source: Any, path: str):
        super().__init__(path)
        data = bytes(source) if isinstance(source, (bytes, bytearray, memoryview)) else source.read()
        self._data = data
        try:
            self._blocks = avro_columns.decode_blocks(data)
            record = self._blocks.schema
            if not isinstance(record, dict) or record.get("type") != "record":
                raise ValueError("the writer schema is not a record")
            self._names = [f["name"] for f in record["fields"]]
        except (ValueError, IndexError, KeyError, TypeError) as e:
            raise self.corrupt(e) from e

    @property
    def column_names(self) -> list[str]:
        return self._names

    @property
    def num_rows(self) -> int:
        return self._blocks.total

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        have = set(self._names)
        present = list(self._names) if columns is None else [c for c in dict.fromkeys(columns) if c in have]
        if not self._blocks.bodies:
            return self._empty(present)
        if not present:  # nothing to decode; the row count is in the block headers
            return pa.table({"_": pa.nulls(self._blocks.total)}).drop_columns(["_"])
        codec = self._blocks.codec
        # polars parses the whole writer schema, whichever columns are asked for
        polars = avro_columns.available() and _polars_decodes(self._blocks.schema)
        if codec not in _READ_CODECS or (codec == "snappy" and not polars):
            raise UnsupportedFileFormatError(
                f"data file {self.path}: Avro codec {codec!r} is not supported here (readable: "
                f"{', '.join(_READ_CODECS)}; snappy only for schemas polars decodes)")
        if polars:
            try:
                decoded = (self._polars_snappy(present) if codec == "snappy"
                           else avro_columns.read_columns(self._blocks, present, views=False))
            except Exception:  # noqa: BLE001 - polars refuses some files: decode record by record
                if codec == "snappy":
                    raise self.corrupt(ValueError("polars could not decode the snappy blocks")) from None
                decoded = None
            if decoded is not None:
                # large strings narrowed, timestamps untagged: the types of every other reader
                return decoded.select(list(present)).cast(self._empty(present).schema)
        return self._read_records(present)

    def _polars_snappy(self, present: Sequence[str]) -> pa.Table:
        """Snappy blocks, which polars decompresses itself (no snappy module is needed here)."""
        pl = avro_columns.polars_module()
        table = pl.read_avro(io.BytesIO(self._data), columns=list(present)).to_arrow(
            compat_level=pl.CompatLevel.oldest())
        if table.num_rows != self._blocks.total:
            raise ValueError(f"decoded {table.num_rows} records of {self._blocks.total}")
        return table

    def _empty(self, present: Sequence[str]) -> pa.Table:
        by_name = {f["name"]: f for f in self._blocks.schema["fields"]}
        try:
            return pa.schema([pa.field(c, *_arrow_of(by_name[c]["type"])) for c in present]).empty_table()
        except (ValueError, KeyError) as e:
            raise self.corrupt(e) from e

    def _read_records(self, present: Sequence[str]) -> pa.Table:
        try:
            empty = self._empty(present)
            records: list[Any] = list(fastavro_module().reader(io.BytesIO(self._data)))
            arrays = [pa.array([r.get(c) for r in records], type=f.type) for c, f in zip(present, empty.schema, strict=True)]
            return pa.Table.from_arrays(arrays, schema=empty.schema)
        except Exception as e:  # noqa: BLE001 - fastavro raises many kinds on a corrupt file
            raise self.corrupt(e) from e


# ---------------------------------------------------------------------------- writing


def avro_codec(options: WriteOptions) -> str:
    """fastavro's codec for ``options``: ``avro.codec`` when set, else ``file.compression``."""
    explicit = options.format_options.get("avro.codec")
    name = (explicit if explicit is not None else options.compression).strip().lower()
    codec = _CODECS.get(name)
    if codec is None:
        key = "avro.codec" if explicit is not None else "file.compression"
        raise InvalidOptionError(f"option {key!r}: {name!r} is not an Avro codec written here "
                                 "(zstd / zstandard, deflate, none / null)")
    return codec


def _plain(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column with temporal values, nested ones too, as the integers Avro stores (fastavro
    writes ints of logical types as they are, while a naive datetime would be read in the
    local time zone), decided in Arrow rather than per value in Python."""
    if not _has_temporal(col.type):
        return col
    return pa.chunked_array([_plain_array(c) for c in col.chunks], type=_plain_type(col.type))


def _has_temporal(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_temporal(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_temporal(t.value_type)
    if pa.types.is_map(t):
        return _has_temporal(t.key_type) or _has_temporal(t.item_type)
    return False


def _plain_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date(t) or pa.types.is_time(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(t.field(i).name, _plain_type(t.field(i).type), t.field(i).nullable)
                          for i in range(t.num_fields)])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field(t.value_field.name, _plain_type(t.value_type), t.value_field.nullable))
    if pa.types.is_map(t):
        return pa.map_(_plain_type(t.key_type), pa.field(t.item_field.name, _plain_type(t.item_type),
                                                          t.item_field.nullable))
    return t


def _plain_array(arr: pa.Array) -> pa.Array:
    t = arr.type
    if pa.types.is_timestamp(t):
        # TIMESTAMP(p <= 3) is timestamp-millis, else timestamp-micros (see avro_type)
        return arr.cast(pa.timestamp("ms" if t.unit in ("s", "ms") else "us")).cast(pa.int64())
    if pa.types.is_date(t):
        return arr.cast(pa.date32()).cast(pa.int32())
    if pa.types.is_time(t):
        ints = arr.cast(pa.int64() if t.unit in ("us", "ns") else pa.int32())
        if t.unit == "s":
            ints = pc.multiply(ints, 1000)
        elif t.unit in ("us", "ns"):
            ints = pc.divide(ints, 1000 if t.unit == "us" else 1_000_000)
        return ints.cast(pa.int32())
    if not _has_temporal(t):
        return arr
    if arr.offset:  # Arrow rebuilds a list from offsets and a null mask only when unsliced
        arr = pa.concat_arrays([arr])
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [_plain_array(arr.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(_plain_type(t)), mask=mask)
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(arr.offsets, _plain_array(arr.keys), _plain_array(arr.items),
                                       type=_plain_type(t), mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.ListArray.from_arrays(arr.offsets, _plain_array(arr.values), type=_plain_type(t), mask=mask)
    return arr


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_map(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_map(t.value_type)
    return False


def _dicts(value: Any, t: pa.DataType) -> Any:
    """A value from ``to_pylist`` with its maps (lists of pairs there) as the dicts fastavro writes."""
    if value is None:
        return None
    if pa.types.is_map(t):
        return {k: _dicts(v, t.item_type) for k, v in value}
    if pa.types.is_struct(t):
        return {t.field(i).name: _dicts(value[t.field(i).name], t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_dicts(v, t.value_type) for v in value]
    return value


class AvroWriter(FormatWriter):
    """Rows as Avro blocks: columns encoded with numpy (``avro_encode``), nested ones by fastavro,
    in the container file fastavro writes (header, blocks of about the sync interval)."""

    def __init__(self, stream: BinaryIO, fields: Sequence[DataField], options: WriteOptions):
        self._fields = {f.name: f for f in fields}
        schema = record_schema(fields)
        self._field_schemas = {f["name"]: f["type"] for f in schema["fields"]}
        codec = avro_codec(options)
        self._stream = stream
        self._compress = avro_encode.block_compressor(
            codec, options.zstd_level if codec == "zstandard" else None)
        # the random sync marker, as fastavro's Writer draws it
        self._sync_marker = os.urandom(avro_encode.SYNC_SIZE)
        stream.write(avro_encode.header(_schema_json(schema).encode(), codec, self._sync_marker))

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        plain = pa.Table.from_arrays([_plain(c) for c in table.columns], names=table.column_names)
        parts: list[avro_encode.Part] = []
        for name, column in zip(plain.column_names, plain.columns, strict=True):
            field = self._fields[name]
            arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
            if not field.type.nullable and arr.null_count:
                raise SchemaMismatchError(f"column {name!r} is not nullable but holds {arr.null_count} nulls")
            if avro_encode.encodes(arr.type) and _same_decimal(arr.type, field.type):
                parts.extend(avro_encode.column_parts(arr, field.type.nullable))
            else:
                values = [_dicts(v, arr.type) for v in arr.to_pylist()] if _has_map(arr.type) else arr.to_pylist()
                parts.append(avro_encode.encode_values(values, self._field_schemas[name]))
        body, row_ends = avro_encode.interleave(parts, plain.num_rows)
        for start_row, end_row, start_byte, end_byte in avro_encode.block_bounds(row_ends, _SYNC_INTERVAL_BYTES):
            self._stream.write(avro_encode.block(end_row - start_row, self._compress(body[start_byte:end_byte]),
                                                 self._sync_marker))
        self._stream.flush()

    def close(self) -> None:
        self._stream.flush()


def _schema_json(schema: dict) -> str:
    """The schema text fastavro's Writer puts in the header: its parsed form, bookkeeping dropped."""
    parsed = fastavro_module().parse_schema(schema)
    assert isinstance(parsed, dict)  # a record schema parses to a dict
    return json.dumps({k: v for k, v in parsed.items() if k not in ("__fastavro_parsed", "__named_schemas")})


def _same_decimal(arrow: pa.DataType, paimon: DataType) -> bool:
    """A decimal column is encoded from its unscaled integers only at the schema's scale."""
    return not pa.types.is_decimal(arrow) or (paimon.root == "DECIMAL" and arrow.scale == paimon.scale)


class AvroFileFormat(FileFormat):
    name = "avro"

    def open_reader(self, source: Any, path: str) -> FormatReader:
        return AvroReader(source, path)

    def create_writer(self, stream: BinaryIO, schema: pa.Schema, fields: Sequence[DataField],
                      options: WriteOptions, *, dictionary_columns: Sequence[str] | None = None) -> FormatWriter:
        by_name = {f.name: f for f in fields}
        check_writable(fields)
        return AvroWriter(stream, [by_name[n] for n in schema.names], options)

    def check_options(self, options: WriteOptions) -> None:
        avro_codec(options)

"""ORC data files (pyarrow.orc), laid out as Paimon Java writes them.

Every column carries its Paimon field id as the ORC type attribute ``paimon.id`` (Java's
``OrcTypeUtil.convertToOrcSchema``; nested ROW fields too), so Java matches the columns of a
file written here by id after a rename. TIME is stored as an ORC int of milliseconds, as Java
does (ORC has no time type), and read back by the caller's cast. The ORC writer flushes a
stripe once it holds ``orc.stripe.size`` bytes (capped at the target file size, so a rolling
writer sees the file grow stripe by stripe).
"""

from __future__ import annotations

from typing import Any, BinaryIO, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from impl.data.types import DataField, DataType
from impl.errors import InvalidOptionError
from impl.format.file_format import FileFormat, FormatReader, FormatWriter, WriteOptions, check_writable, seekable

_ERRORS = (pa.ArrowException, OSError, ValueError)
# Paimon file.compression (as parse_compression returns it) -> ORC compression kind
_CODECS = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "none": "uncompressed"}
# orc.compress values (ORC's CompressionKind names) pyarrow writes
_ORC_KINDS = {"NONE": "uncompressed", "ZLIB": "zlib", "SNAPPY": "snappy", "LZ4": "lz4", "ZSTD": "zstd"}


def _orc() -> Any:
    """pyarrow.orc, imported on first use: ``import impl`` does not pay for ORC's C++ module
    when no table is ORC (a cached module after the first call)."""
    import pyarrow.orc

    return pyarrow.orc


class OrcReader(FormatReader):
    format_name = "ORC"

    def __init__(self, source: Any, path: str):
        super().__init__(path)
        # pyarrow.orc is imported on first use, not with impl: only ORC tables need it
        po = _orc()
        try:
            self._file = po.ORCFile(seekable(source))
            self._names = list(self._file.schema.names)
        except _ERRORS as e:
            raise self.corrupt(e) from e

    @property
    def column_names(self) -> list[str]:
        return self._names

    @property
    def num_rows(self) -> int:
        return self._file.nrows

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        try:
            present = self.present(columns)
            if present == []:  # pyarrow reads every column for an empty list
                return pa.table({"_": pa.nulls(self._file.nrows)}).drop_columns(["_"])
            return self._file.read(columns=present)
        except _ERRORS as e:
            raise self.corrupt(e) from e

    def iter_batches(self, columns: Sequence[str] | None, batch_rows: int) -> Iterator[pa.Table]:
        present = self.present(columns)
        if present == []:
            yield from super().iter_batches(columns, batch_rows)
            return
        for i in range(self._file.nstripes):
            try:
                stripe = pa.Table.from_batches([self._file.read_stripe(i, columns=present)])
            except _ERRORS as e:
                raise self.corrupt(e) from e
            for offset in range(0, stripe.num_rows, max(batch_rows, 1)):
                yield stripe.slice(offset, batch_rows)


def _with_ids(f: pa.Field, p: DataField) -> pa.Field:
    """``f`` with ``paimon.id`` attributes (nested ROW fields included) and ORC-storable types."""
    return pa.field(f.name, _orc_type(f.type, p.type), nullable=f.nullable, metadata={"paimon.id": str(p.id)})


def _orc_type(t: pa.DataType, p: DataType) -> pa.DataType:
    if pa.types.is_time(t):
        return pa.int32()
    if pa.types.is_struct(t) and p.root == "ROW":
        return pa.struct([_with_ids(t.field(i), child) for i, child in enumerate(p.children)])
    if pa.types.is_list(t) and p.root == "ARRAY":
        return pa.list_(pa.field(t.value_field.name, _orc_type(t.value_type, p.children[0]), t.value_field.nullable))
    if pa.types.is_map(t) and p.root == "MAP":
        return pa.map_(_orc_type(t.key_type, p.children[0]), _orc_type(t.item_type, p.children[1]))
    return t


def _orc_column(col: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_nested(col.type) and any(c.offset for c in col.chunks):
        # pyarrow's ORC writer drops the offset of a sliced struct (a slice of rows would be
        # written as the rows before it): give it unsliced copies
        col = pa.chunked_array([pa.concat_arrays([c]) if c.offset else c for c in col.chunks], type=col.type)
    if col.type.equals(t):
        return col
    if pa.types.is_time(col.type):
        # milliseconds of the day, as Java's ORC writer stores TIME
        unit = col.type.unit
        ints = col.cast(pa.int32() if unit in ("s", "ms") else pa.int64())
        if unit == "s":
            ints = pc.multiply(ints, 1000)
        elif unit in ("us", "ns"):
            ints = pc.divide(ints, 1000 if unit == "us" else 1_000_000)
        return ints.cast(pa.int32())
    return col.cast(t)


class OrcWriter(FormatWriter):
    def __init__(self, stream: BinaryIO, schema: pa.Schema, fields: Sequence[DataField], options: WriteOptions):
        by_name = {f.name: f for f in fields}
        self._schema = pa.schema([_with_ids(f, by_name[f.name]) for f in schema])
        orc = options.orc
        if orc is None:
            raise ValueError("an ORC writer needs the table's orc.* options (impl.options.write_formats)")
        stripe = orc.stripe_size
        if options.target_file_size:
            stripe = max(min(stripe, options.target_file_size), 64 * 1024)
        names = self._schema.names
        self._writer = _orc().ORCWriter(
            stream, compression=orc_compression(options), stripe_size=stripe,
            compression_block_size=orc.compress_size, row_index_stride=orc.row_index_stride,
            dictionary_key_size_threshold=orc.dictionary_key_threshold,
            bloom_filter_columns=[names.index(c) for c in orc.bloom_filter_columns if c in names] or None,
            bloom_filter_fpp=orc.bloom_filter_fpp)

    def write(self, table: pa.Table) -> None:
        cols = [_orc_column(table.column(i), f.type) for i, f in enumerate(self._schema)]
        self._writer.write(pa.Table.from_arrays(cols, schema=self._schema))

    def close(self) -> None:
        self._writer.close()


def orc_compression(options: WriteOptions) -> str:
    """The pyarrow ORC codec of ``options`` (``orc.compress`` wins over ``file.compression``)."""
    kind = options.orc.compress if options.orc is not None else None
    if kind is not None:
        codec = _ORC_KINDS.get(kind.strip().upper())
        if codec is None:
            raise InvalidOptionError(f"option 'orc.compress': {kind!r} is not one of {', '.join(_ORC_KINDS)} "
                                     "(pyarrow writes no LZO)")
        return codec
    codec = _CODECS.get(options.compression)
    if codec is None:
        raise InvalidOptionError(f"option 'file.compression': {options.compression!r} is not an ORC codec "
                                 f"(one of {', '.join(_CODECS)})")
    return codec


class OrcFileFormat(FileFormat):
    name = "orc"

    def open_reader(self, source: Any, path: str) -> FormatReader:
        return OrcReader(source, path)

    def create_writer(self, stream: BinaryIO, schema: pa.Schema, fields: Sequence[DataField],
                      options: WriteOptions, *, dictionary_columns: Sequence[str] | None = None) -> FormatWriter:
        check_writable(fields)
        return OrcWriter(stream, schema, fields, options)

    def check_options(self, options: WriteOptions) -> None:
        orc_compression(options)

"""Data file formats (Paimon's ``FileFormat`` / ``FormatReaderFactory`` / ``FormatWriterFactory``).

Everything that knows how a data file is laid out lives behind this module: callers open a
:class:`FormatReader` for a file (``impl.format.formats.open_reader``) (the format comes from the file's own name extension, as
Paimon's ``DataFilePathFactory.formatIdentifier`` takes it, never from the table's current
``file.format``: a table whose format was changed reads every file it holds) and a
:class:`FormatWriter` for a new one (the format chosen by :class:`WriteFormats` from the
table's options and the file's LSM level, ``impl.options.write_formats``). This module is the
interface; ``impl.format.formats`` is the registry of the implementations (Parquet, ORC, Avro).

Reading: :meth:`FormatReader.read` / :meth:`FormatReader.iter_batches` decode the physical
columns asked for (columns the file lacks are skipped; the caller fills them), in file order,
so a row's position is its offset in the file (what a deletion vector names). Column types
are the format's own (an ORC timestamp reads as nanoseconds, an Avro TINYINT as int32); the
caller casts to the table's types. Columns of a file written under an older schema are matched
by field id by the caller (``impl.schema.evolution``) through the file's ``schema_id``.

Writing: :meth:`FileFormat.create_writer` streams batches to an open output; statistics are
collected from the rows by the caller (:mod:`impl.datafile.stats`), which is what Paimon Java
computes for every format (its Parquet and ORC extractors read the same min / max / null
counts back from the file footers; its Avro extractor collects them from the rows).

Errors: an unreadable file raises :class:`impl.errors.DataFileError` naming the file and the
format; an unknown extension or option is refused by name (:class:`UnsupportedFileFormatError`,
:class:`impl.errors.InvalidOptionError`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator, Mapping, Sequence

import pyarrow as pa

from impl.data.types import BIGINT, DataField, DataType
from impl.errors import DataFileError, PaimonError, UnsupportedFileFormatError, UnsupportedTypeError

# Paimon's system fields of primary-key files and their field ids (SpecialFields): a key
# field's id is its value field's id plus KEY_FIELD_ID_START.
KEY_FIELD_ID_START = 2147483647 // 2
SEQUENCE_NUMBER_ID = 2147483647 - 1
VALUE_KIND_ID = 2147483647 - 2

# Formats Paimon Java 1.4 writes that this library does not read, with the Paimon release that
# brought them (format-table CSV / JSON / text files are no data files of a Paimon table).
UNSUPPORTED_FORMATS_SINCE = {"lance": "1.3", "blob": "1.3", "csv": "1.3 (format tables)", "json": "1.3 (format tables)",
                        "text": "1.3 (format tables)"}


@dataclass(frozen=True)
class OrcSettings:
    """The ``orc.*`` options an ORC writer uses, parsed (declared with ORC's defaults in
    ``impl.options.core_options``; built by ``impl.options.write_formats``)."""

    stripe_size: int
    compress_size: int
    row_index_stride: int
    dictionary_key_threshold: float
    bloom_filter_columns: tuple[str, ...]
    bloom_filter_fpp: float
    compress: str | None  # ORC's compression kind; None: file.compression


@dataclass(frozen=True)
class WriteOptions:
    """How one data file is encoded: the Paimon compression name (``file.compression``), its
    zstd level, and the format's own options (``orc.*`` / ``avro.*`` / ``parquet.*``, with the
    prefix)."""

    compression: str = "zstd"
    zstd_level: int | None = 1
    format_options: Mapping[str, str] = field(default_factory=dict)
    # rows per Parquet row group, bytes per ORC stripe (at most): the rolling writer's granularity
    target_file_size: int | None = None
    # the orc.* options, when the table writes ORC files (an ORC writer needs them)
    orc: OrcSettings | None = None


class FormatReader(ABC):
    """An open data file."""

    def __init__(self, path: str):
        self.path = path

    @property
    @abstractmethod
    def column_names(self) -> list[str]:
        """The file's top-level columns."""

    @property
    @abstractmethod
    def num_rows(self) -> int:
        """Rows the file holds, from its metadata (footer, stripe or block headers)."""

    def present(self, columns: Sequence[str] | None) -> list[str] | None:
        """``columns`` the file has, once each and in the order asked (None: all)."""
        if columns is None:
            return None
        have = set(self.column_names)
        return [c for c in dict.fromkeys(columns) if c in have]

    @abstractmethod
    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The columns asked for that the file has (all when None), every row in file order."""

    # whether read_where skips data by the file's statistics (else it only filters after decoding)
    prunes = False

    def read_where(self, columns: Sequence[str], predicate: Any) -> pa.Table:
        """The rows satisfying ``predicate`` (a ``pyarrow.compute.Expression`` over the file's
        own column names and types, every one of its columns among ``columns``), in file order
        but without their positions: for reads that apply no deletion vector. Formats whose
        footers hold statistics skip the row groups that cannot match (Parquet); the others
        decode, then filter."""
        return self.read(columns).filter(predicate)

    def iter_batches(self, columns: Sequence[str] | None, batch_rows: int) -> Iterator[pa.Table]:
        """:meth:`read` in slices of at most ``batch_rows`` rows (formats without their own
        batching decode the file once, then slice)."""
        t = self.read(columns)
        for offset in range(0, t.num_rows, max(batch_rows, 1)):
            yield t.slice(offset, batch_rows)

    def corrupt(self, e: BaseException) -> PaimonError:
        return DataFileError(self.path, f"not a readable {self.format_name} file ({type(e).__name__}: {e})")

    format_name = ""


class FormatWriter(ABC):
    """A data file being written to a stream the caller owns (closing the writer does not close it)."""

    @abstractmethod
    def write(self, table: pa.Table) -> None:
        """Append rows (in the writer's schema)."""

    @abstractmethod
    def close(self) -> None:
        """Write everything buffered and the file's footer."""

    def abort(self) -> None:
        """Stop without a valid file (the caller deletes it)."""
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the file is dropped anyway
            pass


class FileFormat(ABC):
    """One data file format: its name (also the file name extension), reader and writer."""

    name: str = ""

    @property
    def extension(self) -> str:
        return "." + self.name

    @abstractmethod
    def open_reader(self, source: Any, path: str) -> FormatReader:
        """``source``: the file's bytes or an open seekable binary file."""

    @abstractmethod
    def create_writer(self, stream: BinaryIO, schema: pa.Schema, fields: Sequence[DataField],
                      options: WriteOptions, *, dictionary_columns: Sequence[str] | None = None) -> FormatWriter:
        """A writer of rows shaped like ``schema`` (Arrow); ``fields`` are the same columns as
        Paimon fields (ids, types, nullability), for formats whose files carry them.
        ``dictionary_columns``: a hint of columns worth dictionary encoding (Parquet only)."""

    @abstractmethod
    def check_options(self, options: WriteOptions) -> None:
        """Refuse, by name, a compression or format option this format cannot write."""


def check_writable(fields: Sequence[DataField]) -> None:
    """Refuse, naming the column, a field whose values this library reads but does not write
    (VARIANT: its binary layout is read as stored, never built here), before any byte is written."""
    for f in fields:
        if _holds(f.type, "VARIANT"):
            raise UnsupportedTypeError(f"column {f.name!r} has type {f.type}: writing VARIANT values is not "
                                       "implemented (tables with VARIANT columns are read-only here)")


def _holds(t: Any, root: str) -> bool:
    if t.root == root:
        return True
    return any(_holds(c.type if isinstance(c, DataField) else c, root) for c in t.children)


# ---------------------------------------------------------------------------- KV file fields


def kv_file_fields(key_fields: Sequence[DataField], value_fields: Sequence[DataField]) -> list[DataField]:
    """The Paimon fields of a primary-key data file, as Java writes them: ``_KEY_<k>`` (id of
    ``k`` plus KEY_FIELD_ID_START, NOT NULL), ``_SEQUENCE_NUMBER`` BIGINT NOT NULL,
    ``_VALUE_KIND`` TINYINT NOT NULL, then the value fields."""
    keys = [DataField(KEY_FIELD_ID_START + f.id, "_KEY_" + f.name, f.type.copy(False)) for f in key_fields]
    system = [DataField(SEQUENCE_NUMBER_ID, "_SEQUENCE_NUMBER", BIGINT(False)),
              DataField(VALUE_KIND_ID, "_VALUE_KIND", DataType("TINYINT", False))]
    return [*keys, *system, *value_fields]


__all__ = [
    "seekable", "FileFormat", "FormatReader", "FormatWriter", "WriteOptions", "UnsupportedFileFormatError", "kv_file_fields",
    "check_writable",
]


def seekable(source: Any) -> Any:
    """A payload (bytes) or an open seekable file as what pyarrow's readers take."""
    return pa.BufferReader(source) if isinstance(source, (bytes, bytearray, memoryview)) else source

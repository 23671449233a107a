"""The data file formats this library reads and writes (Parquet, ORC, Avro), by name and by a
data file's name extension (Paimon's ``DataFilePathFactory.formatIdentifier``).

Example::

    fmt = file_format("orc")            # an impl.format.file_format.FileFormat
    reader = open_reader(data, "bucket-0/data-1b2c-0.orc")
"""

from __future__ import annotations

import posixpath
from typing import Any

from impl.errors import UnsupportedFileFormatError
from impl.format.avro_data import AvroFileFormat
from impl.format.file_format import UNSUPPORTED_FORMATS_SINCE, FileFormat, FormatReader
from impl.format.orc_data import OrcFileFormat
from impl.format.parquet_data import ParquetFileFormat

_REGISTRY: dict[str, FileFormat] = {f.name: f for f in (ParquetFileFormat(), OrcFileFormat(), AvroFileFormat())}


def file_format(name: str) -> FileFormat:
    """The format called ``name`` (parquet, orc, avro); UnsupportedFileFormatError otherwise."""
    key = name.strip().lower()
    fmt = _REGISTRY.get(key)
    if fmt is None:
        since = UNSUPPORTED_FORMATS_SINCE.get(key)
        added = f" (added in Paimon {since})" if since else ""
        raise UnsupportedFileFormatError(
            f"file format {name!r}{added} is not supported; this library reads and writes {', '.join(SUPPORTED)}")
    return fmt


SUPPORTED = ("parquet", "orc", "avro")


def format_identifier(file_name: str) -> str:
    """A data file's format name: its extension (Paimon's ``DataFilePathFactory.formatIdentifier``),
    empty without one."""
    base = posixpath.basename(file_name)
    return base.rsplit(".", 1)[1] if "." in base else ""


def format_of_file(file_name: str) -> FileFormat:
    """The format of a data file, from its name's extension (``data-<uuid>-<n>.orc``)."""
    name = format_identifier(file_name)
    if not name:
        raise UnsupportedFileFormatError(f"data file {file_name!r} has no format extension")
    return file_format(name)


def open_reader(source: Any, path: str) -> FormatReader:
    """A reader of the data file at ``path`` (format from its extension) over ``source``."""
    return format_of_file(path).open_reader(source, path)


def named_for(file_name: str, fmt: FileFormat) -> str:
    """``file_name`` with the extension of ``fmt`` (a writer's namer gives ``.parquet`` names)."""
    base, dot, ext = file_name.rpartition(".")
    if dot and ext.lower() in SUPPORTED:
        file_name = base
    return file_name + fmt.extension

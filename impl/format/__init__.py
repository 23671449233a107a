"""Byte-level codecs of Paimon's on-disk format: BinaryRow, Avro records (with a column-wise
decoder for manifests), snapshot and schema JSON, data types, statistics, index kinds, and the
data file formats (``file_format``: Parquet, ORC, Avro readers and writers)."""

from impl.format.binary_row import EMPTY_ROW, decode_row, encode_row
from impl.format.json_records import CommitKind, Snapshot, TableSchema
from impl.format.records import (
    DataFileMeta,
    FileIdentity,
    FileKind,
    FileSource,
    IndexFileMeta,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from impl.format.types import DataField, DataType, parse_type

__all__ = [
    "EMPTY_ROW", "decode_row", "encode_row", "CommitKind", "Snapshot", "TableSchema", "DataFileMeta",
    "FileIdentity", "FileKind", "FileSource", "IndexFileMeta", "IndexManifestEntry", "ManifestEntry",
    "ManifestFileMeta", "SimpleStats", "DataField", "DataType", "parse_type",
]

"""Metadata records of the manifest layer and their Avro dict forms.

The records are frozen dataclasses; ``to_avro`` / ``from_avro`` convert at the file edge
only. ``from_avro`` raises :class:`CorruptMetadataError` naming the file when a required
field is missing or has the wrong type.
"""

from __future__ import annotations

import datetime as _dt
import enum
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from impl.errors import CorruptMetadataError
from impl.format.binary_row import EMPTY_ROW

MANIFEST_ENTRY_VERSION = 2
MANIFEST_FILE_META_VERSION = 2
INDEX_MANIFEST_ENTRY_VERSION = 1

_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


class FileKind(enum.IntEnum):
    ADD = 0
    DELETE = 1


class FileSource(enum.IntEnum):
    APPEND = 0
    COMPACT = 1


@dataclass(frozen=True)
class SimpleStats:
    """Per-column min, max (as serialized BinaryRows) and null counts."""

    min_values: bytes = EMPTY_ROW
    max_values: bytes = EMPTY_ROW
    null_counts: tuple[int | None, ...] | None = ()

    def to_avro(self) -> dict:
        return {
            "_MIN_VALUES": self.min_values,
            "_MAX_VALUES": self.max_values,
            "_NULL_COUNTS": None if self.null_counts is None else list(self.null_counts),
        }

    @staticmethod
    def from_avro(d: dict) -> "SimpleStats":
        nc = d.get("_NULL_COUNTS")
        return SimpleStats(bytes(d["_MIN_VALUES"]), bytes(d["_MAX_VALUES"]), None if nc is None else tuple(nc))


EMPTY_STATS = SimpleStats()


def _millis_of(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return (value - _EPOCH_UTC) // _dt.timedelta(milliseconds=1)
    return int(value)


def _tuple_or_none(v):
    return None if v is None else tuple(v)


def _list_or_none(v):
    return None if v is None else list(v)


@dataclass(frozen=True)
class DataFileMeta:
    """One data file (or changelog file) of a bucket: size, key range, stats, sequence range, level."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes = EMPTY_ROW
    max_key: bytes = EMPTY_ROW
    key_stats: SimpleStats = EMPTY_STATS
    value_stats: SimpleStats = EMPTY_STATS
    min_sequence_number: int = 0
    max_sequence_number: int = 0
    schema_id: int = 0
    level: int = 0
    extra_files: tuple[str, ...] = ()
    creation_time_millis: int | None = None
    delete_row_count: int | None = 0
    embedded_file_index: bytes | None = None
    file_source: FileSource | None = FileSource.APPEND
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    def upgrade(self, level: int) -> "DataFileMeta":
        """The same file moved to another LSM level (a metadata-only change)."""
        return replace(self, level=level)

    def rename(self, file_name: str) -> "DataFileMeta":
        return replace(self, file_name=file_name)

    def to_avro(self) -> dict:
        return {
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key,
            "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(),
            "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time_millis,
            "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_file_index,
            "_FILE_SOURCE": None if self.file_source is None else int(self.file_source),
            "_VALUE_STATS_COLS": _list_or_none(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": _list_or_none(self.write_cols),
            "_WRITE_COLS_SEQUENCES": _list_or_none(self.write_cols_sequences),
        }

    @staticmethod
    def from_avro(d: dict) -> "DataFileMeta":
        source = d.get("_FILE_SOURCE")
        return DataFileMeta(
            file_name=str(d["_FILE_NAME"]),
            file_size=int(d["_FILE_SIZE"]),
            row_count=int(d["_ROW_COUNT"]),
            min_key=bytes(d["_MIN_KEY"]),
            max_key=bytes(d["_MAX_KEY"]),
            key_stats=SimpleStats.from_avro(d["_KEY_STATS"]),
            value_stats=SimpleStats.from_avro(d["_VALUE_STATS"]),
            min_sequence_number=int(d["_MIN_SEQUENCE_NUMBER"]),
            max_sequence_number=int(d["_MAX_SEQUENCE_NUMBER"]),
            schema_id=int(d["_SCHEMA_ID"]),
            level=int(d["_LEVEL"]),
            extra_files=tuple(d.get("_EXTRA_FILES") or ()),
            creation_time_millis=_millis_of(d.get("_CREATION_TIME")),
            delete_row_count=d.get("_DELETE_ROW_COUNT"),
            embedded_file_index=d.get("_EMBEDDED_FILE_INDEX"),
            file_source=None if source is None else FileSource(source),
            value_stats_cols=_tuple_or_none(d.get("_VALUE_STATS_COLS")),
            external_path=d.get("_EXTERNAL_PATH"),
            first_row_id=d.get("_FIRST_ROW_ID"),
            write_cols=_tuple_or_none(d.get("_WRITE_COLS")),
            write_cols_sequences=_tuple_or_none(d.get("_WRITE_COLS_SEQUENCES")),
        )


class FileIdentity(NamedTuple):
    """What makes two manifest entries talk about the same file (Paimon's FileEntry.Identifier)."""

    partition: bytes
    bucket: int
    level: int
    file_name: str
    extra_files: tuple[str, ...]
    embedded_index: bytes | None
    external_path: str | None


@dataclass(frozen=True)
class ManifestEntry:
    """ADD or DELETE of one data file in one (partition, bucket)."""

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identity(self) -> FileIdentity:
        f = self.file
        return FileIdentity(self.partition, self.bucket, f.level, f.file_name, f.extra_files,
                            f.embedded_file_index, f.external_path)

    @property
    def file_name(self) -> str:
        return self.file.file_name

    @property
    def level(self) -> int:
        return self.file.level

    def with_kind(self, kind: FileKind) -> "ManifestEntry":
        return replace(self, kind=kind)

    def to_avro(self) -> dict:
        return {
            "_VERSION": MANIFEST_ENTRY_VERSION,
            "_KIND": int(self.kind),
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_FILE": self.file.to_avro(),
        }

    @staticmethod
    def from_avro(d: dict, path: str) -> "ManifestEntry":
        try:
            return ManifestEntry(
                kind=FileKind(int(d["_KIND"])),
                partition=bytes(d["_PARTITION"]),
                bucket=int(d["_BUCKET"]),
                total_buckets=int(d["_TOTAL_BUCKETS"]),
                file=DataFileMeta.from_avro(d["_FILE"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptMetadataError(path, f"bad manifest entry ({type(e).__name__}: {e})") from e


@dataclass(frozen=True)
class ManifestFileMeta:
    """One manifest file as listed in a manifest list, with summary statistics for pruning."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats = EMPTY_STATS
    schema_id: int = 0
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None
    total_buckets: int | None = None
    extra_files: tuple[str, ...] | None = None

    def to_avro(self) -> dict:
        return {
            "_VERSION": MANIFEST_FILE_META_VERSION,
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_NUM_ADDED_FILES": self.num_added_files,
            "_NUM_DELETED_FILES": self.num_deleted_files,
            "_PARTITION_STATS": self.partition_stats.to_avro(),
            "_SCHEMA_ID": self.schema_id,
            "_MIN_BUCKET": self.min_bucket,
            "_MAX_BUCKET": self.max_bucket,
            "_MIN_LEVEL": self.min_level,
            "_MAX_LEVEL": self.max_level,
            "_MIN_ROW_ID": self.min_row_id,
            "_MAX_ROW_ID": self.max_row_id,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_EXTRA_FILES": _list_or_none(self.extra_files),
        }

    @staticmethod
    def from_avro(d: dict, path: str) -> "ManifestFileMeta":
        try:
            return ManifestFileMeta(
                file_name=str(d["_FILE_NAME"]),
                file_size=int(d["_FILE_SIZE"]),
                num_added_files=int(d["_NUM_ADDED_FILES"]),
                num_deleted_files=int(d["_NUM_DELETED_FILES"]),
                partition_stats=SimpleStats.from_avro(d["_PARTITION_STATS"]),
                schema_id=int(d["_SCHEMA_ID"]),
                min_bucket=d.get("_MIN_BUCKET"),
                max_bucket=d.get("_MAX_BUCKET"),
                min_level=d.get("_MIN_LEVEL"),
                max_level=d.get("_MAX_LEVEL"),
                min_row_id=d.get("_MIN_ROW_ID"),
                max_row_id=d.get("_MAX_ROW_ID"),
                total_buckets=d.get("_TOTAL_BUCKETS"),
                extra_files=_tuple_or_none(d.get("_EXTRA_FILES")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptMetadataError(path, f"bad manifest file meta ({type(e).__name__}: {e})") from e


class IndexType(enum.StrEnum):
    """The ``IndexFileMeta.index_type`` values impl reads and writes (Paimon's index kinds). A
    str enum: types read from a manifest are plain strings and compare equal to these."""

    HASH = "HASH"  # dynamic bucket mode: the hashes of one bucket's keys
    DELETION_VECTORS = "DELETION_VECTORS"  # deletion vectors of a bucket's data files


@dataclass(frozen=True)
class DeletionVectorMeta:
    data_file_name: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True)
class GlobalIndexMeta:
    row_range_start: int
    row_range_end: int
    index_field_id: int
    extra_field_ids: tuple[int, ...] | None = None
    index_meta: bytes | None = None
    source_meta: bytes | None = None


@dataclass(frozen=True)
class IndexFileMeta:
    """An index file (hash index of a bucket, deletion vectors, global index)."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    deletion_vector_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None
    global_index: GlobalIndexMeta | None = None


@dataclass(frozen=True)
class IndexManifestEntry:
    kind: FileKind
    partition: bytes
    bucket: int
    index_file: IndexFileMeta

    @property
    def identity(self) -> tuple:
        return (self.partition, self.bucket, self.index_file.index_type, self.index_file.file_name)

    def to_avro(self) -> dict:
        f = self.index_file
        dv = None
        if f.deletion_vector_ranges is not None:
            dv = [{"f0": r.data_file_name, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
                  for r in f.deletion_vector_ranges]
        gi = None
        if f.global_index is not None:
            g = f.global_index
            gi = {"_ROW_RANGE_START": g.row_range_start, "_ROW_RANGE_END": g.row_range_end,
                  "_INDEX_FIELD_ID": g.index_field_id, "_EXTRA_FIELD_IDS": _list_or_none(g.extra_field_ids),
                  "_INDEX_META": g.index_meta, "_SOURCE_META": g.source_meta}
        return {
            "_VERSION": INDEX_MANIFEST_ENTRY_VERSION,
            "_KIND": int(self.kind),
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_INDEX_TYPE": f.index_type,
            "_FILE_NAME": f.file_name,
            "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count,
            "_DELETIONS_VECTORS_RANGES": dv,
            "_EXTERNAL_PATH": f.external_path,
            "_GLOBAL_INDEX": gi,
        }

    @staticmethod
    def from_avro(d: dict, path: str) -> "IndexManifestEntry":
        try:
            dv = d.get("_DELETIONS_VECTORS_RANGES")
            gi = d.get("_GLOBAL_INDEX")
            return IndexManifestEntry(
                kind=FileKind(int(d["_KIND"])),
                partition=bytes(d["_PARTITION"]),
                bucket=int(d["_BUCKET"]),
                index_file=IndexFileMeta(
                    index_type=str(d["_INDEX_TYPE"]),
                    file_name=str(d["_FILE_NAME"]),
                    file_size=int(d["_FILE_SIZE"]),
                    row_count=int(d["_ROW_COUNT"]),
                    deletion_vector_ranges=None if dv is None else tuple(
                        DeletionVectorMeta(r["f0"], int(r["f1"]), int(r["f2"]), r.get("_CARDINALITY")) for r in dv),
                    external_path=d.get("_EXTERNAL_PATH"),
                    global_index=None if gi is None else GlobalIndexMeta(
                        int(gi["_ROW_RANGE_START"]), int(gi["_ROW_RANGE_END"]), int(gi["_INDEX_FIELD_ID"]),
                        _tuple_or_none(gi.get("_EXTRA_FIELD_IDS")), gi.get("_INDEX_META"), gi.get("_SOURCE_META")),
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptMetadataError(path, f"bad index manifest entry ({type(e).__name__}: {e})") from e



"""The data-file record (Paimon's ``DataFileMeta``, in ``io``) and its column statistics.

Frozen dataclasses; ``to_avro`` / ``from_avro`` convert at the file edge only. ``from_avro``
raises :class:`CorruptMetadataError` naming the file when a required field is missing or has
the wrong type (the manifest entry that holds a data file reports it).
"""

from __future__ import annotations

import datetime as _dt
import enum
from dataclasses import dataclass, replace
from typing import Any

from impl.data.binary_row import EMPTY_ROW

_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


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


def tuple_or_none(v):
    """A list field of an Avro record as a tuple (None stays None)."""
    return None if v is None else tuple(v)


def list_or_none(v):
    """A tuple field as an Avro list (None stays None)."""
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
            "_VALUE_STATS_COLS": list_or_none(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": list_or_none(self.write_cols),
            "_WRITE_COLS_SEQUENCES": list_or_none(self.write_cols_sequences),
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
            value_stats_cols=tuple_or_none(d.get("_VALUE_STATS_COLS")),
            external_path=d.get("_EXTERNAL_PATH"),
            first_row_id=d.get("_FIRST_ROW_ID"),
            write_cols=tuple_or_none(d.get("_WRITE_COLS")),
            write_cols_sequences=tuple_or_none(d.get("_WRITE_COLS_SEQUENCES")),
        )


@dataclass(frozen=True)
class KeyFacts:
    """What a primary-key (key-value) file adds to the facts of a written file: its first and last
    key (serialized BinaryRows; the file is sorted by key), the ``_KEY_`` columns' statistics, its
    sequence-number range and its retract rows (-U / -D)."""

    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    delete_row_count: int


def written_file_meta(file_name: str, file_size: int, row_count: int, *, schema_id: int,
                      creation_time_millis: int, value_stats: SimpleStats, value_stats_cols: tuple[str, ...] | None,
                      keys: KeyFacts | None = None, level: int = 0, file_source: FileSource = FileSource.APPEND,
                      embedded_file_index: bytes | None = None, extra_files: tuple[str, ...] = ()) -> DataFileMeta:
    """The DataFileMeta of a data file a writer has just written, from its facts and statistics:
    the one place every writer (append files, merge-tree files, Spark's native files) builds it.

    An append file (``keys`` None) has no key range or key statistics, sequence range 0..0 and
    no retract rows; a key-value file takes those from ``keys``. Fields a later step sets (the
    first row id and write columns of row tracking, an external path) start unset."""
    k = keys
    return DataFileMeta(
        file_name=file_name,
        file_size=file_size,
        row_count=row_count,
        min_key=EMPTY_ROW if k is None else k.min_key,
        max_key=EMPTY_ROW if k is None else k.max_key,
        key_stats=EMPTY_STATS if k is None else k.key_stats,
        value_stats=value_stats,
        min_sequence_number=0 if k is None else k.min_sequence_number,
        max_sequence_number=0 if k is None else k.max_sequence_number,
        schema_id=schema_id,
        level=level,
        extra_files=tuple(extra_files),
        creation_time_millis=creation_time_millis,
        delete_row_count=0 if k is None else k.delete_row_count,
        embedded_file_index=embedded_file_index,
        file_source=file_source,
        value_stats_cols=value_stats_cols,
    )

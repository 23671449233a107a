"""Records of the manifest layer (Paimon's ``manifest`` package) and their Avro dict forms:
manifest entries, manifest file metas, index files and index manifest entries.

Frozen dataclasses; ``to_avro`` / ``from_avro`` convert at the file edge only. ``from_avro``
raises :class:`CorruptMetadataError` naming the file when a required field is missing or has
the wrong type.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import NamedTuple

from impl.datafile.meta import EMPTY_STATS, DataFileMeta, SimpleStats, list_or_none, tuple_or_none
from impl.errors import CorruptMetadataError

MANIFEST_ENTRY_VERSION = 2
MANIFEST_FILE_META_VERSION = 2
INDEX_MANIFEST_ENTRY_VERSION = 1


class FileKind(enum.IntEnum):
    ADD = 0
    DELETE = 1


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
            "_EXTRA_FILES": list_or_none(self.extra_files),
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
                extra_files=tuple_or_none(d.get("_EXTRA_FILES")),
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
                  "_INDEX_FIELD_ID": g.index_field_id, "_EXTRA_FIELD_IDS": list_or_none(g.extra_field_ids),
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
                        tuple_or_none(gi.get("_EXTRA_FIELD_IDS")), gi.get("_INDEX_META"), gi.get("_SOURCE_META")),
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptMetadataError(path, f"bad index manifest entry ({type(e).__name__}: {e})") from e

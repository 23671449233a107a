"""The table options this library reads: one declaration per Paimon key (after Paimon's ``CoreOptions``).

Keys, defaults and fallback keys are Apache Paimon's, with these exceptions that pin down what
this library supports or where it fixes a value Paimon leaves open:

- ``bucket`` accepts Paimon's -2 (postpone bucket mode, primary-key tables only: the table
  layer refuses it on append tables, as Paimon's schema validation does).
- ``file.format`` accepts parquet, orc and avro (the per-level, compression and ``orc.*`` /
  ``avro.*`` options are checked by ``impl.options.write_formats.WriteFormats``);
  ``file.compression.zstd-level`` is at least 1.
- ``write-buffer-spillable`` has no default (as in Paimon: on for batch writes and object stores);
  ``spill-compression`` accepts zstd, lz4 and none (no lzo in Arrow IPC).
- ``snapshot.expire.limit`` defaults to 10.
- Lower bounds (``minimum``) on counts that Paimon would only trip over later.

The per-concept views (:class:`impl.commit.options.CommitOptions`,
:class:`impl.mergetree.options.MergeTreeOptions`, :class:`impl.store.options.TableOptions`) read
these declarations and add the rules that relate several options.
"""

from __future__ import annotations

import warnings
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, TypeVar

from impl.fs.names import (
    MAIN_BRANCH,
    BranchName,
    TagName,
    parse_branch_option,
    parse_optional_branch_option,
    parse_tag_option,
)
from impl.options.config_option import FIELDS_PREFIX, ConfigOption, FieldOption
from impl.options.registry import classify
from impl.options.values import (
    BucketFunctionType,
    ChangelogProducer,
    MergeEngine,
    SortOrder,
    StartupMode,
    StatsMode,
    at_least,
    one_of,
    parse_bool,
    parse_bucket,
    parse_compression,
    parse_compression_per_level,
    parse_duration_millis,
    parse_file_format,
    parse_file_prefix,
    parse_float,
    parse_format_per_level,
    parse_incremental_between,
    parse_int,
    parse_lowercase,
    parse_max_buckets,
    parse_memory_size,
    parse_name_list,
    parse_names,
    parse_optional_text,
    parse_relative_directory,
    parse_spill_compression,
    parse_stats_mode,
    parse_text,
)

T = TypeVar("T")

MiB = 1024 * 1024
EMPTY_LEVEL_MAP: Mapping[int, str] = MappingProxyType({})

_DECLARED: list[ConfigOption[Any]] = []


def _option(key: str, parse: Callable[[str, object], T], default: T, description: str,
            fallback_keys: tuple[str, ...] = ()) -> ConfigOption[T]:
    option = ConfigOption(key, parse, default, description, fallback_keys)
    _DECLARED.append(option)
    return option


# ---------------------------------------------------------------------------- layout and files

BUCKET: ConfigOption[int] = _option(
    "bucket", parse_bucket, -1,
    "Bucket count: >= 1 fixed, -1 dynamic (primary-key tables) or unaware (append tables), -2 postpone.")
BUCKET_KEY: ConfigOption[tuple[str, ...] | None] = _option(
    "bucket-key", parse_name_list, None,
    "Comma-separated columns hashed to pick a bucket; unset: the primary key without partition columns.")
BUCKET_FUNCTION_TYPE: ConfigOption[BucketFunctionType] = _option(
    "bucket-function.type", one_of(BucketFunctionType), BucketFunctionType.DEFAULT,
    "How the bucket key picks a bucket: default (BinaryRow hash) or mod (one INT / BIGINT key); hive is refused.")
DATA_FILE_PATH_DIRECTORY: ConfigOption[str | None] = _option(
    "data-file.path-directory", parse_relative_directory, None,
    "Directory under the table's holding the partition and bucket directories of data files.")
DATA_FILE_PREFIX: ConfigOption[str] = _option("data-file.prefix", parse_file_prefix, "data-", "Name prefix of new data files.")
CHANGELOG_FILE_PREFIX: ConfigOption[str] = _option(
    "changelog-file.prefix", parse_file_prefix, "changelog-", "Name prefix of new changelog files.")
FILE_SUFFIX_INCLUDE_COMPRESSION: ConfigOption[bool] = _option(
    "file.suffix.include.compression", parse_bool, False,
    "New data and changelog file names carry the codec's extension before the format's (.zst.parquet).")
FILE_FORMAT: ConfigOption[str] = _option(
    "file.format", parse_file_format, "parquet", "Format of data files.")
FILE_COMPRESSION: ConfigOption[str] = _option(
    "file.compression", parse_compression, "zstd",
    "Compression of data files (parsed to the pyarrow codec name; uncompressed is none).")
FILE_COMPRESSION_ZSTD_LEVEL: ConfigOption[int] = _option(
    "file.compression.zstd-level", at_least(1), 1, "zstd level of data files.")
FILE_FORMAT_PER_LEVEL: ConfigOption[Mapping[int, str]] = _option(
    "file.format.per.level", parse_format_per_level, EMPTY_LEVEL_MAP,
    "Format of the data files of some LSM levels, '<level>:<format>,...' (others: file.format).")
FILE_COMPRESSION_PER_LEVEL: ConfigOption[Mapping[int, str]] = _option(
    "file.compression.per.level", parse_compression_per_level, EMPTY_LEVEL_MAP,
    "Compression of the data files of some LSM levels, '<level>:<compression>,...' (others: file.compression).")
# Paimon's target-file-size when unset, by table kind
PRIMARY_KEY_TARGET_FILE_SIZE = 128 * MiB
APPEND_TARGET_FILE_SIZE = 256 * MiB
TARGET_FILE_SIZE: ConfigOption[int | None] = _option(
    "target-file-size", at_least(1, parse_memory_size), None,
    "Target size of a data file in bytes; unset: 128 mb for primary-key tables, 256 mb for append tables.")
WRITE_BUFFER_SIZE: ConfigOption[int] = _option(
    "write-buffer-size", parse_memory_size, 256 * MiB,
    "Bytes of rows a writer buffers in memory before it writes a sorted file.")
WRITE_BUFFER_SPILLABLE: ConfigOption[bool | None] = _option(
    "write-buffer-spillable", parse_bool, None,
    "Whether a full write buffer spills sorted runs to local disk (merged into level-0 files at "
    "flush) instead of writing level-0 files; unset: on for batch writes and object stores.")
WRITE_BUFFER_SPILL_MAX_DISK_SIZE: ConfigOption[int | None] = _option(
    "write-buffer-spill.max-disk-size", at_least(1, parse_memory_size), None,
    "Local disk one writer may fill with spilled runs before it flushes them; unset: no limit.")
SORT_SPILL_THRESHOLD: ConfigOption[int | None] = _option(
    "sort-spill-threshold", at_least(2), None,
    "Spilled runs of one writer that make it merge them into level-0 files; unset: "
    "num-sorted-run.stop-trigger + 1.")
SORT_SPILL_BUFFER_SIZE: ConfigOption[int] = _option(
    "sort-spill-buffer-size", at_least(1, parse_memory_size), 64 * MiB,
    "Bytes of rows written to (and read back from) a spill file at a time.")
SPILL_COMPRESSION: ConfigOption[str] = _option(
    "spill-compression", parse_spill_compression, "zstd",
    "Compression of spill files (Arrow IPC): zstd, lz4 or none (Paimon's lzo is not available).")
SPILL_COMPRESSION_ZSTD_LEVEL: ConfigOption[int] = _option(
    "spill-compression.zstd-level", at_least(1), 1, "zstd level of spill files.")
DATA_FILE_THIN_MODE: ConfigOption[bool] = _option(
    "data-file.thin-mode", parse_bool, False,
    "Primary-key data files without the _KEY_ copies of the key columns (readers take the key from "
    "the value columns; Paimon's KeyValueThinDataFileWriterImpl).")
WRITE_ONLY: ConfigOption[bool] = _option(
    "write-only", parse_bool, False,
    "Skip compaction and snapshot expiration on write (a dedicated job compacts).",
    fallback_keys=("write.compaction-skip",))

# ---------------------------------------------------------------------------- primary-key tables

MERGE_ENGINE: ConfigOption[MergeEngine] = _option(
    "merge-engine", one_of(MergeEngine), MergeEngine.DEDUPLICATE,
    "How the rows of one primary key combine.")
CHANGELOG_PRODUCER: ConfigOption[ChangelogProducer] = _option(
    "changelog-producer", one_of(ChangelogProducer), ChangelogProducer.NONE,
    "Which changelog files a primary-key table writes.")
ROWKIND_FIELD: ConfigOption[str | None] = _option(
    "rowkind.field", parse_optional_text, None, "String column holding each row's kind (+I, -U, +U, -D).")
SEQUENCE_FIELD: ConfigOption[tuple[str, ...] | None] = _option(
    "sequence.field", parse_name_list, None,
    "Columns ordering the rows of one key before the write order does.")
SEQUENCE_FIELD_SORT_ORDER: ConfigOption[SortOrder] = _option(
    "sequence.field.sort-order", one_of(SortOrder), SortOrder.ASCENDING, "Order of sequence.field.")
IGNORE_DELETE: ConfigOption[bool] = _option(
    "ignore-delete", parse_bool, False, "Drop -U/-D input rows.",
    fallback_keys=("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete"))
PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE: ConfigOption[bool] = _option(
    "partial-update.remove-record-on-delete", parse_bool, False,
    "partial-update: a -D row removes the whole row.")
FIELDS_DEFAULT_AGGREGATE_FUNCTION: ConfigOption[str | None] = _option(
    "fields.default-aggregate-function", parse_lowercase, None,
    "aggregation: the function of columns without their own; unset: last_non_null_value.")
NUM_SORTED_RUN_COMPACTION_TRIGGER: ConfigOption[int] = _option(
    "num-sorted-run.compaction-trigger", at_least(1), 5, "Sorted runs (level-0 files count one each) that trigger compaction.")
NUM_SORTED_RUN_STOP_TRIGGER: ConfigOption[int | None] = _option(
    "num-sorted-run.stop-trigger", at_least(1), None,
    "Sorted runs at which writes wait for compaction; unset: compaction trigger + 3.")
NUM_LEVELS: ConfigOption[int | None] = _option(
    "num-levels", at_least(2), None, "Levels of the LSM tree; unset: compaction trigger + 1.")
COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT: ConfigOption[int] = _option(
    "compaction.max-size-amplification-percent", at_least(0), 200,
    "Extra storage (percent of the largest run) that triggers a full compaction.")
COMPACTION_SIZE_RATIO: ConfigOption[int] = _option(
    "compaction.size-ratio", at_least(0), 1,
    "Percentage flexibility when comparing sorted run sizes for a size-ratio compaction.")

# ---------------------------------------------------------------------------- dynamic bucket mode (bucket -1)

DYNAMIC_BUCKET_TARGET_ROW_NUM: ConfigOption[int] = _option(
    "dynamic-bucket.target-row-num", at_least(1), 2_000_000,
    "Dynamic bucket mode: keys one bucket takes before new keys go to another bucket.")
DYNAMIC_BUCKET_MAX_BUCKETS: ConfigOption[int] = _option(
    "dynamic-bucket.max-buckets", parse_max_buckets, -1,
    "Dynamic bucket mode: most buckets per partition (-1 unlimited); past it new keys go to a random bucket.")
DYNAMIC_BUCKET_INITIAL_BUCKETS: ConfigOption[int | None] = _option(
    "dynamic-bucket.initial-buckets", at_least(1), None,
    "Dynamic bucket mode: assigner parallelism of a distributed writer (parsed; this library assigns with one).")

# ---------------------------------------------------------------------------- postpone bucket mode (bucket -2)

POSTPONE_DEFAULT_BUCKET_NUM: ConfigOption[int] = _option(
    "postpone.default-bucket-num", at_least(1), 1,
    "Postpone bucket mode: buckets of a partition compacted for the first time (one with real buckets keeps "
    "its count).")

# per-field options of the aggregation and partial-update engines
FIELD_AGGREGATE_FUNCTION: FieldOption[str] = FieldOption(
    "aggregate-function", parse_lowercase, "aggregation: the column's aggregate function.")
FIELD_IGNORE_RETRACT: FieldOption[bool] = FieldOption(
    "ignore-retract", parse_bool, "aggregation: -U/-D rows do not change the column.")
FIELD_LIST_AGG_DELIMITER: FieldOption[str] = FieldOption(
    "list-agg-delimiter", parse_text, "aggregation: the separator listagg puts between values.")
FIELD_SEQUENCE_GROUP: FieldOption[tuple[str, ...]] = FieldOption(
    "sequence-group", parse_name_list,
    "partial-update: fields.<sequence fields>.sequence-group = <fields> they order.")
FIELD_OPTIONS: tuple[FieldOption[Any], ...] = (
    FIELD_AGGREGATE_FUNCTION, FIELD_IGNORE_RETRACT, FIELD_LIST_AGG_DELIMITER, FIELD_SEQUENCE_GROUP)

# ---------------------------------------------------------------------------- append-table compaction

COMPACTION_MIN_FILE_NUM: ConfigOption[int] = _option(
    "compaction.min.file-num", at_least(1), 5, "Fewest small files an append-table compaction rewrites.")
COMPACTION_MAX_FILE_NUM: ConfigOption[int | None] = _option(
    "compaction.max.file-num", at_least(2), None, "Most files one append-table compaction rewrites.")

# ---------------------------------------------------------------------------- snapshots

SNAPSHOT_NUM_RETAINED_MIN: ConfigOption[int] = _option(
    "snapshot.num-retained.min", at_least(1), 10, "Fewest snapshots expiration keeps.")
SNAPSHOT_NUM_RETAINED_MAX: ConfigOption[int] = _option(
    "snapshot.num-retained.max", at_least(1), 2**31 - 1, "Most snapshots expiration keeps.")
SNAPSHOT_TIME_RETAINED: ConfigOption[int] = _option(
    "snapshot.time-retained", parse_duration_millis, 3_600_000,
    "Milliseconds a snapshot is kept (beyond the minimum count).")
SNAPSHOT_EXPIRE_LIMIT: ConfigOption[int] = _option(
    "snapshot.expire.limit", at_least(1), 10, "Most snapshots one expiration removes.")
SNAPSHOT_CLEAN_EMPTY_DIRECTORIES: ConfigOption[bool] = _option(
    "snapshot.clean-empty-directories", parse_bool, False,
    "Expiration also removes the partition and bucket directories it empties.")

# ---------------------------------------------------------------------------- commit and manifests

COMMIT_MAX_RETRIES: ConfigOption[int] = _option(
    "commit.max-retries", at_least(0), 10, "Retries of a commit that lost the race for a snapshot id.")
COMMIT_MIN_RETRY_WAIT: ConfigOption[int] = _option(
    "commit.min-retry-wait", parse_duration_millis, 10, "Milliseconds of the first retry backoff.")
COMMIT_MAX_RETRY_WAIT: ConfigOption[int] = _option(
    "commit.max-retry-wait", parse_duration_millis, 10_000, "Milliseconds the retry backoff never exceeds.")
COMMIT_TIMEOUT: ConfigOption[int | None] = _option(
    "commit.timeout", parse_duration_millis, None, "Milliseconds after which a commit stops retrying; unset: no limit.")
MANIFEST_TARGET_FILE_SIZE: ConfigOption[int] = _option(
    "manifest.target-file-size", parse_memory_size, 8 * MiB, "Target size of a manifest file in bytes.")
MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE: ConfigOption[int] = _option(
    "manifest.full-compaction-threshold-size", parse_memory_size, 16 * MiB,
    "Bytes of delta manifests that trigger a full manifest merge.")
MANIFEST_MERGE_MIN_COUNT: ConfigOption[int] = _option(
    "manifest.merge-min-count", at_least(1), 30, "Fewest small manifest files a minor merge combines.")
MANIFEST_FORMAT: ConfigOption[str] = _option(
    "manifest.format", parse_text, "avro",
    "Format of manifest, manifest list and index manifest files, as written (avro or parquet; "
    "checked when a manifest is written: impl.manifest.manifest_file.checked_format).")
MANIFEST_COMPRESSION: ConfigOption[str] = _option(
    "manifest.compression", parse_text, "zstd",
    "Avro codec of metadata files when avro.codec is unset, as written (checked when a file is written).")

# ---------------------------------------------------------------------------- format options (orc.*, avro.*)

# ORC's own options (ORC Java's OrcConf names and defaults), parsed when a table writes ORC files.
ORC_STRIPE_SIZE: ConfigOption[int] = _option(
    "orc.stripe.size", parse_int, 64 * MiB,
    "Bytes of an ORC stripe (at most the target file size, at least 64 kb).")
ORC_COMPRESS_SIZE: ConfigOption[int] = _option(
    "orc.compress.size", parse_int, 256 * 1024, "Bytes of an ORC compression block.")
ORC_ROW_INDEX_STRIDE: ConfigOption[int] = _option(
    "orc.row.index.stride", parse_int, 10_000, "Rows between ORC row index entries.")
ORC_DICTIONARY_KEY_THRESHOLD: ConfigOption[float] = _option(
    "orc.dictionary.key.threshold", parse_float, 0.8,
    "ORC dictionary-encodes a string column while its distinct values are at most this fraction of its rows.")
ORC_BLOOM_FILTER_COLUMNS: ConfigOption[tuple[str, ...]] = _option(
    "orc.bloom.filter.columns", parse_names, (), "Comma-separated columns with ORC bloom filters.")
ORC_BLOOM_FILTER_FPP: ConfigOption[float] = _option(
    "orc.bloom.filter.fpp", parse_float, 0.05, "False-positive rate of ORC bloom filters.")
ORC_COMPRESS: ConfigOption[str | None] = _option(
    "orc.compress", parse_text, None,
    "ORC compression kind (NONE, ZLIB, SNAPPY, LZ4, ZSTD; checked when ORC is written); unset: file.compression.")
# ORC keys Paimon declares that this library accepts without reading (their value does not change
# the files it writes or the rows it reads)
ORC_ACCEPTED_KEYS = frozenset({"orc.write.batch-size", "orc.timestamp-ltz.legacy.type", "orc.column.encoding.direct"})

AVRO_CODEC: ConfigOption[str | None] = _option(
    "avro.codec", parse_text, None,
    "Codec of Avro data and metadata files, as written (checked when a file is written); unset: "
    "file.compression for data files, manifest.compression for metadata files.")

# ---------------------------------------------------------------------------- data-file indexes (file-index.*)

FILE_INDEX_IN_MANIFEST_THRESHOLD: ConfigOption[int] = _option(
    "file-index.in-manifest-threshold", parse_memory_size, 500,
    "Bytes up to which a data file's index blob is embedded in its manifest entry (larger: a "
    "<data-file>.index file beside it).")
FILE_INDEX_READ_ENABLED: ConfigOption[bool] = _option(
    "file-index.read.enabled", parse_bool, True, "Scans use the data-file indexes to skip files.")

# ---------------------------------------------------------------------------- reads

SCAN_SNAPSHOT_ID: ConfigOption[int | None] = _option(
    "scan.snapshot-id", at_least(1), None, "Read this snapshot (time travel).")
SCAN_TIMESTAMP_MILLIS: ConfigOption[int | None] = _option(
    "scan.timestamp-millis", parse_int, None, "Read the latest snapshot committed at or before this epoch millisecond.")
SCAN_TAG_NAME: ConfigOption[TagName | None] = _option(
    "scan.tag-name", parse_tag_option, None, "Read the snapshot this tag keeps (time travel by tag).")
BRANCH: ConfigOption[BranchName] = _option(
    "branch", parse_branch_option, MAIN_BRANCH, "The branch whose snapshots a table view reads and commits to.")
SCAN_VERSION: ConfigOption[str | None] = _option(
    "scan.version", parse_optional_text, None,
    "Time travel by version ('VERSION AS OF'): a tag of that name, else a snapshot id (all digits).")
SCAN_FALLBACK_BRANCH: ConfigOption[BranchName | None] = _option(
    "scan.fallback-branch", parse_optional_branch_option, None,
    "Batch reads take each partition this branch lacks from this branch (Paimon's FallbackReadFileStoreTable).")
INCREMENTAL_BETWEEN: ConfigOption[tuple[int, int] | None] = _option(
    "incremental-between", parse_incremental_between, None,
    "Read the changes after snapshot <start> up to snapshot <end>: '<start>,<end>'.")
SCAN_MODE: ConfigOption[StartupMode] = _option(
    "scan.mode", one_of(StartupMode), StartupMode.DEFAULT,
    "Where a streaming read starts (read by the Spark stream source; batch reads use the snapshot options).")
STREAMING_READ_OVERWRITE: ConfigOption[bool] = _option(
    "streaming-read-overwrite", parse_bool, False,
    "Stream the changes of OVERWRITE snapshots of a primary-key table (not supported: true is refused).")
STREAMING_READ_APPEND_OVERWRITE: ConfigOption[bool] = _option(
    "streaming-read-append-overwrite", parse_bool, False,
    "Stream the files OVERWRITE snapshots add to an append table (not supported: true is refused).")
SOURCE_SPLIT_TARGET_SIZE: ConfigOption[int] = _option(
    "source.split.target-size", parse_memory_size, 128 * MiB, "Target bytes of one read split.")
SOURCE_SPLIT_OPEN_FILE_COST: ConfigOption[int] = _option(
    "source.split.open-file-cost", parse_memory_size, 4 * MiB,
    "Bytes a file counts for at least when splits are packed (opening it has a cost).")

# ---------------------------------------------------------------------------- other

PARTITION_DEFAULT_NAME: ConfigOption[str] = _option(
    "partition.default-name", parse_text, "__DEFAULT_PARTITION__",
    "Directory name of a null or empty partition value.")
INDEX_FILE_IN_DATA_FILE_DIR: ConfigOption[bool] = _option(
    "index-file-in-data-file-dir", parse_bool, False,
    "Index files in the bucket directories instead of index/ (only false is implemented for tables with index files).")
PARTITION_LEGACY_NAME: ConfigOption[bool] = _option(
    "partition.legacy-name", parse_bool, True,
    "Partition directory names from each value's toString (DATE as epoch days) instead of its cast to STRING.")
METADATA_STATS_MODE: ConfigOption[StatsMode] = _option(
    "metadata.stats-mode", parse_stats_mode, StatsMode(), "Column statistics kept in data file metadata.")
DELETION_VECTORS_ENABLED: ConfigOption[bool] = _option(
    "deletion-vectors.enabled", parse_bool, False, "Deletion-vector mode: compaction marks superseded rows, reads of levels >= 1 skip the merge.")
DELETION_VECTORS_BITMAP64: ConfigOption[bool] = _option(
    "deletion-vectors.bitmap64", parse_bool, False,
    "64-bit deletion-vector bitmaps (Paimon's Iceberg-compatible Bitmap64DeletionVector) in new index files.")
ROW_TRACKING_ENABLED: ConfigOption[bool] = _option(
    "row-tracking.enabled", parse_bool, False,
    "Row tracking (append tables): every row has a stable id (_ROW_ID), files carry their first row id.")
DATA_EVOLUTION_ENABLED: ConfigOption[bool] = _option(
    "data-evolution.enabled", parse_bool, False,
    "Data evolution (with row tracking): files may hold a subset of the columns, merged by row id on read.")
DYNAMIC_PARTITION_OVERWRITE: ConfigOption[bool] = _option(
    "dynamic-partition-overwrite", parse_bool, True,
    "An overwrite without a partition spec replaces only the partitions it writes.")

CORE_OPTIONS: tuple[ConfigOption[Any], ...] = tuple(_DECLARED)

# ---------------------------------------------------------------------------- known keys

# Keys Paimon defines (or writes into schema options) that this library accepts without reading.
PASSED_THROUGH_KEYS = frozenset({
    "page-size", "compaction.optimization-interval",
    "full-compaction.delta-commits", "local-sort.max-num-file-handles", "sort-engine",
    "commit.force-compact", "commit.user-prefix",
    "incremental-between-scan-mode", "path", "type", "owner", "comment",
    "read.batch-size", "write.batch-size", "dynamic-bucket.assigner-parallelism",
    "aggregation.remove-record-on-delete", "lookup-wait",
    # Flink's batch sink into postpone tables; this library's writes always land in bucket-postpone
    "postpone.batch-write-fixed-bucket", "postpone.batch-write-fixed-bucket.max-parallelism",
})
# Families of keys: per-field options, format and file-index settings, and the snapshot,
# changelog and lookup settings this library does not read.
KNOWN_PREFIXES = (FIELDS_PREFIX, "file.format.", "file.compression.", "parquet.", "orc.", "avro.", "snapshot.",
                  "changelog.", "lookup.", "file-index.")
KNOWN_KEYS = frozenset(key for option in CORE_OPTIONS for key in option.keys) | PASSED_THROUGH_KEYS


def is_known_key(key: str) -> bool:
    """True if some option declaration, passed-through key or key family covers ``key``, or
    Paimon declares it (:mod:`impl.options.registry` classifies every Paimon key)."""
    return key in KNOWN_KEYS or key.startswith(KNOWN_PREFIXES) or classify(key) is not None


def warn_unknown_keys(keys: Iterable[str]) -> None:
    """``warnings.warn`` naming the keys nothing covers (a typo such as ``buckets`` would otherwise do nothing)."""
    unknown = sorted(k for k in keys if not is_known_key(k))
    if unknown:
        # stacklevel: past this function and the options view, to the code that set the options
        warnings.warn(f"unknown table options (ignored): {', '.join(unknown)}", UserWarning, stacklevel=4)

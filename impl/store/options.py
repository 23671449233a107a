"""The table layer's view of a table's options (schema options merged with dynamic ones).

The keys are declared once in :mod:`impl.options.core_options`; this module reads them, adds
the rules that relate several options or that the table layer alone imposes, and warns about
unknown keys: they are kept and passed through, but a typo such as ``buckets`` would otherwise
silently do nothing. Wrong values raise :class:`InvalidOptionError` naming the key and the value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from impl.commit.options import CommitOptions
from impl.errors import InvalidOptionError
from impl.fs.names import BranchName, TagName
from impl.options import core_options as co
from impl.options.core_options import KNOWN_KEYS, is_known_key, warn_unknown_keys
from impl.options.values import BucketFunctionType, ChangelogProducer, MergeEngine, StatsMode, StatsModeKind
from impl.options.write_formats import WriteFormats

__all__ = [
    "TableOptions", "StatsMode", "StatsModeKind", "MergeEngine", "ChangelogProducer", "KNOWN_KEYS",
    "is_known_key", "warn_unknown_keys",
]

MiB = 1024 * 1024

# ---------------------------------------------------------------------------- rules


def check_one_scan_start(options: Mapping[str, object]) -> None:
    """A read starts at one of a snapshot id, a time or a tag."""
    starts = [o.key for o in (co.SCAN_SNAPSHOT_ID, co.SCAN_TIMESTAMP_MILLIS, co.SCAN_TAG_NAME, co.SCAN_VERSION)
              if o.key_in(options)]
    if len(starts) > 1:
        raise InvalidOptionError(f"options {' and '.join(repr(k) for k in starts)} cannot both be set: "
                                 "a read starts at one snapshot")


def check_retained_counts(retained_min: int, retained_max: int) -> None:
    if retained_max < retained_min:
        raise InvalidOptionError(
            f"option 'snapshot.num-retained.max' ({retained_max}) is below 'snapshot.num-retained.min' ({retained_min})")


def target_file_size_for(configured: int | None, primary_key_table: bool) -> int:
    """``target-file-size``, else Paimon's default for the table kind."""
    if configured is not None:
        return configured
    return (128 if primary_key_table else 256) * MiB


# ---------------------------------------------------------------------------- view


@dataclass(frozen=True)
class TableOptions:
    """Parsed view of a table's options (schema options merged with dynamic ones)."""

    raw: Mapping[str, str] = field(default_factory=dict)
    bucket: int = co.BUCKET.default
    bucket_key: tuple[str, ...] | None = co.BUCKET_KEY.default
    file_format: str = co.FILE_FORMAT.default
    file_compression: str = co.FILE_COMPRESSION.default
    write_formats: WriteFormats = field(default_factory=WriteFormats)
    zstd_level: int = co.FILE_COMPRESSION_ZSTD_LEVEL.default
    target_file_size: int | None = co.TARGET_FILE_SIZE.default  # None: see target_file_size_for
    write_buffer_size: int = co.WRITE_BUFFER_SIZE.default
    write_only: bool = co.WRITE_ONLY.default
    merge_engine: MergeEngine = co.MERGE_ENGINE.default
    changelog_producer: ChangelogProducer = co.CHANGELOG_PRODUCER.default
    rowkind_field: str | None = co.ROWKIND_FIELD.default
    sequence_field: tuple[str, ...] | None = co.SEQUENCE_FIELD.default
    compaction_min_file_num: int = co.COMPACTION_MIN_FILE_NUM.default
    compaction_max_file_num: int | None = co.COMPACTION_MAX_FILE_NUM.default
    snapshot_num_retained_min: int = co.SNAPSHOT_NUM_RETAINED_MIN.default
    snapshot_num_retained_max: int = co.SNAPSHOT_NUM_RETAINED_MAX.default
    snapshot_time_retained_ms: int = co.SNAPSHOT_TIME_RETAINED.default
    snapshot_expire_limit: int = co.SNAPSHOT_EXPIRE_LIMIT.default
    snapshot_clean_empty_directories: bool = co.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES.default
    scan_snapshot_id: int | None = co.SCAN_SNAPSHOT_ID.default
    scan_timestamp_millis: int | None = co.SCAN_TIMESTAMP_MILLIS.default
    scan_tag_name: TagName | None = co.SCAN_TAG_NAME.default
    branch: BranchName = co.BRANCH.default
    scan_version: str | None = co.SCAN_VERSION.default
    scan_fallback_branch: BranchName | None = co.SCAN_FALLBACK_BRANCH.default
    incremental_between: tuple[int, int] | None = co.INCREMENTAL_BETWEEN.default
    split_target_size: int = co.SOURCE_SPLIT_TARGET_SIZE.default
    split_open_file_cost: int = co.SOURCE_SPLIT_OPEN_FILE_COST.default
    partition_default_name: str = co.PARTITION_DEFAULT_NAME.default
    stats_mode: StatsMode = co.METADATA_STATS_MODE.default
    deletion_vectors: bool = co.DELETION_VECTORS_ENABLED.default
    deletion_vectors_bitmap64: bool = co.DELETION_VECTORS_BITMAP64.default
    row_tracking: bool = co.ROW_TRACKING_ENABLED.default
    data_evolution: bool = co.DATA_EVOLUTION_ENABLED.default
    dynamic_partition_overwrite: bool = co.DYNAMIC_PARTITION_OVERWRITE.default
    dynamic_bucket_target_row_num: int = co.DYNAMIC_BUCKET_TARGET_ROW_NUM.default
    dynamic_bucket_max_buckets: int = co.DYNAMIC_BUCKET_MAX_BUCKETS.default
    postpone_default_bucket_num: int = co.POSTPONE_DEFAULT_BUCKET_NUM.default
    bucket_function: BucketFunctionType = co.BUCKET_FUNCTION_TYPE.default
    commit: CommitOptions = CommitOptions()

    def target_file_size_for(self, primary_key_table: bool) -> int:
        return target_file_size_for(self.target_file_size, primary_key_table)

    @staticmethod
    def from_options(options: Mapping[str, object], *, warn_unknown: bool = True) -> "TableOptions":
        """Parse and validate; raises InvalidOptionError on a wrong value, warns on an unknown key."""
        raw = {str(k): str(v) for k, v in options.items()}
        if warn_unknown:
            warn_unknown_keys(raw)
        check_one_scan_start(raw)
        retained_min = co.SNAPSHOT_NUM_RETAINED_MIN.get(raw)
        retained_max = co.SNAPSHOT_NUM_RETAINED_MAX.get(raw)
        check_retained_counts(retained_min, retained_max)
        return TableOptions(
            raw=raw,
            bucket=co.BUCKET.get(raw),
            bucket_key=co.BUCKET_KEY.get(raw),
            file_format=co.FILE_FORMAT.get(raw),
            file_compression=co.FILE_COMPRESSION.get(raw),
            write_formats=WriteFormats.from_options(raw),
            zstd_level=co.FILE_COMPRESSION_ZSTD_LEVEL.get(raw),
            target_file_size=co.TARGET_FILE_SIZE.get(raw),
            write_buffer_size=co.WRITE_BUFFER_SIZE.get(raw),
            write_only=co.WRITE_ONLY.get(raw),
            merge_engine=co.MERGE_ENGINE.get(raw),
            changelog_producer=co.CHANGELOG_PRODUCER.get(raw),
            rowkind_field=co.ROWKIND_FIELD.get(raw),
            sequence_field=co.SEQUENCE_FIELD.get(raw),
            compaction_min_file_num=co.COMPACTION_MIN_FILE_NUM.get(raw),
            compaction_max_file_num=co.COMPACTION_MAX_FILE_NUM.get(raw),
            snapshot_num_retained_min=retained_min,
            snapshot_num_retained_max=retained_max,
            snapshot_time_retained_ms=co.SNAPSHOT_TIME_RETAINED.get(raw),
            snapshot_expire_limit=co.SNAPSHOT_EXPIRE_LIMIT.get(raw),
            snapshot_clean_empty_directories=co.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES.get(raw),
            scan_snapshot_id=co.SCAN_SNAPSHOT_ID.get(raw),
            scan_timestamp_millis=co.SCAN_TIMESTAMP_MILLIS.get(raw),
            scan_tag_name=co.SCAN_TAG_NAME.get(raw),
            scan_version=co.SCAN_VERSION.get(raw),
            branch=co.BRANCH.get(raw),
            scan_fallback_branch=co.SCAN_FALLBACK_BRANCH.get(raw),
            incremental_between=co.INCREMENTAL_BETWEEN.get(raw),
            split_target_size=co.SOURCE_SPLIT_TARGET_SIZE.get(raw),
            split_open_file_cost=co.SOURCE_SPLIT_OPEN_FILE_COST.get(raw),
            partition_default_name=co.PARTITION_DEFAULT_NAME.get(raw),
            stats_mode=co.METADATA_STATS_MODE.get(raw),
            deletion_vectors=co.DELETION_VECTORS_ENABLED.get(raw),
            deletion_vectors_bitmap64=co.DELETION_VECTORS_BITMAP64.get(raw),
            row_tracking=co.ROW_TRACKING_ENABLED.get(raw),
            data_evolution=co.DATA_EVOLUTION_ENABLED.get(raw),
            dynamic_partition_overwrite=co.DYNAMIC_PARTITION_OVERWRITE.get(raw),
            dynamic_bucket_target_row_num=co.DYNAMIC_BUCKET_TARGET_ROW_NUM.get(raw),
            dynamic_bucket_max_buckets=co.DYNAMIC_BUCKET_MAX_BUCKETS.get(raw),
            postpone_default_bucket_num=co.POSTPONE_DEFAULT_BUCKET_NUM.get(raw),
            bucket_function=co.BUCKET_FUNCTION_TYPE.get(raw),
            commit=CommitOptions.from_options(raw),
        )

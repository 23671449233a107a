"""The table layer's view of a table's options (schema options merged with dynamic ones).

The keys are declared once in :mod:`impl.options.core_options` and parsed once per table view
into :class:`impl.options.parsed.ParsedOptions`; :class:`TableOptions` holds that object and
the views derived from it (commit, write formats, file indexes, and, for primary-key tables, the
merge tree through :func:`impl.store.schema.merge_tree_options`), adds the rules that relate
several options or that the table layer alone imposes, and warns about unknown keys: they are
kept and passed through, but a typo such as ``buckets`` would otherwise silently do nothing.
Wrong values raise :class:`InvalidOptionError` naming the key and the value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping

from impl.commit.options import CommitOptions
from impl.errors import InvalidOptionError
from impl.fileindex.options import FileIndexSpec
from impl.fs.names import BranchName, TagName
from impl.options import core_options as co
from impl.options.core_options import KNOWN_KEYS, is_known_key, warn_unknown_keys
from impl.options.parsed import ParsedOptions
from impl.options.values import BucketFunctionType, ChangelogProducer, MergeEngine, StatsMode, StatsModeKind
from impl.options.write_formats import WriteFormats

__all__ = [
    "TableOptions", "StatsMode", "StatsModeKind", "MergeEngine", "ChangelogProducer", "KNOWN_KEYS",
    "is_known_key", "warn_unknown_keys",
]


# ---------------------------------------------------------------------------- rules


def check_one_scan_start(options: Mapping[str, object]) -> None:
    """A read starts at one of a snapshot id, a time or a tag (checked before their values parse)."""
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
    return co.PRIMARY_KEY_TARGET_FILE_SIZE if primary_key_table else co.APPEND_TARGET_FILE_SIZE


# ---------------------------------------------------------------------------- view


@dataclass(frozen=True)
class TableOptions:
    """Parsed view of a table's options (schema options merged with dynamic ones).

    ``parsed`` is the one typed object the fields and the derived views (``commit``,
    ``write_formats``, :attr:`file_index`) were read from; a table core passes it on to the
    merge tree's view, so no key is parsed twice."""

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
    parsed: ParsedOptions = field(default_factory=lambda: ParsedOptions({}), repr=False, compare=False)

    @cached_property
    def file_index(self) -> FileIndexSpec:
        """The ``file-index.*`` options: parsed on first use (a scan or a write that needs them)."""
        return FileIndexSpec.from_parsed(self.parsed)

    def target_file_size_for(self, primary_key_table: bool) -> int:
        return target_file_size_for(self.target_file_size, primary_key_table)

    @staticmethod
    def from_options(options: Mapping[str, object], *, warn_unknown: bool = True) -> "TableOptions":
        """Parse and validate; raises InvalidOptionError on a wrong value, warns on an unknown key."""
        return TableOptions.from_parsed(ParsedOptions({str(k): str(v) for k, v in options.items()}),
                                        warn_unknown=warn_unknown)

    @staticmethod
    def from_parsed(parsed: ParsedOptions, *, warn_unknown: bool = True) -> "TableOptions":
        """The table view of ``parsed`` (see :meth:`from_options`)."""
        raw = parsed.raw
        if warn_unknown:
            warn_unknown_keys(raw)
        check_one_scan_start(raw)
        retained_min = parsed[co.SNAPSHOT_NUM_RETAINED_MIN]
        retained_max = parsed[co.SNAPSHOT_NUM_RETAINED_MAX]
        check_retained_counts(retained_min, retained_max)
        return TableOptions(
            raw=raw,
            bucket=parsed[co.BUCKET],
            bucket_key=parsed[co.BUCKET_KEY],
            file_format=parsed[co.FILE_FORMAT],
            file_compression=parsed[co.FILE_COMPRESSION],
            write_formats=WriteFormats.from_parsed(parsed),
            zstd_level=parsed[co.FILE_COMPRESSION_ZSTD_LEVEL],
            target_file_size=parsed[co.TARGET_FILE_SIZE],
            write_buffer_size=parsed[co.WRITE_BUFFER_SIZE],
            write_only=parsed[co.WRITE_ONLY],
            merge_engine=parsed[co.MERGE_ENGINE],
            changelog_producer=parsed[co.CHANGELOG_PRODUCER],
            rowkind_field=parsed[co.ROWKIND_FIELD],
            sequence_field=parsed[co.SEQUENCE_FIELD],
            compaction_min_file_num=parsed[co.COMPACTION_MIN_FILE_NUM],
            compaction_max_file_num=parsed[co.COMPACTION_MAX_FILE_NUM],
            snapshot_num_retained_min=retained_min,
            snapshot_num_retained_max=retained_max,
            snapshot_time_retained_ms=parsed[co.SNAPSHOT_TIME_RETAINED],
            snapshot_expire_limit=parsed[co.SNAPSHOT_EXPIRE_LIMIT],
            snapshot_clean_empty_directories=parsed[co.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES],
            scan_snapshot_id=parsed[co.SCAN_SNAPSHOT_ID],
            scan_timestamp_millis=parsed[co.SCAN_TIMESTAMP_MILLIS],
            scan_tag_name=parsed[co.SCAN_TAG_NAME],
            scan_version=parsed[co.SCAN_VERSION],
            branch=parsed[co.BRANCH],
            scan_fallback_branch=parsed[co.SCAN_FALLBACK_BRANCH],
            incremental_between=parsed[co.INCREMENTAL_BETWEEN],
            split_target_size=parsed[co.SOURCE_SPLIT_TARGET_SIZE],
            split_open_file_cost=parsed[co.SOURCE_SPLIT_OPEN_FILE_COST],
            partition_default_name=parsed[co.PARTITION_DEFAULT_NAME],
            stats_mode=parsed[co.METADATA_STATS_MODE],
            deletion_vectors=parsed[co.DELETION_VECTORS_ENABLED],
            deletion_vectors_bitmap64=parsed[co.DELETION_VECTORS_BITMAP64],
            row_tracking=parsed[co.ROW_TRACKING_ENABLED],
            data_evolution=parsed[co.DATA_EVOLUTION_ENABLED],
            dynamic_partition_overwrite=parsed[co.DYNAMIC_PARTITION_OVERWRITE],
            dynamic_bucket_target_row_num=parsed[co.DYNAMIC_BUCKET_TARGET_ROW_NUM],
            dynamic_bucket_max_buckets=parsed[co.DYNAMIC_BUCKET_MAX_BUCKETS],
            postpone_default_bucket_num=parsed[co.POSTPONE_DEFAULT_BUCKET_NUM],
            bucket_function=parsed[co.BUCKET_FUNCTION_TYPE],
            commit=CommitOptions.from_parsed(parsed),
            parsed=parsed,
        )

"""The commit path's view of the table options (retry backoff, manifest merging), Paimon's defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from impl.errors import InvalidOptionError
from impl.fs.paths import DEFAULT_LAYOUT, DataLayout, compression_extension
from impl.manifest.merger import MergeOptions
from impl.options import core_options as co
from impl.options.parsed import ParsedOptions


@dataclass(frozen=True)
class CommitOptions:
    """Retry and manifest-merge settings of one committer."""

    max_retries: int = co.COMMIT_MAX_RETRIES.default
    min_retry_wait_ms: int = co.COMMIT_MIN_RETRY_WAIT.default
    max_retry_wait_ms: int = co.COMMIT_MAX_RETRY_WAIT.default
    timeout_ms: int | None = co.COMMIT_TIMEOUT.default  # None: no limit, as in Paimon
    merge: MergeOptions = MergeOptions(
        target_file_size_bytes=co.MANIFEST_TARGET_FILE_SIZE.default,
        full_compaction_threshold_bytes=co.MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE.default,
        merge_min_count=co.MANIFEST_MERGE_MIN_COUNT.default,
    )
    # where a null or empty partition value's files live: recovery and abort find files by it
    partition_default_name: str = co.PARTITION_DEFAULT_NAME.default
    partition_legacy_name: bool = co.PARTITION_LEGACY_NAME.default
    # data-file.path-directory and the names of new data files (impl.fs.paths.DataLayout)
    layout: DataLayout = DEFAULT_LAYOUT
    # row-tracking.enabled: the commit assigns first row ids and nextRowId (impl.commit.row_ids)
    row_tracking: bool = co.ROW_TRACKING_ENABLED.default
    # data-evolution.enabled: column updates are checked (impl.commit.row_ids.check_column_updates)
    data_evolution: bool = co.DATA_EVOLUTION_ENABLED.default

    @staticmethod
    def from_options(options: Mapping[str, object]) -> "CommitOptions":
        """Read the commit options of an option map (see :meth:`from_parsed`)."""
        return CommitOptions.from_parsed(ParsedOptions.of(options))

    @staticmethod
    def from_parsed(options: ParsedOptions) -> "CommitOptions":
        """The commit view of a table's parsed options; InvalidOptionError on a malformed value
        or inconsistent waits."""
        parsed = CommitOptions(
            max_retries=options[co.COMMIT_MAX_RETRIES],
            min_retry_wait_ms=options[co.COMMIT_MIN_RETRY_WAIT],
            max_retry_wait_ms=options[co.COMMIT_MAX_RETRY_WAIT],
            timeout_ms=options[co.COMMIT_TIMEOUT],
            merge=MergeOptions(
                target_file_size_bytes=options[co.MANIFEST_TARGET_FILE_SIZE],
                full_compaction_threshold_bytes=options[co.MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE],
                merge_min_count=options[co.MANIFEST_MERGE_MIN_COUNT],
            ),
            partition_default_name=options[co.PARTITION_DEFAULT_NAME],
            partition_legacy_name=options[co.PARTITION_LEGACY_NAME],
            layout=data_layout(options),
            row_tracking=options[co.ROW_TRACKING_ENABLED],
            data_evolution=options[co.DATA_EVOLUTION_ENABLED],
        )
        check_retry_waits(parsed.min_retry_wait_ms, parsed.max_retry_wait_ms)
        return parsed


def check_retry_waits(min_retry_wait_ms: int, max_retry_wait_ms: int) -> None:
    """The backoff must not start above its own cap: a typo is more likely than intent."""
    if min_retry_wait_ms > max_retry_wait_ms:
        raise InvalidOptionError(
            f"option 'commit.min-retry-wait' ({min_retry_wait_ms} ms) is above "
            f"'commit.max-retry-wait' ({max_retry_wait_ms} ms)")


def data_layout(options: ParsedOptions | Mapping[str, object]) -> DataLayout:
    """The :class:`DataLayout` the options set (InvalidOptionError on a malformed value)."""
    options = ParsedOptions.of(options)
    infix = None
    if options[co.FILE_SUFFIX_INCLUDE_COMPRESSION]:
        # Paimon names by the file.compression text as set (DataFilePathFactory.compressFileExtension)
        infix = compression_extension(options.text(co.FILE_COMPRESSION))
    return DataLayout(options[co.DATA_FILE_PATH_DIRECTORY], options[co.DATA_FILE_PREFIX],
                      options[co.CHANGELOG_FILE_PREFIX], infix)

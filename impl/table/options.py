"""Table options (Paimon's CoreOptions subset this library reads), parsed and validated once.

Unknown keys are kept and passed through but trigger a ``warnings.warn`` (a typo such as
``buckets`` would otherwise silently do nothing). Wrong values raise
:class:`InvalidOptionError` naming the key and the value.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Mapping

from impl import options as opt
from impl.commit.options import CommitOptions
from impl.errors import InvalidOptionError

MiB = 1024 * 1024

# Keys read by some part of this library (table layer, commit, merge tree), or harmless
# metadata Paimon itself writes into schema options.
KNOWN_KEYS = frozenset({
    "bucket", "bucket-key", "file.format", "file.compression", "file.compression.zstd-level",
    "target-file-size", "write-buffer-size", "write-buffer-spillable", "write-buffer-spill.max-disk-size",
    "page-size", "write-only", "merge-engine", "changelog-producer", "rowkind.field", "sequence.field",
    "sequence.field.sort-order", "ignore-delete", "partial-update.ignore-delete", "first-row.ignore-delete",
    "deduplicate.ignore-delete", "partial-update.remove-record-on-delete",
    "num-sorted-run.compaction-trigger", "num-sorted-run.stop-trigger", "num-levels",
    "compaction.max-size-amplification-percent", "compaction.size-ratio", "compaction.min.file-num",
    "compaction.max.file-num", "compaction.optimization-interval", "full-compaction.delta-commits",
    "sort-spill-threshold", "local-sort.max-num-file-handles", "sort-engine",
    "snapshot.num-retained.min", "snapshot.num-retained.max", "snapshot.time-retained",
    "snapshot.expire.limit", "snapshot.clean-empty-directories",
    "commit.max-retries", "commit.min-retry-wait", "commit.max-retry-wait", "commit.timeout",
    "commit.force-compact", "commit.user-prefix",
    "manifest.target-file-size", "manifest.full-compaction-threshold-size", "manifest.merge-min-count",
    "manifest.format", "manifest.compression",
    "scan.snapshot-id", "scan.timestamp-millis", "scan.mode", "incremental-between",
    "incremental-between-scan-mode", "source.split.target-size", "source.split.open-file-cost",
    "partition.default-name", "metadata.stats-mode", "deletion-vectors.enabled", "path", "type",
    "owner", "comment", "read.batch-size", "write.batch-size", "file-index.read.enabled",
    "data-file.prefix", "changelog-file.prefix", "file.suffix.include.compression",
    "dynamic-bucket.target-row-num", "dynamic-bucket.initial-buckets", "row-tracking.enabled",
    "data-evolution.enabled", "dynamic-partition-overwrite", "aggregation.remove-record-on-delete", "lookup-wait",
})
_PREFIXES = ("fields.", "file.format.", "parquet.", "snapshot.", "changelog.", "lookup.", "file-index.")

_STATS_MODE = re.compile(r"^(none|counts|full|truncate\((\d+)\))$")
MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
CHANGELOG_PRODUCERS = ("none", "input", "full-compaction", "lookup")
COMPRESSIONS = ("zstd", "snappy", "gzip", "lz4", "brotli", "none", "uncompressed")


@dataclass(frozen=True)
class StatsMode:
    """``metadata.stats-mode``: none (no stats), counts (null counts), full, truncate(n) (strings cut to n chars)."""

    kind: str = "truncate"
    length: int = 16

    @staticmethod
    def parse(value: str) -> "StatsMode":
        m = _STATS_MODE.match(str(value).strip().lower())
        if not m:
            raise InvalidOptionError(
                f"option 'metadata.stats-mode': {value!r} is not one of none, counts, full, truncate(<n>)")
        if m.group(2) is not None:
            n = int(m.group(2))
            if n < 1:
                raise InvalidOptionError(f"option 'metadata.stats-mode': truncate length must be >= 1, got {n}")
            return StatsMode("truncate", n)
        return StatsMode(m.group(1), 0)


def _parse_choice(key: str, value: str, choices) -> str:
    v = str(value).strip().lower()
    if v not in choices:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not one of {', '.join(choices)}")
    return v


def _parse_name_list(key: str, value: str) -> tuple[str, ...]:
    names = tuple(s.strip() for s in str(value).split(",") if s.strip())
    if not names:
        raise InvalidOptionError(f"option {key!r}: {value!r} names no field")
    return names


def _parse_incremental(key: str, value: str) -> tuple[int, int]:
    parts = [p.strip() for p in str(value).split(",")]
    if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
        raise InvalidOptionError(f"option {key!r}: {value!r} is not '<start snapshot id>,<end snapshot id>'")
    a, b = int(parts[0]), int(parts[1])
    if a < 0 or b < a:
        raise InvalidOptionError(f"option {key!r}: need 0 <= start <= end, got {a},{b}")
    return a, b


def warn_unknown_keys(keys) -> None:
    """``warnings.warn`` naming the keys no part of this library reads."""
    unknown = sorted(k for k in keys if k not in KNOWN_KEYS and not k.startswith(_PREFIXES))
    if unknown:
        warnings.warn(f"unknown table options (ignored): {', '.join(unknown)}", UserWarning, stacklevel=4)


@dataclass(frozen=True)
class TableOptions:
    """Parsed view of a table's options (schema options merged with dynamic ones)."""

    raw: Mapping[str, str] = field(default_factory=dict)
    bucket: int = -1
    bucket_key: tuple[str, ...] | None = None
    file_compression: str = "zstd"
    zstd_level: int = 1
    target_file_size: int | None = None  # None: 128 mb for primary-key tables, 256 mb for append
    write_buffer_size: int = 256 * MiB
    write_only: bool = False
    merge_engine: str = "deduplicate"
    changelog_producer: str = "none"
    rowkind_field: str | None = None
    sequence_field: tuple[str, ...] | None = None
    compaction_min_file_num: int = 5
    compaction_max_file_num: int | None = None
    snapshot_num_retained_min: int = 10
    snapshot_num_retained_max: int = 2**31 - 1
    snapshot_time_retained_ms: int = 3_600_000
    snapshot_expire_limit: int = 10
    snapshot_clean_empty_directories: bool = False
    scan_snapshot_id: int | None = None
    scan_timestamp_millis: int | None = None
    incremental_between: tuple[int, int] | None = None
    split_target_size: int = 128 * MiB
    split_open_file_cost: int = 4 * MiB
    partition_default_name: str = "__DEFAULT_PARTITION__"
    stats_mode: StatsMode = StatsMode()
    deletion_vectors: bool = False
    dynamic_partition_overwrite: bool = True
    commit: CommitOptions = CommitOptions()

    def target_file_size_for(self, primary_key_table: bool) -> int:
        if self.target_file_size is not None:
            return self.target_file_size
        return (128 if primary_key_table else 256) * MiB

    @staticmethod
    def from_options(options: Mapping[str, str], *, warn_unknown: bool = True) -> "TableOptions":
        """Parse and validate; raises InvalidOptionError on a wrong value, warns on an unknown key."""
        raw = {str(k): str(v) for k, v in options.items()}
        if warn_unknown:
            warn_unknown_keys(raw)
        g = opt.get
        bucket = g(raw, "bucket", -1, opt.parse_int)
        if bucket == 0 or bucket < -1:
            if bucket == -2:
                raise InvalidOptionError("option 'bucket': -2 (postpone bucket mode) is not supported")
            raise InvalidOptionError(f"option 'bucket': {bucket} is invalid; use -1 or a bucket count >= 1")
        fmt = raw.get("file.format", "parquet").strip().lower()
        if fmt != "parquet":
            raise InvalidOptionError(f"option 'file.format': {raw['file.format']!r} is not supported (only parquet)")
        compression = _parse_choice("file.compression", raw.get("file.compression", "zstd"), COMPRESSIONS)
        if compression == "uncompressed":
            compression = "none"
        if "scan.snapshot-id" in raw and "scan.timestamp-millis" in raw:
            raise InvalidOptionError("options 'scan.snapshot-id' and 'scan.timestamp-millis' cannot both be set")
        target = g(raw, "target-file-size", None, opt.parse_memory_size)
        if target is not None and target < 1:
            raise InvalidOptionError(f"option 'target-file-size': {target} must be positive")
        min_keep = g(raw, "snapshot.num-retained.min", 10, opt.parse_int, minimum=1)
        max_keep = g(raw, "snapshot.num-retained.max", 2**31 - 1, opt.parse_int, minimum=1)
        if max_keep < min_keep:
            raise InvalidOptionError(
                f"option 'snapshot.num-retained.max' ({max_keep}) is below 'snapshot.num-retained.min' ({min_keep})")
        commit = CommitOptions.from_options(raw)
        deletion_vectors = g(raw, "deletion-vectors.enabled", False, opt.parse_bool)
        return TableOptions(
            raw=raw,
            bucket=bucket,
            bucket_key=g(raw, "bucket-key", None, _parse_name_list),
            file_compression=compression,
            zstd_level=g(raw, "file.compression.zstd-level", 1, opt.parse_int, minimum=1),
            target_file_size=target,
            write_buffer_size=g(raw, "write-buffer-size", 256 * MiB, opt.parse_memory_size),
            write_only=g(raw, "write-only", False, opt.parse_bool),
            merge_engine=_parse_choice("merge-engine", raw.get("merge-engine", "deduplicate"), MERGE_ENGINES),
            changelog_producer=_parse_choice("changelog-producer", raw.get("changelog-producer", "none"),
                                             CHANGELOG_PRODUCERS),
            rowkind_field=raw.get("rowkind.field") or None,
            sequence_field=g(raw, "sequence.field", None, _parse_name_list),
            compaction_min_file_num=g(raw, "compaction.min.file-num", 5, opt.parse_int, minimum=1),
            compaction_max_file_num=g(raw, "compaction.max.file-num", None, opt.parse_int, minimum=2),
            snapshot_num_retained_min=min_keep,
            snapshot_num_retained_max=max_keep,
            snapshot_time_retained_ms=g(raw, "snapshot.time-retained", 3_600_000, opt.parse_duration_millis),
            snapshot_expire_limit=g(raw, "snapshot.expire.limit", 10, opt.parse_int, minimum=1),
            snapshot_clean_empty_directories=g(raw, "snapshot.clean-empty-directories", False, opt.parse_bool),
            scan_snapshot_id=g(raw, "scan.snapshot-id", None, opt.parse_int, minimum=1),
            scan_timestamp_millis=g(raw, "scan.timestamp-millis", None, opt.parse_int),
            incremental_between=g(raw, "incremental-between", None, _parse_incremental),
            split_target_size=g(raw, "source.split.target-size", 128 * MiB, opt.parse_memory_size),
            split_open_file_cost=g(raw, "source.split.open-file-cost", 4 * MiB, opt.parse_memory_size),
            partition_default_name=raw.get("partition.default-name", "__DEFAULT_PARTITION__"),
            stats_mode=StatsMode.parse(raw.get("metadata.stats-mode", "truncate(16)")),
            deletion_vectors=deletion_vectors,
            dynamic_partition_overwrite=g(raw, "dynamic-partition-overwrite", True, opt.parse_bool),
            commit=commit,
        )

"""Options of the commit path, with Paimon's defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from impl import options as opt
from impl.errors import InvalidOptionError
from impl.manifest.merger import MergeOptions


@dataclass(frozen=True)
class CommitOptions:
    max_retries: int = 10
    min_retry_wait_ms: int = 10
    max_retry_wait_ms: int = 10_000
    timeout_ms: int | None = None  # no limit, as in Paimon
    merge: MergeOptions = MergeOptions()

    @staticmethod
    def from_options(options: Mapping[str, str]) -> "CommitOptions":
        d = CommitOptions()
        parsed = CommitOptions(
            max_retries=opt.get(options, "commit.max-retries", d.max_retries, opt.parse_int, minimum=0),
            min_retry_wait_ms=opt.get(options, "commit.min-retry-wait", d.min_retry_wait_ms, opt.parse_duration_millis),
            max_retry_wait_ms=opt.get(options, "commit.max-retry-wait", d.max_retry_wait_ms, opt.parse_duration_millis),
            timeout_ms=opt.get(options, "commit.timeout", d.timeout_ms, opt.parse_duration_millis),
            merge=MergeOptions(
                target_file_size_bytes=opt.get(options, "manifest.target-file-size",
                                               d.merge.target_file_size_bytes, opt.parse_memory_size),
                full_compaction_threshold_bytes=opt.get(options, "manifest.full-compaction-threshold-size",
                                                        d.merge.full_compaction_threshold_bytes, opt.parse_memory_size),
                merge_min_count=opt.get(options, "manifest.merge-min-count", d.merge.merge_min_count,
                                        opt.parse_int, minimum=1),
            ),
        )
        if parsed.min_retry_wait_ms > parsed.max_retry_wait_ms:
            # backoff would start above its own cap; a typo is more likely than intent
            raise InvalidOptionError(
                f"option 'commit.min-retry-wait' ({parsed.min_retry_wait_ms} ms) is above "
                f"'commit.max-retry-wait' ({parsed.max_retry_wait_ms} ms)")
        return parsed

"""The retry loop: one snapshot's tries until one publishes, with exponential backoff and jitter.

A try either publishes (its snapshot id) or loses the race for the id (None: another writer
took it, or the base expired under it); it raises for anything else. The loop gives up after
``max_retries`` retries or once ``timeout_ms`` has passed: with
:class:`CommitOutcomeUnknownError` if the last publish call's outcome is still unknown
(nothing may be deleted then), else :class:`CommitRetriesExhaustedError`.

``monotonic``, ``sleep`` and ``jitter`` are the committer's seams for the deterministic
simulation, passed through unchanged.
"""

from __future__ import annotations

import random
from typing import Callable

from impl.commit.attempt import Attempt
from impl.commit.options import CommitOptions
from impl.errors import CommitOutcomeUnknownError, CommitRetriesExhaustedError


def retry_wait_seconds(retry: int, options: CommitOptions, jitter: random.Random | None) -> float:
    """The wait before retry number ``retry`` (0 first): the minimum doubled per retry, capped
    at the maximum, plus up to a fifth of it (at least 1 ms) at random, so writers that lost
    the same race do not all come back at once."""
    wait_ms = min(options.min_retry_wait_ms * (2 ** retry), options.max_retry_wait_ms)
    source = jitter if jitter is not None else random
    wait_ms += source.uniform(0, max(1.0, wait_ms * 0.2))
    return wait_ms / 1000.0


def publish_with_retries(attempt: Attempt, try_once: Callable[[Attempt, bool], int | None], *,
                         options: CommitOptions, table_name: str, commit_user: str,
                         monotonic: Callable[[], float], sleep: Callable[[float], None],
                         jitter: random.Random | None) -> int:
    """Run ``try_once(attempt, first_try)`` until it publishes; the published snapshot id.
    Tries and lost races are counted on ``attempt.stats``."""
    started = monotonic()
    retries = 0
    stats = attempt.stats
    first_try = True
    while True:
        stats.attempts += 1
        sid = try_once(attempt, first_try)
        first_try = False
        if sid is not None:
            stats.record_published(sid, attempt.kind)
            return sid
        stats.lost_races += 1
        elapsed_ms = (monotonic() - started) * 1000
        timed_out = options.timeout_ms is not None and elapsed_ms > options.timeout_ms
        if retries >= options.max_retries or timed_out:
            if attempt.unknown.outcome_unknown:
                raise CommitOutcomeUnknownError(
                    f"{attempt.describe(table_name)} by {commit_user}: publishing snapshot "
                    f"{attempt.unknown.unknown_snapshot_id} failed and its outcome is still unknown; nothing "
                    f"was deleted. Commit the same identifier again on this committer, or recover through "
                    f"filter_committed: either completes it once")
            raise CommitRetriesExhaustedError(
                f"{attempt.describe(table_name)} gave up after {retries} retries in {elapsed_ms:.0f} ms: "
                f"other writers kept taking the next snapshot id")
        sleep(retry_wait_seconds(retries, options, jitter))
        retries += 1

"""The pure rules of impl.commit.outcome and impl.commit.retry (the I/O around them is covered
by the unknown-outcome tests of test_file_store_commit, test_commit_units and tests/explore)."""

import random

import pytest

from impl.commit.options import CommitOptions
from impl.commit.outcome import Outcome, outcome_without_successor, successor_outcome
from impl.commit.retry import retry_wait_seconds


@pytest.mark.parametrize("added, live_after, expected", [
    ({"a", "b"}, {"a", "b", "c"}, Outcome.LANDED),  # the successor was built on ours
    ({"a", "b"}, {"c"}, Outcome.NOT_LANDED),  # none of ours: built on another snapshot
    ({"a", "b"}, {"a", "c"}, Outcome.UNKNOWN),  # some of ours (a later commit deleted one): no read tells
])
def test_the_successor_decides_by_our_added_files(added, live_after, expected):
    assert successor_outcome(added, live_after) is expected


@pytest.mark.parametrize("latest_id, expected", [
    (7, Outcome.LANDED),  # ours is the latest
    (9, Outcome.NOT_LANDED),  # a snapshot above ours, none right after it: ours re-took an expired id
    (8, Outcome.UNKNOWN),  # its successor appeared meanwhile
    (None, Outcome.UNKNOWN),
])
def test_without_a_successor_the_latest_decides(latest_id, expected):
    assert outcome_without_successor(latest_id, 7) is expected


def test_retry_wait_uses_the_given_jitter_source():
    options = CommitOptions(max_retries=4, min_retry_wait_ms=10, max_retry_wait_ms=50)
    a, b = random.Random(1), random.Random(1)
    waits = [retry_wait_seconds(r, options, a) for r in range(4)]
    assert waits == [retry_wait_seconds(r, options, b) for r in range(4)]
    assert all(base / 1000 <= w <= base * 1.2 / 1000 for w, base in zip(waits, [10, 20, 40, 50], strict=True))

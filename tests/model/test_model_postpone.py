"""The model's postpone bucket rules: bucket counts, what one compaction may publish, the replay."""

from __future__ import annotations

import pytest

from model import (
    ADD,
    DELETE,
    DELETE_ROW,
    INSERT,
    POSTPONE_BUCKET,
    Entry,
    FileFacts,
    check_postpone_compaction,
    identity,
    postpone_bucket_count,
    replay_postponed,
)


def postponed(p: str, name: str) -> FileFacts:
    return FileFacts(p, POSTPONE_BUCKET, POSTPONE_BUCKET, 0, name)


def real(p: str, bucket: int, total: int, name: str) -> FileFacts:
    return FileFacts(p, bucket, total, 0, name)


def test_bucket_count_is_the_partitions_else_the_default():
    live = [postponed("a", "x"), real("b", 1, 4, "y")]
    assert postpone_bucket_count(live, "a", 2) == 2
    assert postpone_bucket_count(live, "b", 2) == 4


def test_one_compaction_moves_every_postponed_file_of_a_partition():
    before = {identity(f): f for f in (postponed("a", "p1"), postponed("a", "p2"), real("b", 0, 3, "r"),
                                        postponed("b", "p3"))}
    good = [Entry(DELETE, postponed("a", "p1")), Entry(DELETE, postponed("a", "p2")),
            Entry(ADD, real("a", 1, 2, "n1")), Entry(DELETE, postponed("b", "p3")), Entry(DELETE, real("b", 0, 3, "r")),
            Entry(ADD, real("b", 0, 3, "n2"))]
    check_postpone_compaction(before, good, 2)
    bad = {
        "left behind": good[1:],
        "wrong count": [*good[:2], Entry(ADD, real("a", 1, 3, "n1"))],
        "bucket out of range": [*good[:2], Entry(ADD, real("a", 2, 2, "n1"))],
        "existing count ignored": [Entry(DELETE, postponed("b", "p3")), Entry(ADD, real("b", 0, 2, "n2"))],
        "postponed added": [*good[:2], Entry(ADD, postponed("a", "p4"))],
        "untouched partition": [*good[:2], Entry(ADD, real("c", 0, 2, "n3"))],
    }
    for why, changes in bad.items():
        with pytest.raises(AssertionError):
            check_postpone_compaction(before, changes, 2)
            pytest.fail(why)


def test_replayed_rows_win_over_the_bucket_and_keep_their_order():
    bucket = [(1, 7, INSERT, "old1"), (2, 3, INSERT, "old2")]
    after = replay_postponed(bucket, [(1, INSERT, "new1"), (3, INSERT, "x"), (3, DELETE_ROW, None), (2, INSERT, "n2")])
    assert after == {1: "new1", 2: "n2"}
    assert replay_postponed([], [(5, DELETE_ROW, None), (5, INSERT, "y")]) == {5: "y"}

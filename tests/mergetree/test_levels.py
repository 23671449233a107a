"""Levels bookkeeping, interval partitioning and compaction planning (pure, no I/O)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.data.types import BIGINT
from impl.datafile.meta import DataFileMeta
from impl.mergetree import KeyCodec, Levels, LevelsError, interval_partition, plan_compaction
from impl.mergetree.compact_task import Rewrite, Upgrade

CODEC = KeyCodec([BIGINT(False)])
_n = itertools.count()


def f(lo, hi, level=0, size=100, seq=(0, 0), deletes=0, name=None):
    return DataFileMeta(name or f"f{next(_n)}", size, 1, CODEC.encode([lo]), CODEC.encode([hi]),
                        min_sequence_number=seq[0], max_sequence_number=seq[1], level=level,
                        delete_row_count=deletes)


def keys(run):
    return [(CODEC.sort_key(x.min_key)[0][1], CODEC.sort_key(x.max_key)[0][1]) for x in run.files]


def test_level0_newest_first_and_sorted_runs():
    a, b, c = f(0, 5, seq=(0, 3)), f(0, 5, seq=(4, 9)), f(0, 5, seq=(10, 12))
    hi = [f(10, 20, level=3), f(0, 9, level=3)]
    levels = Levels(CODEC, [a, hi[0], b, hi[1]], num_levels=5)
    levels.add_level0_file(c)
    runs = levels.level_sorted_runs()
    assert [r.level for r in runs] == [0, 0, 0, 3]
    assert [r.run.files[0] for r in runs[:3]] == [c, b, a]
    assert keys(runs[3].run) == [(0, 9), (10, 20)]
    assert levels.number_of_sorted_runs() == 4
    assert levels.non_empty_highest_level() == 3


def test_empty_levels_and_widening_for_restored_deep_files():
    levels = Levels(CODEC, [], num_levels=3)
    assert levels.non_empty_highest_level() == -1 and levels.number_of_sorted_runs() == 0
    levels = Levels(CODEC, [f(0, 1, level=7)], num_levels=3)
    assert levels.num_levels == 8 and levels.max_level == 7


def test_overlapping_files_on_a_level_are_rejected():
    with pytest.raises(LevelsError, match="overlap"):
        Levels(CODEC, [f(0, 5, level=1), f(5, 9, level=1)], num_levels=3)


def test_update_moves_files_between_levels():
    a, b = f(0, 5, seq=(0, 1)), f(3, 9, seq=(2, 3))
    old = f(20, 30, level=2)
    levels = Levels(CODEC, [a, b, old], num_levels=4)
    out = [f(0, 4, level=2), f(5, 9, level=2)]
    levels.update([a, b], out)
    assert levels.level0 == ()
    assert keys(levels.run_of_level(2)) == [(0, 4), (5, 9), (20, 30)]
    upgraded = old.upgrade(3)
    levels.update([old], [upgraded])
    assert keys(levels.run_of_level(3)) == [(20, 30)]
    assert len(levels.run_of_level(2).files) == 2
    with pytest.raises(LevelsError):
        levels.update([], [f(4, 6, level=2)])


def test_interval_partition_sections_and_runs():
    files = [f(0, 10), f(5, 15), f(11, 20), f(21, 25), f(30, 40), f(30, 35)]
    sections = interval_partition(files, CODEC)
    assert [[keys(r) for r in sec] for sec in sections] == [
        [[(0, 10), (11, 20)], [(5, 15)]],
        [[(21, 25)]],
        [[(30, 35)], [(30, 40)]],
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 10)), min_size=1, max_size=15))
def test_interval_partition_properties(spans):
    files = [f(lo, lo + w) for lo, w in spans]
    sections = interval_partition(files, CODEC)
    flat = [x for sec in sections for run in sec for x in run.files]
    assert sorted(x.file_name for x in flat) == sorted(x.file_name for x in files)
    prev_max = None
    for sec in sections:
        lo = min(CODEC.sort_key(x.min_key) for run in sec for x in run.files)
        hi = max(CODEC.sort_key(x.max_key) for run in sec for x in run.files)
        if prev_max is not None:
            assert lo > prev_max  # sections are key-disjoint and ordered
        prev_max = hi
        for run in sec:  # every run is a non-overlapping sorted run
            for a, b in itertools.pairwise(run.files):
                assert CODEC.sort_key(a.max_key) < CODEC.sort_key(b.min_key)


def test_plan_upgrades_big_files_and_rewrites_overlaps_and_small_files():
    big1 = f(0, 9, size=1000)
    small = f(10, 12, size=10)
    o1, o2 = f(20, 30, size=1000), f(25, 35, size=1000)
    big2 = f(40, 50, level=1, size=1000)
    plan = plan_compaction([big1, small, o1, o2, big2], output_level=2, max_level=4, min_file_size=500, codec=CODEC)
    assert plan[0] == Upgrade(big1)
    assert isinstance(plan[1], Rewrite)
    assert {x.file_name for x in plan[1].files} == {small.file_name, o1.file_name, o2.file_name}
    assert plan[2] == Upgrade(big2)
    assert len(plan) == 3


def test_plan_single_small_file_is_upgraded_not_rewritten():
    small = f(0, 1, size=1)
    assert plan_compaction([small], 1, 4, 500, CODEC) == [Upgrade(small)]
    # already on the output level: nothing to do
    assert plan_compaction([f(0, 1, level=1, size=1)], 1, 4, 500, CODEC) == []


def test_plan_file_with_deletes_is_rewritten_into_the_max_level():
    with_deletes = f(0, 9, size=1000, deletes=3)
    clean = f(10, 19, size=1000)
    plan = plan_compaction([with_deletes, clean], output_level=4, max_level=4, min_file_size=500, codec=CODEC)
    assert plan == [Rewrite(((plan[0].sections[0][0],),)), Upgrade(clean)]
    assert plan[0].files == (with_deletes,)
    # below the max level the same file is just upgraded
    assert plan_compaction([with_deletes], 3, 4, 500, CODEC) == [Upgrade(with_deletes)]

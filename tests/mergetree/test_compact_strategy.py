"""Universal compaction picks (Paimon's rules), as pure functions."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.datafile.meta import DataFileMeta
from impl.mergetree import LevelSortedRun, SortedRun, UniversalCompaction, pick_full_compaction
from impl.mergetree.compact_strategy import is_useful

_names = itertools.count()


def runs_of(spec):
    """[(level, size), ...] -> level-sorted runs of one file each."""
    return [LevelSortedRun(lvl, SortedRun((DataFileMeta(f"f{next(_names)}", size, 1, level=lvl),)))
            for lvl, size in spec]


def pick(spec, num_levels=5, trigger=3, amp=200, ratio=1):
    unit = UniversalCompaction(amp, ratio, trigger).pick(num_levels, runs_of(spec))
    return None if unit is None else (unit.run_count, unit.output_level)


@pytest.mark.parametrize("spec,expected", [
    # fewer runs than the trigger: nothing, whatever the sizes
    ([(0, 100), (0, 1)], None),
    # size amplification: 11+10 > 2 * 10 -> everything into the max level
    ([(0, 11), (0, 10), (4, 10)], (3, 4)),
    # exactly 200%: not above -> falls through to size ratio (10 * 1.01 >= 10, 20 * 1.01 >= 10)
    ([(0, 10), (0, 10), (4, 10)], (3, 4)),
    # size ratio picks two runs; next run on level 2 -> output level 1
    ([(0, 1), (0, 1), (2, 10)], (2, 1)),
    # size ratio would output to level 0: extended through the level-1 run, which is the last -> max level
    ([(0, 1), (0, 1), (1, 10)], (3, 4)),
    # ... and when runs remain after it, the output is that run's level
    ([(0, 1), (0, 1), (1, 10), (3, 100)], (3, 1)),
    # equal sizes pass the 1% size ratio; stops before the much larger level-4 run
    ([(0, 5), (0, 5), (0, 10), (4, 100)], (3, 3)),
])
def test_pick_cases(spec, expected):
    assert pick(spec) == expected


def test_size_ratio_stops_at_a_run_more_than_ratio_percent_bigger():
    # trigger 4: four runs allow size ratio, but are not more than the trigger (no forced pick)
    assert pick([(0, 100), (0, 102), (3, 1000), (4, 10000)], trigger=4) is None
    assert pick([(0, 100), (0, 101), (3, 1000), (4, 10000)], trigger=4) == (2, 2)
    # size ratio (and amplification) need at least `trigger` runs
    assert pick([(0, 100), (0, 100), (4, 100000)], trigger=4) is None


def test_size_ratio_option_widens_the_pick():
    spec = [(0, 100), (0, 150), (3, 10000), (4, 100000)]
    assert pick(spec, trigger=4) is None
    assert pick(spec, trigger=4, ratio=50) == (2, 2)


def test_file_count_rule_forces_the_newest_runs():
    # 4 runs > trigger 3: sizes grow too fast for size ratio and amplification is small,
    # so the newest 4 - 3 + 1 = 2 runs are forced, then extended by size ratio (not here).
    spec = [(0, 1), (1, 100), (2, 1000), (4, 100000)]
    assert pick(spec) == (2, 1)
    # runs == trigger: no forcing
    assert pick(spec[1:]) is None


def test_output_level_skips_level0_to_next_nonzero_level_in_file_count_rule():
    spec = [(0, 1), (0, 100), (0, 10000), (0, 1000000), (3, 100000000)]
    # forced 5 - 3 + 1 = 3 runs; next is level 0 -> extend to the level-3 run, which is last -> max
    assert pick(spec) == (5, 4)


def test_full_compaction():
    assert pick_full_compaction(5, []) is None
    assert pick_full_compaction(5, runs_of([(4, 10)])) is None
    unit = pick_full_compaction(5, runs_of([(2, 10)]))
    assert unit.output_level == 4 and unit.run_count == 1 and is_useful(unit)
    unit = pick_full_compaction(5, runs_of([(0, 1), (0, 1), (4, 10)]))
    assert (unit.run_count, unit.output_level) == (3, 4)


def test_is_useful():
    assert not is_useful(None)
    [run] = runs_of([(2, 1)])
    from impl.mergetree import CompactUnit
    assert not is_useful(CompactUnit(2, (run,)))
    assert is_useful(CompactUnit(3, (run,)))


@st.composite
def level_runs(draw):
    num_levels = draw(st.integers(2, 7))
    level0 = draw(st.lists(st.integers(1, 1000), max_size=8))
    higher = draw(st.lists(st.tuples(st.integers(1, num_levels - 1), st.integers(1, 100000)), max_size=num_levels))
    levels = {}
    for lvl, size in higher:
        levels[lvl] = size
    spec = [(0, s) for s in level0] + sorted(levels.items())
    return num_levels, runs_of(spec)


@settings(max_examples=300, deadline=None)
@given(lr=level_runs(), trigger=st.integers(1, 6), amp=st.integers(0, 400), ratio=st.integers(0, 100))
def test_pick_properties(lr, trigger, amp, ratio):
    num_levels, runs = lr
    unit = UniversalCompaction(amp, ratio, trigger).pick(num_levels, runs)
    if len(runs) < trigger:
        assert unit is None
    if len(runs) > trigger:
        assert unit is not None  # the file-count rule always picks
    if unit is None:
        return
    k = unit.run_count
    assert 1 <= k <= len(runs)
    assert list(unit.runs) == runs[:k]  # a prefix, newest first
    assert unit.output_level != 0  # never level 0
    assert unit.output_level <= num_levels - 1
    assert unit.output_level >= max(r.level for r in unit.runs)
    if k == len(runs):
        assert unit.output_level == num_levels - 1
    else:
        # the output level is free: the next run not picked sits strictly above it
        assert runs[k].level > unit.output_level


# ------------------------------------------------------------------------------ strategy + plan + levels, no I/O


def _in_memory_lsm_case(batches, trigger, num_levels, min_file_size, split):
    import pyarrow as pa
    from mergetree_helpers import make_schema

    from impl.data.types import BIGINT
    from impl.mergetree import KeyCodec, KVLayout, Levels, MergeSpec, MergeTreeOptions, merge_kv, plan_compaction
    from impl.mergetree.compact_task import Upgrade

    schema = make_schema()
    layout = KVLayout(schema)
    spec = MergeSpec.from_schema(schema, MergeTreeOptions.from_options({}))
    codec = KeyCodec([BIGINT(False)])
    levels = Levels(codec, [], num_levels)
    strategy = UniversalCompaction(200, 1, trigger)
    store: dict[str, pa.Table] = {}
    names = itertools.count()
    reference: dict = {}
    seq = 0

    def new_files(merged, level):
        """Store ``merged`` (sorted, one row per key) as files of ``split`` rows; their metas."""
        metas = []
        for start in range(0, merged.num_rows, split):
            part = merged.slice(start, split)
            ids = part.column("id").to_pylist()
            kinds = part.column("_VALUE_KIND").to_pylist()
            seqs = part.column("_SEQUENCE_NUMBER").to_pylist()
            name = f"f{next(names)}"
            store[name] = part
            metas.append(DataFileMeta(name, 10 * part.num_rows, part.num_rows, codec.encode([ids[0]]),
                                      codec.encode([ids[-1]]), min_sequence_number=min(seqs),
                                      max_sequence_number=max(seqs), level=level,
                                      delete_row_count=sum(k in (1, 3) for k in kinds)))
        return metas

    def read_all():
        files = levels.all_files()
        if not files:
            return {}
        out = merge_kv(pa.concat_tables([store[f.file_name] for f in files]), spec, drop_delete=True)
        return dict(zip(out.column("id").to_pylist(), out.column("v").to_pylist(), strict=True))

    for batch in batches:
        ids = [k for k, _ in batch]
        kinds = [d for _, d in batch]
        vals = [float(seq + i) for i in range(len(batch))]
        user = pa.table({"id": pa.array(ids, pa.int64()), "k": pa.nulls(len(ids), pa.string()),
                         "v": pa.array(vals), "ts": pa.array([0] * len(ids), pa.int64())})
        kv = layout.to_kv(user, pa.array(kinds, pa.int8()), seq)
        seq += len(batch)
        for i, d, v in zip(ids, kinds, vals, strict=True):
            if d == 3:
                reference.pop(i, None)
            else:
                reference[i] = v
        for meta in new_files(merge_kv(kv, spec, drop_delete=False), 0):
            levels.add_level0_file(meta)
        assert read_all() == reference

        unit = strategy.pick(levels.num_levels, levels.level_sorted_runs())
        if unit is None or not (len(unit.files) > 1 or unit.files[0].level != unit.output_level):
            continue
        assert unit.output_level > 0
        drop = unit.output_level >= levels.non_empty_highest_level()
        before, after = [], []
        for step in plan_compaction(unit.files, unit.output_level, levels.max_level, min_file_size, codec):
            if isinstance(step, Upgrade):
                before.append(step.file)
                upgraded = step.file.upgrade(unit.output_level)
                after.append(upgraded)
            else:
                before.extend(step.files)
                merged = merge_kv(pa.concat_tables([store[f.file_name] for f in step.files]), spec, drop)
                after.extend(new_files(merged, unit.output_level))
        assert {f.file_name for f in before} <= {f.file_name for f in unit.files}
        levels.update(before, after)  # raises if a level >= 1 would overlap
        assert read_all() == reference  # compaction never changes the merged contents
        if drop and levels.non_empty_highest_level() >= 0:
            top = levels.run_of_level(levels.non_empty_highest_level())
            assert all(f.delete_row_count == 0 for f in top.files if f.level == levels.max_level)


@settings(max_examples=80, deadline=None)
@given(batches=st.lists(st.lists(st.tuples(st.integers(0, 30), st.sampled_from([0, 0, 2, 3])), min_size=1,
                                 max_size=25), min_size=1, max_size=14),
       trigger=st.integers(1, 4), num_levels=st.integers(2, 5), min_file_size=st.sampled_from([0, 30, 1000]),
       split=st.integers(2, 12))
def test_compaction_never_changes_the_merged_contents(batches, trigger, num_levels, min_file_size, split):
    _in_memory_lsm_case(batches, trigger, num_levels, min_file_size, split)

"""The one statistics rule (impl.datafile.stats): truncation bounds, modes, columns without stats."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from impl.data.binary_row import EMPTY_ROW, decode_row
from impl.data.types import BIGINT, STRING, TIMESTAMP, parse_type
from impl.datafile.meta import SimpleStats
from impl.datafile.stats import (
    DEFAULT_STATS_MODE,
    KEY_STATS_MODE,
    StatsCollector,
    collect_stats,
    truncate_max,
    truncate_min,
)
from impl.table import TableOptions


def mode(text: str):
    """The parsed ``metadata.stats-mode`` option, as the table layer hands it to the writers."""
    return TableOptions.from_options({"metadata.stats-mode": text}).stats_mode


def test_default_and_key_modes_are_paimons():
    assert (DEFAULT_STATS_MODE.kind, DEFAULT_STATS_MODE.length) == ("truncate", 16)
    assert (KEY_STATS_MODE.kind, KEY_STATS_MODE.length) == ("truncate", 128)
    default = TableOptions.from_options({}).stats_mode
    assert (default.kind, default.length) == (DEFAULT_STATS_MODE.kind, DEFAULT_STATS_MODE.length)


def test_truncate_max_increments_the_last_character_that_can_be():
    assert truncate_max("abcdef", 3) == "abd"
    assert truncate_max("ab\U0010ffffz", 3) == "ac"  # the max code point cannot grow: dropped
    assert truncate_max("a\ud7ffz", 2) == "a\ue000"  # surrogates skipped
    assert truncate_max("\U0010ffff" * 3, 2) is None  # no upper bound of that length
    assert truncate_max("abc", 3) == "abc" and truncate_max(7, 1) == 7
    assert truncate_min("abcdef", 3) == "abc" and truncate_min(b"abcdef", 3) == b"abcdef"


@given(st.text(min_size=1, max_size=12), st.integers(1, 6))
def test_truncated_bounds_enclose_the_value(value, length):
    lo, hi = truncate_min(value, length), truncate_max(value, length)
    assert len(lo) <= length and lo <= value
    if hi is not None:
        assert len(hi) <= length and hi >= value


@pytest.mark.parametrize("option, mins, maxs, nulls", [
    ("counts", (None, None), (None, None), (1, 0)),
    ("full", (1, "abcdefgh"), (3, "abcdefgz"), (1, 0)),
    ("truncate(4)", (1, "abcd"), (3, "abce"), (1, 0)),
])
def test_modes_over_several_batches(option, mins, maxs, nulls):
    types = [BIGINT(), STRING()]
    c = StatsCollector(["n", "s"], types, mode(option))
    c.update(pa.table({"n": pa.array([3, None], pa.int64()), "s": ["abcdefgz", "abcdefgh"]}))
    c.update(pa.record_batch({"n": pa.array([1], pa.int64()), "s": ["abcdefgy"]}))
    stats, cols = c.result()
    assert cols is None
    assert decode_row(stats.min_values, types) == mins
    assert decode_row(stats.max_values, types) == maxs
    assert stats.null_counts == nulls


def test_mode_none_writes_the_shape_paimon_java_writes():
    """metadata.stats-mode = none: value stats (the dense store) cover no column -- empty rows,
    an empty (never null) null-count array, _VALUE_STATS_COLS = [] -- as Paimon Java 1.4.2 writes
    them; Java failed on a null null-count array (NullPointerException in InternalArray.size())."""
    types = [BIGINT(), STRING()]
    c = StatsCollector(["n", "s"], types, mode("none"))
    c.update(pa.table({"n": pa.array([3, None], pa.int64()), "s": ["abcdefgz", "abcdefgh"]}))
    stats, cols = c.result()
    assert cols == ()
    assert stats == SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
    assert stats.to_avro() == {"_MIN_VALUES": b"\0" * 12, "_MAX_VALUES": b"\0" * 12, "_NULL_COUNTS": []}
    # not dense (key stats): one null min / max and a null count per column, as
    # SimpleStatsConverter.toBinary gives for SimpleColStats.NONE
    keys, key_cols = collect_stats(pa.table({"n": pa.array([1], pa.int64()), "s": ["a"]}), ["n", "s"], types,
                                   mode("none"), dense=False)
    assert key_cols is None and keys.null_counts == (None, None)
    assert decode_row(keys.min_values, types) == (None, None) == decode_row(keys.max_values, types)


def test_columns_without_stats_left_out_of_value_stats_kept_in_key_stats():
    types = [BIGINT(), parse_type("ARRAY<INT>"), TIMESTAMP(9)]
    data = pa.table({"a": pa.array([2, 1], pa.int64()), "b": pa.array([[1], None], pa.list_(pa.int32())),
                     "c": pa.array([dt.datetime(2024, 1, 1)] * 2, pa.timestamp("ns"))})
    values, cols = collect_stats(data, ["a", "b", "c"], types, mode("full"))
    assert cols == ("a",)
    assert decode_row(values.min_values, [BIGINT()]) == (1,) and values.null_counts == (0,)
    keys, key_cols = collect_stats(data, ["a", "b", "c"], types, KEY_STATS_MODE, dense=False)
    assert key_cols is None
    assert decode_row(keys.min_values, types) == (1, None, None) and keys.null_counts == (0, 1, 0)


def test_names_and_types_must_pair_up():
    with pytest.raises(ValueError):
        StatsCollector(["a"], [BIGINT(), STRING()], DEFAULT_STATS_MODE)

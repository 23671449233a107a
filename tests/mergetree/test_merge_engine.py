"""Merge engines: hand-built cases, then Hypothesis against a row-by-row reference.

The references below loop over rows in Python on purpose (obviously right, slow); the engines
under test are columnar.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mergetree_helpers import (
    AGG_OPTIONS,
    agg_schema,
    make_schema,
    merge_runs,
    ref_aggregate,
    ref_dedup,
    ref_first_row,
    ref_partial_update,
)

from impl.errors import InvalidOptionError
from impl.mergetree import KVLayout, MergeEngineError, MergeSpec, MergeTreeOptions, merge_kv, sort_kv
from impl.mergetree.kv import SEQUENCE_NUMBER, VALUE_KIND
from impl.options import MergeEngine

I, UB, UA, D = 0, 1, 2, 3  # noqa: E741 - Paimon's row kind letters (+I, -U, +U, -D)


def build(schema, options, rows, seq_start=0):
    """(layout, spec, kv) for rows given as dicts with an optional '_kind' (default +I)."""
    layout = KVLayout(schema)
    spec = MergeSpec.from_schema(schema, MergeTreeOptions.from_options(options))
    user = pa.Table.from_pylist([{c: r.get(c) for c in layout.value_names} for r in rows], schema=layout.user_schema)
    kinds = pa.array([r.get("_kind", I) for r in rows], pa.int8())
    user, kinds = spec.prepare_input(user, kinds)
    return layout, spec, layout.to_kv(user, kinds, seq_start)


def merged(schema, options, rows, drop_delete=True, final=None):
    layout, spec, kv = build(schema, options, rows)
    return merge_kv(kv, spec, drop_delete, final=drop_delete if final is None else final)


def by_id(table):
    return {r["id"]: r for r in table.to_pylist()}


# ------------------------------------------------------------------------------ deduplicate


def test_deduplicate_last_row_wins_and_delete_removes_key():
    rows = [{"id": 1, "v": 1.0}, {"id": 2, "v": 2.0}, {"id": 1, "v": 3.0},
            {"id": 2, "_kind": D, "v": 2.0}, {"id": 3, "v": 9.0}, {"id": 3, "_kind": UB}, {"id": 3, "_kind": UA, "v": 4.0}]
    out = merged(make_schema(), {}, rows)
    assert {i: r["v"] for i, r in by_id(out).items()} == {1: 3.0, 3: 4.0}
    # keep-retract mode keeps the -D winner so a later merge with older runs still deletes
    kept = merged(make_schema(), {}, rows, drop_delete=False)
    assert {r["id"]: r[VALUE_KIND] for r in kept.to_pylist()} == {1: I, 2: D, 3: UA}
    assert kept.column("id").to_pylist() == [1, 2, 3]
    assert kept.column(SEQUENCE_NUMBER).to_pylist() == [2, 3, 6]


def test_deduplicate_ignore_delete_drops_retractions():
    rows = [{"id": 1, "v": 1.0}, {"id": 1, "_kind": D}, {"id": 2, "_kind": D}]
    out = merged(make_schema(), {"ignore-delete": "true"}, rows, drop_delete=False)
    assert [(r["id"], r["v"], r[VALUE_KIND]) for r in out.to_pylist()] == [(1, 1.0, I)]


def test_deduplicate_sequence_field_orders_before_sequence_number():
    rows = [{"id": 1, "ts": 5, "v": 1.0}, {"id": 1, "ts": 3, "v": 2.0}, {"id": 1, "ts": None, "v": 3.0},
            {"id": 2, "ts": 1, "v": 1.0}, {"id": 2, "ts": 1, "v": 2.0}, {"id": 2, "ts": 0, "_kind": D}]
    out = by_id(merged(make_schema(), {"sequence.field": "ts"}, rows))
    assert out[1]["v"] == 1.0  # ts=5 wins over later rows with smaller / null ts
    assert out[2]["v"] == 2.0  # equal ts: the later row wins; the delete has a smaller ts
    desc = by_id(merged(make_schema(), {"sequence.field": "ts", "sequence.field.sort-order": "descending"}, rows))
    assert desc[1]["v"] == 2.0  # descending: smallest non-null ts wins (nulls sort first)


def test_merge_runs_sorts_across_runs():
    schema = make_schema()
    _, spec, old = build(schema, {}, [{"id": 1, "v": 1.0}, {"id": 2, "v": 2.0}], seq_start=0)
    _, _, new = build(schema, {}, [{"id": 2, "v": 20.0}, {"id": 0, "v": 0.5}], seq_start=2)
    out = merge_runs([new, old], spec, drop_delete=True)
    assert out.column("id").to_pylist() == [0, 1, 2]
    assert out.column("v").to_pylist() == [0.5, 1.0, 20.0]


# ------------------------------------------------------------------------------ first-row


def test_first_row_keeps_lowest_order_and_ignores_deletes():
    rows = [{"id": 1, "_kind": D}, {"id": 1, "v": 1.0}, {"id": 1, "v": 2.0}, {"id": 2, "v": 5.0},
            {"id": 2, "_kind": D}]
    out = by_id(merged(make_schema(), {"merge-engine": "first-row"}, rows))
    assert {i: r["v"] for i, r in out.items()} == {1: 1.0, 2: 5.0}


# ------------------------------------------------------------------------------ partial-update


def test_partial_update_last_non_null_per_column():
    rows = [{"id": 1, "k": "a", "v": 1.0}, {"id": 1, "v": 2.0}, {"id": 1, "k": None, "ts": 7}, {"id": 2, "k": "z"}]
    out = by_id(merged(make_schema(), {"merge-engine": "partial-update"}, rows))
    assert (out[1]["k"], out[1]["v"], out[1]["ts"]) == ("a", 2.0, 7)
    assert (out[2]["k"], out[2]["v"], out[2]["ts"]) == ("z", None, None)


def test_partial_update_rejects_retractions_without_a_policy():
    with pytest.raises(MergeEngineError, match="ignore-delete"):
        merged(make_schema(), {"merge-engine": "partial-update"}, [{"id": 1, "_kind": D}])
    out = merged(make_schema(), {"merge-engine": "partial-update", "ignore-delete": "true"},
                 [{"id": 1, "k": "a"}, {"id": 1, "_kind": D, "k": "b"}])
    assert by_id(out)[1]["k"] == "a"


def test_partial_update_remove_record_on_delete():
    opts = {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}
    rows = [{"id": 1, "k": "a", "v": 1.0}, {"id": 1, "_kind": D}, {"id": 1, "v": 2.0},  # reset, then partial
            {"id": 2, "k": "b"}, {"id": 2, "_kind": D},  # deleted
            {"id": 3, "k": "c"}, {"id": 3, "_kind": UB, "k": "c"}]  # -U is ignored
    out = by_id(merged(make_schema(), opts, rows))
    assert set(out) == {1, 3}
    assert (out[1]["k"], out[1]["v"]) == (None, 2.0)
    assert out[3]["k"] == "c"
    kept = {r["id"]: r for r in merged(make_schema(), opts, rows, drop_delete=False).to_pylist()}
    assert kept[2][VALUE_KIND] == D and kept[2]["k"] is None and kept[2]["id"] == 2


def test_partial_update_sequence_group():
    opts = {"merge-engine": "partial-update", "fields.ts.sequence-group": "k"}
    rows = [{"id": 1, "k": "new", "ts": 5, "v": 1.0},
            {"id": 1, "k": "old", "ts": 3, "v": 2.0},      # older ts: k stays, v (no group) still updates
            {"id": 1, "k": None, "ts": None, "v": None},   # null group sequence: skipped
            {"id": 2, "k": "x", "ts": 1},
            {"id": 2, "_kind": D, "k": "x", "ts": 2},        # retraction wins its group: k becomes null
            {"id": 3, "k": "y", "ts": 4},
            {"id": 3, "_kind": D, "k": "y", "ts": 1}]        # stale retraction: ignored
    out = by_id(merged(make_schema(), opts, rows))
    assert (out[1]["k"], out[1]["ts"], out[1]["v"]) == ("new", 5, 2.0)
    assert (out[2]["k"], out[2]["ts"]) == (None, 2)
    assert (out[3]["k"], out[3]["ts"]) == ("y", 4)


# ------------------------------------------------------------------------------ aggregation


def test_aggregation_functions():
    rows = [
        {"id": 1, "s": 1, "c": 5, "mn": 4, "mx": 1.5, "lv": "a", "lnn": "a", "fv": None, "fnn": None, "la": "x",
         "ba": True, "bo": False},
        {"id": 1, "s": None, "c": None, "mn": 2, "mx": None, "lv": None, "lnn": None, "fv": 7, "fnn": 8,
         "la": "  ", "ba": None, "bo": None},
        {"id": 1, "s": 10, "c": 1, "mn": 3, "mx": 9.5, "lv": "c", "lnn": None, "fv": 9, "fnn": 9, "la": "y",
         "ba": False, "bo": True},
        {"id": 2, "s": None, "c": None, "mn": None, "mx": None, "lv": None, "lnn": None, "fv": None, "fnn": None,
         "la": None, "ba": None, "bo": None},
    ]
    out = by_id(merged(agg_schema(), AGG_OPTIONS, rows))
    r = out[1]
    assert (r["s"], r["c"], r["mn"], r["mx"]) == (11, 2, 2, 9.5)
    assert (r["lv"], r["lnn"], r["fv"], r["fnn"]) == ("c", "a", None, 8)
    assert (r["la"], r["ba"], r["bo"]) == ("x,y", False, True)
    r = out[2]
    assert r["s"] is None and r["c"] == 0 and r["la"] is None and r["ba"] is None and r["mn"] is None


def test_aggregation_retractions():
    opts = {**AGG_OPTIONS, **{f"fields.{c}.ignore-retract": "true" for c in ("mn", "mx", "fv", "fnn", "la", "ba", "bo")}}
    rows = [{"id": 1, "s": 10, "c": 1, "lv": "a", "lnn": "a", "mn": 5, "la": "p"},
            {"id": 1, "_kind": UB, "s": 4, "c": 1, "lv": "a", "lnn": None, "mn": 1, "la": "q"},
            {"id": 2, "_kind": D, "s": 3, "c": 1, "lv": "z", "lnn": "z"}]
    out = by_id(merged(agg_schema(), opts, rows))
    assert (out[1]["s"], out[1]["c"], out[1]["lv"], out[1]["lnn"], out[1]["mn"], out[1]["la"]) == (6, 0, None, "a", 5, "p")
    # a key with only a retraction still exists (aggregation never deletes) with retracted values
    assert (out[2]["s"], out[2]["c"], out[2]["lv"], out[2]["lnn"]) == (-3, -1, None, None)
    assert out[2][VALUE_KIND] == I
    # stored merges keep a retraction-only key as one combined retraction, even at the top level
    for drop in (False, True):
        stored = by_id(merged(agg_schema(), opts, rows, drop_delete=drop, final=False))
        assert stored[1][VALUE_KIND] == I
        assert (stored[2][VALUE_KIND], stored[2]["s"], stored[2]["c"], stored[2]["lnn"]) == (D, 3, 1, "z")
        # ... which a later merge applies as a retraction
        _, spec, older = build(agg_schema(), opts, [{"id": 2, "s": 10, "c": 1, "lnn": "q"}], seq_start=-10)
        combined = merge_runs([older, merged(agg_schema(), opts, rows, drop_delete=drop, final=False)], spec,
                              True, final=True)
        assert [(r["s"], r["c"], r["lnn"]) for r in combined.to_pylist() if r["id"] == 2] == [(7, 0, None)]


def test_aggregation_rejects_retract_for_functions_without_retract():
    with pytest.raises(MergeEngineError, match="'min'.*mn"):
        merged(agg_schema(), AGG_OPTIONS, [{"id": 1, "_kind": D, "mn": 1}])


def test_aggregation_custom_listagg_delimiter_and_small_int_sum_wraps_like_java():
    from impl.data.types import BIGINT, STRING, TINYINT, DataField
    from impl.schema.records import TableSchema
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)), DataField(1, "t", TINYINT()), DataField(2, "la", STRING())),
                         primary_keys=("id",))
    opts = {"merge-engine": "aggregation", "fields.t.aggregate-function": "sum", "fields.la.aggregate-function": "listagg",
            "fields.la.list-agg-delimiter": " | "}
    out = merged(schema, opts, [{"id": 1, "t": 100, "la": "a"}, {"id": 1, "t": 100, "la": "b"}])
    assert out.schema.field("t").type == pa.int8()
    assert out.column("t").to_pylist() == [-56]  # (byte) (100 + 100)
    assert out.column("la").to_pylist() == ["a | b"]


# ------------------------------------------------------------------------------ Hypothesis: vs a reference

KEYS = st.integers(0, 4)


def row_strategy(columns: dict, kinds):
    return st.fixed_dictionaries({"id": KEYS, "_kind": st.sampled_from(kinds), **columns})


DEDUP_ROWS = st.lists(row_strategy({"v": st.integers(0, 9).map(float), "ts": st.none() | st.integers(0, 3)},
                                   [I, I, UA, UB, D]), max_size=40)


def split_points(n, data):
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n), max_size=4))))
    points = [0, *cuts, n]
    return [(a, b) for a, b in zip(points, points[1:], strict=False) if b > a]


def lsm_merge(kv, spec, data, drop_in_compaction=True):
    """Merge like an LSM would: runs are consecutive sequence ranges; random windows of adjacent runs
    are compacted (deletes dropped only when the window holds the oldest run), then everything is read."""
    runs = [kv.slice(a, b - a) for a, b in split_points(kv.num_rows, data)]
    steps = data.draw(st.integers(0, 3))
    for _ in range(steps):
        if len(runs) < 2:
            break
        lo = data.draw(st.integers(0, len(runs) - 2))
        hi = data.draw(st.integers(lo + 2, len(runs)))
        drop = drop_in_compaction and lo == 0
        window = merge_runs(runs[lo:hi], spec, drop_delete=drop)
        runs = runs[:lo] + [window] + runs[hi:]
    return merge_runs(runs or [kv], spec, drop_delete=True, final=True)


# MERGETREE_EXAMPLES=1000 for a deeper run than the default quick one
SETTINGS = settings(max_examples=int(os.environ.get("MERGETREE_EXAMPLES", "60")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(rows=DEDUP_ROWS, ignore_delete=st.booleans(), data=st.data())
def test_deduplicate_matches_reference_and_is_compaction_invariant(rows, ignore_delete, data):
    opts = {"ignore-delete": str(ignore_delete).lower()}
    layout, spec, kv = build(make_schema(), opts, rows)
    ref = {k: r["v"] for k, r in ref_dedup(rows, ignore_delete).items()}
    assert {r["id"]: r["v"] for r in merge_kv(kv, spec, True).to_pylist()} == ref
    assert {r["id"]: r["v"] for r in lsm_merge(kv, spec, data).to_pylist()} == ref


@SETTINGS
@given(rows=DEDUP_ROWS, data=st.data())
def test_deduplicate_with_sequence_field_matches_reference(rows, data):
    layout, spec, kv = build(make_schema(), {"sequence.field": "ts"}, rows)
    ref = {k: (r["v"], r["ts"]) for k, r in ref_dedup(rows, seq_field=True).items()}
    shuffled = kv.take(pa.array(data.draw(st.permutations(range(kv.num_rows))), pa.int64()))
    assert {r["id"]: (r["v"], r["ts"]) for r in merge_kv(shuffled, spec, True).to_pylist()} == ref
    # deletes may only be dropped at the final read: a later-written row can sort before them
    out = lsm_merge(kv, spec, data, drop_in_compaction=False)
    assert {r["id"]: (r["v"], r["ts"]) for r in out.to_pylist()} == ref


@SETTINGS
@given(rows=DEDUP_ROWS, data=st.data())
def test_first_row_matches_reference(rows, data):
    layout, spec, kv = build(make_schema(), {"merge-engine": "first-row"}, rows)
    ref = {k: r["v"] for k, r in ref_first_row(rows).items()}
    assert {r["id"]: r["v"] for r in lsm_merge(kv, spec, data).to_pylist()} == ref


PU_VALUES = {"k": st.none() | st.sampled_from(["a", "b", "c"]), "v": st.none() | st.integers(0, 9).map(float),
             "ts": st.none() | st.integers(0, 3)}


@SETTINGS
@given(rows=st.lists(row_strategy(PU_VALUES, [I, UA]), max_size=40), data=st.data())
def test_partial_update_matches_reference(rows, data):
    layout, spec, kv = build(make_schema(), {"merge-engine": "partial-update"}, rows)
    ref = ref_partial_update(rows, ["k", "v", "ts"])
    got = {r["id"]: {c: r[c] for c in ("id", "k", "v", "ts")} for r in lsm_merge(kv, spec, data).to_pylist()}
    assert got == ref


@SETTINGS
@given(rows=st.lists(row_strategy(PU_VALUES, [I, UA, UB, D]), max_size=40), data=st.data())
def test_partial_update_sequence_group_matches_reference(rows, data):
    opts = {"merge-engine": "partial-update", "fields.ts.sequence-group": "k"}
    layout, spec, kv = build(make_schema(), opts, rows)
    ref = ref_partial_update(rows, ["k", "v", "ts"], groups=[("ts", ["k"])])
    cols = ("id", "k", "v", "ts")
    assert {r["id"]: {c: r[c] for c in cols} for r in merge_kv(kv, spec, True, final=True).to_pylist()} == ref
    # Compactions keep retractions: as in Paimon, a compaction that drops deletes drops a lone
    # retraction (a key of one record is not merged), which a merge with the key's later rows
    # would have applied to its sequence group.
    got = {r["id"]: {c: r[c] for c in cols} for r in lsm_merge(kv, spec, data, drop_in_compaction=False).to_pylist()}
    assert got == ref


AGG_VALUES = {
    "s": st.none() | st.integers(-5, 5), "c": st.none() | st.integers(0, 3), "mn": st.none() | st.integers(-5, 5),
    "mx": st.none() | st.integers(-5, 5).map(float), "lv": st.none() | st.sampled_from(["a", "b"]),
    "lnn": st.none() | st.sampled_from(["a", "b"]), "fv": st.none() | st.integers(0, 3),
    "fnn": st.none() | st.integers(0, 3), "la": st.none() | st.sampled_from(["x", "y", " ", ""]),
    "ba": st.none() | st.booleans(), "bo": st.none() | st.booleans(),
}
# Functions without retraction ignore it; last_non_null_value too (its retraction is not associative).
IGNORE_RETRACT = ("mn", "mx", "fv", "fnn", "la", "ba", "bo", "lnn")


@SETTINGS
@given(rows=st.lists(row_strategy(AGG_VALUES, [I, UA, UB, D]), max_size=40), data=st.data())
def test_aggregation_matches_reference_and_is_compaction_invariant(rows, data):
    opts = {**AGG_OPTIONS, **{f"fields.{c}.ignore-retract": "true" for c in IGNORE_RETRACT}}
    layout, spec, kv = build(agg_schema(), opts, rows)
    ref = ref_aggregate(rows, IGNORE_RETRACT)
    assert {r["id"]: {c: r[c] for c in ref.get(r["id"], r)}
            for r in merge_kv(kv, spec, True, final=True).to_pylist()} == ref
    got = lsm_merge(kv, spec, data)
    assert {r["id"]: {c: r[c] for c in ref.get(r["id"], r)} for r in got.to_pylist()} == ref


def test_sort_kv_is_stable_and_total():
    layout, spec, kv = build(make_schema(), {}, [{"id": 2}, {"id": 1}, {"id": 2}, {"id": 1}])
    out = sort_kv(kv, spec)
    assert out.column("id").to_pylist() == [1, 1, 2, 2]
    assert out.column(SEQUENCE_NUMBER).to_pylist() == [1, 3, 0, 2]


@SETTINGS
@given(rows=DEDUP_ROWS, engine=st.sampled_from(["deduplicate", "first-row"]), seq=st.booleans(),
       drop=st.booleans(), ignore=st.booleans())
def test_row_picking_engines_agree_with_the_sorted_merge(rows, engine, seq, drop, ignore):
    from impl.mergetree import merge_sorted
    opts = {"merge-engine": engine, "ignore-delete": str(ignore).lower()}
    if seq:
        opts["sequence.field"] = "ts"
    layout, spec, kv = build(make_schema(), opts, rows)
    assert merge_kv(kv, spec, drop).to_pylist() == merge_sorted(sort_kv(kv, spec), spec, drop).to_pylist()


@pytest.mark.parametrize("engine", list(MergeEngine))
def test_every_merge_engine_merges_through_its_enum(engine):
    """Each engine of the enum has an implementation; the spec carries the enum, not a string."""
    rows = [{"id": 1, "k": "a", "v": 1.0}, {"id": 2, "k": "b", "v": 2.0}, {"id": 1, "k": None, "v": 3.0}]
    options = {"merge-engine": engine.value.upper()}  # Paimon's names, in any case
    schema = agg_schema() if engine is MergeEngine.AGGREGATION else make_schema()
    if engine is MergeEngine.AGGREGATION:
        rows = [{"id": r["id"], "s": int(r["v"])} for r in rows]
    _, spec, kv = build(schema, options, rows)
    assert spec.engine is engine
    assert spec.picks_whole_rows == (engine in (MergeEngine.DEDUPLICATE, MergeEngine.FIRST_ROW))
    out = by_id(merge_kv(kv, spec, True, final=True))
    assert sorted(out) == [1, 2]
    expected = {MergeEngine.DEDUPLICATE: {"k": None, "v": 3.0}, MergeEngine.FIRST_ROW: {"k": "a", "v": 1.0},
                MergeEngine.PARTIAL_UPDATE: {"k": "a", "v": 3.0}, MergeEngine.AGGREGATION: {"s": 3}}[engine]  # last_non_null_value
    assert {c: out[1][c] for c in expected} == expected


ENGINE_CASES = {
    "deduplicate": (make_schema, {}, DEDUP_ROWS),
    "first-row": (make_schema, {"merge-engine": "first-row"}, DEDUP_ROWS),
    "partial-update": (make_schema, {"merge-engine": "partial-update", "fields.ts.sequence-group": "k"},
                       st.lists(row_strategy(PU_VALUES, [I, UA, UB, D]), max_size=40)),
    "aggregation": (agg_schema, {**AGG_OPTIONS, **{f"fields.{c}.ignore-retract": "true" for c in IGNORE_RETRACT}},
                    st.lists(row_strategy(AGG_VALUES, [I, UA, UB, D]), max_size=40)),
}


@SETTINGS
@given(engine=st.sampled_from(sorted(ENGINE_CASES)), drop=st.booleans(), chunk=st.integers(1, 12), data=st.data())
def test_merge_in_pieces_equals_the_whole_merge(engine, drop, chunk, data):
    """A flush merges its buffer a piece at a time: the pieces, in order, are the whole merge."""
    from impl.mergetree.merge_engine import iter_merge_kv
    schema_fn, opts, rows_strategy = ENGINE_CASES[engine]
    rows = data.draw(rows_strategy)
    layout, spec, kv = build(schema_fn(), opts, rows)
    kv = pa.concat_tables([kv.slice(a, b - a) for a, b in split_points(kv.num_rows, data)] or [kv])  # chunked
    pieces = list(iter_merge_kv(kv, spec, drop, chunk))
    whole = merge_kv(kv, spec, drop)
    assert [r for p in pieces for r in p.to_pylist()] == whole.to_pylist()
    if whole.num_rows > chunk and spec.picks_whole_rows:
        assert len(pieces) > 1  # really in pieces


def test_partial_update_lone_record_passes_through_as_written():
    """Paimon runs no merge function for a key of one record (ReducerMergeFunctionWrapper): its
    sequence group with a null sequence keeps its fields, a lone retraction stays one; a key of
    two or more records merges, and a key of retractions alone is deleted."""
    opts = {"merge-engine": "partial-update", "fields.ts.sequence-group": "k"}
    rows = [{"id": 1, "k": "kept", "ts": None, "v": 1.0},            # lone, empty group
            {"id": 2, "k": "dropped", "ts": None, "v": 2.0},          # empty group in a merge of two
            {"id": 2, "k": None, "ts": None, "v": None},
            {"id": 3, "_kind": D, "k": "x", "ts": 1},                # lone retraction
            {"id": 4, "_kind": D, "k": "x", "ts": 1},                # retractions alone
            {"id": 4, "_kind": UB, "k": "y", "ts": 2}]
    out = by_id(merged(make_schema(), opts, rows))
    assert set(out) == {1, 2}
    assert (out[1]["k"], out[1]["ts"], out[1]["v"]) == ("kept", None, 1.0)
    assert (out[2]["k"], out[2]["ts"], out[2]["v"]) == (None, None, 2.0)
    kept = by_id(merged(make_schema(), opts, rows, drop_delete=False))
    assert (kept[3][VALUE_KIND], kept[3]["k"]) == (D, "x")  # as written
    assert kept[4][VALUE_KIND] == D
    # the lone row merged later with another of its key: its empty group is skipped then
    later = merged(make_schema(), opts, rows[:1] + [{"id": 1, "k": None, "ts": None, "v": 3.0}])
    assert by_id(later)[1]["k"] is None


def test_partial_update_aggregate_functions_within_a_sequence_group():
    from impl.data.types import BIGINT, DOUBLE, STRING, DataField
    from impl.schema.records import TableSchema
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)), DataField(1, "g", BIGINT()), DataField(2, "s", BIGINT()),
                             DataField(3, "m", DOUBLE()), DataField(4, "a", STRING()), DataField(5, "o", STRING())),
                         primary_keys=("id",))
    opts = {"merge-engine": "partial-update", "fields.g.sequence-group": "s,m,a", "fields.s.aggregate-function": "sum",
            "fields.m.aggregate-function": "max", "fields.m.ignore-retract": "true"}
    rows = [{"id": 1, "g": 2, "s": 5, "m": 1.0, "a": "x", "o": "o1"},
            {"id": 1, "g": 1, "s": 7, "m": 9.0, "a": "old", "o": None},   # an older group sequence still aggregates
            {"id": 1, "g": None, "s": 100, "m": 50.0, "a": "no", "o": "o2"},  # an empty group: not aggregated
            {"id": 1, "_kind": D, "g": 3, "s": 2, "m": 99.0, "a": "x"},   # retraction: sum subtracts, max ignores
            {"id": 2, "g": 1, "s": 3}, {"id": 2, "g": 1, "s": None}]
    out = by_id(merged(schema, opts, rows))
    assert (out[1]["g"], out[1]["s"], out[1]["m"], out[1]["a"], out[1]["o"]) == (3, 10, 9.0, None, "o2")
    assert (out[2]["s"], out[2]["m"]) == (3, None)
    # the sums of stored merges add up
    _, spec, kv = build(schema, opts, rows)
    halves = [merge_kv(kv.slice(0, 2), spec, False), merge_kv(kv.slice(2), spec, False)]
    assert by_id(merge_runs(halves, spec, True, final=True))[1]["s"] == 10


@pytest.mark.parametrize("options, match", [
    ({"fields.g.sequence-group": "s", "fields.s.aggregate-function": "last_value"}, "'last_value' within a partial"),
    ({"fields.s.aggregate-function": "sum"}, "needs field 's' in a sequence group"),
    ({"fields.g.sequence-group": "s", "fields.default-aggregate-function": "sum"}, "fields.m.aggregate-function.*needs field 'm'"),
])
def test_partial_update_aggregate_functions_refused_by_name(options, match):
    from impl.data.types import BIGINT, DOUBLE, DataField
    from impl.schema.records import TableSchema
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)), DataField(1, "g", BIGINT()), DataField(2, "s", BIGINT()),
                             DataField(3, "m", DOUBLE())), primary_keys=("id",))
    with pytest.raises(InvalidOptionError, match=match):
        merged(schema, {"merge-engine": "partial-update", **options}, [{"id": 1}])


def test_partial_update_group_aggregate_without_retract_refuses_retractions():
    from impl.data.types import BIGINT, DataField
    from impl.schema.records import TableSchema
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)), DataField(1, "g", BIGINT()), DataField(2, "s", BIGINT())),
                         primary_keys=("id",))
    opts = {"merge-engine": "partial-update", "fields.g.sequence-group": "s", "fields.s.aggregate-function": "min"}
    with pytest.raises(MergeEngineError, match="'min'.*'s'.*ignore-retract"):
        merged(schema, opts, [{"id": 1, "g": 1, "s": 1}, {"id": 1, "_kind": D, "g": 2, "s": 1}])


def test_partial_update_remove_record_on_sequence_group_refused_by_name():
    opts = {"merge-engine": "partial-update", "fields.ts.sequence-group": "k",
            "partial-update.remove-record-on-sequence-group": "ts"}
    with pytest.raises(InvalidOptionError, match="partial-update.remove-record-on-sequence-group"):
        merged(make_schema(), opts, [{"id": 1}])

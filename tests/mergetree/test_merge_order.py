"""The merge's fast ordering and column savings give exactly what the general path gives.

``merge_order`` sorts integer keys with numpy's stable sort when the rows' sequence numbers
already ascend within each key (runs concatenated in sequence order); ``merge_read`` reads
primary-key user columns from their ``_KEY_`` columns and skips the row kinds when no file
holds a retraction. Each property below compares against the general path: Arrow's
multi-column ``sort_indices``, and a merge of every raw column sorted that way.
"""

from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mergetree_helpers import AGG_OPTIONS, Table, agg_schema, make_schema

from impl.data.types import BIGINT, DOUBLE, INT, STRING, TIMESTAMP, DataField
from impl.datafile.meta import DataFileMeta
from impl.mergetree import KeyCodec, KVLayout, MergeSpec, iter_merge_read, merge_kv, merge_sorted, read_kv_files
from impl.mergetree.kv import SEQUENCE_NUMBER, VALUE_KIND, retract_mask
from impl.mergetree.merge_engine import _merge_order, merge_order
from impl.mergetree.read import ascending_within_files, in_sequence_order, ranks_order_like_sequence
from impl.options import MergeEngine
from impl.schema.records import TableSchema

SETTINGS = settings(max_examples=int(os.environ.get("MERGETREE_EXAMPLES", "60")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# key column types, each with a strategy of values drawn from a small domain (collisions)
KEY_TYPES = {
    "int64": (pa.int64(), st.integers(-3, 12)),
    "int32": (pa.int32(), st.integers(-3, 12)),
    "uint8": (pa.uint8(), st.integers(0, 12)),
    "date32": (pa.date32(), st.integers(0, 12).map(lambda d: datetime.date(2024, 1, 1) + datetime.timedelta(d))),
    "timestamp": (pa.timestamp("us"), st.integers(-5, 12).map(
        lambda s: datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=s))),
    "string": (pa.string(), st.sampled_from(["", "a", "ab", "b", "ba", "é", "z"])),
    # the key codes' edges: a shared prefix (dropped), trailing zero bytes, keys longer than
    # the 8 bytes a code holds after the prefix, bytes >= 0x80
    "string_prefixed": (pa.large_string(), st.sampled_from(
        ["user-", "user-1", "user-1\x00", "user-10", "user-12345678", "user-123456789", "user-123456780",
         "user-é", "user-\x00"])),
    "binary": (pa.binary(), st.sampled_from([b"", b"\x00", b"\x00\x00", b"\xff", b"k\x00\x00\x00\x00\x00\x00\x00\x01",
                                             b"k\x00\x00\x00\x00\x00\x00\x00", b"k"])),
}
KEY_SETS = [("int64",), ("int32",), ("uint8",), ("date32",), ("timestamp",), ("string",), ("string_prefixed",),
            ("binary",),
            ("int64", "string"), ("int32", "int64"), ("date32", "uint8")]


@st.composite
def kv_tables(draw):
    """(kv, spec, run_ordered_unique): a KV table of several runs and a dedup spec over its keys.

    Runs are either sorted with one row per key (as data files are) or arbitrary (duplicate
    keys, any order); sequence numbers either ascend run by run or are shuffled; a
    ``sequence.field`` is sometimes set."""
    names = draw(st.sampled_from(KEY_SETS))
    key_cols = [f"_KEY_k{i}" for i in range(len(names))]
    sorted_runs = draw(st.booleans())
    runs = []
    for _ in range(draw(st.integers(1, 5))):
        rows = draw(st.lists(st.tuples(*[KEY_TYPES[n][1] for n in names]), max_size=12))
        if sorted_runs:
            rows = sorted(set(rows))
        runs.append(rows)
    rows = [r for run in runs for r in run]
    n = len(rows)
    seq = np.arange(n, dtype=np.int64) * draw(st.sampled_from([1, 3]))
    if draw(st.booleans()):
        seq = np.array(draw(st.permutations(list(seq))), dtype=np.int64)
    elif n and draw(st.booleans()):
        seq[draw(st.integers(0, n - 1))] = seq[0]  # ties of (key, sequence) keep input order
    cols = {c: pa.array([r[i] for r in rows], KEY_TYPES[names[i]][0]) for i, c in enumerate(key_cols)}
    cols[SEQUENCE_NUMBER] = pa.array(seq, pa.int64())
    cols[VALUE_KIND] = pa.array(draw(st.lists(st.sampled_from([0, 0, 2, 1, 3]), min_size=n, max_size=n)), pa.int8())
    cols["s"] = pa.array(draw(st.lists(st.none() | st.integers(0, 3), min_size=n, max_size=n)), pa.int64())
    kv = pa.table(cols)
    split = draw(st.integers(0, n))  # several chunks, as a concatenation of files gives
    kv = pa.concat_tables([kv.slice(0, split), kv.slice(split)])
    seq_fields = ("s",) if draw(st.integers(0, 4)) == 0 else ()
    spec = MergeSpec(engine=draw(st.sampled_from([MergeEngine.DEDUPLICATE, MergeEngine.FIRST_ROW])),
                     key_columns=tuple(key_cols), sequence_fields=seq_fields,
                     sequence_descending=draw(st.booleans()), ignore_delete=draw(st.booleans()))
    ordered = sorted_runs and bool(np.all(np.diff(seq) > 0)) and not seq_fields
    return kv, spec, ordered and len(names) == 1 and names[0] not in ("binary", "string_prefixed")


@SETTINGS
@given(case=kv_tables())
def test_merge_order_is_arrows_stable_sort(case):
    kv, spec, fast_expected = case
    general = pc.sort_indices(kv, sort_keys=spec.sort_keys()).to_numpy()
    assert merge_order(kv, spec).tolist() == general.tolist()
    if fast_expected and kv.num_rows > 1:
        # runs in sequence order with one integer or exactly coded string key: the numpy path
        # was taken (and agreed)
        assert _merge_order(kv, spec).new_key is not None


@SETTINGS
@given(case=kv_tables(), drop=st.booleans())
def test_row_picking_merge_equals_the_general_merge(case, drop):
    kv, spec, _ = case
    general = merge_sorted(kv.take(pc.sort_indices(kv, sort_keys=spec.sort_keys())), spec, drop)
    assert merge_kv(kv, spec, drop).to_pylist() == general.to_pylist()
    cols = [spec.key_columns[0], "s"]
    assert merge_kv(kv, spec, drop, columns=cols).to_pylist() == general.select(cols).to_pylist()


def test_new_key_mask_survives_dropped_retractions():
    """first-row drops -U/-D input rows before picking: a dropped row that started its key
    must hand the start to the key's next row."""
    kv = pa.table({"_KEY_id": pa.array([1, 1, 2, 2, 3], pa.int64()),
                   SEQUENCE_NUMBER: pa.array([0, 1, 2, 3, 4], pa.int64()),
                   VALUE_KIND: pa.array([3, 0, 1, 0, 3], pa.int8()), "s": pa.array([10, 11, 20, 21, 30])})
    spec = MergeSpec(engine=MergeEngine.FIRST_ROW, key_columns=("_KEY_id",))
    assert merge_kv(kv, spec, True).column("s").to_pylist() == [11, 21]


# ---------------------------------------------------------------------------- merge_read end to end

ENGINES = {
    "deduplicate": {},
    "first-row": {"merge-engine": "first-row"},
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "partial-update-remove": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "sequence-field": {"sequence.field": "ts"},
}


def _general_read(t: Table, projection, predicate) -> pa.Table:
    """The merged view the long way: every raw column of every file, Arrow's full sort, merge."""
    spec = MergeSpec.from_schema(t.schema, t.options)
    kv = read_kv_files(t.io, t.paths, t.schema, "", 0, list(t.live.values()))
    merged = merge_sorted(kv.take(pc.sort_indices(kv, sort_keys=spec.sort_keys())), spec, True, final=True)
    if merged.num_rows and spec.engine is not MergeEngine.AGGREGATION:
        merged = merged.filter(pa.array(~retract_mask(merged.column(VALUE_KIND))))
    out = merged.select(list(t.schema.field_names if projection is None else projection))
    return out if predicate is None else out.filter(predicate)


def _rows(draw, n_max, agg: bool):
    n = draw(st.integers(1, n_max))
    ids = draw(st.lists(st.integers(0, 15), min_size=n, max_size=n))
    if agg:
        return {"id": pa.array(ids, pa.int64()),
                **{c: pa.array(draw(st.lists(st.none() | st.integers(0, 5), min_size=n, max_size=n)), t)
                   for c, t in (("s", pa.int64()), ("c", pa.int64()), ("mn", pa.int32()))},
                "mx": pa.array(draw(st.lists(st.none() | st.floats(0, 5), min_size=n, max_size=n)), pa.float64()),
                **{c: pa.array(draw(st.lists(st.none() | st.sampled_from(["x", "y", " "]), min_size=n, max_size=n)),
                               pa.string()) for c in ("lv", "lnn", "la")},
                **{c: pa.array(draw(st.lists(st.none() | st.integers(0, 5), min_size=n, max_size=n)), pa.int32())
                   for c in ("fv", "fnn")},
                **{c: pa.array(draw(st.lists(st.none() | st.booleans(), min_size=n, max_size=n)), pa.bool_())
                   for c in ("ba", "bo")}}, [0] * n
    kinds = draw(st.lists(st.sampled_from([0, 0, 0, 2, 3]), min_size=n, max_size=n))
    return {"id": pa.array(ids, pa.int64()),
            "k": pa.array(draw(st.lists(st.none() | st.sampled_from(["a", "b"]), min_size=n, max_size=n)), pa.string()),
            "v": pa.array(draw(st.lists(st.none() | st.integers(0, 9).map(float), min_size=n, max_size=n)),
                          pa.float64()),
            "ts": pa.array(draw(st.lists(st.none() | st.integers(0, 3), min_size=n, max_size=n)), pa.int64())}, kinds


@settings(SETTINGS, max_examples=max(1, SETTINGS.max_examples // 2))
@given(engine=st.sampled_from([*ENGINES, "aggregation"]), data=st.data())
def test_merge_read_equals_the_general_merge(tmp_path_factory, engine, data):
    agg = engine == "aggregation"
    schema = agg_schema() if agg else make_schema()
    options = {**(AGG_OPTIONS if agg else ENGINES[engine]), "write-only": "true"}
    t = Table(tmp_path_factory.mktemp("t"), schema, options)
    w = t.writer()
    for _ in range(data.draw(st.integers(1, 5), label="commits")):
        cols, kinds = _rows(data.draw, 12, agg)
        w.write(pa.table(cols), None if not any(kinds) else pa.array(kinds, pa.int8()))
        t.apply(w.prepare_commit(True))
    w.close()
    names = list(schema.field_names)
    projection = data.draw(st.none() | st.lists(st.sampled_from(names), unique=True), label="projection")
    pred_col = data.draw(st.sampled_from([None, "id", names[1]]), label="predicate on")
    predicate = None if pred_col is None else (pc.field("id") > 6 if pred_col == "id" else pc.field(pred_col).is_valid())
    if projection is not None and pred_col is not None and pred_col not in projection:
        projection.append(pred_col)  # a predicate's columns are read (TableRead adds them)
    expected = _general_read(t, projection, predicate)
    out = t.read(projection, predicate)
    assert (out.num_rows, out.column_names) == (expected.num_rows, expected.column_names)
    assert out.to_pylist() == expected.to_pylist()
    streamed = list(iter_merge_read(t.io, t.paths, t.schema, t.options, "", 0, list(t.live.values()),
                                    projection, predicate, batch_rows=data.draw(st.integers(1, 8), label="batch")))
    assert [r for part in streamed for r in part.to_pylist()] == expected.to_pylist()


# ---------------------------------------------------------------------------- sequence numbers not decoded

def _hand_written_file(t: Table, name: str, ids, seqs, kinds=None) -> DataFileMeta:
    """A level-0 data file written directly (any row order, duplicate keys allowed); its
    delete_row_count is 0 whatever ``kinds`` holds, as pypaimon 2.1.0 writes it."""
    layout = KVLayout(t.schema)
    n = len(ids)
    kv = pa.table({"_KEY_id": pa.array(ids, pa.int64()), SEQUENCE_NUMBER: pa.array(seqs, pa.int64()),
                   VALUE_KIND: pa.array(kinds or [0] * n, pa.int8()), "id": pa.array(ids, pa.int64()),
                   "k": pa.array([f"s{s}" for s in seqs]), "v": pa.array([float(s) for s in seqs]),
                   "ts": pa.array(seqs, pa.int64())}, schema=layout.arrow_schema)
    os.makedirs(t.bucket_dir(), exist_ok=True)
    pq.write_table(kv, os.path.join(t.bucket_dir(), name))
    codec = KeyCodec(layout.key_types)
    return DataFileMeta(name, os.path.getsize(os.path.join(t.bucket_dir(), name)), n,
                        min_key=codec.encode([min(ids)]), max_key=codec.encode([max(ids)]),
                        min_sequence_number=min(seqs), max_sequence_number=max(seqs), delete_row_count=0)


def test_a_file_holding_a_key_twice_is_ordered_by_its_real_sequence_numbers(tmp_path):
    """Reads skip decoding sequence numbers when file ranks order a key's rows the same way;
    a file that holds a key twice (here out of sequence order) makes them read the numbers."""
    t = Table(tmp_path, make_schema(), {"write-only": "true"})
    w = t.writer()
    w.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "k": ["a", "b", "c"], "v": [1.0, 2.0, 3.0],
                      "ts": pa.array([0, 0, 0], pa.int64())}), None)
    t.apply(w.prepare_commit(True))
    w.close()
    newest = max(f.max_sequence_number for f in t.live.values())
    dup = _hand_written_file(t, "dup.parquet", [1, 1, 4], [newest + 2, newest + 1, newest + 3])
    t.live[(0, dup.file_name)] = dup
    layout, spec = KVLayout(t.schema), MergeSpec.from_schema(t.schema, t.options)
    files = in_sequence_order(list(t.live.values()))
    assert ranks_order_like_sequence(files, layout, spec)
    assert not ascending_within_files([np.array([1, 2, 3, 1, 1, 4])], [3, 3])
    out = t.read()
    assert out.to_pylist() == _general_read(t, None, None).to_pylist()
    assert {r["id"]: r["ts"] for r in out.to_pylist()}[1] == newest + 2  # the higher number wins


def test_overlapping_sequence_ranges_read_the_real_numbers(tmp_path):
    t = Table(tmp_path, make_schema(), {"write-only": "true"})
    a = _hand_written_file(t, "a.parquet", [1, 2, 3], [10, 30, 20])
    b = _hand_written_file(t, "b.parquet", [1, 2, 3], [25, 15, 40])
    t.live.update({(0, a.file_name): a, (0, b.file_name): b})
    files = in_sequence_order([b, a])
    assert [f.file_name for f in files] == ["a.parquet", "b.parquet"]
    assert not ranks_order_like_sequence(files, KVLayout(t.schema), MergeSpec.from_schema(t.schema, t.options))
    out = t.read()
    assert [r["ts"] for r in out.to_pylist()] == [25, 30, 40]
    assert out.to_pylist() == _general_read(t, None, None).to_pylist()


def test_ascending_within_files_looks_inside_each_file_only():
    keys = [np.array([1, 5, 2, 3, 3, 7]), np.array([0, 0, 0, 0, 1, 0])]  # composite (a, b)
    assert ascending_within_files(keys, [2, 4])  # (1,0)<(5,0) | (2,0)<(3,0)<(3,1)<(7,0)
    assert not ascending_within_files(keys, [3, 3])  # (5,0) > (2,0) inside the first file
    assert ascending_within_files([np.array([4, 4])], [1, 0, 1])  # empty files between
    assert not ascending_within_files([np.array([4, 4])], [2])


def test_one_string_key_is_checked_bytewise_within_each_file():
    from impl.mergetree.read import _each_file_holds_keys_once
    # "b" < "é" bytewise; chunks unlike the files (as a reader may hand them over)
    col = pa.chunked_array([pa.array(["a", "é"]), pa.array(["b", "b", "c"])], pa.string())
    kv = pa.table({"_KEY_id": col})
    assert _each_file_holds_keys_once(kv, ["_KEY_id"], [2, 1, 2])
    assert not _each_file_holds_keys_once(kv, ["_KEY_id"], [2, 3])  # "b" twice in the second file
    assert not _each_file_holds_keys_once(kv, ["_KEY_id"], [3, 2])  # "é" > "b" inside the first
    assert _each_file_holds_keys_once(kv.slice(0, 1), ["_KEY_id"], [1])


def test_retractions_count_whatever_the_files_delete_row_count_says(tmp_path):
    """pypaimon 2.1.0 records delete_row_count 0 for files holding -D rows: reads look at the
    row kinds themselves, in overlapping and in key-disjoint files."""
    t = Table(tmp_path, make_schema(), {"write-only": "true"})
    a = _hand_written_file(t, "a.parquet", [1, 2, 3], [0, 1, 2])
    b = _hand_written_file(t, "b.parquet", [2, 3], [3, 4], kinds=[3, 0])
    c = _hand_written_file(t, "c.parquet", [7, 8], [5, 6], kinds=[0, 3])  # key-disjoint from a and b
    t.live.update({(0, f.file_name): f for f in (a, b, c)})
    assert [r["id"] for r in t.read().to_pylist()] == [1, 3, 7]
    t.live = {(0, c.file_name): c}  # one file: the no-merge path
    assert [r["id"] for r in t.read().to_pylist()] == [7]
    assert t.read(projection=[]).num_rows == 1


KEYED_SCHEMAS = {
    # name -> (key fields, strategies of their values)
    "string": ([DataField(0, "s", STRING(False))], [st.sampled_from(["", "a", "ab", "b", "é"])]),
    "timestamp": ([DataField(0, "t", TIMESTAMP(6, False))],
                  [st.integers(0, 9).map(lambda s: datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=s))]),
    "int+string": ([DataField(0, "a", INT(False)), DataField(1, "b", STRING(False))],
                   [st.integers(-2, 3), st.sampled_from(["x", "y", "xy"])]),
    "int+bigint": ([DataField(0, "a", INT(False)), DataField(1, "b", BIGINT(False))],
                   [st.integers(-2, 3), st.integers(0, 3)]),
}


@settings(SETTINGS, max_examples=max(1, SETTINGS.max_examples // 2))
@given(keyed=st.sampled_from(sorted(KEYED_SCHEMAS)), engine=st.sampled_from(["deduplicate", "partial-update-remove"]),
       data=st.data())
def test_merge_read_of_other_key_types_equals_the_general_merge(tmp_path_factory, keyed, engine, data):
    key_fields, key_values = KEYED_SCHEMAS[keyed]
    fields = (*key_fields, DataField(5, "v", DOUBLE()), DataField(6, "ts", BIGINT()))
    schema = TableSchema(0, fields, primary_keys=tuple(f.name for f in key_fields))
    t = Table(tmp_path_factory.mktemp("t"), schema, {**ENGINES[engine], "write-only": "true"})
    layout = KVLayout(schema)
    w = t.writer()
    for _ in range(data.draw(st.integers(1, 5), label="commits")):
        keys = data.draw(st.lists(st.tuples(*key_values), min_size=1, max_size=12), label="keys")
        n = len(keys)
        cols = {f.name: [k[i] for k in keys] for i, f in enumerate(key_fields)}
        cols["v"] = data.draw(st.lists(st.none() | st.integers(0, 9).map(float), min_size=n, max_size=n))
        cols["ts"] = data.draw(st.lists(st.none() | st.integers(0, 3), min_size=n, max_size=n))
        kinds = data.draw(st.lists(st.sampled_from([0, 0, 2, 3]), min_size=n, max_size=n), label="kinds")
        w.write(pa.table(cols, schema=layout.user_schema), pa.array(kinds, pa.int8()))
        t.apply(w.prepare_commit(True))
    w.close()
    predicate = data.draw(st.sampled_from([None, pc.field("v").is_valid()]), label="predicate")
    expected = _general_read(t, None, predicate)
    assert t.read(None, predicate).to_pylist() == expected.to_pylist()
    streamed = list(iter_merge_read(t.io, t.paths, t.schema, t.options, "", 0, list(t.live.values()), None,
                                    predicate, batch_rows=data.draw(st.integers(1, 8), label="batch")))
    assert [r for part in streamed for r in part.to_pylist()] == expected.to_pylist()


@SETTINGS
@given(keys=st.lists(st.binary(max_size=12).map(lambda b: b"pre" + b) | st.binary(max_size=3), min_size=1,
                     max_size=30))
def test_string_key_codes_order_like_the_keys(keys):
    """Different words order as their keys; with exact codes (word, length) is the key itself."""
    from impl.mergetree.key_codes import string_key_codes
    keys = keys[1:]  # read through a slice: the codes honour the array's offset
    codes = string_key_codes(pa.array([b"\xff"] + keys, pa.binary()).slice(1))
    assert codes is not None
    for i, a in enumerate(keys):
        for j, b in enumerate(keys):
            if codes.words[i] < codes.words[j]:
                assert a < b
            if codes.exact:
                assert (a == b) == (codes.words[i] == codes.words[j] and codes.lengths[i] == codes.lengths[j])


@SETTINGS
@given(keys=st.lists(st.binary(max_size=20).map(lambda b: b"user-" + b) | st.binary(max_size=9), min_size=1,
                     max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=4), large=st.booleans())
def test_string_key_codes_of_a_chunked_column_equal_the_combined_ones(keys, cuts, large):
    """A chunked column is coded chunk by chunk (no combined copy): the same words, lengths and
    exactness as the one-chunk column, whatever the chunks (empty ones too) and offset widths;
    and the codes still order like the keys."""
    from impl.mergetree.key_codes import string_key_codes
    typ = pa.large_binary() if large else pa.binary()
    bounds = sorted({0, len(keys), *[min(c, len(keys)) for c in cuts]})
    chunked = pa.chunked_array([pa.array(keys[a:b], typ) for a, b in zip(bounds, bounds[1:], strict=False)] or
                               [pa.array([], typ)], typ)
    whole = string_key_codes(pa.array(keys, typ))
    codes = string_key_codes(chunked)
    assert whole is not None and codes is not None
    assert codes.words.tolist() == whole.words.tolist() and codes.lengths.tolist() == whole.lengths.tolist()
    assert codes.exact == whole.exact
    for i, a in enumerate(keys):
        for j, b in enumerate(keys):
            if codes.words[i] < codes.words[j]:
                assert a < b


@SETTINGS
@given(values=st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1) | st.integers(-3, 3), max_size=40))
def test_stable_argsort_is_numpys_stable_argsort(values):
    from impl.mergetree.merge_engine import stable_argsort
    k = np.array(values, dtype=np.int64)
    assert stable_argsort(k).tolist() == np.argsort(k, kind="stable").tolist()
    words = k.view(np.uint64)  # the key codes' words: wide ranges take the tie-fixed vectorized sort
    assert stable_argsort(words).tolist() == np.argsort(words, kind="stable").tolist()


@SETTINGS
@given(runs=st.lists(st.lists(st.integers(-50, 50) | st.integers(-(2 ** 63), 2 ** 63 - 1), max_size=30),
                     min_size=1, max_size=40),
       unsigned=st.booleans())
def test_stable_argsort_of_concatenated_sorted_runs(runs, unsigned):
    """Sorted runs concatenated oldest first (a bucket's read, the input the timsort branch
    takes when there are few runs; many runs take the vectorized sort): numpy's stable
    argsort, ties across and within runs in input order, narrow and 64-bit-wide ranges."""
    from impl.mergetree.merge_engine import MERGE_SORT_MAX_RUNS, ascending_runs, sort_kind, stable_argsort
    dtype = np.uint64 if unsigned else np.int64
    parts = [np.sort(np.array(run, dtype=np.int64).view(dtype)) for run in runs]
    k = np.concatenate(parts)
    assert stable_argsort(k).tolist() == np.argsort(k, kind="stable").tolist()
    assert ascending_runs(k) <= len([r for r in runs if r]) or len(k) == 0
    assert sort_kind(k) == ("stable" if ascending_runs(k) <= MERGE_SORT_MAX_RUNS else "quicksort")


def test_few_sorted_runs_take_the_merging_sort():
    """A bucket of 16 sorted runs is sorted by numpy's timsort (a k-way merge of the runs),
    which numpy 2.4's vectorized sort is 1.3-30x slower than on such input; arrival order
    (many runs) keeps the vectorized sort."""
    from impl.mergetree.merge_engine import ascending_runs, sort_kind
    rng = np.random.default_rng(3)
    runs16 = np.concatenate([np.sort(rng.integers(0, 10 ** 6, 1000)) for _ in range(16)])
    assert ascending_runs(runs16) <= 16 and sort_kind(runs16) == "stable"
    assert sort_kind(np.arange(10)) == "stable" and ascending_runs(np.arange(10)) == 1
    assert ascending_runs(np.zeros(0, dtype=np.int64)) == 0
    assert sort_kind(rng.integers(0, 10 ** 6, 10_000)) == "quicksort"

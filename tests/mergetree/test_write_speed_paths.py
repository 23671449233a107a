"""The fast paths of the default write (issue 16, goal 3) give exactly what the plain paths give.

- ``merge_order``: numpy's sort of (key rank, sequence number) is the stable Arrow sort;
- ``dictionary_columns``: columns known unique / repeated are decided without sampling;
- ``TableWrite.prepare_commit`` flushes every bucket before waiting for any compaction, which
  lets compactions overlap later buckets' flushes but writes the same files.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import impl
from impl.bucket.routing import split_by_group
from impl.data.types import BIGINT, DataField
from impl.format.dictionary_choice import dictionary_columns
from impl.mergetree import MergeSpec, MergeTreeOptions, merge_engine
from impl.mergetree.file_writer import known_unique_columns
from impl.mergetree.kv import SEQUENCE_NUMBER, VALUE_KIND, KVLayout
from impl.mergetree.merge_engine import merge_order
from impl.mergetree.writer import InlineExecutor
from impl.schema.records import TableSchema
from impl.snapshot.records import CommitKind
from tests.mergetree.mergetree_helpers import make_schema


def _spec(options=None) -> MergeSpec:
    schema = make_schema(options)
    return MergeSpec.from_schema(schema, MergeTreeOptions.from_options(schema.options))


def _arrow_order(kv: pa.Table, spec: MergeSpec) -> list[int]:
    return pc.sort_indices(kv, sort_keys=spec.sort_keys()).to_pylist()


# ---------------------------------------------------------------------------- sort order


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.integers(-5, 5) | st.integers(-2**63, 2**63 - 1), min_size=2, max_size=60),
       seqs=st.data(), chunks=st.integers(1, 3), key_type=st.sampled_from([pa.int64(), pa.int32(), pa.int8()]))
def test_sort_order_is_arrows_stable_order(keys, seqs, chunks, key_type):
    """Random integer keys with repeats, sequence numbers small, huge (the rank overflow
    fallback) or repeated (the tie fallback), in several chunks: the same order as Arrow's."""
    if pa.types.is_int8(key_type):
        keys = [k % 100 for k in keys]
    elif pa.types.is_int32(key_type):
        keys = [k % 2**31 for k in keys]
    n = len(keys)
    seq = seqs.draw(st.lists(st.integers(0, 2 * n) | st.integers(0, 2**63 - 1), min_size=n, max_size=n))
    cut = sorted({0, n, *(n * i // chunks for i in range(chunks))})
    kv = pa.Table.from_batches([
        pa.record_batch({"_KEY_id": pa.array(keys[a:b], key_type), SEQUENCE_NUMBER: pa.array(seq[a:b], pa.int64())})
        for a, b in zip(cut[:-1], cut[1:], strict=True) if b > a])
    spec = _spec()
    with mock.patch.object(merge_engine, "_FEW_RUNS", 0):  # the numpy path for any input size
        assert merge_order(kv, spec).tolist() == _arrow_order(kv, spec)


def test_sort_order_of_a_flush_takes_the_numpy_path():
    """Rows in arrival order (random keys, 30 % repeated, increasing sequence numbers) take the
    numpy path (not a fallback), in Arrow's order; concatenated sorted runs go to Arrow."""
    rng = np.random.default_rng(11)
    n = 20_000
    keys = np.concatenate([rng.permutation(n)[: int(n * 0.7)], rng.integers(0, n, n - int(n * 0.7))])
    kv = pa.table({"_KEY_id": pa.array(keys, pa.int64()), SEQUENCE_NUMBER: pa.array(np.arange(n), pa.int64())})
    fast = merge_engine._key_sequence_order(kv.column("_KEY_id").to_numpy(), kv.column(SEQUENCE_NUMBER).to_numpy())
    assert fast is not None and fast.tolist() == _arrow_order(kv, _spec())
    runs = pa.concat_tables([t.sort_by("_KEY_id") for t in (kv.slice(0, 9000), kv.slice(9000))])
    assert merge_engine._key_sequence_order(runs.column("_KEY_id").to_numpy(), runs.column(SEQUENCE_NUMBER).to_numpy()) is None
    assert merge_order(runs, _spec()).tolist() == _arrow_order(runs, _spec())


def test_sort_order_falls_back_for_other_keys_and_sequence_fields():
    """String keys, null keys and ``sequence.field`` take Arrow's sort (same order)."""
    rng = np.random.default_rng(7)
    n = 500
    seq = pa.array(rng.permutation(n), pa.int64())
    strings = pa.table({"_KEY_id": pa.array([f"k{i % 37}" for i in range(n)]), SEQUENCE_NUMBER: seq})
    nulls = pa.table({"_KEY_id": pa.array([None if i % 9 == 0 else i % 50 for i in range(n)], pa.int64()),
                      SEQUENCE_NUMBER: seq})
    for kv in (strings, nulls):
        assert merge_order(kv, _spec()).tolist() == _arrow_order(kv, _spec())
    spec = _spec({"sequence.field": "ts"})
    kv = pa.table({"_KEY_id": pa.array(rng.integers(0, 40, n), pa.int64()), "ts": pa.array(rng.integers(0, 5, n)),
                   SEQUENCE_NUMBER: seq})
    assert merge_order(kv, spec).tolist() == _arrow_order(kv, spec)


# ---------------------------------------------------------------------------- dictionary choice


def test_dictionary_columns_skip_known_columns_and_sample_the_rest():
    layout = KVLayout(make_schema())
    n = 20_000
    rng = np.random.default_rng(3)
    kv = pa.table({"_KEY_id": pa.array(np.arange(n), pa.int64()), SEQUENCE_NUMBER: pa.array(np.arange(n), pa.int64()),
                   VALUE_KIND: pa.array(np.zeros(n, np.int8)), "id": pa.array(np.arange(n), pa.int64()),
                   "k": pa.array([f"cat-{i % 5}" for i in range(n)]), "v": pa.array(rng.normal(size=n)),
                   "ts": pa.array(np.arange(n), pa.int64())})
    assert known_unique_columns(layout) == (SEQUENCE_NUMBER, "_KEY_id", "id")
    fast = dictionary_columns(kv, unique=known_unique_columns(layout), repeated=(VALUE_KIND,))
    assert sorted(fast) == sorted(dictionary_columns(kv)) == [VALUE_KIND, "k"]
    # the partition field is trimmed off the key: (dt, id) files hold each id once
    assert known_unique_columns(KVLayout(make_schema(partitioned=True))) == (SEQUENCE_NUMBER, "_KEY_id", "id")
    # a composite key's fields repeat: only the sequence numbers are known unique
    composite = TableSchema(0, (DataField(0, "a", BIGINT(False)), DataField(1, "b", BIGINT(False))),
                            primary_keys=("a", "b"))
    assert known_unique_columns(KVLayout(composite)) == (SEQUENCE_NUMBER,)


def test_dictionary_choice_is_reused_for_the_next_files_of_the_same_columns(monkeypatch):
    import impl.format.dictionary_choice as dc
    samples = []
    real = dc.dictionary_columns
    monkeypatch.setattr(dc, "dictionary_columns", lambda kv, *a, **k: samples.append(kv.num_rows) or real(kv, *a, **k))
    n = 4096
    repeated = pa.table({"k": pa.array([f"cat-{i % 5}" for i in range(n)]), "v": pa.array(np.arange(n, dtype=float))})
    unique = pa.table({"k": pa.array([f"user-{i}" for i in range(n)]), "v": pa.array(np.arange(n, dtype=float))})
    choice = dc.DictionaryChoice()
    first = [choice.columns(repeated, (), ()) for _ in range(dc.DictionaryChoice.REUSE_FILES)]
    assert first == [["k"]] * dc.DictionaryChoice.REUSE_FILES and samples == [n]  # one sample, 16 files
    # the next file is sampled again: the columns' character may have changed
    assert choice.columns(unique, (), ()) == [] and samples == [n, n]
    # other columns (a schema change) are sampled at once
    assert choice.columns(unique.select(["k"]), (), ()) == [] and len(samples) == 3
    # a choice from fewer rows than a sample is never reused
    small = repeated.slice(0, 100)
    choice.columns(small, (), ())
    choice.columns(small, (), ())
    assert samples[-2:] == [100, 100]


def test_a_tables_writers_share_one_dictionary_choice(tmp_path, monkeypatch):
    import impl.format.dictionary_choice as dc
    samples = []
    real = dc.dictionary_columns
    monkeypatch.setattr(dc, "dictionary_columns", lambda kv, *a, **k: samples.append(kv.num_rows) or real(kv, *a, **k))
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("k", pa.string())]), primary_keys=["id"],
                         options={"bucket": "4", "write-only": "true"})
    for c in range(3):  # 12 files of about 2,500 rows, one sample
        t.write_arrow(pa.table({"id": pa.array(np.arange(c * 10_000, (c + 1) * 10_000)),
                                "k": pa.array([f"cat-{i % 3}" for i in range(10_000)])}))
    assert len(samples) == 1
    assert t.to_arrow().num_rows == 30_000


# ---------------------------------------------------------------------------- commit: flush all, then wait


class _GatedExecutor(ThreadPoolExecutor):
    """A thread pool whose tasks (compactions) wait for ``gate``; counts the tasks submitted."""

    def __init__(self):
        super().__init__(max_workers=4)
        self.gate = threading.Event()
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs) -> Future:
        self.submitted += 1

        def gated():
            assert self.gate.wait(30), "compaction never released"
            return fn(*args, **kwargs)
        return super().submit(gated)


def _rows(n: int, start: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "k": pa.array([f"k{i}" for i in ids]), "v": rng.normal(size=n),
                     "ts": np.full(n, seed, dtype=np.int64)})


def _fill_to_trigger(table) -> None:
    """Four commits: every bucket holds four level-0 runs, so the fifth flush triggers compaction."""
    for c in range(4):
        table.write_arrow(_rows(400, c * 300, c))


@pytest.fixture
def pk_table(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("k", pa.string()), ("v", pa.float64()), ("ts", pa.int64())])
    return lambda name: cat.create_table(f"db.{name}", schema=schema, primary_keys=["id"], options={"bucket": "4"})


def test_prepare_commit_flushes_every_bucket_before_any_compaction_finishes(pk_table):
    """While every compaction is held back, all four buckets still flush their level-0 file:
    the buckets' compactions run while later buckets flush (not one bucket after the other)."""
    table = pk_table("t")
    _fill_to_trigger(table)
    ex = _GatedExecutor()
    wb = table.new_batch_write_builder()
    w = wb.new_write(compaction_executor=ex)
    w.write_arrow(_rows(400, 1200, 9))
    done = threading.Event()
    result: list = []
    threading.Thread(target=lambda: (result.append(w.prepare_commit()), done.set()), daemon=True).start()
    # prepare_commit is blocked on the first compaction; by then every bucket has flushed
    deadline = threading.Event()
    for _ in range(300):
        if ex.submitted == 4:
            break
        deadline.wait(0.05)
    assert ex.submitted == 4, "a bucket waited for another bucket's compaction before flushing"
    assert not done.is_set()
    ex.gate.set()
    assert done.wait(30)
    wb.new_commit().commit(result[0])
    w.close()
    ex.shutdown()
    assert {m.bucket for m in result[0] if m.compact_after} == {0, 1, 2, 3}


def test_two_phase_commit_writes_what_one_writer_after_another_writes(pk_table):
    """The same commits through prepare_commit (flush all, then wait) and through each bucket
    writer's own prepare_commit in turn (Paimon's order per writer): the same compactions (the
    same levels, row counts and key ranges) and the same rows."""
    fast, plain = pk_table("fast"), pk_table("plain")
    for c in range(10):
        data = _rows(300, c * 200, c)
        fast.write_arrow(data)
        wb = plain.new_batch_write_builder()
        w = wb.new_write(compaction_executor=InlineExecutor())
        w.write_arrow(data)
        w._prepared = True  # the bucket writers' own prepare_commit, one after the other
        messages = [m for bw in w._writers.values() for m in [bw.prepare_commit(True)] if not m.is_empty()]
        wb.new_commit().commit(messages)
        w.close()

    def shape(t):
        files = sorted((s.bucket, f.level, f.row_count, f.min_key, f.max_key, f.min_sequence_number,
                        f.max_sequence_number) for s in t.new_read_builder().new_scan().plan().splits() for f in s.files)
        kinds = [s.commit_kind for s in t.snapshots()]
        return files, kinds
    assert shape(fast) == shape(plain)
    assert CommitKind.COMPACT in shape(fast)[1]
    assert fast.to_arrow().sort_by("id").equals(plain.to_arrow().sort_by("id"))


# ---------------------------------------------------------------------------- routing


@pytest.mark.parametrize("high", [4, 2**15 - 1, 2**15 + 5, 2**40])
def test_split_by_group_keeps_input_order_within_each_group(high):
    """Group ids that fit int16 (the radix-sorted narrow copy) and wider ones split alike:
    each group's rows in input order, groups ascending."""
    rng = np.random.default_rng(high % 1000)
    n = 5000
    ids = rng.choice(np.array([0, 1, high // 2, high], dtype=np.int64), n)
    t = pa.table({"pos": np.arange(n)})
    got = [(g, part.column("pos").to_pylist()) for g, part in split_by_group(t, ids)]
    want = [(int(g), np.flatnonzero(ids == g).tolist()) for g in np.unique(ids)]
    assert got == want

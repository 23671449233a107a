"""MergeTreeWriter on a local table directory: files, metadata, flushes, compaction, messages, close."""

from __future__ import annotations

import itertools
import os
import threading
import time
from concurrent.futures import Executor, Future

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mergetree_helpers import DirectExecutor, Table, make_schema

from impl.data.binary_row import decode_row, encode_row
from impl.data.types import BIGINT, DOUBLE, STRING
from impl.datafile.meta import DataFileMeta, FileSource
from impl.errors import SchemaMismatchError
from impl.fs.file_io import FileIO
from impl.mergetree import KVLayout, MergeEngineError, WriterClosedError, read_kv_files
from impl.mergetree.compact_task import CompactResult

INS, UB, UA, D = 0, 1, 2, 3


def batch(ids, v=None, k=None, ts=None, dt=None):
    ids = list(ids)
    n = len(ids)
    cols = {"id": pa.array(ids, pa.int64()),
            "k": pa.array(k if k is not None else [f"k{i}" for i in ids], pa.string()),
            "v": pa.array(v if v is not None else [float(i) for i in ids], pa.float64()),
            "ts": pa.array(ts if ts is not None else list(range(n)), pa.int64())}
    if dt is not None:
        cols = {"dt": pa.array([dt] * n), **cols}
    return pa.table(cols)


def values(table):
    return {r["id"]: r["v"] for r in table.to_pylist()}


# ------------------------------------------------------------------------------ file format


def test_flushed_file_format_and_meta(tmp_path):
    schema = make_schema(partitioned=True)
    part = encode_row(["2024-01-01"], [STRING(False)])
    t = Table(tmp_path, schema, {"bucket": "1"}, partition=part, partition_path="dt=2024-01-01")
    w = t.writer()
    data = batch([5, 3, 9, 3], v=[1.5, None, 7.0, 2.5], k=["x", "a" * 40, None, "b"], dt="2024-01-01")
    w.write(data, pa.array([INS, INS, INS, D], pa.int8()))
    msg = w.prepare_commit(True)
    w.close()
    assert msg.partition == part and msg.bucket == 0 and msg.total_buckets == 1
    assert not msg.compact_before and not msg.compact_after and not msg.changelog_files
    [meta] = msg.new_files
    path = os.path.join(t.bucket_dir(), meta.file_name)
    assert t.bucket_dir().endswith("dt=2024-01-01/bucket-0")
    assert meta.file_name.startswith("data-") and meta.file_name.endswith(".parquet")
    assert meta.file_size == os.path.getsize(path)

    pf = pq.ParquetFile(path)
    s = pf.schema_arrow
    assert s.names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "id", "k", "v", "ts"]
    assert [str(s.field(n).type) for n in s.names] == ["int64", "int64", "int8", "string", "int64", "string",
                                                      "double", "int64"]
    assert not s.field("_SEQUENCE_NUMBER").nullable and not s.field("_VALUE_KIND").nullable
    assert pf.metadata.row_group(0).column(0).compression == "ZSTD"
    rows = pf.read().to_pylist()
    # sorted by key, one row per key, the -D of key 3 kept (level 0 is not the highest level)
    assert [(r["_KEY_id"], r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"]) for r in rows] == [(3, 3, D), (5, 0, INS), (9, 2, INS)]

    key_type = [BIGINT(False)]
    assert meta.row_count == 3 and meta.level == 0 and meta.schema_id == 0
    assert decode_row(meta.min_key, key_type) == (3,) and decode_row(meta.max_key, key_type) == (9,)
    assert meta.key_stats.min_values == meta.min_key and meta.key_stats.max_values == meta.max_key
    assert meta.key_stats.null_counts == (0,)
    assert (meta.min_sequence_number, meta.max_sequence_number) == (0, 3)
    assert meta.delete_row_count == 1
    assert meta.file_source == FileSource.APPEND
    assert meta.value_stats_cols is None and meta.extra_files == ()
    assert meta.creation_time_millis is not None and abs(meta.creation_time_millis - time.time() * 1000) < 60_000
    vtypes = [f.type for f in schema.fields]
    vmin = decode_row(meta.value_stats.min_values, vtypes)
    vmax = decode_row(meta.value_stats.max_values, vtypes)
    assert vmin == ("2024-01-01", 3, "b", 1.5, 0) and vmax[:2] == ("2024-01-01", 9)
    assert vmax[2] == "x" and vmax[3:] == (7.0, 3)
    assert meta.value_stats.null_counts == (0, 0, 1, 0, 0)


def test_value_stats_truncate_long_strings_key_stats_keep_128_chars(tmp_path):
    # Paimon's StatsCollectorFactories: value columns (the primary key's value copy included)
    # follow metadata.stats-mode, default truncate(16); _KEY_ columns are system fields and
    # keep truncate(128). Min / max keys are the exact first / last key either way.
    from impl.data.types import DataField
    from impl.schema.records import TableSchema
    schema = TableSchema(0, (DataField(0, "id", STRING(False)), DataField(1, "s", STRING())), primary_keys=("id",))
    t = Table(tmp_path, schema, {})
    w = t.writer()
    long_key, very_long_key, long_val = "K" * 30, "L" * 200, "abcdefghijklmnopqrstuvwxyz"
    w.write(pa.table({"id": [long_key, very_long_key], "s": [long_val, None]}))
    [meta] = w.prepare_commit(True).new_files
    w.close()
    key_type, types = [STRING(False)], [f.type for f in schema.fields]
    assert decode_row(meta.min_key, key_type) == (long_key,)
    assert decode_row(meta.max_key, key_type) == (very_long_key,)
    assert decode_row(meta.key_stats.min_values, key_type) == (long_key,)
    assert decode_row(meta.key_stats.max_values, key_type) == ("L" * 127 + "M",)
    assert decode_row(meta.value_stats.min_values, types) == (long_key[:16], long_val[:16])
    assert decode_row(meta.value_stats.max_values, types) == ("L" * 15 + "M", long_val[:15] + "q")
    assert meta.value_stats.null_counts == (0, 1) and meta.value_stats_cols is None


def test_min_key_bytes_match_pypaimon_reference():
    # _MIN_KEY of key id=1 in the pypaimon 2.1.0 dump of pk_t
    expected = b"\x00\x00\x00\x01" + bytes(8) + b"\x01" + bytes(7)
    from impl.mergetree import KeyCodec
    assert KeyCodec([BIGINT(False)]).encode([1]) == expected


# ------------------------------------------------------------------------------ sequence numbers


def test_sequence_numbers_start_at_zero_and_resume_after_restored_files(tmp_path):
    t = Table(tmp_path, make_schema(), {})
    w = t.writer()
    assert w.next_sequence_number == 0
    w.write(batch(range(10)))
    t.apply(w.prepare_commit(True))
    w.close()
    assert max(f.max_sequence_number for f in t.live.values()) == 9

    w2 = t.writer()  # restored from the live files
    assert w2.next_sequence_number == 10
    w2.write(batch([3, 42]))
    msg = w2.prepare_commit(True)
    w2.close()
    raw = read_kv_files(t.io, t.paths, t.schema, "", 0, msg.new_files)
    assert sorted(raw.column("_SEQUENCE_NUMBER").to_pylist()) == [10, 11]
    t.apply(msg)
    assert values(t.read())[3] == 3.0 and len(t.read()) == 11


def test_restored_max_sequence_number_not_file_order(tmp_path):
    t = Table(tmp_path, make_schema(), {})
    restored = [DataFileMeta("a", 1, 1, max_sequence_number=41, level=2),
                DataFileMeta("b", 1, 1, max_sequence_number=7, level=0)]
    w = t.writer(restored)
    assert w.next_sequence_number == 42
    w.close()


# ------------------------------------------------------------------------------ buffer and rolling


def test_full_buffer_flushes_several_level0_files_and_bounds_memory(tmp_path):
    t = Table(tmp_path, make_schema(), {"write-buffer-size": "16 kb", "write-only": "true"})
    w = t.writer()
    data = batch(range(5000))
    layout_bytes = data.nbytes / 5000 + 9
    w.write(data)
    assert w.buffered_rows * layout_bytes <= 16 * 1024  # what stays buffered fits the buffer
    msg = w.prepare_commit(False)
    w.close()
    assert len(msg.new_files) > 5
    assert all(f.level == 0 for f in msg.new_files)
    assert not msg.compact_before and not msg.compact_after
    assert sum(f.row_count for f in msg.new_files) == 5000
    t.apply(msg)
    assert values(t.read()) == {i: float(i) for i in range(5000)}


def test_flush_rolls_files_at_target_size(tmp_path):
    t = Table(tmp_path, make_schema(), {"target-file-size": "16 kb", "write-only": "true"})
    w = t.writer()
    rng = np.random.default_rng(1)
    w.write(batch(rng.permutation(20000), v=rng.random(20000).tolist()))
    files = w.prepare_commit(False).new_files
    w.close()
    assert len(files) > 3
    for f in files[:-1]:
        assert 16 * 1024 <= f.file_size < 3 * 16 * 1024
    keys = [(decode_row(f.min_key, [BIGINT()])[0], decode_row(f.max_key, [BIGINT()])[0]) for f in files]
    assert keys[0][0] == 0 and keys[-1][1] == 19999
    for (_, hi), (lo, _) in itertools.pairwise(keys):
        assert hi < lo  # rolled files of one flush are one sorted run


# ------------------------------------------------------------------------------ compaction


def check_levels(live):
    """Files of one level >= 1 never overlap; returns files per level."""
    by_level = {}
    for f in live.values():
        by_level.setdefault(f.level, []).append(f)
    for lvl, files in by_level.items():
        if lvl == 0:
            continue
        spans = sorted((decode_row(f.min_key, [BIGINT()])[0], decode_row(f.max_key, [BIGINT()])[0]) for f in files)
        for (_, hi), (lo, _) in itertools.pairwise(spans):
            assert hi < lo, f"level {lvl} overlaps: {spans}"
    return by_level


def run_random_workload(t, seed, steps, executor_check=None):
    rng = np.random.default_rng(seed)
    ref = {}
    w = t.writer()
    try:
        for _ in range(steps):
            n = int(rng.integers(1, 400))
            ids = rng.integers(0, 600, n)
            kinds = rng.choice([INS, INS, INS, UA, D], n).astype(np.int8)
            v = rng.random(n).round(3)
            w.write(batch(ids.tolist(), v=v.tolist()), pa.array(kinds))
            for i, kind, x in zip(ids.tolist(), kinds.tolist(), v.tolist(), strict=True):
                if kind in (UB, D):
                    ref.pop(i, None)
                else:
                    ref[i] = x
            if executor_check:
                executor_check(w)
            r = rng.random()
            if r < 0.15:
                w.compact(full=bool(rng.random() < 0.3))
            if r < 0.5:
                msg = w.prepare_commit(bool(rng.random() < 0.5))
                assert all(f.level > 0 for f in msg.compact_after), "compaction output on level 0"
                assert all(f.level == 0 for f in msg.new_files)
                t.apply(msg)
                check_levels(t.live)
        t.apply(w.prepare_commit(True))
    finally:
        w.close()
    check_levels(t.live)
    assert values(t.read()) == ref
    return ref


OPTS = {"write-buffer-size": "12 kb", "target-file-size": "6 kb", "num-sorted-run.compaction-trigger": "3"}


def test_compaction_never_outputs_level0_and_reads_match_reference(tmp_path):
    executor = DirectExecutor()
    t = Table(tmp_path, make_schema(), OPTS, executor=executor)
    run_random_workload(t, seed=7, steps=40)
    assert executor.submitted > 3
    assert any(m.compact_after for m in t.messages)
    assert any(f.level > 0 for f in t.live.values())


def test_background_compaction_threads_and_stop_trigger(tmp_path):
    opts = {**OPTS, "num-sorted-run.stop-trigger": "5"}
    t = Table(tmp_path, make_schema(), opts)  # the writer's own background thread
    seen = []

    def check(w):
        seen.append(w.levels.number_of_sorted_runs())
        # waiting on the stop trigger bounds the runs (a flush may add files while one compaction runs)
        assert w.levels.number_of_sorted_runs() <= 5 + 3

    run_random_workload(t, seed=3, steps=40, executor_check=check)
    assert max(seen) >= 3


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(
    st.tuples(st.just("write"), st.lists(st.tuples(st.integers(0, 40), st.sampled_from([INS, INS, UA, D])),
                                          min_size=1, max_size=60)),
    st.tuples(st.just("commit"), st.booleans()),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("reopen"), st.just(None)),
), min_size=3, max_size=30))
def test_random_operations_match_dict_reference(tmp_path_factory, ops):
    t = Table(tmp_path_factory.mktemp("t"), make_schema(),
              {"write-buffer-size": "2 kb", "target-file-size": "2 kb", "num-sorted-run.compaction-trigger": "2",
               "num-levels": "4"}, executor=DirectExecutor())
    ref: dict = {}
    w = t.writer()
    value = 0
    for op, arg in ops:
        if op == "write":
            ids = [i for i, _ in arg]
            kinds = [k for _, k in arg]
            vals = [float(value + j) for j in range(len(arg))]
            value += len(arg)
            w.write(batch(ids, v=vals), pa.array(kinds, pa.int8()))
            for i, kind, x in zip(ids, kinds, vals, strict=True):
                if kind == D:
                    ref.pop(i, None)
                else:
                    ref[i] = x
        elif op == "commit":
            t.apply(w.prepare_commit(arg))
        elif op == "compact":
            w.compact(arg)
        else:  # commit what we have, then continue with a fresh writer restored from the live files
            t.apply(w.prepare_commit(True))
            w.close()
            w = t.writer()
    t.apply(w.prepare_commit(True))
    w.close()
    check_levels(t.live)
    assert all(f.level > 0 for m in t.messages for f in m.compact_after)
    assert values(t.read()) == ref
    # every live file exists; nothing is on disk that no message mentions
    on_disk = t.files_on_disk()
    assert {f.file_name for f in t.live.values()} <= on_disk
    assert on_disk <= t.files_in_messages()


def test_full_compaction_reaches_max_level_and_drops_deletes(tmp_path):
    t = Table(tmp_path, make_schema(), {"num-levels": "3"}, executor=DirectExecutor())
    w = t.writer()
    w.write(batch(range(10)))
    t.apply(w.prepare_commit(True))
    w.write(batch([1, 2]), pa.array([D, D], pa.int8()))
    w.compact(full=True)
    msg = w.prepare_commit(True)
    w.close()
    t.apply(msg)
    assert {f.level for f in t.live.values()} == {2}
    assert all(f.file_source == FileSource.COMPACT for f in msg.compact_after)
    raw = read_kv_files(t.io, t.paths, t.schema, "", 0, list(t.live.values()))
    assert sorted(raw.column("id").to_pylist()) == [0, 3, 4, 5, 6, 7, 8, 9]  # deletes dropped on the max level
    assert set(raw.column("_VALUE_KIND").to_pylist()) == {INS}


def test_upgrade_moves_big_non_overlapping_files_without_rewriting(tmp_path):
    # every flushed file is bigger than 70% of the 1 kb target: compaction upgrades, keeping names
    t = Table(tmp_path, make_schema(), {"target-file-size": "1 kb", "num-levels": "3", "write-only": "true"},
              executor=DirectExecutor())
    w = t.writer()
    for lo in (0, 100, 200):
        w.write(batch(range(lo, lo + 50)))
        t.apply(w.prepare_commit(False))
    w.compact(full=True)
    msg = w.prepare_commit(True)
    t.apply(msg)
    assert {f.file_name for f in msg.compact_before} == {f.file_name for f in msg.compact_after}
    assert {f.level for f in msg.compact_after} == {2}
    # a file with deletes is rewritten, not upgraded, into the max level
    w.write(batch([300, 301]), pa.array([INS, D], pa.int8()))
    t.apply(w.prepare_commit(False))
    w.compact(full=True)
    msg = w.prepare_commit(True)
    w.close()
    t.apply(msg)
    [old] = [f for f in msg.compact_before if f.delete_row_count]
    assert old.file_name not in {f.file_name for f in msg.compact_after}
    assert 301 not in values(t.read()) and 300 in values(t.read())


def test_intermediate_compaction_outputs_are_deleted(tmp_path):
    t = Table(tmp_path, make_schema(), {"write-only": "true"}, executor=DirectExecutor())
    w = t.writer()
    w.write(batch(range(0, 20)))
    t.apply(w.prepare_commit(True))
    w.write(batch(range(10, 30)))
    w.compact(full=True)  # compaction 1 runs now; its result is synced at the next flush
    w.write(batch(range(5, 15)))
    w.compact(full=True)  # syncs compaction 1 (output X), then compacts X with the new file
    msg = w.prepare_commit(True)
    w.close()
    inputs = {f.file_name for f in msg.compact_before}
    outputs = {f.file_name for f in msg.compact_after}
    assert len(msg.new_files) == 2 and {f.file_name for f in msg.new_files} <= inputs
    assert len(inputs) == 3  # first commit's file + the two new ones; never X
    on_disk = t.files_on_disk()
    assert outputs <= on_disk
    assert on_disk == inputs | outputs  # X was deleted
    t.apply(msg)
    assert values(t.read()) == {i: float(i) for i in range(30)}


def test_update_compact_result_rule_for_upgrades(tmp_path):
    """Seed 003: an intermediate file is deleted unless an upgrade shares its name with a live file."""
    t = Table(tmp_path, make_schema(), {})
    w = t.writer()
    os.makedirs(t.bucket_dir(), exist_ok=True)
    for name in ("A", "B", "C", "X", "Y"):
        open(os.path.join(t.bucket_dir(), name), "wb").close()

    def meta(name, level):
        return DataFileMeta(name, 1, 1, level=level)

    w._update_compact_result(CompactResult((meta("A", 0),), (meta("A", 1),)))  # upgrade of a committed file
    w._update_compact_result(CompactResult((meta("A", 1),), (meta("A", 2),)))  # upgraded again
    w._update_compact_result(CompactResult((meta("A", 2),), (meta("B", 2),)))  # then rewritten
    assert os.path.exists(os.path.join(t.bucket_dir(), "A"))  # still the committed A@0's file
    w._update_compact_result(CompactResult((meta("C", 0),), (meta("X", 1),)))
    w._update_compact_result(CompactResult((meta("X", 1),), (meta("X", 2),)))  # intermediate, but upgraded
    assert os.path.exists(os.path.join(t.bucket_dir(), "X"))
    w._update_compact_result(CompactResult((meta("X", 2),), (meta("Y", 2),)))  # intermediate: deleted
    assert not os.path.exists(os.path.join(t.bucket_dir(), "X"))
    msg = w.prepare_commit(False)
    assert [(f.file_name, f.level) for f in msg.compact_before] == [("A", 0), ("C", 0)]
    assert [(f.file_name, f.level) for f in msg.compact_after] == [("B", 2), ("Y", 2)]
    w.close()


def test_write_only_never_compacts_but_explicit_compact_works(tmp_path):
    executor = DirectExecutor()
    t = Table(tmp_path, make_schema(), {"write-only": "true", "num-sorted-run.compaction-trigger": "2"},
              executor=executor)
    w = t.writer()
    for i in range(12):
        w.write(batch([i, i + 1]))
        msg = w.prepare_commit(True)
        assert not msg.compact_before and not msg.compact_after
        t.apply(msg)
    assert executor.submitted == 0
    assert w.levels.number_of_sorted_runs() == 12
    w.compact(full=False)
    msg = w.prepare_commit(True)
    assert executor.submitted == 1 and msg.compact_before
    t.apply(msg)
    w.compact(full=True)
    msg = w.prepare_commit(True)
    w.close()
    t.apply(msg)
    assert {f.level for f in t.live.values()} == {t.options.num_levels - 1}
    assert values(t.read()) == {i: float(i) for i in range(13)}


# ------------------------------------------------------------------------------ changelog


def test_changelog_input_writes_raw_rows(tmp_path):
    t = Table(tmp_path, make_schema(), {"changelog-producer": "input"})
    w = t.writer()
    w.write(batch([2, 1, 2, 3], v=[1.0, 2.0, 3.0, 4.0]), pa.array([INS, INS, UA, D], pa.int8()))
    msg = w.prepare_commit(True)
    w.close()
    [data] = msg.new_files
    [log] = msg.changelog_files
    assert log.file_name.startswith("changelog-") and log.level == 0
    raw = read_kv_files(t.io, t.paths, t.schema, "", 0, [log])
    assert [(r["id"], r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"], r["v"]) for r in raw.to_pylist()] == [
        (1, 1, INS, 2.0), (2, 0, INS, 1.0), (2, 2, UA, 3.0), (3, 3, D, 4.0)]
    merged = read_kv_files(t.io, t.paths, t.schema, "", 0, [data])
    assert merged.column("id").to_pylist() == [1, 2, 3]
    assert log.row_count == 4 and data.row_count == 3


def test_changelog_input_insert_only_copies_the_data_file(tmp_path):
    t = Table(tmp_path, make_schema(), {"changelog-producer": "input", "target-file-size": "4 kb"})
    w = t.writer()
    w.write(batch(range(3000)))
    msg = w.prepare_commit(True)
    w.close()
    assert len(msg.new_files) > 1 and len(msg.changelog_files) == len(msg.new_files)
    for data, log in zip(msg.new_files, msg.changelog_files, strict=True):
        assert log == data.rename(log.file_name)
        with open(os.path.join(t.bucket_dir(), data.file_name), "rb") as a, \
                open(os.path.join(t.bucket_dir(), log.file_name), "rb") as b:
            assert a.read() == b.read()


def test_changelog_input_not_copied_when_a_key_repeats(tmp_path):
    t = Table(tmp_path, make_schema(), {"changelog-producer": "input"})
    w = t.writer()
    w.write(batch([1, 1, 2]))
    msg = w.prepare_commit(True)
    w.close()
    assert msg.changelog_files[0].row_count == 3 and msg.new_files[0].row_count == 2


# ------------------------------------------------------------------------------ close


def test_close_without_commit_leaves_nothing(tmp_path):
    t = Table(tmp_path, make_schema(), {"write-buffer-size": "4 kb", "changelog-producer": "input"},
              executor=DirectExecutor())
    w = t.writer()
    w.write(batch(range(2000)))  # several flushes (and possibly compactions) happened
    assert t.files_on_disk()
    w.close()
    assert t.files_on_disk() == set()
    w.close()  # idempotent
    with pytest.raises(WriterClosedError):
        w.write(batch([1]))


def test_close_deletes_unsynced_compaction_outputs(tmp_path):
    t = Table(tmp_path, make_schema(), {"num-sorted-run.compaction-trigger": "2"}, executor=DirectExecutor())
    w = t.writer()
    for i in range(4):
        w.write(batch(range(i * 5, i * 5 + 10)))
        t.apply(w.prepare_commit(False))
    w.write(batch(range(100, 110)))
    w.compact(full=True)  # finished at once, not yet synced into a message
    assert w.is_compacting
    w.close()
    on_disk = t.files_on_disk()
    assert on_disk <= t.files_in_messages()
    assert {f.file_name for f in t.live.values()} <= on_disk


class GatedFileIO(FileIO):
    """Blocks compaction threads after their first file write until released."""

    def __init__(self):
        super().__init__()
        self.wrote = threading.Event()
        self.release = threading.Event()

    def write_bytes(self, path, data):
        super().write_bytes(path, data)
        self._after_write()

    def open_output(self, path):  # data files are streamed
        return _AfterClose(super().open_output(path), self._after_write)

    def _after_write(self):
        if threading.current_thread() is not threading.main_thread():
            self.wrote.set()
            assert self.release.wait(10)


class _AfterClose:
    """A FileIO output stream that runs ``hook`` once its file is complete."""

    def __init__(self, out, hook):
        self._out, self._hook = out, hook
        self.path, self.stream = out.path, out.stream

    def tell(self):
        return self._out.tell()

    def close(self):
        size = self._out.close()
        self._hook()
        return size

    def abort(self):
        self._out.abort()


def test_close_cancels_a_running_compaction_and_deletes_its_files(tmp_path):
    # a high stop trigger: prepare_commit must not wait for the blocked compaction; one file per
    # flush (a large target), so the first compaction merges two overlapping runs and writes (with
    # a 2 kb target a flush rolled into several non-overlapping level-0 files, which a compaction
    # may only upgrade, writing nothing)
    t = Table(tmp_path, make_schema(), {"num-sorted-run.compaction-trigger": "2", "target-file-size": "1 mb",
                                        "num-sorted-run.stop-trigger": "100"})
    t.io = GatedFileIO()
    w = t.writer()
    for i in range(3):
        w.write(batch(range(i * 100, i * 100 + 300)))
        t.apply(w.prepare_commit(False))
        if w.is_compacting:
            break
    assert w.is_compacting
    assert t.io.wrote.wait(10)  # the compaction wrote a file and is blocked
    threading.Timer(0.2, t.io.release.set).start()
    w.close()
    on_disk = t.files_on_disk()
    assert on_disk <= t.files_in_messages()
    assert {f.file_name for f in t.live.values()} <= on_disk


# ------------------------------------------------------------------------------ input validation


def test_bad_input_is_rejected_before_buffering(tmp_path):
    t = Table(tmp_path, make_schema(), {})
    w = t.writer()
    with pytest.raises(SchemaMismatchError, match="misses"):
        w.write(pa.table({"id": [1]}))
    with pytest.raises(SchemaMismatchError, match="NOT NULL"):
        w.write(pa.table({"id": pa.array([None], pa.int64()), "k": ["a"], "v": [1.0], "ts": [1]}))
    with pytest.raises(SchemaMismatchError, match="cannot convert"):
        w.write(pa.table({"id": ["x"], "k": ["a"], "v": [1.0], "ts": [1]}))
    with pytest.raises(SchemaMismatchError, match="0..3"):
        w.write(batch([1]), pa.array([7], pa.int8()))
    with pytest.raises(SchemaMismatchError, match="row_kinds has"):
        w.write(batch([1, 2]), pa.array([0], pa.int8()))
    assert w.buffered_rows == 0 and w.next_sequence_number == 0
    w.write(pa.table({"id": pa.array([1], pa.int32()), "k": ["a"], "v": [1], "ts": [1]}))  # castable types
    assert w.buffered_rows == 1
    w.close()


def test_partial_update_without_delete_policy_rejects_deletes_on_write(tmp_path):
    t = Table(tmp_path, make_schema(), {"merge-engine": "partial-update"})
    w = t.writer()
    with pytest.raises(MergeEngineError):
        w.write(batch([1]), pa.array([D], pa.int8()))
    w.close()


def test_rowkind_field_gives_the_row_kinds(tmp_path):
    from impl.data.types import DataField
    from impl.schema.records import TableSchema
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)), DataField(1, "v", DOUBLE()), DataField(2, "op", STRING())),
                         primary_keys=("id",))
    t = Table(tmp_path, schema, {"rowkind.field": "op"})
    w = t.writer()
    w.write(pa.table({"id": [1, 2, 1], "v": [1.0, 2.0, 3.0], "op": ["+I", "+I", "-D"]}))
    with pytest.raises(SchemaMismatchError, match="rowkind.field"):
        w.write(pa.table({"id": [1], "v": [1.0], "op": ["delete"]}))
    t.apply(w.prepare_commit(True))
    w.close()
    assert t.read().to_pylist() == [{"id": 2, "v": 2.0, "op": "+I"}]
    layout = KVLayout(schema)
    assert layout.value_names == ("id", "v", "op")


class FailingCompactionIO(FileIO):
    """While ``fail`` is set, every write from a compaction thread after its first one fails."""

    def __init__(self):
        super().__init__()
        self.fail = True
        self.background_writes = 0

    def write_bytes(self, path, data):
        self._maybe_fail()
        super().write_bytes(path, data)

    def open_output(self, path):  # data files are streamed
        self._maybe_fail()
        return super().open_output(path)

    def _maybe_fail(self):
        if threading.current_thread() is not threading.main_thread():
            self.background_writes += 1
            if self.fail and self.background_writes > 1:
                raise OSError("disk full (injected)")


def test_failed_background_compaction_cleans_up_and_surfaces(tmp_path):
    t = Table(tmp_path, make_schema(), {"num-sorted-run.compaction-trigger": "2", "target-file-size": "2 kb"})
    t.io = FailingCompactionIO()
    w = t.writer()
    written = set()
    with pytest.raises(OSError, match="injected"):
        for i in range(6):
            ids = range(i * 50, i * 50 + 300)
            w.write(batch(ids))
            written.update(ids)
            t.apply(w.prepare_commit(True))
    assert t.io.background_writes > 1
    assert not w.is_compacting
    assert t.files_on_disk() <= t.files_in_messages() | {f.file_name for f in w._new_files}
    t.io.fail = False
    t.apply(w.prepare_commit(True))  # the writer carries on; the flushed files come out now
    w.close()
    assert t.files_on_disk() <= t.files_in_messages()
    assert values(t.read()) == {i: float(i) for i in written}


def test_composite_key_and_many_types_round_trip_through_compaction(tmp_path):
    import datetime as dt
    import decimal

    from impl.data.types import DATE, DECIMAL, INT, TIMESTAMP, DataField, DataType
    from impl.schema.records import TableSchema
    fields = (DataField(0, "name", STRING(False)), DataField(1, "n", INT(False)),
              DataField(2, "d", DECIMAL(20, 3)), DataField(3, "t", TIMESTAMP(6)), DataField(4, "day", DATE()),
              DataField(5, "tags", DataType("ARRAY", children=(STRING(),))))
    schema = TableSchema(0, fields, primary_keys=("name", "n"))
    t = Table(tmp_path, schema, {"num-sorted-run.compaction-trigger": "2", "target-file-size": "1 kb"},
              executor=DirectExecutor())
    w = t.writer()
    ref = {}
    rng = np.random.default_rng(5)
    for r in range(6):
        names = rng.choice(["", "a", "ab", "b", "é", "z" * 20], 40)
        ns = rng.integers(-3, 3, 40)
        rows = []
        for j, (name, n) in enumerate(zip(names.tolist(), ns.tolist(), strict=True)):
            row = {"name": name, "n": n, "d": decimal.Decimal(f"{r}.{j:03d}"),
                   "t": dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=r * 1000 + j),
                   "day": dt.date(2024, 1, 1 + j % 28), "tags": [name, str(n)] if j % 3 else None}
            rows.append(row)
            ref[(name, n)] = row
        w.write(pa.Table.from_pylist(rows, schema=KVLayout(schema).user_schema))
        t.apply(w.prepare_commit(bool(r % 2)))
    w.compact(full=True)
    t.apply(w.prepare_commit(True))
    w.close()
    out = t.read()
    assert {(r["name"], r["n"]): r for r in out.to_pylist()} == ref
    keys = [(r["name"], r["n"]) for r in out.to_pylist()]
    assert keys == sorted(keys, key=lambda k: (k[0].encode(), k[1]))  # byte order of strings, then n
    for f in t.live.values():
        lo = decode_row(f.min_key, KVLayout(schema).key_types)
        hi = decode_row(f.max_key, KVLayout(schema).key_types)
        assert lo <= hi
        # ARRAY has no min / max: value stats leave it out and name the columns they cover
        assert f.value_stats_cols == ("name", "n", "d", "t", "day")
        stats_max = decode_row(f.value_stats.max_values, [x.type for x in fields[:5]])
        assert all(v is not None for v in stats_max) and len(f.value_stats.null_counts) == 5


AGG_ROW = st.fixed_dictionaries({
    "id": st.integers(0, 6), "_kind": st.sampled_from([INS, INS, UA, UB, D]),
    "s": st.none() | st.integers(-5, 5), "c": st.none() | st.integers(0, 3), "mn": st.none() | st.integers(-5, 5),
    "mx": st.none() | st.integers(-5, 5).map(float), "lv": st.none() | st.sampled_from(["a", "b"]),
    "lnn": st.none() | st.sampled_from(["a", "b"]), "fv": st.none() | st.integers(0, 3),
    "fnn": st.none() | st.integers(0, 3), "la": st.none() | st.sampled_from(["x", "y", " "]),
    "ba": st.none() | st.booleans(), "bo": st.none() | st.booleans()})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(rounds=st.lists(st.tuples(st.lists(AGG_ROW, min_size=1, max_size=30), st.booleans(), st.booleans()),
                       min_size=1, max_size=10))
def test_aggregation_through_flushes_and_compactions_matches_reference(tmp_path_factory, rounds):
    from mergetree_helpers import AGG_OPTIONS, agg_schema, ref_aggregate
    ignore = ("mn", "mx", "fv", "fnn", "la", "ba", "bo", "lnn")
    opts = {**AGG_OPTIONS, **{f"fields.{c}.ignore-retract": "true" for c in ignore},
            "num-sorted-run.compaction-trigger": "2", "num-levels": "3", "write-buffer-size": "2 kb"}
    schema = agg_schema()
    t = Table(tmp_path_factory.mktemp("agg"), schema, opts, executor=DirectExecutor())
    user_schema = KVLayout(schema).user_schema
    all_rows = []
    w = t.writer()
    for rows, full, wait in rounds:
        w.write(pa.Table.from_pylist([{k: v for k, v in r.items() if k != "_kind"} for r in rows], schema=user_schema),
                pa.array([r["_kind"] for r in rows], pa.int8()))
        all_rows += rows
        if full:
            w.compact(full=True)
        t.apply(w.prepare_commit(wait))
    w.close()
    ref = ref_aggregate(all_rows, ignore)
    got = {r["id"]: {c: r[c] for c in ref[r["id"]]} for r in t.read().to_pylist()}
    assert got == ref


def test_rechunk_combines_runs_of_small_tables_and_keeps_order():
    from impl.mergetree.writer import flush_chunk_rows, rechunk
    tables = [pa.table({"x": list(range(i * 10, i * 10 + 10))}) for i in range(25)]
    tables.insert(10, pa.table({"x": list(range(1000, 1200))}))
    out = rechunk(list(tables), 30)
    assert pa.concat_tables(out).column("x").to_pylist() == pa.concat_tables(tables).column("x").to_pylist()
    assert [t.num_rows for t in out] == [30, 30, 30, 10, 200, 30, 30, 30, 30, 30]
    assert all(t.column("x").num_chunks == 1 for t in out)
    assert flush_chunk_rows(0.0, 0) == 1 << 20 and flush_chunk_rows(64e6, 1000) == 4096


class _HeldExecutor(Executor):
    """An executor that queues what is submitted and runs nothing: each task stays pending, as
    one waiting behind another bucket's compaction on the single compaction thread does."""

    def __init__(self):
        self.queued: list = []

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        self.queued.append((future, fn))
        return future


@pytest.mark.parametrize("fails", [False, True])
def test_a_queued_compaction_runs_on_the_committing_thread(tmp_path, monkeypatch, fails):
    """run_queued_compaction runs a compaction the executor has not started on the calling thread
    (the queued one is cancelled, so it never runs twice); the sync takes its result (or its
    error) as it would the executor's, and the data equal a writer whose compaction ran there."""
    executor = _HeldExecutor()
    t = Table(tmp_path, make_schema(), {"num-sorted-run.compaction-trigger": "2"}, executor=executor)
    w = t.writer()
    expected = {}
    for i in range(3):
        ids = list(range(i * 5, i * 5 + 8))
        w.write(batch(ids, k=[f"r{i}-{x}" for x in ids]))
        expected.update({x: f"r{i}-{x}" for x in ids})
        w.flush_for_commit()
        if not executor.queued:
            t.apply(w.prepare_commit(False))
    assert len(executor.queued) == 1
    future, _ = executor.queued[0]
    if fails:
        monkeypatch.setattr(CompactResult, "__init__", _raise_disk_gone)
    w.run_queued_compaction()
    assert future.cancelled()  # the executor's copy will never run
    if fails:
        with pytest.raises(OSError, match="disk gone"):
            w.prepare_commit(True)
        w.close()
        assert t.files_on_disk() == {name for _, name in t.live}  # the failed compaction left nothing
        return
    msg = w.prepare_commit(True)
    assert msg.compact_before and msg.compact_after
    t.apply(msg)
    w.close()
    got = t.read()
    assert dict(zip(got.column("id").to_pylist(), got.column("k").to_pylist(), strict=True)) == expected


def _raise_disk_gone(self, *args, **kwargs):
    raise OSError("disk gone")


def test_flushes_and_compactions_hand_memory_back_only_when_they_freed_much(tmp_path, monkeypatch):
    """Handing a small flush's memory back costs the next flush page faults (huge pages zeroed
    again): only flushes of at least RELEASE_MIN_BYTES (and every merge of spilled runs) and
    compactions of that many input bytes release."""
    import impl.mergetree.memory as memory
    released = []
    monkeypatch.setattr(memory, "release_unused", lambda: released.append(threading.current_thread().name))
    t = Table(tmp_path, make_schema(), {"bucket": "1", "num-sorted-run.compaction-trigger": "2"},
              executor=DirectExecutor())
    w = t.writer()
    for r in range(3):  # small flushes and their compactions: nothing released
        w.write(batch(range(r * 100, r * 100 + 200)))
        t.apply(w.prepare_commit(True))
    assert released == [] and any(m.compact_before for m in t.messages)
    monkeypatch.setattr(memory, "RELEASE_MIN_BYTES", 1)  # now every flush and compaction is large
    w.write(batch(range(1000, 1200)))
    t.apply(w.prepare_commit(True))
    w.close()
    assert t.messages[-1].compact_before
    assert len(released) == 2  # the flush and the compaction it triggered
    assert values(t.read()) == {i: float(i) for i in [*range(0, 400), *range(1000, 1200)]}


def test_release_after_counts_against_the_threshold(monkeypatch):
    import impl.mergetree.memory as memory
    calls = []
    monkeypatch.setattr(memory, "release_unused", lambda: calls.append(1))
    memory.release_after(memory.RELEASE_MIN_BYTES - 1)
    assert calls == []
    memory.release_after(memory.RELEASE_MIN_BYTES)
    memory.release_after(float("inf"))
    assert calls == [1, 1]

"""write-buffer-spillable: a preempted writer spills merged sorted runs to local disk, merged into
level-0 files at flush. Reads equal those without spilling, fewer level-0 files come out, and no
spill file outlives a commit, a close or a failure."""

from __future__ import annotations

import os
import tempfile
import threading

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mergetree_helpers import AGG_OPTIONS, DirectExecutor, Table, agg_schema, make_schema

from impl.errors import FileIOError, InvalidOptionError
from impl.fs.file_io import FileIO
from impl.mergetree import MergeTreeOptions, MergeTreeWriter
from impl.mergetree.spill import SPILL_DIR_PREFIX, SpillConfig
from impl.mergetree.writer import WriteBufferPool, spill_config

I, UB, UA, D = 0, 1, 2, 3  # noqa: E741 - Paimon's row kind letters

ENGINES = {
    "deduplicate": (make_schema, {}),
    "first-row": (make_schema, {"merge-engine": "first-row"}),
    "partial-update": (make_schema, {"merge-engine": "partial-update", "fields.ts.sequence-group": "k"}),
    "aggregation": (agg_schema, {**AGG_OPTIONS, **{f"fields.{c}.ignore-retract": "true"
                                                   for c in ("mn", "mx", "fv", "fnn", "la", "ba", "bo", "lnn")}}),
}


def _writer(t: Table, spill_dir: str | None, pool_bytes: int) -> MergeTreeWriter:
    spill = spill_config(t.options, spill_dir) if spill_dir is not None else None
    pool = WriteBufferPool(pool_bytes, spill)
    return MergeTreeWriter(t.io, t.paths, t.schema, t.options, t.partition, t.partition_path, 0, 1,
                           list(t.live.values()), t.executor, buffer_pool=pool)


def _batch(schema_fn, rng: np.random.Generator, n: int, keys: int, kinds: bool) -> tuple[pa.Table, pa.Array]:
    ids = rng.integers(0, keys, n)
    if schema_fn is agg_schema:
        data = pa.table({"id": ids, "s": rng.integers(-5, 5, n), "c": rng.integers(0, 3, n),
                         "mn": pa.array(rng.integers(-5, 5, n), pa.int32()), "mx": rng.normal(size=n),
                         "lv": [str(x) for x in ids], "lnn": [None if x % 3 else "a" for x in ids],
                         "fv": pa.array(rng.integers(0, 3, n), pa.int32()),
                         "fnn": pa.array(rng.integers(0, 3, n), pa.int32()),
                         "la": ["x"] * n, "ba": rng.random(n) < 0.5, "bo": rng.random(n) < 0.5})
    else:
        data = pa.table({"id": ids, "k": [None if x % 5 == 0 else f"k{x % 7}" for x in rng.integers(0, 99, n)],
                         "v": rng.normal(size=n), "ts": rng.integers(0, 4, n)})
    choice = [I, I, I, UA, UB, D] if kinds else [I]
    return data, pa.array(rng.choice(choice, n).astype(np.int8))


def _run(tmp: str, engine: str, seed: int, batches: int, spill: bool, commits: int = 2):
    schema_fn, opts = ENGINES[engine]
    t = Table(os.path.join(tmp, f"t-{spill}"), schema_fn(), {**opts, "target-file-size": "64 kb"},
              executor=DirectExecutor())
    spill_dir = os.path.join(tmp, "spill") if spill else None
    rng = np.random.default_rng(seed)
    level0 = 0
    for _ in range(commits):
        w = _writer(t, spill_dir, pool_bytes=6_000)
        for _ in range(batches):
            # partial-update with a sequence group: no retractions, since as in Paimon a lone
            # retraction is dropped by a compaction that drops deletes while a merge with the key's
            # later rows applies it, so where merges fall decides the rows
            w.write(*_batch(schema_fn, rng, int(rng.integers(20, 300)), 400, engine != "partial-update"))
        msg = w.prepare_commit(True)
        level0 += sum(1 for f in msg.new_files if f.level == 0)
        t.apply(msg)
        w.close()
    return t.read().sort_by("id"), level0, t


SETTINGS = settings(max_examples=int(os.environ.get("MERGETREE_EXAMPLES", "12")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(engine=st.sampled_from(sorted(ENGINES)), seed=st.integers(0, 2**16), batches=st.integers(1, 6))
def test_spilled_writes_read_like_flushed_ones(engine, seed, batches):
    """Random upserts and retractions through a pool of a few kB (a spill every few rows): the
    table reads the same with and without spilling, and no spill file is left behind."""
    with tempfile.TemporaryDirectory() as tmp:
        plain, files_plain, _ = _run(tmp, engine, seed, batches, spill=False)
        spilled, files_spilled, _ = _run(tmp, engine, seed, batches, spill=True)
        assert spilled.equals(plain)
        assert files_spilled <= files_plain
        spill = os.path.join(tmp, "spill")
        assert not os.path.exists(spill) or os.listdir(spill) == []  # made on the first spill only


def test_spilling_writes_fewer_level0_files_and_cleans_up(tmp_path):
    plain, files_plain, _ = _run(str(tmp_path), "deduplicate", 7, 8, spill=False, commits=1)
    spilled, files_spilled, t = _run(str(tmp_path), "deduplicate", 7, 8, spill=True, commits=1)
    assert spilled.equals(plain)
    assert files_spilled < files_plain / 3, (files_spilled, files_plain)
    assert os.listdir(tmp_path / "spill") == []
    assert not any(n.startswith(SPILL_DIR_PREFIX) or n.endswith(".arrow")
                   for _, _, names in os.walk(t.paths.table_path) for n in names)  # never in the table


def test_spill_files_live_until_the_flush_then_go(tmp_path):
    t = Table(tmp_path / "t", make_schema(), {"sort-spill-threshold": "50"}, executor=DirectExecutor())
    w = _writer(t, str(tmp_path / "spill"), pool_bytes=4_000)
    rng = np.random.default_rng(1)
    for _ in range(4):
        w.write(*_batch(make_schema, rng, 200, 1000, False))
    assert w.spilled_runs > 3 and w.buffered_rows > 0
    run_dir = w.spill_directory
    assert run_dir is not None and os.path.dirname(run_dir) == str(tmp_path / "spill")
    assert len(os.listdir(run_dir)) == w.spilled_runs
    msg = w.prepare_commit(True)
    assert w.spilled_runs == 0 and os.listdir(run_dir) == []
    assert len(msg.new_files) == 1  # every run and the buffer: one level-0 file
    t.apply(msg)
    w.close()
    assert os.listdir(tmp_path / "spill") == []


def test_sort_spill_threshold_merges_runs_before_the_commit(tmp_path):
    t = Table(tmp_path / "t", make_schema(), {"sort-spill-threshold": "3"}, executor=DirectExecutor())
    w = _writer(t, str(tmp_path / "spill"), pool_bytes=4_000)
    rng = np.random.default_rng(2)
    for _ in range(6):
        w.write(*_batch(make_schema, rng, 200, 1000, False))
        assert w.spilled_runs < 3
    assert len(w.levels.level0) > 0  # merged into level-0 files already
    w.close()
    assert os.listdir(tmp_path / "spill") == []


def test_close_with_spilled_runs_deletes_them(tmp_path):
    t = Table(tmp_path / "t", make_schema(), {}, executor=DirectExecutor())
    w = _writer(t, str(tmp_path / "spill"), pool_bytes=4_000)
    w.write(*_batch(make_schema, np.random.default_rng(3), 500, 1000, False))
    assert w.spilled_runs > 0
    w.close()
    assert os.listdir(tmp_path / "spill") == []
    assert t.files_on_disk() == set()


class _FailingDataFiles(FileIO):
    """Fails every data-file upload from the calling thread once ``fail`` is set."""

    def __init__(self):
        super().__init__()
        self.fail = False

    def open_output(self, path):
        if self.fail and threading.current_thread() is threading.main_thread():
            raise OSError("disk full (injected)")
        return super().open_output(path)


def test_failed_merge_of_spilled_runs_deletes_them_and_writes_no_file(tmp_path):
    t = Table(tmp_path / "t", make_schema(), {}, executor=DirectExecutor())
    t.io = _FailingDataFiles()
    w = _writer(t, str(tmp_path / "spill"), pool_bytes=4_000)
    w.write(*_batch(make_schema, np.random.default_rng(4), 500, 1000, False))
    run_dir = w.spill_directory
    assert w.spilled_runs > 0 and run_dir is not None
    t.io.fail = True
    with pytest.raises(OSError, match="injected"):
        w.prepare_commit(True)
    assert os.listdir(run_dir) == [] and t.files_on_disk() == set()
    w.close()
    assert os.listdir(tmp_path / "spill") == []


def test_no_spilling_for_input_changelog_nor_float_keys(tmp_path):
    t = Table(tmp_path / "t", make_schema(), {"changelog-producer": "input"}, executor=DirectExecutor())
    w = _writer(t, str(tmp_path / "spill"), pool_bytes=4_000)
    w.write(*_batch(make_schema, np.random.default_rng(5), 300, 1000, False))
    assert w.spilled_runs == 0 and len(w.levels.level0) > 1  # flushed as before
    w.close()


def test_spill_options_are_parsed_and_checked():
    o = MergeTreeOptions.from_options({"write-buffer-spillable": "true", "spill-compression": "LZ4",
                                       "sort-spill-buffer-size": "8 mb", "write-buffer-spill.max-disk-size": "1 gb"})
    assert (o.write_buffer_spillable, o.spill_compression, o.sort_spill_buffer_size) == (True, "lz4", 8 << 20)
    assert o.max_spilled_runs == o.num_sorted_run_stop_trigger + 1 and o.spill_max_disk_size == 1 << 30
    c = spill_config(o)
    assert c.batch_bytes == (8 << 20) // o.max_spilled_runs and c.directory is None
    with pytest.raises(InvalidOptionError, match="spill-compression"):
        MergeTreeOptions.from_options({"spill-compression": "lzo"})
    with pytest.raises(InvalidOptionError, match="sort-spill-threshold"):
        MergeTreeOptions.from_options({"sort-spill-threshold": "1"})
    with pytest.raises(ValueError, match="max_runs"):
        SpillConfig(max_runs=1, batch_bytes=1)


def test_spill_directory_that_cannot_be_made_is_a_typed_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    t = Table(tmp_path / "t", make_schema(), {}, executor=DirectExecutor())
    w = _writer(t, str(blocker / "sub"), pool_bytes=4_000)
    with pytest.raises(FileIOError, match="spill directory"):
        w.write(*_batch(make_schema, np.random.default_rng(6), 500, 1000, False))
    w.close()


def test_spill_all_frees_every_buffer_once_a_writer_spilled(tmp_path):
    """Before a commit the pool spills every buffer (so no buffer is held while a writer merges
    its runs), but only when the write already spilled: small writes go straight to files."""
    t = Table(tmp_path / "t", make_schema(), {}, executor=DirectExecutor())
    pool = WriteBufferPool(6_000, spill_config(t.options, str(tmp_path / "spill")))
    writers = [MergeTreeWriter(t.io, t.paths, t.schema, t.options, t.partition, t.partition_path, b, 2, [],
                               t.executor, buffer_pool=pool) for b in range(2)]
    rng = np.random.default_rng(8)
    writers[1].write(*_batch(make_schema, rng, 20, 1000, False))
    pool.spill_all()
    assert writers[1].spilled_runs == 0 and writers[1].buffered_rows == 20  # nothing spilled yet: left alone
    writers[0].write(*_batch(make_schema, rng, 400, 1000, False))
    assert writers[0].spilled_runs > 0 and writers[1].buffered_rows > 0
    pool.spill_all()
    assert all(w.buffered_rows == 0 for w in writers) and writers[1].spilled_runs == 1
    for w in writers:
        assert len(w.prepare_commit(True).new_files) == 1
        w.close()
    assert os.listdir(tmp_path / "spill") == []

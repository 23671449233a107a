"""A write-only primary-key commit flushes its buckets side by side (TableWrite._flush_threads).

Nothing compacts in a write-only write, so the flushes (sort, encode, compress) may use the
other cores; with compaction on, the compactions use them and the flushes stay one at a time
(one sorted piece held), as they do with a given executor (the deterministic inline mode).
What is committed must not depend on it, and a flush that fails must fail the commit and
leave no file behind.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest
from table_helpers import read, sort_rows

import impl.write.table_write as table_write
from impl.mergetree.writer import InlineExecutor, MergeTreeWriter

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _batch(seed: int, n: int = 4000) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 3000, n)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{seed}-{i}" for i in ids]})


def _flush_threads(monkeypatch) -> list[str]:
    """Names of the threads MergeTreeWriter.flush_for_commit runs on, from now on."""
    names: list[str] = []
    original = MergeTreeWriter.flush_for_commit

    def recording(self):
        names.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(MergeTreeWriter, "flush_for_commit", recording)
    return names


def _commit(table, data, **write_kwargs):
    wb = table.new_batch_write_builder()
    with wb.new_write(**write_kwargs) as w, wb.new_commit() as c:
        w.write_arrow(data)
        c.commit(w.prepare_commit())


def test_write_only_commits_flush_buckets_side_by_side_and_commit_the_same_rows(local_catalog, monkeypatch):
    names = _flush_threads(monkeypatch)
    opts = {"bucket": "4", "write-only": "true"}
    side = local_catalog.create_table("db.side", schema=SCHEMA, primary_keys=["id"], options=opts)
    serial = local_catalog.create_table("db.serial", schema=SCHEMA, primary_keys=["id"], options=opts)
    for seed in range(4):
        data = _batch(seed)
        names.clear()
        _commit(side, data)
        assert len(names) == 4 and all(n.startswith("paimon-flush") for n in names), names
        names.clear()
        monkeypatch.setattr(table_write, "MAX_FLUSH_THREADS", 1)
        _commit(serial, data)
        monkeypatch.undo()
        names = _flush_threads(monkeypatch)
        assert sort_rows(read(side)) == sort_rows(read(serial))
    assert read(side).num_rows == len(set(np.concatenate([_batch(s).column("id").to_numpy() for s in range(4)])))

    def files(t):
        return sorted((s.bucket, f.row_count, f.min_key, f.max_key, f.min_sequence_number, f.max_sequence_number)
                      for s in t.new_read_builder().new_scan().plan().splits() for f in s.files)

    assert files(side) == files(serial)


@pytest.mark.parametrize("case", ["compaction on", "given executor"])
def test_flushes_stay_on_the_calling_thread_otherwise(local_catalog, monkeypatch, case):
    names = _flush_threads(monkeypatch)
    opts = {"bucket": "4"} if case == "compaction on" else {"bucket": "4", "write-only": "true"}
    t = local_catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=opts)
    kwargs = {"compaction_executor": InlineExecutor()} if case == "given executor" else {}
    _commit(t, _batch(1), **kwargs)
    assert len(names) == 4 and set(names) == {threading.current_thread().name}


def test_a_failed_flush_fails_the_commit_and_leaves_no_file(local_catalog, monkeypatch):
    t = local_catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"],
                                   options={"bucket": "4", "write-only": "true"})
    _commit(t, _batch(0))
    before = sorted(f.path for f in t.file_io.walk_files(t.path) if "/data-" in f.path)
    original = MergeTreeWriter.flush_for_commit

    def failing(self):
        original(self)  # its files are written, then the bucket fails
        if self.bucket == 2:
            raise OSError("disk gone")

    monkeypatch.setattr(MergeTreeWriter, "flush_for_commit", failing)
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(_batch(1))
    with pytest.raises(OSError, match="disk gone"):
        w.prepare_commit()
    w.close()
    assert sorted(f.path for f in t.file_io.walk_files(t.path) if "/data-" in f.path) == before
    assert t.latest_snapshot().id == 1
    assert sort_rows(read(t)) == sort_rows(_dedupe(_batch(0)))


def _dedupe(data: pa.Table) -> pa.Table:
    last = {}
    for r in data.to_pylist():
        last[r["id"]] = r
    return pa.Table.from_pylist(list(last.values()), schema=SCHEMA)

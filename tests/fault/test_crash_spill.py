"""A primary-key write with ``write-buffer-spillable`` (a buffer of a few kB: runs spill to local
disk and are merged into level-0 files at the commit), crashed at every storage operation.

After each crash the table is reopened through healthy storage and must show the rows before or
the rows after (nothing in between), hold no spill file in the table directory, and have left no
spill file in the local spill directory (the writer's close removes it even as the crash
unwinds); orphan removal keeps the rows, and a restarted writer repeating the write ends at the
rows after.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
import pyarrow as pa

import impl
from fault_injection import crash_at, enumerate_crash_points, record_operations

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
OPTIONS = {"bucket": "1", "write-buffer-size": "4 kb", "write-buffer-spillable": "true"}
SPILL = tempfile.mkdtemp(prefix="crash-spill-")


def rows(ids, tag: str) -> pa.Table:
    ids = [int(i) for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


HISTORY = rows(range(0, 300, 3), "h")
rng = np.random.default_rng(16)
UPDATES = [rows(rng.choice(600, 150, replace=False), f"u{n}-") for n in range(3)]


def _table(fs, root):
    return impl.Catalog(root, filesystem=fs).get_table("db.t")


def setup(fs, root):
    cat = impl.Catalog(root, filesystem=fs)
    cat.create_database("db")
    cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=OPTIONS).write_arrow(HISTORY)


def write_updates(t) -> None:
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(spill_directory=SPILL), wb.new_commit()
    try:
        for batch in UPDATES:
            w.write_arrow(batch)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def scenario(fs, root):
    write_updates(_table(fs, root))


def _state(t: pa.Table) -> dict:
    return {r["id"]: r["v"] for r in t.to_pylist()}


BEFORE = _state(HISTORY)
AFTER = dict(BEFORE)
for _u in UPDATES:
    AFTER.update(_state(_u))


def test_spilling_write_crashed_at_every_op():
    ops = record_operations(scenario, setup=setup)
    assert os.listdir(SPILL) == []
    data_writes = [o for o in ops if o.kind == "pipe_file" and "/data-" in o.path]
    assert len(data_writes) == 1  # every spilled run merged into one level-0 file (3 without spilling)
    published = 0
    for outcome in enumerate_crash_points(scenario, setup=setup, fault_at=crash_at):
        assert outcome.crashed, outcome.describe()
        assert os.listdir(SPILL) == [], outcome.describe()
        t = _table(outcome.inner_fs, outcome.root)
        state = _state(t.to_arrow())
        assert state in (BEFORE, AFTER), outcome.describe()
        assert not [f for f in t.file_io.walk_files(t.path) if "spill" in f.path or f.path.endswith(".arrow")]
        t.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 86_400_000)
        assert _state(t.to_arrow()) == state
        if state == BEFORE:
            write_updates(t)  # the restarted writer repeats the write
            assert _state(t.to_arrow()) == AFTER
        else:
            published += 1
        assert os.listdir(SPILL) == []
    assert published < len(ops)

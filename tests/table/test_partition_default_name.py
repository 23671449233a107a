"""``partition.default-name``: files of a null or empty partition value live under
``<key>=<default name>``, and every part of impl that builds a data file's path agrees on it
(writers, reads, recovery's missing-file check, abort)."""

from __future__ import annotations

import os

import pyarrow as pa

import impl


def _table(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", schema=pa.schema([("dt", pa.string()), ("id", pa.int64())]),
                            partition_keys=["dt"], options={"partition.default-name": "nulls"})


def _rows(ids, dt=""):
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64())})


def test_recovery_after_expiration_finds_files_under_the_configured_default_name(tmp_path):
    """Regression: FileStoreCommit looked for dt=__DEFAULT_PARTITION__ while the files were under
    dt=nulls, so filter_committed raised a false CommitRecoveryError once snapshot 1 expired."""
    t = _table(tmp_path)
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    for identifier, ids in ((1, [1, 2]), (2, [3])):
        w.write_arrow(_rows(ids))
        c.commit(w.prepare_commit(), commit_identifier=identifier)
    w.write_arrow(_rows([4, 5]))
    pending = w.prepare_commit()
    assert os.path.isdir(os.path.join(t.path, "dt=nulls"))
    assert not os.path.exists(os.path.join(t.path, "dt=__DEFAULT_PARTITION__"))
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert [s.id for s in t.snapshots()] == [2]
    stats = c.filter_and_commit({3: pending})
    assert [st.snapshot_ids for st in stats] == [[3]]
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3, 4, 5]
    w.close()
    c.close()


def test_abort_of_the_commit_core_deletes_the_files_under_the_configured_default_name(tmp_path):
    t = _table(tmp_path)
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(_rows([1]))
    messages = w.prepare_commit()
    part_dir = os.path.join(t.path, "dt=nulls")
    assert any(f.endswith(".parquet") for _, _, fs in os.walk(part_dir) for f in fs)
    wb.new_commit().file_store_commit.abort(messages)
    assert not any(f.endswith(".parquet") for _, _, fs in os.walk(part_dir) for f in fs)
    w.close()

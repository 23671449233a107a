"""One DataFileMeta builder (:func:`impl.datafile.meta.written_file_meta`) for every writer: the
metadata Spark's native write derives from a Parquet footer equals what impl's own writers
(append files, merge-tree files) collected while writing the same file."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import impl  # noqa: E402
from impl.datafile.meta import FileSource  # noqa: E402
from impl.read.scan import SnapshotReader  # noqa: E402
from impl.spark import native_write  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("d", pa.date32())])


def _rows(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "name": [None if i % 5 == 0 else f"a-name-longer-than-sixteen-chars-{i:04d}" for i in range(n)],
        "score": [None if i % 7 == 0 else float(i) / 3 for i in range(n)],
        "d": pa.array(ids.astype("int32"), pa.int32()).cast(pa.date32()),
    }, schema=SCHEMA)


def _written(table):
    """(entry, the meta impl's writer built, the meta the native write builds from the footer)."""
    out = []
    for e in SnapshotReader(table.core).live_entries(table.latest_snapshot()):
        bucket_dir = table.core.paths.bucket_dir(table.core.partition_cache.path(e.partition), e.bucket)
        staged = native_write._StagedFile(f"{bucket_dir}/{e.file.file_name}", e.bucket)
        facts = native_write._file_facts(staged, table.file_io, table)
        out.append((e.file, native_write._meta(facts, e.file.file_name, table, e.file.creation_time_millis)))
    return out


@pytest.mark.parametrize("stats_mode", ["truncate(16)", "full", "counts"])
def test_append_writer_and_native_write_build_the_same_meta(tmp_path, stats_mode):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, options={"metadata.stats-mode": stats_mode})
    t.write_arrow(_rows(300))
    (ours, native), = _written(t)
    assert ours.row_count == 300 and ours.file_source is FileSource.APPEND
    assert native == ours


def test_merge_tree_writer_and_native_write_build_the_same_meta(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.pk", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    data = _rows(200)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    kinds = np.zeros(200, dtype=np.int8)
    kinds[::9] = 3  # some -D rows: the file's retract count
    w.write_arrow(data, row_kinds=kinds)
    c.commit(w.prepare_commit())
    w.close()
    (ours, native), = _written(t)
    assert ours.delete_row_count == 23 and ours.min_key != ours.max_key and ours.max_sequence_number > 0
    assert native == ours

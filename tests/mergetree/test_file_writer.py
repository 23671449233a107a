"""The streamed rolling KV writer: statistics folded chunk by chunk equal those of the whole file,
files stream to storage with their exact size, and a failed write leaves no file behind."""

from __future__ import annotations

import dataclasses
import itertools
import uuid

import fsspec
import numpy as np
import pyarrow as pa
import pytest
from mergetree_helpers import make_schema

from fault_injection import FaultyFileSystem, IOErrorAt
from impl.data.types import BIGINT, DOUBLE, STRING, DataField
from impl.datafile.meta import FileSource
from impl.errors import FileIOError
from impl.fs.file_io import FileIO
from impl.mergetree.file_writer import KVFileContext, RollingKVWriter, build_file_meta
from impl.mergetree.kv import KeyCodec, KVLayout
from impl.mergetree.read import read_kv_tables
from impl.schema.records import TableSchema


def _ctx(file_io: FileIO, root: str, schema: TableSchema, target: int) -> KVFileContext:
    layout = KVLayout(schema)
    return KVFileContext(file_io, f"{root}/bucket-0", layout, KeyCodec(layout.key_types), schema.id, target)


def _kv(layout: KVLayout, n: int, seed: int) -> pa.Table:
    """``n`` sorted KV rows with deletes, nulls, NaN and long strings (truncated stats)."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(10 * n, n, replace=False)).astype(np.int64)
    v = rng.normal(size=n)
    v[rng.random(n) < 0.1] = np.nan
    k = [None if i % 7 == 0 else ("x" * 20 + str(i)) for i in range(n)]
    user = pa.table({"id": ids, "k": pa.array(k, pa.string()), "v": v,
                     "ts": pa.array(rng.integers(0, 100, n), pa.int64())})
    kinds = pa.array(rng.choice([0, 0, 0, 2, 3], n).astype(np.int8))
    return layout.to_kv(user, kinds, 1000).cast(layout.schema_for(layout.all_columns))


def _same(a, b):
    return dataclasses.replace(a, creation_time_millis=0) == dataclasses.replace(b, creation_time_millis=0)


def test_streamed_files_have_the_stats_of_their_whole_content(tmp_path):
    """Many chunks, several rolled files: each file's meta equals the one computed from the
    file read back whole (the old in-memory rule), and the size is the size on disk."""
    io = FileIO()
    ctx = _ctx(io, str(tmp_path), make_schema(), target=20_000)
    kv = _kv(ctx.layout, 20_000, 1)
    names = (f"data-{i}.parquet" for i in itertools.count())
    w = RollingKVWriter(ctx, lambda: next(names), 0, FileSource.APPEND)
    for start in range(0, kv.num_rows, 1500):
        w.write(kv.slice(start, 1500))
    metas = w.close()
    assert len(metas) > 2 and sum(m.row_count for m in metas) == kv.num_rows
    for m in metas:
        assert m.file_size == io.file_size(ctx.path(m.file_name))
        whole = read_kv_tables(io, ctx.bucket_dir, ctx.layout, [m])
        assert _same(m, build_file_meta(ctx, m.file_name, m.file_size, whole, 0, FileSource.APPEND))


def test_nan_only_chunk_does_not_hide_the_numbers_of_other_chunks(tmp_path):
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)), DataField(1, "v", DOUBLE()), DataField(2, "s", STRING())),
                         primary_keys=("id",))
    io = FileIO()
    ctx = _ctx(io, str(tmp_path), schema, target=1 << 30)
    layout = ctx.layout
    user = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "v": [float("nan"), float("nan"), 2.5, -1.0],
                     "s": ["b", "a", "c", None]})
    kv = layout.to_kv(user, pa.array([0, 0, 0, 0], pa.int8()), 0).cast(layout.schema_for(layout.all_columns))
    w = RollingKVWriter(ctx, lambda: "data-0.parquet", 0, FileSource.APPEND)
    w.write(kv.slice(0, 2))  # NaN only
    w.write(kv.slice(2))
    (m,) = w.close()
    assert _same(m, build_file_meta(ctx, m.file_name, m.file_size, kv, 0, FileSource.APPEND))


@pytest.mark.parametrize("landed", [False, True])
def test_failed_upload_leaves_no_file_and_a_typed_error(landed):
    """The file's one write (its close) fails: FileIOError, and nothing stays under the bucket."""
    root = f"/stream-{uuid.uuid4().hex}"
    fs = FaultyFileSystem(fsspec.filesystem("memory"), [IOErrorAt(0, landed=landed)])
    io = FileIO(fs)
    ctx = _ctx(io, root, make_schema(), target=1 << 30)
    w = RollingKVWriter(ctx, lambda: "data-0.parquet", 0, FileSource.APPEND)
    w.write(_kv(ctx.layout, 1000, 2))
    with pytest.raises(FileIOError, match="data-0.parquet"):
        w.close()
    assert fs.recorder.kinds()[0] == "pipe_file"  # a wrapper gets the whole file at close
    assert not fs.inner.exists(ctx.path("data-0.parquet"))
    assert w.written == ["data-0.parquet"] and w.results == []

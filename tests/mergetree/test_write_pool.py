"""What a write keeps comes from impl's write pool, not from the application's default Arrow pool
(issue 49 item 4: a 64 MB writer's RSS stays flat without changing a process-wide setting).

When pyarrow's default pool is mimalloc and jemalloc is built in, ``write_pool()`` is jemalloc:
the rows a write buffer holds (routed to buckets, with sequence numbers), a flush's pieces, the
Parquet writer's buffers and a compaction's streamed reads are counted there, and the default
pool's allocations do not grow with the buffered rows.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.bucket.routing import split_by_group
from impl.format.memory_pool import write_pool
from impl.format.parquet_data import ParquetReader

pytestmark = pytest.mark.skipif(write_pool().backend_name == pa.default_memory_pool().backend_name,
                                reason="write_pool is the default pool here: nothing to tell apart")

ROWS = 400_000


def _rows(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": rng.permutation(n).astype(np.int64), "v": rng.random(n),
                     "ts": np.arange(n, dtype=np.int64)})


def test_split_by_group_allocates_the_groups_from_the_write_pool():
    t = _rows(ROWS)
    pool, default = write_pool(), pa.default_memory_pool()
    before, before_default = pool.bytes_allocated(), default.bytes_allocated()
    parts = split_by_group(t, np.arange(ROWS) % 4)
    held = sum(p.nbytes for _, p in parts)
    assert held == t.nbytes
    assert pool.bytes_allocated() - before >= held
    assert default.bytes_allocated() - before_default < held // 10


def test_a_writers_buffer_is_held_in_the_write_pool(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=_rows(1).schema, primary_keys=["id"], options={"bucket": "4"})
    w = t.new_batch_write_builder().new_write()
    data = _rows(ROWS)
    pool, default = write_pool(), pa.default_memory_pool()
    before, before_default = pool.bytes_allocated(), default.bytes_allocated()
    w.write_arrow(data)
    # the routed rows and their sequence numbers: at least the input's bytes, in the write pool
    assert pool.bytes_allocated() - before >= data.nbytes
    assert default.bytes_allocated() - before_default < data.nbytes // 10
    w.close()


def test_streamed_parquet_batches_are_decoded_into_the_pool(tmp_path):
    path = str(tmp_path / "f.parquet")
    data = _rows(ROWS)
    pool = write_pool()
    from impl.format.file_format import WriteOptions
    from impl.format.parquet_data import ParquetFileFormat
    with open(path, "wb") as f:
        w = ParquetFileFormat().create_writer(f, data.schema, [], WriteOptions("zstd", 1))
        w.write(data)
        w.close()
    assert pq.read_table(path).equals(data)
    reader = ParquetReader(path, path)
    before = pool.bytes_allocated()
    batches = reader.iter_batches(["ts", "id"], 100_000)
    first = next(batches)
    assert first.column_names == ["ts", "id"]
    assert pool.bytes_allocated() - before >= first.nbytes  # decoded into the pool
    got = pa.concat_tables([first, *batches])
    assert got.equals(data.select(["ts", "id"]))



def _default_pool_bytes_while_streaming(source, path: str) -> tuple[int, pa.Table]:
    """Bytes of Arrow's default pool a batched read of ``source`` holds once every column's
    stream is open (after its first batch), and the rows it read."""
    default = pa.default_memory_pool()
    reader = ParquetReader(source, path)
    before = default.bytes_allocated()
    batches = reader.iter_batches(None, 10_000)
    first = next(batches)
    held = default.bytes_allocated() - before
    return held, pa.concat_tables([first, *batches])


def test_a_streamed_local_read_holds_small_buffers_in_the_default_pool(tmp_path):
    """pyarrow allocates a batched read's column-chunk buffers from its default pool (no API
    chooses another): one per column of every open file, which a compaction of many runs holds
    at once. From a local file (what ``FileIO.open_input`` gives: a pyarrow ``OSFile``) they are
    64 kB; a Python file object (fsspec's remote files, where a refill may be a request) keeps 1 MB."""
    columns = 8
    rng = np.random.default_rng(3)
    data = pa.table({f"c{i}": rng.random(ROWS) for i in range(columns)})
    path = str(tmp_path / "f.parquet")
    pq.write_table(data, path, data_page_size=16 << 10, compression="zstd")
    with pa.OSFile(path, "rb") as local:
        held_local, got = _default_pool_bytes_while_streaming(local, path)
    assert got.equals(data)
    with open(path, "rb") as python_file:
        held_remote, got = _default_pool_bytes_while_streaming(python_file, path)
    assert got.equals(data)
    # 1 MB against 64 kB per column (measured: 16 MB against 8.5 MB held in all, pyarrow 26)
    assert held_remote - held_local >= columns * 768 * 1024, (held_remote, held_local)

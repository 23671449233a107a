"""Routed Ray writes: every (partition, bucket) has one writer task, which writes it into files
of the table's target size (used by :func:`impl.ray.write_dataset`).

Ray Data hands a datasink its blocks a write task at a time, and blocks can be tiny
(``ray.data.from_items`` makes one per row, up to 200): written block by block, a table got a
file per block and bucket (100 rows made 100 files), and a primary-key table's key could be
written by two tasks. :func:`write_routed` instead:

1. runs the dataset and takes its blocks in the dataset's order (``preserve_order``);
2. fixed-bucket tables: one split task per block finds each row's bucket with the Spark
   writer's routing rule (:func:`impl.spark.routing.bucket_function`, Paimon's hash) and cuts
   the block into one piece per writer task, vectorized (a stable sort by writer, then slices);
   a writer is a function of the row's (partition, bucket), so each (partition, bucket) and so
   each key has exactly one writer. Bucket-unaware append tables (bucket -1): the blocks are
   dealt to writers in contiguous runs of similar size, only as many writers as the data fills
   target-size files (at most ``writers``);
3. each writer task reads its pieces one at a time, in block order, into one impl table writer
   (:func:`impl.spark.writer.write_task`, every file logged first): a primary-key bucket gets one
   writer's sequence numbers in the dataset's order, so of rows sharing a key the last wins, as
   in one ``TableWrite``, and the writer rolls files at ``target-file-size``;
4. the driver commits every writer's messages in one snapshot
   (:meth:`impl.ray.sink.PaimonDatasink.commit`); when a task fails, every file of the write is
   removed (:func:`impl.spark.writer.abort_write`) and the task's error raised.

The dataset passes through Ray's object store (spilled to disk beyond memory), as it does in
Ray's own shuffles; a writer holds one piece at a time beside its table writer's buffer.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import ray
import ray.data
from ray.data.block import BlockAccessor

from impl.bucket.routing import row_hashes
from impl.data.types import to_arrow
from impl.jobs.routing import bucket_function
from impl.jobs.writer import TaskOutput, WriteJob, abort_write, write_task
from impl.write.table_write import conform_input


@dataclass(frozen=True)
class Piece:
    """Rows ``start:stop`` (``stop`` None: to the end) of the block behind ``ref``."""

    ref: Any  # ray.ObjectRef of a block (Arrow or pandas)
    start: int = 0
    stop: int | None = None

    def load(self) -> pa.Table:
        block = BlockAccessor.for_block(ray.get(self.ref)).to_arrow()
        if self.start or self.stop is not None:
            stop = block.num_rows if self.stop is None else self.stop
            block = block.slice(self.start, stop - self.start)
        return block


# ---------------------------------------------------------------------- rules (pure)


def writer_of_rows(data: pa.Table, table, writers: int) -> np.ndarray:
    """The writer (0 .. ``writers`` - 1) of every row of ``data`` (in the table's column types):
    a function of the row's partition and fixed bucket only, so a (partition, bucket) has one
    writer. Buckets of one partition go to consecutive writers (bucket ``b`` of an unpartitioned
    table to writer ``b % writers``)."""
    n = data.num_rows
    bucket_keys = list(table.bucket_keys)
    types = [table.schema.field(k).type for k in bucket_keys]
    fn = bucket_function(types, table.options.bucket, table.options.bucket_function.value)
    buckets = fn(*[data.column(k) for k in bucket_keys]).to_numpy(zero_copy_only=False).astype(np.int64)
    parts = list(table.partition_keys)
    if parts and n:
        ptypes = [table.schema.field(k).type for k in parts]
        cols = [data.column(k).cast(to_arrow(t)) for k, t in zip(parts, ptypes, strict=True)]
        base = row_hashes(cols, ptypes).astype(np.int64)
    else:
        base = np.zeros(n, dtype=np.int64)
    return np.mod(base + buckets, writers)


def cut_by_writer(data: pa.Table, writer: np.ndarray, writers: int) -> tuple[list[pa.Table], np.ndarray]:
    """``data`` cut into one table per writer (rows keep their order within each), and the row
    count of each."""
    counts = np.bincount(writer, minlength=writers)
    ordered = data.take(pa.array(np.argsort(writer, kind="stable")))
    offsets = np.concatenate(([0], np.cumsum(counts)))
    return [ordered.slice(int(offsets[w]), int(counts[w])) for w in range(writers)], counts


def deal_contiguous(sizes: Sequence[int], writers: int) -> list[int]:
    """For blocks of ``sizes`` (bytes) in order: the writer of each, contiguous runs of similar
    total size over ``writers`` writers (each writer's blocks are consecutive)."""
    total = sum(sizes)
    if total <= 0:
        return [min(i * writers // max(len(sizes), 1), writers - 1) for i in range(len(sizes))]
    out, before = [], 0
    for s in sizes:
        out.append(min(before * writers // total, writers - 1))
        before += s
    return out


def writers_for_unaware(total_bytes: int, target_file_size: int, writers: int) -> int:
    """Writers of a bucket-unaware append write: one per target-size file the data fills
    (in-memory bytes, an upper bound of the files' size), at least one, at most ``writers``."""
    return max(1, min(writers, math.ceil(total_bytes / max(target_file_size, 1))))


# ---------------------------------------------------------------------- tasks


def _split_block(piece: Piece, job: WriteJob, writers: int) -> tuple:
    """A split task: the block's rows in the table's types, cut by writer; then the row counts."""
    table = job.ref.table()
    data = conform_input(piece.load(), table.core)  # SchemaMismatchError names a bad column
    tables, counts = cut_by_writer(data, writer_of_rows(data, table, writers), writers)
    return (*tables, counts)


def _write_pieces(job: WriteJob, pieces: list[Piece]) -> TaskOutput:
    """A writer task: its pieces, one at a time and in order, through one table writer."""
    def batches() -> Iterator[pa.RecordBatch]:
        for p in pieces:
            yield from p.load().to_batches()

    # a fresh key per attempt: a retried task's earlier files are logged apart and swept
    return write_task(batches(), job, f"ray-w-{uuid.uuid4().hex[:16]}", sketch=False)


# ---------------------------------------------------------------------- driver


def _ordered_pieces(ds: ray.data.Dataset) -> tuple[list[Piece], list[int]]:
    """The dataset's blocks in its order, as pieces (a bundle may hold a slice of a block), and
    their sizes in bytes. Runs ``ds`` with ``preserve_order`` (its own context's setting, put
    back after)."""
    options = ds.context.execution_options
    was = options.preserve_order
    options.preserve_order = True
    try:
        bundles = list(ds.iter_internal_ref_bundles())
    finally:
        options.preserve_order = was
    pieces, sizes = [], []
    for bundle in bundles:
        slices = getattr(bundle, "slices", None) or [None] * len(bundle.block_refs)
        for ref, meta, cut in zip(bundle.block_refs, bundle.metadata, slices, strict=True):
            rows = meta.num_rows
            if cut is not None:
                pieces.append(Piece(ref, cut.start_offset, cut.end_offset))
                rows_in = cut.end_offset - cut.start_offset
                size = (meta.size_bytes or 0) * rows_in // max(rows or rows_in, 1)
            else:
                pieces.append(Piece(ref))
                size = meta.size_bytes or 0
            sizes.append(size)
    return pieces, sizes


def plan_writers(ds: ray.data.Dataset, job: WriteJob, writers: int,
                 remote_args: dict) -> list[list[Piece]]:
    """The pieces of every writer that has rows (runs the dataset and, for fixed-bucket tables,
    the split tasks)."""
    table = job.ref.table()
    pieces, sizes = _ordered_pieces(ds)
    if table.options.bucket < 1:  # bucket-unaware append table (other modes are refused up front)
        n = writers_for_unaware(sum(sizes), table.options.target_file_size_for(False), writers)
        out: list[list[Piece]] = [[] for _ in range(n)]
        for p, w in zip(pieces, deal_contiguous(sizes, n), strict=True):
            out[w].append(p)
        return [ps for ps in out if ps]
    if writers == 1:
        return [pieces] if pieces else []
    split = ray.remote(_split_block).options(num_returns=writers + 1, **remote_args)
    # num_returns=writers + 1: each call gives a list of refs (Ray's stubs type it as one ref)
    outs: list[list[Any]] = [split.remote(p, job, writers) for p in pieces]  # type: ignore[misc]
    counts = ray.get([o[-1] for o in outs])  # small: the tables stay in the object store
    return [ps for ps in ([Piece(o[w]) for o, c in zip(outs, counts, strict=True) if c[w]]
                          for w in range(writers)) if ps]


def write_routed(ds: ray.data.Dataset, job: WriteJob, *, writers: int | None = None,
                 ray_remote_args: dict | None = None) -> list[TaskOutput]:
    """Write ``ds`` for ``job``, routed (see the module docstring); the writers' outputs, for
    the caller to commit once. On failure every file of the write is removed and the error raised.

    ``writers``: writer tasks at most (default: the cluster's CPUs). ``ray_remote_args``: Ray
    options of the split and writer tasks (``max_retries``, ``retry_exceptions``, resources)."""
    remote_args = dict(ray_remote_args or {})
    n = max(1, writers if writers is not None else int(ray.cluster_resources().get("CPU", 1)))
    refs: list = []
    try:
        plan = plan_writers(ds, job, n, remote_args)
        task = ray.remote(_write_pieces).options(**remote_args)
        refs = [task.remote(job, ps) for ps in plan]
        return ray.get(refs)
    except BaseException:
        for r in refs:  # the others need not finish: abort_write sweeps what they wrote
            ray.cancel(r)
        abort_write(job)
        raise


__all__ = ["write_routed", "plan_writers", "writer_of_rows", "cut_by_writer", "deal_contiguous",
           "writers_for_unaware", "Piece"]

"""Writing KV tables to Parquet data files that roll at the target file size.

Each file is built in memory (a ``ParquetWriter`` over a ``BytesIO``) and stored with one
``FileIO.write_bytes``, so ``file_size`` is exact and every fsspec file system (including the
fault-injecting ones) works. Rolling: rows go in as row groups whose row count is estimated
from the bytes still missing to the target and the compression ratio seen so far; a file is
finished as soon as its compressed size reaches the target (Paimon's rolling rule).
"""

from __future__ import annotations

import io
import posixpath
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from impl.format.records import DataFileMeta, FileSource
from impl.format.stats import DEFAULT_STATS_MODE, KEY_STATS_MODE, StatsModeLike, collect_stats
from impl.fs.file_io import FileIO
from impl.mergetree.kv import SEQUENCE_NUMBER, VALUE_KIND, KeyCodec, KVLayout


@dataclass(frozen=True)
class KVFileContext:
    """Where and how one bucket's KV files are written."""

    file_io: FileIO
    bucket_dir: str
    layout: KVLayout
    key_codec: KeyCodec
    schema_id: int
    target_file_size: int
    compression: str = "zstd"
    compression_level: int | None = 1
    stats_mode: StatsModeLike = DEFAULT_STATS_MODE  # the table's metadata.stats-mode, for value columns

    def path(self, file_name: str) -> str:
        return posixpath.join(self.bucket_dir, file_name)

    def delete(self, file_name: str) -> None:
        self.file_io.delete(self.path(file_name))

    def writer_kwargs(self) -> dict:
        kw: dict = {"compression": self.compression}
        if self.compression == "zstd" and self.compression_level is not None:
            kw["compression_level"] = self.compression_level
        return kw


def build_file_meta(ctx: KVFileContext, file_name: str, file_size: int, kv: pa.Table, level: int,
                    source: FileSource) -> DataFileMeta:
    """DataFileMeta of a KV file holding ``kv`` (sorted by key): key range, stats, sequence range.

    Key stats keep every key field in Paimon's fixed mode for ``_KEY_`` columns; value stats
    follow the table's ``metadata.stats-mode`` (see :mod:`impl.format.stats`).
    """
    layout = ctx.layout
    first = [kv.column(c)[0].as_py() for c in layout.key_columns]
    last = [kv.column(c)[kv.num_rows - 1].as_py() for c in layout.key_columns]
    seq = pc.min_max(kv.column(SEQUENCE_NUMBER)).as_py()
    kinds = kv.column(VALUE_KIND).to_numpy()
    deletes = int(np.count_nonzero((kinds == 1) | (kinds == 3)))
    key_stats, _ = collect_stats(kv, layout.key_columns, layout.key_types, KEY_STATS_MODE, dense=False)
    value_stats, value_stats_cols = collect_stats(kv, layout.value_names, layout.value_types, ctx.stats_mode)
    return DataFileMeta(
        file_name=file_name,
        file_size=file_size,
        row_count=kv.num_rows,
        min_key=ctx.key_codec.encode(first),
        max_key=ctx.key_codec.encode(last),
        key_stats=key_stats,
        value_stats=value_stats,
        min_sequence_number=int(seq["min"]),
        max_sequence_number=int(seq["max"]),
        schema_id=ctx.schema_id,
        level=level,
        extra_files=(),
        creation_time_millis=int(time.time() * 1000),
        delete_row_count=deletes,
        file_source=source,
        value_stats_cols=value_stats_cols,
    )


def dictionary_columns(kv: pa.Table, sample_rows: int = 4096, max_distinct_ratio: float = 0.5, *,
                       unique: Sequence[str] = (), repeated: Sequence[str] = ()) -> list[str]:
    """Columns worth dictionary encoding: few distinct values in an evenly spread sample.

    Dictionary-encoding a column of mostly unique values (keys, sequence numbers, measures)
    costs about half the write time and makes the file larger; repeated values (partition
    columns, row kinds, categories) shrink a lot with it. Columns in ``unique`` (known to hold
    distinct values: a KV file's sequence numbers, a one-field key) are never encoded and
    columns in ``repeated`` (a tiny domain: row kinds) always are, without sampling them: the
    sample costs a take and a hash count per column, paid for every file written.
    """
    n = kv.num_rows
    if n == 0:
        return []
    skip = set(unique) | set(repeated)
    names = kv.column_names
    out = [c for c in repeated if c in names]
    sampled = [f.name for f in kv.schema if f.name not in skip and not pa.types.is_nested(f.type)]
    if not sampled:
        return out
    kv = kv.select(sampled)
    if n > sample_rows:
        kv = kv.take(pa.array(np.linspace(0, n - 1, sample_rows).astype(np.int64)))
    for name in sampled:
        distinct = _count_distinct(kv.column(name))
        if distinct is not None and distinct <= max(1.0, max_distinct_ratio * kv.num_rows):
            out.append(name)
    return out


def _count_distinct(col: pa.ChunkedArray) -> int | None:
    """Distinct values of a sample column (null counts as one), None if Arrow cannot hash it.
    Integers and floats without nulls are counted by numpy (sorting a few thousand numbers
    is cheaper than building Arrow's hash table)."""
    t = col.type
    if col.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return int(np.unique(col.to_numpy()).size)
    try:
        return int(pc.count_distinct(col, mode="all").as_py())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return None


def known_unique_columns(layout: KVLayout) -> tuple[str, ...]:
    """Columns of a KV file that hold distinct values: sequence numbers (one per row written)
    and, for a one-field primary key, its ``_KEY_`` column and the user column it copies (a
    merged file holds a key once)."""
    if len(layout.key_columns) == 1:
        return (SEQUENCE_NUMBER, layout.key_columns[0], layout.key_names[0])
    return (SEQUENCE_NUMBER,)


class RollingKVWriter:
    """Writes a stream of sorted KV tables into files of about ``target_file_size`` bytes.

    ``written`` lists every file name this writer created (finished or not), so a failed or
    cancelled job can delete exactly its own files with :meth:`abort`. With ``keep_bytes`` the
    finished files' bytes stay available (for copying a data file as a changelog file).
    """

    def __init__(self, ctx: KVFileContext, new_name: Callable[[], str], level: int, source: FileSource,
                 keep_bytes: bool = False):
        self.ctx = ctx
        self._new_name = new_name
        self.level = level
        self.source = source
        self.keep_bytes = keep_bytes
        self.written: list[str] = []
        self.results: list[DataFileMeta] = []
        self.file_bytes: dict[str, bytes] = {}
        self._sink: io.BytesIO | None = None
        self._writer: pq.ParquetWriter | None = None
        self._chunks: list[pa.Table] = []
        self._ratio = 1.0  # compressed bytes per in-memory byte, learned as row groups are written

    def write(self, kv: pa.Table) -> None:
        n = kv.num_rows
        if n == 0:
            return
        schema = self.ctx.layout.schema_for(kv.column_names)
        if kv.schema != schema:
            kv = kv.cast(schema)
        row_bytes = max(kv.nbytes / n, 1.0)
        target = self.ctx.target_file_size
        pos = 0
        while pos < n:
            sink, writer = self._open_file(schema, kv.slice(pos))
            before = sink.tell()
            missing = max(target - before, 1)
            rows = int(missing / (row_bytes * self._ratio)) + 1
            chunk = kv.slice(pos, min(rows, n - pos))
            writer.write_table(chunk)
            written = sink.tell() - before
            if chunk.nbytes > 0 and written > 0:
                self._ratio = max(written / chunk.nbytes, 1e-4)
            self._chunks.append(chunk)
            pos += chunk.num_rows
            if sink.tell() >= target:
                self._finish_file()

    def _open_file(self, schema: pa.Schema, rows: pa.Table) -> tuple[io.BytesIO, pq.ParquetWriter]:
        """The open file's sink and writer, a new file (encoded for ``rows``) if none is open."""
        if self._sink is None or self._writer is None:
            self._sink = io.BytesIO()
            self._writer = pq.ParquetWriter(self._sink, schema, use_dictionary=dictionary_columns(
                rows, unique=known_unique_columns(self.ctx.layout), repeated=(VALUE_KIND,)),
                                            **self.ctx.writer_kwargs())
        return self._sink, self._writer

    def _finish_file(self) -> None:
        if self._writer is None or self._sink is None:
            return
        self._writer.close()
        data = self._sink.getvalue()
        kv = self._chunks[0] if len(self._chunks) == 1 else pa.concat_tables(self._chunks)
        self._writer, self._sink, self._chunks = None, None, []
        name = self._new_name()
        self.written.append(name)
        self.ctx.file_io.write_bytes(self.ctx.path(name), data)
        self.results.append(build_file_meta(self.ctx, name, len(data), kv, self.level, self.source))
        if self.keep_bytes:
            self.file_bytes[name] = data

    def close(self) -> list[DataFileMeta]:
        """Finish the open file; the metas of all files written, in key order."""
        self._finish_file()
        return list(self.results)

    def abort(self) -> None:
        """Drop the open file and delete every file this writer stored."""
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:  # noqa: BLE001 - the in-memory sink is discarded anyway
                pass
        self._writer, self._sink, self._chunks = None, None, []
        self.ctx.file_io.delete_quietly([self.ctx.path(n) for n in self.written])
        self.results.clear()
        self.file_bytes.clear()


def write_kv_files(ctx: KVFileContext, kv: pa.Table, new_name: Callable[[], str], level: int,
                   source: FileSource, keep_bytes: bool = False) -> RollingKVWriter:
    """Write one sorted KV table as rolling files; on failure, delete what was written and re-raise."""
    w = RollingKVWriter(ctx, new_name, level, source, keep_bytes=keep_bytes)
    try:
        w.write(kv)
        w.close()
    except BaseException:
        w.abort()
        raise
    return w

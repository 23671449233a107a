"""Writing KV tables to data files (in the format of their level, see
``impl.options.write_formats.WriteFormats``) that roll at the target file size.

Each file is streamed to storage (a format writer over ``FileIO.open_output``) as its row
groups / stripes / blocks are encoded, and its statistics are folded chunk by chunk (:class:`KVFileStats`), so a
writer holds about one chunk, not one file; ``file_size`` is the exact byte count written, and
every fsspec file system (including the fault-injecting ones) works. Rolling: rows go in as row groups whose row count is estimated
from the bytes still missing to the target and the compression ratio seen so far; a file is
finished as soon as its compressed size reaches the target (Paimon's rolling rule).
"""

from __future__ import annotations

import io
import posixpath
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.datafile.meta import DataFileMeta, FileSource, KeyFacts, written_file_meta
from impl.datafile.stats import DEFAULT_STATS_MODE, KEY_STATS_MODE, StatsCollector, StatsModeLike
from impl.environment import wall_clock_millis
from impl.fileindex.options import FileIndexSpec
from impl.fileindex.writer import collector_for
from impl.format.dictionary_choice import DictionaryChoice
from impl.format.file_format import FileFormat, kv_file_fields
from impl.format.formats import named_for
from impl.fs.file_io import FileIO, OutputFile
from impl.mergetree.kv import SEQUENCE_NUMBER, VALUE_KIND, KeyCodec, KVLayout
from impl.options.write_formats import WriteFormats


@dataclass(frozen=True)
class KVFileContext:
    """Where and how one bucket's KV files are written."""

    file_io: FileIO
    bucket_dir: str
    layout: KVLayout
    key_codec: KeyCodec
    schema_id: int
    target_file_size: int
    formats: WriteFormats = field(default_factory=WriteFormats)  # file.format (per level), compression
    stats_mode: StatsModeLike = DEFAULT_STATS_MODE  # the table's metadata.stats-mode, for value columns
    clock_millis: Callable[[], int] = wall_clock_millis  # the environment's clock: file creation times
    file_index: FileIndexSpec | None = None  # the table's file-index.* options: each file's index blob over its values
    # Paimon's fixed mode for _KEY_ columns; postpone-bucket files carry none (their writer sets
    # metadata.stats-mode = none for the whole file)
    key_stats_mode: StatsModeLike = KEY_STATS_MODE
    # data-file.thin-mode: files without the _KEY_ copies (Paimon's KeyValueThinDataFileWriterImpl;
    # every reader takes the key from the value columns when a file has no _KEY_ columns). The
    # key statistics stay those of the key columns, which the copies would have had.
    thin_mode: bool = False
    # the table's last dictionary-encoding choice, reused for the next files (shared by a
    # table's writers through TableCore.dictionary_choice; else this bucket's own)
    dictionary_choice: DictionaryChoice = field(default_factory=DictionaryChoice)

    def path(self, file_name: str) -> str:
        return posixpath.join(self.bucket_dir, file_name)

    def delete(self, file_name: str) -> None:
        self.file_io.delete(self.path(file_name))

    def format_of(self, level: int) -> FileFormat:
        return self.formats.for_level(level)[0]

    def file_fields(self) -> list:
        """The Paimon fields of a KV file (ids as Java writes them, for formats that carry them)."""
        schema = self.layout.schema
        keys = [] if self.thin_mode else [schema.field(k) for k in self.layout.key_names]
        return kv_file_fields(keys, schema.fields)

    def file_rows(self, kv: pa.Table) -> pa.Table:
        """The columns of ``kv`` a file stores (without the _KEY_ copies in thin mode)."""
        return kv.drop_columns(list(self.layout.key_columns)) if self.thin_mode else kv


class KVFileStats:
    """The statistics of one KV file folded chunk by chunk, so a chunk can be dropped once encoded.

    Gives exactly what one pass over the whole file would: first and last key (the file is
    sorted by key, except a postpone-bucket file: its rows in arrival order), sequence range,
    delete count, key stats in ``key_stats_mode`` for ``_KEY_`` columns, value stats in the table's ``metadata.stats-mode``
    (see :mod:`impl.datafile.stats`).
    """

    def __init__(self, ctx: KVFileContext):
        layout = ctx.layout
        self._ctx = ctx
        self._keys = StatsCollector(layout.key_columns, layout.key_types, ctx.key_stats_mode, dense=False)
        self._values = StatsCollector(layout.value_names, layout.value_types, ctx.stats_mode)
        self._first: list | None = None
        self._last: list | None = None
        self._seq_min: int | None = None
        self._seq_max: int | None = None
        self.rows = 0
        self._deletes = 0
        self._index = collector_for(ctx.file_index, layout.schema.fields)

    def update(self, kv: pa.Table) -> None:
        n = kv.num_rows
        if n == 0:
            return
        key_columns = self._ctx.layout.key_columns
        if self._first is None:
            self._first = [kv.column(c)[0].as_py() for c in key_columns]
        self._last = [kv.column(c)[n - 1].as_py() for c in key_columns]
        seq = pc.min_max(kv.column(SEQUENCE_NUMBER)).as_py()
        lo, hi = int(seq["min"]), int(seq["max"])
        self._seq_min = lo if self._seq_min is None else min(self._seq_min, lo)
        self._seq_max = hi if self._seq_max is None else max(self._seq_max, hi)
        kinds = kv.column(VALUE_KIND).to_numpy()
        self._deletes += int(np.count_nonzero((kinds == 1) | (kinds == 3)))
        self._keys.update(kv)
        self._values.update(kv)
        if self._index is not None:
            self._index.update(kv)
        self.rows += n

    def meta(self, file_name: str, file_size: int, level: int, source: FileSource) -> DataFileMeta:
        if self._first is None or self._last is None or self._seq_min is None or self._seq_max is None:
            raise ValueError(f"KV file {file_name} has no rows")
        key_stats, _ = self._keys.result()
        value_stats, value_stats_cols = self._values.result()
        codec = self._ctx.key_codec
        embedded, extra = (None, ()) if self._index is None else self._index.finish(
            self._ctx.file_io, self._ctx.path(file_name))
        keys = KeyFacts(codec.encode(self._first), codec.encode(self._last), key_stats, self._seq_min, self._seq_max,
                        self._deletes)
        return written_file_meta(file_name, file_size, self.rows, schema_id=self._ctx.schema_id,
                                 creation_time_millis=self._ctx.clock_millis(), value_stats=value_stats,
                                 value_stats_cols=value_stats_cols, keys=keys, level=level, file_source=source,
                                 embedded_file_index=embedded, extra_files=extra)


def build_file_meta(ctx: KVFileContext, file_name: str, file_size: int, kv: pa.Table, level: int,
                    source: FileSource) -> DataFileMeta:
    """DataFileMeta of a KV file holding ``kv`` (sorted by key): key range, stats, sequence range."""
    stats = KVFileStats(ctx)
    stats.update(kv)
    return stats.meta(file_name, file_size, level, source)


class _OpenKVFile:
    """The file a :class:`RollingKVWriter` is filling: its format writer over a stream to storage
    (or over memory when the bytes are kept), and its statistics so far."""

    def __init__(self, ctx: KVFileContext, name: str, schema: pa.Schema, rows: pa.Table, keep_bytes: bool,
                 level: int):
        self.name = name
        self.memory: io.BytesIO | None = io.BytesIO() if keep_bytes else None
        self.out: OutputFile | None = None if keep_bytes else ctx.file_io.open_output(ctx.path(name))
        sink = self.memory if self.memory is not None else self.out.stream  # type: ignore[union-attr]
        fmt, options = ctx.formats.for_level(level, ctx.target_file_size)
        try:
            self.writer = fmt.create_writer(sink, schema, ctx.file_fields(), options, dictionary_columns=(
                ctx.dictionary_choice.columns(rows, unique=known_unique_columns(ctx.layout), repeated=(VALUE_KIND,))
                if fmt.name == "parquet" else None))
        except BaseException:
            self.discard()
            raise
        self.stats = KVFileStats(ctx)

    def size(self) -> int:
        return self.memory.tell() if self.memory is not None else self.out.tell()  # type: ignore[union-attr]

    def discard(self) -> None:
        if self.out is not None:
            self.out.abort()


def known_unique_columns(layout: KVLayout) -> tuple[str, ...]:
    """Columns of a KV file that hold distinct values: sequence numbers (one per row written)
    and, for a one-field primary key, its ``_KEY_`` column and the user column it copies (a
    merged file holds a key once)."""
    if len(layout.key_columns) == 1:
        return (SEQUENCE_NUMBER, layout.key_columns[0], layout.key_names[0])
    return (SEQUENCE_NUMBER,)


class RollingKVWriter:
    """Writes a stream of sorted KV tables into files of about ``target_file_size`` bytes.

    Each file is streamed to storage as its row groups are encoded (``FileIO.open_output``)
    and its statistics are folded chunk by chunk, so memory stays at about one chunk whatever
    the file size. ``written`` lists every file name this writer created (finished or not),
    so a failed or cancelled job can delete exactly its own files with :meth:`abort`; a write
    that raises drops the open file itself. With ``keep_bytes`` each file is built in memory
    and its bytes stay available (for copying a data file as a changelog file).
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
        self._open: _OpenKVFile | None = None
        self._ratio = 1.0  # compressed bytes per in-memory byte, learned as row groups are written

    def write(self, kv: pa.Table) -> None:
        n = kv.num_rows
        if n == 0:
            return
        schema = self.ctx.layout.schema_for(kv.column_names)
        if kv.schema != schema:
            kv = kv.cast(schema)
        stored = self.ctx.file_rows(kv)
        row_bytes = max(kv.nbytes / n, 1.0)
        target = self.ctx.target_file_size
        pos = 0
        try:
            while pos < n:
                f = self._file(stored.schema, stored.slice(pos))
                before = f.size()
                missing = max(target - before, 1)
                rows = int(missing / (row_bytes * self._ratio)) + 1
                chunk = kv.slice(pos, min(rows, n - pos))
                f.writer.write(stored.slice(pos, chunk.num_rows))
                f.stats.update(chunk)
                written = f.size() - before
                if chunk.nbytes > 0 and written > 0:
                    self._ratio = max(written / chunk.nbytes, 1e-4)
                pos += chunk.num_rows
                if f.size() >= target:
                    self._finish_file()
        except BaseException:
            self._discard_open()
            raise

    def _file(self, schema: pa.Schema, rows: pa.Table) -> _OpenKVFile:
        """The open file, a new one (encoded for ``rows``) if none is open."""
        if self._open is None:
            name = named_for(self._new_name(), self.ctx.format_of(self.level))
            self.written.append(name)
            self._open = _OpenKVFile(self.ctx, name, schema, rows, self.keep_bytes, self.level)
        return self._open

    def _finish_file(self) -> None:
        f = self._open
        if f is None:
            return
        f.writer.close()
        if f.memory is not None:
            data = f.memory.getvalue()
            self.ctx.file_io.write_bytes(self.ctx.path(f.name), data)
            self.file_bytes[f.name] = data
            size = len(data)
        else:
            assert f.out is not None
            size = f.out.close()
        self._open = None
        meta = f.stats.meta(f.name, size, self.level, self.source)
        self.written.extend(meta.extra_files)  # its .index file: deleted with it on abort
        self.results.append(meta)

    def _discard_open(self) -> None:
        f, self._open = self._open, None
        if f is None:
            return
        f.writer.abort()
        f.discard()

    def close(self) -> list[DataFileMeta]:
        """Finish the open file; the metas of all files written, in key order."""
        try:
            self._finish_file()
        except BaseException:
            self._discard_open()
            raise
        return list(self.results)

    def abort(self) -> None:
        """Drop the open file and delete every file this writer stored."""
        self._discard_open()
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

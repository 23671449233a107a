"""Writing append-table data files (in the table's ``file.format``), rolling at ``target-file-size``.

One :class:`RollingFileWriter` per (partition, bucket). Rows are buffered as Arrow batches;
once the buffer reaches ``buffer_bytes`` it is written into the current file,
and a file is closed (and a new one begun) once its size reaches the target. Each closed file
becomes a :class:`DataFileMeta` with its value statistics, folded row group by row group. The
open file is streamed to storage (``FileIO.open_output``) as row groups are encoded, so memory
holds one buffer of rows, not one file; ``abort`` drops it, and an abandoned writer leaves at most
files nobody references (a snapshot names a file only after ``prepare_commit``).
"""

from __future__ import annotations

from typing import Callable, Sequence

import pyarrow as pa

from impl.data.types import DataField
from impl.datafile.meta import DataFileMeta, FileSource, written_file_meta
from impl.datafile.stats import DEFAULT_STATS_MODE, StatsCollector, StatsModeLike
from impl.environment import wall_clock_millis
from impl.fileindex.options import FileIndexSpec
from impl.fileindex.writer import collector_for, index_file_name
from impl.format.formats import named_for
from impl.fs.file_io import FileIO, OutputFile
from impl.options.write_formats import WriteFormats

# rows buffered before they are written (a Parquet row group at most)
ROW_GROUP_ROWS = 1 << 20
# a target file size no file reaches: one file for everything written (a row-id group's file)
NO_ROLLING = 1 << 62


class _OpenFile:
    def __init__(self, out: OutputFile, name: str, schema: pa.Schema, formats: WriteFormats, target_file_size: int,
                 fields: Sequence[DataField], stats_mode: StatsModeLike, file_index: FileIndexSpec | None = None):
        self.name = name
        self.out = out
        fmt, options = formats.for_level(0, target_file_size)
        try:
            self.writer = fmt.create_writer(out.stream, schema, fields, options)
        except BaseException:
            out.abort()
            raise
        self.rows = 0
        self.stats = StatsCollector.of_fields(fields, stats_mode)
        self.index = collector_for(file_index, fields)

    def write(self, table: pa.Table) -> None:
        self.writer.write(table)
        self.stats.update(table)
        if self.index is not None:
            self.index.update(table)
        self.rows += table.num_rows

    def size(self) -> int:
        return self.out.tell()


class RollingFileWriter:
    """Writes the rows of one (partition, bucket) into data files of about ``target_file_size`` bytes."""

    def __init__(self, file_io: FileIO, bucket_dir: str, schema: pa.Schema, fields: Sequence[DataField], *,
                 schema_id: int, target_file_size: int, formats: WriteFormats | None = None,
                 stats_mode: StatsModeLike = DEFAULT_STATS_MODE, file_source: FileSource = FileSource.APPEND,
                 name_factory: Callable[[], str], buffer_rows: int = ROW_GROUP_ROWS,
                 clock_millis: Callable[[], int] = wall_clock_millis, file_index: FileIndexSpec | None = None):
        self.file_io = file_io
        self.file_index = file_index  # the table's file-index.* options: each file's index blob
        collector_for(file_index, fields)  # refuse an index Paimon cannot write before any file is opened
        self._clock_millis = clock_millis  # the environment's clock: file creation times
        self.bucket_dir = bucket_dir.rstrip("/")
        self.schema = schema
        self.fields = list(fields)
        self.schema_id = schema_id
        self.target_file_size = target_file_size
        self.formats = formats or WriteFormats()
        self.stats_mode = stats_mode
        self.file_source = file_source
        self._names = name_factory
        self.buffer_rows = buffer_rows
        self._buffer: list[pa.Table] = []
        self._buffered_rows = 0
        self._current: _OpenFile | None = None
        self._finished: list[DataFileMeta] = []
        self._written_paths: list[str] = []

    def write(self, table: pa.Table) -> None:
        """Buffer rows (already in the file schema's column order and types)."""
        if table.num_rows == 0:
            return
        self._buffer.append(table)
        self._buffered_rows += table.num_rows
        if self._buffered_rows >= self.buffer_rows:
            self._flush_buffer()

    def _flush_buffer(self) -> None:
        if not self._buffer:
            return
        data = pa.concat_tables(self._buffer) if len(self._buffer) > 1 else self._buffer[0]
        self._buffer, self._buffered_rows = [], 0
        # cut the rows so no file overshoots its target by much: estimate bytes per row from
        # the current file, else from the in-memory size with a conservative compression guess
        offset = 0
        while offset < data.num_rows:
            if self._current is None:
                name = named_for(self._names(), self.formats.for_level(0)[0])
                path = f"{self.bucket_dir}/{name}"
                self._written_paths.append(path)
                self._current = _OpenFile(self.file_io.open_output(path), name, self.schema, self.formats,
                                          self.target_file_size, self.fields, self.stats_mode, self.file_index)
            cur = self._current
            remaining_bytes = max(self.target_file_size - cur.size(), 1)
            if cur.rows > 0 and cur.size() > 0:
                per_row = cur.size() / cur.rows
            else:
                per_row = max(data.nbytes / max(data.num_rows, 1) / 4, 1e-3)
            take = max(1, min(data.num_rows - offset, int(remaining_bytes / per_row) + 1))
            cur.write(data.slice(offset, take))
            offset += take
            if cur.size() >= self.target_file_size:
                self._close_current()

    def _close_current(self) -> None:
        cur = self._current
        if cur is None:
            return
        self._current = None
        try:
            cur.writer.close()
            size = cur.out.close()
        except BaseException:
            cur.out.abort()
            raise
        stats, cols = cur.stats.result()
        embedded: bytes | None = None
        extra: tuple[str, ...] = ()
        if cur.index is not None:
            path = f"{self.bucket_dir}/{cur.name}"
            self._written_paths.append(index_file_name(path))
            embedded, extra = cur.index.finish(self.file_io, path)
        self._finished.append(written_file_meta(
            cur.name, size, cur.rows, schema_id=self.schema_id, creation_time_millis=self._clock_millis(),
            value_stats=stats, value_stats_cols=cols, file_source=self.file_source,
            embedded_file_index=embedded, extra_files=extra))

    def prepare_commit(self) -> list[DataFileMeta]:
        """Write out everything buffered, close the open file, and hand over the finished files."""
        self._flush_buffer()
        self._close_current()
        out, self._finished = self._finished, []
        self._written_paths = []
        return out

    def abort(self) -> None:
        """Drop buffered rows and delete files written since the last prepare_commit."""
        self._buffer, self._buffered_rows = [], 0
        if self._current is not None:
            try:
                self._current.writer.abort()
            except Exception:  # noqa: BLE001
                pass
            self._current.out.abort()
            self._current = None
        self.file_io.delete_quietly(self._written_paths)
        self._written_paths = []
        self._finished = []

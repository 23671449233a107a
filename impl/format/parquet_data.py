"""Parquet data files (pyarrow.parquet): row groups stream to the output as they are encoded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, BinaryIO, Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from impl.data.types import DataField
from impl.format.file_format import FileFormat, FormatReader, FormatWriter, WriteOptions, check_writable, seekable
from impl.format.memory_pool import read_pool, write_pool
from impl.format.parquet_open import open_parquet

if TYPE_CHECKING:
    import pyarrow.dataset as ds

# rows per Parquet row group at most
ROW_GROUP_ROWS = 1 << 20
# Batched reads fetch each column chunk through a buffer of this many bytes, without
# pyarrow's pre-buffering (on by default, it reads every row group's column chunks of the file
# up front): a merge reads a batch at a time from each of its runs, and each open file would
# otherwise hold its whole compressed size (up to target-file-size) in memory.
STREAM_BUFFER_BYTES = 1 << 20
# The same buffer for a local or in-memory file (a pyarrow NativeFile: a refill is one read
# syscall or a copy). pyarrow allocates
# these buffers (one per column chunk of every open file) and the decompressed pages from
# Arrow's default pool, which no pyarrow API lets a reader choose; with 1 MB buffers a
# compaction of 3 runs of 7 columns held 21 MB there on Arrow's threads, and its peak RSS was
# 315-320 MB against 265-281 MB with 16-128 kB buffers (same CPU; a merge-on-read of the same
# table: 270-279 against 210-217 MB peak, same CPU; benchmarks/README.md, issue 49 item 4).
# Remote streams keep 1 MB: there a refill may be a ranged GET.
LOCAL_STREAM_BUFFER_BYTES = 64 << 10
_ERRORS = (pa.ArrowException, OSError, ValueError)


class ParquetReader(FormatReader):
    format_name = "Parquet"
    prunes = True

    def __init__(self, source: Any, path: str):
        super().__init__(path)
        try:
            self._source = seekable(source)
            self._pool = read_pool()
            # the reader pq.ParquetFile wraps, with this reader's memory pool (open_parquet): a
            # whole-file read through it costs 25 % less than a dataset fragment's scan (10 files
            # of 25k rows: 12.8 against 17.1 ms), which sets up a scanner per call
            self._reader = open_parquet(self._source, self._pool)
            self._names = list(self._reader.schema_arrow.names)
        except _ERRORS as e:
            raise self.corrupt(e) from e
        self._leaves: dict[str, list[int]] | None = None
        self._scan_fragment: ds.ParquetFileFragment | None = None

    @property
    def column_names(self) -> list[str]:
        return self._names

    @property
    def num_rows(self) -> int:
        return self._reader.metadata.num_rows

    def _fragment(self) -> ds.ParquetFileFragment:
        """The file as a dataset fragment, for scans with a filter (made on first use)."""
        if self._scan_fragment is None:
            # imported here, not at the top: pyarrow.dataset imports pandas (0.15-0.3 s), which
            # every `import impl` would pay although only filtered scans use it
            import pyarrow.dataset as ds

            self._scan_fragment = ds.ParquetFileFormat().make_fragment(self._source)
        return self._scan_fragment

    def _leaf_indices(self, names: Sequence[str]) -> list[int]:
        """The Parquet leaf columns of the top-level columns ``names`` (a nested column has several)."""
        if self._leaves is None:
            leaves: dict[str, list[int]] = {}
            for i, leaf_path in enumerate(self._reader.column_paths):
                leaves.setdefault(leaf_path[0], []).append(i)
            self._leaves = leaves
        return [i for n in names for i in self._leaves.get(n, [])]

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        names = self.present(columns)
        try:
            if names is None:
                return self._reader.read_all(use_threads=True)
            table = self._reader.read_all(column_indices=self._leaf_indices(names), use_threads=True)
        except _ERRORS as e:
            raise self.corrupt(e) from e
        return table.select(names)

    def read_where(self, columns: Sequence[str], predicate: Any) -> pa.Table:
        """Row groups whose statistics rule ``predicate`` out are not decoded."""
        try:
            return self._fragment().to_table(columns=self.present(columns), filter=predicate,
                                             batch_size=ROW_GROUP_ROWS, memory_pool=self._pool)
        except _ERRORS as e:
            raise self.corrupt(e) from e

    def iter_batches(self, columns: Sequence[str] | None, batch_rows: int) -> Iterator[pa.Table]:
        try:
            # pq's reader, not the fragment's scan: it streams a row group page by page (a 4M-row row
            # group in 256k-row batches peaked at 140 MB over the start against 230 MB scanned);
            # the reader under pq.ParquetFile, to decode into this reader's pool (a compaction's
            # inputs: see impl.format.memory_pool.write_pool)
            streamed = open_parquet(self._source, self._pool, metadata=self._reader.metadata,
                                    buffer_size=stream_buffer_bytes(self._source), pre_buffer=False)
            names = self.present(columns)
            batches = streamed.iter_batches(batch_rows, range(self._reader.metadata.num_row_groups),
                                            column_indices=None if names is None else self._leaf_indices(names))
            while True:
                batch = next(batches, None)
                if batch is None:
                    return
                table = pa.Table.from_batches([batch])
                yield table if names is None else table.select(names)
        except _ERRORS as e:
            raise self.corrupt(e) from e


def stream_buffer_bytes(source: Any) -> int:
    """The read buffer of each column chunk a batched read streams from ``source``: small for a
    local or in-memory file (a pyarrow ``NativeFile``: :data:`LOCAL_STREAM_BUFFER_BYTES`), 1 MB
    for a Python file object (fsspec's remote files: a refill may be a request).

    >>> stream_buffer_bytes(pa.BufferReader(b"")) == LOCAL_STREAM_BUFFER_BYTES
    True
    >>> import io; stream_buffer_bytes(io.BytesIO(b"")) == STREAM_BUFFER_BYTES
    True
    """
    return LOCAL_STREAM_BUFFER_BYTES if isinstance(source, pa.NativeFile) else STREAM_BUFFER_BYTES


FIELD_ID_KEY = b"PARQUET:field_id"


def with_field_ids(schema: pa.Schema, fields: Sequence[DataField]) -> pa.Schema:
    """``schema`` with each top-level column's Paimon field id as its Parquet field id, as Paimon
    Java writes them: readers that resolve columns by id (Iceberg's, over Paimon's Iceberg
    metadata) find impl's columns without a name mapping. The caller says which ids: the
    append writer the table's fields, the merge-tree writer also Java's special ids of its
    system columns (``kv_file_fields``: ``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``), so an
    Iceberg reader of a primary-key table's files skips those by id. Columns without a field are
    kept as they are; rows are unchanged (the writer compares schemas without metadata).

    Example::

        with_field_ids(pa.schema([("id", pa.int64())]), [DataField(0, "id", BIGINT())])
        # id: int64 -- field metadata: PARQUET:field_id: '0'
    """
    ids = {f.name: f.id for f in fields}
    if not ids:
        return schema
    out = []
    for field in schema:
        fid = ids.get(field.name)
        out.append(field if fid is None else field.with_metadata({**(field.metadata or {}), FIELD_ID_KEY: str(fid)}))
    return pa.schema(out, metadata=schema.metadata)


class ParquetWriter(FormatWriter):
    def __init__(self, stream: BinaryIO, schema: pa.Schema, options: WriteOptions,
                 dictionary_columns: Sequence[str] | None, fields: Sequence[DataField] = ()):
        kwargs: dict[str, Any] = {"compression": options.compression}
        if options.compression == "zstd" and options.zstd_level is not None:
            kwargs["compression_level"] = options.zstd_level
        if dictionary_columns is not None:
            kwargs["use_dictionary"] = list(dictionary_columns)
        # the encoder's buffers from the write pool (see impl.format.memory_pool.write_pool)
        self._writer = pq.ParquetWriter(stream, with_field_ids(schema, fields), memory_pool=write_pool(), **kwargs)

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)

    def close(self) -> None:
        self._writer.close()


class ParquetFileFormat(FileFormat):
    name = "parquet"

    def open_reader(self, source: Any, path: str) -> FormatReader:
        return ParquetReader(source, path)

    def create_writer(self, stream: BinaryIO, schema: pa.Schema, fields: Sequence[DataField],
                      options: WriteOptions, *, dictionary_columns: Sequence[str] | None = None) -> FormatWriter:
        check_writable(fields)
        return ParquetWriter(stream, schema, options, dictionary_columns, fields)

    def check_options(self, options: WriteOptions) -> None:
        pass  # every file.compression name maps to a Parquet codec

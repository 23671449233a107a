"""Opening a Parquet file whose reads decode into a given memory pool (one home for pyarrow's
private reader).

``pq.ParquetFile`` takes no memory pool; the reader it wraps, ``pyarrow._parquet.ParquetReader``
(a private class), does. impl's reads decode into ``impl.format.memory_pool.read_pool`` and a
compaction's streamed inputs into its pool, so both open files through :func:`open_parquet`.
Should a pyarrow version lack the private class or change its signature, the file is opened
with the public ``pq.ParquetFile`` instead (the default pool; the same rows).
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

_PRIVATE_READER: Any
try:
    from pyarrow import _parquet

    _PRIVATE_READER = _parquet.ParquetReader
except (ImportError, AttributeError):  # a pyarrow without it: the public API below
    _PRIVATE_READER = None


def open_parquet(source: Any, pool: pa.MemoryPool, *, metadata: pq.FileMetaData | None = None,
                 buffer_size: int = 0, pre_buffer: bool = True) -> Any:
    """A reader of the Parquet file ``source`` (seekable) decoding into ``pool``: the members
    impl uses of pyarrow's reader (``schema_arrow``, ``metadata``, ``column_paths``,
    ``read_all(column_indices=, use_threads=)``, ``iter_batches(batch_size, row_groups,
    column_indices=)``). ``metadata`` skips reading the footer again; ``buffer_size`` /
    ``pre_buffer`` as pyarrow's (buffered column-chunk reads instead of pre-buffering).

    Example::

        reader = open_parquet(f, pa.default_memory_pool())
        reader.read_all(column_indices=[0], use_threads=True)
    """
    if _PRIVATE_READER is not None:
        try:
            reader = _PRIVATE_READER(memory_pool=pool)
            reader.open(source, metadata=metadata, buffer_size=buffer_size, pre_buffer=pre_buffer)
            return reader
        except TypeError:  # another signature (a pyarrow version): the public API
            if hasattr(source, "seek"):
                source.seek(0)
    return PublicReader(pq.ParquetFile(source, metadata=metadata, buffer_size=buffer_size, pre_buffer=pre_buffer))


def _leaf_count(t: pa.DataType) -> int:
    """Parquet leaf columns of an Arrow column of type ``t``."""
    if pa.types.is_struct(t):
        return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaf_count(t.key_type) + _leaf_count(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_count(t.value_type)
    return 1


class PublicReader:
    """The fallback: pyarrow's reader members over the public ``pq.ParquetFile`` (the default
    pool). A read by leaf indices decodes every column and keeps the top-level columns those
    leaves belong to (ParquetFile names columns by dotted path, which a name holding a dot makes
    ambiguous): slower than the private reader, the same rows."""

    def __init__(self, file: pq.ParquetFile):
        self._file = file
        self.schema_arrow = file.schema_arrow
        self.metadata = file.metadata
        # [top-level name] per leaf: only a path's first element is used, and the Arrow schema
        # names top-level columns exactly (a ParquetSchema path joins names with dots)
        self.column_paths = [[f.name] for f in self.schema_arrow for _ in range(_leaf_count(f.type))]

    def _names(self, column_indices: Sequence[int] | None) -> list[str] | None:
        if column_indices is None:
            return None
        wanted = {self.column_paths[i][0] for i in column_indices}
        return [f.name for f in self.schema_arrow if f.name in wanted]

    def read_all(self, column_indices: Sequence[int] | None = None, use_threads: bool = True) -> pa.Table:
        names = self._names(column_indices)
        table = self._file.read(use_threads=use_threads)
        return table if names is None else table.select(names)

    def iter_batches(self, batch_size: int, row_groups: Sequence[int],
                     column_indices: Sequence[int] | None = None) -> Iterator[pa.RecordBatch]:
        names = self._names(column_indices)
        for batch in self._file.iter_batches(batch_size, row_groups=list(row_groups)):
            yield batch if names is None else batch.select(names)

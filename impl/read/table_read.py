"""Reading splits into Arrow.

Append tables: each data file is read in its own format (``impl.format.file_format``; only the needed columns), the filter is
applied as an Arrow compute expression, then the projection. Files are read concurrently
(pyarrow decodes without the GIL) and concatenated in split order.

Primary-key tables: each split (one bucket) is merged on read by ``impl.mergetree.merge_read``
(deduplicate / partial-update / aggregation / first-row). Incremental splits of primary-key
tables (DELTA / CHANGELOG; one per bucket and snapshot) are returned as raw change rows in
sequence order with an extra int8 column ``_VALUE_KIND`` (0 +I, 1 -U, 2 +U, 3 -D); splits
are read in the order given.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from itertools import islice
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from impl._optional import require
from impl.datafile.meta import DataFileMeta
from impl.errors import DataFileError
from impl.format.formats import open_reader
from impl.predicate.predicate import Predicate
from impl.read.fallback import column_names, open_fallback, renamed_predicate
from impl.read.pandas_io import arrow_to_pandas
from impl.read.primary_key import iter_pk_data_split, read_pk_split
from impl.read.row_tracking import fill_row_tracking, read_evolved_group, row_id_groups
from impl.read.scan import DataSplit, SplitKind
from impl.schema.evolution import column_sources, plan_columns
from impl.store.core import TableCore
from impl.store.schema import is_row_tracking_column, row_tracking_field

VALUE_KIND = "_VALUE_KIND"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
# Decoding releases the GIL, so one thread per core keeps the cores busy; more threads only
# hold more decoded files in memory at once.
_MAX_READ_THREADS = max(1, os.cpu_count() or 2)


def read_data_file(table: TableCore, source, path: str, f: DataFileMeta, columns: Sequence[str],
                   predicate=None) -> pa.Table:
    """``columns`` (current names) of an append data file, in the table's current types.

    A file written under an older schema (``f.schema_id``) is matched by field id: renamed
    columns are read under their old name, columns it lacks (added since, or re-added after a
    drop) read as nulls, widened types are cast. ``predicate`` (an Arrow expression over
    ``columns``; only for reads without deletion vectors: the rows lose their positions) lets
    a format with footer statistics skip what cannot match; the caller still filters."""
    sources = None
    if f.schema_id != table.schema.id:
        sources = column_sources(table.schema_manager.schema(f.schema_id), table.schema)
    reader = open_reader(source, path)
    if reader.num_rows != f.row_count:
        raise DataFileError(path, f"holds {reader.num_rows} rows, its manifest entry says {f.row_count}")
    pairs = plan_columns(columns, set(reader.column_names), sources)
    if predicate is not None and sources is None and reader.prunes:
        read = reader.read_where([p for _, p in pairs], predicate)
    else:
        read = reader.read([p for _, p in pairs])
    t = pa.Table.from_arrays([read.column(p) for _, p in pairs], names=[c for c, _ in pairs])
    # a file holding none of the columns still has its rows (read as nulls)
    num_rows = t.num_rows if pairs else reader.num_rows
    full = table.arrow_schema
    cols = []
    for name in columns:
        # row-tracking system columns: as stored (null where absent), filled by the caller
        field = row_tracking_field(name) if is_row_tracking_column(name) else full.field(name)
        if name in t.column_names:
            col = t.column(name)
            if not col.type.equals(field.type):
                try:
                    col = col.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                    raise DataFileError(path, f"column {name!r} ({col.type}) does not read as {field.type}: {e}") from e
        else:
            col = pa.nulls(num_rows, field.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=pa.schema([
        row_tracking_field(n) if is_row_tracking_column(n) else full.field(n) for n in columns]))


class Row(tuple):
    """One row of :meth:`TableRead.to_iterator`: its values in projection order."""

    __slots__ = ()

    def get_field(self, pos: int):
        """The value at position ``pos`` (pypaimon's InternalRow accessor)."""
        return self[pos]


class TableRead:
    """Reads splits planned by :class:`impl.read.scan.TableScan` (``ReadBuilder.new_read()``)."""

    def __init__(self, table: TableCore, predicate: Predicate | None = None,
                 projection: Sequence[str] | None = None, limit: int | None = None):
        self.table = table
        self.predicate = predicate
        self.projection = list(projection) if projection is not None else table.schema.field_names
        self.limit = limit
        self._full_schema = table.arrow_schema
        self._lock = threading.Lock()
        self.files_read = 0  # data files opened by this reader (observability / tests)
        # the reader of scan.fallback-branch splits and its column names back to ours, made once
        self._fallback_read: tuple[TableRead, dict[str, str]] | None = None

    # ------------------------------------------------------------------ schema

    def _read_columns(self) -> list[str]:
        needed = list(self.projection)
        if self.predicate is not None:
            for f in self.table.schema.field_names:
                if f in self.predicate.fields() and f not in needed:
                    needed.append(f)
        return needed

    def output_schema(self, with_value_kind: bool = False) -> pa.Schema:
        fields = [row_tracking_field(n) if is_row_tracking_column(n) else self._full_schema.field(n)
                  for n in self.projection]
        if with_value_kind:
            fields.append(pa.field(VALUE_KIND, pa.int8(), nullable=False))
        return pa.schema(fields)

    # ------------------------------------------------------------------ public API

    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table:
        """All rows of ``splits`` as one table (projection and filter applied)."""
        splits = list(splits)
        with_kind = self._with_value_kind(splits)
        tables = list(self._iter_tables(splits))
        schema = self.output_schema(with_kind)
        if not tables:
            return schema.empty_table()
        out = pa.concat_tables(tables)
        if self.limit is not None and out.num_rows > self.limit:
            out = out.slice(0, self.limit)
        return out

    def to_arrow_batch_reader(self, splits: Sequence[DataSplit]) -> pa.RecordBatchReader:
        """A streaming reader over the rows of ``splits`` (one split in memory at a time)."""
        splits = list(splits)
        schema = self.output_schema(self._with_value_kind(splits))

        def batches() -> Iterator[pa.RecordBatch]:
            # _iter_tables stops once the limit is reached but yields the last table whole
            produced = 0
            for t in self._iter_tables(splits):
                if self.limit is not None:
                    t = t.slice(0, self.limit - produced)
                produced += t.num_rows
                yield from t.to_batches()

        def merged_batches() -> Iterator[pa.RecordBatch]:
            # One split at a time, each merged chunk by chunk: memory stays bounded by the
            # chunk size however large a bucket is.
            produced = 0
            for s in splits:
                with self._lock:
                    self.files_read += len(s.files)
                for t in iter_pk_data_split(self.table, s, self.projection, self.predicate):
                    t = self._conform(t, schema)
                    if self.limit is not None:
                        t = t.slice(0, self.limit - produced)
                    produced += t.num_rows
                    yield from t.to_batches()
                    if self.limit is not None and produced >= self.limit:
                        return

        streamed = self.table.is_primary_key_table and all(s.kind is SplitKind.DATA and not s.fallback for s in splits)
        return pa.RecordBatchReader.from_batches(schema, merged_batches() if streamed else batches())

    def to_pandas(self, splits: Sequence[DataSplit]):
        """The rows as a pandas DataFrame (needs the ``pandas`` extra), values kept exactly (a BIGINT
        column with nulls as ``Int64``: see :mod:`impl.read.pandas_io`)."""
        require("pandas", "to_pandas()")  # checked before reading anything
        return arrow_to_pandas(self.to_arrow(splits))

    def to_iterator(self, splits: Sequence[DataSplit]) -> Iterator["Row"]:
        """The rows one by one, each a :class:`Row` (a tuple of Python values in projection
        order, with pypaimon's ``get_field(pos)``), read batch by batch as iterated."""
        reader = self.to_arrow_batch_reader(splits)
        for batch in reader:
            # one conversion per column and batch; a Python object per row is what was asked for
            yield from map(Row, zip(*(c.to_pylist() for c in batch.columns), strict=True))

    def to_duckdb(self, splits: Sequence[DataSplit], table_name: str, connection=None):
        """The rows registered as DuckDB table ``table_name`` on ``connection`` (default: a new
        in-memory database), which is returned (pypaimon's ``to_duckdb``; needs the duckdb extra)."""
        duckdb = require("duckdb", "to_duckdb()")  # checked before reading anything
        con = connection if connection is not None else duckdb.connect(database=":memory:")
        con.register(table_name, self.to_arrow(splits))
        return con

    def to_ray(self, splits: Sequence[DataSplit], *, ray_remote_args: dict | None = None,
               concurrency: int | None = None, override_num_blocks: int | None = None):
        """The rows of ``splits`` as a Ray Dataset read in parallel Ray tasks (pypaimon's
        ``to_ray``; needs the ray extra): see :mod:`impl.ray`."""
        ray_source = require("impl.ray.source", "to_ray()", extra="ray")  # impl.ray sits above the table layer: resolved when called, as an optional library is
        return ray_source.splits_to_ray(self, splits, ray_remote_args=ray_remote_args, concurrency=concurrency,
                             override_num_blocks=override_num_blocks)

    # ------------------------------------------------------------------ internals

    def _with_value_kind(self, splits: Sequence[DataSplit]) -> bool:
        return self.table.is_primary_key_table and any(s.kind is not SplitKind.DATA for s in splits)

    def _iter_tables(self, splits: list[DataSplit]) -> Iterator[pa.Table]:
        if not splits:
            return
        with_kind = self._with_value_kind(splits)
        schema = self.output_schema(with_kind)
        tasks: list[Callable[[], pa.Table]] = []
        for s in splits:
            if s.fallback:
                tasks.append(partial(self._read_fallback_split, s))
            elif self.table.is_primary_key_table:
                tasks.append(partial(self._read_pk_split, s, with_kind))
            elif self.table.options.data_evolution:
                tasks.extend(partial(self._read_evolved_group, s, g) for g in row_id_groups(s.files))
            else:
                deleted = self._append_deletion_vectors(s)
                tasks.extend(partial(self._read_append_file, s, f, deleted.get(f.file_name)) for f in s.files)
        produced = 0
        if len(tasks) == 1:
            results: Iterator[pa.Table] = iter([tasks[0]()])
            pool = None
        else:
            threads = min(_MAX_READ_THREADS, len(tasks))
            pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paimon-read")
            # a task queued behind each running one: a thread whose task ends before the oldest
            # one (whose result is yielded first) starts the next at once instead of idling
            results = _bounded_map(pool, tasks, 2 * threads)
        try:
            for t in results:
                t = self._conform(t, schema)
                if t.num_rows:
                    yield t
                produced += t.num_rows
                if self.limit is not None and produced >= self.limit:
                    break
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def _conform(self, t: pa.Table, schema: pa.Schema) -> pa.Table:
        cols = []
        for f in schema:
            if f.name in t.column_names:
                col = t.column(f.name)
                if not col.type.equals(f.type):
                    col = col.cast(f.type)
            else:
                col = pa.nulls(t.num_rows, f.type)
            cols.append(col)
        return pa.Table.from_arrays(cols, schema=schema)

    def _data_file_path(self, split: DataSplit, f: DataFileMeta) -> str:
        return self.table.paths.data_file_path(split.partition_path, split.bucket, f.file_name, f.external_path)

    def _append_deletion_vectors(self, split: DataSplit) -> Mapping[str, np.ndarray]:
        """The deletion vectors of an append split's files (by file name; empty without any)."""
        if not split.index_files:
            return {}
        # imported here: loading impl.mergetree is left to tables that use it
        from impl.mergetree.deletion_vectors import read_deletion_vectors
        return read_deletion_vectors(self.table.file_io, self.table.paths, split.index_files)

    def _read_file(self, split: DataSplit, f: DataFileMeta, columns: Sequence[str], pushed=None) -> pa.Table:
        """``columns`` of all of file ``f``'s rows (``pushed``: a predicate the format may skip
        rows by), row-tracking system columns filled."""
        path = self._data_file_path(split, f)
        try:
            with self.table.file_io.open_input(path) as source:
                t = read_data_file(self.table, source, path, f, columns, pushed)
        except FileNotFoundError as e:
            raise DataFileError(path, "file is missing (deleted by expiration, rollback or orphan cleanup?)") from e
        with self._lock:
            self.files_read += 1
        return fill_row_tracking(t, f) if self.table.options.row_tracking else t

    def read_row_id_group(self, split: DataSplit, group: Sequence[DataFileMeta], columns: Sequence[str]) -> pa.Table:
        """``columns`` of one row-id group of a data-evolution split (from
        :func:`impl.read.row_tracking.row_id_groups`), merged, in row-id order, unfiltered."""
        return read_evolved_group(self.table, group, columns, partial(self._read_file, split))

    def _read_evolved_group(self, split: DataSplit, group: Sequence[DataFileMeta]) -> pa.Table:
        t = self.read_row_id_group(split, group, self._read_columns())
        if self.predicate is not None:
            t = t.filter(self.predicate.to_arrow())
        return t.select(self.projection)

    def _read_append_file(self, split: DataSplit, f: DataFileMeta, deleted: np.ndarray | None = None) -> pa.Table:
        columns = self._read_columns()
        # skipping rows in the format would lose the positions row ids and deletion vectors count by
        positional = deleted is not None or any(is_row_tracking_column(c) for c in columns)
        pushed = self.predicate.to_arrow() if self.predicate is not None and not positional else None
        t = self._read_file(split, f, columns, pushed)
        if deleted is not None and len(deleted):
            if int(deleted[-1]) >= t.num_rows:
                raise DataFileError(self._data_file_path(split, f),
                                    f"its deletion vector deletes row {int(deleted[-1])} of {t.num_rows}")
            keep = np.ones(t.num_rows, dtype=bool)
            keep[deleted.astype(np.int64)] = False
            t = t.filter(pa.array(keep))
        if self.predicate is not None:
            t = t.filter(self.predicate.to_arrow())
        return t.select(self.projection)

    def _read_fallback_split(self, split: DataSplit) -> pa.Table:
        """A split of the ``scan.fallback-branch`` (see :mod:`impl.read.fallback`), read by
        that branch's view (its schemas, its vectors) and returned under this branch's column
        names (the caller casts to this branch's types)."""
        with self._lock:
            if self._fallback_read is None:
                other = open_fallback(self.table)
                if other is None:  # the option changed between plan and read: the split is stale
                    raise DataFileError(split.partition_path, "a fallback-branch split read by a view without "
                                                              "'scan.fallback-branch'")
                names = column_names(self.table.schema, other.schema)
                back = {theirs: ours for ours, theirs in names.items()}
                self._fallback_read = (TableRead(other, renamed_predicate(self.predicate, names),
                                                 [names.get(c, c) for c in self.projection]), back)
        read, back = self._fallback_read
        t = read.to_arrow([replace(split, fallback=False)])
        with self._lock:
            self.files_read += len(split.files)
        return t.rename_columns([back.get(c, c) for c in t.column_names])

    def _read_pk_split(self, split: DataSplit, with_kind: bool) -> pa.Table:
        with self._lock:
            self.files_read += len(split.files)
        return read_pk_split(self.table, split, self.projection, self.predicate, with_kind)


def _bounded_map(pool: ThreadPoolExecutor, tasks: Sequence[Callable[[], pa.Table]],
                 window: int) -> Iterator[pa.Table]:
    """Results of ``tasks`` in order, with at most ``window`` tasks submitted ahead of the caller.

    ``Executor.map`` submits every task at once, so a caller iterating batches slower than the
    pool reads would find every split's result held in memory; this keeps memory bounded by
    the window (a small multiple of the threads), not the number of splits."""
    pending: deque = deque()
    todo = iter(tasks)
    for task in islice(todo, window):
        pending.append(pool.submit(task))
    while pending:
        result = pending.popleft().result()
        nxt = next(todo, None)
        if nxt is not None:
            pending.append(pool.submit(nxt))
        yield result
        del result


def apply_filter(t: pa.Table, predicate: Predicate | None) -> pa.Table:
    if predicate is None or t.num_rows == 0:
        return t
    return t.filter(predicate.to_arrow())


__all__ = ["TableRead", "Row", "read_data_file", "apply_filter", "VALUE_KIND", "SEQUENCE_NUMBER"]

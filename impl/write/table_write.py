"""TableWrite: validates Arrow input, routes rows to (partition, bucket) writers, hands out CommitMessages.

Routing is vectorized: partitions by dictionary-encoding the partition columns (each distinct
partition is encoded to a BinaryRow once), buckets by Paimon's hash of the bucket key
(:mod:`impl.bucket.routing`), then one stable sort by (partition, bucket) and zero-copy slices.

Append tables get a :class:`RollingFileWriter` per (partition, bucket); bucket-unaware
tables (``bucket`` = -1) write to bucket 0 with total buckets -1. Primary-key tables get an
``impl.mergetree.MergeTreeWriter`` per (partition, bucket), restored from the files that
bucket holds in the latest snapshot; postpone-mode tables (``bucket`` = -2) write every row, unmerged, to
bucket -2 (:mod:`impl.write.postpone`). Dynamic-bucket primary-key tables (``bucket`` = -1) route
by :class:`impl.write.dynamic_bucket.DynamicBucketAssigner` (each key keeps the bucket of the
table's HASH index), and their commit messages carry the changed buckets' new index files.
Cross-partition upsert tables (a primary key without some partition key, ``bucket`` = -1) route
by the global key index of :class:`impl.write.cross_partition.CrossPartitionAssigner`, which adds
the DELETEs of keys moving partition.

Input is checked completely before any row is routed, so a rejected ``write_arrow`` leaves
the writer (and storage) exactly as it was.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Mapping, Protocol, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.bucket.routing import (
    POSTPONE_BUCKET,
    BucketMode,
    compute_buckets,
    encode_partition,
    group_rows,
    row_hashes,
    split_by_group,
)
from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta, FileSource
from impl.errors import NullKeyError, SchemaMismatchError, UnsupportedTableFeatureError, WriterClosedError
from impl.options.registry import check_write
from impl.options.values import MAX_DYNAMIC_BUCKETS, ChangelogProducer, MergeEngine
from impl.read.pandas_io import pandas_columns, pandas_to_arrow
from impl.read.primary_key import PrimaryKeyBucketWriter, check_merge_input
from impl.read.scan import SnapshotReader
from impl.store.core import TableCore, bucket_index_files
from impl.store.options import TableOptions
from impl.store.schema import mergetree
from impl.write.append_writer import RollingFileWriter
from impl.write.cross_partition import CrossPartitionAssigner, check_supported
from impl.write.dynamic_bucket import DynamicBucketAssigner
from impl.write.postpone import PostponeBucketWriter

ROW_KIND_NAMES = ("+I", "-U", "+U", "-D")
_ROW_BATCH = 4096  # write_row's rows become one Arrow table every this many rows
_KIND_COL = "__paimon_row_kind__"


# ============================================================================ input checks


def as_arrow_table(data) -> pa.Table:
    """``data`` (Arrow table / batch / reader, or anything with ``to_arrow``) as an Arrow table."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if hasattr(data, "to_arrow") and not isinstance(data, (list, dict)):
        return as_arrow_table(data.to_arrow())
    raise SchemaMismatchError(f"write_arrow expects a pyarrow Table or RecordBatch, got {type(data).__name__}")


def _compatible(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Types that hold the same values (string views, large offsets, dictionary, nested nullability)."""
    if actual.equals(expected):
        return True
    if pa.types.is_dictionary(actual):
        return _compatible(actual.value_type, expected)
    if pa.types.is_null(actual):
        return True
    strings = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    binaries = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view)
    if any(f(actual) for f in strings) and any(f(expected) for f in strings):
        return True
    if any(f(actual) for f in binaries) and any(f(expected) for f in binaries):
        return True
    nested = (pa.types.is_list, pa.types.is_large_list, pa.types.is_map, pa.types.is_struct)
    if any(f(actual) for f in nested) and any(f(expected) for f in nested):
        try:
            pa.array([], type=actual).cast(expected)
            return True
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return False
    return False


def is_dataframe(data) -> bool:
    """Whether ``data`` is a pandas DataFrame (without importing pandas: if it is not imported, no
    DataFrame exists)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(data, pd.DataFrame)


def _check_column_names(names: list[str], expected: pa.Schema, table: str) -> None:
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise SchemaMismatchError(f"write to {table}: columns {dups} appear more than once")
    missing = [n for n in expected.names if n not in names]
    extra = [n for n in names if n not in expected.names]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unknown columns {extra}")
        raise SchemaMismatchError(f"write to {table}: {'; '.join(parts)} (table columns: {expected.names})")


def conform_input(data, core: TableCore, columns: Sequence[str] | None = None) -> pa.Table:
    """The input as a table in schema column order and types; SchemaMismatchError names what is wrong.

    ``columns`` (:meth:`TableWrite.with_write_type`): the input holds just these columns; the
    table's others are written as nulls."""
    name = core.identifier
    full = core.arrow_schema
    expected = full if columns is None else pa.schema([full.field(c) for c in columns])
    if is_dataframe(data):
        # cast column by column to the table's types, safely (impl.read.pandas_io)
        _check_column_names(pandas_columns(data), expected, name)
        t = pandas_to_arrow(data, expected, core.schema, name)
    else:
        t = as_arrow_table(data)
        _check_column_names(t.column_names, expected, name)
    cols = []
    for f in full:
        if columns is not None and f.name not in columns:
            col = pa.chunked_array([pa.nulls(t.num_rows, f.type)])
        else:
            col = t.column(f.name)
        if not col.type.equals(f.type):
            if not _compatible(col.type, f.type):
                ptype = core.schema.field(f.name).type
                raise SchemaMismatchError(
                    f"write to {name}: column {f.name!r} has type {col.type}, the table expects {f.type} ({ptype})")
            col = col.cast(f.type)
        if not f.nullable and col.null_count:
            role = ("primary-key" if f.name in core.schema.primary_keys else
                    "partition" if f.name in core.schema.partition_keys else "NOT NULL")
            raise NullKeyError(f"write to {name}: {role} column {f.name!r} holds {col.null_count} null value(s)")
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=full)


def rows_to_arrow(rows: Sequence[Mapping[str, Any]], schema: pa.Schema, table: str) -> pa.Table:
    """Rows given one by one (:meth:`TableWrite.write_row`) as one table of ``schema``, a column
    at a time; SchemaMismatchError names the column whose values do not convert."""
    arrays = []
    for f in schema:
        try:
            arrays.append(pa.array([r[f.name] for r in rows], type=f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
            raise SchemaMismatchError(f"write_row to {table}: column {f.name!r} ({f.type}): {e}") from e
    return pa.Table.from_arrays(arrays, schema=schema)


def row_kinds_of(t: pa.Table, row_kinds, core: TableCore) -> np.ndarray | None:
    """Row kinds as int8 (0 +I, 1 -U, 2 +U, 3 -D) from ``row_kinds=`` or the ``rowkind.field`` column."""
    n = t.num_rows
    if row_kinds is not None:
        arr = row_kinds
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if isinstance(arr, pa.Array):
            if arr.null_count:
                raise SchemaMismatchError(f"write to {core.identifier}: row_kinds holds nulls")
            if not pa.types.is_integer(arr.type):
                raise SchemaMismatchError(f"write to {core.identifier}: row_kinds must be integers, got {arr.type}")
            arr = arr.to_numpy(zero_copy_only=False)
        kinds = np.asarray(arr)
        if kinds.ndim != 1 or len(kinds) != n:
            raise SchemaMismatchError(
                f"write to {core.identifier}: row_kinds has {kinds.size} values for {n} rows")
        if not np.issubdtype(kinds.dtype, np.integer):
            raise SchemaMismatchError(f"write to {core.identifier}: row_kinds must be integers, got {kinds.dtype}")
        if n and (kinds.min() < 0 or kinds.max() > 3):
            bad = int(kinds[(kinds < 0) | (kinds > 3)][0])
            raise SchemaMismatchError(f"write to {core.identifier}: row kind {bad} is not one of 0..3")
        return kinds.astype(np.int8)
    field = core.options.rowkind_field
    if field is None or not core.is_primary_key_table:
        return None
    col = t.column(field)
    idx = pc.index_in(col, value_set=pa.array(ROW_KIND_NAMES))
    if idx.null_count:
        bad_mask = pc.is_null(idx)
        bad = pc.filter(col, bad_mask)
        raise SchemaMismatchError(
            f"write to {core.identifier}: column {field!r} (rowkind.field) holds {bad[0].as_py()!r}; "
            f"expected one of {list(ROW_KIND_NAMES)}")
    return idx.to_numpy(zero_copy_only=False).astype(np.int8)


# ============================================================================ writers per bucket


# the most threads a write-only commit flushes its buckets on (see TableWrite._flush_threads)
MAX_FLUSH_THREADS = 4


class BucketWriter(Protocol):
    """The writer of one (partition, bucket): rolling append files, or a merge tree."""

    def write(self, data: pa.Table, kinds: np.ndarray | None) -> None: ...

    def flush_for_commit(self) -> None:
        """Flush and start compacting without waiting (before a waiting ``prepare_commit``)."""

    def run_queued_compaction(self) -> None:
        """Run the compaction still queued for a compaction thread on the calling thread."""

    def prepare_commit(self, wait_compaction: bool) -> CommitMessage: ...

    def close(self) -> None: ...


class _AppendBucketWriter:
    def __init__(self, core: TableCore, partition: bytes, partition_path: str, bucket: int):
        self.partition = partition
        self.bucket = bucket
        self.total_buckets = core.options.bucket  # -1 for bucket-unaware tables
        self.writer = RollingFileWriter(
            core.file_io, core.paths.bucket_dir(partition_path, bucket), core.arrow_schema,
            core.schema.fields, schema_id=core.schema.id,
            target_file_size=core.options.target_file_size_for(False),
            formats=core.options.write_formats, stats_mode=core.options.stats_mode, file_source=FileSource.APPEND,
            name_factory=core.paths.layout.namer(core.env.new_id).data_file, clock_millis=core.env.clock_millis,
            file_index=core.options.file_index)

    def write(self, data: pa.Table, kinds: np.ndarray | None) -> None:
        self.writer.write(data)

    def flush_for_commit(self) -> None:
        pass  # append files are written as rows come; nothing compacts in the write

    def run_queued_compaction(self) -> None:
        pass

    def prepare_commit(self, wait_compaction: bool) -> CommitMessage:
        files = self.writer.prepare_commit()
        return CommitMessage(self.partition, self.bucket, self.total_buckets, new_files=tuple(files))

    def close(self) -> None:
        self.writer.abort()


class TableWrite:
    """Writes rows of one table; ``prepare_commit`` returns the CommitMessages for a TableCommit.

    Batch writes (``new_batch_write_builder().new_write()``) prepare once; stream writes
    (``new_stream_write_builder().new_write()``) may prepare many times, keeping their
    per-bucket writers (and primary-key LSM state) across commits.
    """

    def __init__(self, core: TableCore, commit_user: str, *, streaming: bool = False,
                 ignore_previous_files: bool = False, compaction_executor: Executor | None = None,
                 spill_directory: str | None = None):
        """``compaction_executor`` runs the merge tree's compactions (default: a thread pool
        owned by this write); :class:`impl.mergetree.writer.InlineExecutor` runs each on the
        calling thread, a synchronous mode for deterministic runs. ``spill_directory``: the
        local directory primary-key writers spill sorted runs under (``write-buffer-spillable``;
        default: the system temp directory)."""
        # refused before anything is written: an option impl does not implement that changes what
        # or where a write puts data (or what its merges read)
        check_write(core.options.raw, core.identifier)
        if core.bucket_mode is BucketMode.CROSS_PARTITION:
            check_supported(core, overwrite=ignore_previous_files)
        self.core = core
        self.commit_user = commit_user
        self.streaming = streaming
        # an overwrite replaces the files of the buckets it writes: do not restore them
        self.ignore_previous_files = ignore_previous_files
        self._writers: dict[tuple[bytes, int], BucketWriter] = {}
        self._partition_paths: dict[bytes, str] = {}
        # (snapshot id, live files per (partition, bucket)) for restoring new merge-tree writers
        self._restored: tuple[int | None, dict[tuple[bytes, int], list[DataFileMeta]]] | None = None
        # index files per (partition, bucket) of the same snapshot (deletion vectors)
        self._restored_index: dict[tuple[bytes, int], list] = {}
        self._restored_checked = False
        self._executor: ThreadPoolExecutor | None = None
        self._given_executor = compaction_executor
        self._buffer_pool: Any = None  # impl.mergetree.writer.WriteBufferPool, made on first use
        self._spill_directory = spill_directory
        self._closed = False
        self._prepared = False
        self._write_cols: list[str] | None = None  # with_write_type
        self._rows: list[dict[str, Any]] = []  # write_row's, not yet written
        self._bucket_key = list(core.bucket_keys)
        self._bucket_types = [core.schema.field(k).type for k in self._bucket_key]
        self._partition_types = [core.schema.field(k).type for k in core.schema.partition_keys]
        # dynamic bucket mode: keys keep the bucket the table's HASH index gives them
        self._assigner: DynamicBucketAssigner | None = None
        # postpone mode: one write id for this write's files (Paimon: a random int per writer)
        self._postpone_write_id = core.env.new_random().randrange(2**31 - 1)
        if core.bucket_mode is BucketMode.HASH_DYNAMIC:
            self._assigner = DynamicBucketAssigner(core, ignore_existing=ignore_previous_files,
                                                  rng=core.env.new_random())
        # cross-partition mode: a global key index (impl.write.cross_partition)
        self._cross: CrossPartitionAssigner | None = None
        if core.bucket_mode is BucketMode.CROSS_PARTITION:
            self._cross = CrossPartitionAssigner(core, rng=core.env.new_random())

    # ------------------------------------------------------------------ writing

    def with_write_type(self, write_cols: Sequence[str]) -> "TableWrite":
        """Write only ``write_cols`` (pypaimon's ``with_write_type``): the input of later writes
        holds just these columns, in this order, and the table's other columns are written as
        nulls. Append tables and ``partial-update`` primary-key tables (where a null leaves the
        stored value alone); any other merge engine would overwrite the unwritten columns with
        nulls, which is refused with :class:`UnsupportedTableFeatureError`."""
        self._check_open()
        names = list(write_cols)
        table_names = self.core.schema.field_names
        unknown = [c for c in names if c not in table_names]
        if unknown or len(set(names)) != len(names):
            raise SchemaMismatchError(f"with_write_type on {self.core.identifier}: {names} name unknown columns "
                                      f"{unknown} or a column twice (table columns: {table_names})")
        engine = self.core.options.merge_engine
        if self.core.is_primary_key_table and engine is not MergeEngine.PARTIAL_UPDATE and set(names) != set(table_names):
            raise UnsupportedTableFeatureError(
                f"with_write_type on {self.core.identifier}: a primary-key table with merge-engine {engine.value!r} "
                "would overwrite the unwritten columns with nulls (merge-engine 'partial-update' keeps them)")
        self._flush_rows()
        self._write_cols = None if names == table_names else names
        return self

    def write_row(self, row: Any) -> None:
        """Write one row (pypaimon's ``write_row``): a tuple or list of values in column order
        (the :meth:`with_write_type` columns when set), a dict by column name, or a row with
        ``fields`` and ``get_field`` (pypaimon's ``GenericRow``). Rows are buffered and written
        together, as one Arrow table, by the next ``write_arrow`` or ``prepare_commit``."""
        self._check_open()
        names = self._write_cols or self.core.schema.field_names
        if isinstance(row, Mapping):
            values = dict(row)
        elif getattr(row, "fields", None) is not None and hasattr(row, "get_field"):
            values = {f.name: row.get_field(i) for i, f in enumerate(row.fields)}
        elif isinstance(row, (tuple, list)):
            if len(row) != len(names):
                raise SchemaMismatchError(f"write_row to {self.core.identifier}: {len(row)} values for the "
                                          f"{len(names)} columns {names}")
            values = dict(zip(names, row, strict=True))
        else:
            raise SchemaMismatchError(f"write_row to {self.core.identifier} takes a tuple, list, dict or row, "
                                      f"got {type(row).__name__}")
        _check_column_names(list(values), pa.schema([self.core.arrow_schema.field(n) for n in names
                                                     if n in self.core.arrow_schema.names]), self.core.identifier)
        self._rows.append(values)
        if len(self._rows) >= _ROW_BATCH:
            self._flush_rows()

    def _flush_rows(self) -> None:
        if not self._rows:
            return
        rows, self._rows = self._rows, []
        names = self._write_cols or self.core.schema.field_names
        schema = pa.schema([self.core.arrow_schema.field(n) for n in names])
        self._write(rows_to_arrow(rows, schema, self.core.identifier), None)

    def write_arrow(self, data: pa.Table | pa.RecordBatch, row_kinds=None) -> None:
        """Write rows. ``row_kinds`` (int8 per row: 0 +I, 1 -U, 2 +U, 3 -D) is for primary-key
        tables; without it, the ``rowkind.field`` column (if configured) gives each row's kind."""
        self._check_open()
        self._flush_rows()  # rows given by write_row before come first
        self._write(data, row_kinds)

    def _write(self, data, row_kinds) -> None:
        t = conform_input(data, self.core, self._write_cols)
        kinds = row_kinds_of(t, row_kinds, self.core)
        if not self.core.is_primary_key_table and kinds is not None and np.any(kinds != 0):
            raise SchemaMismatchError(
                f"write to {self.core.identifier}: append tables take only +I rows (row kind 0)")
        if t.num_rows == 0:
            return
        if self.core.is_primary_key_table:
            check_merge_input(self.core, t, kinds)
        self._restored_checked = False
        buckets = None
        if self._cross is not None:  # rows of keys moving partition come with their old rows' DELETEs
            t, kinds, buckets = self._cross.assign(t, kinds)
        for (partition, bucket), part, part_kinds in self._route(t, kinds, buckets):
            self._writer(partition, bucket).write(part, part_kinds)

    write_arrow_batch = write_arrow

    def write_pandas(self, df) -> None:
        """Write a pandas DataFrame, each column cast safely to the table's type (a wider integer
        that fits, float64 of integral values and NaN into an integer column, another timestamp
        unit, categoricals, ...; see :mod:`impl.read.pandas_io`); a lossy cast raises
        :class:`impl.errors.ColumnCastError` naming the column and both types."""
        if not is_dataframe(df):
            raise SchemaMismatchError(f"write_pandas to {self.core.identifier} takes a pandas DataFrame, "
                                      f"got {type(df).__name__}")
        self.write_arrow(df)

    def _route(self, t: pa.Table, kinds: np.ndarray | None, assigned: np.ndarray | None = None):
        """((partition, bucket), rows, their kinds) per bucket; ``assigned``: each row's bucket,
        given (cross-partition mode)."""
        n = t.num_rows
        schema = self.core.schema
        if schema.partition_keys:
            groups = group_rows([t.column(k) for k in schema.partition_keys])
            part_ids = groups.ids
            partitions = [self._partition_bytes(v) for v in groups.values]
        else:
            part_ids = np.zeros(n, dtype=np.int64)
            partitions = [self._partition_bytes(())]
        if assigned is not None:
            num_buckets = int(assigned.max()) + 1 if n else 1
            keys = part_ids * num_buckets + assigned
        elif self.core.bucket_mode is BucketMode.HASH_FIXED:
            num_buckets = self.core.options.bucket
            buckets = compute_buckets([t.column(k) for k in self._bucket_key], self._bucket_types, num_buckets,
                                      self.core.options.bucket_function)
            keys = part_ids * num_buckets + buckets
        elif self._assigner is not None:
            num_buckets = MAX_DYNAMIC_BUCKETS
            hashes = row_hashes([t.column(k) for k in self._bucket_key], self._bucket_types)
            buckets = np.empty(n, dtype=np.int64)
            for pid, rows in _rows_by_partition(part_ids, len(partitions)):
                buckets[rows] = self._assigner.assign(partitions[pid], hashes[rows])
            keys = part_ids * num_buckets + buckets
        elif self.core.bucket_mode is BucketMode.POSTPONE:  # every row to bucket -2 (ids stay >= 0 here)
            num_buckets = 1
            keys = part_ids
        else:  # bucket-unaware: everything in bucket 0
            num_buckets = 1
            keys = part_ids
        if kinds is not None:
            t = t.append_column(_KIND_COL, pa.array(kinds, type=pa.int8()))
        for key, part in split_by_group(t, keys):
            pid, bucket = divmod(key, num_buckets)
            if self.core.bucket_mode is BucketMode.POSTPONE:
                bucket = POSTPONE_BUCKET
            part_kinds = None
            if kinds is not None:
                part_kinds = part.column(_KIND_COL).to_numpy()
                part = part.drop_columns([_KIND_COL])
            yield (partitions[pid], int(bucket)), part, part_kinds

    def _partition_bytes(self, values: tuple) -> bytes:
        b = encode_partition(values, self._partition_types)
        if b not in self._partition_paths:
            self._partition_paths[b] = self.core.partition_cache.path(b)
        return b

    def _writer(self, partition: bytes, bucket: int) -> BucketWriter:
        key = (partition, bucket)
        w = self._writers.get(key)
        if w is None:
            path = self._partition_paths[partition]
            if bucket == POSTPONE_BUCKET:
                w = PostponeBucketWriter(self.core, partition, path, self.commit_user, self._postpone_write_id)
            elif self.core.is_primary_key_table:
                w = PrimaryKeyBucketWriter(self.core, partition, path, bucket, self._restored_files(key),
                                           self._compaction_executor(), buffer_pool=self._write_buffer_pool(),
                                           restored_index=self._restored_index.get(key, ()))
            else:
                w = _AppendBucketWriter(self.core, partition, path, bucket)
            self._writers[key] = w
        return w

    def _restored_files(self, key: tuple[bytes, int]) -> list[DataFileMeta]:
        """Live files of a (partition, bucket) in the latest snapshot, for a new merge-tree writer.

        The live-file index is read once per ``write_arrow`` call that creates writers, and
        re-read only when a newer snapshot exists, so a writer created later in a stream job
        starts from what other jobs committed meanwhile.
        """
        if self.ignore_previous_files:
            return []
        if not self._restored_checked:
            self._restored_checked = True
            latest = self.core.snapshot_manager.latest_snapshot()
            latest_id = latest.id if latest is not None else None
            if self._restored is None or self._restored[0] != latest_id:
                index: dict[tuple[bytes, int], list[DataFileMeta]] = {}
                for e in SnapshotReader(self.core).live_entries(latest):
                    index.setdefault((e.partition, e.bucket), []).append(e.file)
                self._restored = (latest_id, index)
                if self.core.options.deletion_vectors:
                    self._restored_index = bucket_index_files(self.core, latest)
        _, live = self._restored if self._restored is not None else (None, {})
        return list(live.get(key, ()))

    def _write_buffer_pool(self):
        # One write-buffer-size for all merge-tree writers of this write, as Paimon's shared
        # memory pool: memory stays bounded however many buckets and partitions are written.
        if self._buffer_pool is None:
            mt = mergetree()
            options = self.core.merge_tree_options
            # Paimon's default: spill in batch writes and on object stores
            spillable = options.write_buffer_spillable
            if spillable is None:
                spillable = not self.streaming or self.core.file_io.is_object_store
            spill = mt.spill_config(options, self._spill_directory) if spillable else None
            self._buffer_pool = mt.WriteBufferPool(options.write_buffer_size, spill)
        return self._buffer_pool

    def _compaction_executor(self) -> Executor:
        if self._given_executor is not None:
            return self._given_executor
        if self._executor is None:
            # One compaction at a time per write, as Paimon (AbstractFileStoreWrite.compactExecutor
            # is a single-thread executor): each running compaction holds its own merge, so more
            # threads made the write's memory grow with the cores (measured, 20M rows with a 64 MB
            # buffer and no spilling: 472 MB with two, 421 MB with one).
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paimon-compact")
        return self._executor

    # ------------------------------------------------------------------ committing

    def prepare_commit(self, commit_identifier: int | None = None) -> list[CommitMessage]:
        """Flush every writer and return one CommitMessage per (partition, bucket) that changed."""
        self._check_open()
        if not self.streaming:
            if self._prepared:
                raise WriterClosedError(f"batch write of {self.core.identifier} already prepared its commit")
            self._prepared = True
        self._flush_rows()
        messages = []
        wait = not self.streaming or prepare_commit_waits_for_compaction(self.core.options)
        if self._buffer_pool is not None:
            # free every buffer before the first writer merges its spilled runs (see spill_all)
            self._buffer_pool.spill_all()
        threads = self._flush_threads()
        if wait or threads > 1:
            # Flush every bucket (starting its compaction) before waiting for any: the buckets'
            # compactions then run while later buckets flush, not one bucket after the other.
            self._flush_for_commit(threads)
        if wait and self._given_executor is None:
            # The compaction thread runs the buckets' compactions one after the other while this
            # thread would wait for them: it takes the ones not started yet. The buffers are
            # flushed by now, so a second compaction runs only when their memory is free.
            for w in self._writers.values():
                w.run_queued_compaction()
        for w in self._writers.values():
            m = w.prepare_commit(wait)
            if not m.is_empty():
                messages.append(m)
        if self._assigner is not None:
            messages = self._assigner.attach(messages)
        if self._cross is not None:
            built_from = self._cross.checked_view(self.commit_user)
            messages = [replace(m, key_index_from=built_from) for m in messages]
        return messages

    def _flush_threads(self) -> int:
        """Threads the commit's flushes run on: one per core (at most MAX_FLUSH_THREADS) for a
        ``write-only`` primary-key write, whose cores nothing else uses (sorting, encoding and
        compressing release the GIL; 1M rows, 25k-row flushes: 628 -> 607 ms, session 40; with
        7.5k-row flushes their Python steps take turns and it gains nothing). One otherwise: with
        compaction on, the compactions use the other cores and each flush's sorted piece stays
        the only one held; with a given executor (the inline one is the deterministic mode);
        or while a writer holds spilled runs (their merges hold memory of their own)."""
        writers = self._writers.values()
        if (len(writers) < 2 or self._given_executor is not None or not self.core.primary_keys
                or not self.core.merge_tree_options.write_only
                or (self._buffer_pool is not None and self._buffer_pool.any_spilled())):
            return 1
        return min(len(writers), os.cpu_count() or 1, MAX_FLUSH_THREADS)

    def _flush_for_commit(self, threads: int) -> None:
        writers = list(self._writers.values())
        if threads <= 1:
            for w in writers:
                w.flush_for_commit()
            return
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paimon-flush") as pool:
            futures = [pool.submit(w.flush_for_commit) for w in writers]
        errors = [e for f in futures if (e := f.exception()) is not None]
        if errors:
            raise errors[0]

    def close(self) -> None:
        """Release writers; rows not yet prepared are dropped and their files deleted."""
        if self._closed:
            return
        self._closed = True
        self._rows = []
        errors = []
        for w in self._writers.values():
            try:
                w.close()
            except Exception as e:  # noqa: BLE001 - close every writer, report the first failure
                errors.append(e)
        self._writers.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if errors:
            raise errors[0]

    def _check_open(self) -> None:
        if self._closed:
            raise WriterClosedError(f"write of {self.core.identifier} is closed")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def prepare_commit_waits_for_compaction(options: "TableOptions") -> bool:
    """Whether a streaming ``prepare_commit`` waits for the running compaction.

    Tables whose writer forces level 0 up (deletion vectors, ``changelog-producer = lookup``)
    are read by batch scans without level 0, so a commit that left its rows on level 0 would
    publish rows no batch read sees until a later commit. Paimon waits there
    (``CoreOptions.prepareCommitWaitCompaction``: needLookup and ``lookup-wait``, default true);
    so does this library, unless ``lookup-wait`` is false. needLookup also covers first-row
    tables (whose level 0 Paimon forces up as well), so they wait the same way.
    """
    needs_lookup = options.deletion_vectors or options.changelog_producer is ChangelogProducer.LOOKUP \
        or options.merge_engine is MergeEngine.FIRST_ROW
    return needs_lookup and options.raw.get("lookup-wait", "true").strip().lower() != "false"


def _rows_by_partition(part_ids: np.ndarray, n_partitions: int):
    """(partition id, row positions in input order) for each partition present."""
    if n_partitions == 1:
        yield 0, np.arange(len(part_ids))
        return
    order = np.argsort(part_ids, kind="stable")
    cuts = np.flatnonzero(np.diff(part_ids[order])) + 1
    for rows in np.split(order, cuts):
        yield int(part_ids[rows[0]]), rows


__all__ = ["TableWrite", "conform_input", "row_kinds_of", "ROW_KIND_NAMES"]

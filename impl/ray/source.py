"""Reads: a Ray Data datasource over one table (see :mod:`impl.ray`).

Planning (on the driver, once): the read builder's scan with the filter, cut into independently
readable units (a primary-key bucket whole, an append file alone) and packed into read tasks of
similar size, as the Spark reader does (:func:`impl.jobs.units.read_units`,
:func:`impl.jobs.units.pack_units`). Reading (in Ray tasks): each task opens the table from its
:class:`impl.jobs.tables.TableRef` and reads its splits with impl's split reader. Errors in the
arguments (a missing table, an unknown column, a malformed filter) are raised by the planning,
before any task starts.
"""

from __future__ import annotations

import functools
from typing import Any, Iterator, Mapping, Sequence

import pyarrow as pa
import ray
import ray.data
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from impl.jobs.tables import TableRef
from impl.jobs.units import DEFAULT_TARGET_BYTES, pack_units, partition_count, read_units
from impl.predicate.predicate import Predicate
from impl.ray.errors import RayConnectorError


def table_ref(table_or_path: Any, storage_options: Mapping[str, str] | None = None) -> TableRef:
    """A handle every Ray worker can open: from a table directory path, or from an open
    :class:`impl.FileStoreTable` or its ``TableCore`` (its path and dynamic options) on a store
    workers can reach."""
    if isinstance(table_or_path, str):
        return TableRef.from_path(table_or_path, storage_options=storage_options)
    path = getattr(table_or_path, "path", None)
    file_io = getattr(table_or_path, "file_io", None)
    if not isinstance(path, str) or file_io is None:
        raise RayConnectorError(f"expected a table path or an impl FileStoreTable, got {type(table_or_path).__name__}")
    protocol = file_io.fs.protocol
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    if "://" not in path and not {"file", "local"} & set(protocols):
        raise RayConnectorError(
            f"table {table_or_path.identifier} lives on a {protocols[0]!r} file system that Ray worker processes "
            f"cannot open; give a table on local disk or an object store (s3://...)")
    return TableRef.from_path(path, dynamic_options=dict(getattr(table_or_path, "core", table_or_path).dynamic_options),
                              storage_options=storage_options)


def _read_splits(ref: TableRef, predicate: Predicate | None, columns: list[str] | None, limit: int | None,
                 splits: list) -> Iterator[pa.Table]:
    """The body of one read task: ``splits`` of the table, merged, filtered and projected."""
    table = ref.table()
    rb = table.new_read_builder().with_filter(predicate).with_projection(columns).with_limit(limit)
    reader = rb.new_read().to_arrow_batch_reader(splits)
    empty = True
    # impl's reader yields a file's (or a merged chunk's) rows at a time: blocks of useful size
    for batch in reader:
        if batch.num_rows:
            empty = False
            yield pa.Table.from_batches([batch])
    if empty:
        yield reader.schema.empty_table()


class PaimonDatasource(Datasource):
    """A Ray Data datasource over one table; planned at construction (on the driver).

    ``filter``: an impl :class:`~impl.predicate.predicate.Predicate` (prunes partitions, buckets and
    files, and filters rows); ``columns``: the projection; ``limit``: at most this many rows per
    read task (``read_table`` also limits the dataset). ``storage_options``: how workers reach
    an object store (``fs.s3.endpoint``, ...), never stored in the table.
    """

    def __init__(self, table_or_path: Any, *, filter: Predicate | None = None,  # noqa: A002 - pypaimon's name
                 columns: Sequence[str] | None = None, limit: int | None = None,
                 storage_options: Mapping[str, str] | None = None, splits: Sequence | None = None,
                 target_bytes: int = DEFAULT_TARGET_BYTES, parallelism: int = -1):
        self.ref = table_ref(table_or_path, storage_options)
        table = self.ref.table()  # TableNotExistError here, on the driver
        rb = (table.new_read_builder().with_filter(filter)
              .with_projection(list(columns) if columns is not None else None).with_limit(limit))
        self.schema = rb.read_type()  # InvalidPredicateError for an unknown column, before planning
        # ``splits``: planned elsewhere (pypaimon's TableRead.to_ray); otherwise planned here, once
        planned = list(splits) if splits is not None else rb.new_scan().plan().splits()
        self.predicate = filter
        self.columns = list(columns) if columns is not None else None
        self.limit = limit
        self.units = read_units(table, planned)
        self.target_bytes = target_bytes
        self.parallelism = parallelism  # read tasks asked for (-1: sized by the cluster and the data)

    @property
    def files_planned(self) -> int:
        """Data files the read tasks will open (after pruning)."""
        return sum(len(u.files) for u in self.units)

    def get_name(self) -> str:
        return f"Paimon({self.ref.identifier})"

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(u.file_size for u in self.units)

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context: Any = None) -> list[ReadTask]:
        """Bins of units of similar size, never more than the units planned: as many as asked
        for at construction; otherwise as many as the cluster has CPUs (more when the data
        exceeds ``target_bytes`` a task), at most Ray's ``parallelism``. One empty task for an
        empty plan."""
        del data_context  # Ray's settings: the plan was made at construction
        if self.parallelism > 0:
            count = max(1, min(len(self.units), self.parallelism))
        else:
            slots = int(ray.cluster_resources().get("CPU", 1)) if ray.is_initialized() else 1
            count = partition_count(self.units, slots, self.target_bytes)
            count = max(1, min(count, parallelism)) if parallelism > 0 else count
        bins = pack_units(self.units, count) if self.units else [[]]
        tasks = []
        for units in bins:
            meta = BlockMetadata(num_rows=None, size_bytes=sum(u.file_size for u in units), exec_stats=None,
                                 input_files=tuple(f.file_name for u in units for f in u.files))
            fn = functools.partial(_read_splits, self.ref, self.predicate, self.columns, self.limit, units)
            tasks.append(ReadTask(fn, meta, schema=self.schema, per_task_row_limit=per_task_row_limit))
        return tasks


def read_table(table_or_path: Any, *, filter: Predicate | None = None,  # noqa: A002 - pypaimon's name
               columns: Sequence[str] | None = None, limit: int | None = None, parallelism: int = -1,
               storage_options: Mapping[str, str] | None = None, ray_remote_args: dict | None = None,
               concurrency: int | None = None) -> ray.data.Dataset:
    """The rows of a table as a Ray Dataset, read in parallel Ray tasks (see :class:`PaimonDatasource`).

    ``parallelism``: the number of read tasks (-1: one per CPU of the cluster, more for large
    reads; never more than the units planned: a primary-key bucket, an append file). Raises impl's typed errors (``TableNotExistError``, ``InvalidPredicateError``
    for an unknown column) here, before any task starts."""
    source = PaimonDatasource(table_or_path, filter=filter, columns=columns, limit=limit,
                              storage_options=storage_options, parallelism=parallelism)
    ds = ray.data.read_datasource(source, override_num_blocks=parallelism if parallelism > 0 else None,
                                  ray_remote_args=ray_remote_args, concurrency=concurrency)
    return ds.limit(limit) if limit is not None else ds


def splits_to_ray(read: Any, splits: Sequence, *, ray_remote_args: dict | None = None,
                  concurrency: int | None = None, override_num_blocks: int | None = None) -> ray.data.Dataset:
    """pypaimon's ``TableRead.to_ray(splits)``: the rows of ``splits`` planned elsewhere, as
    read by ``read`` (an impl :class:`~impl.read.table_read.TableRead`: its filter, projection, limit)."""
    source = PaimonDatasource(read.table, filter=read.predicate, columns=read.projection,
                              limit=read.limit, splits=splits, parallelism=override_num_blocks or -1)
    ds = ray.data.read_datasource(source, override_num_blocks=override_num_blocks,
                                  ray_remote_args=ray_remote_args, concurrency=concurrency)
    return ds.limit(read.limit) if read.limit is not None else ds


__all__ = ["PaimonDatasource", "read_table", "splits_to_ray", "table_ref"]

"""Writes: a Ray Data datasink over one table (see :mod:`impl.ray`).

The write protocol is the engine-neutral job layer's (:mod:`impl.jobs.writer`), as the Spark connector's: each write task writes
its blocks with impl's table writer through a tracking file system that logs every file before
it is created (:mod:`impl.jobs.tracking`), and returns its CommitMessages; the driver commits
the messages of the tasks that finished, once, in ``on_write_complete`` and then deletes every
logged file no committed message names (the files of attempts that failed and were retried);
``on_write_failed`` removes every file of the write that no snapshot uses.

A task attempt is told apart from its retries by a fresh key, so a retried task's earlier files
are never committed: only returned messages are, and Ray returns one result per task.

:func:`write_dataset` routes rows first (:mod:`impl.ray.routing`): one writer task per
(partition, bucket), files of the table's target size, a primary-key table's keys each written by
one writer in the dataset's order. Through Ray's own ``ds.write_datasink(PaimonDatasink(...))``
the rows are not routed: Ray bundles blocks into write tasks of at least ``batch_rows`` rows
(:attr:`PaimonDatasink.min_rows_per_write`), and on primary-key tables two tasks may write one
bucket; the commit checks that no key was written by two tasks (:mod:`impl.jobs.keycheck`) and
refuses the write otherwise (``WriteRoutingError``), removing its files. Dynamic bucket
(-1) and postpone bucket (-2) primary-key tables are refused up front, as the Spark writer refuses
them (``UnsupportedTableFeatureError``).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import pyarrow as pa
import ray.data
from ray.data.block import BlockAccessor
from ray.data.datasource import Datasink, WriteResult

from impl.errors import UnsupportedTableFeatureError
from impl.jobs.writer import (
    CommitOutcome,
    TaskOutput,
    WriteJob,
    abort_write,
    commit_write,
    unsupported_write_reason,
    write_task,
)
from impl.ray.errors import RayConnectorError
from impl.ray.routing import write_routed
from impl.ray.source import table_ref
from impl.write.table_write import conform_input

log = logging.getLogger(__name__)

MODES = ("append", "overwrite")


@dataclass(frozen=True)
class RayWriteOutcome:
    """What a datasink committed: its snapshots and the leftovers of failed attempts it removed."""

    snapshot_ids: list[int]
    files_written: int
    rows_written: int
    leftovers_removed: int


class PaimonDatasink(Datasink[TaskOutput]):
    """``ds.write_datasink(PaimonDatasink(table_or_path))``: tasks write data files, the driver
    commits once. One instance is one write (its id and commit user are fixed here, on the
    driver, and shipped to the tasks); after it, :attr:`outcome` says what was committed.

    ``mode``: ``append`` or ``overwrite`` (an OVERWRITE snapshot: on partitioned tables of the
    partitions receiving rows, unless ``dynamic-partition-overwrite`` is false).
    """

    def __init__(self, table_or_path: Any, mode: str = "append", *,
                 storage_options: Mapping[str, str] | None = None):
        if mode not in MODES:
            raise RayConnectorError(f"write mode {mode!r} is not one of {list(MODES)}")
        ref = table_ref(table_or_path, storage_options)
        table = ref.table()  # TableNotExistError here, on the driver
        refused = unsupported_write_reason(table, "Ray")
        if refused:
            raise UnsupportedTableFeatureError(refused)
        column_map = tuple((f.name, f.name) for f in table.schema.fields)
        latest = table.snapshot_manager().latest_snapshot_id() or 0
        write_id = uuid.uuid4().hex
        self.job = WriteJob(ref, write_id, f"ray-{write_id}", latest, column_map)
        self.mode = mode
        self.outcome: RayWriteOutcome | None = None
        self._started = False

    def get_name(self) -> str:
        return f"Paimon({self.job.ref.identifier})"

    def check_schema(self, schema: pa.Schema) -> None:
        """Raise impl's typed error (SchemaMismatchError naming the column) if rows of ``schema``
        cannot be written to the table."""
        conform_input(schema.empty_table(), self.job.ref.table().core)

    @property
    def min_rows_per_write(self) -> int:
        """Ray bundles blocks into write tasks of at least this many rows (a task per tiny block
        would write a file per block and bucket)."""
        return self.job.batch_rows

    def begin(self) -> None:
        """Mark this sink's one write as started (RayConnectorError if it already was)."""
        if self._started:
            raise RayConnectorError(f"this PaimonDatasink already wrote to {self.job.ref.identifier}; "
                                    f"create one per write")
        self._started = True

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        self.begin()
        if isinstance(schema, pa.Schema):
            self.check_schema(schema)

    def write(self, blocks: Iterable[Any], ctx: Any) -> TaskOutput:
        # A fresh key per attempt: a retried task's earlier files are logged apart and swept.
        key = f"ray-t{getattr(ctx, 'task_idx', 0)}-{uuid.uuid4().hex[:16]}"
        batches = (b for block in blocks for b in BlockAccessor.for_block(block).to_arrow().to_batches())
        return write_task(batches, self.job, key)

    def on_write_complete(self, write_result: WriteResult[TaskOutput]) -> None:
        self.commit([o for o in write_result.write_returns if o is not None])

    def commit(self, outputs: list[TaskOutput]) -> RayWriteOutcome:
        """Commit the finished tasks' ``outputs`` in one snapshot (then remove the files of
        failed attempts); sets and returns :attr:`outcome`."""
        done: CommitOutcome = commit_write(self.job, [o.messages for o in outputs],
                                           overwrite=self.mode == "overwrite",
                                           sketches=[o.sketches for o in outputs])
        self.outcome = RayWriteOutcome(done.snapshot_ids, sum(len(m.new_files) for m in done.messages),
                                       sum(f.row_count for m in done.messages for f in m.new_files),
                                       len(done.leftovers_removed))
        return self.outcome

    def on_write_failed(self, error: Exception) -> None:
        removed = abort_write(self.job)
        log.info("write %s to %s failed (%s): removed %d file(s)", self.job.write_id, self.job.ref.identifier,
                 error, len(removed))


def write_dataset(ds: ray.data.Dataset, table_or_path: Any, mode: str = "append", *,
                  storage_options: Mapping[str, str] | None = None, ray_remote_args: dict | None = None,
                  concurrency: int | None = None) -> RayWriteOutcome:
    """Write ``ds`` into an existing table in one snapshot, rows routed to one writer task per
    (partition, bucket) that writes files of the table's target size (:mod:`impl.ray.routing`);
    on primary-key tables of rows sharing a key the last in the dataset's order wins.

    ``concurrency``: writer tasks at most (default: the cluster's CPUs); ``ray_remote_args``:
    Ray options of the tasks. The dataset's schema is checked against the table's on the driver
    first: a missing table, an unknown or missing column or a type that cannot be cast raises
    impl's typed error before any write task starts."""
    sink = PaimonDatasink(table_or_path, mode, storage_options=storage_options)
    base = getattr(ds.schema(), "base_schema", None)
    if isinstance(base, pa.Schema):  # Arrow blocks (pandas blocks are checked as the tasks convert them)
        sink.check_schema(base)
    sink.begin()
    return sink.commit(write_routed(ds, sink.job, writers=concurrency, ray_remote_args=ray_remote_args))


__all__ = ["PaimonDatasink", "write_dataset", "RayWriteOutcome", "MODES"]

"""Batch writes: Spark tasks write data files through impl's table writers; the driver commits once.

Shared by ``df.write.format("paimon_py")`` (:class:`PaimonWriter`, a ``DataSourceArrowWriter``)
and :func:`impl.spark.write_dataframe`:

- :func:`write_batches` (in a task): Arrow batches -> ``TableWrite.write_arrow`` ->
  ``prepare_commit()`` -> CommitMessages, every file logged first in the write's intent
  (:mod:`impl.spark.tracking`);
- :func:`commit_write` (on the driver): one commit of all tasks' messages (APPEND or OVERWRITE
  snapshot, then COMPACT if writers compacted), then removal of leftovers of failed or retried
  attempts;
- :func:`abort_write` (on the driver): removes every file of the write that no snapshot uses.

Primary-key tables need one writer per bucket: two tasks writing one bucket would restore the
same sequence numbers and make the order of a key's versions ambiguous. The commit refuses such
a write (and removes its files); :func:`impl.spark.write_dataframe` routes rows so it never happens.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from impl.commit.messages import CommitMessage
from impl.errors import PaimonError
from impl.fs.file_io import FileIO
from impl.spark.tables import SparkConnectorError, TableRef
from impl.spark.tracking import WriteIntent, clean_after_failure

log = logging.getLogger(__name__)

ROW_KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


class WriteRoutingError(SparkConnectorError):
    """Two Spark tasks wrote the same bucket of a primary-key table."""


@dataclass(frozen=True)
class WriteJob:
    """Everything a task and the committer need to know about one write (picklable)."""

    ref: TableRef
    write_id: str
    commit_user: str
    since_snapshot_id: int
    column_map: tuple[tuple[str, str], ...]  # (table column, DataFrame column), table order
    row_kind_column: str | None = None
    batch_rows: int = 262_144
    drop_columns: tuple[str, ...] = field(default=())

    @staticmethod
    def new(ref: TableRef, column_map: Sequence[tuple[str, str]], *, since_snapshot_id: int,
            row_kind_column: str | None = None, drop_columns: Sequence[str] = ()) -> "WriteJob":
        write_id = uuid.uuid4().hex
        return WriteJob(ref, write_id, f"spark-{write_id}", since_snapshot_id, tuple(column_map),
                        row_kind_column, drop_columns=tuple(drop_columns))

    def intent(self, table=None, fs=None) -> WriteIntent:
        if table is not None:
            return WriteIntent.for_table(table, self.write_id)
        fs = fs if fs is not None else self.ref.filesystem()
        cat = self.ref.catalog(fs)
        return WriteIntent(FileIO(fs), cat.warehouse, self.ref.identifier, cat.table_path(self.ref.identifier),
                           self.write_id)


# ====================================================================== tasks


def task_key() -> str:
    """Unique per task attempt: partition, attempt number, task attempt id."""
    try:
        from pyspark import TaskContext

        tc = TaskContext.get()
    except ImportError:  # pragma: no cover
        tc = None
    if tc is None:
        return f"local-{uuid.uuid4().hex}"
    return f"p{tc.partitionId()}-a{tc.attemptNumber()}-t{tc.taskAttemptId()}"


def _row_kinds(col: pa.ChunkedArray) -> np.ndarray:
    if pa.types.is_integer(col.type):
        kinds = col.to_numpy(zero_copy_only=False)
    else:
        idx = pc.index_in(col.cast(pa.string()), value_set=pa.array(list(ROW_KINDS)))
        if idx.null_count:
            bad = pc.filter(col, pc.is_null(idx))[0].as_py()
            raise SparkConnectorError(f"row kind {bad!r} is not one of {list(ROW_KINDS)}")
        kinds = idx.to_numpy(zero_copy_only=False)
    return np.asarray(kinds, dtype=np.int8)


def _to_table_columns(batches: list[pa.RecordBatch], job: WriteJob) -> tuple[pa.Table, np.ndarray | None]:
    t = pa.Table.from_batches(batches)
    kinds = _row_kinds(t.column(job.row_kind_column)) if job.row_kind_column else None
    cols = [t.column(src) for _, src in job.column_map]
    names = [dst for dst, _ in job.column_map]
    return pa.Table.from_arrays(cols, names=names), kinds


def write_batches(batches: Iterable[pa.RecordBatch], job: WriteJob, key: str | None = None) -> list[CommitMessage]:
    """Write the rows of one task; return its CommitMessages (files logged in the intent first)."""
    key = key or task_key()
    base_fs = job.ref.filesystem()
    with job.intent(fs=base_fs).task_attempt(key, base_fs) as tracked:
        return _write_task(batches, job, job.ref.table(filesystem=tracked))


def _write_task(batches: Iterable[pa.RecordBatch], job: WriteJob, table) -> list[CommitMessage]:
    w = table.new_batch_write_builder().new_write()
    ok = False
    try:
        pending: list[pa.RecordBatch] = []
        rows = 0
        for b in batches:
            if b.num_rows == 0:
                continue
            pending.append(b)
            rows += b.num_rows
            if rows >= job.batch_rows:
                data, kinds = _to_table_columns(pending, job)
                w.write_arrow(data, row_kinds=kinds)
                pending, rows = [], 0
        if pending:
            data, kinds = _to_table_columns(pending, job)
            w.write_arrow(data, row_kinds=kinds)
        messages = w.prepare_commit()
        ok = True
        return messages
    finally:
        try:
            w.close()  # after prepare_commit this keeps the prepared files
        except Exception:  # noqa: BLE001
            if ok:
                raise


# ====================================================================== driver


def check_routing(table, per_task: Sequence[Sequence[CommitMessage]]) -> None:
    """Primary-key tables: no (partition, bucket) may come from two tasks."""
    if not table.is_primary_key_table:
        return
    owner: dict[tuple[bytes, int], int] = {}
    for i, msgs in enumerate(per_task):
        for m in msgs:
            if not (m.new_files or m.compact_after):
                continue
            k = (m.partition, m.bucket)
            if owner.setdefault(k, i) != i:
                part = table.partition_cache.as_dict(m.partition) if table.partition_keys else {}
                raise WriteRoutingError(
                    f"primary-key table {table.identifier}: bucket {m.bucket} of partition {part or '<none>'} "
                    f"was written by two Spark tasks, which would make the order of a key's versions "
                    f"ambiguous; write with impl.spark.write_dataframe(df, path) (it routes each bucket "
                    f"to one task) or repartition the DataFrame to one partition. Nothing was committed.")


@dataclass
class CommitOutcome:
    snapshot_ids: list[int]
    messages: list[CommitMessage]
    leftovers_removed: list[str]
    attempts: int = 0
    lost_races: int = 0


def commit_write(job: WriteJob, per_task: Sequence[Sequence[CommitMessage]], *, overwrite: bool = False,
                 overwrite_partition: dict | None = None, commit_identifier: int | None = None) -> CommitOutcome:
    """Commit all tasks' messages in one commit; then delete leftovers of other attempts.

    ``commit_identifier``: the snapshots' commit identifier (default Paimon's batch identifier);
    the streaming sink passes the micro-batch id.

    On any failure the write's files that no snapshot uses are removed (see
    :func:`impl.spark.tracking.clean_after_failure`) and the error is raised.
    """
    table = job.ref.table()
    messages = [m for msgs in per_task for m in msgs]
    try:
        check_routing(table, per_task)
        wb = table.new_batch_write_builder()
        wb.commit_user = job.commit_user
        if overwrite:
            wb.overwrite(overwrite_partition)
        c = wb.new_commit()
        try:
            stats = c.commit(messages, commit_identifier)
        finally:
            c.close()
    except BaseException:
        clean_after_failure(table, job.intent(table), job.commit_user, job.since_snapshot_id)
        raise
    keep = {f.file_name for m in messages for f in m.written_files()}
    removed = job.intent(table).delete_unreferenced(keep)
    if removed:
        log.info("write %s to %s: removed %d file(s) of failed or retried task attempts",
                 job.write_id, table.identifier, len(removed))
    return CommitOutcome(list(stats.snapshot_ids), messages, removed, stats.attempts, stats.lost_races)


def abort_write(job: WriteJob) -> list[str]:
    """Remove every file of the write that no snapshot of its commit user added."""
    try:
        table = job.ref.table()
    except PaimonError as e:
        log.warning("abort of write %s: cannot open %s: %s", job.write_id, job.ref.table_path, e)
        return []
    return clean_after_failure(table, job.intent(table), job.commit_user, job.since_snapshot_id)


# ====================================================================== DataSourceArrowWriter


class PaimonWriterCommitMessage(WriterCommitMessage):
    def __init__(self, task: str, messages: list[CommitMessage]):
        self.task = task
        self.messages = messages


class PaimonWriter(DataSourceArrowWriter):
    """``df.write.format("paimon_py")``: tasks write, the driver commits once (or aborts)."""

    def __init__(self, job: WriteJob, overwrite: bool):
        self.job = job
        self.overwrite = overwrite

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonWriterCommitMessage:
        key = task_key()
        return PaimonWriterCommitMessage(key, write_batches(iterator, self.job, key))

    def commit(self, messages: list) -> None:
        per_task = [m.messages for m in messages if m is not None]
        commit_write(self.job, per_task, overwrite=self.overwrite)

    def abort(self, messages: list) -> None:
        abort_write(self.job)


__all__ = ["WriteJob", "PaimonWriter", "PaimonWriterCommitMessage", "write_batches", "commit_write",
           "abort_write", "check_routing", "CommitOutcome", "WriteRoutingError", "task_key"]

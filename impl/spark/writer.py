"""Batch writes through ``df.write.format("paimon_py")``: :class:`PaimonWriter`, Spark's
``DataSourceArrowWriter`` over the engine-neutral write-job protocol of :mod:`impl.jobs.writer`
(tasks write data files, every file logged first; the driver commits once or aborts).

:func:`task_key` names a Spark task attempt (partition, attempt number, task attempt id) for the
write intent; :func:`impl.spark.write_dataframe` and the streaming sink use it too.
"""

from __future__ import annotations

import uuid
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from impl.commit.messages import CommitMessage
from impl.jobs.keycheck import Sketches
from impl.jobs.writer import WriteJob, abort_write, commit_write, write_task


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

# ====================================================================== DataSourceArrowWriter


class PaimonWriterCommitMessage(WriterCommitMessage):
    """One task's result as Spark carries it to the driver: its CommitMessages (Paimon's) and,
    beside them, the key sketches of the buckets it wrote (primary-key tables)."""

    def __init__(self, task: str, messages: list[CommitMessage], sketches: Sketches | None = None):
        self.task = task
        self.messages = messages
        self.sketches = sketches


class PaimonWriter(DataSourceArrowWriter):
    """``df.write.format("paimon_py")``: tasks write, the driver commits once (or aborts)."""

    def __init__(self, job: WriteJob, overwrite: bool):
        self.job = job
        self.overwrite = overwrite

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonWriterCommitMessage:
        key = task_key()
        out = write_task(iterator, self.job, key)
        return PaimonWriterCommitMessage(key, out.messages, out.sketches)

    def commit(self, messages: list) -> None:
        done = [m for m in messages if m is not None]
        commit_write(self.job, [m.messages for m in done], overwrite=self.overwrite,
                     sketches=[m.sketches for m in done])

    def abort(self, messages: list) -> None:
        abort_write(self.job)


__all__ = ["PaimonWriter", "PaimonWriterCommitMessage", "task_key"]

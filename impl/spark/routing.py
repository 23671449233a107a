"""``write_dataframe``: route rows to (partition, bucket), one task per bucket, then write and commit.

1. a vectorized scalar Arrow UDF over the bucket-key columns adds each row's Paimon bucket
   (impl's :func:`impl.bucket.routing.compute_buckets`: the BinaryRow hash of the bucket key, as
   Paimon computes it, so pypaimon and Paimon find the rows where they expect them);
2. ``repartition(n, <partition columns>, bucket)``: every (partition, bucket) lands in exactly
   one task (hash partitioning never splits a key; adaptive execution only coalesces);
3. a second ``mapInArrow`` writes each task's rows through impl's table writer and returns its
   CommitMessages; the driver collects them and commits once (or hands them to the caller
   with ``commit=False``, e.g. to commit under its own commit user and identifier).

Bucket-unaware append tables (``bucket`` = -1) skip the routing: any task may write any partition.
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import dataclass
from typing import Mapping, Sequence

import pyarrow as pa

from impl.commit.messages import CommitMessage
from impl.jobs.routing import bucket_function
from impl.jobs.tables import split_storage_options
from impl.jobs.tracking import clean_after_failure
from impl.jobs.writer import CommitOutcome, WriteJob, abort_write, commit_write, write_batches, written_summary
from impl.spark.errors import SparkConnectorError
from impl.spark.native_write import use_native, with_bucket_expression, write_native
from impl.spark.source import FORMAT_NAME, activate, prepare_write
from impl.spark.writer import task_key

log = logging.getLogger(__name__)

BUCKET_COLUMN = "__paimon_bucket"


def with_bucket_column(df, table, column_map: Sequence[tuple[str, str]]):
    """``df`` plus the bucket column (named :data:`BUCKET_COLUMN`).

    A scalar Arrow UDF over the bucket-key columns only: Spark ships just those columns to Python
    and keeps the rest of each row in the JVM, which halves the data crossing into Python compared
    with a ``mapInArrow`` over whole rows.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as st

    src = dict(column_map)
    keys = list(table.bucket_keys)
    types = [table.schema.field(k).type for k in keys]
    # pyspark's stubs only type arrow_udf calls that pass functionType, which at run time warns
    # "prefer type hints"; without it Spark defaults to a scalar Arrow UDF, which this is.
    udf = F.arrow_udf(bucket_function(types, table.options.bucket, table.options.bucket_function.value), st.IntegerType())  # type: ignore[call-overload]
    return df.withColumn(BUCKET_COLUMN, udf(*[F.col(src[k]) for k in keys]))


def _write_function(job: WriteJob):
    def write(batches):
        msgs = write_batches(batches, job, task_key())
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(msgs)], type=pa.binary())], names=["messages"])

    return write


@dataclass(repr=False)
class WriteResult:
    """What :func:`write_dataframe` did. With ``commit=False``, ``messages`` are to be committed
    by the caller, who then calls :meth:`finish`.

    Prints as one line (table, snapshots, tasks, files / rows / bytes written, leftovers removed);
    the CommitMessages themselves are in ``messages``."""

    job: WriteJob
    per_task: list[list[CommitMessage]]
    outcome: CommitOutcome | None = None
    tasks: int = 0

    def __repr__(self) -> str:
        if self.outcome is None:
            state = "not committed"
        else:
            state = (f"snapshots={self.outcome.snapshot_ids}, "
                     f"leftovers removed={len(self.outcome.leftovers_removed)}")
        return (f"WriteResult({self.job.ref.identifier}, {state}, tasks={self.tasks}, "
                f"{written_summary(self.messages)})")

    @property
    def messages(self) -> list[CommitMessage]:
        return [m for msgs in self.per_task for m in msgs]

    @property
    def snapshot_ids(self) -> list[int]:
        return list(self.outcome.snapshot_ids) if self.outcome else []

    def finish(self, committed: bool, commit_user: str | None = None) -> list[str]:
        """After the caller's own commit: remove leftovers of failed attempts (``committed``), or
        every file of the write that no snapshot of ``commit_user`` (the user the caller committed
        with; default this write's own) added since the write began. Returns the removed paths."""

        table = self.job.ref.table()
        if committed:
            keep = {n for m in self.messages for n in m.written_file_names()}
            return self.job.intent(table).delete_unreferenced(keep)
        return clean_after_failure(table, self.job.intent(table), commit_user or self.job.commit_user,
                                   self.job.since_snapshot_id)


def write_dataframe(df, table_path: str, mode: str = "append", *, options: Mapping[str, str] | None = None,
                    primary_keys: Sequence[str] | None = None, partition_keys: Sequence[str] | None = None,
                    num_tasks: int | None = None, row_kind_column: str | None = None, commit: bool = True,
                    fs_factory=None, writer: str = "auto") -> WriteResult:
    """Write ``df`` into the table at ``table_path`` with one task per (partition, bucket).

    ``mode``: ``append`` or ``overwrite`` (OVERWRITE snapshot; on partitioned tables only the
    partitions receiving rows, unless ``dynamic-partition-overwrite`` is false). A missing table
    is created from the DataFrame schema with ``primary_keys``, ``partition_keys`` and
    ``options`` (e.g. ``{"bucket": "4"}``); for an existing table ``options`` are dynamic
    options (e.g. ``{"write-only": "true"}``). Storage options among ``options`` (keys under
    ``fs.``, ``s3.``, ``s3a.``, e.g. ``fs.s3.endpoint``, ``fs.s3.accessKeyId``) say how every
    Spark process reaches an object store and are never stored in the table. ``row_kind_column``
    names a column of row kinds (+I/-U/+U/-D or 0..3) that is not stored. ``num_tasks``
    defaults to ``spark.sql.shuffle.partitions``. ``writer``: ``auto`` (Spark's own Parquet writer
    where the table allows it, :mod:`impl.spark.native_write`; else impl's writers in Python
    tasks), ``spark`` (refused by name where it cannot serve) or ``python``.
    """

    activate(df.sparkSession)
    if mode not in ("append", "overwrite"):
        raise SparkConnectorError(f"{FORMAT_NAME}: save mode {mode!r} is not supported; use 'append' or 'overwrite'")
    job = prepare_dataframe_write(df.schema, table_path, options=options, primary_keys=primary_keys,
                                  partition_keys=partition_keys, row_kind_column=row_kind_column,
                                  fs_factory=fs_factory)
    result = write_rows(df, job, num_tasks=num_tasks, writer=writer, row_kind_column=row_kind_column)
    return _finish(result, commit, mode)


def prepare_dataframe_write(schema, table_path: str, *, options: Mapping[str, str] | None = None,
                            primary_keys: Sequence[str] | None = None, partition_keys: Sequence[str] | None = None,
                            row_kind_column: str | None = None, fs_factory=None) -> WriteJob:
    """The WriteJob of a write of rows of Spark ``schema`` (arguments as :func:`write_dataframe`'s):
    the table created if missing, the schema checked, before any task starts."""
    connector: dict[str, str] = {}
    if primary_keys:
        connector["primary-key"] = ",".join(primary_keys)
    if partition_keys:
        connector["partition"] = ",".join(partition_keys)
    if row_kind_column:
        connector["row-kind-column"] = row_kind_column
    storage, table_options = split_storage_options(options)
    return prepare_write(table_path, schema, connector, table_options, drop_columns=(BUCKET_COLUMN,),
                         fs_factory=fs_factory, storage_options=storage)


def write_rows(df, job: WriteJob, *, num_tasks: int | None = None, writer: str = "auto",
               row_kind_column: str | None = None) -> WriteResult:
    """Write ``df``'s rows for ``job`` (prepared by :func:`impl.spark.options.prepare_write`),
    one task per (partition, bucket), through Spark's Parquet writer or impl's (``writer``, as
    :func:`write_dataframe`); nothing committed. On failure the job's files are removed."""
    table = job.ref.table()
    spark = df.sparkSession
    if use_native(job, table, writer, row_kind_column):
        bucketed = table.options.bucket > 0
        if bucketed:  # in the JVM where Spark expressions give Paimon's bucket exactly, else the UDF
            df = with_bucket_expression(df, table, job.column_map, BUCKET_COLUMN) or \
                with_bucket_column(df, table, job.column_map)
        try:
            per_task = [write_native(df, job, num_tasks, BUCKET_COLUMN if bucketed else None,
                                     row_kind_column=row_kind_column)]
        except BaseException:
            abort_write(job)
            raise
        return WriteResult(job, per_task, tasks=1)
    n = num_tasks or int(spark.conf.get("spark.sql.shuffle.partitions"))
    if table.options.bucket > 0:
        src = dict(job.column_map)
        routed = with_bucket_column(df, table, job.column_map)
        part_cols = [src[k] for k in table.partition_keys]
        routed = routed.repartition(n, *part_cols, BUCKET_COLUMN)
    else:
        routed = df
    try:
        out = routed.mapInArrow(_write_function(job), "messages binary").toArrow()
        per_task = [pickle.loads(v) for v in out.column("messages").to_pylist()]
    except BaseException:
        abort_write(job)
        raise
    return WriteResult(job, per_task, tasks=len(per_task))


def _finish(result: WriteResult, commit: bool, mode: str) -> WriteResult:
    if commit:
        result.outcome = commit_write(result.job, result.per_task, overwrite=(mode == "overwrite"))
    return result


__all__ = ["write_dataframe", "write_rows", "prepare_dataframe_write", "WriteResult", "with_bucket_column", "BUCKET_COLUMN"]

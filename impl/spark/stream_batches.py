"""``impl.spark.write_stream``: a streaming write whose micro-batches Spark's own writer writes.

The ``paimon_py`` sink (:mod:`impl.spark.stream_writer`) sees a micro-batch's rows only in
Python workers, so its files are always impl's. This drives ``df.writeStream.foreachBatch``
instead: each micro-batch is a DataFrame on the driver, written as
:func:`impl.spark.write_dataframe` writes (``writer="auto"``: Spark's Parquet writer for the
append tables it can write, :mod:`impl.spark.native_write`; rows routed one task per
(partition, bucket) to impl's writers otherwise, so primary-key streams need no
``repartition`` by the key) and committed by the sink's own rules, not a copy of them:

- commit user ``spark-stream-<query id>`` (Spark's query id, from the checkpoint; after
  ``<commit.user-prefix>_``), commit identifier = the micro-batch id;
- a micro-batch that a snapshot of the query's user already published (the query stopped or
  died after the commit, before Spark recorded the batch as done) is not written again: the
  run only settles what earlier runs of the batch left (:func:`stream_writer.settle_runs`);
- each run of a micro-batch logs its files in a write intent named by
  :class:`stream_writer.BatchRun` (checkpoint, query, batch, snapshot, run): a run that died
  leaves files the next commit or abort of the batch removes; a failed batch is aborted
  (:func:`stream_writer.abort_batch`) before the error fails the query.

``outputMode("complete")`` publishes OVERWRITE snapshots, ``append`` / ``update`` APPEND ones.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Mapping, Sequence

from impl.jobs.writer import CommitOutcome
from impl.spark.errors import SparkConnectorError, StreamSinkError
from impl.spark.native_write import use_native
from impl.spark.options import FORMAT_NAME
from impl.spark.routing import prepare_dataframe_write, write_rows
from impl.spark.source import activate
from impl.spark.stream_writer import (
    COMMIT_USER_PREFIX_OPTION,
    QUERY_ID_PROPERTY,
    StreamSink,
    abort_batch,
    commit_batch,
    new_run_id,
    published_snapshot,
    runs_of_batch,
    settle_runs,
    stream_key,
)

log = logging.getLogger(__name__)

_OUTPUT_MODES = ("append", "update", "complete")


def write_micro_batch(batch_df, batch_id: int, sink: StreamSink, *, writer: str = "auto",
                      num_tasks: int | None = None) -> CommitOutcome | None:
    """Write and commit micro-batch ``batch_id`` (``batch_df``) of the query running it, exactly
    once. Returns what was committed, or None when an earlier run had published the batch or it
    held no rows."""
    query = batch_df.sparkSession.sparkContext.getLocalProperty(QUERY_ID_PROPERTY)
    if query is None:
        raise StreamSinkError(f"micro-batch {batch_id}: no query id (Spark local property {QUERY_ID_PROPERTY!r}); "
                              f"write_micro_batch runs only inside a foreachBatch function")
    table = sink.job.ref.table()
    # a fresh run for each micro-batch, as Spark plans a new writer for each run of the sink's
    since = table.snapshot_manager().latest_snapshot_id() or 0
    this = dataclasses.replace(sink, job=dataclasses.replace(sink.job, since_snapshot_id=since), run=new_run_id())
    run = this.run_of(batch_id, query)
    job = this.job_of(run)
    done = published_snapshot(table, job.commit_user, batch_id)
    if done is not None:
        removed = settle_runs(table, this, runs_of_batch(table, sink.stream_key, batch_id), None)
        log.info("stream %s to %s: micro-batch %d was already committed (snapshot %d); not written again, "
                 "%d leftover file(s) of earlier runs removed", job.commit_user, table.identifier, batch_id,
                 done.id, len(removed))
        return None
    try:
        result = write_rows(batch_df, job, num_tasks=num_tasks, writer=writer, row_kind_column=job.row_kind_column)
        return commit_batch(this, [(run.name, msgs, None) for msgs in result.per_task] or [(run.name, [], None)],
                            batch_id)
    except BaseException:
        abort_batch(this, batch_id)
        raise


def write_stream(df, table_path: str, *, checkpoint_location: str, trigger: Mapping | None = None,
                 output_mode: str = "append", options: Mapping[str, str] | None = None,
                 primary_keys: Sequence[str] | None = None, partition_keys: Sequence[str] | None = None,
                 row_kind_column: str | None = None, num_tasks: int | None = None, writer: str = "auto",
                 query_name: str | None = None, fs_factory=None):
    """Start a streaming write of ``df`` (a streaming DataFrame) into the table at ``table_path``;
    returns Spark's ``StreamingQuery``.

    Each micro-batch is one commit, exactly once across restarts from ``checkpoint_location``
    (required). ``trigger``: keyword arguments of ``DataStreamWriter.trigger``, e.g.
    ``{"availableNow": True}`` or ``{"processingTime": "10 seconds"}`` (default: Spark's).
    ``output_mode``: ``append``, ``update`` or ``complete`` (each batch an OVERWRITE).
    ``options``, ``primary_keys``, ``partition_keys``, ``row_kind_column``, ``num_tasks``,
    ``writer`` and ``fs_factory`` as for :func:`impl.spark.write_dataframe`: the table is created
    if missing and the schema checked before the query starts; ``writer="spark"`` is refused by
    name then if Spark's writer cannot write the table.
    """
    activate(df.sparkSession)
    if not checkpoint_location:
        raise StreamSinkError("write_stream: checkpoint_location is required (exactly-once commits across "
                              "restarts keep the query's id and progress there)")
    if output_mode not in _OUTPUT_MODES:
        raise SparkConnectorError(f"{FORMAT_NAME}: output mode {output_mode!r} is not one of {list(_OUTPUT_MODES)}")
    job = prepare_dataframe_write(df.schema, table_path, options=options, primary_keys=primary_keys,
                                  partition_keys=partition_keys, row_kind_column=row_kind_column,
                                  fs_factory=fs_factory)
    table = job.ref.table()
    use_native(job, table, writer, row_kind_column)  # writer="spark" refused now, not at the first batch
    sink = StreamSink(job, stream_key(checkpoint_location), new_run_id(), output_mode == "complete",
                      table.options.raw.get(COMMIT_USER_PREFIX_OPTION))

    def each_batch(batch_df, batch_id: int) -> None:
        write_micro_batch(batch_df, batch_id, sink, writer=writer, num_tasks=num_tasks)

    w = df.writeStream.foreachBatch(each_batch).outputMode(output_mode).option("checkpointLocation",
                                                                               checkpoint_location)
    if query_name:
        w = w.queryName(query_name)
    if trigger:
        w = w.trigger(**dict(trigger))
    return w.start()


__all__ = ["write_stream", "write_micro_batch"]

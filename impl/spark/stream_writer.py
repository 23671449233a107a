"""Structured Streaming sink: ``df.writeStream.format("paimon_py")``, one commit per micro-batch, exactly once.

::

    (df.writeStream.format("paimon_py")
       .option("checkpointLocation", checkpoint_dir)        # required
       .option("primary-key", "id").option("bucket", "4")   # table-creating options, as for df.write
       .option("row-kind-column", "op")                     # optional: +I/-U/+U/-D (or 0..3) per row
       .trigger(processingTime="1 second").start(table_path))

The options are those of the batch writer (``primary-key``, ``partition``, ``bucket``, any Paimon
table option, storage options ``fs.s3.*`` & co.); ``outputMode("complete")`` publishes each
micro-batch as an OVERWRITE snapshot, ``append`` and ``update`` as APPEND snapshots.

How each micro-batch lands exactly once:

- **Commit user.** Every snapshot of a query is committed by one user named after Spark's query
  id, ``spark-stream-<query id>`` (after ``<commit.user-prefix>_`` when that Paimon option is
  set). Spark keeps the id in the checkpoint: it is the same after a restart, and new when the
  checkpoint is deleted and the query starts over from batch 0 (which must then not look done).
  Tasks read it from Spark's local properties and report it with their files.
- **Checkpoint.** The sink requires the ``checkpointLocation`` option: its SHA-1 names the
  stream's write intents, so that aborting a batch whose tasks all failed (and so reported
  nothing) finds them. A checkpoint given only through ``spark.sql.streaming.checkpointLocation``
  does not reach the sink, which refuses to start rather than guess.
- **Identifier.** Micro-batch ``N`` commits with commit identifier ``N`` (Spark's batch id).
- **Re-runs.** Spark records a batch as done in its commit log only after the sink's commit
  returned; a query that stops or crashes in between runs the batch again on restart, with
  the same id and the same input. Before committing batch ``N`` the committer looks up the newest
  snapshot of the query's user: if its identifier is ``N`` or more, an earlier run published the
  batch, and this run commits nothing and removes its own files.
- **Files.** Spark plans a new writer for each run of a micro-batch; its tasks log every file in a
  write intent (:mod:`impl.jobs.tracking`) named after the checkpoint, the query, the batch id,
  the snapshot the run started from, and the run (``stream-<key>-q<query>-b<N>-s<snapshot>-<run>``).
  Committing or aborting batch ``N`` settles every run of ``N`` it finds: the committed files
  stay, and of an earlier run's files only those a snapshot of its user added since it started.
- **Primary-key tables** get the same one-writer check as :func:`impl.spark.write_dataframe` (the
  shared commit path, :func:`impl.jobs.writer.commit_write`). The sink cannot shuffle: Spark
  decides the micro-batch's partitions, so partition the stream by the primary key,
  ``df.repartition(*keys).writeStream...``; a batch that breaks the rule fails the query and
  commits nothing.

Limit: the re-run check needs the snapshot of the batch that was published just before the
query stopped. A query restarted after that snapshot expired (``snapshot.time-retained``,
``snapshot.num-retained.min``) would commit the batch again; restart within the retention.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import posixpath
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from impl.commit.messages import CommitMessage
from impl.errors import PaimonError
from impl.jobs.keycheck import Sketches
from impl.jobs.tracking import WriteIntent, clean_after_failure
from impl.jobs.writer import CommitOutcome, WriteJob, commit_write, write_task
from impl.spark.errors import StreamSinkError, WriteRoutingError
from impl.spark.options import FORMAT_NAME, parse_options, prepare_write, refuse_system_table_write
from impl.spark.writer import task_key

log = logging.getLogger(__name__)

# Spark's option key (data source options arrive lower-cased) and the local properties that tell a
# task which micro-batch of which query it runs in (set by Spark's MicroBatchExecution on every
# batch's jobs; the query id is the one kept in the checkpoint, the same after a restart).
CHECKPOINT_OPTION = "checkpointlocation"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
COMMIT_USER_PREFIX_OPTION = "commit.user-prefix"

_RUN_NAME = re.compile(r"^stream-(?P<key>[0-9a-f]{16})-q(?P<query>[0-9a-f]{32})-b(?P<batch>\d+)-s(?P<since>\d+)"
                       r"-(?P<run>[0-9a-f]+)$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


# ====================================================================== pure rules


def resolve_checkpoint(location: str) -> str:
    """The checkpoint location as one canonical string: an absolute local path (``file:`` URLs
    and relative paths resolved the way Spark does, against the driver's working directory), or
    the URL without a trailing slash."""
    loc = location.strip()
    if loc.startswith("file:"):
        loc = "/" + loc[len("file:"):].lstrip("/")
    elif _URL.match(loc) and not re.match(r"^[A-Za-z]:[\\/]", loc):  # not a Windows drive
        return loc.rstrip("/")
    return os.path.normpath(os.path.abspath(loc))


def stream_key(checkpoint_location: str) -> str:
    """16 hex digits naming the write intents of the query at ``checkpoint_location``."""
    return hashlib.sha1(resolve_checkpoint(checkpoint_location).encode("utf-8")).hexdigest()[:16]


def stream_commit_user(query_id: str, prefix: str | None = None) -> str:
    """The commit user of the query ``query_id`` (Spark's ``StreamingQuery.id``, in any UUID
    spelling); Paimon's ``commit.user-prefix`` goes first, joined by ``_``."""
    user = f"spark-stream-{uuid.UUID(query_id)}"
    return f"{prefix}_{user}" if prefix else user


def new_run_id() -> str:
    """A run of a micro-batch: hex of the wall clock in ns then randomness, so runs sort by start."""
    return f"{time.time_ns():016x}{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class BatchRun:
    """One run of one micro-batch of one query: the name of its write intent."""

    stream_key: str  # of the checkpoint location
    query: str  # Spark's query id, 32 hex digits
    batch_id: int
    since_snapshot_id: int  # the latest snapshot when Spark planned the run
    run: str  # hex, sorts by the run's start

    @property
    def name(self) -> str:
        return f"stream-{self.stream_key}-q{self.query}-b{self.batch_id}-s{self.since_snapshot_id}-{self.run}"

    @staticmethod
    def parse(name: str) -> "BatchRun | None":
        m = _RUN_NAME.match(name)
        if m is None:
            return None
        return BatchRun(m["key"], m["query"], int(m["batch"]), int(m["since"]), m["run"])


def already_committed(newest_identifier: int | None, batch_id: int) -> bool:
    """Whether batch ``batch_id`` is published, given the newest commit identifier of the query's
    user (identifiers of one user only grow, so a newer one means this batch is done too)."""
    return newest_identifier is not None and newest_identifier >= batch_id


def routing_hint(table) -> str:
    keys = ", ".join(repr(k) for k in table.primary_keys)
    return (f" In a stream the sink cannot move rows between tasks: partition each micro-batch by the "
            f"primary key before writing, df.repartition({keys}).writeStream.format('paimon_py')...")


# ====================================================================== the sink


@dataclass(frozen=True)
class StreamSink:
    """What every run of every micro-batch of one streaming write needs (picklable)."""

    job: WriteJob  # ref, column map, row kinds, the snapshot the run started from
    stream_key: str
    run: str
    overwrite: bool = False
    user_prefix: str | None = None  # Paimon's commit.user-prefix

    def run_of(self, batch_id: int, query_id: str) -> BatchRun:
        return BatchRun(self.stream_key, uuid.UUID(query_id).hex, batch_id, self.job.since_snapshot_id, self.run)

    def commit_user(self, run: BatchRun) -> str:
        return stream_commit_user(run.query, self.user_prefix)

    def job_of(self, run: BatchRun) -> WriteJob:
        return dataclasses.replace(self.job, write_id=run.name, since_snapshot_id=run.since_snapshot_id,
                                   commit_user=self.commit_user(run))


def make_stream_sink(options, schema, overwrite: bool, *, fs_factory=None) -> StreamSink:
    """Parse the data source options, create the table if missing, check the schema."""
    opts = {str(k): v for k, v in dict(options).items()}
    checkpoint = next((v for k, v in opts.items() if k.lower() == CHECKPOINT_OPTION), None)
    opts = {k: v for k, v in opts.items() if k.lower() != CHECKPOINT_OPTION}
    if not checkpoint:
        raise StreamSinkError(
            f"{FORMAT_NAME} streaming sink: no checkpoint location; give it on the query, "
            f".writeStream.format('{FORMAT_NAME}').option('checkpointLocation', '<dir>'). Exactly-once commits "
            f"across restarts need a durable checkpoint, and the sink finds the files of a failed micro-batch by "
            f"its location; a checkpoint set only through spark.sql.streaming.checkpointLocation does not reach "
            f"the sink")
    parsed = parse_options(opts)
    refuse_system_table_write(parsed.path, "a streaming write")
    job = prepare_write(parsed.path, schema, parsed.connector, parsed.table, fs_factory=fs_factory,
                        storage_options=parsed.storage)
    prefix = job.ref.table().options.raw.get(COMMIT_USER_PREFIX_OPTION)
    return StreamSink(job, stream_key(str(checkpoint)), new_run_id(), overwrite, prefix)


def current_batch() -> tuple[int, str]:
    """The micro-batch id and query id of the running Spark task."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    batch = tc.getLocalProperty(BATCH_ID_PROPERTY) if tc is not None else None
    query = tc.getLocalProperty(QUERY_ID_PROPERTY) if tc is not None else None
    if batch is None or query is None:
        raise StreamSinkError(f"no micro-batch or query id in the task (Spark local properties {BATCH_ID_PROPERTY!r}, "
                              f"{QUERY_ID_PROPERTY!r}); the streaming sink runs only inside a Structured Streaming query")
    return int(batch), query


# ---------------------------------------------------------------------- intents of a batch's runs


def _intent_parents(table) -> tuple[str, str, str]:
    """The directories holding the write intents, attempt records and closed markers of ``table``."""
    probe = WriteIntent.for_table(table, "_")
    return (posixpath.dirname(probe.dir), posixpath.dirname(probe.attempts_dir),
            posixpath.dirname(probe.closed_marker))


def runs_of_batch(table, key: str, batch_id: int) -> list[BatchRun]:
    """Every run of micro-batch ``batch_id`` of the queries of checkpoint ``key`` that left an
    intent or attempt record, oldest first."""
    writes, attempts, _ = _intent_parents(table)
    names = set(table.file_io.list_names(writes)) | set(table.file_io.list_names(attempts))
    runs = (BatchRun.parse(n) for n in names)
    return sorted((r for r in runs if r is not None and r.stream_key == key and r.batch_id == batch_id),
                  key=lambda r: (r.run, r.name))


def settle_runs(table, sink: StreamSink, runs: Sequence[BatchRun], live: BatchRun | None) -> list[str]:
    """Remove the files of ``runs`` that no snapshot of the run's commit user added since the run
    started (all of them when the batch was not published by that run); drop their intents.

    ``live`` is the run Spark is executing now: its tasks may still be running (a failed job's
    other tasks, speculative copies), so its cleanup waits for them as the batch writer's does.
    Earlier runs belong to a query run that has ended: nothing of theirs is waited for.
    """
    removed: list[str] = []
    for run in runs:
        wait: dict[str, Any] = {} if run == live else {"grace_seconds": 0.0, "settle_seconds": 0.0}
        intent = WriteIntent.for_table(table, run.name)
        removed += clean_after_failure(table, intent, sink.commit_user(run), run.since_snapshot_id, **wait)
    return removed


def prune_closed_markers(table, key: str, batch_id: int) -> None:
    """Delete the closed markers of this stream's runs of batches before ``batch_id - 1``.

    A marker stops a straggling task attempt of a finished run from leaving a file behind
    (see :meth:`WriteIntent.drop_if_closed`); one is written per run, so a stream would
    otherwise add one per micro-batch forever. Two batches later no task of the run is alive.
    """
    _, _, closed = _intent_parents(table)
    doomed = []
    for name in table.file_io.list_names(closed):
        run = BatchRun.parse(name)
        if run is not None and run.stream_key == key and run.batch_id < batch_id - 1:
            doomed.append(posixpath.join(closed, name))
    table.file_io.delete_quietly(doomed)


# ---------------------------------------------------------------------- driver: commit and abort


def published_snapshot(table, commit_user: str, batch_id: int):
    """The snapshot by which an earlier run of the query (``commit_user``) published micro-batch
    ``batch_id`` (or a later one), or None when the batch is still to commit."""
    newest = table.snapshot_manager().latest_snapshot_of_user(commit_user)
    return newest if already_committed(newest.commit_identifier if newest else None, batch_id) else None


def commit_batch(sink: StreamSink, reported: Sequence[tuple[str, list[CommitMessage], Sketches | None] | None],
                 batch_id: int) -> CommitOutcome | None:
    """Commit micro-batch ``batch_id`` once: ``reported`` holds each task's (write intent name,
    CommitMessages, key sketches). Returns None when an earlier run already published the batch."""
    names = {r[0] for r in reported if r is not None}
    if not names:
        # Spark runs at least one task per micro-batch (an empty one if there is no input
        # partition), and each reports; nothing was written
        if sink.overwrite:
            raise StreamSinkError(f"micro-batch {batch_id}: no task reported, so nothing says which query "
                                  f"overwrites the table; not committed")
        return None
    live = BatchRun.parse(names.pop())
    if names or live is None or live.stream_key != sink.stream_key or live.batch_id != batch_id:
        raise StreamSinkError(f"micro-batch {batch_id}: the tasks wrote as runs {sorted({*names, str(live)})}, "
                              f"not as one run of this batch of the query at this checkpoint")
    job = sink.job_of(live)
    table = job.ref.table()
    runs = runs_of_batch(table, sink.stream_key, batch_id)
    newest = published_snapshot(table, job.commit_user, batch_id)
    if newest is not None:
        removed = settle_runs(table, sink, [r for r in runs if r != live] + [live], live)
        log.info("stream %s to %s: micro-batch %d was already committed (snapshot %d, identifier %d) by an "
                 "earlier run; this run committed nothing and removed %d file(s)", job.commit_user,
                 table.identifier, batch_id, newest.id, newest.commit_identifier, len(removed))
        return None
    per_task = [r[1] for r in reported if r is not None]
    sketches = [r[2] for r in reported if r is not None]
    try:
        outcome = commit_write(job, per_task, overwrite=sink.overwrite, commit_identifier=batch_id,
                               sketches=sketches)
    except WriteRoutingError as e:
        raise WriteRoutingError(f"{e}{routing_hint(table)}") from e
    settle_runs(table, sink, [r for r in runs if r != live], live)
    prune_closed_markers(table, sink.stream_key, batch_id)
    return outcome


def abort_batch(sink: StreamSink, batch_id: int) -> list[str]:
    """Remove the files of every run of micro-batch ``batch_id`` that no snapshot of the run's
    user added (an earlier run may have published the batch: its files stay)."""
    try:
        table = sink.job.ref.table()
        runs = runs_of_batch(table, sink.stream_key, batch_id)
    except PaimonError as e:
        log.warning("abort of micro-batch %d of the stream at %s: cannot open %s: %s", batch_id, sink.stream_key,
                    sink.job.ref.table_path, e)
        return []
    # the newest run is the one Spark is aborting: the others ended with an earlier query run
    return settle_runs(table, sink, runs, runs[-1] if runs else None)


# ====================================================================== DataSourceStreamArrowWriter


class PaimonStreamCommitMessage(WriterCommitMessage):
    """One task's CommitMessages, the write intent (run) they were logged in, and the key
    sketches of the buckets it wrote (primary-key tables: the commit's shared-key check)."""

    def __init__(self, task: str, run: str, messages: list[CommitMessage], sketches: Sketches | None = None):
        self.task = task
        self.run = run
        self.messages = messages
        self.sketches = sketches


class PaimonStreamWriter(DataSourceStreamArrowWriter):
    """The ``paimon_py`` streaming sink: tasks write a micro-batch's rows, the driver commits it
    once under the query's commit user with the batch id as identifier (or aborts it)."""

    def __init__(self, sink: StreamSink):
        self.sink = sink

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonStreamCommitMessage:
        run = self.sink.run_of(*current_batch())
        key = task_key()
        out = write_task(iterator, self.sink.job_of(run), key)
        return PaimonStreamCommitMessage(key, run.name, out.messages, out.sketches)

    def commit(self, messages: list, batchId: int) -> None:
        reported = [(m.run, m.messages, m.sketches) if m is not None else None for m in messages]
        commit_batch(self.sink, reported, batchId)

    def abort(self, messages: list, batchId: int) -> None:
        abort_batch(self.sink, batchId)


__all__ = ["PaimonStreamWriter", "PaimonStreamCommitMessage", "StreamSink", "StreamSinkError", "BatchRun",
           "make_stream_sink", "commit_batch", "abort_batch", "stream_commit_user", "stream_key",
           "resolve_checkpoint", "already_committed", "CHECKPOINT_OPTION", "published_snapshot", "runs_of_batch",
           "settle_runs", "prune_closed_markers", "new_run_id", "current_batch"]

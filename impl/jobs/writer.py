"""Parallel writes: an engine's tasks (Spark, Ray) write data files through impl's table writers;
the driver commits once. Engine-neutral: the engine adapters (``impl.spark.writer``,
``impl.ray.sink``) hand this module Arrow batches in their tasks and the tasks' results on their
driver.

- :func:`write_task` / :func:`write_batches` (in a task): Arrow batches -> ``TableWrite.write_arrow``
  -> ``prepare_commit()`` -> CommitMessages, every file logged first in the write's intent
  (:mod:`impl.jobs.tracking`); the caller names the task attempt (its ``key``);
- :func:`commit_write` (on the driver): one commit of all tasks' messages (APPEND or OVERWRITE
  snapshot, then COMPACT if writers compacted), then removal of leftovers of failed or retried
  attempts;
- :func:`abort_write` (on the driver): removes every file of the write that no snapshot uses.

Primary-key tables: several tasks may write one bucket (an engine's plain write does not route
rows to buckets) as long as no key was written by two of them; the commit checks that (key
ranges, then the key sketches the tasks send beside their messages, then an exact intersection
of the candidates: :mod:`impl.jobs.keycheck`) and refuses a write that shares a key, removing its
files. :func:`impl.spark.write_dataframe` routes rows so that every bucket has one writer.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.bucket.routing import BucketMode
from impl.commit.messages import CommitMessage
from impl.errors import ConnectorError, PaimonError
from impl.fs.file_io import FileIO
from impl.jobs.keycheck import (
    KeyCheckStats,
    KeySketchBuilder,
    Sketches,
    check_shared_keys,
    keep_one_compaction_per_bucket,
)
from impl.jobs.tables import TableRef
from impl.jobs.tracking import WriteIntent, clean_after_failure
from impl.options.registry import check_write
from impl.write.table_write import conform_input

log = logging.getLogger(__name__)

ROW_KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


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
        cat = self.ref.paths_catalog(fs)
        return WriteIntent(FileIO(fs), cat.warehouse, self.ref.identifier, cat.table_path(self.ref.identifier),
                           self.write_id)


def unsupported_write_reason(table, engine: str) -> str | None:
    """Why tasks of ``engine`` (Spark, Ray) cannot write ``table`` in parallel, or None.
    UnsupportedOptionError (on the driver, before any task) for a Paimon option impl does not
    implement that changes what a write puts (``impl.options.registry``)."""
    check_write(table.options.raw, table.identifier)
    if table.bucket_mode() is BucketMode.POSTPONE:
        return (f"{table.identifier} is a postpone bucket table (bucket -2); {engine} writes into it are not "
                f"supported. Write it with impl's TableWrite, then compact it (impl.spark.compact or Table.compact)")
    if table.is_primary_key_table and table.options.bucket < 1:
        # the tasks would each assign buckets from their own copy of the HASH index: the commit
        # would refuse their index files (IndexFileConflictError) after all the work
        return (f"{table.identifier} is a dynamic bucket table (bucket -1); {engine} writes into it are not "
                f"supported. Write it with impl's TableWrite (one assigner per partition), or use a fixed-bucket table")
    return None


# ====================================================================== tasks


def _row_kinds(col: pa.ChunkedArray) -> np.ndarray:
    if pa.types.is_integer(col.type):
        kinds = col.to_numpy(zero_copy_only=False)
    else:
        idx = pc.index_in(col.cast(pa.string()), value_set=pa.array(list(ROW_KINDS)))
        if idx.null_count:
            bad = pc.filter(col, pc.is_null(idx))[0].as_py()
            raise ConnectorError(f"row kind {bad!r} is not one of {list(ROW_KINDS)}")
        kinds = idx.to_numpy(zero_copy_only=False)
    return np.asarray(kinds, dtype=np.int8)


def _to_table_columns(batches: list[pa.RecordBatch], job: WriteJob) -> tuple[pa.Table, np.ndarray | None]:
    t = pa.Table.from_batches(batches)
    kinds = _row_kinds(t.column(job.row_kind_column)) if job.row_kind_column else None
    cols = [t.column(src) for _, src in job.column_map]
    names = [dst for dst, _ in job.column_map]
    return pa.Table.from_arrays(cols, names=names), kinds


@dataclass(frozen=True)
class TaskOutput:
    """What one task hands to the driver: its CommitMessages and, for primary-key tables, the key
    sketch of every (partition, bucket) it wrote (None when not built)."""

    messages: list[CommitMessage]
    sketches: Sketches | None = None


def write_task(batches: Iterable[pa.RecordBatch], job: WriteJob, key: str, *,
               sketch: bool = True) -> TaskOutput:
    """Write the rows of one task (files logged in the intent first); its messages, and with
    ``sketch`` the key sketches the commit's shared-key check uses (primary-key tables only;
    a write routed one task per bucket, as :func:`impl.spark.write_dataframe`'s, needs none).
    ``key`` names this task attempt, unique per attempt (the engine's: ``impl.spark.writer.task_key``,
    a fresh one per Ray attempt), so a retried attempt's files are logged apart and swept."""
    base_fs = job.ref.filesystem()
    with job.intent(fs=base_fs).task_attempt(key, base_fs) as tracked:
        return _write_task(batches, job, job.ref.table(filesystem=tracked), sketch)


def write_batches(batches: Iterable[pa.RecordBatch], job: WriteJob, key: str) -> list[CommitMessage]:
    """Write the rows of one task; return its CommitMessages (files logged in the intent first)."""
    return write_task(batches, job, key, sketch=False).messages


def _write_task(batches: Iterable[pa.RecordBatch], job: WriteJob, table, sketch: bool) -> TaskOutput:
    sketcher = KeySketchBuilder(table) if sketch and table.is_primary_key_table else None
    w = table.new_batch_write_builder().new_write()

    def write(pending: list[pa.RecordBatch]) -> None:
        data, kinds = _to_table_columns(pending, job)
        if sketcher is not None:
            data = conform_input(data, table.core)  # the sketch hashes the values the files will hold
            sketcher.add(data)
        w.write_arrow(data, row_kinds=kinds)

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
                write(pending)
                pending, rows = [], 0
        if pending:
            write(pending)
        messages = w.prepare_commit()
        ok = True
        return TaskOutput(messages, sketcher.finish() if sketcher is not None else None)
    finally:
        try:
            w.close()  # after prepare_commit this keeps the prepared files
        except Exception:  # noqa: BLE001
            if ok:
                raise


# ====================================================================== driver


def check_routing(table, per_task: Sequence[Sequence[CommitMessage]],
                  sketches: Sequence[Sketches | None] | None = None, *,
                  fix_columns: Sequence[str] | None = None) -> KeyCheckStats:
    """Primary-key tables: no key may have been written by two tasks (:mod:`impl.jobs.keycheck`).

    Raises :class:`WriteRoutingError` naming one such key; returns what the check looked at.
    """
    return check_shared_keys(table, per_task, sketches, fix_columns=fix_columns)


@dataclass(repr=False)
class CommitOutcome:
    """What :func:`commit_write` committed: snapshots, the committed messages, leftovers removed."""

    snapshot_ids: list[int]
    messages: list[CommitMessage]
    leftovers_removed: list[str]
    attempts: int = 0
    lost_races: int = 0
    key_check: KeyCheckStats | None = None
    compactions_dropped: int = 0  # compactions of shared buckets not committed (see keycheck)

    def __repr__(self) -> str:
        return (f"CommitOutcome(snapshots={self.snapshot_ids}, {written_summary(self.messages)}, "
                f"leftovers removed={len(self.leftovers_removed)}, attempts={self.attempts})")


def written_summary(messages: Sequence[CommitMessage]) -> str:
    """One line on what ``messages`` wrote: buckets, files, rows of new files, bytes."""
    files = [f for m in messages for f in m.written_files()]
    rows = sum(f.row_count for m in messages for f in m.new_files)
    size = sum(f.file_size for f in files)
    buckets = len({(m.partition, m.bucket) for m in messages})
    return f"{buckets} bucket(s), {len(files)} file(s) written, {rows:,} rows, {_human_bytes(size)}"


def _human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def commit_write(job: WriteJob, per_task: Sequence[Sequence[CommitMessage]], *, overwrite: bool = False,
                 overwrite_partition: dict | None = None, commit_identifier: int | None = None,
                 sketches: Sequence[Sketches | None] | None = None) -> CommitOutcome:
    """Commit all tasks' messages in one commit; then delete leftovers of other attempts.

    ``per_task``: each task's CommitMessages (one entry per task, for the primary-key check);
    ``sketches``: their key sketches (parallel to ``per_task``; see :func:`write_task`), which
    let the check skip reading files. Primary-key tables: a write in which two tasks wrote one
    key is refused (:class:`WriteRoutingError`); of several tasks' compactions of one bucket one
    is committed. ``commit_identifier``: the snapshots' commit identifier (default Paimon's batch
    identifier); the streaming sink passes the micro-batch id. On any failure the write's files
    that no snapshot uses are removed (see
    :func:`impl.jobs.tracking.clean_after_failure`) and the error is raised.
    """
    table = job.ref.table()
    try:
        fix = [src for dst, src in job.column_map if dst in set(table.primary_keys)] or None
        checked = check_routing(table, per_task, sketches, fix_columns=fix)
        if checked.shared_buckets:
            log.info("write %s to %s: %s", job.write_id, table.identifier, checked)
        per_task, dropped = keep_one_compaction_per_bucket(per_task)
        if dropped:
            log.info("write %s to %s: %d compaction(s) of buckets written by several tasks not committed",
                     job.write_id, table.identifier, dropped)
        messages = [m for msgs in per_task for m in msgs]
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
    keep = {n for m in messages for n in m.written_file_names()}
    removed = job.intent(table).delete_unreferenced(keep)
    if removed:
        log.info("write %s to %s: removed %d file(s) of failed or retried task attempts",
                 job.write_id, table.identifier, len(removed))
    return CommitOutcome(list(stats.snapshot_ids), messages, removed, stats.attempts, stats.lost_races,
                         checked, dropped)


def abort_write(job: WriteJob) -> list[str]:
    """Remove every file of the write that no snapshot of its commit user added."""
    try:
        table = job.ref.table()
    except PaimonError as e:
        log.warning("abort of write %s: cannot open %s: %s", job.write_id, job.ref.table_path, e)
        return []
    return clean_after_failure(table, job.intent(table), job.commit_user, job.since_snapshot_id)


__all__ = ["WriteJob", "write_batches", "write_task", "TaskOutput", "commit_write", "abort_write", "check_routing",
           "CommitOutcome", "written_summary", "unsupported_write_reason", "ROW_KINDS"]

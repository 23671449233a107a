"""``impl.spark.compact``: a dedicated compaction job over Spark.

The driver lists the (partition, bucket) groups of the latest snapshot and spreads them over
tasks (largest first, so tasks get similar work); on a postpone-mode table (``bucket`` = -2) a
task moves whole partitions' postponed rows into real buckets instead (impl.write.postpone). Each task compacts its buckets with impl's
writers (a merge-tree writer per bucket for primary-key tables: universal compaction, or
everything into one sorted run with ``full``; small-file rewriting for append tables) and
returns the CommitMessages (compact-before / compact-after). The driver publishes them as one
COMPACT snapshot. Files are logged in a write intent first, so failed or retried task attempts
leave nothing behind, and a rejected commit (another job changed the same files) removes
everything the job wrote.
"""

from __future__ import annotations

import logging
import pickle
import uuid
from dataclasses import dataclass, field, replace
from typing import Mapping

from impl.bucket.routing import BucketMode
from impl.jobs.tables import TableRef, split_storage_options
from impl.jobs.writer import CommitOutcome, WriteJob, abort_write, commit_write
from impl.maintenance.compact import compact_bucket
from impl.read.scan import SnapshotReader
from impl.spark.errors import NativeWriteUnsupportedError
from impl.spark.native_compact import BucketRewrite, rewrite_natively, split_buckets
from impl.spark.native_write import use_native
from impl.spark.options import check_table_options
from impl.spark.source import activate
from impl.spark.writer import task_key
from impl.write.postpone import compact_postponed_partition, plan_postpone

log = logging.getLogger(__name__)

@dataclass(repr=False)
class CompactResult:
    """What :func:`compact` did; prints as one line."""

    snapshot_ids: list[int] = field(default_factory=list)
    buckets: int = 0  # buckets looked at
    compacted_buckets: int = 0  # buckets that changed
    files_before: int = 0
    files_after: int = 0
    tasks: int = 0
    leftovers_removed: int = 0
    attempts: int = 0

    def __repr__(self) -> str:
        return (f"CompactResult(snapshots={self.snapshot_ids}, buckets={self.buckets}, "
                f"compacted={self.compacted_buckets}, files {self.files_before} -> {self.files_after}, "
                f"tasks={self.tasks}, leftovers removed={self.leftovers_removed})")


def _compact_bucket_task(core, item, full: bool) -> list:
    partition, bucket, total, files = item
    m = compact_bucket(core, partition, bucket, total, files, full)
    return [] if m is None else [m]


def _task_function(job: WriteJob, full: bool, work):
    """A Spark task's body: ``work(core, item, full)`` (a list of commit messages) for each of its
    items, through the write's intent log, the messages pickled back to the driver. Items are
    buckets of a table's compaction, or whole partitions of a postpone-mode table's."""
    def run(slices):
        items = [it for s in slices for it in s]
        if not items:
            return
        key = task_key()
        base_fs = job.ref.filesystem()
        out = []
        with job.intent(fs=base_fs).task_attempt(key, base_fs) as tracked:
            table = job.ref.table(filesystem=tracked)
            for item in items:
                out.extend(work(table.core, item, full))
        yield pickle.dumps(out)

    return run


def native_compaction(job: WriteJob, table, writer: str) -> bool:
    """Whether Spark's own Parquet reader and writer rewrite the table's buckets
    (:mod:`impl.spark.native_compact`): ``writer`` as for :func:`impl.spark.write_dataframe`;
    ``spark`` is refused by name for tables whose compaction needs impl (a merge, row ids)."""
    needs_impl = None
    if table.is_primary_key_table:
        needs_impl = f"{table.identifier} is a primary-key table (its buckets are merged by impl's merge tree)"
    elif table.options.data_evolution:
        needs_impl = f"{table.identifier} is a data-evolution table (its row-id groups are merged by impl)"
    elif table.bucket_mode() is BucketMode.POSTPONE:
        needs_impl = f"{table.identifier} is a postpone bucket table"
    if needs_impl is None:
        # only when asked: at 0.5M-3M rows of 64 small files (benchmarks/spark_io.py) Spark's read,
        # shuffle and write cost 2.5-9x impl's rewrite in two Python tasks (pyarrow end to end)
        return use_native(job, table, writer, None) and writer == "spark"
    if writer == "spark":
        raise NativeWriteUnsupportedError(f"writer='spark' cannot compact this table: {needs_impl}; "
                                          f"use writer='python'")
    return use_native(job, table, "python" if writer == "auto" else writer, None)  # False, or a bad name refused


def compact(spark, table_path: str, full: bool = False, *, num_tasks: int | None = None,
            options: Mapping[str, str] | None = None, fs_factory=None, writer: str = "auto") -> CompactResult:
    """Compact the table at ``table_path`` with a Spark job; one COMPACT snapshot (none if nothing to do).

    ``options``: storage options (``fs.s3.endpoint``, ``fs.s3.accessKeyId``, ... : keys under
    ``fs.``, ``s3.``, ``s3a.``), with which every Spark process opens an object store, and
    Paimon table options applied to this job only (e.g. ``num-sorted-run.compaction-trigger``).
    ``writer``: ``spark`` (append tables rewritten by Spark's Parquet reader and writer,
    :mod:`impl.spark.native_compact`, buckets it cannot read left to impl; refused by name for
    tables it cannot serve), ``python`` or ``auto`` (impl's writers in Python tasks: faster
    than Spark's job so far, see benchmarks/README.md).
    """

    activate(spark)
    storage, dynamic = split_storage_options(options)
    check_table_options(dynamic)
    ref = TableRef.from_path(table_path, fs_factory=fs_factory, dynamic_options=dynamic, storage_options=storage)
    table = ref.table()
    latest = table.snapshot_manager().latest_snapshot()
    result = CompactResult()
    if latest is None:
        return result
    groups: dict[tuple[bytes, int], list] = {}
    totals: dict[tuple[bytes, int], int] = {}
    entries = SnapshotReader(table.core).live_entries(latest)
    for e in entries:
        groups.setdefault((e.partition, e.bucket), []).append(e.file)
        totals[(e.partition, e.bucket)] = e.total_buckets
    result.buckets = len(groups)
    if not groups:
        return result
    write_id = uuid.uuid4().hex
    job = WriteJob(ref, write_id, f"spark-compact-{write_id}", latest.id, ())
    rewrites: list[BucketRewrite] = []
    if native_compaction(job, table, writer):
        rewrites, rest = split_buckets(table, groups, totals, latest, full,
                                       object_store=job.ref.on_object_store)
        groups = {k: groups[k] for k in rest}
    postpone = table.bucket_mode() is BucketMode.POSTPONE
    if postpone:  # Paimon's postpone compaction: per partition holding postponed rows
        items: list = [(t, t.postponed) for t in plan_postpone(entries, table.options.postpone_default_bucket_num)]
    else:
        items = [((p, b, totals[(p, b)], tuple(fs)), fs) for (p, b), fs in groups.items()]
    if not items and not rewrites:
        return result
    per_task = _compact_in_tasks(spark, job, items, full, num_tasks, postpone) if items else []
    if rewrites:
        # the table's columns under their own names: the rows Spark read are the table's
        native_job = replace(job, column_map=tuple((f.name, f.name) for f in table.schema.fields))
        try:
            per_task.append(rewrite_natively(spark, native_job, rewrites, num_tasks=num_tasks))
        except BaseException:
            abort_write(job)
            raise
    result.tasks = len(per_task)
    messages = [m for ms in per_task for m in ms]
    if not messages:
        job.intent(table).discard()
        return result
    outcome: CommitOutcome = commit_write(job, per_task)
    result.snapshot_ids = outcome.snapshot_ids
    result.compacted_buckets = len(messages)
    result.files_before = sum(len(m.compact_before) for m in messages)
    result.files_after = sum(len(m.compact_after) for m in messages)
    result.leftovers_removed = len(outcome.leftovers_removed)
    result.attempts = outcome.attempts
    return result


def _compact_in_tasks(spark, job: WriteJob, items: list, full: bool, num_tasks: int | None,
                      postpone: bool) -> list[list]:
    """impl's writers compact ``items`` (buckets, or postpone partitions) in Spark tasks; each
    task's CommitMessages."""
    items.sort(key=lambda it: -sum(f.file_size for f in it[1]))
    n = max(1, min(len(items), num_tasks or int(spark.sparkContext.defaultParallelism)))
    slices: list[list] = [[] for _ in range(n)]
    weights = [0] * n
    for it, files in items:  # largest first into the lightest slice
        i = weights.index(min(weights))
        slices[i].append(it)
        weights[i] += sum(f.file_size for f in files) + 1
    function = _task_function(job, full, compact_postponed_partition if postpone else _compact_bucket_task)
    rdd = spark.sparkContext.parallelize(slices, n).mapPartitions(function)
    try:
        return [pickle.loads(b) for b in rdd.collect()]
    except BaseException:
        abort_write(job)
        raise


__all__ = ["compact", "compact_bucket", "CompactResult"]

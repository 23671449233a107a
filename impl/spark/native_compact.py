"""``impl.spark.compact(..., writer="spark")`` of append tables through Spark's own Parquet reader and writer.

(``writer="auto"`` keeps impl's writers in Python tasks: on the shared 2-core machine Spark's
read, shuffle and write of 0.5M-3M rows took 2.5-9x impl's pyarrow rewrite; benchmarks/README.md.)

Which files of a bucket are rewritten is impl's rule (:func:`impl.maintenance.compact.pick_files`:
the files below ``target-file-size`` once ``compaction.min.file-num`` of them exist, or every
file with ``full``). Then, in one Spark job for the whole table:

1. Spark's vectorized reader reads the picked files (:func:`impl.spark.fast_read.group_frame`:
   files of older schemas by field id, the rows the bucket's deletion vectors delete removed in
   the JVM), each row tagged with its file and position;
2. rows go to one task per (partition, bucket) (the bucket of the file they come from, joined by
   file name), sorted by (file in manifest order, position): the rows keep their order, as
   impl's rewrite keeps it;
3. Spark's writer writes them (:func:`impl.spark.native_write.spark_write`), a file rolling
   after about ``target-file-size`` bytes (rows per file from the picked files' bytes per row);
   the driver places them (:func:`impl.spark.native_write.place_files`) and, where the bucket
   had deletion vectors, writes its index without the rewritten files' vectors.

The result is one CommitMessage per bucket (compact-before: the picked files, compact-after:
the new ones, file source COMPACT), committed with the other buckets' as one COMPACT snapshot
by :func:`impl.spark.compaction.compact` (same conflict check and cleanup as impl's tasks).
Buckets holding a file Spark cannot read as impl does (another format, an older schema Spark
would read differently) are left to impl's compaction tasks (:func:`split_buckets`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import reduce
from typing import Mapping, Sequence

import pyarrow as pa

from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta, FileSource
from impl.jobs.writer import WriteJob
from impl.maintenance.compact import drop_rewritten_vectors, pick_files
from impl.manifest.records import IndexFileMeta
from impl.mergetree.deletion_vectors import DeletionVectorsMaintainer, read_deletion_vectors
from impl.read.scan import DataSplit
from impl.spark.errors import SparkConnectorError
from impl.spark.fast_read import FILE_NAME_COLUMN, ROW_INDEX_COLUMN, arrow_frame, group_frame, plan_native
from impl.spark.native_write import place_files, rows_per_file, spark_write, staging
from impl.spark.s3a import spark_store
from impl.store.core import bucket_index_files

_BUCKET = "__paimon_compact_bucket"
_ORDINAL = "__paimon_file_ordinal"
_DRIVER_TASK = "driver-native-compact"

Key = tuple[bytes, int]


@dataclass(frozen=True)
class BucketRewrite:
    """One bucket's files to rewrite, and its deletion-vector index files."""

    partition: bytes
    bucket: int
    total_buckets: int
    picked: tuple[DataFileMeta, ...]
    index_files: tuple[IndexFileMeta, ...] = ()


def split_buckets(table, groups: Mapping[Key, Sequence[DataFileMeta]], totals: Mapping[Key, int], snapshot,
                  full: bool, *, object_store: bool = False) -> tuple[list[BucketRewrite], list[Key]]:
    """The buckets Spark rewrites, and those left to impl's compaction (a picked file Spark's
    reader cannot read as impl does); buckets with nothing to compact are in neither.
    ``object_store``: the table is on S3 (read through s3a)."""
    o = table.options
    target = o.target_file_size_for(False)
    index = bucket_index_files(table.core, snapshot) if o.deletion_vectors else {}
    rewrites: list[BucketRewrite] = []
    for key, files in groups.items():
        picked = pick_files(list(files), target, o.compaction_min_file_num, o.compaction_max_file_num, full)
        if picked:
            rewrites.append(BucketRewrite(key[0], key[1], totals[key], tuple(picked), tuple(index.get(key, ()))))
    splits = [DataSplit(snapshot.id, r.partition, r.bucket, r.total_buckets,
                        table.core.partition_cache.path(r.partition), r.picked, index_files=r.index_files)
              for r in rewrites]
    # which files Spark reads does not depend on the vectors (read once, by rewrite_natively)
    plan = plan_native(table, splits, snapshot.id, deletion_vectors=lambda s: {}, object_store=object_store)
    slow = {(s.partition, s.bucket) for s in plan.slow}
    names = [f.file_name for r in rewrites if (r.partition, r.bucket) not in slow for f in r.picked]
    if len(set(names)) != len(names):  # rows find their bucket by file name
        return [], [(r.partition, r.bucket) for r in rewrites]
    return [r for r in rewrites if (r.partition, r.bucket) not in slow], sorted(slow)


def rewrite_natively(spark, job: WriteJob, rewrites: Sequence[BucketRewrite], *,
                     num_tasks: int | None = None) -> list[CommitMessage]:
    """Rewrite the buckets with Spark; one compaction CommitMessage per bucket (the new files
    are in place and logged in ``job``'s intent; the caller commits or aborts)."""
    from pyspark.sql import functions as F  # pyspark: only where Spark runs (require()d by impl.spark)

    table = job.ref.table()
    if not rewrites:
        return []
    splits = [DataSplit(0, r.partition, r.bucket, r.total_buckets, table.core.partition_cache.path(r.partition),
                        r.picked, index_files=r.index_files) for r in rewrites]
    # read once: for Spark's read here, and for the index rewritten without the compacted files below
    vectors = {(r.partition, r.bucket): read_deletion_vectors(table.file_io, table.paths, r.index_files)
               for r in rewrites if r.index_files}
    plan = plan_native(table, splits, None, deletion_vectors=lambda s: vectors.get((s.partition, s.bucket), {}),
                       object_store=job.ref.on_object_store)
    if plan.slow:
        raise SparkConnectorError(f"compaction of {table.identifier}: {len(plan.slow)} bucket(s) cannot be read by "
                                  f"Spark's Parquet reader; split_buckets should have left them to impl")
    names = [f.file_name for r in rewrites for f in r.picked]
    store = spark_store(job.ref)
    where = pa.table({FILE_NAME_COLUMN: pa.array(names, pa.string()),
                      _BUCKET: pa.array([r.bucket for r in rewrites for _ in r.picked], pa.int32()),
                      _ORDINAL: pa.array(range(len(names)), pa.int64())})
    rows = reduce(lambda a, b: a.unionByName(b), [group_frame(spark, table, g, positions=True, store=store) for g in plan.native])
    rows = rows.join(F.broadcast(arrow_frame(spark, where)), on=FILE_NAME_COLUMN)
    picked = [f for r in rewrites for f in r.picked]
    with staging(table, job) as directory:
        spark_write(rows, table, job, directory, num_tasks, _BUCKET, order_by=(_ORDINAL, ROW_INDEX_COLUMN),
                    max_records_per_file=rows_per_file(picked, table.options.target_file_size_for(False)))
        placed = place_files(table, job, directory)
    after: dict[Key, list[DataFileMeta]] = {}
    for m in placed:
        after.setdefault((m.partition, m.bucket), []).extend(replace(f, file_source=FileSource.COMPACT)
                                                             for f in m.new_files)
    wanted = {(r.partition, r.bucket) for r in rewrites}
    if not set(after) <= wanted:
        raise SparkConnectorError(f"compaction of {table.identifier}: Spark wrote into buckets "
                                  f"{sorted(set(after) - wanted)} it did not read")
    out = []
    base_fs = job.ref.filesystem()
    # the new index files are logged in the job's intent, as a task's files are
    with job.intent(fs=base_fs).task_attempt(_DRIVER_TASK, base_fs) as tracked:
        tracked_table = job.ref.table(filesystem=tracked)
        for r in rewrites:
            key = (r.partition, r.bucket)
            added: tuple[IndexFileMeta, ...] = ()
            removed: tuple[IndexFileMeta, ...] = ()
            if key in vectors:
                dvs = DeletionVectorsMaintainer(tracked_table.file_io, tracked_table.paths, r.index_files,
                                                id_factory=table.core.env.new_id, restored_vectors=vectors[key],
                                                bitmap64=table.core.options.deletion_vectors_bitmap64)
                added, removed = drop_rewritten_vectors(dvs, r.picked)
            out.append(CommitMessage(r.partition, r.bucket, r.total_buckets, compact_before=r.picked,
                                     compact_after=tuple(after.get(key, ())), compact_new_index_files=added,
                                     compact_deleted_index_files=removed))
    return out


__all__ = ["BucketRewrite", "split_buckets", "rewrite_natively"]

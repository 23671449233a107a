"""Dedicated compaction job: every bucket of the latest snapshot, one COMPACT snapshot.

Append tables, per (partition, bucket): the files smaller than ``target-file-size`` are
rewritten (in their manifest order, so row order is kept) into files of about the target
size, once at least ``compaction.min.file-num`` of them exist (at most
``compaction.max.file-num`` per run, if set); ``full=True`` rewrites every file of a bucket
that has more than one.

Data-evolution tables, per (partition, bucket): every row-id group of several files (a file and
its column updates) is merged into one file (:func:`compact_row_id_groups`).

Primary-key tables, per (partition, bucket): a merge-tree writer restored from the bucket's
files compacts them (universal compaction, or everything into one sorted run with ``full``).

Buckets are compacted in parallel; the commit carries compact_before (DELETE) and
compact_after (ADD). If anything fails before the commit, or the commit is rejected (another
job removed a file meanwhile), the new files are deleted.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Callable, Sequence

import pyarrow as pa

from impl.bucket.routing import BucketMode
from impl.commit.file_store_commit import CommitStats
from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta, FileSource
from impl.manifest.records import IndexFileMeta
from impl.options.registry import check_write
from impl.read.primary_key import PrimaryKeyBucketWriter
from impl.read.row_tracking import (
    compacted_row_tracking_files,
    fill_row_tracking,
    row_id_groups,
    with_row_tracking_fields,
)
from impl.read.scan import DataSplit, SnapshotReader
from impl.read.table_read import TableRead, read_data_file
from impl.snapshot.references import data_file_paths
from impl.store.core import TableCore, bucket_index_files
from impl.store.schema import ROW_TRACKING_COLUMNS
from impl.write.append_writer import NO_ROLLING, RollingFileWriter
from impl.write.postpone import compact_postponed_partition, plan_postpone
from impl.write.table_commit import TableCommit


def pick_files(files: list[DataFileMeta], target: int, min_num: int, max_num: int | None,
               full: bool) -> list[DataFileMeta]:
    """The files of one append bucket to rewrite (empty: leave the bucket alone)."""
    if full:
        return list(files) if len(files) > 1 else []
    small = [f for f in files if f.file_size < target]
    if max_num is not None:
        small = small[:max_num]
    return small if len(small) >= max(min_num, 2) else []


def drop_rewritten_vectors(dvs, rewritten: Sequence[DataFileMeta]
                           ) -> tuple[tuple[IndexFileMeta, ...], tuple[IndexFileMeta, ...]]:
    """The index files added and removed once the deletion vectors of the ``rewritten`` files go
    (an append compaction rewrote them without the rows the vectors deleted; vectors naming files
    that are no longer live would make the commit refuse). ``dvs``: the bucket's
    ``DeletionVectorsMaintainer``; its new index files are written here."""
    dvs.apply((f.file_name for f in rewritten), {})
    change = dvs.write()
    return change.added, change.removed


def compact_bucket(core: TableCore, partition: bytes, bucket: int, total_buckets: int,
                   files: Sequence[DataFileMeta], full: bool,
                   index_files: Sequence[IndexFileMeta] | None = None) -> CommitMessage | None:
    """Compact one bucket given its live files; its CommitMessage, or None if nothing changed.

    ``index_files``: the bucket's index files in the snapshot ``files`` come from (its
    deletion vectors); None reads them from the latest snapshot (a commit against a newer
    snapshot whose vectors changed meanwhile fails its conflict check).

    The new files exist on storage once this returns; they become live only when the message
    is committed (``TableCommit.abort`` removes them otherwise).
    """
    path = core.partition_cache.path(partition)
    if core.options.data_evolution:
        return compact_row_id_groups(core, partition, path, bucket, total_buckets, files)
    if index_files is None and core.options.deletion_vectors:
        index_files = bucket_index_files(core, core.snapshot_manager.latest_snapshot()).get((partition, bucket), [])
    if core.is_primary_key_table:
        w = PrimaryKeyBucketWriter(core, partition, path, bucket, list(files), None, total_buckets=total_buckets,
                                   restored_index=index_files or ())
        try:
            w.compact(full)
            m = w.prepare_commit(True)
        finally:
            w.close()
        return None if m.is_empty() else m

    o = core.options
    target = o.target_file_size_for(False)
    picked = pick_files(list(files), target, o.compaction_min_file_num, o.compaction_max_file_num, full)
    if not picked:
        return None
    # deletion vectors of an append table (row-level DELETE / UPDATE): the rewrite drops the rows
    # they delete, and the vectors of the rewritten files go with them (else they would name
    # files that are no longer live, which the commit refuses)
    dvs = None
    if index_files:
        from impl.mergetree import deletion_vectors as dv  # the merge tree loads lazily (see impl.read.primary_key)

        dvs = dv.DeletionVectorsMaintainer(core.file_io, core.paths, index_files, id_factory=core.env.new_id,
                                          bitmap64=core.options.deletion_vectors_bitmap64)
    schema, fields, columns = core.arrow_schema, list(core.schema.fields), list(core.schema.field_names)
    tracked = core.options.row_tracking
    if tracked:  # the rows keep their ids and sequence numbers, as physical columns
        schema, fields = with_row_tracking_fields(schema, fields)
        columns = [*columns, *ROW_TRACKING_COLUMNS]
    writer = RollingFileWriter(
        core.file_io, core.paths.bucket_dir(path, bucket), schema, fields,
        schema_id=core.schema.id, target_file_size=target, formats=o.write_formats,
        stats_mode=o.stats_mode, file_source=FileSource.COMPACT,
        name_factory=core.paths.layout.namer(core.env.new_id).data_file, clock_millis=core.env.clock_millis,
        file_index=core.options.file_index)
    try:
        for f in picked:
            fpath = core.paths.data_file_path(path, bucket, f.file_name, f.external_path)
            # files of older schemas are read by field id and rewritten under the current one
            data = read_data_file(core, core.file_io.read_bytes(fpath), fpath, f, columns)
            if tracked:
                data = fill_row_tracking(data, f)
            if dvs is not None:  # after the row ids are filled in by position
                keep = dv.keep_mask(dvs.vectors.get(f.file_name), 0, data.num_rows)
                data = data if keep is None else data.filter(pa.array(keep))
            writer.write(data.cast(schema))
        after = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    if tracked:
        after = compacted_row_tracking_files(after, picked, core.schema.field_names)
    added: tuple[IndexFileMeta, ...] = ()
    removed: tuple[IndexFileMeta, ...] = ()
    if dvs is not None:
        try:
            added, removed = drop_rewritten_vectors(dvs, picked)
        except BaseException:
            core.file_io.delete_quietly(p for f in after for p in data_file_paths(core.paths, path, bucket, f))
            raise
    return CommitMessage(partition, bucket, total_buckets, compact_before=tuple(picked), compact_after=tuple(after),
                         compact_new_index_files=added, compact_deleted_index_files=removed)


def compact_row_id_groups(core: TableCore, partition: bytes, path: str, bucket: int, total_buckets: int,
                          files: Sequence[DataFileMeta]) -> CommitMessage | None:
    """Data evolution (Paimon's DataEvolutionCompactTask): each row-id group of several files (a
    file and its column updates) becomes one file of every column, with the group's first row id
    and its files' sequence range, so a column update committed after the read still wins."""
    reader = TableRead(core)
    split = DataSplit(0, partition, bucket, total_buckets, path, tuple(files))
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    try:
        for group in row_id_groups(files):
            if len(group) < 2:
                continue
            merged = reader.read_row_id_group(split, group, core.schema.field_names)
            writer = RollingFileWriter(
                core.file_io, core.paths.bucket_dir(path, bucket), core.arrow_schema, core.schema.fields,
                schema_id=core.schema.id, target_file_size=NO_ROLLING, formats=core.options.write_formats,
                stats_mode=core.options.stats_mode, file_source=FileSource.APPEND,
                name_factory=core.paths.layout.namer(core.env.new_id).data_file, clock_millis=core.env.clock_millis,
                file_index=core.options.file_index)
            try:
                writer.write(merged.cast(core.arrow_schema))
                (meta,) = writer.prepare_commit()
            except BaseException:
                writer.abort()
                raise
            after.append(replace(meta, first_row_id=group[0].first_row_id,
                                 min_sequence_number=min(f.min_sequence_number for f in group),
                                 max_sequence_number=max(f.max_sequence_number for f in group)))
            before.extend(group)
    except BaseException:
        core.file_io.delete_quietly(p for f in after for p in data_file_paths(core.paths, path, bucket, f))
        raise
    if not after:
        return None
    return CommitMessage(partition, bucket, total_buckets, compact_before=tuple(before), compact_after=tuple(after))


def compact_table(core: TableCore, full: bool = False) -> CommitStats | None:
    """Compact every bucket of the latest snapshot; the CommitStats of the COMPACT snapshot, or None.

    Postpone-mode tables (``bucket`` = -2) compact as Paimon's postpone compaction does: every
    partition holding postponed rows gets them moved into real buckets (see
    :mod:`impl.write.postpone`); buckets of other partitions are left alone."""
    check_write(core.options.raw, core.identifier)  # a compaction rewrites files: the write rules hold
    latest = core.snapshot_manager.latest_snapshot()
    if latest is None:
        return None
    groups: dict[tuple[bytes, int], list] = {}
    for e in SnapshotReader(core).live_entries(latest):
        groups.setdefault((e.partition, e.bucket), []).append(e)
    if not groups:
        return None
    index = bucket_index_files(core, latest) if core.options.deletion_vectors else {}
    tasks: list[Callable[[], CommitMessage | list[CommitMessage] | None]]
    if core.bucket_mode is BucketMode.POSTPONE:
        entries = [e for es in groups.values() for e in es]
        tasks = [partial(compact_postponed_partition, core, t, full, index)
                 for t in plan_postpone(entries, core.options.postpone_default_bucket_num)]
    else:
        tasks = [partial(compact_bucket, core, p, b, es[0].total_buckets, [e.file for e in es], full,
                         index.get((p, b), []))
                 for (p, b), es in groups.items()]
    commit = TableCommit(core, f"compact-{core.env.new_id()}")
    messages: list[CommitMessage] = []
    failure: BaseException | None = None
    workers = max(1, min(len(tasks), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="paimon-compact-job") as pool:
        futures = [pool.submit(task) for task in tasks]
        for fu in futures:  # wait for all, so nothing is still writing when we clean up
            try:
                m = fu.result()
            except BaseException as e:  # noqa: BLE001 - re-raised below, after cleanup
                failure = failure or e
                continue
            if isinstance(m, list):
                messages.extend(m)
            elif m is not None:
                messages.append(m)
    if failure is not None:
        commit.abort(messages)  # nothing was committed: the rewritten files are unreferenced
        raise failure
    if not messages:
        return None
    return commit.commit(messages)  # aborts by itself on a conflict

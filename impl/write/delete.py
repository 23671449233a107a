"""Row-level DELETE of append tables, as one table operation both engines use.

>>> wb = table.new_batch_write_builder()                                    # doctest: +SKIP
>>> u, c = wb.new_update(), wb.new_commit()                                  # doctest: +SKIP
>>> c.commit(u.delete_by_predicate(wb_pred.less_than("id", 10)))           # doctest: +SKIP

Two steps, so an engine can do the first its own way:

1. *which rows*: :func:`find_deletions` reads the latest snapshot's live files (those whose
   statistics may match the predicate), one file at a time and only the predicate's columns,
   and returns the positions of the matching rows not deleted already, per file. Spark finds
   them in its own tasks with a Spark SQL condition (:mod:`impl.spark.dml`).
2. *how they go*: :func:`deletion_messages` turns positions read at one snapshot into
   CommitMessages, as Paimon's Spark DELETE writes them:

   - ``deletion-vectors.enabled`` tables: each bucket's vectors (those of the snapshot plus
     the new positions) as one new index file replacing the bucket's old ones. A commit that
     replaced those vectors or removed those files meanwhile makes this one fail
     (:class:`impl.errors.IndexFileConflictError` / :class:`impl.errors.FileNotLiveError`).
   - other append tables (copy-on-write): each touched file is rewritten without those rows
     (a file losing every row is only removed); the old file is deleted in the same commit, so
     a commit that removed it meanwhile (compaction, overwrite, another delete) makes this one
     fail (:class:`impl.errors.FileNotLiveError`).

Rows appended after the snapshot read are not deleted (snapshot isolation, as in Paimon).
Primary-key tables (their DELETE writes ``-D`` rows), row-tracking / data-evolution tables and
views with time travel are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa

from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta, FileSource
from impl.errors import CommitUsageError, InvalidPredicateError, UnsupportedTableFeatureError
from impl.fileindex.options import FileIndexSpec
from impl.manifest.records import IndexFileMeta
from impl.predicate.predicate import Predicate
from impl.read.scan import TableScan
from impl.read.table_read import read_data_file
from impl.store.core import TableCore, bucket_index_files
from impl.write.append_writer import RollingFileWriter
from impl.write.table_commit import TableCommit

_POS = "__paimon_delete_pos"


@dataclass(frozen=True, eq=False)
class FileDeletions:
    """The rows to delete of one data file, read at one snapshot: ``positions`` sorted, unique,
    within ``0 .. file.row_count``."""

    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta
    positions: np.ndarray

    @property
    def count(self) -> int:
        return int(len(self.positions))


@dataclass(frozen=True, eq=False)
class Deletions:
    """What :func:`find_deletions` found: the snapshot read (None: the table is empty) and the
    rows to delete per file (only files with at least one)."""

    snapshot_id: int | None
    files: tuple[FileDeletions, ...]

    @property
    def count(self) -> int:
        return sum(f.count for f in self.files)


def check_deletable(core: TableCore, op: str = "DELETE") -> None:
    """Refuse, by name, a table or view whose rows this module cannot delete."""
    o = core.options
    if core.is_primary_key_table:
        raise UnsupportedTableFeatureError(
            f"{op} of {core.identifier}: row-level deletes of primary-key tables are written as '-D' rows: "
            f"write them with new_write().write_arrow(rows, row_kinds=...) (or impl.spark.delete)")
    if o.data_evolution or o.row_tracking:
        raise UnsupportedTableFeatureError(f"{op} of {core.identifier}: row-level changes of row-tracking / "
                                           f"data-evolution tables are not implemented")
    if core.time_travel or o.incremental_between is not None:
        # the rows would be found in an old snapshot but deleted from the latest
        raise UnsupportedTableFeatureError(f"{op} of {core.identifier}: the view has time-travel or incremental "
                                           f"read options; delete through the table itself")


def find_deletions(core: TableCore, predicate: Predicate | None) -> Deletions:
    """The rows of the latest snapshot matching ``predicate`` (None: every row), per file.

    Files whose statistics or data-file index rule the predicate out are not read; the others
    are read one at a time, only the predicate's columns. A predicate naming no column of the
    table is refused (:class:`InvalidPredicateError`) before anything is read. A row whose
    predicate evaluates to null is kept, as SQL's WHERE keeps it."""
    check_deletable(core)
    columns: list[str] = []
    if predicate is not None:
        unknown = sorted(predicate.fields() - set(core.schema.field_names))
        if unknown:
            raise InvalidPredicateError(f"DELETE of {core.identifier}: the predicate names {unknown}, which are not "
                                        f"columns (columns: {core.schema.field_names})")
        columns = sorted(predicate.fields())
    plan = TableScan(core, predicate).plan()
    expr = None if predicate is None else predicate.to_arrow()
    found: list[FileDeletions] = []
    for split in plan.splits():
        vectors: Mapping[str, np.ndarray] = {}
        if split.index_files:
            vectors = _deletion_vectors().read_deletion_vectors(core.file_io, core.paths, split.index_files)
        for f in split.files:
            keep = _keep(vectors, f)
            if expr is None:
                positions = np.arange(f.row_count, dtype=np.int64)
                if keep is not None:
                    positions = positions[keep]
            else:
                path = core.paths.data_file_path(split.partition_path, split.bucket, f.file_name, f.external_path)
                t = read_data_file(core, core.file_io.read_bytes(path), path, f, columns)
                t = t.append_column(_POS, pa.array(np.arange(t.num_rows, dtype=np.int64)))
                if keep is not None:
                    t = t.filter(pa.array(keep))
                try:
                    positions = t.filter(expr).column(_POS).to_numpy()
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                    raise InvalidPredicateError(f"DELETE of {core.identifier}: the predicate {predicate} cannot be "
                                                f"evaluated on {f.file_name}: {e}") from e
            if len(positions):
                found.append(FileDeletions(split.partition, split.bucket, split.total_buckets, f,
                                           np.asarray(positions, dtype=np.int64)))
    return Deletions(plan.snapshot_id, tuple(found))


def deletion_messages(core: TableCore, deletions: Deletions) -> list[CommitMessage]:
    """CommitMessages deleting ``deletions`` (found at ``deletions.snapshot_id``): deletion
    vectors on ``deletion-vectors.enabled`` tables, else the touched files rewritten. On an
    error, what was written so far is deleted before it is raised."""
    check_deletable(core)
    if not deletions.files or deletions.snapshot_id is None:
        return []
    by_bucket: dict[tuple[bytes, int, int], list[FileDeletions]] = {}
    for d in deletions.files:
        if len(d.positions) and (int(d.positions.min()) < 0 or int(d.positions.max()) >= d.file.row_count):
            raise CommitUsageError(f"DELETE of {core.identifier}: a position to delete is outside file "
                                   f"{d.file.file_name} (0 .. {d.file.row_count - 1})")
        by_bucket.setdefault((d.partition, d.bucket, d.total_buckets), []).append(d)
    index = bucket_index_files(core, core.snapshot_manager.snapshot(deletions.snapshot_id))
    messages: list[CommitMessage] = []
    try:
        for (partition, bucket, total), files in sorted(by_bucket.items(), key=lambda kv: kv[0]):
            index_files = index.get((partition, bucket), ())
            if core.options.deletion_vectors:
                messages.append(_vector_message(core, partition, bucket, total, files, index_files))
            else:
                messages.append(_rewrite_message(core, partition, bucket, total, files, index_files))
    except BaseException:
        _discard(core, messages)
        raise
    return messages


def _vector_message(core: TableCore, partition: bytes, bucket: int, total: int, files: Sequence[FileDeletions],
                    index_files: Sequence[IndexFileMeta]) -> CommitMessage:
    m = _deletion_vectors().DeletionVectorsMaintainer(core.file_io, core.paths, index_files, id_factory=core.env.new_id,
                                  bitmap64=core.options.deletion_vectors_bitmap64)
    m.apply((), {d.file.file_name: d.positions.astype(np.uint32) for d in files})
    change = m.write()
    return CommitMessage(partition, bucket, total, new_index_files=change.added, deleted_index_files=change.removed)


def _rewrite_message(core: TableCore, partition: bytes, bucket: int, total: int, files: Sequence[FileDeletions],
                     index_files: Sequence[IndexFileMeta]) -> CommitMessage:
    """Copy-on-write: each file without its deleted rows (and without the rows vectors left by an
    earlier ``deletion-vectors.enabled`` = true delete), in files of ``target-file-size``."""
    path = core.partition_cache.path(partition)
    vectors: Mapping[str, np.ndarray] = \
        _deletion_vectors().read_deletion_vectors(core.file_io, core.paths, index_files) if index_files else {}
    o = core.options
    writer = RollingFileWriter(
        core.file_io, core.paths.bucket_dir(path, bucket), core.arrow_schema, core.schema.fields,
        schema_id=core.schema.id, target_file_size=o.target_file_size_for(False), formats=o.write_formats,
        stats_mode=o.stats_mode, file_source=FileSource.APPEND,
        name_factory=core.paths.layout.namer(core.env.new_id).data_file, clock_millis=core.env.clock_millis,
        file_index=FileIndexSpec.from_options(o.raw))
    try:
        for d in files:
            f = d.file
            keep = np.ones(f.row_count, dtype=bool)
            keep[d.positions] = False
            old = _keep(vectors, f)
            if old is not None:
                keep &= old
            if not keep.any():
                continue
            fpath = core.paths.data_file_path(path, bucket, f.file_name, f.external_path)
            # a file of an older schema is read by field id and rewritten under the current one
            data = read_data_file(core, core.file_io.read_bytes(fpath), fpath, f, core.schema.field_names)
            writer.write(data.filter(pa.array(keep)).cast(core.arrow_schema))
        new_files = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    return CommitMessage(partition, bucket, total, new_files=tuple(new_files),
                         deleted_files=tuple(d.file for d in files))


def _keep(vectors: Mapping[str, np.ndarray], f: DataFileMeta) -> np.ndarray | None:
    """The rows of ``f`` its deletion vector keeps (None: all)."""
    return _deletion_vectors().keep_mask(vectors[f.file_name], 0, f.row_count) if f.file_name in vectors else None


def _deletion_vectors():
    from impl.mergetree import deletion_vectors  # the merge tree loads lazily (see impl.read.primary_key)

    return deletion_vectors


def _discard(core: TableCore, messages: Sequence[CommitMessage]) -> None:
    TableCommit(core, "delete-abort").abort(messages)  # the one home of what an abort deletes


__all__ = ["Deletions", "FileDeletions", "check_deletable", "find_deletions", "deletion_messages"]

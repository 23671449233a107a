"""Primary-key tables: the bridge between the table layer and ``impl.mergetree``.

- writes: one :class:`impl.mergetree.MergeTreeWriter` per (partition, bucket), restored from
  the files that bucket holds in the latest snapshot;
- reads: merge-on-read of each bucket split (``merge_read``), or the raw change rows of an
  incremental split (``read_kv_files``, ordered by sequence number);
- compaction: :class:`PrimaryKeyBucketWriter` restored from a bucket's files (see
  :mod:`impl.maintenance.compact` for the dedicated compaction job).

``impl.mergetree`` is imported lazily, so append-only use never loads it.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta
from impl.manifest.records import IndexFileMeta
from impl.predicate.predicate import Predicate
from impl.read.scan import DataSplit, SplitKind
from impl.store.core import TableCore
from impl.store.schema import mergetree


def check_merge_input(core: TableCore, data: pa.Table, kinds: np.ndarray | None) -> None:
    """Raise what the merge engine would raise for these rows, before any writer sees them
    (so a rejected write_arrow buffers nothing in any bucket)."""
    if kinds is None or data.num_rows == 0:
        return
    spec = mergetree().MergeSpec.from_schema(core.schema, core.merge_tree_options)
    spec.prepare_input(data, pa.array(kinds, type=pa.int8()))


class PrimaryKeyBucketWriter:
    """The merge-tree writer of one (partition, bucket), behind the table write's writer interface."""

    def __init__(self, core: TableCore, partition: bytes, partition_path: str, bucket: int,
                 restored_files: Sequence[DataFileMeta], executor: Executor | None,
                 total_buckets: int | None = None, buffer_pool=None,
                 restored_index: Sequence[IndexFileMeta] = ()):
        """``buffer_pool``: the table write's shared ``write-buffer-size`` (a WriteBufferPool).
        ``restored_index``: the bucket's index files in the snapshot ``restored_files`` come
        from (its deletion vectors, on a ``deletion-vectors.enabled`` table)."""
        mt = mergetree()
        dv = None
        if core.options.deletion_vectors:
            dv = mt.DeletionVectorsMaintainer(core.file_io, core.paths, restored_index, id_factory=core.env.new_id,
                                             bitmap64=core.options.deletion_vectors_bitmap64)
            # Paimon Java's full compaction can leave a bucket's index file holding the vector
            # of a data file it compacted away (seen with 1.4.2; its reads ignore such vectors).
            # Carried on, it would make this writer's next index file name a file that is not
            # live, which the committer refuses (IndexFileConflictError): drop it on restore.
            live = {f.file_name for f in restored_files}
            stale = [name for name in dv.vectors if name not in live]
            if stale:
                dv.apply(stale, {})
        self.writer = mt.MergeTreeWriter(
            core.file_io, core.paths, core.schema, core.merge_tree_options, partition, partition_path,
            bucket, core.options.bucket if total_buckets is None else total_buckets, list(restored_files),
            compaction_executor=executor, stats_mode=core.options.stats_mode, buffer_pool=buffer_pool,
            deletion_vectors=dv, schemas=core.schema_manager, env=core.env,
            dictionary_choice=core.dictionary_choice)

    def write(self, data: pa.Table, kinds: np.ndarray | None) -> None:
        self.writer.write(data, None if kinds is None else pa.array(kinds, type=pa.int8()))

    def compact(self, full: bool) -> None:
        self.writer.compact(full)

    def flush_for_commit(self) -> None:
        self.writer.flush_for_commit()

    def run_queued_compaction(self) -> None:
        self.writer.run_queued_compaction()

    def prepare_commit(self, wait_compaction: bool) -> CommitMessage:
        return self.writer.prepare_commit(wait_compaction)

    def close(self) -> None:
        self.writer.close()


# ============================================================================ reads


def read_pk_split(core: TableCore, split: DataSplit, projection: Sequence[str], predicate: Predicate | None,
                  with_kind: bool) -> pa.Table:
    """Rows of one primary-key split: merged (DATA) or raw changes with ``_VALUE_KIND`` (DELTA / CHANGELOG)."""
    mt = mergetree()
    projection = list(projection)
    pred_fields = [f for f in core.schema.field_names
                   if predicate is not None and f in predicate.fields() and f not in projection]
    columns = projection + pred_fields
    expr = predicate.to_arrow() if predicate is not None else None
    if split.kind is SplitKind.DATA and core.options.deletion_vectors:
        dvs = mt.read_deletion_vectors(core.file_io, core.paths, split.index_files)
        out = mt.deletion_vector_read(core.file_io, core.paths, core.schema, split.partition_path, split.bucket,
                                      list(split.files), dvs, projection=columns, predicate=expr,
                                      schemas=core.schema_manager)
        return out.select(projection)
    if split.kind is SplitKind.DATA:
        out = mt.merge_read(core.file_io, core.paths, core.schema, core.merge_tree_options,
                            split.partition_path, split.bucket, list(split.files), projection=columns,
                            predicate=expr, schemas=core.schema_manager)
        return out.select(projection)
    kv = mt.read_kv_files(core.file_io, core.paths, core.schema, split.partition_path, split.bucket,
                          list(split.files), columns=[mt.SEQUENCE_NUMBER, mt.VALUE_KIND, *columns],
                          schemas=core.schema_manager)
    if kv.num_rows:
        kv = kv.take(pc.sort_indices(kv, sort_keys=[(mt.SEQUENCE_NUMBER, "ascending")]))
    if expr is not None:
        kv = kv.filter(expr)
    return kv.select(projection + ([mt.VALUE_KIND] if with_kind else []))


def iter_pk_data_split(core: TableCore, split: DataSplit, projection: Sequence[str],
                       predicate: Predicate | None) -> Iterator[pa.Table]:
    """The merged rows of one DATA split as a stream of tables in key order (bounded memory:
    about one batch per overlapping sorted run, never the whole bucket)."""
    mt = mergetree()
    projection = list(projection)
    pred_fields = [f for f in core.schema.field_names
                   if predicate is not None and f in predicate.fields() and f not in projection]
    expr = predicate.to_arrow() if predicate is not None else None
    if core.options.deletion_vectors:
        # no merge: a file at a time is already bounded
        yield read_pk_split(core, split, projection, predicate, False)
        return
    for out in mt.iter_merge_read(core.file_io, core.paths, core.schema, core.merge_tree_options,
                                  split.partition_path, split.bucket, list(split.files),
                                  projection=projection + pred_fields, predicate=expr,
                                  schemas=core.schema_manager):
        yield out.select(projection)

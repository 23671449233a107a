"""Postpone bucket mode (``bucket`` = -2, Paimon 1.1+): writes that leave bucket assignment to
a later compaction.

Facts from Apache Paimon Java 1.4 (``PostponeBucketFileStoreWrite``, ``PostponeBucketWriter``,
``DataTableBatchScan``, the Flink ``CompactAction`` / Spark ``SparkPostponeCompactProcedure``):

- writes land in bucket -2 (directory ``bucket-postpone``, manifest bucket and total buckets -2),
  one writer per partition, rows as they arrive: not sorted, not merged, every sequence number
  -1, level 0, file source APPEND; the files are Avro with ``metadata.stats-mode`` = none (key
  stats none too); their names are ``data-`` + ``-u-<commit user>-s-<write id>-w-`` + uuid +
  ``-<n>.avro`` (the write id is what Flink's compaction parses to keep one writer's files in
  order). Writers never restore earlier files.
- batch scans (and incremental ones) read real buckets only: postponed rows are invisible until
  compacted; streaming scans skip them only when a changelog producer is set.
- compaction, per partition holding postponed files: the bucket count is the partition's
  existing one (``totalBuckets`` of its real-bucket files), else ``postpone.default-bucket-num``;
  the postponed files are replayed in creation-time order without merging (row kinds kept) into
  merge-tree writers of the real buckets, restored from those buckets' files (new sequence
  numbers follow theirs, so the replayed rows win); one COMPACT snapshot removes the postponed
  files and adds the real-bucket files (every change in the compact part, as Paimon's
  ``BucketFiles`` folds them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from impl.bucket.routing import POSTPONE_BUCKET, compute_buckets, split_by_group
from impl.commit.messages import CommitMessage
from impl.data.types import DataField, DataType
from impl.datafile.meta import DataFileMeta, FileSource
from impl.errors import BucketCountChangedError
from impl.fs.paths import DATA_FILE_PREFIX, FileNamer
from impl.manifest.records import IndexFileMeta, ManifestEntry
from impl.options.values import StatsMode, StatsModeKind
from impl.options.write_formats import WriteFormats
from impl.read.primary_key import PrimaryKeyBucketWriter
from impl.store.core import TableCore, bucket_index_files
from impl.store.schema import mergetree

NO_STATS = StatsMode(StatsModeKind.NONE)
_KIND_COL = "__paimon_postpone_kind__"


# ============================================================================ rules


def writer_prefix(commit_user: str, write_id: int, data_prefix: str = DATA_FILE_PREFIX) -> str:
    """The name prefix every file of one postpone writer shares (Paimon's ``data-file.prefix``,
    ``data-`` by default, followed by ``-u-<user>-s-<write id>-w-``)."""
    return f"{data_prefix}-u-{commit_user}-s-{write_id}-w-"


def write_id_of(file_name: str) -> int:
    """The write id of a postponed file's name (Paimon's ``PostponeBucketFileStoreWrite.getWriteId``)."""
    try:
        rest = file_name.split("-s-", 1)[1]
        return int(rest[:rest.index("-")])
    except (IndexError, ValueError) as e:
        raise ValueError(f"data file name {file_name!r} is not a postpone writer's file name") from e


_AVRO_ROOTS = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR", "VARCHAR",
                         "BINARY", "VARBINARY", "DECIMAL", "DATE", "ARRAY", "MAP", "MULTISET", "ROW"})


def avro_can_hold(t: DataType) -> bool:
    """Whether Paimon's AvroSchemaConverter takes type ``t``: not TIMESTAMP(_LTZ) above 6 digits,
    not TIME above 3, not types it has no Avro schema for (VARIANT, ...); nested types by their parts."""
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return (t.precision if t.precision is not None else 6) <= 6
    if t.root == "TIME":
        return (t.precision or 0) <= 3
    if t.root not in _AVRO_ROOTS:
        return False
    return all(avro_can_hold(c.type if isinstance(c, DataField) else c) for c in t.children)


def postponed_file_options(options: Mapping[str, str], fields: Sequence[DataField]) -> tuple[Mapping[str, str], bool]:
    """(options, stats off) of a postpone writer's files: Avro without statistics, unless the
    schema has a type Avro cannot hold; then the table's own format and stats mode, as Paimon
    (``PostponeBucketFileStoreWrite`` ignores the converter's refusal)."""
    if all(avro_can_hold(f.type) for f in fields):
        return {**options, "file.format": "avro"}, True
    return options, False


def known_bucket_counts(entries: Iterable[ManifestEntry]) -> dict[bytes, int]:
    """Each partition's bucket count from its real-bucket files (Paimon's ``getKnownNumBuckets``)."""
    known: dict[bytes, int] = {}
    first: dict[bytes, str] = {}
    for e in entries:
        if e.bucket < 0 or e.total_buckets < 0:
            continue
        old = known.setdefault(e.partition, e.total_buckets)
        first.setdefault(e.partition, e.file.file_name)
        if old != e.total_buckets:  # Paimon: IllegalStateException "Partition ... has different totalBuckets"
            raise BucketCountChangedError(
                f"partition {e.partition.hex()} has live files of {old} buckets ({first[e.partition]}) and of "
                f"{e.total_buckets} ({e.file.file_name})", files=(first[e.partition], e.file.file_name))
    return known


def bucket_count_for(partition: bytes, known: Mapping[bytes, int], default_bucket_num: int) -> int:
    """The bucket count a compaction gives a partition's postponed rows."""
    return known.get(partition, default_bucket_num)


@dataclass(frozen=True)
class PostponeTask:
    """One partition's postpone compaction: its postponed files, its real buckets' files, and
    the bucket count its rows go to."""

    partition: bytes
    postponed: tuple[DataFileMeta, ...]
    real_files: Mapping[int, tuple[DataFileMeta, ...]]
    num_buckets: int


def plan_postpone(entries: Sequence[ManifestEntry], default_bucket_num: int) -> list[PostponeTask]:
    """The postpone compactions of a snapshot's live entries: one per partition holding
    postponed files (Paimon's compaction leaves the other partitions alone)."""
    known = known_bucket_counts(entries)
    postponed: dict[bytes, list[DataFileMeta]] = {}
    real: dict[bytes, dict[int, list[DataFileMeta]]] = {}
    for e in entries:
        if e.bucket == POSTPONE_BUCKET:
            postponed.setdefault(e.partition, []).append(e.file)
        elif e.bucket >= 0:
            real.setdefault(e.partition, {}).setdefault(e.bucket, []).append(e.file)
    return [PostponeTask(p, tuple(files), {b: tuple(fs) for b, fs in real.get(p, {}).items()},
                         bucket_count_for(p, known, default_bucket_num))
            for p, files in postponed.items()]


def replay_order(files: Sequence[DataFileMeta]) -> list[DataFileMeta]:
    """Postponed files in the order their rows were written: by creation time (stable, so one
    writer's files of the same millisecond keep their manifest order), as Paimon's
    ``PostponeBucketCompactSplitSource`` replays them."""
    return sorted(files, key=lambda f: f.creation_time_millis or 0)


def fold_into_compaction(m: CommitMessage) -> CommitMessage:
    """A real bucket's writer message with every change in the compact part (Paimon's
    ``BucketFiles.makeMessage``): new files become compaction outputs; a new file the same
    writer compacted away again is dropped from both sides (its file is deleted by the caller)."""
    new = {f.file_name: f for f in m.new_files}
    before = [f for f in m.compact_before if f.file_name not in new]
    for f in m.compact_before:
        new.pop(f.file_name, None)
    after = [*new.values(), *m.compact_after]
    return CommitMessage(m.partition, m.bucket, m.total_buckets, compact_before=tuple(before),
                         compact_after=tuple(after),
                         compact_changelog=(*m.changelog_files, *m.compact_changelog),
                         compact_new_index_files=(*m.new_index_files, *m.compact_new_index_files),
                         compact_deleted_index_files=(*m.deleted_index_files, *m.compact_deleted_index_files))


def dropped_new_files(m: CommitMessage) -> list[DataFileMeta]:
    """New files of ``m`` its own compaction replaced (not live after the fold, to delete)."""
    after = {f.file_name for f in m.compact_after}
    before = {f.file_name for f in m.compact_before}
    return [f for f in m.new_files if f.file_name in before and f.file_name not in after]


# ============================================================================ writing


class PostponeBucketWriter:
    """The writer of one partition's bucket -2: rows in arrival order into rolling Avro KV files."""

    def __init__(self, core: TableCore, partition: bytes, partition_path: str, commit_user: str, write_id: int):
        mt = mergetree()
        from impl.mergetree.file_writer import KVFileContext, RollingKVWriter  # the merge tree loads lazily

        self.core = core
        self.partition = partition
        self._layout = mt.KVLayout(core.schema, core.schema_manager)
        options, no_stats = postponed_file_options(core.options.raw, core.schema.fields)
        self._ctx = KVFileContext(
            file_io=core.file_io, bucket_dir=core.paths.bucket_dir(partition_path, POSTPONE_BUCKET),
            layout=self._layout, key_codec=mt.KeyCodec(self._layout.key_types), schema_id=core.schema.id,
            target_file_size=core.options.target_file_size_for(True), formats=WriteFormats.from_options(options),
            clock_millis=core.env.clock_millis, stats_mode=NO_STATS if no_stats else core.options.stats_mode,
            file_index=core.merge_tree_options.file_index,  # Paimon's KV writer factory indexes these files too
            thin_mode=core.merge_tree_options.data_file_thin_mode)
        if no_stats:
            self._ctx = replace(self._ctx, key_stats_mode=NO_STATS)
        layout = core.paths.layout
        self._namer = FileNamer(writer_prefix(commit_user, write_id, layout.data_prefix),
                                f".{layout.compression_infix}" if layout.compression_infix else "", core.env.new_id)
        self._rolling = RollingKVWriter
        self._writer: RollingKVWriter | None = None

    def write(self, data: pa.Table, kinds: np.ndarray | None) -> None:
        user = self._layout.user_table(data)
        row_kinds = self._layout.row_kinds(user, None if kinds is None else pa.array(kinds, type=pa.int8()),
                                           self.core.options.rowkind_field)
        kv = self._layout.to_kv(user, row_kinds, 0)
        seq = kv.schema.get_field_index(mergetree().SEQUENCE_NUMBER)
        # postponed rows carry no sequence number (KeyValue.UNKNOWN_SEQUENCE): the compaction
        # that assigns their bucket numbers them in replay order
        kv = kv.set_column(seq, kv.schema.field(seq), pa.array(np.full(kv.num_rows, -1, dtype=np.int64)))
        if self._writer is None:
            self._writer = self._rolling(self._ctx, self._namer.next, 0, FileSource.APPEND)
        self._writer.write(kv)

    def flush_for_commit(self) -> None:
        pass  # nothing compacts in bucket -2

    def run_queued_compaction(self) -> None:
        pass

    def prepare_commit(self, wait_compaction: bool) -> CommitMessage:
        files: list[DataFileMeta] = []
        if self._writer is not None:
            files = self._writer.close()
            self._writer = None
        return CommitMessage(self.partition, POSTPONE_BUCKET, POSTPONE_BUCKET, new_files=tuple(files))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.abort()
            self._writer = None


# ============================================================================ compaction


def compact_postponed_partition(core: TableCore, task: PostponeTask, full: bool,
                                index_files: Mapping[tuple[bytes, int], Sequence[IndexFileMeta]] | None = None
                                ) -> list[CommitMessage]:
    """Move one partition's postponed rows into ``task.num_buckets`` real buckets.

    The messages (all compact parts): bucket -2 loses the postponed files; each real bucket that
    got rows gains the files its merge-tree writer (restored from the bucket's files) wrote, and
    loses what that writer compacted. ``index_files``: the buckets' index files (deletion
    vectors) in the snapshot the task was planned from; None reads them from the latest snapshot.
    The new files exist on storage once this returns.
    """
    mt = mergetree()
    partition, postponed, real_files, num_buckets = task.partition, task.postponed, task.real_files, task.num_buckets
    if index_files is None and core.options.deletion_vectors:
        index_files = bucket_index_files(core, core.snapshot_manager.latest_snapshot())
    path = core.partition_cache.path(partition)
    layout = mt.KVLayout(core.schema, core.schema_manager)
    names = list(core.schema.field_names)
    keys = list(core.bucket_keys)
    key_types = [core.schema.field(k).type for k in keys]
    writers: dict[int, PrimaryKeyBucketWriter] = {}
    messages: list[CommitMessage] = []
    # one write-buffer-size for the partition's buckets (a batch job: it spills), as a TableWrite shares it
    options = core.merge_tree_options
    pool = mt.WriteBufferPool(options.write_buffer_size, mt.spill_config(options))
    try:
        for f in replay_order(postponed):
            kv = mt.read_kv_files(core.file_io, core.paths, core.schema, path, POSTPONE_BUCKET, [f],
                                  columns=[mt.VALUE_KIND, *names], schemas=layout.schemas)
            if kv.num_rows == 0:
                continue
            user = kv.select(names).append_column(_KIND_COL, kv.column(mt.VALUE_KIND).cast(pa.int8()))
            buckets = compute_buckets([user.column(k) for k in keys], key_types, num_buckets,
                                      core.options.bucket_function)
            for bucket, part in split_by_group(user, buckets):
                w = writers.get(bucket)
                if w is None:
                    w = PrimaryKeyBucketWriter(core, partition, path, bucket, list(real_files.get(bucket, ())), None,
                                               total_buckets=num_buckets, buffer_pool=pool,
                                               restored_index=(index_files or {}).get((partition, bucket), ()))
                    writers[bucket] = w
                w.write(part.drop_columns([_KIND_COL]), part.column(_KIND_COL).to_numpy())
        pool.spill_all()
        for bucket in sorted(writers):
            w = writers[bucket]
            if full:
                w.compact(True)
            m = w.prepare_commit(True)
            dropped = dropped_new_files(m)
            if dropped:
                core.file_io.delete_quietly([core.paths.data_file_path(path, bucket, d.file_name) for d in dropped])
            folded = fold_into_compaction(m)
            if not folded.is_empty():
                messages.append(folded)
    except BaseException:
        for m in messages:
            core.file_io.delete_quietly([core.paths.data_file_path(path, m.bucket, f.file_name)
                                         for f in m.written_files()])
        raise
    finally:
        for w in writers.values():
            w.close()
    removal = CommitMessage(partition, POSTPONE_BUCKET, POSTPONE_BUCKET, compact_before=tuple(postponed))
    return [removal, *messages]

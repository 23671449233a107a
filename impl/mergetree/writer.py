"""MergeTreeWriter: the writer of one (partition, bucket) of a primary-key table.

Rows get increasing sequence numbers and go into a write buffer bounded by
``write-buffer-size``, which all writers of one table write share (a :class:`WriteBufferPool`;
when it is full, the writer holding the most is flushed). A flush (buffer full, ``compact``, ``prepare_commit``) sorts the buffer,
merges it with the table's merge engine keeping retractions (level 0 is never the highest
level), and writes level-0 files rolling at ``target-file-size``, a piece at a time
(:func:`impl.mergetree.merge_engine.iter_merge_kv`, streamed to storage). With
``write-buffer-spillable`` a full buffer is spilled instead, as a merged sorted run on local
disk (:mod:`impl.mergetree.spill`), and the runs become level-0 files at the next flush; with
``changelog-producer=input`` it also writes the raw rows as changelog files, or, when the
flush was insert-only with no key written twice, copies each data file as a changelog file.
("Raw" means after the engine's input rules: rows ``ignore-delete`` drops are not in it, and
aggregation ``count`` columns hold the stored partial counts, 1 or 0.)

After a flush the universal compaction strategy may pick runs; the compaction then runs on
the executor (a background thread). While the number of sorted runs exceeds
``num-sorted-run.stop-trigger`` a flush waits for the running compaction, which bounds the
number of level-0 files. ``write-only=true`` never starts a compaction by itself (a dedicated
job calls :meth:`compact`).

``prepare_commit`` drains the changes since the last call into one CommitMessage:
new_files / changelog_files (flushed level-0 files) for the APPEND snapshot and
compact_before / compact_after / compact_changelog for the COMPACT snapshot. A compaction
input that was itself produced by an earlier, not yet drained compaction is an intermediate
file: it is dropped from compact_after and deleted, unless an upgrade shares its file name
with a file that is (or becomes) live (Paimon's MergeTreeWriter.updateCompactResult rule).
"""

from __future__ import annotations

import concurrent.futures
from concurrent.futures import Executor, Future
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa

from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta, FileSource
from impl.datafile.stats import DEFAULT_STATS_MODE, StatsModeLike
from impl.environment import PRODUCTION, Environment
from impl.errors import InvalidOptionError, WriterClosedError
from impl.fileindex.writer import collector_for, copy_index_file
from impl.format.dictionary_choice import DictionaryChoice
from impl.format.formats import named_for
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.mergetree.compact_strategy import UniversalCompaction, is_useful, pick_full_compaction
from impl.mergetree.compact_task import ChangelogContext, CompactionTask, CompactResult, DvContext, FirstRowContext
from impl.mergetree.deletion_vectors import DeletionVectorsMaintainer
from impl.mergetree.file_writer import KVFileContext, RollingKVWriter, write_kv_files
from impl.mergetree.kv import VALUE_KIND, KeyCodec, KVLayout
from impl.mergetree.levels import Levels
from impl.mergetree.lookup import LookupLevels
from impl.mergetree.memory import MERGE_BUFFER_BYTES, release_after
from impl.mergetree.merge_engine import MergeSpec, iter_merge_kv, merge_sorted, sort_kv
from impl.mergetree.options import (
    COMPARING_CHANGELOG_PRODUCERS,
    ChangelogProducer,
    MergeEngine,
    MergeTreeOptions,
    lookup_write_problem,
)
from impl.mergetree.read import iter_merged_runs, streamable_keys
from impl.mergetree.spill import SpillConfig, SpillDirectory
from impl.schema.records import TableSchema

# Bytes per row of the writer's own columns (_SEQUENCE_NUMBER int64 + _VALUE_KIND int8).
_SYSTEM_BYTES_PER_ROW = 9
# Bytes per row a flush or spill takes to sort the buffer besides the key copy: the sort order
# and the picked rows' indices (int64 each).
_SORT_BYTES_PER_ROW = 16


class WriteBufferPool:
    """``write-buffer-size`` shared by the merge-tree writers of one table write.

    Paimon gives all writers of a task one memory pool of ``write-buffer-size``; when a writer
    needs memory and the pool is full, the writer holding the most is flushed (preempted). A
    buffer per writer would let memory grow with the number of buckets and partitions written
    (4 buckets x 256 MB by default), so the writers of a TableWrite share this pool.
    """

    def __init__(self, size: int, spill: SpillConfig | None = None):
        """``spill``: with ``write-buffer-spillable``, how the pool's writers spill sorted runs
        to local disk when preempted (None: a preempted writer writes level-0 files)."""
        if size <= 0:
            raise ValueError(f"write buffer pool size must be > 0, got {size}")
        self.size = float(size)
        self.spill = spill
        self._writers: dict[int, "MergeTreeWriter"] = {}

    def register(self, writer: "MergeTreeWriter") -> None:
        self._writers[id(writer)] = writer

    def unregister(self, writer: "MergeTreeWriter") -> None:
        self._writers.pop(id(writer), None)

    def used(self) -> float:
        """Estimated bytes buffered by all writers of the pool."""
        return sum(w.buffered_bytes for w in self._writers.values())

    def any_spilled(self) -> bool:
        """Whether a writer of the pool holds sorted runs spilled to disk."""
        return any(w.spilled_runs for w in self._writers.values())

    def spill_all(self) -> None:
        """Before a commit: if any writer spilled, spill every writer's buffer too.

        The commit then merges one writer's runs at a time while no other writer still holds
        its buffer, so the merge adds to an empty pool, not to a full one. Writes that never
        filled the pool are left alone (their buffers go straight to level-0 files).
        """
        writers = list(self._writers.values())
        if not self.any_spilled():
            return
        # smallest first: the memory a spill needs besides the buffers is about its own buffer's
        # size, so the largest goes when the others have been freed
        for w in sorted(writers, key=lambda w: w.buffered_bytes):
            w.spill_buffer()

    def flush_largest(self) -> bool:
        """Flush (or spill) the writer holding the largest buffer; False if every buffer is empty."""
        holders = [w for w in self._writers.values() if w.buffered_rows]
        if not holders:
            return False
        max(holders, key=lambda w: w.buffered_bytes).flush_buffer()
        return True


# A flush merges and writes its buffer in pieces of at most this many bytes of rows, and of
# at least the minimum; in between, an eighth of the write buffer: a piece (and its encoding)
# is what a flush holds besides the buffers, so it follows write-buffer-size.
FLUSH_PIECE_BYTES = 32 * 1024 * 1024
_MIN_FLUSH_PIECE_BYTES = 4 * 1024 * 1024
_MAX_PIECE_ROWS = 1 << 20  # pyarrow's default row group size: a piece is at most one row group
SPILL_PIECE_BYTES = 8 * 1024 * 1024  # pieces of a buffer being spilled
_COMBINE_ROWS = 8192  # runs of buffered chunks smaller than this are combined before a flush sorts them


def flush_piece_bytes(write_buffer_bytes: float) -> float:
    """Bytes of buffered rows per piece of a flush under a write buffer of ``write_buffer_bytes``.

    >>> flush_piece_bytes(64 * 2**20) / 2**20, flush_piece_bytes(256 * 2**20) / 2**20, flush_piece_bytes(2**20) / 2**20
    (8.0, 32.0, 4.0)
    """
    return min(max(write_buffer_bytes / 8, _MIN_FLUSH_PIECE_BYTES), FLUSH_PIECE_BYTES)


def flush_chunk_rows(buffered_bytes: float, buffered_rows: int, piece_bytes: float = FLUSH_PIECE_BYTES) -> int:
    """Rows per piece of a flush: about ``piece_bytes`` of buffered rows."""
    row_bytes = buffered_bytes / buffered_rows if buffered_rows else 1.0
    return int(min(max(piece_bytes / max(row_bytes, 1.0), 4096), _MAX_PIECE_ROWS))


def rechunk(tables: list[pa.Table], rows: int) -> list[pa.Table]:
    """``tables`` (emptied as it goes) with runs of small tables combined into ~``rows``-row ones.

    Many small writes leave many small chunks, which make sorting and taking slow; combining
    them a run at a time copies at most one run more than the buffer, not the whole buffer.
    """
    out: list[pa.Table] = []
    run: list[pa.Table] = []
    run_rows = 0

    def close_run() -> None:
        nonlocal run, run_rows
        if run:
            out.append(run[0] if len(run) == 1 else pa.concat_tables(run).combine_chunks())
        run, run_rows = [], 0

    tables.reverse()
    while tables:
        t = tables.pop()
        if t.num_rows >= rows:
            close_run()
            out.append(t)
            continue
        run.append(t)
        run_rows += t.num_rows
        if run_rows >= rows:
            close_run()
    close_run()
    return out


def spill_config(options: MergeTreeOptions, directory: str | None = None) -> SpillConfig:
    """The spill settings of ``options`` (``directory``: where spill files go, None: system temp)."""
    runs = options.max_spilled_runs
    # The runs are merged with the bounded merge, which holds one spilled batch per run: the
    # batches share its buffer (sort-spill-buffer-size caps it, as Paimon's spilled merge).
    merge_bytes = min(options.sort_spill_buffer_size, MERGE_BUFFER_BYTES)
    return SpillConfig(max_runs=runs, batch_bytes=max(merge_bytes // runs, 1),
                       compression=options.spill_compression, zstd_level=options.spill_compression_zstd_level,
                       max_disk_bytes=options.spill_max_disk_size, directory=directory)


class InlineExecutor(Executor):
    """Runs each submitted task at once, on the submitting thread: compaction without a
    background thread (a synchronous mode for deterministic simulation and debugging).

    >>> InlineExecutor().submit(sum, [1, 2]).result()
    3
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - delivered through the future, as a pool would
            future.set_exception(e)
        return future


class MergeTreeWriter:
    """LSM writer of one (partition, bucket): write buffer, level-0 flushes, background compaction.

    ``stats_mode`` is the table's ``metadata.stats-mode``, which the value statistics of every
    file this writer produces follow (it is a table option, not a merge-tree one).
    """

    def __init__(self, file_io: FileIO, paths: TablePaths, schema: TableSchema, options: MergeTreeOptions,
                 partition: bytes, partition_path: str, bucket: int, total_buckets: int,
                 restored_files: Sequence[DataFileMeta],
                 compaction_executor: Executor | None = None, stats_mode: StatsModeLike = DEFAULT_STATS_MODE,
                 buffer_pool: WriteBufferPool | None = None,
                 deletion_vectors: DeletionVectorsMaintainer | None = None, schemas=None,
                 env: Environment = PRODUCTION, dictionary_choice: DictionaryChoice | None = None):
        """``buffer_pool``: the ``write-buffer-size`` shared with other writers (default: a pool of
        this writer alone). ``deletion_vectors``: the bucket's deletion vectors (restored from
        its index files) when the table has ``deletion-vectors.enabled``: compaction then
        looks keys up and marks superseded rows instead of leaving them to the read's merge.
        ``schemas`` (a SchemaManager) lets compaction read restored files written under older
        schemas by field id; what it writes is under ``schema``. ``env``: the clock of file
        creation times and the ids of file names. ``dictionary_choice``: the table's Parquet
        dictionary-encoding choice, shared by its writers (default: this writer's own)."""
        if bucket < 0:
            raise ValueError(f"bucket must be >= 0, got {bucket}")
        self.file_io = file_io
        self.paths = paths
        self.schema = schema
        self.options = options
        self.partition = bytes(partition)
        self.partition_path = partition_path
        self.bucket = bucket
        self.total_buckets = total_buckets
        self._layout = KVLayout(schema, schemas)
        self._spec = MergeSpec.from_schema(schema, options)
        self._codec = KeyCodec(self._layout.key_types)
        self._ctx = KVFileContext(
            file_io=file_io,
            bucket_dir=paths.bucket_dir(partition_path, bucket),
            layout=self._layout,
            key_codec=self._codec,
            schema_id=schema.id,
            target_file_size=options.target_file_size,
            formats=options.write_formats,
            stats_mode=stats_mode,
            clock_millis=env.clock_millis,
            file_index=options.file_index,
            thin_mode=options.data_file_thin_mode,
            dictionary_choice=dictionary_choice or DictionaryChoice(),
        )
        collector_for(options.file_index, schema.fields)  # refuse an index Paimon cannot write before any file is opened
        self._namer = paths.layout.namer(env.new_id)
        restored = list(restored_files)
        self._levels = Levels(self._codec, restored, options.num_levels)
        self._strategy = UniversalCompaction(options.max_size_amplification_percent, options.size_ratio,
                                             options.num_sorted_run_compaction_trigger)
        self._next_sequence = max((f.max_sequence_number for f in restored), default=-1) + 1
        self._dv = deletion_vectors
        problem = lookup_write_problem(options, deletion_vectors is not None)
        if problem:
            raise InvalidOptionError(problem)
        producer = options.changelog_producer
        self._changelog_producer = producer if producer in COMPARING_CHANGELOG_PRODUCERS else None
        # Lookup (deletion vectors, the lookup changelog producer, or the first-row engine: Paimon's
        # CoreOptions.needLookup) forces level 0 up after each flush, and prepare_commit waits for
        # it (Paimon's lookup-wait, default true): a batch read of such a table skips level 0.
        self._first_row = self._spec.engine is MergeEngine.FIRST_ROW
        self._force_level0 = (deletion_vectors is not None or producer is ChangelogProducer.LOOKUP
                              or self._first_row)
        # engines that merge a key's rows need its looked-up row itself (Paimon's LookupMergeFunction)
        self._merge_old = deletion_vectors is not None and (
            self._spec.engine is not MergeEngine.DEDUPLICATE or bool(self._spec.sequence_fields))
        self._lookup = (LookupLevels(file_io, self._ctx.bucket_dir, self._layout, self._codec,
                                     with_values=self._merge_old)
                        if deletion_vectors is not None or self._first_row else None)

        self._buffer: list[pa.Table] = []
        self._buffer_bytes = 0.0
        self._buffer_rows = 0
        self._pool = buffer_pool if buffer_pool is not None else WriteBufferPool(
            options.write_buffer_size, spill_config(options) if options.write_buffer_spillable else None)
        self._pool.register(self)
        # changelog-producer=input needs a flush's raw rows; float keys cannot be merged in bounds
        can_spill = (self._pool.spill is not None and options.changelog_producer != "input"
                     and streamable_keys(self._layout))
        self._spill = SpillDirectory(self._pool.spill) if can_spill and self._pool.spill is not None else None

        # ordered sets (dict keys) of what the next prepare_commit hands out
        self._new_files: dict[DataFileMeta, None] = {}
        self._new_changelog: dict[DataFileMeta, None] = {}
        self._compact_before: dict[str, DataFileMeta] = {}
        self._compact_after: dict[DataFileMeta, None] = {}
        self._compact_changelog: dict[DataFileMeta, None] = {}

        self._task: CompactionTask | None = None
        self._future: Future | None = None
        self._flushed_for_commit = False  # flush_for_commit ran; prepare_commit only syncs
        self._executor = compaction_executor
        self._own_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    # ------------------------------------------------------------------ introspection

    @property
    def levels(self) -> Levels:
        """The current LSM levels (for inspection; the writer owns and mutates them)."""
        return self._levels

    @property
    def next_sequence_number(self) -> int:
        return self._next_sequence

    @property
    def buffered_rows(self) -> int:
        return self._buffer_rows

    @property
    def buffered_bytes(self) -> float:
        """Estimated bytes of the buffered rows (what counts against ``write-buffer-size``)."""
        return self._buffer_bytes

    @property
    def spilled_runs(self) -> int:
        """Sorted runs spilled to local disk and not yet merged into level-0 files."""
        return len(self._spill.runs) if self._spill is not None else 0

    @property
    def spill_directory(self) -> str | None:
        """This writer's spill directory, once it spilled (for inspection)."""
        return self._spill.path if self._spill is not None else None

    def spill_buffer(self) -> None:
        """Spill the buffered rows as a sorted run now, if this writer spills (else nothing):
        they are merged with the other runs at the next flush."""
        self._check_open()
        if self._buffer and self._spill is not None:
            self._spill_buffer()

    def flush_buffer(self) -> None:
        """Free the buffer now (the buffer pool preempting this writer): spill it as a sorted run
        when spilling, merging the runs into level-0 files once there are enough; else flush it
        to level-0 files."""
        self._check_open()
        if not self._buffer:
            return
        if self._spill is None:
            self._flush(False, False)
            return
        spilled_bytes = self._buffer_bytes
        self._spill_buffer()
        release_after(spilled_bytes)
        if self._spill.full():
            self._flush(False, False)

    @property
    def is_compacting(self) -> bool:
        return self._future is not None

    # ------------------------------------------------------------------ writing

    def write(self, data: pa.Table | pa.RecordBatch, row_kinds: pa.Array | None = None) -> None:
        """Buffer rows (user columns in schema order); ``row_kinds`` int8 0..3, else ``rowkind.field``, else +I.

        Raises SchemaMismatchError for rows that do not fit the schema and MergeEngineError for
        retractions the merge engine cannot apply; nothing is buffered in either case.
        """
        self._check_open()
        user = self._layout.user_table(data)
        kinds = self._layout.row_kinds(user, row_kinds, self.options.rowkind_field)
        user, kinds = self._spec.prepare_input(user, kinds)
        n = user.num_rows
        if n == 0:
            return
        kv = self._layout.to_kv(user, kinds, self._next_sequence)
        self._next_sequence += n
        self._buffer_add(kv, user)

    def _buffer_add(self, kv: pa.Table, user: pa.Table) -> None:
        n = kv.num_rows
        pool = self._pool
        # The _KEY_ columns share the user key columns' buffers, so count user data once. A
        # row also costs what sorting it takes when the buffer is flushed or spilled: its sort
        # index, its key in sorted order, the picked index (Paimon's sort buffer keeps its index
        # in the same memory). Counting it keeps the flush's peak inside write-buffer-size.
        key_bytes = sum(user.column(k).nbytes for k in self._layout.key_names)
        row_bytes = max((user.nbytes + key_bytes + (_SYSTEM_BYTES_PER_ROW + _SORT_BYTES_PER_ROW) * n) / n, 1.0)
        pos = 0
        while pos < n:
            space = pool.size - pool.used()
            rows = int(space // row_bytes)
            if rows <= 0:
                if pool.flush_largest():
                    continue
                rows = 1  # a single row larger than the whole buffer still has to go somewhere
            take = min(rows, n - pos)
            self._buffer.append(kv.slice(pos, take))
            self._buffer_bytes += take * row_bytes
            self._buffer_rows += take
            pos += take
            if pos < n or pool.used() >= pool.size:
                pool.flush_largest()

    def _flush(self, wait_for_compaction: bool, full_compaction: bool, explicit: bool = False) -> None:
        """Flush the buffer (if any), sync a finished compaction, maybe start a new one."""
        self._flushed_for_commit = False
        if self._buffer or self.spilled_runs:
            if self._levels.number_of_sorted_runs() > self.options.num_sorted_run_stop_trigger:
                wait_for_compaction = True
            # merging spilled runs is a large flush whatever the buffer held
            freed = self._buffer_bytes if not self.spilled_runs else float("inf")
            self._flush_buffer()
            release_after(freed)
        self._try_sync(wait_for_compaction)
        self._trigger_compaction(full_compaction, explicit)

    def _take_buffer(self) -> tuple[pa.Table, int, float]:
        """The buffer as one (chunked) table, its rows per merge piece and bytes per row; emptied."""
        buffer, self._buffer = self._buffer, []
        buffered_bytes, buffered_rows = self._buffer_bytes, self._buffer_rows
        self._buffer_bytes, self._buffer_rows = 0.0, 0
        chunk_rows = flush_chunk_rows(buffered_bytes, buffered_rows, flush_piece_bytes(self._pool.size))
        row_bytes = buffered_bytes / buffered_rows if buffered_rows else 1.0
        # only runs of tiny chunks are combined: a copy of the whole buffer would double it
        return pa.concat_tables(rechunk(buffer, min(chunk_rows, _COMBINE_ROWS))), chunk_rows, row_bytes

    def _spill_buffer(self) -> None:
        """Merge the buffer (as a level-0 flush would) and spill it as a sorted run."""
        assert self._spill is not None
        kv, _, row_bytes = self._take_buffer()
        # smaller pieces than a flush's: they only feed IPC batches, not Parquet row groups
        chunk_rows = max(int(SPILL_PIECE_BYTES / max(row_bytes, 1.0)), 4096)
        self._spill.spill(iter_merge_kv(kv, self._spec, False, chunk_rows),
                          self._layout.schema_for(self._layout.all_columns), row_bytes)

    def _flush_spilled(self) -> None:
        """Merge the spilled runs and the buffer into level-0 files rolling at target-file-size,
        a batch per run at a time; the spill files are deleted whatever happens."""
        assert self._spill is not None
        try:
            if self._buffer:
                self._spill_buffer()
        except BaseException:
            self._spill.delete(self._spill.take_runs())
            raise
        runs = self._spill.take_runs()
        writer = RollingKVWriter(self._ctx, self._namer.data_file, 0, FileSource.APPEND)
        try:
            if len(runs) == 1:
                merged: Iterable[pa.Table] = runs[0].batches()  # already one merged run
            else:
                merged = iter_merged_runs(self.file_io, self._ctx.bucket_dir, self._layout, self._spec, [],
                                          self._layout.all_columns, False, run_streams=[r.batches() for r in runs],
                                          release_pages=True)
            for piece in merged:
                writer.write(piece)
            files = writer.close()
        except BaseException:
            writer.abort()
            raise
        finally:
            self._spill.delete(runs)
        self._add_level0(files, [])

    def _flush_buffer(self) -> None:
        if self.spilled_runs:
            self._flush_spilled()
            return
        if self.options.changelog_producer != "input":
            # Merged and written a piece at a time: the flush peaks at the buffer plus one
            # piece (and one encoded row group), not at twice the buffer.
            kv, chunk_rows, _ = self._take_buffer()
            writer = RollingKVWriter(self._ctx, self._namer.data_file, 0, FileSource.APPEND)
            try:
                for piece in iter_merge_kv(kv, self._spec, False, chunk_rows):
                    writer.write(piece)
                files = writer.close()
            except BaseException:
                writer.abort()
                raise
            self._add_level0(files, [])
            return
        buffer, self._buffer = self._buffer, []
        self._buffer_bytes, self._buffer_rows = 0.0, 0
        # many small writes leave many chunks; sorting and taking are faster on one
        kv = buffer[0] if len(buffer) == 1 else pa.concat_tables(buffer).combine_chunks()
        del buffer
        raw = sort_kv(kv, self._spec)  # the changelog holds every input row, in key order
        del kv
        merged = merge_sorted(raw, self._spec, drop_delete=False)
        kinds = raw.column(VALUE_KIND).to_numpy()
        copy_as_changelog = (self._lone_row_merges_to_itself() and merged.num_rows == raw.num_rows
                             and not np.any(kinds))
        data = write_kv_files(self._ctx, merged, self._namer.data_file, 0, FileSource.APPEND,
                              keep_bytes=copy_as_changelog)
        changelog: list[DataFileMeta] = []
        try:
            if copy_as_changelog:
                # Insert-only and no key twice: the data file holds exactly the input rows.
                for meta in data.results:
                    name = named_for(self._namer.changelog_file(), self._ctx.format_of(0))
                    changelog.append(copy_index_file(self.file_io, self._ctx.bucket_dir, meta.rename(name), meta))
                    self.file_io.write_bytes(self._ctx.path(name), data.file_bytes[meta.file_name])
            else:
                changelog = write_kv_files(self._ctx, raw, self._namer.changelog_file, 0, FileSource.APPEND).results
        except BaseException:
            self.file_io.delete_quietly([self._ctx.path(n) for f in (*data.results, *changelog)
                                         for n in (f.file_name, *f.extra_files)])
            raise
        self._add_level0(data.results, changelog)

    def _add_level0(self, files: Sequence[DataFileMeta], changelog: Sequence[DataFileMeta]) -> None:
        for meta in files:
            self._new_files[meta] = None
            self._levels.add_level0_file(meta)
        for meta in changelog:
            self._new_changelog[meta] = None

    def _lone_row_merges_to_itself(self) -> bool:
        """True if merging a single +I row returns it unchanged (so a data file of unique inserts
        equals its input). Not for aggregation (listagg drops blanks) nor sequence groups (a row
        with a null group sequence loses the group's fields)."""
        engine = self._spec.engine
        return engine in ("deduplicate", "first-row") or (engine == "partial-update" and not self._spec.sequence_groups)

    # ------------------------------------------------------------------ compaction

    def compact(self, full: bool) -> None:
        """Flush, wait for the running compaction, then start a full or strategy-picked one.

        Works in write-only mode too (that is how a dedicated compaction job compacts). The
        new compaction runs in the background; ``prepare_commit(True)`` waits for it.
        """
        self._check_open()
        self._flush(True, full, explicit=True)

    def _executor_for_compaction(self) -> Executor:
        if self._executor is not None:
            return self._executor
        if self._own_executor is None:
            self._own_executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"compact-bucket-{self.bucket}")
        return self._own_executor

    def _trigger_compaction(self, full: bool, explicit: bool) -> None:
        if self.options.write_only and not explicit:
            return
        if full:
            self._try_sync(True)
            unit = pick_full_compaction(self._levels.num_levels, self._levels.level_sorted_runs())
        else:
            if self._future is not None:
                return
            runs = self._levels.level_sorted_runs()
            unit = self._strategy.pick(self._levels.num_levels, runs)
            if unit is None and self._force_level0:
                # lookup compaction: level 0 always goes up (Paimon's ForceUpLevel0Compaction)
                unit = self._strategy.force_pick_level0(self._levels.num_levels, runs)
        if not is_useful(unit):
            return
        # Deletes can go only when nothing older than the output lies below it -- or, with
        # deletion vectors, always: the older rows are marked deleted instead.
        drop_delete = unit.output_level != 0 and (
            unit.output_level >= self._levels.non_empty_highest_level() or self._dv is not None)
        dv = first_row = None
        if self._lookup is not None:
            picked = {f.file_name for f in unit.files}
            targets = tuple(f for f in self._levels.all_files() if f.level >= 1 and f.file_name not in picked)
            if self._dv is not None:
                dv = DvContext(self._dv.of(picked), self._lookup, targets,
                               self._dv.of(f.file_name for f in targets) if self._merge_old else {}, self._merge_old)
            if self._first_row:
                first_row = FirstRowContext(self._lookup, targets)
        changelog = None
        if self._changelog_producer is not None:
            upper = tuple(f for f in self._levels.all_files() if f.level >= 1)
            vectors = self._dv.of(f.file_name for f in upper) if self._dv is not None else {}
            changelog = ChangelogContext(self._changelog_producer, upper, vectors)
        task = CompactionTask(self._ctx, self._namer, self._spec, unit.files, unit.output_level,
                              self._levels.max_level, self.options.compaction_file_size, drop_delete, dv, changelog,
                              first_row)
        self._future = self._executor_for_compaction().submit(task.run)
        self._task = task

    def run_queued_compaction(self) -> None:
        """Run this writer's compaction on the calling thread if it is still queued for the
        compaction executor (not started); the next sync takes its result as it would have."""
        task, future = self._task, self._future
        if task is None or future is None or not future.cancel():
            return
        inline: Future = Future()
        try:
            inline.set_result(task.run())
        except BaseException as e:  # noqa: BLE001 - handed to the sync, as the executor would have
            inline.set_exception(e)
        self._future = inline

    def _try_sync(self, blocking: bool) -> None:
        """Take the result of the running compaction if it finished (or wait for it if ``blocking``)."""
        task, future = self._task, self._future
        if task is None or future is None:
            return
        if not blocking and not future.done():
            return
        self._task, self._future = None, None
        result: CompactResult = future.result()  # a failed task already deleted its own files
        try:
            self._levels.update(result.before, result.after)
        except BaseException:
            task.delete_outputs()
            raise
        if self._lookup is not None:
            removed = {f.file_name for f in result.before} - {f.file_name for f in result.after}
            if self._dv is not None:
                self._dv.apply(removed, result.deletions)
            self._lookup.forget(list(removed))
        self._update_compact_result(result)

    def _update_compact_result(self, result: CompactResult) -> None:
        after_names = {f.file_name for f in result.after}
        for f in result.before:
            if f in self._compact_after:
                # An output of a compaction not yet handed out: an intermediate file nobody will
                # reference. Keep the physical file if an upgrade shares its name with a file a
                # snapshot references (upgraded from a live file, or upgraded again now).
                del self._compact_after[f]
                if f.file_name not in self._compact_before and f.file_name not in after_names:
                    self.file_io.delete_quietly([self._ctx.path(n) for n in (f.file_name, *f.extra_files)])
            else:
                self._compact_before[f.file_name] = f
        for f in result.after:
            self._compact_after[f] = None
        for f in result.changelog:
            self._compact_changelog[f] = None

    # ------------------------------------------------------------------ commit

    def flush_for_commit(self) -> None:
        """The first half of a waiting ``prepare_commit``: flush and start the compaction the
        flush calls for, without waiting for it; the next ``prepare_commit`` then only waits
        and drains. A table write calls this on all its writers first, so one bucket's
        compaction runs while the next bucket flushes, instead of each bucket waiting for its
        own compaction before the next one flushes.

        Each writer still does Paimon's flush, sync, trigger, sync in that order, so what is
        written is the same. Skipped while a compaction runs: syncing it would mean waiting
        here, and ``prepare_commit`` does the whole sequence itself then.
        """
        self._check_open()
        if self._future is not None:
            return
        self._flush(False, self._commit_full_compaction())
        self._flushed_for_commit = True

    def _commit_full_compaction(self) -> bool:
        # changelog-producer full-compaction: every commit fully compacts (its changelog comes
        # from the compaction into the max level), as with full-compaction.delta-commits = 1
        return self._changelog_producer is ChangelogProducer.FULL_COMPACTION and not self.options.write_only

    def prepare_commit(self, wait_compaction: bool) -> CommitMessage:
        """Flush, sync compaction (waiting if asked or if too many runs piled up), drain the changes."""
        self._check_open()
        full = self._commit_full_compaction()
        if full or (self._force_level0 and not self.options.write_only):
            wait_compaction = True  # full-compaction producer; lookup-wait
        if not (self._flushed_for_commit and not self._buffer and not self.spilled_runs):
            self._flush(wait_compaction, full)
        # else flush_for_commit did the flush and the trigger (no flush since); only the sync is left
        self._flushed_for_commit = False
        if self._levels.number_of_sorted_runs() > self.options.num_sorted_run_stop_trigger + 1:
            wait_compaction = True
        self._try_sync(wait_compaction)
        return self._drain()

    def _drain(self) -> CommitMessage:
        # The deletion vectors are written once per commit, as Paimon does: one index file
        # holding every vector of the bucket replaces the previous ones, in the COMPACT
        # snapshot that also carries the compaction whose deletions they record.
        index = self._dv.write() if self._dv is not None else None
        msg = CommitMessage(
            partition=self.partition,
            bucket=self.bucket,
            total_buckets=self.total_buckets,
            new_files=tuple(self._new_files),
            changelog_files=tuple(self._new_changelog),
            compact_before=tuple(self._compact_before.values()),
            compact_after=tuple(self._compact_after),
            compact_changelog=tuple(self._compact_changelog),
            compact_new_index_files=index.added if index is not None else (),
            compact_deleted_index_files=index.removed if index is not None else (),
        )
        self._new_files.clear()
        self._new_changelog.clear()
        self._compact_before.clear()
        self._compact_after.clear()
        self._compact_changelog.clear()
        return msg

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop background work and delete every file not handed out in a CommitMessage.

        A running compaction is cancelled and its outputs deleted; buffered rows are dropped.
        Files already drained by ``prepare_commit`` are left alone (committing or aborting
        them is the committer's job). Upgraded files sharing a name with a live file are kept.
        """
        if self._closed:
            return
        self._closed = True
        if self._spill is not None:
            self._spill.clear()  # local temp files first: the storage calls below may raise
        task, future = self._task, self._future
        self._task, self._future = None, None
        try:
            if task is not None and future is not None:
                task.cancel()
                future.cancel()
                try:
                    future.result()
                except BaseException:  # noqa: BLE001 - a cancelled or failed compaction is expected here
                    pass
                task.delete_outputs()
        finally:
            doomed = [n for f in self._new_files for n in (f.file_name, *f.extra_files)]
            doomed += [n for f in self._new_changelog for n in (f.file_name, *f.extra_files)]
            doomed += [n for f in self._compact_after if f.file_name not in self._compact_before
                       for n in (f.file_name, *f.extra_files)]
            doomed += [n for f in self._compact_changelog for n in (f.file_name, *f.extra_files)]
            self.file_io.delete_quietly([self._ctx.path(n) for n in dict.fromkeys(doomed)])
            self._new_files.clear()
            self._new_changelog.clear()
            self._compact_before.clear()
            self._compact_after.clear()
            self._compact_changelog.clear()
            self._buffer, self._buffer_bytes, self._buffer_rows = [], 0.0, 0
            self._pool.unregister(self)
            if self._own_executor is not None:
                self._own_executor.shutdown(wait=True)
                self._own_executor = None

    def __enter__(self) -> "MergeTreeWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise WriterClosedError(
                f"writer of bucket {self.bucket} (partition {self.partition_path or '<none>'}) is closed")

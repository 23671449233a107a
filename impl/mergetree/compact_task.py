"""Running one compaction: plan upgrades and rewrites (pure), then execute them (I/O).

Planning follows Paimon's merge-tree compact task. The picked files are split into
key-disjoint sections (:func:`interval_partition`). A section of several runs must be
rewritten (merged). A section of one run is made of non-overlapping files: a file smaller
than the compaction file size is rewritten together with the pending candidates (so small
files get merged), a larger file is upgraded -- moved to the output level as metadata only --
after the pending candidates are rewritten (candidates before it must not be skipped, or key
order across the output would break). An upgrade into the max level of a file holding
deletes becomes a rewrite of that file, so the max level never keeps retractions.

With deletion vectors (``DvContext``) the task follows Paimon's lookup compaction: a level-0
file holding retractions (or of unknown delete count) is rewritten rather than upgraded, and
rewrites drop retractions at every output level (the writer passes ``drop_delete``), so levels
>= 1 hold no retraction; rewrites skip the rows the deletion vectors of their inputs delete;
and every key of a level-0 input is looked up in the level >= 1 files the compaction does not
touch (all older than its inputs), whose rows of those keys are then superseded: their
positions go into ``CompactResult.deletions``. Engines whose merge needs every row of a key
(partial-update, aggregation, or ``sequence.field``: ``DvContext.merge_old``) follow Paimon's
LookupMergeFunction: the key's current row found there (not deleted by its vector) joins the
merge of the key's section as one more sorted run, ordered by the engine as any older row (by
sequence number, or by the sequence field), so the output row is the key's merged value; its
position is marked deleted as above. Level-0 inputs are then always rewritten, never upgraded.

With the first-row engine (``FirstRowContext``, Paimon's FirstRowMergeFunctionWrapper), every
key of a level-0 input is looked up in the level >= 1 files the compaction does not touch; a key
found there already has its first row, so the compaction drops it from its output. Level-0
inputs are then rewritten, never upgraded (an upgrade could not drop rows), so levels >= 1 hold
at most one row per key and batch reads may skip level 0.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Mapping, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.datafile.meta import DataFileMeta, FileSource
from impl.fs.paths import DataFileNamer
from impl.mergetree.changelog import compaction_changelog
from impl.mergetree.file_writer import KVFileContext, RollingKVWriter
from impl.mergetree.interval_partition import interval_partition
from impl.mergetree.kv import KeyCodec
from impl.mergetree.levels import SortedRun
from impl.mergetree.lookup import LookupLevels
from impl.mergetree.memory import release_after
from impl.mergetree.merge_engine import MergeSpec, merge_kv
from impl.mergetree.read import iter_merged_runs, read_kv_tables, streamable_keys
from impl.options.values import ChangelogProducer


class CompactionCancelled(Exception):
    """The writer was closed while this compaction ran."""


@dataclass(frozen=True)
class CompactResult:
    """Files a compaction removed from the levels, and the files it added (same names for upgrades)."""

    before: tuple[DataFileMeta, ...] = ()
    after: tuple[DataFileMeta, ...] = ()
    changelog: tuple[DataFileMeta, ...] = ()
    # deletion-vector mode: row positions this compaction superseded, per untouched data file
    deletions: Mapping[str, np.ndarray] = field(default_factory=dict)

    def merge(self, other: "CompactResult") -> "CompactResult":
        return CompactResult(self.before + other.before, self.after + other.after, self.changelog + other.changelog,
                             {**self.deletions, **other.deletions})


@dataclass(frozen=True)
class ChangelogContext:
    """A compaction of a table with ``changelog-producer`` lookup or full-compaction: the
    producer, the level >= 1 files of the bucket at submission (lookup's previous versions) and
    their deletion vectors."""

    producer: ChangelogProducer
    upper_files: tuple[DataFileMeta, ...]
    vectors: Mapping[str, np.ndarray]


@dataclass(frozen=True)
class DvContext:
    """What a compaction of a deletion-vector table needs: the deletion vectors of its input
    files, the lookup structure, and the level >= 1 files it does not touch (lookup targets)."""

    input_vectors: Mapping[str, np.ndarray]
    lookup: LookupLevels
    targets: tuple[DataFileMeta, ...]
    target_vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    merge_old: bool = False  # merge the key's looked-up row into the output (not deduplicate)


@dataclass(frozen=True)
class FirstRowContext:
    """A compaction of a first-row table: the lookup structure and the level >= 1 files the
    compaction does not touch (a level-0 key found there is dropped: its first row is there)."""

    lookup: LookupLevels
    targets: tuple[DataFileMeta, ...]


@dataclass(frozen=True)
class Upgrade:
    file: DataFileMeta


@dataclass(frozen=True)
class Rewrite:
    sections: tuple[tuple[SortedRun, ...], ...]

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        return tuple(f for sec in self.sections for run in sec for f in run.files)


Step = Union[Upgrade, Rewrite]


def plan_compaction(files: Sequence[DataFileMeta], output_level: int, max_level: int, min_file_size: int,
                    codec: KeyCodec, deletion_vectors: bool = False, rewrite_level0: bool = False) -> list[Step]:
    """The upgrades and rewrites that compact ``files`` into ``output_level``, in key order.

    ``deletion_vectors``: a level-0 file that may hold retractions is rewritten, not upgraded
    (Paimon's LookupMergeTreeCompactRewriter: levels >= 1 must hold none). ``rewrite_level0``:
    every level-0 file is rewritten (the lookup must be able to change its rows)."""
    steps: list[Step] = []
    candidate: list[tuple[SortedRun, ...]] = []

    def upgrade(f: DataFileMeta) -> None:
        if f.level == output_level:
            return
        if f.level == 0 and (rewrite_level0 or (deletion_vectors and f.delete_row_count != 0)):
            steps.append(Rewrite(((SortedRun((f,)),),)))
        elif output_level != max_level or f.delete_row_count == 0:
            steps.append(Upgrade(f))
        else:
            steps.append(Rewrite(((SortedRun((f,)),),)))

    def flush() -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            for f in candidate[0][0].files:
                upgrade(f)
        else:
            steps.append(Rewrite(tuple(candidate)))
        candidate.clear()

    for section in interval_partition(files, codec):
        if len(section) > 1:
            candidate.append(tuple(section))
            continue
        for f in section[0].files:
            if f.file_size < min_file_size:
                candidate.append((SortedRun((f,)),))
            else:
                flush()
                upgrade(f)
    flush()
    return steps


class CompactionTask:
    """One compaction, run on a background thread; owns the files it writes until they are handed over.

    If it fails or is cancelled it deletes its own files before re-raising. After a
    successful run the writer either takes the result or, when it discards it (close),
    calls :meth:`delete_outputs`.
    """

    def __init__(self, ctx: KVFileContext, namer: DataFileNamer, spec: MergeSpec, files: Sequence[DataFileMeta],
                 output_level: int, max_level: int, min_file_size: int, drop_delete: bool,
                 dv: DvContext | None = None, changelog: ChangelogContext | None = None,
                 first_row: FirstRowContext | None = None):
        self.dv = dv
        self.first_row = first_row if first_row is not None and first_row.targets else None
        self._drop_keys: pa.Table | None = None  # first-row: level-0 keys already in a higher level
        self._merge_old = dv is not None and dv.merge_old and bool(dv.targets)
        self._old_rows: pa.Table | None = None  # merge_old: current rows of level-0 keys in the targets
        self._level0_keys: dict[str, pa.Table] = {}
        self._old_deletions: dict[str, np.ndarray] = {}
        self.changelog = changelog
        self.ctx = ctx
        self.namer = namer
        self.spec = spec
        self.files = tuple(files)
        self.output_level = output_level
        self.max_level = max_level
        self.min_file_size = min_file_size
        self.drop_delete = drop_delete
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._written: list[str] = []

    def cancel(self) -> None:
        self._cancel.set()

    def _check(self) -> None:
        if self._cancel.is_set():
            raise CompactionCancelled()

    def run(self) -> CompactResult:
        try:
            result = CompactResult()
            if self.first_row is not None:
                self._drop_keys = self._first_row_existing()
            if self._merge_old:
                self._lookup_old_rows()
            for step in plan_compaction(self.files, self.output_level, self.max_level, self.min_file_size,
                                        self.ctx.key_codec, self.dv is not None,
                                        self.first_row is not None or self._merge_old):
                self._check()
                if isinstance(step, Upgrade):
                    result = result.merge(CompactResult((step.file,), (step.file.upgrade(self.output_level),)))
                else:
                    result = result.merge(self._rewrite(step))
            self._check()
            if self.dv is not None:
                deletions = self._old_deletions if self._merge_old else self._lookup_deletions()
                result = CompactResult(result.before, result.after, result.changelog, deletions)
            if self.changelog is not None:
                result = CompactResult(result.before, result.after, result.changelog + self._changelog(),
                                       result.deletions)
            return result
        except BaseException:
            self.delete_outputs()
            raise
        finally:
            # on this thread, which may now idle with the merge's memory
            release_after(sum(f.file_size for f in self.files))

    def _rewrite(self, step: Rewrite) -> CompactResult:
        writer = RollingKVWriter(self.ctx, self.namer.data_file, self.output_level, FileSource.COMPACT)
        try:
            for section in step.sections:
                self._check()
                old = self._old_rows_of(section)
                if not streamable_keys(self.ctx.layout):
                    files = [f for run in section for f in run.files]
                    kv = read_kv_tables(self.ctx.file_io, self.ctx.bucket_dir, self.ctx.layout, files,
                                        deletion_vectors=self._input_vectors)
                    if old is not None:
                        kv = pa.concat_tables([kv, old])
                    merged = self._drop_existing(merge_kv(kv, self.spec, self.drop_delete, final=self._complete))
                    del kv
                    self._check()
                    writer.write(merged)
                    continue
                # Merged chunk by chunk: a section may be the whole bucket, which must not be
                # held in memory at once.
                for merged in iter_merged_runs(self.ctx.file_io, self.ctx.bucket_dir, self.ctx.layout, self.spec,
                                               [run.files for run in section], self.ctx.layout.all_columns,
                                               self.drop_delete, final=self._complete,
                                               deletion_vectors=self._input_vectors,
                                               extra_runs=() if old is None else (old,), release_pages=True):
                    self._check()
                    writer.write(self._drop_existing(merged))
            after = writer.close()
        except BaseException:
            writer.abort()  # also drops the file still open (a partial upload)
            raise
        finally:
            with self._lock:
                self._written.extend(writer.written)
        return CompactResult(step.files, tuple(after))

    @property
    def _complete(self) -> bool:
        """With deletion vectors every row a compaction writes is its key's whole value (older
        rows are merged in or already superseded), so aggregation stores it as a read shows it:
        a key whose rows are all retractions becomes Paimon's +I row, not a -D row that a
        deletion-vector read would drop (``final`` changes only aggregation)."""
        return self.dv is not None

    @property
    def _input_vectors(self) -> Mapping[str, np.ndarray] | None:
        return None if self.dv is None else self.dv.input_vectors

    def _lookup_old_rows(self) -> None:
        """merge_old: read each level-0 input's keys, find their rows in the targets (positions
        to delete, and the current rows to merge)."""
        assert self.dv is not None
        for f in self.files:
            if f.level == 0:
                self._level0_keys[f.file_name] = read_kv_tables(
                    self.ctx.file_io, self.ctx.bucket_dir, self.ctx.layout, [f], list(self.ctx.layout.key_columns))
        if not self._level0_keys:
            return
        self._check()
        keys = pa.concat_tables(list(self._level0_keys.values()))
        self._old_deletions, old = self.dv.lookup.lookup_rows(keys, self.dv.targets, self.dv.target_vectors)
        self._old_rows = old if old.num_rows else None

    def _old_rows_of(self, section: Sequence[SortedRun]) -> pa.Table | None:
        """merge_old: the looked-up rows of the keys of the section's level-0 files, as a sorted
        run (one row per key, key order)."""
        if self._old_rows is None:
            return None
        keys = [self._level0_keys[f.file_name] for run in section for f in run.files if f.level == 0]
        if not keys:
            return None
        key_cols = list(self.ctx.layout.key_columns)
        old = self._old_rows.join(pa.concat_tables(keys).group_by(key_cols).aggregate([]), key_cols,
                                  join_type="left semi")
        if old.num_rows == 0:
            return None
        old = old.select(list(self.ctx.layout.all_columns)).cast(self.ctx.layout.schema_for(self.ctx.layout.all_columns))
        return old.take(pc.sort_indices(old, sort_keys=[(c, "ascending") for c in key_cols]))

    def _first_row_existing(self) -> pa.Table | None:
        """first-row: the keys of the level-0 inputs that the untouched level >= 1 files hold."""
        assert self.first_row is not None
        level0 = [f for f in self.files if f.level == 0]
        if not level0:
            return None
        keys = read_kv_tables(self.ctx.file_io, self.ctx.bucket_dir, self.ctx.layout, level0,
                              list(self.ctx.layout.key_columns))
        self._check()
        found = self.first_row.lookup.contained_keys(keys, self.first_row.targets)
        return found if found.num_rows else None

    def _drop_existing(self, merged: pa.Table) -> pa.Table:
        """``merged`` without the rows of the keys in ``_drop_keys`` (order kept)."""
        if self._drop_keys is None or merged.num_rows == 0:
            return merged
        key_cols = list(self.ctx.layout.key_columns)
        pos = "__paimon_pos"
        hits = merged.select(key_cols).append_column(pos, pa.array(np.arange(merged.num_rows, dtype=np.int64)))
        hits = hits.join(self._drop_keys, key_cols, join_type="left semi")
        if hits.num_rows == 0:
            return merged
        keep = np.ones(merged.num_rows, dtype=bool)
        keep[hits.column(pos).to_numpy()] = False
        return merged.filter(pa.array(keep))

    def _lookup_deletions(self) -> dict[str, np.ndarray]:
        """Positions, in the untouched level >= 1 files, of the keys this compaction wrote from level 0."""
        assert self.dv is not None
        level0 = [f for f in self.files if f.level == 0]
        if not level0 or not self.dv.targets:
            return {}
        keys = read_kv_tables(self.ctx.file_io, self.ctx.bucket_dir, self.ctx.layout, level0,
                              list(self.ctx.layout.key_columns))
        self._check()
        return self.dv.lookup.lookup(keys, self.dv.targets)

    def _changelog(self) -> tuple[DataFileMeta, ...]:
        """Changelog files of this compaction (see :mod:`impl.mergetree.changelog`)."""
        assert self.changelog is not None
        if self.changelog.producer is ChangelogProducer.LOOKUP:
            new_files = [f for f in self.files if f.level == 0]
            old_files = list(self.changelog.upper_files)
        elif self.output_level == self.max_level:
            new_files = [f for f in self.files if f.level < self.max_level]
            old_files = [f for f in self.files if f.level == self.max_level]
        else:
            return ()
        if not new_files:
            return ()

        def read(files, vectors):
            return read_kv_tables(self.ctx.file_io, self.ctx.bucket_dir, self.ctx.layout, files,
                                  deletion_vectors=vectors)
        rows = compaction_changelog(read, self.ctx.layout, self.spec, new_files, old_files, self.changelog.vectors,
                                    self.ctx.key_codec)
        self._check()
        if rows.num_rows == 0:
            return ()
        writer = RollingKVWriter(self.ctx, self.namer.changelog_file, 0, FileSource.COMPACT)
        try:
            writer.write(rows)
            return tuple(writer.close())
        except BaseException:
            writer.abort()
            raise
        finally:
            with self._lock:
                self._written.extend(writer.written)

    def delete_outputs(self) -> None:
        """Delete every file this task wrote (never the files it upgraded: those belong to the table)."""
        with self._lock:
            names, self._written = list(self._written), []
        self.ctx.file_io.delete_quietly([self.ctx.path(n) for n in names])

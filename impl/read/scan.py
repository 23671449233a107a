"""Scan planning: which files of which snapshot a read needs, cut into splits per (partition, bucket).

Pruning, cheapest first:

1. manifest files whose partition statistics / bucket range cannot match are not read;
2. entries whose partition (decoded once per distinct partition) or bucket cannot match are dropped;
3. on append tables, data files whose value statistics cannot match are dropped (stats are
   decoded only for files that survived 1 and 2). Primary-key tables are not pruned by value
   statistics: a newer file of the same key may hide or change a row.

The snapshot is the latest one, or ``scan.snapshot-id``, or the newest at or before
``scan.timestamp-millis``, or the one tag ``scan.tag-name`` keeps. ``incremental-between = "a,b"`` plans the changes of snapshots
a+1..b instead (see :meth:`TableScan.plan`).
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, replace
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa

from impl.bucket.routing import BucketMode, bucket_function_problem, bucket_of_hashes, mod_buckets, row_hashes
from impl.data.binary_row import decode_row
from impl.data.types import to_arrow
from impl.datafile.meta import DataFileMeta
from impl.datafile.stats import ColumnStats, FileStats
from impl.errors import InvalidPredicateError, SnapshotNotExistError, UnsupportedTableFeatureError
from impl.fileindex.evaluate import check_literals
from impl.fileindex.reader import FileIndexFilter
from impl.gcpause import paused_gc
from impl.manifest.entries import live_entries
from impl.manifest.records import FileKind, IndexFileMeta, IndexType, ManifestEntry, ManifestFileMeta
from impl.options.values import BucketFunctionType, MergeEngine
from impl.predicate.predicate import CompoundPredicate, LeafPredicate, Predicate, StatsLookup, only_fields, split_and
from impl.read.fallback import column_names, open_fallback, renamed_predicate
from impl.schema.evolution import column_sources
from impl.schema.records import TableSchema
from impl.snapshot.records import CommitKind, Snapshot
from impl.store.core import TableCore, bucket_index_files

# which manifest entries (by bucket) a scan keeps
BucketFilter = Callable[[ManifestEntry], bool]


class SplitKind(enum.Enum):
    """What the files of a split are."""

    DATA = "data"  # a snapshot's live files (merge-on-read for primary-key tables)
    DELTA = "delta"  # files added by snapshots of an incremental range
    CHANGELOG = "changelog"  # changelog files of an incremental range


@dataclass(frozen=True)
class DataSplit:
    """Files of one (partition, bucket) to read together.

    ``kind`` is DATA for a snapshot read, DELTA / CHANGELOG for incremental reads.
    ``index_files``: on ``deletion-vectors.enabled`` tables, the bucket's deletion-vector index
    files of the snapshot (DATA splits only).
    ``fallback``: the files are the ``scan.fallback-branch``'s (see :mod:`impl.read.fallback`):
    their schema ids, vectors and partition path are that branch's, and so is their read.
    """

    snapshot_id: int
    partition: bytes
    bucket: int
    total_buckets: int
    partition_path: str
    files: tuple[DataFileMeta, ...]
    kind: SplitKind = SplitKind.DATA
    index_files: tuple[IndexFileMeta, ...] = ()
    fallback: bool = False

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    @property
    def file_size(self) -> int:
        return sum(f.file_size for f in self.files)


@dataclass(frozen=True)
class Plan:
    """The result of planning a scan."""

    snapshot_id: int | None
    splits_: tuple[DataSplit, ...]

    def splits(self) -> list[DataSplit]:
        return list(self.splits_)


def _real_bucket(e: ManifestEntry) -> bool:
    return e.bucket >= 0


def _exact_lookup(values: dict) -> StatsLookup:
    def lookup(name: str) -> ColumnStats | None:
        if name not in values:
            return None
        v = values[name]
        return ColumnStats(v, v, 1 if v is None else 0, 1)
    return lookup


class SnapshotReader:
    """Reads the manifests of a snapshot with partition / bucket pruning (shared by scans and maintenance)."""

    def __init__(self, core: TableCore):
        self.core = core
        self.manifest_file = core.manifest_file
        self.manifest_list = core.manifest_list
        self.partitions = core.partition_cache
        self.manifests_read = 0  # manifests whose entries were read (from storage or the cache)
        self.manifests_pruned = 0  # manifests skipped by their partition statistics

    def _manifest_may_match(self, m: ManifestFileMeta, partition_pred: Predicate | None) -> bool:
        if partition_pred is None or not self.partitions.types:
            return True
        st = m.partition_stats
        try:
            lo = decode_row(st.min_values, self.partitions.types, path=m.file_name)
            hi = decode_row(st.max_values, self.partitions.types, path=m.file_name)
        except Exception:  # noqa: BLE001 - unreadable stats only cost pruning
            return True
        nulls = st.null_counts or ()
        stats = {n: ColumnStats(lo[i], hi[i], nulls[i] if i < len(nulls) else None, None)
                 for i, n in enumerate(self.partitions.names)}
        return partition_pred.test_stats(stats.get)

    def read_entries(self, metas: Iterable[ManifestFileMeta], partition_pred: Predicate | None = None,
                     bucket_filter: BucketFilter | None = None) -> list[ManifestEntry]:
        """Entries of the given manifests that may match the partition predicate and bucket filter.

        Counts the manifests it reads and skips (``manifests_read`` / ``manifests_pruned``).
        """
        out: list[ManifestEntry] = []
        partition_filter = self._partition_filter(partition_pred)
        for m in metas:
            if not self._manifest_may_match(m, partition_pred):
                self.manifests_pruned += 1
                continue
            self.manifests_read += 1
            entries = self.manifest_file.read_manifest(m, partition_filter)
            if bucket_filter is None:
                out.extend(entries)
            else:
                out.extend(e for e in entries if bucket_filter(e))
        return out

    def _partition_filter(self, partition_pred: Predicate | None) -> Callable[[bytes], bool] | None:
        """Serialized partition -> may it match (decoded and tested once per distinct partition)."""
        if partition_pred is None or not self.partitions.types:
            return None
        part_ok: dict[bytes, bool] = {}

        def keep(partition: bytes) -> bool:
            ok = part_ok.get(partition)
            if ok is None:
                ok = partition_pred.test_stats(_exact_lookup(self.partitions.as_dict(partition)))
                part_ok[partition] = ok
            return ok
        return keep

    def live_entries(self, snapshot: Snapshot | None, partition_pred: Predicate | None = None,
                     bucket_filter: BucketFilter | None = None) -> list[ManifestEntry]:
        """Live ADD entries of ``snapshot`` (in manifest order) after partition / bucket pruning."""
        if snapshot is None:
            return []
        entries = self.read_entries(self.manifest_list.read_data_manifests(snapshot), partition_pred, bucket_filter)
        return live_entries(entries)


# the leaves a bloom filter or bitmap can answer (Paimon's FileIndexReader visits beyond REMAIN)
_INDEX_METHODS = frozenset(("equal", "is_in", "is_null", "is_not_null", "not_equal", "is_not_in"))


def _index_answerable(p: Predicate, columns: set[str]) -> bool:
    """Whether a leaf of ``p`` could be answered by an index on one of ``columns``."""
    if isinstance(p, LeafPredicate):
        return p.method in _INDEX_METHODS and p.field in columns
    return isinstance(p, CompoundPredicate) and any(_index_answerable(c, columns) for c in p.children)


def _old_schema_lookup(file_schema: TableSchema, schema: TableSchema) -> Callable:
    """Stats lookups (current column name -> ColumnStats) for files written under ``file_schema``."""
    sources = column_sources(file_schema, schema)
    fields = {f.name: f for f in file_schema.fields}

    def lookup_for(m: DataFileMeta, pk: bool, keys: list[str]) -> Callable:
        if pk:
            old_keys = [sources[k] for k in keys]
            if any(k is None for k in old_keys):
                return lambda name: None
            stats = FileStats.of_keys(m, fields, old_keys)  # type: ignore[arg-type]
        else:
            stats = FileStats.of_values(m, fields, file_schema.field_names)

        def get(name: str):
            old = sources.get(name)
            return None if old is None else stats.get(old)
        return get
    return lookup_for


class TableScan:
    """Plans the splits of one read (``ReadBuilder.new_scan()``).

    ``fallback``: a snapshot plan also takes the partitions this branch lacks from the table's
    ``scan.fallback-branch`` (:mod:`impl.read.fallback`); the read builder's scans do, the
    scans of writes and maintenance (which read this branch's own files) do not."""

    def __init__(self, core: TableCore, predicate: Predicate | None = None, *, fallback: bool = False):
        self.core = core
        self.predicate = predicate
        self._fallback = fallback
        self.reader = SnapshotReader(core)
        self.partition_names = set(core.schema.partition_keys)
        self.files_pruned_by_stats = 0
        self.files_pruned_by_index = 0  # files whose data-file index rules out every row
        self.file_index_failures = 0  # indexes that failed their checks (their files were read)
        self._shard: tuple[int, int] | None = None

    def with_shard(self, index_of_this_subtask: int, number_of_parallel_subtasks: int) -> "TableScan":
        """Plan only shard ``index`` of ``count`` (pypaimon's ``with_shard``): the splits are dealt
        out round-robin, so the shards' plans together are the whole plan, each split (a whole
        bucket of a primary-key table, merged on read) in exactly one shard."""
        index, count = index_of_this_subtask, number_of_parallel_subtasks
        if isinstance(count, bool) or not isinstance(count, int) or count < 1 \
                or isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise InvalidPredicateError(f"with_shard({index!r}, {count!r}): the index must be in 0..count-1")
        self._shard = (index, count)
        return self

    # ------------------------------------------------------------------ snapshot choice

    def resolve_snapshot(self) -> Snapshot | None:
        """The snapshot time travel names (:meth:`TableCore.travel_snapshot`), else the latest."""
        if self.core.time_travel:
            return self.core.travel_snapshot()
        return self.core.snapshot_manager.latest_snapshot()

    # ------------------------------------------------------------------ planning

    def plan(self) -> Plan:
        """Splits of the snapshot to read, or of the incremental range ``incremental-between``.

        Incremental reads return, for snapshots a+1..b (each must still exist, else
        SnapshotNotExistError): on append tables the files added by APPEND snapshots; on
        primary-key tables the changelog files of every snapshot in the range when
        ``changelog-producer`` is not ``none``, else the data files added by APPEND snapshots
        (the raw change rows, see :class:`impl.read.table_read.TableRead`), one split per bucket
        and snapshot, in snapshot order.
        """
        with paused_gc():  # see impl.gcpause: collections walked every cached entry
            plan = self._plan()
        if self._shard is None:
            return plan
        index, count = self._shard
        return Plan(plan.snapshot_id, plan.splits_[index::count])

    def _plan(self) -> Plan:
        if self.core.options.incremental_between is not None:
            return self._plan_incremental(*self.core.options.incremental_between)
        snapshot = self.resolve_snapshot()
        other = open_fallback(self.core) if self._fallback else None
        if other is None:
            return self._plan_snapshot(snapshot)
        plan = self._plan_snapshot(snapshot)
        return Plan(plan.snapshot_id, plan.splits_ + self._fallback_splits(snapshot, other))

    def _fallback_splits(self, snapshot: Snapshot | None, other: TableCore) -> tuple[DataSplit, ...]:
        """The splits of the fallback branch ``other`` for the partitions that hold no live file
        in ``snapshot`` (after the partition filter alone), planned with the whole filter."""
        complete = {e.partition for e in self.reader.live_entries(
            snapshot, only_fields(self.predicate, self.partition_names))}
        names = column_names(self.core.schema, other.schema)
        splits = TableScan(other, renamed_predicate(self.predicate, names)).plan().splits_
        return tuple(replace(s, fallback=True) for s in splits if s.partition not in complete)

    def _plan_snapshot(self, snapshot: Snapshot | None) -> Plan:
        if snapshot is None:
            return Plan(None, ())
        partition_pred = only_fields(self.predicate, self.partition_names)
        bucket_filter = self._bucket_filter()
        entries = self.reader.live_entries(snapshot, partition_pred, bucket_filter)
        entries = self._prune_by_stats(entries)
        entries = self._prune_by_file_index(entries)
        splits = self._splits(snapshot.id, entries, SplitKind.DATA)
        if self.core.is_primary_key_table and self.core.options.deletion_vectors:
            splits = self._deletion_vector_splits(snapshot, splits)
        elif not self.core.is_primary_key_table and snapshot.index_manifest:
            splits = self._append_deletion_vector_splits(snapshot, splits)
        elif self.core.is_primary_key_table and self.core.options.merge_engine is MergeEngine.FIRST_ROW:
            splits = self._first_row_splits(splits)
        return Plan(snapshot.id, tuple(splits))

    def _append_deletion_vector_splits(self, snapshot: Snapshot, splits: list[DataSplit]) -> list[DataSplit]:
        """Splits of an append table whose snapshot lists index files: each with its bucket's
        deletion-vector index files, so the read drops the rows they delete.

        Row-level DELETE / UPDATE write them (``impl.spark.delete``, Paimon's Spark or Flink)
        on ``deletion-vectors.enabled`` append tables; a read that ignored them would return
        deleted rows."""

        index = bucket_index_files(self.core, snapshot)
        out = []
        for s in splits:
            dvs = tuple(i for i in index.get((s.partition, s.bucket), ()) if i.index_type == IndexType.DELETION_VECTORS)
            out.append(replace(s, index_files=dvs) if dvs else s)
        return out

    @staticmethod
    def _first_row_splits(splits: list[DataSplit]) -> list[DataSplit]:
        """Splits of a first-row table: level >= 1 files only (Paimon's ``batchScanSkipLevel0``
        holds for first-row). Its writers force level 0 up at every commit, dropping each level-0
        key that a higher level already holds, so levels >= 1 hold every key's first row; rows
        still in level 0 (a write-only writer's, or a commit whose compaction has not run yet)
        become visible once compacted."""
        out = []
        for s in splits:
            files = tuple(f for f in s.files if f.level >= 1)
            if files:
                out.append(replace(s, files=files))
        return out

    def _deletion_vector_splits(self, snapshot: Snapshot, splits: list[DataSplit]) -> list[DataSplit]:
        """Splits of a deletion-vector table: level >= 1 files only, with the bucket's index files.

        As Paimon's batch scan of such tables (``batchScanSkipLevel0``): level-0 files are not
        read; compaction (forced up from level 0 by lookup) makes their rows visible, and the
        level >= 1 files are read without merge, minus the positions their vectors delete.
        """

        index = bucket_index_files(self.core, snapshot)
        out = []
        for s in splits:
            files = tuple(f for f in s.files if f.level >= 1)
            if files:
                out.append(replace(s, files=files, index_files=tuple(index.get((s.partition, s.bucket), ()))))
        return out

    def _plan_incremental(self, start: int, end: int) -> Plan:
        if self.core.options.data_evolution:
            # a snapshot's files may hold some columns of older rows: its delta is not its rows
            raise UnsupportedTableFeatureError(
                f"incremental read of {self.core.identifier}: option 'data-evolution.enabled' = true: "
                "incremental reads of data-evolution tables are not supported")
        sm = self.core.snapshot_manager
        latest = sm.latest_snapshot_id()
        if latest is None or end > latest:
            raise SnapshotNotExistError(self.core.identifier, end)
        partition_pred = only_fields(self.predicate, self.partition_names)
        bucket_filter = self._bucket_filter()
        pk = self.core.is_primary_key_table
        use_changelog = pk and self.core.options.changelog_producer != "none"
        kind = SplitKind.CHANGELOG if use_changelog else SplitKind.DELTA
        entries: list[ManifestEntry] = []
        splits: list[DataSplit] = []
        for sid in range(start + 1, end + 1):
            snap = sm.snapshot(sid)  # SnapshotNotExistError if expired
            if use_changelog:
                metas = self.reader.manifest_list.read_changelog_manifests(snap)
            elif snap.commit_kind is CommitKind.APPEND:
                metas = self.reader.manifest_list.read_delta_manifests(snap)
            else:
                continue
            added = [e for e in self.reader.read_entries(metas, partition_pred, bucket_filter)
                     if e.kind is FileKind.ADD]
            if pk:
                # One split per bucket and snapshot, in snapshot order: sequence numbers order
                # the rows of one commit only (a writer restored after a full compaction dropped
                # the newest deletes starts again below them).
                splits.extend(self._splits(sid, self._prune_by_stats(added), kind))
            else:
                entries.extend(added)
        if not pk:
            splits = self._splits(end, self._prune_by_stats(entries), kind)
        return Plan(end, tuple(splits))

    # ------------------------------------------------------------------ pruning

    def _prune_by_stats(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        """Drop files whose statistics show no row can match.

        Append tables: value statistics against the whole predicate. Primary-key tables: key
        statistics against the conjuncts on primary-key columns only. That is safe because
        merging is per key: a file holding no matching key changes no matching row (value
        statistics are not, since a newer file of the same key may replace the value).
        """
        schema = self.core.schema
        pk = self.core.is_primary_key_table
        keys = list(schema.trimmed_primary_keys)
        pred = only_fields(self.predicate, set(keys)) if pk else self.predicate
        # data evolution: a file's statistics miss the values later column updates gave its rows
        if pred is None or pred.fields() <= self.partition_names or self.core.options.data_evolution:
            return entries
        lookups: dict[int, Callable] = {}

        def stats_of(m: DataFileMeta):
            # Statistics are laid out by the schema the file was written under: decode them with
            # that schema and look current columns up by field id. A column the file lacks has
            # no statistics (None: the file is kept).
            if m.schema_id == schema.id:
                fields = {f.name: f for f in schema.fields}
                return (FileStats.of_keys(m, fields, keys) if pk else
                        FileStats.of_values(m, fields, schema.field_names)).get
            if m.schema_id not in lookups:
                lookups[m.schema_id] = _old_schema_lookup(self.core.schema_manager.schema(m.schema_id), schema)
            return lookups[m.schema_id](m, pk, keys)

        kept = []
        for e in entries:
            if pred.test_stats(stats_of(e.file)):
                kept.append(e)
            else:
                self.files_pruned_by_stats += 1
        return kept

    def _prune_by_file_index(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        """Drop files whose data-file index (``file-index.*``) shows no row can match.

        Append tables: every file, by its embedded index or its ``.index`` file. Primary-key
        tables follow Paimon's scan (``KeyValueFileStoreScan``), embedded indexes only: on
        ``deletion-vectors.enabled`` and first-row tables (read without merging) and in buckets
        whose files do not overlap (one file, or all on one level >= 1) each file is tested
        alone; in other buckets every file is kept when one may match (a newer file of a key
        can hide an older row, so files of one bucket stand or fall together), and partial-update
        and aggregation tables without deletion vectors keep every bucket (merging builds new
        values no single file holds).
        """
        pred = self.predicate
        spec = self.core.options.file_index
        if pred is None or spec.empty:
            return entries
        schema = self.core.schema
        current = {f.name: f.type for f in schema.fields}
        # a literal of the wrong type on an indexed column is refused, never answered "no rows"
        check_literals(pred, {c: current[c] for c in spec.columns if c in current})
        if not spec.read_enabled or not entries or not _index_answerable(pred, set(spec.columns)):
            return entries
        if self.core.options.data_evolution:
            # files hold subsets of the columns, merged by row id: a file ruled out for one column
            # still carries the row's other columns (Paimon's DataEvolutionFileStoreScan reads no index)
            return entries
        types_by_schema: dict[int, dict] = {}

        def types_of(schema_id: int) -> dict:
            if schema_id not in types_by_schema:
                old = schema if schema_id == schema.id else self.core.schema_manager.schema(schema_id)
                by_id = {f.id: f for f in old.fields}
                types_by_schema[schema_id] = {
                    f.name: f.type for f in schema.fields
                    if f.id in by_id and by_id[f.id].name == f.name and by_id[f.id].type == f.type}
            return types_by_schema[schema_id]

        pk = self.core.is_primary_key_table
        index_filter = FileIndexFilter(self.core.file_io, pred, types_of, embedded_only=pk)

        def keep(e: ManifestEntry) -> bool:
            return index_filter.may_match(e.file, self.core.paths.bucket_dir(self.reader.partitions.path(e.partition), e.bucket))

        if not pk:
            kept = [e for e in entries if keep(e)]
        else:
            opts = self.core.options
            per_file = opts.deletion_vectors or opts.merge_engine is MergeEngine.FIRST_ROW
            merges_values = not opts.deletion_vectors and opts.merge_engine in (
                MergeEngine.PARTIAL_UPDATE, MergeEngine.AGGREGATION)
            groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
            for e in entries:
                groups.setdefault((e.partition, e.bucket), []).append(e)
            kept = []
            for es in groups.values():
                levels = {e.file.level for e in es}
                if per_file or len(es) <= 1 or (0 not in levels and len(levels) == 1):
                    kept.extend(e for e in es if keep(e))
                elif merges_values or any(keep(e) for e in es):
                    kept.extend(es)
        self.files_pruned_by_index += len(entries) - len(kept)
        self.file_index_failures += index_filter.index_failures
        return kept

    def _bucket_filter(self) -> BucketFilter | None:
        """Entries' buckets a read keeps: on a postpone-mode table real buckets only (Paimon's
        batch scan ``onlyReadRealBuckets``: postponed rows stay invisible until a compaction
        assigns their bucket), and the buckets that can hold rows matching the predicate."""
        by_key = self._key_bucket_filter()
        if self.core.bucket_mode is not BucketMode.POSTPONE:
            return by_key
        if by_key is None:
            return _real_bucket
        return lambda e: _real_bucket(e) and by_key(e)

    def _key_bucket_filter(self) -> BucketFilter | None:
        """Entries' buckets that can hold rows matching equality / IN on every bucket-key column."""
        pred = self.predicate
        keys = self.core.bucket_keys
        if pred is None or not keys or self.core.bucket_mode not in (BucketMode.HASH_FIXED, BucketMode.POSTPONE):
            return None
        literal_sets: dict[str, tuple] = {}
        for c in split_and(pred):
            if isinstance(c, LeafPredicate) and c.field in keys and c.method in ("equal", "is_in"):
                prev = literal_sets.get(c.field)
                lits = tuple(dict.fromkeys(c.literals))
                literal_sets[c.field] = lits if prev is None else tuple(v for v in prev if v in lits)
        if any(k not in literal_sets for k in keys):
            return None
        combos = list(itertools.product(*(literal_sets[k] for k in keys)))
        if not combos:
            return lambda e: False
        if len(combos) > 10_000:
            return None
        types = [self.core.schema.field(k).type for k in keys]
        function = self.core.options.bucket_function
        if bucket_function_problem(function, types):
            return None  # no bucket of such a table is known here: read them all
        columns = [pa.array([c[i] for c in combos], type=to_arrow(t)) for i, t in enumerate(types)]
        mod = function is BucketFunctionType.MOD
        # the same rules as the writers' (impl.bucket.routing.compute_buckets), per total bucket count
        hashes = None if mod else row_hashes(columns, types).astype(np.int64)

        allowed: dict[int, set[int]] = {}

        def accept(e: ManifestEntry) -> bool:
            n = e.total_buckets
            if n <= 0:
                return True
            ok = allowed.get(n)
            if ok is None:
                ok = set((mod_buckets(columns[0], n) if hashes is None else bucket_of_hashes(hashes, n)).tolist())
                allowed[n] = ok
            return e.bucket in ok
        return accept

    # ------------------------------------------------------------------ splits

    def _splits(self, snapshot_id: int, entries: list[ManifestEntry], kind: SplitKind) -> list[DataSplit]:
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for e in entries:
            groups.setdefault((e.partition, e.bucket), []).append(e)
        splits = []
        pk = self.core.is_primary_key_table
        target = self.core.options.split_target_size
        open_cost = self.core.options.split_open_file_cost
        for (partition, bucket), es in groups.items():
            path = self.reader.partitions.path(partition)
            total = es[0].total_buckets
            files = [e.file for e in es]
            # merge-on-read, change rows ordered by sequence number, or data-evolution files merged
            # by row id: one split per bucket
            if pk or self.core.options.data_evolution:
                splits.append(DataSplit(snapshot_id, partition, bucket, total, path, tuple(files), kind))
                continue
            # append files (and raw change files) are independent: pack them into ~target-size splits
            if sum(f.file_size for f in files) + open_cost * len(files) <= target:
                # bounds every file's max(size, open cost): the packing below would keep them all
                splits.append(DataSplit(snapshot_id, partition, bucket, total, path, tuple(files), kind))
                continue
            pack: list[DataFileMeta] = []
            weight = 0
            for f in files:
                w = max(f.file_size, open_cost)
                if pack and weight + w > target:
                    splits.append(DataSplit(snapshot_id, partition, bucket, total, path, tuple(pack), kind))
                    pack, weight = [], 0
                pack.append(f)
                weight += w
            if pack:
                splits.append(DataSplit(snapshot_id, partition, bucket, total, path, tuple(pack), kind))
        return splits

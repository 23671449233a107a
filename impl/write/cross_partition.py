"""Cross-partition upserts: a primary key without some partition key, ``bucket`` = -1.

A key lives in one partition at a time; writing it with other partition values moves it.
Facts from Apache Paimon 1.4.2 (``GlobalIndexAssigner``, ``BucketAssigner``,
``DeleteExistingProcessor``, ``IndexBootstrap``):

- A global index maps each primary key to its (partition, bucket). A writer bootstraps it, when
  it starts, from the keys of the latest snapshot: a merged read of the key columns, each split
  giving its partition and bucket (``cross-partition-upsert.index-ttl`` would forget keys of old
  files: refused here). No HASH index files are read or written in this mode.
- A row whose key the index places in the row's partition goes to that bucket. A row whose key
  lives in another partition: with merge engine ``deduplicate`` a DELETE of the row, its
  partition columns set to the old partition, goes to the old (partition, bucket), and the row
  is placed as a new key of its partition (every row kind moves the key, as in Java).
  ``partial-update`` and ``aggregation`` keep the key where it is: the row goes to the old
  (partition, bucket) with the old partition's values; ``first-row`` drops the row. Keys are
  never removed from the index.
- A new key of a partition goes to the first bucket (ascending id) holding fewer than
  ``dynamic-bucket.target-row-num`` keys, else to the smallest unused bucket id
  (:func:`impl.write.dynamic_bucket.place_new_keys`, with no bucket limit); a bucket's count is
  the keys the index places there.

Java interleaves its count changes row by row; here a batch's moves out of buckets known before
the batch are counted first and its new keys then placed in arrival order, so a new key may land
in another (equally valid) bucket than Java would pick. Each key is always in exactly one bucket.

Vectorized: the batch's keys get ids and their index positions by Arrow hash joins; each key's
occurrences, sorted by (key, arrival), are runs of one partition, whose first row takes the
index's bucket or a new one. The index is per writer, as Java's (one writer job per table); unlike Java, a commit whose
index missed rows another writer added after the index was built is refused
(``CommitMessage.key_index_from``, :class:`impl.errors.KeyIndexConflictError`): a key both wrote
could otherwise end up in two partitions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from impl.bucket.routing import encode_partition, group_rows
from impl.commit.conflicts import foreign_writes_since
from impl.errors import KeyIndexConflictError, UnsupportedTableFeatureError
from impl.options import core_options as co
from impl.options.values import MergeEngine
from impl.read.scan import SplitKind, TableScan
from impl.read.table_read import TableRead
from impl.store.core import TableCore
from impl.write.dynamic_bucket import place_new_keys

INDEX_TTL_OPTION = "cross-partition-upsert.index-ttl"
_ROW = "__paimon_row__"
_KEY = "__paimon_key__"
_POS = "__paimon_pos__"
_DELETE = 3  # row kind -D


def check_supported(core: TableCore, *, overwrite: bool) -> None:
    """Refuse, by name, the parts of cross-partition upserts this library does not implement."""
    name = core.identifier
    opts = core.options
    in_pk = [k for k in core.partition_keys if k in core.primary_keys]
    problem = None
    if opts.deletion_vectors:
        problem = "'deletion-vectors.enabled' = true (the key index bootstrap would need level-0 files)"
    elif opts.merge_engine is MergeEngine.DEDUPLICATE and opts.parsed[co.IGNORE_DELETE]:
        # the writer drops DELETE rows, the moved keys' retractions too: they would stay twice
        problem = "'ignore-delete' = true (it would drop the DELETE a key leaves in its old partition)"
    elif opts.sequence_field:
        problem = "'sequence.field' (Paimon refuses it in this mode: a moved key's DELETE could lose to it)"
    elif opts.raw.get(INDEX_TTL_OPTION) is not None:
        problem = f"option {INDEX_TTL_OPTION!r} (keys of old files forgotten by the key index)"
    elif in_pk:
        problem = f"primary key {list(core.primary_keys)} holding partition key(s) {in_pk}"
    elif overwrite:
        problem = "overwrite (a key of the overwritten partitions may live in another partition)"
    if problem is not None:
        raise UnsupportedTableFeatureError(
            f"write to {name}: cross-partition upsert (primary key {list(core.primary_keys)} without partition "
            f"key(s) {[k for k in core.partition_keys if k not in core.primary_keys]}, 'bucket' = -1) with "
            f"{problem} is not supported")


@dataclass
class CrossPartitionAssigner:
    """The global key index of one TableWrite, and the routing of its rows.

    ``keys`` (the primary-key columns), ``part_ids`` (into ``partitions``) and ``buckets`` hold one
    entry per known key; the index is bootstrapped from the latest snapshot on the first write.
    """

    core: TableCore
    rng: random.Random = field(default_factory=random.Random)
    keys: pa.Table | None = None
    part_ids: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    buckets: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    partitions: list[bytes] = field(default_factory=list)
    _part_index: dict[bytes, int] = field(default_factory=dict)
    # buckets each partition has had keys in, emptied ones too: Java's BucketAssigner keeps a
    # bucket whose keys all moved away (count 0), so it is filled before a new bucket is opened
    _known_buckets: dict[int, set[int]] = field(default_factory=dict)
    # the snapshot whose keys the index holds (0: an empty table), besides this writer's own rows
    built_from: int = 0

    def __post_init__(self) -> None:
        schema = self.core.schema
        self._pk = list(schema.primary_keys)
        self._part_keys = list(schema.partition_keys)
        self._part_types = [schema.field(k).type for k in self._part_keys]
        self._part_schema = pa.schema([self.core.arrow_schema.field(k) for k in self._part_keys])
        self._target = self.core.options.dynamic_bucket_target_row_num

    # ------------------------------------------------------------------ bootstrap

    def _partition_id(self, partition: bytes) -> int:
        pid = self._part_index.get(partition)
        if pid is None:
            pid = self._part_index[partition] = len(self.partitions)
            self.partitions.append(partition)
        return pid

    def bootstrap(self) -> None:
        """Load the keys of the latest snapshot (merged: deleted keys are gone) with each one's
        partition and bucket."""
        snapshot = self.core.snapshot_manager.latest_snapshot()
        self.built_from = snapshot.id if snapshot is not None else 0
        key_schema = pa.schema([self.core.arrow_schema.field(k) for k in self._pk])
        tables, pids, buckets = [], [], []
        if snapshot is not None:
            # the latest snapshot whatever the table's scan options say, as Java's bootstrap
            read = TableRead(self.core, None, self._pk)
            # every level, merged (Java's bootstrap: withLevelFilter(level -> true)); batch scans
            # of first-row tables leave level 0 out
            scan = TableScan(self.core)
            for split in scan._splits(snapshot.id, scan.reader.live_entries(snapshot), SplitKind.DATA):
                keys = read.to_arrow([split])
                if keys.num_rows:
                    tables.append(keys.select(self._pk).cast(key_schema))
                    pid = self._partition_id(split.partition)
                    self._known_buckets.setdefault(pid, set()).add(split.bucket)
                    pids.append(np.full(keys.num_rows, pid, np.int64))
                    buckets.append(np.full(keys.num_rows, split.bucket, np.int64))
        self.keys = pa.concat_tables(tables) if tables else key_schema.empty_table()
        self.part_ids = np.concatenate(pids) if pids else np.empty(0, np.int64)
        self.buckets = np.concatenate(buckets) if buckets else np.empty(0, np.int64)

    def checked_view(self, commit_user: str) -> int:
        """The snapshot the index is current at, for the commit's check
        (``CommitMessage.key_index_from``): the latest, when every snapshot since the index was
        built is this writer's own or a compaction; KeyIndexConflictError when another writer
        added rows meanwhile (the index does not know where its keys went)."""
        latest = self.core.snapshot_manager.latest_snapshot()
        if self.keys is None or latest is None or latest.id <= self.built_from:
            return self.built_from
        foreign = foreign_writes_since(self.core.snapshot_manager, self.built_from, latest, commit_user)
        if foreign is not None:
            raise KeyIndexConflictError(
                f"write to {self.core.identifier}: {foreign} after snapshot {self.built_from} this writer's "
                "cross-partition key index was built from; a key both wrote could be in two partitions. Write "
                "the data again with a new writer")
        self.built_from = latest.id
        return latest.id

    # ------------------------------------------------------------------ assignment

    def assign(self, t: pa.Table, kinds: np.ndarray | None) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """The rows to write for batch ``t`` (in schema order): ``t``'s rows, each preceded by
        the DELETE its key's move leaves in the old partition, with their row kinds and buckets.
        The index then places each key of the batch where its last row went."""
        if self.keys is None:
            self.bootstrap()
        assert self.keys is not None
        n = t.num_rows
        pid = self._row_partition_ids(t)
        kid, n_keys, pos = self._key_ids(t)
        if self.core.options.merge_engine is not MergeEngine.DEDUPLICATE:
            return self._assign_keeping_partition(t, kinds, pid, kid, pos, n_keys)

        order = np.lexsort((np.arange(n), kid))  # by key, then arrival
        k_s, p_s = kid[order], pid[order]
        first = np.ones(n, dtype=bool)
        first[1:] = k_s[1:] != k_s[:-1]
        idx = pos[k_s]  # index position of the row's key, -1 for a key new to the index
        known = idx >= 0
        prev_p = np.empty(n, dtype=np.int64)
        prev_p[1:] = p_s[:-1]
        prev_p[first] = _at(self.part_ids, idx[first])
        moved = (prev_p >= 0) & (p_s != prev_p)
        start = first | moved  # first row of a run of one key in one partition
        stay = first & known & ~moved  # the key's run continues in the index's bucket

        bucket_s = np.full(n, -1, dtype=np.int64)
        bucket_s[stay] = self.buckets[idx[stay]]
        self._place(order, start & ~stay, p_s, bucket_s, moved_out=idx[first & moved])
        runs = np.cumsum(start) - 1
        bucket_s = bucket_s[start][runs]  # each row takes its run's bucket

        prev_b = np.empty(n, dtype=np.int64)
        prev_b[1:] = bucket_s[:-1]
        prev_b[first] = _at(self.buckets, idx[first])

        self._update_index(t, order, first, k_s, p_s, bucket_s, pos, n_keys)

        buckets = np.empty(n, dtype=np.int64)
        buckets[order] = bucket_s
        row_kinds = np.zeros(n, dtype=np.int8) if kinds is None else kinds
        if not moved.any():
            return t, row_kinds, buckets
        src = order[moved]
        # the DELETEs of moved keys: their new rows with the old partitions' values
        deletes = self._with_partitions(t.take(pa.array(src)), prev_p[moved])
        # each DELETE right before its row: a key moving back into a bucket it left in this
        # batch must be written after its DELETE there
        sequence = np.concatenate([2 * np.arange(n) + 1, 2 * src])
        arrange = np.argsort(sequence, kind="stable")
        out = pa.concat_tables([t, deletes]).take(pa.array(arrange))
        out_kinds = np.concatenate([row_kinds, np.full(len(src), _DELETE, np.int8)])[arrange]
        out_buckets = np.concatenate([buckets, prev_b[moved]])[arrange]
        return out, out_kinds, out_buckets

    def _assign_keeping_partition(self, t: pa.Table, kinds: np.ndarray | None, pid: np.ndarray, kid: np.ndarray,
                                  pos: np.ndarray, n_keys: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """``partial-update`` / ``aggregation`` / ``first-row``: a key stays in the partition it
        was first written to. Its rows in other partitions go there with that partition's values
        (first-row: are dropped)."""
        n = t.num_rows
        order = np.lexsort((np.arange(n), kid))
        k_s, p_s = kid[order], pid[order]
        first = np.ones(n, dtype=bool)
        first[1:] = k_s[1:] != k_s[:-1]
        idx = pos[k_s]
        known_first = first & (idx >= 0)
        bucket_s = np.full(n, -1, dtype=np.int64)
        bucket_s[known_first] = self.buckets[idx[known_first]]
        self._place(order, first & (idx < 0), p_s, bucket_s, moved_out=np.empty(0, np.int64))
        home_p = p_s.copy()
        home_p[known_first] = self.part_ids[idx[known_first]]
        runs = np.cumsum(first) - 1
        home_p, bucket_s = home_p[first][runs], bucket_s[first][runs]  # each row takes its key's home
        self._update_index(t, order, first, k_s, home_p, bucket_s, pos, n_keys)
        home, buckets = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        home[order], buckets[order] = home_p, bucket_s
        row_kinds = np.zeros(n, dtype=np.int8) if kinds is None else kinds
        away = home != pid
        if not away.any():
            return t, row_kinds, buckets
        if self.core.options.merge_engine is MergeEngine.FIRST_ROW:
            keep = np.flatnonzero(~away)
            return t.take(pa.array(keep)), row_kinds[keep], buckets[keep]
        rows = np.flatnonzero(away)
        moved = self._with_partitions(t.take(pa.array(rows)), home[rows])
        # the rows in their home partition stay; the others take it over, in input order
        arrange = np.argsort(np.concatenate([np.flatnonzero(~away), rows]), kind="stable")
        out = pa.concat_tables([t.filter(pa.array(~away)), moved]).take(pa.array(arrange))
        return out, row_kinds, buckets

    def _row_partition_ids(self, t: pa.Table) -> np.ndarray:
        groups = group_rows([t.column(k) for k in self._part_keys])
        ids = np.array([self._partition_id(encode_partition(v, self._part_types)) for v in groups.values],
                       dtype=np.int64)
        return ids[groups.ids]

    def _key_ids(self, t: pa.Table) -> tuple[np.ndarray, int, np.ndarray]:
        """Per row the id of its key (0..n_keys-1), and per key id its index position or -1."""
        assert self.keys is not None
        n = t.num_rows
        keys = t.select(self._pk).append_column(_ROW, pa.array(np.arange(n, dtype=np.int64)))
        try:
            distinct = keys.group_by(self._pk, use_threads=False).aggregate([]).select(self._pk)
            distinct = distinct.append_column(_KEY, pa.array(np.arange(distinct.num_rows, dtype=np.int64)))
            rows = keys.join(distinct, self._pk, join_type="inner", use_threads=False)
            known = distinct.join(self.keys.append_column(
                _POS, pa.array(np.arange(self.keys.num_rows, dtype=np.int64))), self._pk,
                join_type="inner", use_threads=False)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise UnsupportedTableFeatureError(
                f"write to {self.core.identifier}: cross-partition upsert keys of types "
                f"{[str(self.core.arrow_schema.field(k).type) for k in self._pk]}: {e}") from e
        kid = np.empty(n, dtype=np.int64)
        kid[rows.column(_ROW).to_numpy()] = rows.column(_KEY).to_numpy()
        pos = np.full(distinct.num_rows, -1, dtype=np.int64)
        pos[known.column(_KEY).to_numpy()] = known.column(_POS).to_numpy()
        return kid, distinct.num_rows, pos

    def _place(self, order: np.ndarray, new: np.ndarray, p_s: np.ndarray, bucket_s: np.ndarray,
               moved_out: np.ndarray) -> None:
        """Buckets for the runs that start a key in a partition (``new``, in sorted positions),
        per partition in arrival order; the keys moving out of the index's buckets free their
        places first."""
        if not new.any():
            return
        remaining = np.ones(len(self.part_ids), dtype=bool)
        remaining[moved_out] = False
        where = np.flatnonzero(new)
        where = where[np.argsort(order[where], kind="stable")]  # arrival order
        for p in np.unique(p_s[where]).tolist():
            rows = where[p_s[where] == p]
            known = self._known_buckets.setdefault(p, set())
            ids, counts = np.unique(self.buckets[remaining & (self.part_ids == p)], return_counts=True)
            occupancy = dict.fromkeys(known, 0) | dict(zip(ids.tolist(), counts.tolist(), strict=True))
            placed = place_new_keys(occupancy, len(rows), self._target, -1, self.rng)
            bucket_s[rows] = placed
            known.update(np.unique(placed).tolist())

    def _update_index(self, t: pa.Table, order: np.ndarray, first: np.ndarray, k_s: np.ndarray,
                      p_s: np.ndarray, bucket_s: np.ndarray, pos: np.ndarray, n_keys: int) -> None:
        """Each key of the batch where its last row went: known keys in place, new ones appended."""
        assert self.keys is not None
        last = np.ones(len(k_s), dtype=bool)
        last[:-1] = first[1:]
        kids, lp, lb = k_s[last], p_s[last], bucket_s[last]
        at = pos[kids]
        old = at >= 0
        self.part_ids[at[old]] = lp[old]
        self.buckets[at[old]] = lb[old]
        new = ~old
        if new.any():
            fresh = t.select(self._pk).take(pa.array(order[last][new])).cast(self.keys.schema)
            self.keys = pa.concat_tables([self.keys, fresh]).combine_chunks()
            self.part_ids = np.concatenate([self.part_ids, lp[new]])
            self.buckets = np.concatenate([self.buckets, lb[new]])

    def _with_partitions(self, out: pa.Table, partition_ids: np.ndarray) -> pa.Table:
        """``out`` with each row's partition columns set to the values of its partition id."""
        used, which = np.unique(partition_ids, return_inverse=True)
        values = [self.core.partition_cache.values(self.partitions[p]) for p in used.tolist()]
        parts = pa.Table.from_pylist([dict(zip(self._part_keys, v, strict=True)) for v in values],
                                     schema=self._part_schema)
        old = parts.take(pa.array(which.reshape(-1)))
        for k in self._part_keys:
            out = out.set_column(out.schema.get_field_index(k), out.schema.field(k), old.column(k))
        return out


def _at(values: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``values[positions]``, -1 where the position is -1 (a key the index does not hold)."""
    out = np.full(len(positions), -1, dtype=np.int64)
    ok = positions >= 0
    out[ok] = values[positions[ok]]
    return out


__all__ = ["CrossPartitionAssigner", "check_supported"]

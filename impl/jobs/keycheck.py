"""Plain ``df.write`` into primary-key tables: may two Spark tasks share a bucket? Yes, unless they share a key.

Spark splits a DataFrame into tasks without looking at buckets, so several tasks of one write
may write the same (partition, bucket) of a primary-key table. Each of them restores the bucket's
files from the same snapshot and numbers its rows from the same next sequence number, so the
sequence numbers of their files overlap (often their ranges are equal). That is harmless as long
as every key's versions come from one task: a key's versions are ordered by its sequence numbers
(every merge sorts by key, then sequence number), and versions written before the write are
numbered below every task's. Nothing in impl's merge tree relies on the sequence ranges of
different files being disjoint: level 0 is a sorted list (max, then min sequence number,
creation time, name; no de-duplication), and compaction picks and drop-delete decisions only
matter between versions of one key. Paimon's own ``Levels`` orders level-0 files of equal max
sequence number by file name for this very case ("two or more jobs writing the same merge
tree"). Two tasks writing one key, though, give two versions whose order is undefined, so such
a write is refused.

The check, in the commit path (:func:`check_shared_keys`), scales with the data:

1. key ranges: the min/max keys the data files' metadata already carries; files of different
   tasks whose ranges do not overlap share no key (range-partitioned input, e.g. ``spark.range``,
   passes here at no cost);
2. sketches: each task hashes the keys it writes, per (partition, bucket) (:class:`KeySketchBuilder`,
   vectorized, bounded bytes, carried beside its CommitMessages): the distinct hashes while there
   are few, else a bitmap of hash bits. Hashes (or bits) set by two tasks are the only places a
   shared key can be; where there are none, nothing is read;
3. exact confirmation where the sketches leave candidates: the key columns of the involved files
   are read (projection), the rows whose hash is a candidate kept (with bitmaps only when that
   prunes most of them: the filter bounds the driver's memory, a join alone costs less CPU), and
   the keys intersected exactly (hash semi-joins; one grouping by key when many tasks overlap).

A refusal (:class:`WriteRoutingError`) names one shared key and the fix. Writers of one bucket
that both compacted (each from the same restored files) cannot both be committed: the commit
keeps one task's compaction per bucket (:func:`keep_one_compaction_per_bucket`); the others' new
files stay on level 0 and their compaction outputs are removed as leftovers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.bucket.routing import bucket_of_hashes, compute_buckets, encode_partition, group_rows, row_hashes
from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta
from impl.errors import WriteRoutingError
from impl.mergetree.kv import KeyCodec, KVLayout
from impl.mergetree.read import read_kv_tables
from impl.options.values import BucketFunctionType

# A sketch lists the distinct key hashes a task wrote into a (partition, bucket) while there are
# at most HASH_LIST_MAX of them (4 bytes each): two such lists share a hash only where they share
# a key or, rarely, a 32-bit hash, so small writes are cleared without reading anything back.
# Beyond that, a bitmap of about BITS_PER_KEY bits per row (MIN_BITS..DEFAULT_MAX_BITS, 32 KiB,
# also what a task holds per bucket while it writes): a candidate filter letting through about
# 1 - e^(-1/8) = 12 % of the other task's keys until it saturates.
HASH_LIST_MAX = 4096
DEFAULT_MAX_BITS = 1 << 18
MIN_BITS = 64
BITS_PER_KEY = 8
_GOLDEN = np.uint32(0x9E3779B1)  # Fibonacci hashing: spreads Paimon's key hash over the top bits


# ============================================================================ sketches


def key_hashes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence) -> np.ndarray:
    """Paimon's BinaryRow hash (int32) of the trimmed primary key of every row.

    The tasks hash the keys they write, the driver the ``_KEY_`` columns of the files: both from
    values of the table's types, so a key gets the same hash on both sides.
    """

    return row_hashes(columns, types)


def key_slots(hashes: np.ndarray, size: int) -> np.ndarray:
    """The bit of a sketch of ``size`` bits (a power of two) each hash sets: the top bits of a
    multiplicative remix, so halving a sketch maps bit ``i`` to ``i >> 1`` (see :meth:`KeySketch.bits_at`)."""
    shift = 32 - (size.bit_length() - 1)
    with np.errstate(over="ignore"):
        mixed = hashes.view(np.uint32) * _GOLDEN
    return (mixed >> np.uint32(shift)).astype(np.int64) if shift < 32 else np.zeros(len(hashes), np.int64)


@dataclass(frozen=True)
class KeySketch:
    """The primary keys one task wrote into one (partition, bucket), hashed (:func:`key_hashes`):
    the distinct hashes themselves (``hashes``, while few) or a bitmap of ``size`` bits (``bits``)."""

    rows: int  # rows that went in
    hashes: bytes = b""  # sorted distinct uint32 hashes, little-endian (when size == 0)
    size: int = 0  # bitmap bits, a power of two (0: the sketch lists hashes)
    bits: bytes = b""  # the bitmap, packed, little-endian bit order

    @property
    def lists_hashes(self) -> bool:
        return self.size == 0

    def hash_values(self) -> np.ndarray:
        return np.frombuffer(self.hashes, dtype="<u4").astype(np.uint32)

    def bits_at(self, size: int) -> np.ndarray:
        """The sketch as a bitmap of ``size`` bits (<= its own), unpacked: a folded bitmap sets bit
        ``i`` if any of its bits ``i * f .. i * f + f - 1`` (``f = self.size // size``) is set."""
        if size < MIN_BITS or size & (size - 1) or (not self.lists_hashes and size > self.size):
            raise ValueError(f"cannot turn a sketch of {self.size or 'listed'} bits into {size}")
        if self.lists_hashes:
            out = np.zeros(size, dtype=bool)
            out[key_slots(self.hash_values(), size)] = True
            return out
        unpacked = np.unpackbits(np.frombuffer(self.bits, dtype=np.uint8), bitorder="little").astype(bool)
        return np.asarray(unpacked.reshape(size, self.size // size).any(axis=1))

    def __repr__(self) -> str:
        shape = f"{len(self.hashes) // 4} hashes" if self.lists_hashes else f"{self.size} bits"
        return f"KeySketch({self.rows} rows, {shape})"


Sketches = Mapping[tuple[bytes, int], KeySketch]  # (partition, bucket) -> sketch, of one task


def _sketch_size(rows: int, max_bits: int, bits_per_key: int) -> int:
    want = max(MIN_BITS, rows * bits_per_key)
    return min(max_bits, 1 << (want - 1).bit_length())


class KeySketchBuilder:
    """Task side: the key sketch of every (partition, bucket) a task writes.

    :meth:`add` takes the rows as :func:`impl.write.table_write.conform_input` returns them (the values
    the writer stores) and routes them as the table write does (partition, then bucket). Per
    (partition, bucket) it holds a bitmap of ``max_bits`` bits and, while there are at most
    ``hash_list_max`` distinct hashes, the hashes. :meth:`finish` gives the hash list if it is
    still short, else the bitmap folded down to about ``bits_per_key`` bits per row.
    """

    def __init__(self, table, max_bits: int = DEFAULT_MAX_BITS, bits_per_key: int = BITS_PER_KEY,
                 hash_list_max: int = HASH_LIST_MAX):
        if max_bits < MIN_BITS or max_bits & (max_bits - 1):
            raise ValueError(f"max_bits must be a power of two >= {MIN_BITS}, got {max_bits}")
        schema = table.schema
        self.max_bits = max_bits
        self.bits_per_key = bits_per_key
        self.hash_list_max = hash_list_max
        self._keys = list(schema.trimmed_primary_keys)
        self._key_types = [schema.field(k).type for k in self._keys]
        self._parts = list(schema.partition_keys)
        self._part_types = [schema.field(k).type for k in self._parts]
        self._num_buckets = table.options.bucket
        self._bucket_keys = list(table.bucket_keys)
        self._bucket_function = table.options.bucket_function
        self._bucket_types = [schema.field(k).type for k in self._bucket_keys]
        self._slots: dict[tuple[bytes, int], int] = {}
        self._rows = np.zeros(0, dtype=np.int64)
        self._bits = np.zeros((0, max_bits // 8), dtype=np.uint8)
        self._listed: list[np.ndarray | None] = []  # per slot: its distinct hashes, None past the limit

    def add(self, data: pa.Table) -> None:
        n = data.num_rows
        if n == 0:
            return
        hashes = key_hashes([data.column(k) for k in self._keys], self._key_types)
        if self._parts:
            groups = group_rows([data.column(k) for k in self._parts])
            part_ids, part_values = groups.ids, groups.values
        else:
            part_ids, part_values = np.zeros(n, dtype=np.int64), ((),)
        nb = self._num_buckets
        if self._bucket_keys == self._keys and self._bucket_function is BucketFunctionType.DEFAULT:
            buckets = bucket_of_hashes(hashes, nb)  # the default bucket key and function: the hash is already there
        else:
            buckets = compute_buckets([data.column(k) for k in self._bucket_keys], self._bucket_types, nb,
                                      self._bucket_function)
        group = part_ids * nb + buckets
        present = np.flatnonzero(np.bincount(group, minlength=len(part_values) * nb))
        slot_of = np.full(len(part_values) * nb, -1, dtype=np.int64)
        for g in present.tolist():  # per (partition, bucket) of the batch, not per row
            pid, bucket = divmod(g, nb)
            slot_of[g] = self._slot((encode_partition(part_values[pid], self._part_types), bucket))
        slots = slot_of[group]
        self._rows += np.bincount(slots, minlength=len(self._rows))
        flat = slots * self.max_bits + key_slots(hashes, self.max_bits)
        np.bitwise_or.at(self._bits.reshape(-1), flat >> 3, np.left_shift(1, flat & 7).astype(np.uint8))
        self._list(slots, hashes)

    def _list(self, slots: np.ndarray, hashes: np.ndarray) -> None:
        """Add the hashes of the rows of slots still listing theirs."""
        listing = np.array([h is not None for h in self._listed], dtype=bool)
        rows = np.flatnonzero(listing[slots])
        if not len(rows):
            return
        order = rows[np.argsort(slots[rows], kind="stable")]
        s = slots[order]
        cuts = np.flatnonzero(np.diff(s)) + 1
        for chunk in np.split(order, cuts):  # per (partition, bucket) still listing
            slot = int(slots[chunk[0]])
            known = self._listed[slot]
            if known is None:  # cannot happen: only listing slots are here
                continue
            both = np.union1d(known, hashes[chunk].view(np.uint32))
            self._listed[slot] = both if len(both) <= self.hash_list_max else None

    def _slot(self, key: tuple[bytes, int]) -> int:
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = len(self._slots)
            self._listed.append(np.zeros(0, dtype=np.uint32))
            if slot >= len(self._bits):  # grow by doubling
                grown = np.zeros((max(4, 2 * len(self._bits)), self._bits.shape[1]), dtype=np.uint8)
                grown[:len(self._bits)] = self._bits
                self._bits = grown
                rows = np.zeros(len(grown), dtype=np.int64)
                rows[:len(self._rows)] = self._rows
                self._rows = rows
        return slot

    def finish(self) -> dict[tuple[bytes, int], KeySketch]:
        out = {}
        for key, slot in self._slots.items():
            rows = int(self._rows[slot])
            listed = self._listed[slot]
            if listed is not None:
                out[key] = KeySketch(rows, hashes=listed.astype("<u4").tobytes())
                continue
            full = KeySketch(rows, size=self.max_bits, bits=self._bits[slot].tobytes())
            size = _sketch_size(rows, self.max_bits, self.bits_per_key)
            out[key] = KeySketch(rows, size=size, bits=np.packbits(full.bits_at(size), bitorder="little").tobytes())
        return out


# ============================================================================ the driver's check


@dataclass
class KeyCheckStats:
    """What :func:`check_shared_keys` looked at (for logs, tests and benchmarks)."""

    shared_buckets: int = 0  # (partition, bucket)s with new files of two or more tasks
    overlapping: int = 0  # groups of files of several tasks whose key ranges overlap
    cleared_by_sketch: int = 0  # of those, groups whose tasks' sketches share no bit
    confirmed: int = 0  # groups whose keys were read and intersected exactly
    files_read: int = 0
    rows_read: int = 0
    candidate_rows: int = 0  # rows the driver kept to intersect (all it read when it did not filter)

    def __str__(self) -> str:
        return (f"{self.shared_buckets} shared bucket(s), {self.overlapping} overlapping key range(s), "
                f"{self.cleared_by_sketch} cleared by sketches, {self.confirmed} checked exactly "
                f"({self.files_read} files, {self.rows_read} rows read, {self.candidate_rows} candidates)")


def _clusters(items: list[tuple[int, DataFileMeta]], codec) -> list[list[tuple[int, DataFileMeta]]]:
    """Files grouped so that files in different groups do not overlap in key range (a sweep in
    min-key order, as :func:`impl.mergetree.interval_partition.interval_partition` does)."""
    ordered = sorted(items, key=lambda it: (codec.sort_key(it[1].min_key), codec.sort_key(it[1].max_key)))
    out: list[list[tuple[int, DataFileMeta]]] = []
    bound = None
    for it in ordered:
        lo, hi = codec.sort_key(it[1].min_key), codec.sort_key(it[1].max_key)
        if not out or bound is None or lo > bound:
            out.append([])
            bound = None
        out[-1].append(it)
        bound = hi if bound is None or hi > bound else bound
    return out


# With bitmaps, the driver hashes the keys it reads to keep only candidate rows when that shrinks
# what it holds at least this much: a semi-join of all keys costs less CPU than hashing them first
# (measured: 125k int64 keys 1.5 ms to hash vs 1.2-10 ms to join; strings 23 vs 14 ms), so the
# filter is worth it for the driver's memory only, and a nearly full bitmap filters nothing.
FILTER_BELOW = 0.25


@dataclass(frozen=True)
class CandidateFilter:
    """Which rows of a task may hold a shared key: those whose hash is one of ``values`` (sorted
    uint32, ``by_hash``), or whose bit in a bitmap of ``len(values)`` bits is set in ``values``."""

    by_hash: bool
    values: np.ndarray

    def keep(self, hashes: np.ndarray) -> np.ndarray:
        if self.by_hash:
            return np.isin(hashes.view(np.uint32), self.values)
        return self.values[key_slots(hashes, len(self.values))]


def candidate_filters(sketches: Sequence[KeySketch | None]) -> tuple[bool, list[CandidateFilter | None]]:
    """For tasks that wrote overlapping key ranges of one bucket (their sketches of it, None where
    missing: it may hold any key): whether the sketches rule out every shared key, and per task
    which of its rows are candidates (None: all of them)."""
    present = [s for s in sketches if s is not None]
    missing = len(sketches) - len(present)
    if missing >= 2 or not present:
        return False, [None] * len(sketches)
    if all(s.lists_hashes for s in present):
        every, counts = np.unique(np.concatenate([s.hash_values() for s in present]), return_counts=True)
        if missing:  # the missing one may hold any key: every listed hash is a candidate
            return False, [None if s is not None else CandidateFilter(True, every) for s in sketches]
        common = every[counts >= 2]
        if not len(common):
            return True, [None] * len(sketches)
        return False, [CandidateFilter(True, common)] * len(sketches)
    size = min(s.size for s in present if not s.lists_hashes)
    folded = [s.bits_at(size) if s is not None else None for s in sketches]
    count = np.zeros(size, dtype=np.int32)
    for bits in folded:
        if bits is not None:
            count += bits
    cand = count + missing >= 2
    if not cand.any():
        return True, [None] * len(sketches)
    filters: list[CandidateFilter | None] = []
    for bits in folded:  # the share of a task's keys that are candidates, estimated on its bits
        share = cand[bits].mean() if bits is not None else cand.mean()
        filters.append(CandidateFilter(False, cand) if share < FILTER_BELOW else None)
    return False, filters


def check_shared_keys(table, per_task: Sequence[Sequence[CommitMessage]],
                      sketches: Sequence[Sketches | None] | None = None, *,
                      fix_columns: Sequence[str] | None = None) -> KeyCheckStats:
    """Raise :class:`WriteRoutingError` if two tasks' new files in one (partition, bucket) of a
    primary-key table hold the same key; return what was looked at.

    ``per_task``: each task's CommitMessages; ``sketches`` (parallel to it, optional, a task's
    may be None): the key sketches the tasks built (:class:`KeySketchBuilder`); without them
    the check reads the key columns of every group of files whose key ranges overlap.
    ``fix_columns``: the DataFrame's key columns, named in the suggested repartition.
    """
    stats = KeyCheckStats()
    if not table.is_primary_key_table:
        return stats

    by_bucket: dict[tuple[bytes, int], list[tuple[int, DataFileMeta]]] = {}
    for i, msgs in enumerate(per_task):
        for m in msgs:
            by_bucket.setdefault((m.partition, m.bucket), []).extend((i, f) for f in m.new_files)
    layout = KVLayout(table.schema, table.schema_manager)
    codec = KeyCodec(layout.key_types)
    for (partition, bucket), items in sorted(by_bucket.items()):
        if len({i for i, _ in items}) < 2:
            continue
        stats.shared_buckets += 1
        for cluster in _clusters(items, codec):
            tasks = sorted({i for i, _ in cluster})
            if len(tasks) < 2:
                continue
            stats.overlapping += 1
            task_sketches = [(sketches[i] or {}).get((partition, bucket)) if sketches else None for i in tasks]
            cleared, filters = candidate_filters(task_sketches)
            if cleared:
                stats.cleared_by_sketch += 1
                continue
            stats.confirmed += 1
            shared = _shared_key(table, layout, partition, bucket, cluster, tasks, filters, stats)
            if shared is not None:
                raise _refusal(table, layout, partition, bucket, shared, fix_columns)
    return stats


# Up to this many tasks in a group, semi-joins of each task's keys against those before it (the
# fastest for two: 1M int64 keys in 15 ms); beyond, one grouping of all keys by key with the
# smallest and largest task (70-80 ms for 1M, whatever the number of tasks; the joins grow with
# the square of it: 110 ms for 8 tasks, 1 s for 64).
SEMI_JOIN_TASKS = 4


def _shared_key(table, layout, partition: bytes, bucket: int, cluster: list[tuple[int, DataFileMeta]],
                tasks: list[int], filters: list[CandidateFilter | None], stats: KeyCheckStats) -> dict | None:
    """Exact: one key (column -> value, the smallest found) written by two of ``tasks``, or
    None. Of each task's keys read, with a filter, only its candidate rows are kept."""

    bucket_dir = table.paths.bucket_dir(table.partition_cache.path(partition), bucket)
    key_cols = list(layout.key_columns)
    per_task = []
    for t, cand in zip(tasks, filters, strict=True):
        files = [f for i, f in cluster if i == t]
        keys = read_kv_tables(table.file_io, bucket_dir, layout, files, key_cols)
        stats.files_read += len(files)
        stats.rows_read += keys.num_rows
        if cand is not None and keys.num_rows:
            keys = keys.filter(pa.array(cand.keep(key_hashes([keys.column(c) for c in key_cols], layout.key_types))))
        stats.candidate_rows += keys.num_rows
        if keys.num_rows:
            per_task.append(keys)
    hits = _keys_in_two(per_task, key_cols)
    if hits is None or hits.num_rows == 0:
        return None
    first = hits.sort_by([(c, "ascending") for c in key_cols]).slice(0, 1).to_pylist()[0]
    return {name: first[col] for name, col in zip(layout.key_names, key_cols, strict=True)}


def _keys_in_two(per_task: list[pa.Table], key_cols: list[str]) -> pa.Table | None:
    """Keys (``key_cols``) present in two or more of the tables (each one task's keys), or None.

    A hash semi-join or grouping: every primary-key type Paimon allows (numbers, strings,
    binaries, decimals, dates, times, timestamps) is supported by both."""
    if len(per_task) < 2:
        return None
    if len(per_task) <= SEMI_JOIN_TASKS:
        seen = per_task[0]
        for keys in per_task[1:]:
            hits = keys.join(seen, key_cols, join_type="left semi")
            if hits.num_rows:
                return hits
            seen = pa.concat_tables([seen, keys])
        return None
    tagged = pa.concat_tables([t.append_column("__task", pa.array(np.full(t.num_rows, i, dtype=np.int32)))
                               for i, t in enumerate(per_task)])
    spread = tagged.group_by(key_cols).aggregate([("__task", "min"), ("__task", "max")])
    return spread.filter(pc.not_equal(spread.column("__task_min"), spread.column("__task_max"))).select(key_cols)


def _refusal(table, layout, partition: bytes, bucket: int, key: dict,
             fix_columns: Sequence[str] | None) -> WriteRoutingError:
    part = table.partition_cache.as_dict(partition) if table.partition_keys else {}
    cols = list(fix_columns or table.primary_keys)
    where = f"partition {part}, bucket {bucket}" if part else f"bucket {bucket}"
    repartition = ", ".join(repr(c) for c in cols)
    return WriteRoutingError(
        f"primary-key table {table.identifier}: key {key} ({where}) was written by two Spark tasks of one "
        f"write, so the order of its versions is undefined. Write with impl.spark.write_dataframe(df, path), "
        f"which routes every bucket to one task, or repartition by the primary key first: "
        f"df.repartition({repartition}).write.format('paimon_py')... Nothing was committed.",
        key=key, partition=part, bucket=bucket)


# ============================================================================ compactions of shared buckets


def keep_one_compaction_per_bucket(per_task: Sequence[Sequence[CommitMessage]]) -> tuple[list[list[CommitMessage]], int]:
    """Per (partition, bucket) written by several tasks, keep the compaction of one of them.

    Writers of one bucket restore the same files, so two that compacted both replace them: a
    commit of both would delete a file twice. One compaction stays (the one that replaced the
    most files; the first task on a tie); the others' compact parts are dropped, their new files
    still go to level 0 (a writer never deletes the files it flushed) and their compaction
    outputs become leftovers. Returns the messages to commit and how many compactions were dropped.
    """
    writers: dict[tuple[bytes, int], set[int]] = {}
    compacted: dict[tuple[bytes, int], list[tuple[int, int]]] = {}  # bucket -> [(-files replaced, task)]
    for i, msgs in enumerate(per_task):
        for m in msgs:
            writers.setdefault((m.partition, m.bucket), set()).add(i)
            if m.has_compact_part():
                compacted.setdefault((m.partition, m.bucket), []).append((-len(m.compact_before), i))
    keep = {k: min(v)[1] for k, v in compacted.items() if len(writers[k]) > 1 and len(v) > 1}
    if not keep:
        return [list(msgs) for msgs in per_task], 0
    dropped = 0
    out = []
    for i, msgs in enumerate(per_task):
        kept = []
        for m in msgs:
            k = (m.partition, m.bucket)
            if k in keep and keep[k] != i and m.has_compact_part():
                m = m.without_compact_part()
                dropped += 1
            if not m.is_empty():
                kept.append(m)
        out.append(kept)
    return out, dropped


__all__ = ["WriteRoutingError", "KeySketch", "KeySketchBuilder", "KeyCheckStats", "check_shared_keys",
           "candidate_filters", "CandidateFilter", "key_hashes", "key_slots", "keep_one_compaction_per_bucket",
           "DEFAULT_MAX_BITS", "HASH_LIST_MAX"]

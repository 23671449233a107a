"""Plain ``df.write`` into primary-key tables: may two Spark tasks share a bucket? Yes, unless they share a key.

Spark splits a DataFrame into tasks without looking at buckets, so several tasks of one write
may write the same (partition, bucket) of a primary-key table. Each of them restores the bucket's
files from the same snapshot and numbers its rows from the same next sequence number, so the
sequence numbers of their files overlap. That is harmless as long as every key's versions come
from one task: a key's versions are ordered by its sequence numbers (the merge sorts by key,
then sequence number; nothing in impl's merge tree or Paimon's relies on the sequence ranges
of different files being disjoint -- level-0 order by max sequence number, compaction picks
and drop-delete only matter between versions of one key). Two tasks writing one key, though,
give two versions whose order is undefined, so such a write is refused.

The check, in the commit path (:func:`check_shared_keys`), scales with the data:

1. key ranges: the min/max keys the data files' metadata already carries; files of different
   tasks whose ranges do not overlap share no key (range-partitioned input, e.g. ``spark.range``,
   passes here at no cost);
2. sketches: each task hashes the keys it writes into a fixed-size bitmap per (partition, bucket)
   (:class:`KeySketchBuilder`, vectorized, bounded bytes, carried beside its CommitMessages); bits
   set by two tasks are the only places a shared key can be;
3. exact confirmation, for the candidates only: the key columns of the involved files are read
   (projection), rows whose hash bit is a candidate kept, and the keys intersected exactly.

A refusal (:class:`WriteRoutingError`) names one shared key and the fix. Writers of one bucket
that both compacted (each from the same restored files) cannot both be committed: the commit
keeps one task's compaction per bucket (:func:`keep_one_compaction_per_bucket`); the others' new
files stay on level 0 and their compaction outputs are removed as leftovers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.commit.messages import CommitMessage
from impl.format.records import DataFileMeta
from impl.spark.tables import SparkConnectorError

log = logging.getLogger(__name__)

# Sketch size per (task, partition, bucket): about BITS_PER_KEY bits per row written (a candidate
# filter letting through about 1 - e^(-1/8) = 12 % of the other task's keys), at least MIN_BITS,
# at most DEFAULT_MAX_BITS (32 KiB, also what a task holds per bucket while it writes).
DEFAULT_MAX_BITS = 1 << 18
MIN_BITS = 64
BITS_PER_KEY = 8
_GOLDEN = np.uint32(0x9E3779B1)  # Fibonacci hashing: spreads Paimon's key hash over the top bits


class WriteRoutingError(SparkConnectorError):
    """Two Spark tasks of one write wrote the same primary key (the order of its versions is undefined).

    ``key`` (column -> value), ``partition`` (column -> value) and ``bucket`` name one such key.
    """

    def __init__(self, message: str, *, key: Mapping[str, object] | None = None,
                 partition: Mapping[str, object] | None = None, bucket: int | None = None):
        super().__init__(message)
        self.key = dict(key or {})
        self.partition = dict(partition or {})
        self.bucket = bucket


# ============================================================================ sketches


def key_hashes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence) -> np.ndarray:
    """Paimon's BinaryRow hash (int32) of the trimmed primary key of every row.

    The tasks hash the keys they write, the driver the ``_KEY_`` columns of the files: both from
    values of the table's types, so a key gets the same hash on both sides.
    """
    from impl.table.bucket import row_hashes

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
    """Bits of the hashed primary keys one task wrote into one (partition, bucket)."""

    size: int  # bits, a power of two
    bits: bytes  # packed, little-endian bit order
    rows: int  # rows that went in

    def bits_at(self, size: int) -> np.ndarray:
        """The sketch folded to ``size`` (<= its own) bits, unpacked: bit ``i`` is set if any of
        the bits ``i * f .. i * f + f - 1`` (``f = self.size // size``) is."""
        if size > self.size or size & (size - 1):
            raise ValueError(f"cannot fold a sketch of {self.size} bits to {size}")
        unpacked = np.unpackbits(np.frombuffer(self.bits, dtype=np.uint8), bitorder="little").astype(bool)
        return np.asarray(unpacked.reshape(size, self.size // size).any(axis=1))

    def __repr__(self) -> str:
        return f"KeySketch({self.rows} rows, {self.size} bits)"


Sketches = Mapping[tuple[bytes, int], KeySketch]  # (partition, bucket) -> sketch, of one task


def _sketch_size(rows: int, max_bits: int, bits_per_key: int) -> int:
    want = max(MIN_BITS, rows * bits_per_key)
    return min(max_bits, 1 << (want - 1).bit_length())


class KeySketchBuilder:
    """Task side: the key sketch of every (partition, bucket) a task writes.

    :meth:`add` takes the rows as :func:`impl.table.write.conform_input` returns them (the values
    the writer stores) and routes them as the table write does (partition, then bucket); it
    holds ``max_bits / 8`` bytes per (partition, bucket) seen. :meth:`finish` folds each sketch
    down to about ``bits_per_key`` bits per row written into it (at most ``max_bits``).
    """

    def __init__(self, table, max_bits: int = DEFAULT_MAX_BITS, bits_per_key: int = BITS_PER_KEY):
        if max_bits < MIN_BITS or max_bits & (max_bits - 1):
            raise ValueError(f"max_bits must be a power of two >= {MIN_BITS}, got {max_bits}")
        schema = table.schema
        self.max_bits = max_bits
        self.bits_per_key = bits_per_key
        self._keys = list(schema.trimmed_primary_keys)
        self._key_types = [schema.field(k).type for k in self._keys]
        self._parts = list(schema.partition_keys)
        self._part_types = [schema.field(k).type for k in self._parts]
        self._num_buckets = table.options.bucket
        self._bucket_keys = list(table.bucket_keys)
        self._bucket_types = [schema.field(k).type for k in self._bucket_keys]
        self._slots: dict[tuple[bytes, int], int] = {}
        self._rows = np.zeros(0, dtype=np.int64)
        self._bits = np.zeros((0, max_bits // 8), dtype=np.uint8)

    def add(self, data: pa.Table) -> None:
        from impl.table.bucket import bucket_of_hashes, compute_buckets, encode_partition, group_rows

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
        if self._bucket_keys == self._keys:  # the default bucket key: the hash is already there
            buckets = bucket_of_hashes(hashes, nb)
        else:
            buckets = compute_buckets([data.column(k) for k in self._bucket_keys], self._bucket_types, nb)
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

    def _slot(self, key: tuple[bytes, int]) -> int:
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = len(self._slots)
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
            full = KeySketch(self.max_bits, self._bits[slot].tobytes(), rows)
            size = _sketch_size(rows, self.max_bits, self.bits_per_key)
            bits = full.bits_at(size)
            out[key] = KeySketch(size, np.packbits(bits, bitorder="little").tobytes(), rows)
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
    candidate_rows: int = 0  # rows read whose hash bit was set by another task too

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


def candidate_bits(sketches: Sequence[KeySketch | None]) -> np.ndarray | None:
    """Bits (at the smallest size among ``sketches``) set by two or more of them; a missing
    sketch counts as all bits set. None when no bit can be ruled out (two or more missing)."""
    present = [s for s in sketches if s is not None]
    missing = len(sketches) - len(present)
    if missing >= 2 or not present:
        return None
    size = min(s.size for s in present)
    count = np.zeros(size, dtype=np.int32)
    for s in present:
        count += s.bits_at(size)
    return np.asarray(count + missing >= 2)


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
    from impl.mergetree.kv import KeyCodec, KVLayout

    by_bucket: dict[tuple[bytes, int], list[tuple[int, DataFileMeta]]] = {}
    for i, msgs in enumerate(per_task):
        for m in msgs:
            by_bucket.setdefault((m.partition, m.bucket), []).extend((i, f) for f in m.new_files)
    layout = KVLayout(table.schema)
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
            cand = candidate_bits(task_sketches)
            if cand is not None and not cand.any():
                stats.cleared_by_sketch += 1
                continue
            stats.confirmed += 1
            shared = _shared_key(table, layout, partition, bucket, cluster, tasks, cand, stats)
            if shared is not None:
                raise _refusal(table, layout, partition, bucket, shared, fix_columns)
    return stats


def _shared_key(table, layout, partition: bytes, bucket: int, cluster: list[tuple[int, DataFileMeta]],
                tasks: list[int], cand: np.ndarray | None, stats: KeyCheckStats) -> dict | None:
    """Exact: one key (column -> value, the smallest) written by two of ``tasks``, or None."""
    from impl.mergetree.read import read_kv_tables

    bucket_dir = table.paths.bucket_dir(table.partition_cache.path(partition), bucket)
    key_cols = list(layout.key_columns)
    parts = []
    for t in tasks:
        files = [f for i, f in cluster if i == t]
        keys = read_kv_tables(table.file_io, bucket_dir, layout, files, key_cols)
        stats.files_read += len(files)
        stats.rows_read += keys.num_rows
        if cand is not None and keys.num_rows:
            slots = key_slots(key_hashes([keys.column(c) for c in key_cols], layout.key_types), len(cand))
            keys = keys.filter(pa.array(cand[slots]))
        stats.candidate_rows += keys.num_rows
        parts.append(keys.append_column("__task", pa.array(np.full(keys.num_rows, t, dtype=np.int32))))
    rows = pa.concat_tables(parts)
    if rows.num_rows == 0:
        return None
    counts = rows.group_by(key_cols).aggregate([("__task", "count_distinct")])
    shared = counts.filter(pc.greater(counts.column("__task_count_distinct"), 1))
    if shared.num_rows == 0:
        return None
    first = shared.select(key_cols).sort_by([(c, "ascending") for c in key_cols]).slice(0, 1).to_pylist()[0]
    return {name: first[col] for name, col in zip(layout.key_names, key_cols, strict=True)}


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
           "candidate_bits", "key_hashes", "key_slots", "keep_one_compaction_per_bucket", "DEFAULT_MAX_BITS"]

"""Dynamic bucket mode (``bucket`` = -1 on a primary-key table): hash index files and the assigner.

Facts from Apache Paimon (Java ``HashIndexFile``, ``PartitionIndex``, ``HashBucketAssigner``,
``DynamicBucketIndexMaintainer``, ``IndexManifestFileHandler``) and pypaimon 2.1.0
(``index/dynamic_bucket.py``):

- A key's hash is ``BinaryRow.hashCode()`` of the trimmed primary key (the same hash as the
  fixed-bucket routing, :func:`impl.bucket.routing.row_hashes`).
- Each (partition, bucket) that holds keys has one HASH index file, ``<table>/index/index-<uuid>-<n>``:
  the distinct int32 key hashes of that bucket, big-endian, no header (4 bytes per key), listed in
  the index manifest with index type ``HASH`` and row count = number of hashes.
- A key stays in the bucket it was first written to: the partition's index files are loaded into
  a hash -> bucket map before assigning.
- A new key goes to the first bucket (ascending id) holding fewer than
  ``dynamic-bucket.target-row-num`` keys; when all are full, to the smallest unused bucket id;
  with ``dynamic-bucket.max-buckets`` reached, to a random existing bucket (Java's fallback).
- A commit replaces a changed bucket's index file by a complete new one. Java sends only the new
  file and its index manifest combiner replaces the bucket's entry; this library also sends the
  DELETE of the file the writer started from, and with every message the names of the
  partition's HASH files its rows were routed by (``CommitMessage.hash_index_view``), so the
  committer refuses rows routed by an index another commit changed meanwhile
  (:func:`impl.commit.conflicts.check_index_conflicts`, rules 5 to 7). Java relies on a single
  assigner per partition instead. Both forms fold to the same index manifest.

Assignment is vectorized: numpy ``searchsorted`` over the partition's sorted hashes finds known
keys; new keys (distinct, in order of first appearance: Arrow's hash-based ``unique``) are poured
into bucket capacities with a cumulative sum.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.commit.messages import CommitMessage
from impl.errors import CorruptMetadataError, DynamicBucketError
from impl.fs.file_io import FileIO
from impl.fs.paths import FileNamer, IdFactory, TablePaths
from impl.manifest.records import FileKind, IndexFileMeta, IndexManifestEntry, IndexType
from impl.options.values import MAX_DYNAMIC_BUCKETS
from impl.read.scan import SnapshotReader
from impl.snapshot.records import Snapshot
from impl.store.core import TableCore

INDEX_FILE_PREFIX = "index-"
# Java's unlimited case: bucket ids 0 .. Short.MAX_VALUE - 1 (PartitionIndex.assign)
_UNLIMITED_MAX_BUCKET_ID = MAX_DYNAMIC_BUCKETS - 2
_LOAD_ATTEMPTS = 5  # reads of a partition's index that may each lose a race with expiration


# ============================================================================ file format


def encode_hash_index(hashes: np.ndarray) -> bytes:
    """The bytes of a HASH index file: each int32 hash big-endian (sorted, as pypaimon writes)."""
    return np.sort(np.asarray(hashes, dtype=np.int32)).astype(">i4").tobytes()


def decode_hash_index(data: bytes, path: str) -> np.ndarray:
    """The int32 hashes of a HASH index file; a length that is not a multiple of 4 is corrupt."""
    if len(data) % 4:
        raise CorruptMetadataError(path, f"HASH index of {len(data)} bytes is not a whole number of int32 hashes")
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


class HashIndexFile:
    """Reads and writes the HASH index files of one table (``<table>/index/``)."""

    def __init__(self, file_io: FileIO, paths: TablePaths, id_factory: IdFactory | None = None):
        self.file_io = file_io
        self.paths = paths
        self._namer = FileNamer(INDEX_FILE_PREFIX, id_factory=id_factory)

    def path(self, meta: IndexFileMeta) -> str:
        return meta.external_path or self.paths.index_file_path(meta.file_name)

    def read(self, meta: IndexFileMeta) -> np.ndarray:
        path = self.path(meta)
        hashes = decode_hash_index(self.file_io.read_bytes(path), path)
        if len(hashes) != meta.row_count:
            raise CorruptMetadataError(path, f"HASH index holds {len(hashes)} hashes, its index manifest entry "
                                             f"says {meta.row_count}")
        return hashes

    def write(self, hashes: np.ndarray) -> IndexFileMeta:
        data = encode_hash_index(hashes)
        name = self._namer.next()
        self.file_io.write_bytes(self.paths.index_file_path(name), data)
        return IndexFileMeta(IndexType.HASH, name, len(data), len(data) // 4)


# ============================================================================ assignment rule


@dataclass
class PartitionIndex:
    """The keys of one partition: sorted unique hashes, the bucket of each, keys per bucket.

    ``assign`` is the rule, pure but for the random fallback past ``max_buckets``.
    """

    hashes: np.ndarray  # int32, sorted, unique
    buckets: np.ndarray  # int32, the bucket of hashes[i]
    target_row_num: int
    max_buckets: int = -1
    rng: random.Random = field(default_factory=random.Random)

    @staticmethod
    def of(hashes: np.ndarray, buckets: np.ndarray, target_row_num: int, max_buckets: int = -1,
           rng: random.Random | None = None) -> PartitionIndex:
        """From (possibly unsorted) pairs; a hash listed twice keeps its first bucket."""
        hashes = np.asarray(hashes, dtype=np.int32)
        buckets = np.asarray(buckets, dtype=np.int32)
        uniq, first = np.unique(hashes, return_index=True)
        return PartitionIndex(uniq, buckets[first], target_row_num, max_buckets, rng or random.Random())

    def bucket_counts(self) -> dict[int, int]:
        counts = np.bincount(self.buckets, minlength=1) if len(self.buckets) else np.zeros(0, np.int64)
        ids = np.flatnonzero(counts)
        return dict(zip(ids.tolist(), counts[ids].tolist(), strict=True))

    def hashes_of(self, bucket: int) -> np.ndarray:
        return self.hashes[self.buckets == bucket]

    def assign(self, key_hashes: np.ndarray) -> np.ndarray:
        """The bucket of every key hash (int32 per row); new keys are added to the index."""
        key_hashes = np.asarray(key_hashes, dtype=np.int32)
        out = np.empty(len(key_hashes), dtype=np.int32)
        pos, known = self._lookup(key_hashes)
        out[known] = self.buckets[pos[known]]
        if known.all():
            return out
        new_rows = np.flatnonzero(~known)
        new_keys = pa.array(key_hashes[new_rows])
        # distinct new keys in order of first appearance, and each new row's one (hash-based: O(n))
        arrival = pc.unique(new_keys)
        arrival_buckets = self._place(len(arrival))
        out[new_rows] = arrival_buckets[pc.index_in(new_keys, value_set=arrival).to_numpy()]
        # insert them into the sorted index
        fresh = arrival.to_numpy()
        order = np.argsort(fresh)
        fresh, fresh_buckets = fresh[order], arrival_buckets[order]
        at = np.searchsorted(self.hashes, fresh)
        self.hashes = np.insert(self.hashes, at, fresh)
        self.buckets = np.insert(self.buckets, at, fresh_buckets)
        return out

    def _lookup(self, key_hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Position of each key hash in the index, and whether it is there. A batch small next
        to the index binary-searches it; a large one probes a hash table of it (random-order
        binary searches over a large array are cache-bound)."""
        n_index = len(self.hashes)
        if not n_index:
            return np.zeros(len(key_hashes), dtype=np.int64), np.zeros(len(key_hashes), dtype=bool)
        if len(key_hashes) * 16 < n_index:
            pos = np.searchsorted(self.hashes, key_hashes)
            known = self.hashes[np.minimum(pos, n_index - 1)] == key_hashes
            return pos, known & (pos < n_index)
        found = pc.index_in(pa.array(key_hashes), value_set=pa.array(self.hashes))
        known = found.is_valid().to_numpy(zero_copy_only=False)
        return found.fill_null(0).to_numpy().astype(np.int64), known

    def _place(self, n: int) -> np.ndarray:
        return place_new_keys(self.bucket_counts(), n, self.target_row_num, self.max_buckets, self.rng)


def place_new_keys(counts: dict[int, int], n: int, target_row_num: int, max_buckets: int,
                   rng: random.Random) -> np.ndarray:
    """Buckets of ``n`` new keys of a partition whose buckets hold ``counts`` keys, in arrival
    order: fill non-full buckets (ascending id), then open the smallest unused ids, then
    (``max_buckets`` reached) random existing buckets. Java's ``PartitionIndex.assign`` and, with
    ``max_buckets`` -1, the cross-partition ``BucketAssigner``."""
    room_ids = np.array(sorted(b for b, c in counts.items() if c < target_row_num), dtype=np.int64)
    room = np.array([target_row_num - counts[b] for b in room_ids.tolist()], dtype=np.int64)
    max_id = _UNLIMITED_MAX_BUCKET_ID if max_buckets == -1 else max_buckets - 1
    need = n - int(room.sum()) if len(room) else n
    if need > 0:
        wanted = -(-need // target_row_num)
        fresh = _free_ids(set(counts), max_id, wanted)
        if len(fresh) < wanted and max_buckets == -1:
            raise DynamicBucketError(
                f"dynamic bucket mode: a partition would need more than {max_id + 1} buckets; raise "
                f"'dynamic-bucket.target-row-num' (now {target_row_num})")
        room_ids = np.concatenate([room_ids, np.array(fresh, dtype=np.int64)])
        room = np.concatenate([room, np.full(len(fresh), target_row_num, dtype=np.int64)])
    cum = np.cumsum(room)
    slots = np.arange(n, dtype=np.int64)
    placed = slots < (cum[-1] if len(cum) else 0)
    result = np.empty(n, dtype=np.int32)
    result[placed] = room_ids[np.searchsorted(cum, slots[placed], side="right")]
    overflow = int((~placed).sum())
    if overflow:
        # max-buckets reached: Java picks a random existing bucket per new key
        every = np.array(sorted(set(counts) | set(room_ids.tolist())), dtype=np.int32)
        picks = np.random.default_rng(rng.getrandbits(64)).integers(0, len(every), overflow)
        result[~placed] = every[picks]
    return result


def _free_ids(used: set[int], max_id: int, wanted: int) -> list[int]:
    out: list[int] = []
    b = 0
    while len(out) < wanted and b <= max_id:
        if b not in used:
            out.append(b)
        b += 1
    return out


# ============================================================================ the write side


@dataclass(frozen=True)
class _LoadedPartition:
    index: PartitionIndex
    files: dict[int, IndexFileMeta]  # bucket -> its live HASH index file when loaded (or last prepared)


@dataclass
class DynamicBucketAssigner:
    """Assigns the rows of one TableWrite to buckets and maintains the partitions' HASH index.

    Each partition's index is loaded from the latest snapshot when the write first touches it
    (``ignore_existing``: an overwrite starts from nothing); the names of the files it loaded
    go with the partition's messages as their ``hash_index_view``. ``index_changes`` gives, per changed
    (partition, bucket), the new complete index file to ADD and the file it replaces to DELETE.
    """

    core: TableCore
    ignore_existing: bool = False
    rng: random.Random = field(default_factory=random.Random)
    _partitions: dict[bytes, _LoadedPartition] = field(default_factory=dict)
    _changed: set[tuple[bytes, int]] = field(default_factory=set)
    _buckets_at: tuple[tuple[int, str], dict[bytes, set[int]]] | None = None

    def __post_init__(self) -> None:
        self.files = HashIndexFile(self.core.file_io, self.core.paths, id_factory=self.core.env.new_id)

    def assign(self, partition: bytes, key_hashes: np.ndarray) -> np.ndarray:
        """Buckets (int32 per row) of rows of ``partition`` with these key hashes."""
        loaded = self._partitions.get(partition)
        if loaded is None:
            loaded = self._partitions[partition] = self._load(partition)
        before = loaded.index.bucket_counts()
        buckets = loaded.index.assign(key_hashes)
        after = loaded.index.bucket_counts()
        self._changed.update((partition, b) for b, c in after.items() if before.get(b) != c)
        return buckets

    def index_changes(self) -> dict[tuple[bytes, int], tuple[IndexFileMeta, IndexFileMeta | None]]:
        """Write the new index file of every changed bucket: (new file, file it replaces or None)."""
        out = {}
        for partition, bucket in sorted(self._changed):
            loaded = self._partitions[partition]
            meta = self.files.write(loaded.index.hashes_of(bucket))
            out[(partition, bucket)] = (meta, loaded.files.get(bucket))
            loaded.files[bucket] = meta  # a stream write's next commit replaces this one
        self._changed.clear()
        return out

    def attach(self, messages: Sequence[CommitMessage]) -> list[CommitMessage]:
        """``messages`` with each changed bucket's index change (every changed bucket has a message:
        its rows were written there), and each message with the view its rows were routed by:
        the names of its partition's HASH index files before this commit's changes."""
        views = {p: frozenset(f.file_name for f in loaded.files.values()) for p, loaded in self._partitions.items()}
        changes = self.index_changes()
        out = []
        for m in messages:
            change = changes.pop((m.partition, m.bucket), None)
            if change is not None:
                new, old = change
                m = replace(m, new_index_files=(*m.new_index_files, new),
                            deleted_index_files=(*m.deleted_index_files, *([old] if old else [])))
            out.append(replace(m, hash_index_view=views.get(m.partition)))
        for (partition, bucket), (new, old) in changes.items():
            out.append(CommitMessage(partition, bucket, self.core.options.bucket, new_index_files=(new,),
                                     deleted_index_files=(old,) if old else (), hash_index_view=views[partition]))
        return out

    # ------------------------------------------------------------------ loading

    def _load(self, partition: bytes) -> _LoadedPartition:
        """The partition's index in the latest snapshot (each partition is read when first
        written: its view is checked at commit on its own). A snapshot expired while being read
        is a race with expiration: read the new latest."""
        for _ in range(_LOAD_ATTEMPTS - 1):
            snapshot = None if self.ignore_existing else self.core.snapshot_manager.latest_snapshot()
            try:
                return self._load_at(partition, snapshot)
            except FileNotFoundError:
                if snapshot is None or self.core.snapshot_manager.snapshot_exists(snapshot.id):
                    raise
        return self._load_at(partition, self.core.snapshot_manager.latest_snapshot())

    def _load_at(self, partition: bytes, snapshot: Snapshot | None) -> _LoadedPartition:
        opts = self.core.options
        empty = PartitionIndex.of(np.empty(0, np.int32), np.empty(0, np.int32), opts.dynamic_bucket_target_row_num,
                                  opts.dynamic_bucket_max_buckets, self.rng)
        if snapshot is None:
            return _LoadedPartition(empty, {})
        entries = [e for e in hash_index_entries(self.core, snapshot) if e.partition == partition]
        files: dict[int, IndexFileMeta] = {}
        for e in entries:
            if e.bucket in files:
                raise CorruptMetadataError(
                    snapshot.index_manifest or "?",
                    f"two HASH index files for bucket {e.bucket} of partition {self._describe(partition)}: "
                    f"{files[e.bucket].file_name}, {e.index_file.file_name}")
            files[e.bucket] = e.index_file
        self._check_indexed(partition, snapshot, set(files))
        arrays = [self.files.read(f) for f in files.values()]
        hashes = np.concatenate(arrays) if arrays else np.empty(0, np.int32)
        buckets = np.concatenate([np.full(len(a), b, dtype=np.int32) for b, a in zip(files, arrays, strict=True)]) \
            if arrays else np.empty(0, np.int32)
        index = PartitionIndex.of(hashes, buckets, opts.dynamic_bucket_target_row_num,
                                  opts.dynamic_bucket_max_buckets, self.rng)
        return _LoadedPartition(index, files)

    def _check_indexed(self, partition: bytes, snapshot: Snapshot, indexed: set[int]) -> None:
        """Data in a bucket without a HASH index means keys the assigner cannot see: refuse
        (writing would put those keys a second time into another bucket)."""
        data_buckets = self._data_buckets(snapshot).get(partition, set())
        missing = sorted(data_buckets - indexed)
        if missing:
            raise DynamicBucketError(
                f"{self.core.identifier}: partition {self._describe(partition)} has data in buckets {missing} but "
                f"no HASH index for them, so the bucket of existing keys is unknown; overwrite the partition to "
                f"rebuild its index")

    def _data_buckets(self, snapshot: Snapshot) -> dict[bytes, set[int]]:
        """Buckets holding live data files, per partition, in ``snapshot`` (read once per snapshot
        however many partitions the write touches)."""
        cached = self._buckets_at
        if cached is None or cached[0] != (snapshot.id, snapshot.delta_manifest_list):
            buckets: dict[bytes, set[int]] = {}
            for e in SnapshotReader(self.core).live_entries(snapshot):
                buckets.setdefault(e.partition, set()).add(e.bucket)
            cached = self._buckets_at = ((snapshot.id, snapshot.delta_manifest_list), buckets)
        return cached[1]

    def _describe(self, partition: bytes) -> str:
        return self.core.partition_cache.path(partition) or "<unpartitioned>"


def hash_index_entries(core: TableCore, snapshot: Snapshot | None) -> list[IndexManifestEntry]:
    """The live HASH index entries of ``snapshot``."""
    if snapshot is None or not snapshot.index_manifest:
        return []
    entries = core.index_manifest_file.read(snapshot.index_manifest)
    return [e for e in entries if e.kind is FileKind.ADD and e.index_file.index_type == IndexType.HASH]


__all__ = [
    "DynamicBucketAssigner", "DynamicBucketError", "HashIndexFile", "PartitionIndex",
    "decode_hash_index", "encode_hash_index", "hash_index_entries", "place_new_keys",
]

"""Reading and writing manifests, manifest lists and index manifests (Avro, or ORC / Parquet
when a table's ``manifest.format`` says so).

Manifests are immutable once written, so entries read from one are cached by file name
(an LRU bounded in entries), which keeps per-commit metadata cost flat as history grows.
"""

from __future__ import annotations

import heapq
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

import pyarrow as pa

from impl.data.binary_row import EMPTY_ROW, decode_row, encode_row
from impl.data.types import DataType
from impl.datafile.meta import SimpleStats
from impl.errors import CorruptMetadataError, InvalidOptionError
from impl.format import avro, avro_columns, avro_encode, columnar_manifest, partition_blocks
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.manifest import columnar_entries
from impl.manifest.records import FileKind, IndexManifestEntry, IndexType, ManifestEntry, ManifestFileMeta
from impl.options import core_options as co
from impl.options.parsed import ParsedOptions


class ManifestLists(Protocol):
    """The manifest lists of a snapshot (:class:`impl.snapshot.records.Snapshot` has them): a
    protocol, so that the manifest layer under the snapshot layer does not import it."""

    @property
    def base_manifest_list(self) -> str: ...
    @property
    def base_manifest_list_size(self) -> int | None: ...
    @property
    def delta_manifest_list(self) -> str: ...
    @property
    def delta_manifest_list_size(self) -> int | None: ...
    @property
    def changelog_manifest_list(self) -> str | None: ...
    @property
    def changelog_manifest_list_size(self) -> int | None: ...

DEFAULT_MANIFEST_TARGET_FILE_SIZE_BYTES = 8 * 1024 * 1024

# The formats Paimon writes manifests, manifest lists and index manifests in (``manifest.format``).
AVRO = "avro"
MANIFEST_FORMATS = (AVRO, columnar_manifest.ORC, columnar_manifest.PARQUET)


def _with_partition_index(data: bytes, batch: list[ManifestEntry]) -> bytes:
    """The Avro manifest ``data`` of ``batch`` with the index of its partitions' blocks in its
    header (see impl.format.partition_blocks), unless it would weigh on the file."""
    counts = avro_columns.decode_blocks(data).counts
    index = partition_blocks.encode(counts, [e.partition for e in batch])
    return data if index is None else avro_encode.with_metadata(data, {partition_blocks.KEY: index})


@dataclass
class _PartialManifest:
    """What partition-filtered reads decoded of one manifest: every partition it holds, and the
    entries of some of them with their positions in the file (to return them in file order)."""

    partitions: frozenset[bytes]
    entries: dict[bytes, list[tuple[int, ManifestEntry]]]

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.entries.values()) + 1

    def select(self, keep: Callable[[bytes], bool]) -> list[ManifestEntry] | None:
        """The entries of the kept partitions in file order, or None if one was not decoded."""
        wanted = [p for p in self.partitions if keep(p)]
        if any(p not in self.entries for p in wanted):
            return None
        return [e for _, e in heapq.merge(*(self.entries[p] for p in wanted), key=lambda t: t[0])]


class _EntryCache:
    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self._data: OrderedDict[str, Any] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: str):
        with self._lock:
            v = self._data.get(key)
            if v is not None:
                self._data.move_to_end(key)
            return v

    def put(self, key: str, value, size: int | None = None, *, replace: bool = False) -> None:
        """Keep ``value`` (``size`` entries, default ``len(value)``), dropping the least recently
        used values beyond ``max_entries``."""
        size = len(value) if size is None else size
        if size > self.max_entries:
            return
        with self._lock:
            if key in self._data:
                if not replace:
                    return
                self._size -= self._sizes.pop(key)
                del self._data[key]
            self._data[key] = value
            self._sizes[key] = size
            self._size += size
            while self._size > self.max_entries and self._data:
                old, _ = self._data.popitem(last=False)
                self._size -= self._sizes.pop(old)


def compute_partition_stats(partitions: Iterable[bytes], partition_type: Sequence[DataType]) -> SimpleStats:
    """Per-field min / max / null count over the given serialized partitions."""
    if not partition_type:
        return SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
    n = len(partition_type)
    mins: list = [None] * n
    maxs: list = [None] * n
    nulls = [0] * n
    for p in set(partitions):
        values = decode_row(p, partition_type)
        for i, v in enumerate(values):
            if v is None:
                nulls[i] += 1
                continue
            if mins[i] is None or v < mins[i]:
                mins[i] = v
            if maxs[i] is None or v > maxs[i]:
                maxs[i] = v
    return SimpleStats(encode_row(mins, partition_type), encode_row(maxs, partition_type), tuple(nulls))


def may_hold_partitions(meta: ManifestFileMeta, partitions: Sequence[tuple[Any, ...]],
                        partition_type: Sequence[DataType]) -> bool:
    """False only when the manifest's partition stats rule out every one of ``partitions``
    (decoded partition values). Statistics that do not decode rule nothing out."""
    try:
        lo = decode_row(meta.partition_stats.min_values, partition_type)
        hi = decode_row(meta.partition_stats.max_values, partition_type)
    except Exception:  # noqa: BLE001 - unreadable stats only cost pruning (the manifest is read)
        return True
    nulls = meta.partition_stats.null_counts or ()
    for p in partitions:
        ok = True
        for k, v in enumerate(p):
            if v is None:
                if k < len(nulls) and nulls[k] == 0:
                    ok = False
                    break
                continue
            if lo[k] is None or hi[k] is None or not (lo[k] <= v <= hi[k]):
                ok = False
                break
        if ok:
            return True
    return False


class ManifestFile:
    """Manifests of one table: rolling writes at ``target_file_size_bytes``, cached reads.

    Written in ``manifest_format`` (the table's ``manifest.format``: avro, orc or parquet), read
    in any of them (by content)."""

    def __init__(
        self,
        file_io: FileIO,
        paths: TablePaths,
        partition_type: Sequence[DataType] = (),
        *,
        schema_id: int = 0,
        target_file_size_bytes: int = DEFAULT_MANIFEST_TARGET_FILE_SIZE_BYTES,
        cache_max_entries: int = 1_000_000,
        manifest_format: str = AVRO,
        codec: avro.AvroCodec = avro.DEFAULT_CODEC,
    ):
        self.file_io = file_io
        self.paths = paths
        self.manifest_format = manifest_format
        self.codec = codec
        self.partition_type = tuple(partition_type)
        self.schema_id = schema_id
        self.target_file_size_bytes = target_file_size_bytes
        self._cache = _EntryCache(cache_max_entries)
        self._partial = _EntryCache(cache_max_entries)  # of _PartialManifest, by manifest name

    # ------------------------------------------------------------------ write

    def write(self, entries: Iterable[ManifestEntry], *, name_suffix: str = "",
              partition_roll_bytes: int | None = None) -> list[ManifestFileMeta]:
        """Write entries into as many manifests as the target size asks for.

        With ``partition_roll_bytes``, a manifest also ends where the partition changes once it
        holds that many bytes: given entries grouped by partition, each manifest then covers few
        partitions, and its partition statistics prune it from the reads of other partitions.

        If any write fails, the manifests this call already wrote are deleted before the
        error propagates, so a failed call leaves nothing behind.
        """
        fmt = checked_format(self.manifest_format)
        written: list[ManifestFileMeta] = []
        batch: list[ManifestEntry] = []
        writer = avro.AvroBufferWriter(avro.MANIFEST_ENTRY_SCHEMA, self.codec)
        try:
            for e in entries:
                if (partition_roll_bytes is not None and batch and e.partition != batch[-1].partition
                        and writer.size_bytes >= partition_roll_bytes):
                    written.append(self._flush(writer, batch, name_suffix, fmt))
                    writer = avro.AvroBufferWriter(avro.MANIFEST_ENTRY_SCHEMA, self.codec)
                    batch = []
                writer.write(e.to_avro())
                batch.append(e)
                if writer.size_bytes >= self.target_file_size_bytes:
                    written.append(self._flush(writer, batch, name_suffix, fmt))
                    writer = avro.AvroBufferWriter(avro.MANIFEST_ENTRY_SCHEMA, self.codec)
                    batch = []
            if batch:
                written.append(self._flush(writer, batch, name_suffix, fmt))
        except BaseException:
            self.delete_quietly(m.file_name for m in written)
            raise
        return written

    def _flush(self, writer: avro.AvroBufferWriter, batch: list[ManifestEntry], name_suffix: str,
               fmt: str) -> ManifestFileMeta:
        data = writer.finish()
        if fmt != AVRO:  # the Avro bytes only measured the size for rolling
            data = columnar_manifest.write_table(fmt, avro.MANIFEST_ENTRY_SCHEMA, [e.to_avro() for e in batch])
        elif self.partition_type:  # an unpartitioned table's reads filter no partition
            data = _with_partition_index(data, batch)
        name = self.paths.new_manifest_name()
        if name_suffix:
            # changelog manifests are named manifest-<uuid>-changelog-<n>, as pypaimon does
            head, _, n = name.rpartition("-")
            name = f"{head}-{name_suffix}-{n}"
        path = self.paths.manifest_path(name)
        try:
            self.file_io.write_bytes(path, data)
        except BaseException:
            # the write may have landed before it failed: nothing may stay behind
            self.file_io.delete_quietly([path])
            raise
        self._cache.put(name, list(batch))
        return self._meta(name, len(data), batch)

    def _meta(self, name: str, size: int, batch: list[ManifestEntry]) -> ManifestFileMeta:
        added = sum(1 for e in batch if e.kind is FileKind.ADD)
        buckets = [e.bucket for e in batch]
        levels = [e.file.level for e in batch]
        totals = {e.total_buckets for e in batch}
        total = next(iter(totals)) if len(totals) == 1 else None
        return ManifestFileMeta(
            file_name=name,
            file_size=size,
            num_added_files=added,
            num_deleted_files=len(batch) - added,
            partition_stats=compute_partition_stats((e.partition for e in batch), self.partition_type),
            schema_id=self.schema_id,
            min_bucket=min(buckets),
            max_bucket=max(buckets),
            min_level=min(levels),
            max_level=max(levels),
            total_buckets=total if total is not None and total > 0 else None,
        )

    # ------------------------------------------------------------------ read

    def read(self, file_name: str, expected_size: int | None = None,
             expected_count: int | None = None) -> list[ManifestEntry]:
        """Entries of one manifest. ``expected_size`` / ``expected_count`` (from its
        ManifestFileMeta) catch a file cut exactly at an Avro block boundary, which would
        otherwise read as a valid, shorter manifest and silently drop files."""
        cached = self._cache.get(file_name)
        if cached is not None:
            return cached
        partial: _PartialManifest | None = self._partial.get(file_name)
        if partial is not None:
            # partition-filtered reads decoded every partition of it already (a commit's live
            # files of the partitions it touches, then its manifest merge reading them whole)
            whole = partial.select(lambda _: True)
            if whole is not None:
                return whole
        path = self.paths.manifest_path(file_name)
        data = self.file_io.read_bytes(path)
        _check_size(path, data, expected_size)
        entries: list[ManifestEntry] | None
        if columnar_manifest.format_of(data) is not None:  # manifest.format = orc / parquet
            entries = _columnar_entries(data, path)
        elif _few(expected_count):
            entries = None
        else:
            entries = columnar_entries.manifest_entries(data)  # None: it cannot, fastavro decodes
        if entries is None:
            records = avro.read_avro(data, path, "ManifestEntry", ("_KIND", "_FILE"))
            entries = [ManifestEntry.from_avro(r, path) for r in records]
        if expected_count is not None and len(entries) != expected_count:
            raise CorruptMetadataError(path, f"holds {len(entries)} entries, its manifest list says {expected_count}")
        self._cache.put(file_name, entries)
        return entries

    def read_manifest(self, meta: ManifestFileMeta,
                      partition_filter: Callable[[bytes], bool] | None = None) -> list[ManifestEntry]:
        """Entries of the manifest ``meta`` describes, checked against its size and entry count.

        Every reader that has the meta (commits, scans, expiration, maintenance) reads through
        here, so a manifest cut at a block boundary raises CorruptMetadataError on every path.

        With ``partition_filter`` (serialized partition -> keep?), only the entries of kept
        partitions are returned, and the others are never turned into objects: building the
        entry objects costs more than decoding the Avro records, so a partition-filtered scan
        of a manifest holding many partitions skips most of its cost. Such a partial read is
        not cached; a cached manifest is filtered from the cache.
        """
        expected_count = meta.num_added_files + meta.num_deleted_files
        if partition_filter is None:
            return self.read(meta.file_name, meta.file_size, expected_count)
        cached = self._cache.get(meta.file_name)
        if cached is not None:
            return [e for e in cached if partition_filter(e.partition)]
        partial: _PartialManifest | None = self._partial.get(meta.file_name)
        if partial is not None:
            selected = partial.select(partition_filter)
            if selected is not None:
                return selected
        path = self.paths.manifest_path(meta.file_name)
        data = self.file_io.read_bytes(path)
        _check_size(path, data, meta.file_size)
        if columnar_manifest.format_of(data) is not None:  # manifest.format = orc / parquet
            every = _columnar_entries(data, path)
            partitions = {e.partition for e in every}
            kept = [(i, e) for i, e in enumerate(every) if partition_filter(e.partition)]
            total = len(every)
        elif not _few(expected_count) and (
                columnar := columnar_entries.partition_entries(data, partition_filter)) is not None:
            kept, partitions, total = columnar
        else:
            records, partitions, total = avro.read_manifest_entry_records(data, path, partition_filter)
            kept = [(i, ManifestEntry.from_avro(r, path)) for i, r in records]
        if total != expected_count:
            raise CorruptMetadataError(path, f"holds {total} entries, its manifest list says {expected_count}")
        # Remember the decoded partitions, so that planning the same partitions again (a warm
        # table) needs no read; partitions decoded by earlier reads are kept.
        by_partition: dict[bytes, list[tuple[int, ManifestEntry]]] = dict(partial.entries) if partial else {}
        for p in partitions:
            if partition_filter(p):
                by_partition[p] = []
        for i, e in kept:
            by_partition[e.partition].append((i, e))
        fresh = _PartialManifest(frozenset(partitions), by_partition)
        self._partial.put(meta.file_name, fresh, fresh.size, replace=True)
        return [e for _, e in kept]

    def read_all(self, metas: Iterable[ManifestFileMeta]) -> list[ManifestEntry]:
        """Entries of every given manifest, in order, each checked as :meth:`read_manifest` does."""
        out: list[ManifestEntry] = []
        for m in metas:
            out.extend(self.read_manifest(m))
        return out

    def delete_quietly(self, file_names: Iterable[str]) -> None:
        self.file_io.delete_quietly(self.paths.manifest_path(n) for n in file_names)


class ManifestList:
    """Manifest lists: one file of ManifestFileMeta records (in ``manifest_format`` when
    written, any of avro, orc, parquet when read).

    Lists are immutable and their names unique, so the lists this instance wrote or read are
    kept by name (the last ``cache_max_lists``): a committer reads the lists of the snapshot it
    just published from memory, which keeps a warm commit's request count flat on object stores.
    """

    def __init__(self, file_io: FileIO, paths: TablePaths, *, cache_max_lists: int = 64, manifest_format: str = AVRO,
                 codec: avro.AvroCodec = avro.DEFAULT_CODEC):
        self.file_io = file_io
        self.paths = paths
        self.manifest_format = manifest_format
        self.codec = codec
        self._cache: OrderedDict[str, tuple[tuple[ManifestFileMeta, ...], int]] = OrderedDict()
        self._cache_max_lists = cache_max_lists
        self._cache_lock = threading.Lock()

    def write(self, metas: Sequence[ManifestFileMeta], *, name: str | None = None) -> tuple[str, int]:
        """Write a new list; returns (file name, size in bytes)."""
        data = encode(self.manifest_format, avro.MANIFEST_FILE_META_SCHEMA, [m.to_avro() for m in metas], self.codec)
        name = name or self.paths.new_manifest_list_name()
        _write_or_remove(self.file_io, self.paths.manifest_path(name), data)
        self._remember(name, tuple(metas), len(data))
        return name, len(data)

    def read(self, file_name: str, expected_size: int | None = None) -> list[ManifestFileMeta]:
        """Metas of one manifest list; ``expected_size`` (a snapshot's ``*ManifestListSize``)
        detects a list cut at an Avro block boundary."""
        path = self.paths.manifest_path(file_name)
        with self._cache_lock:
            cached = self._cache.get(file_name)
            if cached is not None:
                self._cache.move_to_end(file_name)
        if cached is not None:
            metas, size = cached
            if expected_size is not None and size != expected_size:
                raise CorruptMetadataError(path, f"is {size} bytes, its snapshot records {expected_size}")
            return list(metas)
        data = self.file_io.read_bytes(path)
        _check_size(path, data, expected_size)
        records = _records(data, path, "ManifestFileMeta", ("_FILE_NAME", "_FILE_SIZE"))
        out = [ManifestFileMeta.from_avro(r, path) for r in records]
        self._remember(file_name, tuple(out), len(data))
        return out

    def _remember(self, name: str, metas: tuple[ManifestFileMeta, ...], size: int) -> None:
        if self._cache_max_lists <= 0:
            return
        with self._cache_lock:
            self._cache[name] = (metas, size)
            self._cache.move_to_end(name)
            while len(self._cache) > self._cache_max_lists:
                self._cache.popitem(last=False)

    def read_data_manifests(self, snapshot: ManifestLists) -> list[ManifestFileMeta]:
        """Base + delta manifests of a snapshot, sizes checked when the snapshot records them."""
        return [*self.read_base_manifests(snapshot), *self.read_delta_manifests(snapshot)]

    def read_base_manifests(self, snapshot: ManifestLists) -> list[ManifestFileMeta]:
        return self.read(snapshot.base_manifest_list, snapshot.base_manifest_list_size)

    def read_delta_manifests(self, snapshot: ManifestLists) -> list[ManifestFileMeta]:
        return self.read(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)

    def read_changelog_manifests(self, snapshot: ManifestLists) -> list[ManifestFileMeta]:
        if not snapshot.changelog_manifest_list:
            return []
        return self.read(snapshot.changelog_manifest_list, snapshot.changelog_manifest_list_size)


class IndexManifestFile:
    """The index manifest of a snapshot: every live index file, in one file of the table's
    ``manifest.format`` (Avro unless the table says orc or parquet; read in any of them)."""

    def __init__(self, file_io: FileIO, paths: TablePaths, *, manifest_format: str = AVRO,
                 codec: avro.AvroCodec = avro.DEFAULT_CODEC):
        self.file_io = file_io
        self.paths = paths
        self.manifest_format = manifest_format
        self.codec = codec

    def write(self, entries: Sequence[IndexManifestEntry], *, name: str | None = None) -> str:
        data = encode(self.manifest_format, avro.INDEX_MANIFEST_ENTRY_SCHEMA, [e.to_avro() for e in entries], self.codec)
        name = name or self.paths.new_index_manifest_name()
        _write_or_remove(self.file_io, self.paths.manifest_path(name), data)
        return name

    def read(self, file_name: str) -> list[IndexManifestEntry]:
        path = self.paths.manifest_path(file_name)
        records = _records(self.file_io.read_bytes(path), path, "IndexManifestEntry", ("_INDEX_TYPE", "_FILE_NAME"))
        return [IndexManifestEntry.from_avro(r, path) for r in records]


def manifest_format_option(options: ParsedOptions | Mapping[str, str]) -> str:
    """The ``manifest.format`` of a table's options (Paimon's default: avro), as written."""
    return ParsedOptions.of(options)[co.MANIFEST_FORMAT]


def manifest_avro_codec(options: ParsedOptions | Mapping[str, str]) -> avro.AvroCodec:
    """The Avro codec of a table's metadata files, as Paimon Java's AvroFileFormat picks it for
    them: ``avro.codec`` when set, else ``manifest.compression`` (default zstd, at
    ``file.compression.zstd-level``). Checked when a file is written (AvroCodec.checked)."""
    options = ParsedOptions.of(options)
    explicit = options[co.AVRO_CODEC]
    if explicit is not None:
        return avro.AvroCodec(explicit, key=co.AVRO_CODEC.key)
    return avro.AvroCodec(options[co.MANIFEST_COMPRESSION], options[co.FILE_COMPRESSION_ZSTD_LEVEL])


def checked_format(manifest_format: str) -> str:
    """``manifest_format`` normalised, or InvalidOptionError for a format Paimon has no
    manifests in. Paimon Java reads a table's manifests in the format its ``manifest.format``
    option names (not by the file's content), so a writer must write exactly that format."""
    fmt = manifest_format.strip().lower()
    if fmt not in MANIFEST_FORMATS:
        raise InvalidOptionError(f"option 'manifest.format': {manifest_format!r} is not one of "
                                 f"{', '.join(MANIFEST_FORMATS)}; no manifest is written")
    return fmt


def encode(manifest_format: str, schema: dict, rows: list[dict], codec: avro.AvroCodec = avro.DEFAULT_CODEC) -> bytes:
    """``rows`` as one metadata file in ``manifest_format`` (avro, orc or parquet; Avro in ``codec``)."""
    fmt = checked_format(manifest_format)
    if fmt == AVRO:
        return avro.write_avro(schema, rows, codec)
    return columnar_manifest.write_table(fmt, schema, rows)


def _columnar_entries(data: bytes, path: str) -> list[ManifestEntry]:
    """The entries of an ORC / Parquet manifest: built column-wise, or record by record (which
    names the file in its error) when the column builder refuses the shape."""
    table = columnar_manifest.read_table(data, path)
    if "_FILE" not in table.column_names or "_KIND" not in table.column_names:
        raise CorruptMetadataError(path, "expected ManifestEntry rows, missing fields ['_KIND', '_FILE']")
    try:
        return columnar_entries.entries_of(table)
    except (KeyError, ValueError, TypeError, pa.ArrowException):
        return [ManifestEntry.from_avro(r, path) for r in columnar_manifest.records(table)]


def _records(data: bytes, path: str, expected_record: str, required_fields: tuple[str, ...]) -> list[dict]:
    """The records of an Avro, ORC or Parquet metadata file, as dicts (see ``avro.read_avro``)."""
    if columnar_manifest.format_of(data) is None:
        return avro.read_avro(data, path, expected_record, required_fields)
    table = columnar_manifest.read_table(data, path)
    missing = [f for f in required_fields if f not in table.column_names]
    if missing:
        raise CorruptMetadataError(path, f"expected {expected_record} rows, missing fields {missing}")
    return columnar_manifest.records(table)


def _write_or_remove(file_io: FileIO, path: str, data: bytes) -> None:
    """Write, and if the call fails remove whatever may have landed before re-raising."""
    try:
        file_io.write_bytes(path, data)
    except BaseException:
        file_io.delete_quietly([path])
        raise


# Avro manifests of fewer entries are decoded by fastavro, record by record: the column-wise
# decoder costs about 1 ms whatever the size (polars' reader, the Arrow hand-over, ~25 column
# conversions), fastavro ~60 us per entry (4 entries: 1.1-1.25 against 0.28 ms; even at about 50;
# 3,950: 23 against 117 ms). A table written in small commits plans over many such manifests.
COLUMNAR_MIN_ENTRIES = 32


def _few(expected_count: int | None) -> bool:
    return expected_count is not None and expected_count < COLUMNAR_MIN_ENTRIES


def _check_size(path: str, data: bytes, expected_size: int | None) -> None:
    if expected_size is not None and len(data) != expected_size:
        raise CorruptMetadataError(path, f"is {len(data)} bytes, its reference records {expected_size} (truncated?)")


# Index types with one file per (partition, bucket): an ADD replaces the bucket's previous file
# (Paimon's IndexManifestFileHandler.BucketedCombiner; Java and pypaimon commit a new HASH index
# without a DELETE of the old one).
BUCKETED_INDEX_TYPES = frozenset({IndexType.HASH})


def fold_index_entries(previous: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry]) -> list[IndexManifestEntry]:
    """Live index files after applying ``changes`` (DELETEs first, then ADDs) to ``previous``.

    An ADD of a :data:`BUCKETED_INDEX_TYPES` file replaces the live file of the same
    (partition, bucket, type), the last ADD winning; other types are added and removed by file name."""
    live: dict[tuple, IndexManifestEntry] = {e.identity: e for e in previous if e.kind is FileKind.ADD}
    for c in changes:
        if c.kind is FileKind.DELETE:
            live.pop(c.identity, None)
    for c in changes:
        if c.kind is FileKind.ADD:
            if c.index_file.index_type in BUCKETED_INDEX_TYPES:
                slot = (c.partition, c.bucket, c.index_file.index_type)
                live = {k: e for k, e in live.items() if (e.partition, e.bucket, e.index_file.index_type) != slot}
            live[c.identity] = c
    return list(live.values())

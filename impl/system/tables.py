"""The system tables: their columns (Paimon Java 2.0's, name for name and type for type) and
how each one's rows are built from the table's metadata.

Each builder takes the data table, the snapshot to describe (None: the table is empty, or
the table is not snapshot-based) and a :class:`ReadRequest` (the columns the read needs, its
filter), and returns the columns as Arrow arrays. Columns that cost a decode per file (keys and
statistics of ``$files``) are only built when they are read, and only for the files that pass
the filter's conjuncts on cheap columns; ``$snapshots`` reads only the snapshot files whose id
can pass the filter. File paths are as this library's FileIO names them (``s3://...`` on object
stores, plain paths on local disk).

Time columns are ``TIMESTAMP(3)`` wall-clock values, as Java gives them: commit and schema
times (stored as epoch millis) in the process's local time zone; file creation times as the
file's metadata stores them.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.data.binary_row import decode_row
from impl.data.types import DataField, DataType, parse_type, to_arrow
from impl.datafile.meta import DataFileMeta
from impl.datafile.stats import ColumnStats
from impl.format.formats import format_identifier
from impl.manifest.records import FileKind, IndexType, ManifestEntry
from impl.predicate.predicate import Predicate, only_fields
from impl.read.fallback import open_fallback
from impl.read.scan import SnapshotReader, TableScan
from impl.schema.manager import schema_ids_in
from impl.schema.records import TableSchema
from impl.snapshot.records import Snapshot
from impl.store.core import TableCore, load_latest_schema
from impl.system import refs
from impl.system.render import (
    key_column,
    partition_spec_string,
    row_cast_to_string,
    stats_map_column,
    text_column,
)

Columns = dict[str, pa.Array]


@dataclass(frozen=True)
class ReadRequest:
    """What a read wants of a builder: the columns it reads (projected or filtered on) and its
    filter, which a builder may apply early to skip work (the read applies it again)."""

    needed: frozenset[str]
    predicate: Predicate | None = None


Builder = Callable[[TableCore, "Snapshot | None", ReadRequest], Columns]

_EPOCH = _dt.datetime(1970, 1, 1)



@dataclass(frozen=True)
class SystemTableSpec:
    """One system table: its name after ``$``, its columns, whether it describes one snapshot
    (chosen by the time-travel options, like a data read) and its row builder."""

    name: str
    fields: tuple[DataField, ...]
    snapshot_based: bool
    build: Builder

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, to_arrow(f.type), nullable=f.type.nullable) for f in self.fields])

    @property
    def table_schema(self) -> TableSchema:
        """The columns as a TableSchema (what PredicateBuilder checks names and literals against)."""
        return TableSchema(id=0, fields=self.fields)


def _fields(*cols: tuple[str, str]) -> tuple[DataField, ...]:
    return tuple(DataField(i, name, parse_type(t)) for i, (name, t) in enumerate(cols))


# ---------------------------------------------------------------------------- helpers


def local_millis(epoch_millis: int) -> int:
    """Epoch millis -> the millis of the local wall-clock time (Java's
    ``LocalDateTime.ofInstant(Instant.ofEpochMilli(ms), ZoneId.systemDefault())``)."""
    seconds, millis = divmod(epoch_millis, 1000)
    wall = _dt.datetime.fromtimestamp(seconds)
    return (wall - _EPOCH) // _dt.timedelta(milliseconds=1) + millis


def _ts(values: Iterable[int | None]) -> pa.Array:
    return pa.array(list(values), pa.timestamp("ms"))


def _local_ts(values: Iterable[int | None]) -> pa.Array:
    return _ts(None if v is None else local_millis(v) for v in values)


def _json(value) -> str:
    # Jackson's flat JSON: no spaces, non-ASCII kept as is
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _schema_loader(core: TableCore) -> Callable[[int], TableSchema]:
    """Schema by id, each read once (the table's own schema without a read)."""
    cache: dict[int, TableSchema] = {core.schema.id: core.schema}

    def load(schema_id: int) -> TableSchema:
        s = cache.get(schema_id)
        if s is None:
            path = core.paths.schema_path(schema_id)
            s = TableSchema.from_json_bytes(core.file_io.read_bytes(path), path)
            cache[schema_id] = s
        return s
    return load


class _PartitionText:
    """Partitions spelled as Java does, from the table's cache of decoded partitions."""

    def __init__(self, core: TableCore):
        self.cache = core.partition_cache
        self.names = list(core.schema.partition_keys)
        self.types = [core.schema.field(k).type for k in self.names]
        self.default_name = core.options.partition_default_name

    def row(self, partition: bytes) -> str:
        return row_cast_to_string(self.cache.values(partition), self.types)

    def spec(self, partition: bytes) -> str:
        return partition_spec_string(self.names, self.cache.values(partition), self.types, self.default_name)


def _live_entries(core: TableCore, snapshot: Snapshot | None) -> list[ManifestEntry]:
    return SnapshotReader(core).live_entries(snapshot)


def _codes(keys: Sequence) -> tuple[np.ndarray, list]:
    """Dense integer codes of ``keys`` (first-seen order) and the distinct keys."""
    index: dict = {}
    codes = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
    return codes, list(index)


# ---------------------------------------------------------------------------- $snapshots


def _snapshot_id_may_match(predicate: Predicate | None) -> Callable[[int], bool]:
    """Whether a snapshot id can pass the conjuncts of ``predicate`` on ``snapshot_id`` (pure:
    decided on the id alone, before its file is read; Java pushes the same range down)."""
    on_id = only_fields(predicate, {"snapshot_id"})
    if on_id is None:
        return lambda _: True
    return lambda i: on_id.test_stats(lambda name: ColumnStats(i, i, 0, 1) if name == "snapshot_id" else None)


def _build_snapshots(core: TableCore, snapshot: Snapshot | None, request: ReadRequest) -> Columns:
    sm = core.snapshot_manager
    wanted = _snapshot_id_may_match(request.predicate)
    # ids are listed, and only the files of the ids a filter can keep are read
    found = (sm.try_snapshot(i) for i in sm.snapshot_ids() if wanted(i))
    snaps = [x for x in found if x is not None]  # None: expired while we listed
    i64 = pa.int64()
    return {
        "snapshot_id": pa.array([s.id for s in snaps], i64),
        "schema_id": pa.array([s.schema_id for s in snaps], i64),
        "commit_user": pa.array([s.commit_user for s in snaps], pa.string()),
        "commit_identifier": pa.array([s.commit_identifier for s in snaps], i64),
        "commit_kind": pa.array([s.commit_kind.value for s in snaps], pa.string()),
        "commit_time": _local_ts(s.time_millis for s in snaps),
        "base_manifest_list": pa.array([s.base_manifest_list for s in snaps], pa.string()),
        "delta_manifest_list": pa.array([s.delta_manifest_list for s in snaps], pa.string()),
        "changelog_manifest_list": pa.array([s.changelog_manifest_list for s in snaps], pa.string()),
        "total_record_count": pa.array([s.total_record_count for s in snaps], i64),
        "delta_record_count": pa.array([s.delta_record_count for s in snaps], i64),
        "changelog_record_count": pa.array([s.changelog_record_count for s in snaps], i64),
        "watermark": pa.array([s.watermark for s in snaps], i64),
        "next_row_id": pa.array([s.next_row_id for s in snaps], i64),
        # Java 2.0's snapshot "operation" is not a key this library's Snapshot keeps (neither
        # impl nor pypaimon 2.1.0 write it), so it reads as null.
        "operation": pa.nulls(len(snaps), pa.string()),
    }


SNAPSHOTS = SystemTableSpec("snapshots", _fields(
    ("snapshot_id", "BIGINT NOT NULL"), ("schema_id", "BIGINT NOT NULL"), ("commit_user", "STRING NOT NULL"),
    ("commit_identifier", "BIGINT NOT NULL"), ("commit_kind", "STRING NOT NULL"),
    ("commit_time", "TIMESTAMP(3) NOT NULL"), ("base_manifest_list", "STRING NOT NULL"),
    ("delta_manifest_list", "STRING NOT NULL"), ("changelog_manifest_list", "STRING"),
    ("total_record_count", "BIGINT"), ("delta_record_count", "BIGINT"), ("changelog_record_count", "BIGINT"),
    ("watermark", "BIGINT"), ("next_row_id", "BIGINT"), ("operation", "STRING"),
), False, _build_snapshots)


# ---------------------------------------------------------------------------- $schemas


def _build_schemas(core: TableCore, snapshot: Snapshot | None, request: ReadRequest) -> Columns:
    load = _schema_loader(core)
    schemas = [load(i) for i in schema_ids_in(core.file_io, core.paths.schema_dir)]
    return {
        "schema_id": pa.array([s.id for s in schemas], pa.int64()),
        "fields": pa.array([_json([f.to_json() for f in s.fields]) for s in schemas], pa.string()),
        "partition_keys": pa.array([_json(list(s.partition_keys)) for s in schemas], pa.string()),
        "primary_keys": pa.array([_json(list(s.primary_keys)) for s in schemas], pa.string()),
        "options": pa.array([_json(dict(s.options)) for s in schemas], pa.string()),
        "comment": pa.array([s.comment for s in schemas], pa.string()),
        "update_time": _local_ts(s.time_millis for s in schemas),
    }


SCHEMAS = SystemTableSpec("schemas", _fields(
    ("schema_id", "BIGINT NOT NULL"), ("fields", "STRING NOT NULL"), ("partition_keys", "STRING NOT NULL"),
    ("primary_keys", "STRING NOT NULL"), ("options", "STRING NOT NULL"), ("comment", "STRING"),
    ("update_time", "TIMESTAMP(3) NOT NULL"),
), False, _build_schemas)


# ---------------------------------------------------------------------------- $options


def _build_options(core: TableCore, snapshot: Snapshot | None, request: ReadRequest) -> Columns:
    options: Mapping[str, str] = load_latest_schema(core.file_io, core.paths, core.identifier).options
    return {"key": pa.array(list(options), pa.string()), "value": pa.array(list(options.values()), pa.string())}


OPTIONS = SystemTableSpec("options", _fields(("key", "STRING NOT NULL"), ("value", "STRING NOT NULL")),
                          False, _build_options)


# ---------------------------------------------------------------------------- $manifests


def _build_manifests(core: TableCore, snapshot: Snapshot | None, request: ReadRequest) -> Columns:
    metas = core.manifest_list.read_data_manifests(snapshot) if snapshot is not None else []
    parts = _PartitionText(core)

    def stats(which: str) -> pa.Array:
        if f"{which}_partition_stats" not in request.needed:
            return pa.nulls(len(metas), pa.string())
        rows = [getattr(m.partition_stats, f"{which}_values") for m in metas]
        return pa.array([row_cast_to_string(decode_row(r, parts.types, path=m.file_name), parts.types)
                         for r, m in zip(rows, metas, strict=True)], pa.string())

    i64 = pa.int64()
    return {
        "file_name": pa.array([m.file_name for m in metas], pa.string()),
        "file_size": pa.array([m.file_size for m in metas], i64),
        "num_added_files": pa.array([m.num_added_files for m in metas], i64),
        "num_deleted_files": pa.array([m.num_deleted_files for m in metas], i64),
        "schema_id": pa.array([m.schema_id for m in metas], i64),
        "min_partition_stats": stats("min"),
        "max_partition_stats": stats("max"),
        "min_row_id": pa.array([m.min_row_id for m in metas], i64),
        "max_row_id": pa.array([m.max_row_id for m in metas], i64),
    }


MANIFESTS = SystemTableSpec("manifests", _fields(
    ("file_name", "STRING NOT NULL"), ("file_size", "BIGINT NOT NULL"), ("num_added_files", "BIGINT NOT NULL"),
    ("num_deleted_files", "BIGINT NOT NULL"), ("schema_id", "BIGINT NOT NULL"), ("min_partition_stats", "STRING"),
    ("max_partition_stats", "STRING"), ("min_row_id", "BIGINT"), ("max_row_id", "BIGINT"),
), True, _build_manifests)


# ---------------------------------------------------------------------------- $files


def _by_group(files: Sequence[DataFileMeta], key: Callable[[DataFileMeta], object]) -> dict[object, list[int]]:
    groups: dict[object, list[int]] = {}
    for i, f in enumerate(files):
        groups.setdefault(key(f), []).append(i)
    return groups


def _in_file_order(groups: dict[object, list[int]], pieces: list[pa.Array]) -> pa.Array:
    """Per-group results (in ``groups`` order) back in the order of the files."""
    order = np.fromiter((i for idx in groups.values() for i in idx), dtype=np.int64)
    return pa.concat_arrays(pieces).take(pa.array(np.argsort(order, kind="stable")))


_BIGINT = parse_type("BIGINT")


class _StatsRenderer:
    """Value statistics of files rendered against the table's current fields, matched by field
    id (Java's SimpleStatsEvolution): a renamed column keeps its stats, a column the file does
    not cover reads null.

    Files are grouped by the layout of their statistics (schema id, stats columns); each group
    is decoded file by file into columns, then spelled and joined a column at a time."""

    def __init__(self, core: TableCore):
        self.load = _schema_loader(core)
        self.table_fields = list(core.schema.fields)
        self.names = [f.name for f in self.table_fields]

    def _plan(self, f: DataFileMeta) -> tuple[list[DataType], list[int | None]]:
        """The types of the file's stats row, and for each table field its position there (or None)."""
        file_fields = list(self.load(f.schema_id).fields)
        by_name = {x.name: x for x in file_fields}
        cols = f.value_stats_cols if f.value_stats_cols is not None else (
            f.write_cols if f.write_cols is not None else [x.name for x in file_fields])
        stats_fields = [by_name[c] for c in cols if c in by_name]
        pos_by_id = {x.id: i for i, x in enumerate(stats_fields)}
        return [x.type.copy(True) for x in stats_fields], [pos_by_id.get(t.id) for t in self.table_fields]

    def render(self, files: Sequence[DataFileMeta]) -> tuple[pa.Array, pa.Array, pa.Array]:
        """(null_value_counts, min_value_stats, max_value_stats) of every file, in order."""
        groups = _by_group(files, lambda f: (f.schema_id, f.value_stats_cols, f.write_cols))
        pieces: tuple[list[pa.Array], list[pa.Array], list[pa.Array]] = ([], [], [])
        for idx in groups.values():
            types, positions = self._plan(files[idx[0]])
            lows, highs, nulls = [], [], []
            for i in idx:
                f = files[i]
                try:
                    lo = decode_row(f.value_stats.min_values, types, path=f.file_name)
                    hi = decode_row(f.value_stats.max_values, types, path=f.file_name)
                except Exception:  # noqa: BLE001 - stats in a form we cannot decode render as unknown
                    lo = hi = (None,) * len(types)
                lows.append(lo)
                highs.append(hi)
                nulls.append(f.value_stats.null_counts or ())
            m = len(idx)
            texts: tuple[list[pa.Array], list[pa.Array], list[pa.Array]] = ([], [], [])
            for field, pos in zip(self.table_fields, positions, strict=True):
                if pos is None:
                    for t in texts:
                        t.append(pa.nulls(m, pa.string()))
                    continue
                texts[0].append(text_column([c[pos] if pos < len(c) else None for c in nulls], _BIGINT, internal=True))
                texts[1].append(text_column([r[pos] for r in lows], field.type, internal=True))
                texts[2].append(text_column([r[pos] for r in highs], field.type, internal=True))
            for piece, text in zip(pieces, texts, strict=True):
                piece.append(stats_map_column(self.names, text, m))
        if not files:
            return pa.array([], pa.string()), pa.array([], pa.string()), pa.array([], pa.string())
        return (_in_file_order(groups, pieces[0]), _in_file_order(groups, pieces[1]),
                _in_file_order(groups, pieces[2]))


def _key_columns(core: TableCore, files: Sequence[DataFileMeta]) -> tuple[pa.Array, pa.Array]:
    """(min_key, max_key) of every file: ``[v1, v2]`` of the trimmed primary key as the file's
    schema defines it, null for files without a key (append tables)."""
    if not files:
        return pa.array([], pa.string()), pa.array([], pa.string())
    load = _schema_loader(core)
    groups = _by_group(files, lambda f: f.schema_id)
    mins: list[pa.Array] = []
    maxs: list[pa.Array] = []
    for schema_id, idx in groups.items():
        assert isinstance(schema_id, int)
        schema = load(schema_id)
        names = schema.trimmed_primary_keys or tuple(schema.field_names)
        types = [schema.field(k).type for k in names]
        for raw_of, out in ((lambda f: f.min_key, mins), (lambda f: f.max_key, maxs)):
            raws = [raw_of(files[i]) for i in idx]
            # no key is a row of no fields: Java's getFieldCount() <= 0
            has_key = [len(r) >= 4 and int.from_bytes(r[:4], "big") > 0 for r in raws]
            rows_ = [decode_row(r, types, path=files[i].file_name) if k else (None,) * len(types)
                     for r, k, i in zip(raws, has_key, idx, strict=True)]
            text = key_column([text_column([r[j] for r in rows_], t, internal=False) for j, t in enumerate(types)],
                              len(idx))
            out.append(pc.if_else(pa.array(has_key, pa.bool_()), text, pa.scalar(None, pa.string())))
    return _in_file_order(groups, mins), _in_file_order(groups, maxs)


def _build_files(core: TableCore, snapshot: Snapshot | None, request: ReadRequest) -> Columns:
    entries = _live_entries(core, snapshot)
    parts = _PartitionText(core)
    i64, i32, s = pa.int64(), pa.int32(), pa.string()
    # the columns read straight off the records (and the partition, spelled once per partition)
    codes, distinct = _codes([e.partition for e in entries])
    files = [e.file for e in entries]
    cheap = pa.table({
        "partition": pa.array([parts.row(p) for p in distinct], s).take(pa.array(codes, pa.int64())),
        "bucket": pa.array([e.bucket for e in entries], i32),
        "file_format": pa.array([format_identifier(f.file_name) for f in files], s),
        "schema_id": pa.array([f.schema_id for f in files], i64),
        "level": pa.array([f.level for f in files], i32),
        "record_count": pa.array([f.row_count for f in files], i64),
        "file_size_in_bytes": pa.array([f.file_size for f in files], i64),
        "min_sequence_number": pa.array([f.min_sequence_number for f in files], i64),
        "max_sequence_number": pa.array([f.max_sequence_number for f in files], i64),
        "creation_time": _ts(f.creation_time_millis for f in files),
        "deleteRowCount": pa.array([f.delete_row_count for f in files], i64),
        "file_source": pa.array([None if f.file_source is None else f.file_source.name for f in files], s),
        "first_row_id": pa.array([f.first_row_id for f in files], i64),
        "write_cols": pa.array([None if f.write_cols is None else list(f.write_cols) for f in files],
                               pa.list_(pa.string())),
    })
    # Conjuncts on those columns (partition, bucket, level, ...: what Java pushes into the
    # scan) drop files before their paths, keys and statistics are spelled.
    early = only_fields(request.predicate, set(cheap.column_names))
    if early is not None and entries:
        kept = cheap.append_column("__row", pa.array(np.arange(len(entries)))).filter(early.to_arrow())
        rows_kept = kept.column("__row").to_numpy()
        cheap = kept.drop_columns(["__row"])
        entries = [entries[i] for i in rows_kept]
        files = [files[i] for i in rows_kept]
    n = len(entries)
    out: Columns = {name: _chunk(cheap.column(name)) for name in cheap.column_names}
    if "file_path" in request.needed:
        qualify = core.file_io.uri
        out["file_path"] = pa.array(
            [qualify(core.paths.data_file_path(core.partition_cache.path(e.partition), e.bucket, e.file.file_name,
                                                e.file.external_path)) for e in entries], s)
    if request.needed & {"min_key", "max_key"}:
        out["min_key"], out["max_key"] = _key_columns(core, files)
    stats_cols = ("null_value_counts", "min_value_stats", "max_value_stats")
    if request.needed & set(stats_cols):
        out.update(zip(stats_cols, _StatsRenderer(core).render(files), strict=True))
    for name in ("file_path", "min_key", "max_key", *stats_cols):
        out.setdefault(name, pa.nulls(n, s))
    return out


FILES = SystemTableSpec("files", _fields(
    ("partition", "STRING"), ("bucket", "INT NOT NULL"), ("file_path", "STRING NOT NULL"),
    ("file_format", "STRING NOT NULL"), ("schema_id", "BIGINT NOT NULL"), ("level", "INT NOT NULL"),
    ("record_count", "BIGINT NOT NULL"), ("file_size_in_bytes", "BIGINT NOT NULL"), ("min_key", "STRING"),
    ("max_key", "STRING"), ("null_value_counts", "STRING NOT NULL"), ("min_value_stats", "STRING NOT NULL"),
    ("max_value_stats", "STRING NOT NULL"), ("min_sequence_number", "BIGINT"), ("max_sequence_number", "BIGINT"),
    ("creation_time", "TIMESTAMP(3)"), ("deleteRowCount", "BIGINT"), ("file_source", "STRING"),
    ("first_row_id", "BIGINT"), ("write_cols", "ARRAY<STRING>"),
), True, _build_files)


# ---------------------------------------------------------------------------- $partitions / $buckets


def _file_facts(entries: Sequence[ManifestEntry]) -> pa.Table:
    """One row per live file: the numbers $partitions and $buckets aggregate."""
    return pa.table({
        "bucket": pa.array([e.bucket for e in entries], pa.int32()),
        "record_count": pa.array([e.file.row_count for e in entries], pa.int64()),
        "file_size_in_bytes": pa.array([e.file.file_size for e in entries], pa.int64()),
        "creation": pa.array([e.file.creation_time_millis for e in entries], pa.int64()),
        "total_buckets": pa.array([e.total_buckets for e in entries], pa.int32()),
    })


def _aggregate(facts: pa.Table, keys: list[str]) -> pa.Table:
    return facts.group_by(keys, use_threads=False).aggregate([
        ("record_count", "sum"), ("file_size_in_bytes", "sum"), ("record_count", "count"),
        ("creation", "max"), ("total_buckets", "max"),
    ])


def _deleted_counts(core: TableCore, snapshot: Snapshot | None) -> dict[bytes, int | None]:
    """Rows deleted by deletion vectors per partition (None: some vector has no cardinality)."""
    if snapshot is None or not snapshot.index_manifest:
        return {}
    out: dict[bytes, int | None] = {}
    for e in core.index_manifest_file.read(snapshot.index_manifest):
        meta = e.index_file
        if e.kind is not FileKind.ADD or meta.index_type != IndexType.DELETION_VECTORS or not meta.deletion_vector_ranges:
            continue
        if e.partition in out and out[e.partition] is None:
            continue
        cards = [dv.cardinality for dv in meta.deletion_vector_ranges]
        out[e.partition] = None if any(c is None for c in cards) else (out.get(e.partition) or 0) + sum(
            c for c in cards if c is not None)
    return out


def _build_partitions(core: TableCore, snapshot: Snapshot | None, request: ReadRequest) -> Columns:
    entries = _live_entries(core, snapshot)
    deleted = _deleted_counts(core, snapshot) if core.options.deletion_vectors else {}
    other = open_fallback(core)
    if other is not None:
        # Paimon's FallbackReadScan.listPartitionEntries: the scan.fallback-branch's partitions
        # this branch lacks are listed too, as a read returns their rows
        own = {e.partition for e in entries}
        other_snapshot = TableScan(other).resolve_snapshot()
        entries = entries + [e for e in _live_entries(other, other_snapshot) if e.partition not in own]
        if other.options.deletion_vectors:
            deleted.update((p, n) for p, n in _deleted_counts(other, other_snapshot).items() if p not in own)
    codes, distinct = _codes([e.partition for e in entries])
    facts = _file_facts(entries).append_column("p", pa.array(codes, pa.int64()))
    agg = _aggregate(facts, ["p"])
    parts = _PartitionText(core)
    p_idx = agg.column("p").to_pylist()
    spec = pa.array([parts.spec(distinct[i]) for i in p_idx], pa.string())
    m = agg.num_rows
    cols = {
        "partition": spec,
        "record_count": agg.column("record_count_sum"),
        "file_size_in_bytes": agg.column("file_size_in_bytes_sum"),
        "file_count": agg.column("record_count_count"),
        "last_update_time": agg.column("creation_max").cast(pa.timestamp("ms")),
        # a filesystem catalog keeps no partition registry: no creator, no options, never done
        "created_at": pa.nulls(m, pa.timestamp("ms")),
        "created_by": pa.nulls(m, pa.string()),
        "updated_by": pa.nulls(m, pa.string()),
        "options": pa.nulls(m, pa.string()),
        "total_buckets": agg.column("total_buckets_max"),
        "done": pa.array([False] * m, pa.bool_()),
        "deleted_record_count": pa.array([deleted.get(distinct[i], 0) for i in p_idx], pa.int64()),
    }
    order = pc.sort_indices(spec)  # Java sorts by the partition string
    return {k: _chunk(v).take(order) for k, v in cols.items()}


def _chunk(a) -> pa.Array:
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


PARTITIONS = SystemTableSpec("partitions", _fields(
    ("partition", "STRING"), ("record_count", "BIGINT NOT NULL"), ("file_size_in_bytes", "BIGINT NOT NULL"),
    ("file_count", "BIGINT NOT NULL"), ("last_update_time", "TIMESTAMP(3)"), ("created_at", "TIMESTAMP(3)"),
    ("created_by", "STRING"), ("updated_by", "STRING"), ("options", "STRING"), ("total_buckets", "INT NOT NULL"),
    ("done", "BOOLEAN NOT NULL"), ("deleted_record_count", "BIGINT"),
), True, _build_partitions)


def _build_buckets(core: TableCore, snapshot: Snapshot | None, request: ReadRequest) -> Columns:
    entries = _live_entries(core, snapshot)
    codes, distinct = _codes([e.partition for e in entries])
    facts = _file_facts(entries).append_column("p", pa.array(codes, pa.int64()))
    agg = _aggregate(facts, ["p", "bucket"])
    parts = _PartitionText(core)
    partition = pa.array([parts.row(distinct[i]) for i in agg.column("p").to_pylist()], pa.string())
    cols = {
        "partition": partition,
        "bucket": _chunk(agg.column("bucket")),
        "record_count": agg.column("record_count_sum"),
        "file_size_in_bytes": agg.column("file_size_in_bytes_sum"),
        "file_count": agg.column("record_count_count"),
        "last_update_time": agg.column("creation_max").cast(pa.timestamp("ms")),
    }
    order = pc.sort_indices(pa.table({"p": partition, "b": cols["bucket"]}),
                            sort_keys=[("p", "ascending"), ("b", "ascending")])
    return {k: _chunk(v).take(order) for k, v in cols.items()}


BUCKETS = SystemTableSpec("buckets", _fields(
    ("partition", "STRING"), ("bucket", "INT NOT NULL"), ("record_count", "BIGINT NOT NULL"),
    ("file_size_in_bytes", "BIGINT NOT NULL"), ("file_count", "BIGINT NOT NULL"),
    ("last_update_time", "TIMESTAMP(3)"),
), True, _build_buckets)


# ---------------------------------------------------------------------------- $tags / $branches


def _build_tags(core: TableCore, snapshot: Snapshot | None, request: ReadRequest) -> Columns:
    tags = refs.list_tags(core.file_io, core.paths)
    return {
        "tag_name": pa.array([t.name for t in tags], pa.string()),
        "snapshot_id": pa.array([t.snapshot.id for t in tags], pa.int64()),
        "schema_id": pa.array([t.snapshot.schema_id for t in tags], pa.int64()),
        "commit_time": _local_ts(t.snapshot.time_millis for t in tags),
        "record_count": pa.array([t.snapshot.total_record_count for t in tags], pa.int64()),
        # tagCreateTime is already a local wall-clock time
        "create_time": pa.array([t.create_time for t in tags], pa.timestamp("ms")),
        "time_retained": pa.array([None if t.time_retained is None
                                   else refs.duration_string(refs.timedelta_seconds(t.time_retained))
                                   for t in tags], pa.string()),
    }


TAGS = SystemTableSpec("tags", _fields(
    ("tag_name", "STRING NOT NULL"), ("snapshot_id", "BIGINT NOT NULL"), ("schema_id", "BIGINT NOT NULL"),
    ("commit_time", "TIMESTAMP(3) NOT NULL"), ("record_count", "BIGINT"), ("create_time", "TIMESTAMP(3)"),
    ("time_retained", "STRING"),
), False, _build_tags)


def _build_branches(core: TableCore, snapshot: Snapshot | None, request: ReadRequest) -> Columns:
    branches = refs.list_branches(core.file_io, core.paths)
    return {
        "branch_name": pa.array([b.branch_name for b in branches], pa.string()),
        # a branch always has a schema file; its time is unknown only where storage keeps none
        "create_time": pa.array([b.create_time or _EPOCH for b in branches], pa.timestamp("ms")),
    }


BRANCHES = SystemTableSpec("branches", _fields(
    ("branch_name", "STRING NOT NULL"), ("create_time", "TIMESTAMP(3) NOT NULL"),
), False, _build_branches)


SYSTEM_TABLES: dict[str, SystemTableSpec] = {
    s.name: s for s in (SNAPSHOTS, SCHEMAS, OPTIONS, MANIFESTS, FILES, PARTITIONS, BUCKETS, TAGS, BRANCHES)
}

__all__ = ["SystemTableSpec", "SYSTEM_TABLES", "ReadRequest", "local_millis"]

"""Manifest entries from the columns of a decoded manifest (:mod:`impl.format.avro_columns`):
the planning hot path builds every :class:`ManifestEntry` from Arrow columns, not record by
record. Anything here may raise on a shape it does not expect; the callers
(``impl.manifest.manifest_file``) then fall back to fastavro record by record.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.datafile.meta import DataFileMeta, FileSource, SimpleStats
from impl.format import avro, avro_columns, partition_blocks
from impl.gcpause import paused_gc
from impl.manifest.records import FileKind, ManifestEntry

# DataFileMeta fields a manifest entry must carry (from_avro raises KeyError without them)
_REQUIRED_FILE_FIELDS = ("_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS",
                         "_VALUE_STATS", "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL")


def _combined(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _tuples(arr: pa.Array, *, none_as_empty: bool = False) -> list:
    """Each list of a list column as a tuple (None for a null list, or () with ``none_as_empty``).

    One conversion of the flattened values and slicing per row: ListArray.to_pylist builds a
    list object per row through a slower path."""
    arr = _combined(arr)
    n = len(arr)
    offsets_np = arr.offsets.to_numpy()
    steps = np.diff(offsets_np)
    if n and not arr.null_count and (steps == steps[0]).all():
        # every list of the same length (null counts of stats over the same columns): zip
        # groups the flattened values into tuples in C
        k = int(steps[0])
        return list(zip(*[iter(arr.flatten().to_pylist())] * k, strict=True)) if k else [()] * n
    flat = arr.values.to_pylist()
    offsets = offsets_np.tolist()
    nulls = arr.is_null().to_numpy(zero_copy_only=False).tolist() if arr.null_count else None
    out: list[tuple | None] = [tuple(flat[a:b]) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    if nulls is not None:
        empty = () if none_as_empty else None
        out = [empty if n else t for t, n in zip(out, nulls, strict=True)]
    return out


def _builder(cls: type) -> Callable[..., Any]:
    """A constructor of the frozen dataclass ``cls`` from all its field values in order, which
    fills the instance dict directly. A frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``, which made up most of building 100,000 entries; these classes have
    no ``__post_init__``, so the result is the same object (equal, same hash and repr).

    Generated with a dict display of the field names (as ``dataclasses`` generates ``__init__``):
    twice as fast as ``__init__``, where ``dict(zip(names, values))`` was no faster."""
    names = [f.name for f in dataclasses.fields(cls)]
    params = ", ".join(f"v{i}" for i in range(len(names)))
    items = ", ".join(f"{n!r}: v{i}" for i, n in enumerate(names))
    source = f"def build({params}):\n    obj = new(cls)\n    set_attr(obj, '__dict__', {{{items}}})\n    return obj\n"
    namespace: dict[str, Any] = {"new": object.__new__, "set_attr": object.__setattr__, "cls": cls}
    exec(source, namespace)  # noqa: S102 - source built from the dataclass's own field names
    return namespace["build"]


_new_stats = _builder(SimpleStats)
_new_file = _builder(DataFileMeta)
_new_entry = _builder(ManifestEntry)


def _no_nulls(*columns: pa.Array | pa.ChunkedArray) -> None:
    if any(c.null_count for c in columns):
        raise ValueError("a required field holds a null")


def _stats(arr: pa.Array) -> list[SimpleStats]:
    arr = _combined(arr)
    _no_nulls(arr, arr.field("_MIN_VALUES"), arr.field("_MAX_VALUES"))
    mins = arr.field("_MIN_VALUES").to_pylist()
    maxs = arr.field("_MAX_VALUES").to_pylist()
    names = {arr.type.field(i).name for i in range(arr.type.num_fields)}
    n = len(mins)
    nulls = _tuples(arr.field("_NULL_COUNTS")) if "_NULL_COUNTS" in names else [None] * n
    if n and mins.count(mins[0]) == n and maxs.count(maxs[0]) == n and nulls.count(nulls[0]) == n:
        # one shared object when every file has the same stats: the key stats of append
        # tables are all empty (the objects are frozen, sharing them is safe)
        return [_new_stats(mins[0], maxs[0], nulls[0])] * n
    return [_new_stats(a, b, c) for a, b, c in zip(mins, maxs, nulls, strict=True)]


def _optional(struct: pa.Array, names: set[str], name: str, n: int,
              convert: Callable[[pa.Array], list] | None = None) -> list:
    if name not in names:
        return [None] * n
    col = struct.field(name)
    return convert(col) if convert is not None else col.to_pylist()


def _millis(col: pa.Array) -> list:
    if pa.types.is_timestamp(col.type):
        col = col.cast(pa.timestamp("ms", tz=col.type.tz)).cast(pa.int64())
    return col.to_pylist()


def _file_sources(col: pa.Array) -> list:
    sources = {int(s): s for s in FileSource}
    return [None if v is None else sources[v] if v in sources else FileSource(v) for v in col.to_pylist()]


def entries_of(table: pa.Table) -> list[ManifestEntry]:
    """ManifestEntry objects of a decoded manifest table, equal to ``ManifestEntry.from_avro`` of
    each record (fields absent from the writer schema read as None, as ``dict.get`` does there).

    Raises ValueError / KeyError on a shape it does not know (a caller falls back to fastavro)."""
    with paused_gc():  # see impl.gcpause: a third of the build time otherwise
        return _entries_of(table)


def _entries_of(table: pa.Table) -> list[ManifestEntry]:
    n = table.num_rows
    f = _combined(table.column("_FILE"))
    names = {f.type.field(i).name for i in range(f.type.num_fields)}
    missing = [c for c in _REQUIRED_FILE_FIELDS if c not in names]
    if missing:
        raise KeyError(f"_FILE lacks {missing}")
    # a writer schema may declare a required field nullable: a null there is a corrupt entry,
    # which from_avro reports (with the file's path) on the fastavro path
    _no_nulls(f, *(table.column(c) for c in ("_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS")),
              *(f.field(c) for c in _REQUIRED_FILE_FIELDS))

    def col(name: str) -> list:
        return f.field(name).to_pylist()

    extra = (_tuples(f.field("_EXTRA_FILES"), none_as_empty=True) if "_EXTRA_FILES" in names
             else [()] * n)
    files = [
        _new_file(*row) for row in zip(
            col("_FILE_NAME"), col("_FILE_SIZE"), col("_ROW_COUNT"), col("_MIN_KEY"), col("_MAX_KEY"),
            _stats(f.field("_KEY_STATS")), _stats(f.field("_VALUE_STATS")),
            col("_MIN_SEQUENCE_NUMBER"), col("_MAX_SEQUENCE_NUMBER"), col("_SCHEMA_ID"), col("_LEVEL"),
            extra,
            _optional(f, names, "_CREATION_TIME", n, _millis),
            _optional(f, names, "_DELETE_ROW_COUNT", n),
            _optional(f, names, "_EMBEDDED_FILE_INDEX", n),
            _optional(f, names, "_FILE_SOURCE", n, _file_sources),
            _optional(f, names, "_VALUE_STATS_COLS", n, _tuples),
            _optional(f, names, "_EXTERNAL_PATH", n),
            _optional(f, names, "_FIRST_ROW_ID", n),
            _optional(f, names, "_WRITE_COLS", n, _tuples),
            _optional(f, names, "_WRITE_COLS_SEQUENCES", n, _tuples),
            strict=True)
    ]
    kinds = {int(k): k for k in FileKind}
    kind_col = table.column("_KIND").to_pylist()
    return [_new_entry(kinds[k] if k in kinds else FileKind(k), p, b, t, m) for k, p, b, t, m in zip(
        kind_col, table.column("_PARTITION").to_pylist(), table.column("_BUCKET").to_pylist(),
        table.column("_TOTAL_BUCKETS").to_pylist(), files, strict=True)]


def partition_entries(data: bytes, keep: Callable[[bytes], bool]
                      ) -> tuple[list[tuple[int, ManifestEntry]], set[bytes], int] | None:
    """(position in the file, entry) of the entries of a manifest whose ``_PARTITION`` ``keep``
    accepts, in file order; every distinct partition of the file; the number of entries. None
    when this decoder cannot (as :func:`manifest_entries`).

    With a partition index in the file's header (see :mod:`impl.format.partition_blocks`) only
    the blocks holding a kept entry are decompressed and decoded. Without, the partition column
    of the whole file is decoded first, then the blocks holding a kept entry in full."""
    try:
        decoded = _entry_blocks(data)
        if decoded is None:
            return None
        if decoded.total == 0:
            return [], set(), decoded.total
        through_index = _through_index(decoded, keep)
        if through_index is not None:
            return through_index
        # decompressed once: the blocks holding kept entries are decoded again below
        decoded = decoded.decompressed()
        parts = _binary(avro_columns.read_columns(decoded, ["_PARTITION"]).column("_PARTITION"))
        values = pc.unique(parts).to_pylist()
        wanted = [v for v in values if keep(v)]
        positions = np.flatnonzero(_in(parts, wanted)) if wanted else np.empty(0, np.int64)
        starts = np.cumsum((0,) + decoded.counts)
        blocks = np.unique(np.searchsorted(starts, positions, side="right") - 1).tolist()
        kept = _kept_entries(decoded, blocks, wanted) if wanted else []
        if len(kept) != len(positions):
            raise ValueError("kept rows and positions disagree")
        return kept, set(values), decoded.total
    except Exception:  # noqa: BLE001 - an accelerator: fastavro decodes what this cannot
        return None


def _through_index(decoded: avro_columns.DecodedBlocks, keep: Callable[[bytes], bool]
                   ) -> tuple[list[tuple[int, ManifestEntry]], set[bytes], int] | None:
    """:func:`partition_entries` through the file's partition index; None without one, or when
    the index does not agree with the file (its counts, or the entries found where it points):
    the caller then decodes the long way."""
    try:
        index = partition_blocks.decode(decoded.metadata.get(partition_blocks.KEY), decoded.counts)
    except (ValueError, TypeError, KeyError):
        return None
    if index is None:
        return None
    values = list(index.blocks)
    wanted = [v for v in values if keep(v)]
    kept = _kept_entries(decoded, index.blocks_of(wanted), wanted) if wanted else []
    if len(kept) != index.entries(wanted):
        return None
    return kept, set(values), decoded.total


def _binary(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A decoded ``_PARTITION`` column as plain binary (hash kernels take no views), checked for nulls."""
    parts = _combined(column)
    _no_nulls(parts)
    return parts.cast(pa.binary()) if pa.types.is_binary_view(parts.type) else parts


def _in(parts: pa.Array, wanted: list[bytes]) -> np.ndarray:
    return pc.is_in(parts, value_set=pa.array(wanted, type=parts.type)).to_numpy(zero_copy_only=False)


def _kept_entries(decoded: avro_columns.DecodedBlocks, blocks: list[int], wanted: list[bytes]) -> list[tuple[int, ManifestEntry]]:
    """(position in the file, entry) of the records of ``blocks`` in ``wanted`` partitions."""
    starts = np.cumsum((0,) + decoded.counts)
    table = avro_columns.read_columns(decoded.select(blocks))
    mask = _in(_binary(table.column("_PARTITION")), wanted)
    rows = np.concatenate([np.arange(starts[b], starts[b + 1]) for b in blocks])
    # entries of every record of those blocks, then the kept ones (pyarrow cannot filter the
    # view columns polars hands over; the blocks hold few other records)
    entries = [e for e, k in zip(entries_of(table), mask.tolist(), strict=True) if k]
    return list(zip(rows[mask].tolist(), entries, strict=True))


def _entry_blocks(data: bytes) -> avro_columns.DecodedBlocks | None:
    """The blocks of a manifest whose writer schema has the entry fields (None otherwise, or
    without polars)."""
    if not data or avro_columns.polars_module() is None:
        return None
    decoded = avro_columns.decode_blocks(data)
    record, _ = avro.record_schema(decoded.schema)
    fields = record.get("fields", []) if record is not None else []
    if not {"_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"} <= {f.get("name") for f in fields}:
        return None
    return decoded


# records per chunk a large manifest is decoded in (see manifest_entries)
_CHUNK_RECORDS = 16_384


def _chunks(decoded: avro_columns.DecodedBlocks, records: int) -> list[avro_columns.DecodedBlocks]:
    """Consecutive runs of whole blocks of about ``records`` records each (at least one block)."""
    out: list[avro_columns.DecodedBlocks] = []
    start = n = 0
    for i, count in enumerate(decoded.counts):
        n += count
        if n >= records or i == len(decoded.counts) - 1:
            out.append(decoded.select(range(start, i + 1)))
            start, n = i + 1, 0
    return out


def manifest_entries(data: bytes) -> list[ManifestEntry] | None:
    """The entries of a manifest file decoded column-wise, or None when this decoder cannot
    (no polars, a writer schema without the entry fields, anything polars refuses or a corrupt
    file): the caller then decodes with fastavro, which reports corruption precisely."""
    try:
        decoded = _entry_blocks(data)
        if decoded is None:
            return None
        if decoded.total == 0:
            return []
        chunks = _chunks(decoded, _CHUNK_RECORDS)
        if len(chunks) == 1:
            return entries_of(avro_columns.read_columns(decoded))
        # polars releases the GIL while it decodes: a worker decodes the next chunk while this
        # thread builds the objects of the last one
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            decoding = [pool.submit(avro_columns.read_columns, c) for c in chunks]
            out: list[ManifestEntry] = []
            for f in decoding:
                out.extend(entries_of(f.result()))
            return out
    except Exception:  # noqa: BLE001 - an accelerator: fastavro decodes what this cannot
        return None

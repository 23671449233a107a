"""Reading primary-key data files: raw KV rows, and the merged view of a bucket.

``merge_read`` reads the key, sequence and kind columns plus the user columns the merge needs,
merges all rows of the given files with the table's merge engine (deletes removed), then
projects. A projection is applied after the merge on purpose: partial-update and aggregation
results depend on every row of a key, and a ``sequence.field`` or sequence group decides which
row wins, so those columns are read even when not projected.

Predicates: a ``pyarrow.compute.Expression`` over user columns is applied to the merged rows
(always correct). When it only references trimmed primary-key columns it is also applied to the
raw rows before the merge, which is safe because every row of a key is kept or dropped
together. Filtering raw rows on value columns before the merge would be wrong: it could drop
the newest row of a key and resurrect an older one (deduplicate), or drop the rows that
provide some columns (partial-update) or part of an aggregate (aggregation).

Speed (issue 16): files are concatenated oldest first, so a stable sort of the key alone puts
each key's rows in sequence order (``merge_engine.merge_order``: numpy's sort for
integer-like keys and for one string key through order-preserving integer codes, checked,
else Arrow's full sort): a k-way merge of the sorted runs, not a full sort. Primary-key user columns are not decoded:
they are copies of their ``_KEY_`` columns. ``_SEQUENCE_NUMBER`` is not decoded either when the
files' sequence ranges follow each other and no file holds a key twice (checked on the keys;
otherwise the numbers are read): a file's rank then orders a key's rows exactly as the numbers
would. Row kinds are always decoded (``delete_row_count`` is not trusted: pypaimon 2.1.0 writes
0 for files holding -D rows). Whole-row engines gather only the output columns.
"""

from __future__ import annotations

import os
import posixpath
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.datafile.meta import DataFileMeta
from impl.errors import DataFileError, SchemaMismatchError
from impl.format.formats import open_reader
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.mergetree.deletion_vectors import keep_mask
from impl.mergetree.interval_partition import interval_partition
from impl.mergetree.kv import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, KeyCodec, KVLayout, retract_mask
from impl.mergetree.memory import MERGE_BUFFER_BYTES, MergeMemory, release_thread_pages
from impl.mergetree.merge_engine import MergeSpec, integer_keys, integer_like, key_groups, merge_kv, merge_order
from impl.mergetree.options import MergeTreeOptions, reads_top_level_row
from impl.schema.evolution import file_column, plan_columns
from impl.schema.records import TableSchema

# Kept as a name of this package; it is impl.errors.DataFileError.
CorruptDataFileError = DataFileError


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    # File decoding releases the GIL, so reading several files at once uses several cores.
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 2),
                                       thread_name_prefix="mergetree-read")
        return _POOL


def _forget_pool_after_fork() -> None:
    # A forked child has none of the parent's threads: a pool inherited from it would hang.
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def file_path(bucket_dir: str, f: DataFileMeta) -> str:
    return f.external_path or posixpath.join(bucket_dir, f.file_name)


def _read_one(file_io: FileIO, path: str, f: DataFileMeta, target: pa.Schema,
              deleted: np.ndarray | None = None, sources=None) -> pa.Table:
    """``f`` in the layout ``target``, without the rows ``deleted`` (its deletion vector);
    ``sources`` (``KVLayout.file_sources``) maps the columns of a file written under an older
    schema by field id."""
    try:
        source = file_io.open_input(path)
    except FileNotFoundError as e:
        raise DataFileError(path, "file is missing (deleted by expiration, rollback or orphan cleanup?)") from e
    with source:
        reader = open_reader(source, path)
        pairs, physical = _file_columns(target.names, set(reader.column_names), sources)
        read = reader.read(physical)
        table = pa.Table.from_arrays([read.column(p) for _, p in pairs], names=[c for c, _ in pairs])
    if table.num_rows != f.row_count:
        raise CorruptDataFileError(path, f"holds {table.num_rows} rows, its metadata says {f.row_count}")
    keep = keep_mask(deleted, 0, table.num_rows)
    if keep is not None:
        table = table.filter(pa.array(keep))
    return _conform_kv(table, {c for c, _ in pairs}, target, path)


def _file_columns(wanted: Sequence[str], present: set, sources: Mapping[str, str | None] | None
                  ) -> tuple[list[tuple[str, str]], list[str]]:
    """(pairs of (column wanted, physical column of the file), the distinct physical columns to
    read) of one data file: columns by field id, and the key copies of a thin-mode file."""
    pairs = plan_columns(wanted, present, sources)
    pairs += _thin_key_pairs(wanted, pairs, present, sources)
    return pairs, list(dict.fromkeys(p for _, p in pairs))


def _thin_key_pairs(wanted: Sequence[str], pairs: Sequence[tuple[str, str]], present: set,
                    sources: Mapping[str, str | None] | None) -> list[tuple[str, str]]:
    """(``_KEY_<k>``, physical column of ``k``) for each wanted key column a file lacks while it
    holds the user column: a thin-mode file (Paimon's ``KeyValueThinDataFileWriterImpl``;
    pypaimon-rust 0.4.0 writes every primary-key file so) stores no ``_KEY_`` copies. Paimon
    Java reads every key field from its value field anyway (``FormatReaderMapping.trimKeyFields``)."""
    found = {c for c, _ in pairs}
    out = []
    for name in wanted:
        if name in found or not name.startswith(KEY_PREFIX):
            continue
        user = name[len(KEY_PREFIX):]
        phys = user if sources is None else file_column(user, sources)
        if phys is not None and phys in present:
            out.append((name, phys))
    return out


def read_kv_tables(file_io: FileIO, bucket_dir: str, layout: KVLayout, files: Sequence[DataFileMeta],
                   columns: Sequence[str] | None = None,
                   deletion_vectors: Mapping[str, np.ndarray] | None = None) -> pa.Table:
    """Raw KV rows of ``files`` of one bucket directory, concatenated in the order given.

    ``deletion_vectors`` (data file name -> deleted row positions) drops those rows."""
    cols = list(layout.all_columns if columns is None else columns)
    unknown = [c for c in cols if c not in layout.arrow_types]
    if unknown:
        raise SchemaMismatchError(f"unknown KV column(s) {unknown}")
    target = layout.schema_for(cols)
    if not files:
        return target.empty_table()
    dvs = deletion_vectors or {}
    jobs = [(file_path(bucket_dir, f), f, dvs.get(f.file_name), layout.file_sources(f)) for f in files]
    if len(jobs) == 1:
        tables = [_read_one(file_io, jobs[0][0], jobs[0][1], target, jobs[0][2], jobs[0][3])]
    else:
        pool = _pool()
        futures = [pool.submit(_read_one, file_io, p, f, target, dv, src) for p, f, dv, src in jobs]
        tables = [fu.result() for fu in futures]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def read_kv_files(file_io: FileIO, paths: TablePaths, schema: TableSchema, partition_path: str, bucket: int,
                  files: Sequence[DataFileMeta], columns: Sequence[str] | None = None, *,
                  schemas=None) -> pa.Table:
    """Raw KV rows (``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, user columns) of ``files``.

    ``columns`` selects physical columns (default: all). Not merged, not sorted across files.
    ``schemas`` (a SchemaManager) maps files of older schemas by field id.
    """
    return read_kv_tables(file_io, paths.bucket_dir(partition_path, bucket), KVLayout(schema, schemas), files,
                          columns)


def _key_only_indices(kv: pa.Table, layout: KVLayout, predicate: pc.Expression) -> pa.Array | None:
    """Row indices of ``kv`` that satisfy ``predicate`` if it references only key columns, else None."""
    names = list(layout.key_names)
    probe = pa.Table.from_arrays([pa.array([], type=layout.arrow_types[c]) for c in layout.key_columns], names=names)
    try:
        probe.filter(predicate)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError, TypeError):
        return None
    keys = pa.Table.from_arrays([kv.column(c) for c in layout.key_columns] + [pa.array(np.arange(kv.num_rows))],
                                names=names + ["__row"])
    return keys.filter(predicate).column("__row")


def _disjoint_in_key_order(files: Sequence[DataFileMeta], layout: KVLayout, spec: MergeSpec) -> list | None:
    """``files`` sorted by key if no two overlap in key range and the engine picks whole rows, else None.

    Every data file is sorted by key with one row per key, so disjoint files need no merge
    for deduplicate and first-row (the other engines may still rewrite a lone row).
    """
    if spec.engine not in ("deduplicate", "first-row") or len(files) == 0:
        return None
    sections = interval_partition(files, KeyCodec(layout.key_types))
    if any(len(sec) != 1 for sec in sections):
        return None
    return [f for sec in sections for f in sec[0].files]


def merge_read(file_io: FileIO, paths: TablePaths, schema: TableSchema, options: MergeTreeOptions,
               partition_path: str, bucket: int, files: Sequence[DataFileMeta],
               projection: Sequence[str] | None = None, predicate: pc.Expression | None = None, *,
               schemas=None) -> pa.Table:
    """The merged rows of one bucket: user columns only, one row per live key, deletes removed.

    ``projection`` (user column names, output order) is applied after the merge;
    ``predicate`` (a pyarrow Expression over user columns) filters the merged rows;
    ``schemas`` (a SchemaManager) maps files of older schemas by field id.
    """
    layout = KVLayout(schema, schemas)
    spec = MergeSpec.from_schema(schema, options)
    out_cols = list(layout.value_names if projection is None else projection)
    unknown = [c for c in out_cols if c not in set(layout.value_names)]
    if unknown:
        raise SchemaMismatchError(f"projection names unknown column(s) {unknown} of schema {schema.id}")
    if predicate is not None and not isinstance(predicate, pc.Expression):
        raise TypeError(f"predicate must be a pyarrow.compute.Expression, got {type(predicate).__name__}")
    value_cols = spec.required_value_columns(out_cols, layout.value_names)
    disjoint = _disjoint_in_key_order(files, layout, spec)
    if disjoint is not None:
        return _read_disjoint(file_io, paths.bucket_dir(partition_path, bucket), layout, disjoint, value_cols,
                              out_cols, predicate)
    # Primary-key user columns hold the same values as their _KEY_ columns: read those once.
    aliases = key_aliases(layout, spec, value_cols)
    value_cols = [c for c in value_cols if c not in aliases]
    # Row kinds are always read: a file's delete_row_count cannot be trusted to be 0 only
    # without retractions (pypaimon 2.1.0 writes 0 for files holding -D rows).
    ordered = in_sequence_order(files)
    # Files whose sequence ranges follow each other need no sequence numbers decoded when each
    # holds a key once: a file's rank then orders a key's rows as its numbers would.
    ranked = ranks_order_like_sequence(ordered, layout, spec)
    columns = [*layout.key_columns, *([] if ranked else [SEQUENCE_NUMBER]), VALUE_KIND, *value_cols]
    bucket_dir = paths.bucket_dir(partition_path, bucket)
    kv = read_kv_tables(file_io, bucket_dir, layout, ordered, columns)
    if ranked:
        counts = [f.row_count for f in ordered]
        if _each_file_holds_keys_once(kv, layout.key_columns, counts):
            seq: pa.Array | pa.ChunkedArray = pa.array(np.repeat(np.arange(len(ordered), dtype=np.int64), counts))
        else:  # a file holds a key twice (or is not in key order): the real numbers decide
            seq = read_kv_tables(file_io, bucket_dir, layout, ordered, [SEQUENCE_NUMBER]).column(0)
        kv = kv.append_column(layout.schema_for([SEQUENCE_NUMBER]).field(0), seq)
    if reads_top_level_row(options, False) and kv.num_rows:
        levels = np.repeat(np.array([f.level for f in ordered], dtype=np.int64), [f.row_count for f in ordered])
        kv = topmost_level_rows(kv, spec, levels)
    if predicate is not None and kv.num_rows:
        rows = _key_only_indices(kv, layout, predicate)
        if rows is not None:
            kv = kv.take(rows)
    keep = [*value_cols, *aliases.values()]
    merged = merge_kv(kv, spec, drop_delete=True, final=True, columns=None if not spec.picks_whole_rows else keep)
    out = with_key_aliases(merged, aliases).select(out_cols)
    if predicate is not None:
        out = out.filter(predicate)
    return out


def topmost_level_rows(kv: pa.Table, spec: MergeSpec, levels: np.ndarray) -> pa.Table:
    """The rows of ``kv`` (``levels``: each row's file level) that Paimon's ``LookupMergeFunction``
    merges: every level-0 row of a key, and of its rows in levels >= 1 only those of its topmost
    level (a lookup compaction wrote there the key's merge with every row below)."""
    order = merge_order(kv, spec)
    g = key_groups(kv.select(list(spec.key_columns)).take(pa.array(order)), spec.key_columns)
    lv = levels[order]
    upper = np.where(lv > 0, lv, np.iinfo(np.int64).max)
    top = np.minimum.reduceat(upper, g.starts)[g.gid]
    keep = np.empty(len(lv), dtype=bool)
    keep[order] = (lv <= 0) | (lv == top)
    return kv if keep.all() else kv.filter(pa.array(keep))


def _read_disjoint(file_io: FileIO, bucket_dir: str, layout: KVLayout, files: Sequence[DataFileMeta],
                   value_cols: Sequence[str], out_cols: Sequence[str], predicate: pc.Expression | None) -> pa.Table:
    """:func:`merge_read` of key-disjoint files (given in key order) of a whole-row engine:
    rows are already in key order, one per key; nothing to merge, only retractions to drop."""
    # Keys and sequence numbers are not needed. Row kinds are: a file's delete_row_count of 0
    # does not prove it holds no retraction (pypaimon 2.1.0 writes 0 for files with -D rows).
    columns = [*(layout.key_columns if predicate is not None else []), VALUE_KIND, *value_cols]
    kv = read_kv_tables(file_io, bucket_dir, layout, files, columns)
    if predicate is not None and kv.num_rows:
        rows = _key_only_indices(kv, layout, predicate)
        if rows is not None:
            kv = kv.take(rows)
    retract = retract_mask(kv.column(VALUE_KIND))
    if retract.any():
        kv = kv.filter(pa.array(~retract))
    out = kv.select(list(out_cols))
    if predicate is not None:
        out = out.filter(predicate)
    return out


def key_aliases(layout: KVLayout, spec: MergeSpec, value_cols: Sequence[str]) -> dict[str, str]:
    """User column -> its ``_KEY_`` column, for the wanted primary-key columns a merge does not
    order by (a ``sequence.field`` column must stay in the KV rows)."""
    return {name: kc for name, kc in zip(layout.key_names, layout.key_columns, strict=True)
            if name in value_cols and name not in spec.sequence_fields}


def with_key_aliases(merged: pa.Table, aliases: Mapping[str, str]) -> pa.Table:
    """``merged`` with each aliased user column added as a copy of its key column."""
    for name, kc in aliases.items():
        merged = merged.append_column(name, merged.column(kc))
    return merged


def in_sequence_order(files: Sequence[DataFileMeta]) -> list[DataFileMeta]:
    """``files`` ordered by sequence numbers, so their concatenation holds each key's rows in
    sequence order when the files' sequence ranges do not overlap (the merge's fast path
    checks this; any order is still merged correctly)."""
    return sorted(files, key=lambda f: (f.min_sequence_number, f.max_sequence_number))


def _run_sequence(files: Sequence[DataFileMeta]) -> tuple[int, int]:
    """Where a sorted run sits in sequence order (its files' smallest and largest numbers)."""
    return (min((f.min_sequence_number for f in files), default=0),
            max((f.max_sequence_number for f in files), default=0))


def ranks_order_like_sequence(files: Sequence[DataFileMeta], layout: KVLayout, spec: MergeSpec) -> bool:
    """True when ``files`` (in sequence order) have sequence ranges that follow each other
    without overlap, integer-like keys or one string / binary key, and no ``sequence.field``:
    then, if every file holds a key at most once (:func:`_each_file_holds_keys_once`), ordering
    a key's rows by their file's rank is ordering them by sequence number, with no ties either way."""
    types = [layout.arrow_types[c] for c in layout.key_columns]
    one_string = len(types) == 1 and _string_like(types[0])
    if spec.sequence_fields or not (one_string or all(integer_like(t) for t in types)):
        return False
    return all(a.max_sequence_number < b.min_sequence_number for a, b in zip(files, files[1:], strict=False))


def _string_like(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)


def _each_file_holds_keys_once(kv: pa.Table, key_columns: Sequence[str], counts: Sequence[int]) -> bool:
    """True if the rows of each file (``counts`` consecutive rows of ``kv``) have strictly
    ascending keys: integer-like keys as numbers, one string / binary key bytewise (Arrow's
    comparison, which costs a fifth of decoding the sequence numbers it spares)."""
    keys = integer_keys(kv, key_columns)
    if keys is not None:
        return ascending_within_files(keys, counts)
    if len(key_columns) != 1 or not _string_like(kv.schema.field(key_columns[0]).type):
        return False
    col = kv.column(key_columns[0])
    start = 0
    for count in counts:
        # file by file: the two slices of a file's rows then share its chunks, which Arrow
        # compares without re-chunking (the whole column shifted by one row did not)
        rows = col.slice(start, count)
        start += count
        greater = pc.greater(rows.slice(1), rows.slice(0, count - 1)) if count > 1 else None
        if greater is not None and not pc.all(greater, skip_nulls=False).as_py():
            return False  # not ascending, or a null key (then all() is null)
    return True


def ascending_within_files(keys: Sequence[np.ndarray], counts: Sequence[int]) -> bool:
    """True if the rows of each file (``counts`` consecutive rows each) have strictly ascending
    keys (lexicographic over ``keys``), i.e. no file holds a key twice."""
    n = len(keys[0])
    if n < 2:
        return True
    if len(keys) == 1:
        greater = np.greater(keys[0][1:], keys[0][:-1])
    else:
        greater = np.zeros(n - 1, dtype=bool)
        equal = np.ones(n - 1, dtype=bool)
        for a in keys:
            greater |= equal & (a[1:] > a[:-1])
            equal &= a[1:] == a[:-1]
    ends = np.cumsum(counts)[:-1]
    greater[ends[(ends > 0) & (ends < n)] - 1] = True  # a file's first row follows another file
    return bool(greater.all())


# ---------------------------------------------------------------------------- bounded merges

# Rows a sorted run's buffer holds at most in the bounded merge.
MERGE_BATCH_ROWS = 256 * 1024
# Rows decoded at a time; a run's buffer takes decoded batches until it reaches its share.
_DECODE_ROWS = 16 * 1024


def _iter_file(file_io: FileIO, path: str, f: DataFileMeta, target: pa.Schema, batch_rows: int,
               deleted: np.ndarray | None = None, sources=None) -> Iterator[tuple[pa.Table, bool]]:
    """The rows of one data file as tables of at most ``batch_rows`` rows (conformed like
    ``_read_one``), each with whether it holds the file's last rows."""
    try:
        source = file_io.open_input(path)
    except FileNotFoundError as e:
        raise DataFileError(path, "file is missing (deleted by expiration, rollback or orphan cleanup?)") from e
    seen = 0
    with source:
        reader = open_reader(source, path)
        pairs, physical = _file_columns(target.names, set(reader.column_names), sources)
        present = {c for c, _ in pairs}
        for batch in reader.iter_batches(physical, batch_rows):
            keep = keep_mask(deleted, seen, batch.num_rows)
            seen += batch.num_rows
            t = pa.Table.from_arrays([batch.column(p) for _, p in pairs], names=[c for c, _ in pairs])
            yield _conform_kv(t if keep is None else t.filter(pa.array(keep)), present, target, path), seen >= f.row_count
    if seen != f.row_count:
        raise CorruptDataFileError(path, f"holds {seen} rows, its metadata says {f.row_count}")


def _conform_kv(table: pa.Table, present: set, target: pa.Schema, path: str) -> pa.Table:
    """``table`` (columns ``present`` of a data file) in the layout ``target``."""
    cols = []
    for field in target:
        if field.name in present:
            cols.append(table.column(field.name))
        elif field.nullable:
            # written under an older schema without this column
            cols.append(pa.nulls(table.num_rows, field.type))
        else:
            raise CorruptDataFileError(path, f"has no column {field.name!r}")
    out = pa.Table.from_arrays(cols, names=target.names)
    if out.schema != target:
        try:
            out = out.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise CorruptDataFileError(path, f"columns do not match the table schema ({e})") from e
    return out


def _rows_up_to(t: pa.Table, key_columns: Sequence[str], bound: Sequence) -> int:
    """How many leading rows of ``t`` (sorted by key, no null keys) have a key <= ``bound``."""
    le = None
    for i in reversed(range(len(key_columns))):
        col = t.column(key_columns[i])
        b = pa.scalar(bound[i], type=col.type)
        # lexicographic: k_i < b_i, or k_i == b_i and the remaining columns <= bound
        cur = pc.less_equal(col, b) if le is None else pc.or_(pc.less(col, b), pc.and_(pc.equal(col, b), le))
        le = cur
    assert le is not None
    return int(pc.sum(le).as_py() or 0)


def streamable_keys(layout: KVLayout) -> bool:
    """Key types whose Arrow comparison orders like ``sort_indices`` (floats: NaN does not)."""
    return all(not pa.types.is_floating(layout.arrow_types[c]) for c in layout.key_columns)


def iter_merged_runs(file_io: FileIO, bucket_dir: str, layout: KVLayout, spec: MergeSpec,
                     runs: Sequence[Sequence[DataFileMeta]], columns: Sequence[str], drop_delete: bool, *,
                     final: bool = False, predicate: pc.Expression | None = None,
                     batch_rows: int = MERGE_BATCH_ROWS, buffer_bytes: int = MERGE_BUFFER_BYTES,
                     deletion_vectors: Mapping[str, np.ndarray] | None = None,
                     extra_runs: Sequence[pa.Table] = (),
                     run_streams: Sequence[Iterable[pa.Table]] = (),
                     output: Sequence[str] | None = None, memory: MergeMemory | None = None,
                     release_pages: bool = False) -> Iterator[pa.Table]:
    """The merged rows of key-overlapping sorted runs, in key order, in bounded chunks.

    Each run (files in key order, one row per key) is decoded a few thousand rows at a time
    into a buffer of at most ``batch_rows`` rows and its share of ``buffer_bytes`` (at least
    one decoded batch). A chunk takes, from every run, the buffered rows whose key is <= the
    smallest last buffered key over the runs: every row of those keys is then in the chunk (a
    run holds a key once), so merging chunk by chunk gives exactly the merge of the whole.
    Memory is about ``buffer_bytes`` plus one chunk's merge, whatever the runs' sizes and
    number. ``columns`` must include the key, sequence and kind columns; ``predicate`` (key
    columns only) filters raw rows; ``deletion_vectors`` drops the deleted rows of the files
    that have one. ``extra_runs``: more sorted runs already in memory (tables of ``columns``,
    key order, one row per key), e.g. the rows a lookup found in files outside the merge.
    ``run_streams``: more sorted runs, each given as its tables in key order (e.g. a writer's
    spilled runs read back from local disk; a table is taken whole). ``output``: the columns
    of the merged chunks (default all). ``memory`` records what the buffers held.
    ``release_pages``: each read thread hands back the default pool's freed pages after every
    fill (:func:`impl.mergetree.memory.release_thread_pages`; a writer's compactions and spilled
    merges, which run while the write buffer fills).
    """
    if batch_rows <= 0:
        raise ValueError(f"batch_rows must be > 0, got {batch_rows}")
    target = layout.schema_for(columns)
    keys = list(layout.key_columns)
    decode_rows = min(batch_rows, _DECODE_ROWS)
    # Chunks concatenate the runs oldest first: a key's rows are then in sequence order, which
    # lets the merge use its fast key sort (any order merges correctly).
    runs = sorted(runs, key=_run_sequence)
    iters = [iter(_chain_files(file_io, bucket_dir, run, target, decode_rows, layout, deletion_vectors or {}))
             for run in runs]
    iters += [iter(_table_slices(t.select(list(columns)), decode_rows)) for t in extra_runs]
    iters += [_with_last(t.select(list(columns)) for t in stream) for stream in run_streams]
    share = max(buffer_bytes // max(len(iters), 1), 1)
    buffers: list[pa.Table | None] = [None] * len(iters)
    done = [False] * len(iters)
    last = [False] * len(iters)  # the buffer holds the run's last rows
    while True:
        empty = [i for i in range(len(iters))
                 if not done[i] and (buffers[i] is None or buffers[i].num_rows == 0)]  # type: ignore[union-attr]
        filled_all = _fill_all([iters[i] for i in empty], batch_rows, share, release_pages)
        for i, filled in zip(empty, filled_all, strict=True):
            if filled is None:
                done[i], buffers[i] = True, None
            else:
                buffers[i], last[i] = filled
        live = [i for i in range(len(iters)) if buffers[i] is not None and buffers[i].num_rows]  # type: ignore[union-attr]
        if not live:
            return
        if memory is not None:
            held = sum(buffers[i].get_total_buffer_size() for i in live)  # type: ignore[union-attr]
            memory.peak_bytes = max(memory.peak_bytes, held)
        if any(buffers[i].column(k).null_count for i in live for k in keys):  # type: ignore[union-attr]
            # null keys: Arrow comparisons cannot bound them; merge the rest whole
            rest = [buffers[i] for i in live] + [t for i in live for t, _ in iters[i]]
            yield from _merge_chunk(pa.concat_tables(rest), layout, spec, drop_delete, final, predicate, output)
            return
        # A run whose buffer holds its last rows does not bound the chunk: no later row of it
        # can hold a key the chunk takes. When every buffer is a run's last, all go at once.
        bounding = [i for i in live if not last[i]]
        lasts = [buffers[i].slice(buffers[i].num_rows - 1).select(keys).to_pylist()[0] for i in bounding]  # type: ignore[union-attr]
        bound = min((tuple(r[k] for k in keys) for r in lasts), default=None)
        parts = []
        for i in live:
            b = buffers[i]
            assert b is not None
            n = b.num_rows if bound is None else _rows_up_to(b, keys, bound)
            if n:
                parts.append(b.slice(0, n))
                buffers[i] = b.slice(n)
        chunk = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        del parts
        yield from _merge_chunk(chunk, layout, spec, drop_delete, final, predicate, output)


def _fill(it: Iterator[tuple[pa.Table, bool]], max_rows: int, max_bytes: int) -> tuple[pa.Table, bool] | None:
    """The next tables of a run, together up to ``max_rows`` rows or ``max_bytes`` bytes (at
    least one table), and whether they end the run; None when it is exhausted."""
    first = next(it, None)
    if first is None:
        return None
    tables, is_last = [first[0]], first[1]
    rows, size = first[0].num_rows, first[0].nbytes
    while not is_last and rows < max_rows and size < max_bytes:
        nxt = next(it, None)
        if nxt is None:
            break
        tables.append(nxt[0])
        is_last = nxt[1]
        rows += nxt[0].num_rows
        size += nxt[0].nbytes
    return (tables[0] if len(tables) == 1 else pa.concat_tables(tables)), is_last


def _fill_releasing(it: Iterator[tuple[pa.Table, bool]], max_rows: int,
                    max_bytes: int) -> tuple[pa.Table, bool] | None:
    """:func:`_fill`, then the thread's freed default-pool pages handed back."""
    try:
        return _fill(it, max_rows, max_bytes)
    finally:
        release_thread_pages()


def _fill_all(iters: Sequence[Iterator[tuple[pa.Table, bool]]], max_rows: int,
              max_bytes: int, release_pages: bool = False) -> list[tuple[pa.Table, bool] | None]:
    """:func:`_fill` of each run; several runs' files are decoded at once (Parquet decoding
    releases the GIL; each iterator is advanced by one thread)."""
    fill = _fill_releasing if release_pages else _fill
    if len(iters) == 1:
        return [fill(iters[0], max_rows, max_bytes)]
    pool = _pool()
    futures = [pool.submit(fill, it, max_rows, max_bytes) for it in iters]
    return [fu.result() for fu in futures]


def _table_slices(t: pa.Table, batch_rows: int) -> Iterator[tuple[pa.Table, bool]]:
    for start in range(0, t.num_rows, batch_rows):
        yield t.slice(start, batch_rows), start + batch_rows >= t.num_rows


def _with_last(tables: Iterable[pa.Table]) -> Iterator[tuple[pa.Table, bool]]:
    """Each table with whether it is the last one (one table of look-ahead)."""
    it = iter(tables)
    prev = next(it, None)
    while prev is not None:
        nxt = next(it, None)
        yield prev, nxt is None
        prev = nxt


def _chain_files(file_io: FileIO, bucket_dir: str, files: Sequence[DataFileMeta], target: pa.Schema,
                 batch_rows: int, layout: KVLayout,
                 deletion_vectors: Mapping[str, np.ndarray]) -> Iterator[tuple[pa.Table, bool]]:
    """The rows of a run's files in batches, each with whether it holds the run's last rows."""
    for j, f in enumerate(files):
        for t, file_end in _iter_file(file_io, file_path(bucket_dir, f), f, target, batch_rows,
                                      deletion_vectors.get(f.file_name), layout.file_sources(f)):
            yield t, file_end and j == len(files) - 1


def _merge_chunk(kv: pa.Table, layout: KVLayout, spec: MergeSpec, drop_delete: bool, final: bool,
                 predicate: pc.Expression | None, output: Sequence[str] | None) -> Iterator[pa.Table]:
    if predicate is not None and kv.num_rows:
        rows = _key_only_indices(kv, layout, predicate)
        if rows is not None:
            kv = kv.take(rows)
    if kv.num_rows:
        out = merge_kv(kv, spec, drop_delete, final=final, columns=output)
        if out.num_rows:
            yield out


def iter_merge_read(file_io: FileIO, paths: TablePaths, schema: TableSchema, options: MergeTreeOptions,
                    partition_path: str, bucket: int, files: Sequence[DataFileMeta],
                    projection: Sequence[str] | None = None, predicate: pc.Expression | None = None,
                    batch_rows: int = MERGE_BATCH_ROWS, *, schemas=None) -> Iterator[pa.Table]:
    """:func:`merge_read` as a stream of tables in key order, holding about
    :data:`~impl.mergetree.memory.MERGE_BUFFER_BYTES` of decoded rows over the sorted runs of a
    key-overlapping section (at most ``batch_rows`` per run; never the whole bucket)."""
    layout = KVLayout(schema, schemas)
    spec = MergeSpec.from_schema(schema, options)
    # float keys cannot be bounded in chunks; a key's topmost level is known once all is read
    if not streamable_keys(layout) or reads_top_level_row(options, False):
        yield merge_read(file_io, paths, schema, options, partition_path, bucket, files, projection, predicate,
                         schemas=schemas)
        return
    out_cols = list(layout.value_names if projection is None else projection)
    unknown = [c for c in out_cols if c not in set(layout.value_names)]
    if unknown:
        raise SchemaMismatchError(f"projection names unknown column(s) {unknown} of schema {schema.id}")
    value_cols = spec.required_value_columns(out_cols, layout.value_names)
    # primary-key user columns are read from their _KEY_ columns (as in merge_read)
    aliases = key_aliases(layout, spec, value_cols)
    value_cols = [c for c in value_cols if c not in aliases]
    columns = [*layout.key_columns, SEQUENCE_NUMBER, VALUE_KIND, *value_cols]
    output = [*value_cols, *aliases.values()] if spec.picks_whole_rows else None
    bucket_dir = paths.bucket_dir(partition_path, bucket)
    for section in interval_partition(files, KeyCodec(layout.key_types)):
        runs = [run.files for run in section]
        for merged in iter_merged_runs(file_io, bucket_dir, layout, spec, runs, columns, True, final=True,
                                       predicate=predicate, batch_rows=batch_rows, output=output):
            out = with_key_aliases(merged, aliases).select(out_cols)
            if predicate is not None:
                out = out.filter(predicate)
            if out.num_rows:
                yield out


def deletion_vector_read(file_io: FileIO, paths: TablePaths, schema: TableSchema, partition_path: str, bucket: int,
                         files: Sequence[DataFileMeta], deletion_vectors: Mapping[str, np.ndarray],
                         projection: Sequence[str] | None = None,
                         predicate: pc.Expression | None = None, *, schemas=None) -> pa.Table:
    """The rows of the level >= 1 files of a deletion-vector bucket: no merge.

    With deletion vectors, compaction keeps at most one valid row per key across levels >= 1
    (it marks every older row it supersedes as deleted) and drops retractions, so the rows
    are the concatenation of the files minus their deleted positions. Retract rows (written by
    another writer that kept them) are still dropped. Level-0 files must not be passed: they
    are not visible until compacted (Paimon's batch scan of such tables skips level 0).
    ``schemas`` (a SchemaManager) maps files of older schemas by field id.
    """
    layout = KVLayout(schema, schemas)
    out_cols = list(layout.value_names if projection is None else projection)
    unknown = [c for c in out_cols if c not in set(layout.value_names)]
    if unknown:
        raise SchemaMismatchError(f"projection names unknown column(s) {unknown} of schema {schema.id}")
    level0 = [f.file_name for f in files if f.level == 0]
    if level0:
        raise ValueError(f"deletion_vector_read takes level >= 1 files only, got level-0 {level0}")
    has_retracts = any(f.delete_row_count is None or f.delete_row_count > 0 for f in files)
    columns = [*([VALUE_KIND] if has_retracts else []), *out_cols]
    kv = read_kv_tables(file_io, paths.bucket_dir(partition_path, bucket), layout, files, columns, deletion_vectors)
    if has_retracts and kv.num_rows:
        retract = retract_mask(kv.column(VALUE_KIND))
        if retract.any():
            kv = kv.filter(pa.array(~retract))
    out = kv.select(out_cols)
    if predicate is not None and out.num_rows:
        out = out.filter(predicate)
    return out

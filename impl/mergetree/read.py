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
"""

from __future__ import annotations

import os
import posixpath
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from impl.errors import DataFileError, SchemaMismatchError
from impl.format.json_records import TableSchema
from impl.format.records import DataFileMeta
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.mergetree.interval_partition import interval_partition
from impl.mergetree.kv import SEQUENCE_NUMBER, VALUE_KIND, KeyCodec, KVLayout, retract_mask
from impl.mergetree.merge_engine import MergeSpec, merge_kv
from impl.mergetree.options import MergeTreeOptions

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


def _read_one(file_io: FileIO, path: str, f: DataFileMeta, target: pa.Schema) -> pa.Table:
    try:
        source = file_io.open_input(path)
    except FileNotFoundError as e:
        raise DataFileError(path, "file is missing (deleted by expiration, rollback or orphan cleanup?)") from e
    try:
        with source:
            pf = pq.ParquetFile(source)
            present = set(pf.schema_arrow.names)
            wanted = [c for c in target.names if c in present]
            table = pf.read(columns=wanted)
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as e:
        raise CorruptDataFileError(path, str(e)) from e
    if table.num_rows != f.row_count:
        raise CorruptDataFileError(path, f"holds {table.num_rows} rows, its metadata says {f.row_count}")
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


def read_kv_tables(file_io: FileIO, bucket_dir: str, layout: KVLayout, files: Sequence[DataFileMeta],
                   columns: Sequence[str] | None = None) -> pa.Table:
    """Raw KV rows of ``files`` of one bucket directory, concatenated in the order given."""
    cols = list(layout.all_columns if columns is None else columns)
    unknown = [c for c in cols if c not in layout.arrow_types]
    if unknown:
        raise SchemaMismatchError(f"unknown KV column(s) {unknown}")
    target = layout.schema_for(cols)
    if not files:
        return target.empty_table()
    jobs = [(file_path(bucket_dir, f), f) for f in files]
    if len(jobs) == 1:
        tables = [_read_one(file_io, jobs[0][0], jobs[0][1], target)]
    else:
        pool = _pool()
        futures = [pool.submit(_read_one, file_io, p, f, target) for p, f in jobs]
        tables = [fu.result() for fu in futures]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def read_kv_files(file_io: FileIO, paths: TablePaths, schema: TableSchema, partition_path: str, bucket: int,
                  files: Sequence[DataFileMeta], columns: Sequence[str] | None = None) -> pa.Table:
    """Raw KV rows (``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, user columns) of ``files``.

    ``columns`` selects physical columns (default: all). Not merged, not sorted across files.
    """
    return read_kv_tables(file_io, paths.bucket_dir(partition_path, bucket), KVLayout(schema), files, columns)


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
               projection: Sequence[str] | None = None, predicate: pc.Expression | None = None) -> pa.Table:
    """The merged rows of one bucket: user columns only, one row per live key, deletes removed.

    ``projection`` (user column names, output order) is applied after the merge;
    ``predicate`` (a pyarrow Expression over user columns) filters the merged rows.
    """
    layout = KVLayout(schema)
    spec = MergeSpec.from_schema(schema, options)
    out_cols = list(layout.value_names if projection is None else projection)
    unknown = [c for c in out_cols if c not in set(layout.value_names)]
    if unknown:
        raise SchemaMismatchError(f"projection names unknown column(s) {unknown} of schema {schema.id}")
    if predicate is not None and not isinstance(predicate, pc.Expression):
        raise TypeError(f"predicate must be a pyarrow.compute.Expression, got {type(predicate).__name__}")
    value_cols = spec.required_value_columns(out_cols, layout.value_names)
    disjoint = _disjoint_in_key_order(files, layout, spec)
    if disjoint is None:
        columns = [*layout.key_columns, SEQUENCE_NUMBER, VALUE_KIND, *value_cols]
    else:
        # nothing to merge: keys and sequence numbers are not needed, nor the row kinds
        # when no file holds a retraction
        has_retracts = any(f.delete_row_count is None or f.delete_row_count > 0 for f in disjoint)
        columns = [*(layout.key_columns if predicate is not None else []),
                   *([VALUE_KIND] if has_retracts else []), *value_cols]
    kv = read_kv_tables(file_io, paths.bucket_dir(partition_path, bucket), layout,
                        files if disjoint is None else disjoint, columns)
    if predicate is not None and kv.num_rows:
        rows = _key_only_indices(kv, layout, predicate)
        if rows is not None:
            kv = kv.take(rows)
    if disjoint is not None:
        # Files never overlap: rows are already in key order, one per key; nothing to merge,
        # only retractions to drop.
        merged = kv
        if VALUE_KIND in kv.column_names:
            retract = retract_mask(kv.column(VALUE_KIND))
            merged = kv.filter(pa.array(~retract)) if retract.any() else kv
    else:
        merged = merge_kv(kv, spec, drop_delete=True, final=True)
    out = merged.select(out_cols)
    if predicate is not None:
        out = out.filter(predicate)
    return out

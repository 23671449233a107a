"""Row-level changes through ``new_update()``: deletes by predicate of append tables
(pypaimon's ``delete_by_predicate``, :mod:`impl.write.delete`); column updates of data-evolution tables by row id (pypaimon's ``update_by_arrow_with_row_id``),
and upserts by key columns built on them (pypaimon's ``upsert_by_arrow_with_key``).

``table.new_batch_write_builder().new_update().with_update_type(["v"]).update_by_arrow_with_row_id(data)``
takes ``_ROW_ID`` and the updated columns, and returns CommitMessages for the builder's commit.
For each row-id group (a live file and the updates of its range) an update touches, it writes
one file holding the updated columns for the whole group, as Paimon's
DataEvolutionPartialWriteOperator and pypaimon do: the current values (the group's merged read)
with the updated rows replaced, ``_WRITE_COLS`` the updated columns and ``_FIRST_ROW_ID`` the
group's. Reads take each column from the newest file that wrote it, so the update wins.

The messages carry the snapshot the rows were read from: the commit refuses them
(:class:`impl.errors.RowIdConflictError`) if another commit updated, overwrote or deleted those
rows since (:func:`impl.commit.row_ids.check_column_updates`), so no update is lost.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta, FileSource
from impl.errors import RowIdNotExistError, SchemaMismatchError, UnsupportedTableFeatureError
from impl.predicate.predicate import Predicate
from impl.read.row_tracking import row_id_groups, row_id_range
from impl.read.scan import DataSplit, SnapshotReader, TableScan
from impl.read.table_read import TableRead
from impl.store.core import TableCore
from impl.store.schema import ROW_ID
from impl.write.append_writer import NO_ROLLING, RollingFileWriter
from impl.write.delete import deletion_messages, find_deletions
from impl.write.table_write import TableWrite, as_arrow_table, conform_input


class TableUpdate:
    """Column updates of one data-evolution table by ``_ROW_ID`` (Paimon's BatchTableUpdate)."""

    def __init__(self, core: TableCore, commit_user: str):
        self.core = core
        self.commit_user = commit_user
        self.update_cols: list[str] | None = None

    def _check_data_evolution(self) -> None:
        if not self.core.options.data_evolution:
            raise UnsupportedTableFeatureError(
                f"update of {self.core.identifier}: column updates by row id need option "
                f"'data-evolution.enabled' = true")

    def delete_by_predicate(self, predicate: Predicate | None) -> list[CommitMessage]:
        """CommitMessages deleting the rows of the latest snapshot ``predicate`` matches (None:
        every row) from an append table (pypaimon's name; see :mod:`impl.write.delete`):
        deletion vectors on ``deletion-vectors.enabled`` tables, else the touched files
        rewritten. Commit them with the builder's ``new_commit()``; none when no row matches."""
        return deletion_messages(self.core, find_deletions(self.core, predicate))

    def with_update_type(self, update_cols: Sequence[str]) -> "TableUpdate":
        """The columns the next updates rewrite (default: every column)."""
        self._check_data_evolution()
        cols = list(dict.fromkeys(update_cols))
        names = self.core.schema.field_names
        for c in cols:
            if c not in names:
                raise SchemaMismatchError(f"update of {self.core.identifier}: {c!r} is not a column (columns: {names})")
            if c in self.core.schema.partition_keys:
                raise SchemaMismatchError(f"update of {self.core.identifier}: {c!r} is a partition column")
        if not cols:
            raise SchemaMismatchError(f"update of {self.core.identifier}: no column to update")
        self.update_cols = cols
        return self

    def _columns(self) -> list[str]:
        if self.update_cols is not None:
            return self.update_cols
        return [n for n in self.core.schema.field_names if n not in self.core.schema.partition_keys]

    def update_by_arrow_with_row_id(self, data) -> list[CommitMessage]:
        """CommitMessages rewriting the update columns of the rows ``data`` names by ``_ROW_ID``."""
        self._check_data_evolution()
        core, name = self.core, self.core.identifier
        t = as_arrow_table(data)
        cols = self._columns()
        missing = [c for c in [ROW_ID, *cols] if c not in t.column_names]
        if missing:
            raise SchemaMismatchError(f"update of {name}: input lacks columns {missing} (has {t.column_names})")
        ids_col = t.column(ROW_ID)
        if not pa.types.is_integer(ids_col.type) or ids_col.null_count:
            raise SchemaMismatchError(f"update of {name}: _ROW_ID must be non-null integers, got {ids_col.type}")
        row_ids = ids_col.to_numpy().astype(np.int64)
        if len(np.unique(row_ids)) != len(row_ids):
            raise SchemaMismatchError(f"update of {name}: _ROW_ID holds duplicates")
        values = {c: _cast(t.column(c), core.arrow_schema.field(c).type, name, c) for c in cols}
        latest = core.snapshot_manager.latest_snapshot()
        if latest is None:
            if len(row_ids):
                raise RowIdNotExistError(name, int(row_ids[0]))
            return []
        groups: list[tuple[DataSplit, list[DataFileMeta], int]] = []  # (split, group files, first row id)
        by_bucket: dict[tuple[bytes, int], list] = {}
        for e in SnapshotReader(core).live_entries(latest):
            by_bucket.setdefault((e.partition, e.bucket), []).append(e)
        for (partition, bucket), es in by_bucket.items():
            split = DataSplit(latest.id, partition, bucket, es[0].total_buckets, core.partition_cache.path(partition),
                              tuple(e.file for e in es))
            groups.extend((split, g, row_id_range(g[0])[0]) for g in row_id_groups(split.files))
        groups.sort(key=lambda g: g[2])
        starts = np.array([g[2] for g in groups], dtype=np.int64)
        ends = np.array([g[2] + g[1][0].row_count for g in groups], dtype=np.int64)
        owner = np.searchsorted(starts, row_ids, side="right") - 1
        bad = (owner < 0) | (row_ids >= ends[np.maximum(owner, 0)]) if len(groups) else np.ones(len(row_ids), bool)
        if bad.any():
            raise RowIdNotExistError(name, int(row_ids[bad][0]))
        reader = TableRead(core, projection=cols)
        messages: list[CommitMessage] = []
        try:
            for g in np.unique(owner):
                split, files, first = groups[int(g)]
                rows = np.nonzero(owner == g)[0]
                current = reader.read_row_id_group(split, files, cols)
                merged = _replace_rows(current, row_ids[rows] - first, {c: v.take(rows) for c, v in values.items()})
                meta = self._write_group(split, merged, first)
                messages.append(CommitMessage(split.partition, split.bucket, split.total_buckets, new_files=(meta,),
                                              row_id_check_from=latest.id))
        except BaseException:
            # nothing references the groups written so far
            core.file_io.delete_quietly(
                core.paths.data_file_path(core.partition_cache.path(m.partition), m.bucket, f.file_name, f.external_path)
                for m in messages for f in m.new_files)
            raise
        return messages

    def upsert_by_arrow_with_key(self, data, upsert_keys: Sequence[str]) -> list[CommitMessage]:
        """CommitMessages upserting full rows by ``upsert_keys`` (pypaimon's ``upsert_by_arrow_with_key``):
        every live row whose keys equal an input row's takes its update columns (in place, same
        row id); an input row matching none is appended. Keys must be unique in the input.
        The match is made on the latest snapshot; an append of the same key committed meanwhile
        is not seen (as in pypaimon)."""
        self._check_data_evolution()
        core, name = self.core, self.core.identifier
        keys = list(dict.fromkeys(upsert_keys))
        if not keys:
            raise SchemaMismatchError(f"upsert into {name}: no key column")
        for k in keys:
            if k not in core.schema.field_names:
                raise SchemaMismatchError(f"upsert into {name}: key {k!r} is not a column "
                                          f"(columns: {core.schema.field_names})")
        t = conform_input(data, core)
        if t.group_by(keys).aggregate([]).num_rows != t.num_rows:
            raise SchemaMismatchError(f"upsert into {name}: the input holds a key {keys} more than once")
        current = _read_columns(core, [ROW_ID, *keys])
        index = pa.array(np.arange(t.num_rows, dtype=np.int64))
        joined = t.select(keys).append_column("__input", index).join(current, keys, join_type="inner")
        matched = joined.column("__input").to_numpy()
        cols = self._columns()
        update = pa.table({ROW_ID: joined.column(ROW_ID), **{c: t.column(c).take(pa.array(matched)) for c in cols}})
        messages = self.update_by_arrow_with_row_id(update) if update.num_rows else []
        fresh = np.ones(t.num_rows, dtype=bool)
        fresh[matched] = False
        if fresh.any():
            writer = TableWrite(core, self.commit_user)
            try:
                writer.write_arrow(t.filter(pa.array(fresh)))
                messages.extend(writer.prepare_commit())
            finally:
                writer.close()
        return messages

    def _write_group(self, split: DataSplit, merged: pa.Table, first_row_id: int) -> DataFileMeta:
        core = self.core
        cols = merged.column_names
        writer = RollingFileWriter(
            core.file_io, core.paths.bucket_dir(split.partition_path, split.bucket), merged.schema,
            [core.schema.field(c) for c in cols], schema_id=core.schema.id, target_file_size=NO_ROLLING,
            formats=core.options.write_formats, stats_mode=core.options.stats_mode, file_source=FileSource.APPEND,
            name_factory=core.paths.layout.namer(core.env.new_id).data_file, clock_millis=core.env.clock_millis)
        try:
            writer.write(merged)
            (meta,) = writer.prepare_commit()
        except BaseException:
            writer.abort()
            raise
        # the stats cover the written columns only: name them (a reader must not take them for all)
        return replace(meta, first_row_id=first_row_id, write_cols=tuple(cols),
                       value_stats_cols=meta.value_stats_cols or tuple(cols))


def _read_columns(core: TableCore, columns: Sequence[str]) -> pa.Table:
    """``columns`` of every row of the latest snapshot."""
    reader = TableRead(core, projection=columns)
    return reader.to_arrow(TableScan(core).plan().splits())


def _cast(col: pa.ChunkedArray, to: pa.DataType, table: str, name: str) -> pa.ChunkedArray:
    try:
        return col.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaMismatchError(f"update of {table}: column {name!r} ({col.type}) does not cast to {to}: {e}") from e


def _replace_rows(current: pa.Table, positions: np.ndarray, updates: dict[str, pa.ChunkedArray]) -> pa.Table:
    """``current`` with the rows at ``positions`` replaced by ``updates`` (one take per column)."""
    n = current.num_rows
    index = np.arange(n, dtype=np.int64)
    index[positions] = n + np.arange(len(positions), dtype=np.int64)
    take = pa.array(index)
    cols = [pc.take(pa.chunked_array([*current.column(c).chunks, *updates[c].chunks], current.schema.field(c).type),
                    take) for c in current.column_names]
    return pa.Table.from_arrays(cols, schema=current.schema)

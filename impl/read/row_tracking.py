"""Row tracking and data evolution at the table layer (``row-tracking.enabled``, ``data-evolution.enabled``).

Paimon 1.x gives every row of a row-tracking table (an append table with ``bucket`` = -1) a
stable id: the commit assigns each new data file a ``_FIRST_ROW_ID`` (its rows hold ids
``first_row_id .. first_row_id + row_count - 1``) and the snapshot records ``nextRowId``
(:mod:`impl.commit.row_ids`). Reads expose two system columns when a projection names them,
as Paimon's ``SpecialFields`` do: ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` (the snapshot that wrote
the row). A file may hold them physically (Paimon's compaction of such tables writes them);
where it does not, or a value is null, they come from the file's metadata: first row id plus
the row's position, and the file's max sequence number.

Compaction keeps the ids: it writes them (and the sequence numbers) as physical columns, with
no first row id on the output, as Paimon's append compactor does for these tables.

Data-evolution tables additionally let a file hold a subset of the columns (``_WRITE_COLS``,
as pypaimon's ``update_by_row_id`` writes them). Files whose row-id ranges overlap form a
group, and all files of a group cover the same range; each column of a row comes from the
group's newest file (highest max sequence number) that wrote it (Paimon's
DataEvolutionSplitRead), a column no file wrote reads as null.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.data.types import BIGINT, DataField
from impl.datafile.meta import DataFileMeta
from impl.errors import DataFileError
from impl.store.core import TableCore
from impl.store.schema import (
    ROW_ID,
    ROW_TRACKING_COLUMNS,
    SEQUENCE_NUMBER,
    is_row_tracking_column,
    row_tracking_field,
)

# Paimon's SpecialFields ids of the system columns
ROW_ID_FIELD_ID = 2**31 - 1 - 5
SEQUENCE_NUMBER_FIELD_ID = 2**31 - 1 - 1

# reads a file's columns (current names; system columns as stored, null where absent) in file order
ReadFile = Callable[[DataFileMeta, Sequence[str]], pa.Table]


# ---------------------------------------------------------------------------- table rules


def with_row_tracking_fields(schema: pa.Schema, fields: Sequence[DataField]) -> tuple[pa.Schema, list[DataField]]:
    """The schema a compaction of a row-tracking table writes: the columns, then ``_ROW_ID`` and
    ``_SEQUENCE_NUMBER`` (BIGINT NOT NULL, Paimon's field ids), as Paimon's append compactor does."""
    extra = [DataField(ROW_ID_FIELD_ID, ROW_ID, BIGINT(False)),
             DataField(SEQUENCE_NUMBER_FIELD_ID, SEQUENCE_NUMBER, BIGINT(False))]
    arrow = pa.schema([*schema, *(row_tracking_field(f.name) for f in extra)])
    return arrow, [*fields, *extra]


def compacted_row_tracking_files(after: Sequence[DataFileMeta], before: Sequence[DataFileMeta],
                                 column_names: Sequence[str]) -> list[DataFileMeta]:
    """Compaction outputs of a row-tracking table as Paimon writes them: no first row id (the ids
    are in the rows), write columns naming the system columns, sequence numbers counting on from
    the first input's (so the commit leaves them alone)."""
    seq = before[0].min_sequence_number if before else 0
    out = []
    for f in after:
        out.append(replace(f, first_row_id=None, write_cols=(*column_names, *ROW_TRACKING_COLUMNS),
                           min_sequence_number=seq, max_sequence_number=seq + f.row_count - 1))
        seq += f.row_count
    return out


# ---------------------------------------------------------------------------- system columns


def fill_row_tracking(t: pa.Table, f: DataFileMeta) -> pa.Table:
    """``t`` (all of file ``f``'s rows, in file order) with its system columns' nulls taken from
    the file's metadata: ``_ROW_ID`` = first row id + position, ``_SEQUENCE_NUMBER`` = the file's
    max sequence number (Paimon's DataFileRecordReader fallback)."""
    n = t.num_rows
    for name in ROW_TRACKING_COLUMNS:
        if name not in t.column_names:
            continue
        col = t.column(name).cast(pa.int64())
        if col.null_count:
            if name == ROW_ID:
                if f.first_row_id is None:
                    raise DataFileError(f.file_name, "a row-tracking file without a first row id or _ROW_ID values")
                fallback = pa.array(np.arange(f.first_row_id, f.first_row_id + n, dtype=np.int64))
            else:
                fallback = pa.array(np.full(n, f.max_sequence_number, dtype=np.int64))
            col = pc.coalesce(col, fallback)
        t = t.set_column(t.column_names.index(name), row_tracking_field(name), col)
    return t


# ---------------------------------------------------------------------------- data evolution


def row_id_range(f: DataFileMeta) -> tuple[int, int]:
    """First and last row id of file ``f`` (DataFileError if it has no first row id)."""
    if f.first_row_id is None:
        raise DataFileError(f.file_name, "a data-evolution table's file has no first row id")
    return f.first_row_id, f.first_row_id + f.row_count - 1


def row_id_groups(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """Files grouped by overlapping row-id range, by first row id; in a group, the newest (max
    sequence number) first. Every file of a group must cover the same range (DataFileError)."""
    ordered = sorted(files, key=lambda f: row_id_range(f))
    groups: list[list[DataFileMeta]] = []
    end = None
    for f in ordered:
        lo, hi = row_id_range(f)
        if groups and end is not None and lo <= end:
            groups[-1].append(f)
            end = max(end, hi)
        else:
            groups.append([f])
            end = hi
    for g in groups:
        ranges = {row_id_range(f) for f in g}
        if len(ranges) > 1:
            raise DataFileError(g[0].file_name, f"files {[f.file_name for f in g]} overlap in row ids "
                                f"but cover different ranges {sorted(ranges)}")
        g.sort(key=lambda f: -f.max_sequence_number)
    return groups


def written_field_ids(core: TableCore, f: DataFileMeta) -> set[int]:
    """Field ids of the user columns file ``f`` wrote (its ``_WRITE_COLS``; all when unset)."""
    schema = core.schema if f.schema_id == core.schema.id else core.schema_manager.schema(f.schema_id)
    if f.write_cols is None:
        return {fld.id for fld in schema.fields}
    wanted = set(f.write_cols)
    return {fld.id for fld in schema.fields if fld.name in wanted}


def read_evolved_group(core: TableCore, group: Sequence[DataFileMeta], columns: Sequence[str],
                       read_file: ReadFile) -> pa.Table:
    """``columns`` (user and system) of one row-id group: each user column from the newest file
    that wrote it, the system columns from the newest file (Paimon's DataEvolutionSplitRead)."""
    if len(group) == 1:
        return read_file(group[0], columns)
    n = group[0].row_count
    owner: dict[str, int] = {}
    for name in columns:
        if is_row_tracking_column(name):
            owner[name] = 0
            continue
        fid = core.schema.field(name).id
        for i, f in enumerate(group):
            if fid in written_field_ids(core, f):
                owner[name] = i
                break
    parts: dict[int, pa.Table] = {}
    for i in sorted(set(owner.values())):
        parts[i] = read_file(group[i], [c for c in columns if owner.get(c) == i])
        if parts[i].num_rows != n:
            raise DataFileError(group[i].file_name, f"holds {parts[i].num_rows} rows, its row-id group {n}")
    full = core.arrow_schema
    cols, fields = [], []
    for name in columns:
        field = row_tracking_field(name) if is_row_tracking_column(name) else full.field(name)
        cols.append(parts[owner[name]].column(name) if name in owner else pa.nulls(n, field.type))
        fields.append(field)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))

"""Column statistics of data files: collected with pyarrow.compute, stored as SimpleStats BinaryRows.

``metadata.stats-mode``: ``full`` keeps exact min / max; ``truncate(n)`` (Paimon's default,
n = 16) cuts strings to n characters, rounding the max up so it stays an upper bound (no
usable max when that is impossible); ``counts`` keeps only null counts; ``none`` nothing.
Columns whose type has no order (ARRAY, MAP, ROW) or no exact BinaryRow form here
(TIMESTAMP with nanoseconds) are left out, and ``value_stats_cols`` then lists the columns
that do have stats (None means all columns, as in Paimon).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from impl.format.binary_row import decode_row, encode_row
from impl.format.records import DataFileMeta, SimpleStats
from impl.format.types import DataField, DataType
from impl.table.options import StatsMode

_NO_STATS_ROOTS = ("ARRAY", "MAP", "ROW")


def has_stats(t: DataType) -> bool:
    if t.root in _NO_STATS_ROOTS:
        return False
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision if t.precision is not None else 6) > 6:
        return False
    return True


def _smaller(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return b if b < a else a


def _larger(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return b if b > a else a


def _truncate_min(v: Any, n: int):
    if isinstance(v, str) and len(v) > n:
        return v[:n]
    return v


def _truncate_max(v: Any, n: int):
    """An upper bound of ``v`` with at most n characters, or None when there is none."""
    if not isinstance(v, str) or len(v) <= n:
        return v
    head = list(v[:n])
    for i in range(len(head) - 1, -1, -1):
        c = ord(head[i])
        nxt = c + 1
        if 0xD800 <= nxt <= 0xDFFF:
            nxt = 0xE000
        if nxt <= 0x10FFFF:
            return "".join(head[:i]) + chr(nxt)
    return None


class StatsCollector:
    """Accumulates min / max / null count of each column over the batches of one file."""

    def __init__(self, fields: Sequence[DataField], mode: StatsMode):
        self.mode = mode
        self.fields = [f for f in fields if has_stats(f.type)]
        self.all_fields = len(self.fields) == len(fields)
        self.mins: list[Any] = [None] * len(self.fields)
        self.maxs: list[Any] = [None] * len(self.fields)
        self.nulls = [0] * len(self.fields)

    def update(self, batch: pa.Table | pa.RecordBatch) -> None:
        if self.mode.kind == "none":
            return
        for i, f in enumerate(self.fields):
            col = batch.column(f.name)
            self.nulls[i] += col.null_count
            if self.mode.kind == "counts" or col.null_count == len(col):
                continue
            mm = pc.min_max(col)
            self.mins[i] = _smaller(self.mins[i], mm["min"].as_py())
            self.maxs[i] = _larger(self.maxs[i], mm["max"].as_py())

    def result(self) -> tuple[SimpleStats, tuple[str, ...] | None]:
        """(stats, value_stats_cols) for a DataFileMeta."""
        types = [f.type.copy(True) for f in self.fields]
        cols = None if self.all_fields else tuple(f.name for f in self.fields)
        if self.mode.kind == "none":
            empty = encode_row([None] * len(types), types)
            return SimpleStats(empty, empty, None), cols
        mins, maxs = list(self.mins), list(self.maxs)
        if self.mode.kind == "truncate":
            mins = [_truncate_min(v, self.mode.length) for v in mins]
            maxs = [_truncate_max(v, self.mode.length) for v in maxs]
        return SimpleStats(encode_row(mins, types), encode_row(maxs, types), tuple(self.nulls)), cols


@dataclass(frozen=True)
class ColumnStats:
    """Decoded stats of one column of one file; min / max None when unknown."""

    min: Any
    max: Any
    null_count: int | None
    row_count: int | None


class FileStats:
    """Decoded statistics of one data file, looked up by column name (decoded lazily, once).

    ``names`` are the columns ``stats`` covers, in order (value stats: ``value_stats_cols`` or
    every column; key stats: the trimmed primary key). Unreadable stats count as unknown.
    """

    def __init__(self, stats: SimpleStats, names: Sequence[str], fields_by_name: dict[str, DataField],
                 row_count: int, path: str):
        self._stats = stats
        self._names = [n for n in names if n in fields_by_name]
        self._fields = fields_by_name
        self._row_count = row_count
        self._path = path
        self._decoded: dict[str, ColumnStats] | None = None

    @staticmethod
    def of_values(meta: DataFileMeta, fields_by_name: dict[str, DataField], all_names: Sequence[str]) -> "FileStats":
        names = list(all_names) if meta.value_stats_cols is None else list(meta.value_stats_cols)
        return FileStats(meta.value_stats, names, fields_by_name, meta.row_count, meta.file_name)

    @staticmethod
    def of_keys(meta: DataFileMeta, fields_by_name: dict[str, DataField], key_names: Sequence[str]) -> "FileStats":
        return FileStats(meta.key_stats, key_names, fields_by_name, meta.row_count, meta.file_name)

    def _decode(self) -> dict[str, ColumnStats]:
        types = [self._fields[n].type.copy(True) for n in self._names]
        try:
            mins = decode_row(self._stats.min_values, types, path=self._path)
            maxs = decode_row(self._stats.max_values, types, path=self._path)
        except Exception:  # noqa: BLE001 - stats we cannot read only cost pruning
            return {}
        nulls = self._stats.null_counts
        out = {}
        for i, n in enumerate(self._names):
            nc = nulls[i] if nulls is not None and i < len(nulls) else None
            out[n] = ColumnStats(mins[i], maxs[i], nc, self._row_count)
        return out

    def get(self, name: str) -> ColumnStats | None:
        if self._decoded is None:
            self._decoded = self._decode()
        return self._decoded.get(name)

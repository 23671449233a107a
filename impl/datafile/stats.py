"""Column statistics of data files (Paimon's SimpleStats): the one rule for collecting and reading them.

Collected with ``pyarrow.compute`` (one ``min_max`` per column and batch, never per row) and
stored as BinaryRows of min and max values plus a null count per column.

``metadata.stats-mode`` decides what a column keeps: ``full`` exact min / max; ``truncate(n)``
(Paimon's default, n = 16) strings cut to n characters, the max rounded up so it stays an
upper bound (no max when that is impossible); ``counts`` only null counts; ``none`` nothing.

Which mode a column gets follows Paimon's ``StatsCollectorFactories``: the value columns of
every data file take the table's mode -- on primary-key tables too, including the value copy
of a primary-key field -- while the ``_KEY_`` columns of primary-key files are system fields
and always keep ``truncate(128)``, whatever the table's mode. (Per-field
``fields.<name>.stats-mode`` is not implemented.) Min and max keys of a file are not stats:
they are its exact first and last key.

BINARY / VARBINARY columns keep a null count but no min / max, in every format, as Java's
collectors bound only ``Comparable`` values (a ``byte[]`` is not). Columns whose type has no
order (ARRAY, MAP, ROW, MULTISET) or no exact BinaryRow form here
(TIMESTAMP with nanoseconds) have no min / max. Value stats leave them out and list the
columns they do cover in ``value_stats_cols`` (None when that is every column), as Paimon's
dense stats store does; key stats keep every key field, with null min / max where there are none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from impl.data.binary_row import EMPTY_ROW, decode_row, encode_row
from impl.data.types import DataField, DataType
from impl.datafile.meta import DataFileMeta, SimpleStats

_NO_STATS_ROOTS = ("ARRAY", "MAP", "ROW", "MULTISET", "VARIANT")
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)
# what pyarrow may raise computing min / max of a column it cannot order
_MIN_MAX_ERRORS = (pa.ArrowNotImplementedError, pa.ArrowInvalid, ValueError, OverflowError)


class StatsModeLike(Protocol):
    """A ``metadata.stats-mode`` value: ``kind`` none / counts / full / truncate, ``length`` for truncate.

    ``impl.store.options.StatsMode`` is the parsed option; this module only reads the two fields,
    so the format layer does not depend on the table layer.
    """

    @property
    def kind(self) -> str: ...

    @property
    def length(self) -> int: ...


@dataclass(frozen=True)
class _Mode:
    kind: str
    length: int


# Paimon's default ``metadata.stats-mode``.
DEFAULT_STATS_MODE: StatsModeLike = _Mode("truncate", 16)
# Paimon's fixed mode for system fields (the ``_KEY_`` columns of primary-key files).
KEY_STATS_MODE: StatsModeLike = _Mode("truncate", 128)


def has_stats(t: DataType) -> bool:
    """Whether a column of type ``t`` can have a min and max here."""
    if t.root in _NO_STATS_ROOTS:
        return False
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision if t.precision is not None else 6) > 6:
        return False
    return True


def truncate_min(value: Any, length: int) -> Any:
    """A lower bound of ``value`` with at most ``length`` characters (non-strings unchanged)."""
    if isinstance(value, str) and len(value) > length:
        return value[:length]
    return value


def truncate_max(value: Any, length: int) -> Any:
    """An upper bound of ``value`` with at most ``length`` characters, or None when there is none.

    Cut to ``length`` characters, then increment the last character that can be incremented
    (dropping those after it), so the bound sorts after every string with the original
    prefix. Surrogates are skipped: they are not encodable in UTF-8.
    """
    if not isinstance(value, str) or len(value) <= length:
        return value
    chars = list(value[:length])
    while chars:
        code_point = ord(chars[-1]) + 1
        if code_point in _SURROGATES:
            code_point = _SURROGATES.stop
        if code_point <= _MAX_CODE_POINT:
            chars[-1] = chr(code_point)
            return "".join(chars)
        chars.pop()
    return None


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _smaller(a: Any, b: Any) -> Any:
    # NaN is a batch's min / max only when the batch holds nothing but NaN (pyarrow skips NaN
    # otherwise), so it loses to any number: batch by batch gives what the whole column gives.
    if a is None or _is_nan(a):
        return b if b is not None else a
    if b is None or _is_nan(b):
        return a
    return b if b < a else a


def _larger(a: Any, b: Any) -> Any:
    if a is None or _is_nan(a):
        return b if b is not None else a
    if b is None or _is_nan(b):
        return a
    return b if b > a else a


def _encodable(value: Any, t: DataType) -> bool:
    if value is None:
        return True
    try:
        encode_row([value], [t])
        return True
    except (ValueError, TypeError, OverflowError, AttributeError):
        return False


class StatsCollector:
    """Accumulates min / max / null count of some columns over the batches of one file.

    ``names`` are the columns as the batches name them, ``types`` their types. ``dense``
    (value stats) leaves out the columns without stats; otherwise (key stats, whose rows must
    hold every key field) they stay, with null min and max.
    """

    def __init__(self, names: Sequence[str], types: Sequence[DataType], mode: StatsModeLike, *, dense: bool = True):
        if len(names) != len(types):
            raise ValueError(f"{len(names)} column names for {len(types)} types")
        columns = list(zip(names, types, strict=True))
        self.mode = mode
        self.dense = dense
        self.covers_all = not dense or all(has_stats(t) for _, t in columns)
        self.columns = columns if not dense else [(n, t) for n, t in columns if has_stats(t)]
        self.mins: list[Any] = [None] * len(self.columns)
        self.maxs: list[Any] = [None] * len(self.columns)
        self.null_counts: list[int | None] = [0] * len(self.columns)

    @staticmethod
    def of_fields(fields: Sequence[DataField], mode: StatsModeLike) -> "StatsCollector":
        """Value stats of the given user fields."""
        return StatsCollector([f.name for f in fields], [f.type for f in fields], mode)

    def update(self, batch: pa.Table | pa.RecordBatch) -> None:
        if self.mode.kind == "none":
            return
        for i, (name, t) in enumerate(self.columns):
            col = batch.column(name)
            before = self.null_counts[i]
            self.null_counts[i] = None if before is None else before + col.null_count
            if self.mode.kind == "counts" or col.null_count == len(col) or not has_stats(t) or t.is_binary:
                continue  # binary: Java bounds only Comparable values, and a byte[] is none
            try:
                mm = pc.min_max(col)
            except _MIN_MAX_ERRORS:
                continue  # no order pyarrow knows: this batch adds no bounds
            self.mins[i] = _smaller(self.mins[i], mm["min"].as_py())
            self.maxs[i] = _larger(self.maxs[i], mm["max"].as_py())

    def update_bounds(self, bounds: Mapping[str, tuple[Any, Any, int | None]]) -> None:
        """Fold bounds known from elsewhere (a Parquet footer another writer wrote): per column
        name (min, max, null count) of some rows; min / max None when the rows hold no value
        or the bounds are unknown, null count None when unknown (the file's is then unknown)."""
        if self.mode.kind == "none":
            return
        for i, (name, t) in enumerate(self.columns):
            lo, hi, nulls = bounds.get(name, (None, None, None))
            before = self.null_counts[i]
            self.null_counts[i] = None if before is None or nulls is None else before + nulls
            if self.mode.kind == "counts" or not has_stats(t) or t.is_binary:
                continue
            self.mins[i] = _smaller(self.mins[i], lo)
            self.maxs[i] = _larger(self.maxs[i], hi)

    def result(self) -> tuple[SimpleStats, tuple[str, ...] | None]:
        """(stats, value_stats_cols) for a DataFileMeta; value_stats_cols None when every column is covered."""
        types = [t.copy(True) for _, t in self.columns]
        if self.mode.kind == "none":
            return self._none_stats(types)
        cols = None if self.covers_all else tuple(n for n, _ in self.columns)
        mins, maxs = list(self.mins), list(self.maxs)
        if self.mode.kind == "truncate":
            mins = [truncate_min(v, self.mode.length) for v in mins]
            maxs = [truncate_max(v, self.mode.length) for v in maxs]
        for i, t in enumerate(types):
            if not (_encodable(mins[i], t) and _encodable(maxs[i], t)):
                mins[i] = maxs[i] = None  # e.g. a value outside what the BinaryRow type can hold
        return SimpleStats(encode_row(mins, types), encode_row(maxs, types), tuple(self.null_counts)), cols


    def _none_stats(self, types: list[DataType]) -> tuple[SimpleStats, tuple[str, ...] | None]:
        """Stats of ``metadata.stats-mode`` = none, in the shape Paimon Java 1.4 writes (read
        back from its manifests): the dense store (value stats) covers no column -- empty min
        and max rows, an empty null-count array and an empty ``_VALUE_STATS_COLS`` list
        (``SimpleStatsProducer`` drops the columns whose mode is none); otherwise (key stats)
        one null min / max and a null count per column, as ``SimpleStatsConverter.toBinary``
        gives for ``SimpleColStats.NONE``. The null-count array is never null: Java's
        ``SimpleStatsEvolution`` reads its size."""
        if self.dense:
            return SimpleStats(EMPTY_ROW, EMPTY_ROW, ()), ()
        empty = encode_row([None] * len(types), types)
        return SimpleStats(empty, empty, (None,) * len(types)), None


def collect_stats(table: pa.Table, names: Sequence[str], types: Sequence[DataType], mode: StatsModeLike, *,
                  dense: bool = True) -> tuple[SimpleStats, tuple[str, ...] | None]:
    """(stats, value_stats_cols) of columns ``names`` of one whole file's rows."""
    collector = StatsCollector(names, types, mode, dense=dense)
    collector.update(table)
    return collector.result()


# ============================================================================ reading


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

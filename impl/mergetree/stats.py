"""Column statistics of a data file as Paimon's SimpleStats (min row, max row, null counts).

One ``pyarrow.compute.min_max`` per column (a loop over columns, not rows). A column whose type
cannot live in a BinaryRow (ARRAY, MAP, ROW) gets null min and max but a real null count.

String columns that are not primary-key fields follow Paimon's default ``metadata.stats-mode``
``truncate(16)``: the min is cut to 16 characters, the max is cut and its last character
incremented so it stays an upper bound (null when no such bound exists). Primary-key fields
keep full values, as Paimon does, so key ranges stay exact.
"""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from impl.format.binary_row import encode_row
from impl.format.records import SimpleStats
from impl.format.types import DataType

TRUNCATE_LENGTH = 16
_NOT_IN_ROW = {"ARRAY", "MAP", "ROW", "MULTISET"}
_MAX_CODE_POINT = 0x10FFFF


def truncate_min(text: str, length: int = TRUNCATE_LENGTH) -> str:
    return text[:length]


def truncate_max(text: str, length: int = TRUNCATE_LENGTH) -> str | None:
    """Shortest-prefix upper bound of ``text``: cut to ``length`` and bump the last character."""
    if len(text) <= length:
        return text
    chars = list(text[:length])
    while chars:
        cp = ord(chars[-1]) + 1
        if 0xD800 <= cp <= 0xDFFF:  # skip the surrogate block: not encodable in UTF-8
            cp = 0xE000
        if cp <= _MAX_CODE_POINT:
            chars[-1] = chr(cp)
            return "".join(chars)
        chars.pop()
    return None


def column_stats(
    table: pa.Table,
    columns: Sequence[str],
    types: Sequence[DataType],
    full_columns: frozenset[str] | set[str] = frozenset(),
) -> SimpleStats:
    """SimpleStats of ``columns`` of ``table``, encoded with ``types``."""
    mins, maxs, nulls = [], [], []
    for name, t in zip(columns, types):
        col = table.column(name)
        nulls.append(int(col.null_count))
        lo = hi = None
        if t.root not in _NOT_IN_ROW and col.null_count < len(col):
            try:
                mm = pc.min_max(col)
                lo, hi = mm["min"].as_py(), mm["max"].as_py()
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid, ValueError, OverflowError):
                lo = hi = None
            if t.is_string and name not in full_columns:
                lo = truncate_min(lo) if lo is not None else None
                hi = truncate_max(hi) if hi is not None else None
            if not _encodable(lo, t) or not _encodable(hi, t):
                lo = hi = None
        mins.append(lo)
        maxs.append(hi)
    return SimpleStats(encode_row(mins, types), encode_row(maxs, types), tuple(nulls))


def _encodable(value, t: DataType) -> bool:
    if value is None:
        return True
    try:
        encode_row([value], [t])
        return True
    except (ValueError, TypeError, OverflowError, AttributeError):
        return False

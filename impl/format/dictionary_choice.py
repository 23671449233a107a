"""Which columns of a Parquet file to dictionary-encode: a sample's choice, reused for a table's
next files (:class:`DictionaryChoice`)."""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def dictionary_columns(kv: pa.Table, sample_rows: int = 1024, max_distinct_ratio: float = 0.5, *,
                       unique: Sequence[str] = (), repeated: Sequence[str] = ()) -> list[str]:
    """Columns worth dictionary encoding: few distinct values in an evenly spread sample.

    Dictionary-encoding a column of mostly unique values (keys, sequence numbers, measures)
    costs about half the write time and makes the file larger; repeated values (partition
    columns, row kinds, categories) shrink a lot with it. Columns in ``unique`` (known to hold
    distinct values: a KV file's sequence numbers, a one-field key) are never encoded and
    columns in ``repeated`` (a tiny domain: row kinds) always are, without sampling them: the
    sample costs a take and a hash count per column, paid for every file written (1,024 rows:
    0.3 ms for a 25k-row file against 1.2 ms for 4,096, about 5 % of a write-only primary-key
    write; a column far from the threshold is decided the same either way).
    """
    n = kv.num_rows
    if n == 0:
        return []
    skip = set(unique) | set(repeated)
    names = kv.column_names
    out = [c for c in repeated if c in names]
    sampled = [f.name for f in kv.schema if f.name not in skip and not pa.types.is_nested(f.type)]
    if not sampled:
        return out
    kv = kv.select(sampled)
    if n > sample_rows:
        kv = kv.take(pa.array(np.linspace(0, n - 1, sample_rows).astype(np.int64)))
    for name in sampled:
        distinct = _count_distinct(kv.column(name))
        if distinct is not None and distinct <= max(1.0, max_distinct_ratio * kv.num_rows):
            out.append(name)
    return out


def _count_distinct(col: pa.ChunkedArray) -> int | None:
    """Distinct values of a sample column (null counts as one), None if Arrow cannot hash it.
    Integers and floats without nulls are counted by numpy (sorting a few thousand numbers
    is cheaper than building Arrow's hash table)."""
    t = col.type
    if col.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return int(np.unique(col.to_numpy()).size)
    try:
        return int(pc.count_distinct(col, mode="all").as_py())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return None


class DictionaryChoice:
    """A table's :func:`dictionary_columns` choice, reused for its next ``REUSE_FILES`` files of
    the same columns.

    A sample costs a take and a hash count per column, about 0.45 ms per file: a quarter of
    encoding a 7,500-row file (a 300k-row write in 10 commits writes 40 of them). A table's
    columns keep their character from one file to the next (its buckets hold rows spread by
    hash), and a choice only trades encoding time for file size: every choice reads back the
    same rows. A choice made on fewer rows than a full sample is never reused.

        >>> choice = DictionaryChoice()
        >>> t = pa.table({"kind": pa.array([0, 1] * 1024, pa.int8()), "id": pa.array(range(2048))})
        >>> choice.columns(t, unique=(), repeated=())
        ['kind']
    """

    REUSE_FILES = 16

    def __init__(self) -> None:
        # (column names, choice, files left). Writers of several buckets flush side by side and
        # ask at once: the lock makes one of them sample and the others reuse its choice (a
        # sample is about 0.45 ms; without the lock every flush that raced sampled again)
        self._state: tuple[tuple[str, ...], list[str], int] | None = None
        self._lock = threading.Lock()

    def columns(self, kv: pa.Table, unique: Sequence[str], repeated: Sequence[str],
                sample_rows: int = 1024) -> list[str]:
        """:func:`dictionary_columns` of ``kv``, or the last choice for the same columns."""
        names = tuple(kv.column_names)
        with self._lock:
            state = self._state
            if state is not None and state[0] == names and state[2] > 0:
                self._state = (names, state[1], state[2] - 1)
                return list(state[1])
            choice = dictionary_columns(kv, sample_rows, unique=unique, repeated=repeated)
            self._state = (names, choice, self.REUSE_FILES - 1) if kv.num_rows >= sample_rows else None
            return list(choice)

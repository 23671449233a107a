"""Lookup: where a key lives in the levels >= 1 of one bucket (file and row position).

Paimon's ``LookupLevels`` answers "the latest row of key k in levels > i" from local lookup
files built per data file. Here a data file's lookup structure is its key columns plus the row
position, read once and kept in an LRU cache bounded by ``max_bytes`` (default 256 MB, as
``lookup.cache-max-memory-size``); the cache lives as long as the bucket's writer, so later
compactions reuse it (data files are immutable, so a file name always means the same rows).

A query is vectorized: the query keys are hash-joined against each candidate file whose key
range overlaps the query's range. Used by compaction with deletion vectors: every key a
compaction writes from level 0 is looked up in the files it does not rewrite, and the positions
found are marked deleted there. With the first-row engine, the keys found there are dropped from
the compaction's output instead (the first row, already in a higher level, wins). Engines that
merge a key's rows (partial-update, aggregation, sequence.field) also need the old row itself
(:meth:`LookupLevels.lookup_rows`): then the cache holds whole rows, not only keys.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.datafile.meta import DataFileMeta
from impl.mergetree.kv import KeyCodec, KVLayout
from impl.mergetree.read import read_kv_tables

_POS = "__paimon_lookup_pos"
DEFAULT_LOOKUP_CACHE_BYTES = 256 * 1024 * 1024


def key_bounds(keys: pa.Table, key_cols: Sequence[str], codec: KeyCodec) -> tuple[tuple, tuple]:
    """Sort keys (``codec.sort_key``) of the smallest and largest key of ``keys`` (non-empty)."""
    order = pc.sort_indices(keys, sort_keys=[(c, "ascending") for c in key_cols])
    first = keys.take(order.slice(0, 1)).to_pylist()[0]
    last = keys.take(order.slice(len(order) - 1, 1)).to_pylist()[0]
    return (codec.sort_key(codec.encode([first[c] for c in key_cols])),
            codec.sort_key(codec.encode([last[c] for c in key_cols])))


def overlapping(files: Sequence[DataFileMeta], bounds: tuple[tuple, tuple], codec: KeyCodec) -> list[DataFileMeta]:
    """The files whose key range meets ``bounds`` (from :func:`key_bounds`)."""
    lo, hi = bounds
    return [f for f in files if not (codec.sort_key(f.max_key) < lo or codec.sort_key(f.min_key) > hi)]


class LookupLevels:
    """Key -> (file, position) lookups over data files of one bucket, with a bounded key cache."""

    def __init__(self, file_io, bucket_dir: str, layout: KVLayout, codec: KeyCodec,
                 max_bytes: int = DEFAULT_LOOKUP_CACHE_BYTES, with_values: bool = False):
        """``with_values``: cache whole KV rows (for :meth:`lookup_rows`), not only the keys."""
        self.with_values = with_values
        self.file_io = file_io
        self.bucket_dir = bucket_dir
        self.layout = layout
        self.codec = codec
        self.max_bytes = max_bytes
        self._cache: OrderedDict[str, pa.Table] = OrderedDict()
        self._cached_bytes = 0
        self.files_loaded = 0  # lookup structures built (observability: reuse across compactions)

    def _keys_of(self, f: DataFileMeta) -> pa.Table:
        t = self._cache.get(f.file_name)
        if t is not None:
            self._cache.move_to_end(f.file_name)
            return t
        keys = read_kv_tables(self.file_io, self.bucket_dir, self.layout, [f],
                              None if self.with_values else list(self.layout.key_columns))
        t = keys.append_column(_POS, pa.array(np.arange(keys.num_rows, dtype=np.int64)))
        self.files_loaded += 1
        self._cache[f.file_name] = t
        self._cached_bytes += t.nbytes
        while self._cached_bytes > self.max_bytes and len(self._cache) > 1:
            _, old = self._cache.popitem(last=False)
            self._cached_bytes -= old.nbytes
        return t

    def forget(self, names: Sequence[str]) -> None:
        """Drop the cached structures of files that left the levels."""
        for n in names:
            t = self._cache.pop(n, None)
            if t is not None:
                self._cached_bytes -= t.nbytes

    def contained_keys(self, keys: pa.Table, files: Sequence[DataFileMeta]) -> pa.Table:
        """The distinct keys of ``keys`` (key columns) that some row of ``files`` holds (first-row's
        "does the key already exist in a higher level", Paimon's FirstRowMergeFunctionWrapper)."""
        key_cols = list(self.layout.key_columns)
        found = []
        for _, query, table in self._candidates(keys, files):
            hits = query.join(table.select(key_cols), key_cols, join_type="left semi")
            if hits.num_rows:
                found.append(hits)
        if not found:
            return self.layout.empty().select(key_cols)
        return pa.concat_tables(found).group_by(key_cols).aggregate([])

    def lookup_rows(self, keys: pa.Table, files: Sequence[DataFileMeta],
                    vectors: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], pa.Table]:
        """Like :meth:`lookup`, plus the KV rows (all columns) found that ``vectors`` (file name
        -> deleted positions) do not delete: a key's current row in ``files`` (needs
        ``with_values``)."""
        if not self.with_values:
            raise ValueError("lookup_rows needs a LookupLevels built with with_values=True")
        key_cols = list(self.layout.key_columns)
        all_cols = list(self.layout.all_columns)
        out: dict[str, np.ndarray] = {}
        rows: list[pa.Table] = []
        for f, query, table in self._candidates(keys, files):
            hits = table.join(query, key_cols, join_type="inner")
            if not hits.num_rows:
                continue
            pos = hits.column(_POS).to_numpy()
            out[f.file_name] = np.sort(pos).astype(np.uint32)
            deleted = vectors.get(f.file_name)
            if deleted is not None and len(deleted):
                hits = hits.filter(pa.array(~np.isin(pos, deleted)))
            rows.append(hits.select(all_cols).cast(self.layout.schema_for(all_cols)))  # joins drop NOT NULL
        if not rows:
            return out, self.layout.empty()
        return out, pa.concat_tables(rows)

    def lookup(self, keys: pa.Table, files: Sequence[DataFileMeta]) -> dict[str, np.ndarray]:
        """Positions, per file of ``files``, of the rows whose key is in ``keys`` (key columns).

        Files whose key range cannot hold any of the keys are not opened.
        """
        key_cols = list(self.layout.key_columns)
        out: dict[str, np.ndarray] = {}
        for f, query, table in self._candidates(keys, files):
            hits = table.join(query, key_cols, join_type="inner")
            if hits.num_rows:
                out[f.file_name] = np.sort(hits.column(_POS).to_numpy()).astype(np.uint32)
        return out

    def _candidates(self, keys: pa.Table, files: Sequence[DataFileMeta]
                    ) -> Iterator[tuple[DataFileMeta, pa.Table, pa.Table]]:
        """(file, the distinct keys of ``keys``, the file's cached keys) for each file of ``files``
        whose key range may hold one of ``keys``; files that cannot are not opened, and the
        distinct keys are computed once, only if some file qualifies."""
        if keys.num_rows == 0 or not files:
            return
        key_cols = list(self.layout.key_columns)
        keys = keys.select(key_cols)
        query = None
        for f in overlapping(files, key_bounds(keys, key_cols, self.codec), self.codec):
            if query is None:
                query = keys.group_by(key_cols).aggregate([])
            yield f, query, self._keys_of(f)

"""Changelog of a compaction: changelog producers ``lookup`` and ``full-compaction``.

Both compare, for every key a compaction brings up, the key's previous version with its new
one (Paimon's LookupChangelogMergeFunctionWrapper / FullChangelogMergeFunctionWrapper):

- ``lookup``: on every compaction that takes level-0 files (level 0 is forced up after each
  flush, as for deletion vectors), the keys of those files; previous version = the key's row in
  the level >= 1 files (with their deletion vectors), new version = its newest level-0 row;
- ``full-compaction``: on every compaction into the max level, the keys of the inputs below the
  max level; previous version = the key's row in the max-level inputs, new version = its newest
  row below.

Per key: new +I/+U and no previous -> +I; new +I/+U and a previous -> -U previous, +U new (also
when equal: Paimon's ``changelog-producer.row-deduplicate`` is false by default); new -U/-D and
a previous -> -D previous; new -U/-D and no previous -> nothing. Changelog rows carry the new
version's sequence number, -U before +U, in key order. The new version: with deduplicate
without ``sequence.field``, the key's newest row; with partial-update, aggregation or a
``sequence.field``, the merge of the previous version (as the oldest row) with the new rows,
as the compaction writes it (Paimon's LookupChangelogMergeFunctionWrapper merges the
looked-up row the same way); with first-row and ``lookup``: a key's first row never changes,
so only a key with no previous version yields a row, +I (Paimon's FirstRowMergeFunctionWrapper).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.datafile.meta import DataFileMeta
from impl.mergetree.kv import SEQUENCE_NUMBER, VALUE_KIND, KeyCodec, KVLayout, RowKind
from impl.mergetree.lookup import key_bounds, overlapping
from impl.mergetree.merge_engine import MergeSpec, merge_kv
from impl.options.values import MergeEngine

_N, _O, _ORD = "__paimon_new", "__paimon_old", "__paimon_order"


def changelog_rows(old: pa.Table, new: pa.Table, layout: KVLayout, inserts_only: bool = False) -> pa.Table:
    """Changelog KV rows for ``new`` (one row per key, any kind, key order) against ``old``
    (at most one +I/+U row per key): see the module docstring. ``inserts_only`` (first-row):
    only the +I rows of keys with no previous version."""
    keys = list(layout.key_columns)
    cols = list(layout.all_columns)
    if new.num_rows == 0:
        return layout.empty()
    left = new.select(keys).append_column(_N, pa.array(np.arange(new.num_rows, dtype=np.int64)))
    right = old.select(keys).append_column(_O, pa.array(np.arange(old.num_rows, dtype=np.int64)))
    joined = left.join(right, keys, join_type="left outer")
    n_idx = joined.column(_N).to_numpy()
    o_col = joined.column(_O)
    has_old = ~np.asarray(o_col.is_null().to_numpy(zero_copy_only=False))
    o_idx = o_col.fill_null(0).to_numpy()
    kinds = new.column(VALUE_KIND).to_numpy()[n_idx]
    adds = (kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)
    seq = new.column(SEQUENCE_NUMBER).to_numpy()[n_idx]

    pieces = []

    def piece(source: pa.Table, rows: np.ndarray, kind: int, order: np.ndarray, sub: int, seqs: np.ndarray) -> None:
        if not len(rows):
            return
        t = source.select(cols).take(pa.array(rows))
        t = t.set_column(t.schema.get_field_index(VALUE_KIND), VALUE_KIND,
                         pa.array(np.full(len(rows), kind, dtype=np.int8)))
        t = t.set_column(t.schema.get_field_index(SEQUENCE_NUMBER), SEQUENCE_NUMBER, pa.array(seqs, pa.int64()))
        pieces.append(t.append_column(_ORD, pa.array(order * 2 + sub, pa.int64())))

    before = adds & has_old & (not inserts_only)
    piece(old, o_idx[before], RowKind.UPDATE_BEFORE, n_idx[before], 0, seq[before])
    piece(new, n_idx[before], RowKind.UPDATE_AFTER, n_idx[before], 1, seq[before])
    fresh = adds & ~has_old
    piece(new, n_idx[fresh], RowKind.INSERT, n_idx[fresh], 1, seq[fresh])
    gone = ~adds & has_old & (not inserts_only)
    piece(old, o_idx[gone], RowKind.DELETE, n_idx[gone], 0, seq[gone])
    if not pieces:
        return layout.empty()
    out = pa.concat_tables(pieces)
    return out.take(pc.sort_indices(out, sort_keys=[(_ORD, "ascending")])).drop_columns([_ORD])


def compaction_changelog(read, layout: KVLayout, spec: MergeSpec, new_files: Sequence[DataFileMeta],
                         old_files: Sequence[DataFileMeta], vectors: Mapping[str, np.ndarray],
                         codec: KeyCodec) -> pa.Table:
    """The changelog rows of the keys of ``new_files`` against their rows in ``old_files``
    (only the old files whose key range meets the new keys are read).

    ``read(files, vectors)`` returns the KV rows (all columns) of files, minus deleted rows.
    """
    if not new_files:
        return layout.empty()
    first_row = spec.engine is MergeEngine.FIRST_ROW
    raw = read(new_files, {})
    # versions as a read shows them (final: aggregation's all-retraction keys read as +I)
    new = merge_kv(raw, spec, drop_delete=False, final=True)
    if not old_files or new.num_rows == 0:
        return changelog_rows(layout.empty(), new, layout, first_row)
    keys = list(layout.key_columns)
    old_files = overlapping(old_files, key_bounds(new.select(keys), keys, codec), codec)
    if not old_files:
        return changelog_rows(layout.empty(), new, layout, first_row)
    old_all = read(old_files, vectors)
    old_all = old_all.join(new.select(keys), keys, join_type="left semi")
    old = merge_kv(old_all, spec, drop_delete=True, final=True)
    if old.num_rows and merges_old(spec):
        # the new version is the old one merged with the new rows (the old row as the oldest input)
        cols = list(layout.all_columns)
        new = merge_kv(pa.concat_tables([old.select(cols).cast(raw.schema), raw.select(cols)]), spec,
                       drop_delete=False, final=True)
    return changelog_rows(old, new, layout, first_row)


def merges_old(spec: MergeSpec) -> bool:
    """True if a key's new version depends on its previous one: every engine but deduplicate
    without ``sequence.field`` (the newest row) and first-row (the oldest row)."""
    if spec.engine is MergeEngine.FIRST_ROW:
        return False
    return spec.engine is not MergeEngine.DEDUPLICATE or bool(spec.sequence_fields)

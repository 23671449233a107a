"""Merge engines of primary-key tables, as pure columnar functions over KV tables.

Input: a KV table (see :mod:`impl.mergetree.kv`) sorted by key, then by the ``sequence.field``
columns (if any), then by ``_SEQUENCE_NUMBER`` -- :func:`sort_kv` produces that order
(:func:`merge_order`: Arrow's stable ``sort_indices``, or, for integer-like keys and one
string / binary key (as order-preserving integer codes, :mod:`impl.mergetree.key_codes`),
numpy's sort, which gives the same permutation far cheaper). Output:
one row per key, in key order, in the same KV layout. Rows of one key are contiguous after the
sort, so every engine works on group boundaries found with numpy, and picks or reduces values
with ``take`` / numpy ``reduceat`` / one pyarrow ``group_by``: never a Python loop over rows.

``drop_delete=False`` keeps a retracting result (a -D/-U winner of deduplicate, a removed row
of partial-update) so that a later merge with older runs still sees the delete; lower LSM
levels and level-0 flushes merge this way. ``drop_delete=True`` (the highest non-empty level,
and reads) removes such rows. ``final=True`` marks a read's merge, whose result is not stored.

Semantics per engine (Paimon's, except where noted):

deduplicate
    The row with the highest order wins; if the winner is -U/-D the key is deleted.
    ``ignore-delete`` drops -U/-D input rows before merging.
first-row
    The row with the lowest order wins. -U/-D rows are ignored (Paimon rejects them unless
    ``ignore-delete`` is set; we always ignore them).
partial-update
    Per column, the last non-null value of the +I/+U rows. -U/-D rows: dropped with
    ``ignore-delete``; with ``partial-update.remove-record-on-delete`` a -D resets the row
    (only rows after the last -D count; a key whose last -D has no +I/+U after it is deleted;
    -U rows are ignored); with ``fields.<g>.sequence-group`` a retraction that wins its group
    sets the group's fields to null, and a key of retractions alone is deleted. Otherwise a
    -U/-D is an error (:class:`MergeEngineError`).
    A sequence group ``fields.<s>.sequence-group=a,b`` makes the row with the highest ``s``
    (ties: the later row; rows whose ``s`` is null are skipped) provide ``s``, ``a`` and ``b``,
    nulls included. A key holding one row is not merged: the row is kept as written, kind
    included (Paimon's ``ReducerMergeFunctionWrapper``), so a lone row whose group sequence
    is null keeps that group's fields. A group's field may name an aggregate function
    (``fields.<f>.aggregate-function``, else ``fields.default-aggregate-function``; one of
    :data:`GROUP_AGG_FUNCTIONS`): it aggregates the field over every row taking part in the
    group (a retraction subtracts from a sum, is skipped with ``ignore-retract``, else refused).
    Note: remove-record-on-delete is exact only when the merged batch holds every row since the
    delete; like Paimon, a level-0 flush of ``-D, +I(partial)`` writes a row that a later merge
    completes with older column values.
aggregation
    Per column an aggregate function (``fields.<f>.aggregate-function``, default
    ``fields.default-aggregate-function``, else last_non_null_value); primary-key and partition
    columns pass through. A key is never deleted and what a read returns is always +I.
    Retractions (-U/-D rows): sum subtracts; count subtracts one; last_value becomes null;
    last_non_null_value becomes null when the retracted value is non-null (as in Paimon this
    one is not associative: a retraction merged with newer rows before it meets the value it
    retracts turns into a plain null, which a later merge skips); every other function raises
    unless ``fields.<f>.ignore-retract=true``, which makes retractions no-ops for that column.
    Unlike Paimon, a stored (non-``final``) merge of a key whose rows are all retractions is
    one combined -D row (sum/count: the retracted amount; last_non_null_value: a retracted
    non-null value, if any) instead of an +I row of nulls and negated sums: that +I would later
    count as a real first_value / last_value. ``drop_delete`` never drops such rows; the
    ``final`` merge of a read turns them into Paimon's +I result. Java Paimon and pypaimon read
    these -D rows as the retractions they are, so they see the same values.
    ``count`` is compaction-safe here: writers store 1 (non-null input) or 0 (null input) per
    row (:meth:`MergeSpec.prepare_input`) and merges add these partial counts. Paimon's own
    count restarted at 1 on every merge, which is why Paimon removed it.

Ordering with ``sequence.field``: (key, sequence fields ascending with nulls first -- or
descending with ``sequence.field.sort-order=descending`` --, ``_SEQUENCE_NUMBER``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Literal, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.data.types import DataField
from impl.errors import InvalidOptionError, MergeEngineError
from impl.format.memory_pool import pooled_array, read_pool, write_pool
from impl.mergetree.key_codes import KeyCodes, string_key_codes
from impl.mergetree.kv import KEY_PREFIX, SEQUENCE_NUMBER, SYSTEM_COLUMNS, VALUE_KIND, KVLayout, RowKind, retract_mask
from impl.mergetree.options import MergeTreeOptions
from impl.options.values import MergeEngine
from impl.schema.records import TableSchema

_NUMERIC = {"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL"}
_COMPARABLE = _NUMERIC | {"VARCHAR", "CHAR", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ"}

# function -> type roots it accepts (None: any type)
AGG_FUNCTIONS: dict[str, set[str] | None] = {
    "sum": _NUMERIC,
    "product": _NUMERIC,
    "count": {"INT", "BIGINT"},
    "min": _COMPARABLE,
    "max": _COMPARABLE,
    "last_value": None,
    "last_non_null_value": None,
    "first_value": None,
    "first_non_null_value": None,
    "listagg": {"VARCHAR", "CHAR"},
    "bool_and": {"BOOLEAN"},
    "bool_or": {"BOOLEAN"},
}
_LEGACY_NAMES = {"first_not_null_value": "first_non_null_value"}
RETRACTABLE = frozenset({"sum", "count", "last_value", "last_non_null_value"})
_HASH_AGG = {"sum": "sum", "count": "sum", "product": "product", "min": "min", "max": "max",
             "bool_and": "all", "bool_or": "any"}


@dataclass(frozen=True)
class FieldAgg:
    """The aggregate function of one column."""

    function: str
    ignore_retract: bool = False
    delimiter: str = ","

    @property
    def supports_retract(self) -> bool:
        return self.ignore_retract or self.function in RETRACTABLE


@dataclass(frozen=True)
class SequenceGroup:
    """``fields.<sequence_fields>.sequence-group = <fields>`` of partial-update."""

    sequence_fields: tuple[str, ...]
    fields: tuple[str, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return self.sequence_fields + self.fields


@dataclass(frozen=True)
class MergeSpec:
    """Everything a merge needs to know about a table: engine, key columns, ordering, per-column rules."""

    engine: MergeEngine
    key_columns: tuple[str, ...]
    passthrough: tuple[str, ...] = ()  # primary-key and partition user columns: copied, never merged
    sequence_fields: tuple[str, ...] = ()
    sequence_descending: bool = False
    ignore_delete: bool = False
    aggregators: Mapping[str, FieldAgg] = field(default_factory=dict)
    sequence_groups: tuple[SequenceGroup, ...] = ()
    remove_record_on_delete: bool = False

    # ------------------------------------------------------------------ construction

    @staticmethod
    def from_schema(schema: TableSchema, options: MergeTreeOptions) -> "MergeSpec":
        """Build and validate the merge rules of a table (raises InvalidOptionError)."""
        _check_ordering_fields(schema, options)
        passthrough = tuple(dict.fromkeys((*schema.primary_keys, *schema.partition_keys)))
        engine = options.merge_engine
        return MergeSpec(
            engine=engine,
            key_columns=KVLayout(schema).key_columns,
            passthrough=passthrough,
            sequence_fields=tuple(options.sequence_fields),
            sequence_descending=options.sequence_field_descending,
            ignore_delete=options.ignore_delete,
            aggregators=_aggregators(schema, options, passthrough),
            sequence_groups=_sequence_groups(schema, options, passthrough),
            remove_record_on_delete=(engine is MergeEngine.PARTIAL_UPDATE
                                     and options.partial_update_remove_record_on_delete),
        )

    @property
    def picks_whole_rows(self) -> bool:
        """True if the merged row of a key is one of its input rows (deduplicate, first-row)."""
        return self.engine in _ROW_PICKERS

    # ------------------------------------------------------------------ writer side

    def required_value_columns(self, projection: Sequence[str], all_columns: Sequence[str]) -> list[str]:
        """User columns a merge must read to produce ``projection`` correctly (in schema order)."""
        need = set(projection) | set(self.sequence_fields)
        for g in self.sequence_groups:
            if need.intersection(g.columns):
                need.update(g.sequence_fields)
        return [c for c in all_columns if c in need]

    def drops_retract_input(self) -> bool:
        """True when -U/-D input rows are discarded on write (ignore-delete, or first-row)."""
        return self.ignore_delete or self.engine is MergeEngine.FIRST_ROW

    def check_retract_allowed(self, columns: Sequence[str] | None = None) -> None:
        """Raise MergeEngineError if this engine cannot apply -U/-D rows (to ``columns``)."""
        if self.drops_retract_input() or self.engine is MergeEngine.DEDUPLICATE:
            return
        if self.engine is MergeEngine.PARTIAL_UPDATE:
            if self.sequence_groups:
                for name, agg in self.aggregators.items():
                    if (columns is None or name in columns) and not (agg.ignore_retract or agg.function == "sum"):
                        raise MergeEngineError(
                            f"aggregate function '{agg.function}' of sequence-group field {name!r} cannot apply -U/-D "
                            f"rows; set 'fields.{name}.ignore-retract'='true' to ignore them")
                return
            if self.remove_record_on_delete:
                return
            raise MergeEngineError(
                "merge-engine=partial-update cannot apply -U/-D rows; set 'ignore-delete', "
                "'partial-update.remove-record-on-delete' or a 'fields.<f>.sequence-group'")
        for name, agg in self.aggregators.items():
            if columns is not None and name not in columns:
                continue
            if not agg.supports_retract:
                raise MergeEngineError(
                    f"aggregate function '{agg.function}' of column {name!r} cannot apply -U/-D rows; "
                    f"set 'fields.{name}.ignore-retract'='true' to ignore them")

    def prepare_input(self, user: pa.Table, kinds: pa.Array) -> tuple[pa.Table, pa.Array]:
        """Apply the engine's input rules to written rows before they get sequence numbers.

        Drops -U/-D rows when the engine ignores them, raises if it cannot apply them, and
        stores ``count`` columns as partial counts (1 for a non-null value, 0 for null).
        """
        retract = retract_mask(kinds)
        if retract.any():
            if self.drops_retract_input():
                keep = pa.array(~retract)
                user, kinds = user.filter(keep), kinds.filter(keep)
            else:
                self.check_retract_allowed()
        counts = [n for n, a in self.aggregators.items() if a.function == "count"]
        for name in counts:
            i = user.schema.get_field_index(name)
            col = user.column(i)
            ones = pc.if_else(pc.is_valid(col), 1, 0).cast(col.type)
            user = user.set_column(i, user.schema.field(i), ones)
        return user, kinds

    # ------------------------------------------------------------------ ordering

    def sort_keys(self) -> list[tuple]:
        keys: list[tuple] = [(c, "ascending") for c in self.key_columns]
        order = "descending" if self.sequence_descending else "ascending"
        keys += [(f, order, "at_start") for f in self.sequence_fields]
        keys.append((SEQUENCE_NUMBER, "ascending"))
        return keys


# ---------------------------------------------------------------------------- validation


def _check_ordering_fields(schema: TableSchema, options: MergeTreeOptions) -> None:
    names = set(schema.field_names)
    for name in options.sequence_fields:
        if name not in names:
            raise InvalidOptionError(f"option 'sequence.field': {name!r} is not a field of the table")
    if options.rowkind_field is not None and options.rowkind_field not in names:
        raise InvalidOptionError(f"option 'rowkind.field': {options.rowkind_field!r} is not a field of the table")


# Aggregate functions of partial-update sequence-group fields that are implemented: those whose
# result does not depend on the order rows arrive in (Paimon applies a row of an older group
# sequence with ``aggReversed``, which for these is ``agg``).
GROUP_AGG_FUNCTIONS = frozenset({"sum", "product", "min", "max", "bool_and", "bool_or"})


def _partial_update_aggregators(schema: TableSchema, options: MergeTreeOptions,
                                passthrough: tuple[str, ...]) -> dict[str, FieldAgg]:
    """The aggregate functions of partial-update fields (Paimon's ``getAggFuncName``): a field
    of a sequence group takes ``fields.<f>.aggregate-function`` (else the default function);
    the sequence fields and the primary key take none; any other field may only name
    ``last_non_null_value``, which is partial-update's own rule."""
    sequence = {c for seq, _ in options.field_sequence_groups for c in seq}
    members = {c for _, fs in options.field_sequence_groups for c in fs}
    aggregators: dict[str, FieldAgg] = {}
    for f in schema.fields:
        if f.name in passthrough or f.name in sequence:
            continue
        fn = options.field_aggregate_functions.get(f.name) or options.default_aggregate_function
        if fn is None:
            continue
        fn = _LEGACY_NAMES.get(fn, fn)
        if f.name not in members:
            if fn != "last_non_null_value":
                raise InvalidOptionError(
                    f"option 'fields.{f.name}.aggregate-function' = {fn!r} of merge-engine=partial-update needs "
                    f"field {f.name!r} in a sequence group ('fields.<seq>.sequence-group')")
            continue
        if fn not in GROUP_AGG_FUNCTIONS:
            raise InvalidOptionError(
                f"option 'fields.{f.name}.aggregate-function' = {fn!r} within a partial-update sequence group is "
                f"not supported (implemented: {', '.join(sorted(GROUP_AGG_FUNCTIONS))})")
        _check_column_type(f, fn)
        aggregators[f.name] = FieldAgg(fn, f.name in options.field_ignore_retract)
    return aggregators


def _check_column_type(f: DataField, fn: str) -> None:
    """InvalidOptionError when aggregate function ``fn`` does not take ``f``'s column type."""
    roots = AGG_FUNCTIONS[fn]
    if roots is not None and f.type.root not in roots:
        raise InvalidOptionError(
            f"option 'fields.{f.name}.aggregate-function': {fn} does not accept column type {f.type}")


def _aggregators(schema: TableSchema, options: MergeTreeOptions, passthrough: tuple[str, ...]) -> dict[str, FieldAgg]:
    """The aggregate function of every merged column (aggregation), of the sequence-group fields
    that name one (partial-update); deduplicate and first-row take none."""
    if options.merge_engine is MergeEngine.PARTIAL_UPDATE:
        return _partial_update_aggregators(schema, options, passthrough)
    if options.merge_engine is not MergeEngine.AGGREGATION:
        return {}
    aggregators: dict[str, FieldAgg] = {}
    for f in schema.fields:
        if f.name in passthrough:
            continue
        fn = options.field_aggregate_functions.get(f.name) or options.default_aggregate_function
        fn = _LEGACY_NAMES.get(fn, fn) if fn else "last_non_null_value"
        if fn not in AGG_FUNCTIONS:
            raise InvalidOptionError(
                f"option 'fields.{f.name}.aggregate-function': {fn!r} is not supported "
                f"(one of {', '.join(sorted(AGG_FUNCTIONS))})")
        _check_column_type(f, fn)
        aggregators[f.name] = FieldAgg(fn, f.name in options.field_ignore_retract, options.list_agg_delimiter(f.name))
    return aggregators


def _sequence_groups(schema: TableSchema, options: MergeTreeOptions,
                     passthrough: tuple[str, ...]) -> tuple[SequenceGroup, ...]:
    """The sequence groups of partial-update; deduplicate and first-row ignore the option."""
    if options.merge_engine is MergeEngine.PARTIAL_UPDATE and options.partial_update_remove_record_on_sequence_group:
        # a delete that wins a listed group removes the row, by an order of rows the merge does not keep
        raise InvalidOptionError(
            "option 'partial-update.remove-record-on-sequence-group' is not supported "
            f"(= {options.partial_update_remove_record_on_sequence_group!r})")
    if not options.field_sequence_groups or options.merge_engine is not MergeEngine.PARTIAL_UPDATE:
        if options.field_sequence_groups and options.merge_engine is MergeEngine.AGGREGATION:
            raise InvalidOptionError("'fields.<f>.sequence-group' with merge-engine=aggregation is not supported")
        return ()
    names = set(schema.field_names)
    seen: set[str] = set()
    groups: list[SequenceGroup] = []
    for seq, members in options.field_sequence_groups:
        for c in (*seq, *members):
            if c not in names:
                raise InvalidOptionError(f"sequence-group of {','.join(seq)}: {c!r} is not a field")
            if c in passthrough:
                raise InvalidOptionError(f"sequence-group of {','.join(seq)}: {c!r} is a primary key")
            if c in seen:
                raise InvalidOptionError(f"field {c!r} belongs to more than one sequence group")
            seen.add(c)
        groups.append(SequenceGroup(tuple(seq), tuple(members)))
    if options.partial_update_remove_record_on_delete:
        raise InvalidOptionError("sequence-group and partial-update.remove-record-on-delete cannot be used together")
    return tuple(groups)


# ---------------------------------------------------------------------------- groups


@dataclass(frozen=True)
class Groups:
    """Contiguous runs of equal keys in a sorted KV table."""

    starts: np.ndarray  # first row of each group
    ends: np.ndarray  # one past the last row of each group
    gid: np.ndarray  # group number of each row

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def last(self) -> np.ndarray:
        return self.ends - 1

    def last_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the last row index where ``mask`` holds, or -1."""
        if not self.count:
            return np.zeros(0, dtype=np.int64)
        idx = np.where(mask, np.arange(len(mask), dtype=np.int64), -1)
        return np.maximum.reduceat(idx, self.starts)

    def first_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the first row index where ``mask`` holds, or -1."""
        if not self.count:
            return np.zeros(0, dtype=np.int64)
        n = len(mask)
        idx = np.where(mask, np.arange(n, dtype=np.int64), n)
        first = np.minimum.reduceat(idx, self.starts)
        return np.where(first >= self.ends, -1, first)

    def any(self, mask: np.ndarray) -> np.ndarray:
        if not self.count:
            return np.zeros(0, dtype=bool)
        return np.logical_or.reduceat(mask, self.starts)


def key_groups(kv: pa.Table, key_columns: Sequence[str]) -> Groups:
    """Group boundaries of a KV table sorted by ``key_columns`` (null keys equal each other)."""
    n = kv.num_rows
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return Groups(z, z, z)
    return _groups_of(new_key_mask(kv, key_columns))


def new_key_mask(kv: pa.Table, key_columns: Sequence[str]) -> np.ndarray:
    """Per row of a KV table sorted by ``key_columns`` (at least one row): True where a key starts."""
    n = kv.num_rows
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for c in key_columns:
        col = kv.column(c)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        a, b = col.slice(1), col.slice(0, n - 1)
        neq = pc.not_equal(a, b)
        if col.null_count:
            neq = pc.fill_null(neq, pc.xor(pc.is_null(a), pc.is_null(b)))
        new[1:] |= neq.to_numpy(zero_copy_only=False)
    return new


def _groups_of(new: np.ndarray) -> Groups:
    """Groups from the mask of rows that start a new key (row 0 included)."""
    starts = np.flatnonzero(new).astype(np.int64)
    ends = np.append(starts[1:], len(new)).astype(np.int64)
    gid = np.cumsum(new, dtype=np.int64) - 1
    return Groups(starts, ends, gid)


# ---------------------------------------------------------------------------- ordering


def integer_like(t: pa.DataType) -> bool:
    """Integers and the types stored as one (dates, times, timestamps, durations)."""
    return (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t)
            or pa.types.is_duration(t))


def integer_keys(kv: pa.Table, key_columns: Sequence[str]) -> list[np.ndarray] | None:
    """The key columns as numpy integers when every one is integer-like (integers, dates,
    times, timestamps, durations) and has no null: numpy orders these exactly as Arrow's
    ``sort_indices`` does. None for any other key (strings, decimals, floats, nulls)."""
    out = []
    for name in key_columns:
        col = kv.column(name)
        t = col.type
        if col.null_count:
            return None
        if not integer_like(t):
            return None
        if not pa.types.is_integer(t):
            # the physical integer (days, units since midnight / the epoch) orders the same
            col = col.cast(pa.int32() if t.bit_width == 32 else pa.int64())
        out.append(np.asarray(col.to_numpy()))
    return out


def _new_key_mask(sorted_keys: Sequence[np.ndarray]) -> np.ndarray:
    """Per row of key-sorted integer keys: True where the key differs from the previous row's."""
    n = len(sorted_keys[0])
    new = np.empty(n, dtype=bool)
    if n:
        new[0] = True
        first = sorted_keys[0]
        np.not_equal(first[1:], first[:-1], out=new[1:])
        for a in sorted_keys[1:]:
            new[1:] |= a[1:] != a[:-1]
    return new


# Input made of fewer ascending runs than this skips _key_sequence_order (see _merge_order).
_FEW_RUNS = 1024


def _key_sequence_order(k: np.ndarray, s: np.ndarray) -> np.ndarray | None:
    """Rows in (key, seq) order for integer keys ``k`` (no nulls) in arrival order, with their
    sequence numbers ``s``, or None when this fast path does not apply: input of few sorted
    runs, a combined rank that would overflow int64, or a (key, seq) pair twice (numpy's sort
    is not stable, and such rows must keep their input order)."""
    if ascending_runs(k) <= _FEW_RUNS:  # fewer than _FEW_RUNS descents
        return None
    order = np.argsort(k)
    first = _new_key_mask([k[order]])
    if first.all():
        return order  # keys are unique: the key order is the whole order
    # a key's rows are in any order: sort (rank of the key, sequence number), nearly sorted
    rank = np.cumsum(first, dtype=np.int64) - 1
    so = s[order].astype(np.int64, copy=False)
    lo = int(so.min())
    span = int(so.max()) - lo + 1
    if int(rank[-1]) >= (1 << 62) // span:
        return None
    combined = rank * span + (so - lo)
    by_seq = np.argsort(combined, kind="stable")
    combined = combined[by_seq]
    if np.any(combined[1:] == combined[:-1]):
        return None
    return order[by_seq]


# Input of at most this many ascending runs is sorted with numpy's timsort, which merges the
# runs it finds; more runs take numpy's vectorized quicksort. numpy 2.4's vectorized sort
# (x86-simd-sort) does not use presortedness: on 250k packed keys it takes 8-11 ms whatever
# the runs, timsort 0.3 ms for 1 run, 4 ms for 4, 7.6 ms for 16, 12.8 ms for 64 (the
# crossover is between 16 and 64 runs at 62k-2.5M rows; benchmarks/README.md, issue 49).
MERGE_SORT_MAX_RUNS = 32


def ascending_runs(k: np.ndarray) -> int:
    """How many maximal non-descending runs ``k`` is made of (1 for sorted input, 0 for none)."""
    return int(np.count_nonzero(k[1:] < k[:-1])) + 1 if len(k) else 0


def sort_kind(k: np.ndarray) -> Literal["stable", "quicksort"]:
    """numpy's sort kind for values ``k`` whose ties need no order (distinct, or tied rows
    interchangeable): ``"stable"`` (timsort, a k-way merge of presorted runs) for input of at
    most :data:`MERGE_SORT_MAX_RUNS` ascending runs, the vectorized ``"quicksort"`` otherwise.

    >>> sort_kind(np.array([1, 5, 9, 2, 3]))
    'stable'
    """
    return "stable" if ascending_runs(k) <= MERGE_SORT_MAX_RUNS else "quicksort"


def stable_argsort(k: np.ndarray) -> np.ndarray:
    """``np.argsort(k, kind="stable")`` of integers, cheaper when (value - min, row) fits in 64
    bits: the pairs packed into one uint64 each are sorted by value (numpy's vectorized sort, or
    its timsort for input of few sorted runs: :func:`sort_kind`), the row in the low bits
    breaking ties in input order, i.e. stably."""
    n = len(k)
    if n < 2:
        return np.arange(n, dtype=np.int64)
    row_bits = n.bit_length()
    lo, hi = int(k.min()), int(k.max())
    kind = sort_kind(k)
    if (hi - lo) >> (64 - row_bits):
        return np.argsort(k, kind="stable") if kind == "stable" else _tie_fixed_argsort(k)
    # in place wherever numpy allows: each temporary of a large read is fresh memory the
    # kernel zeroes page by page (in a new process that costs as much as the sort)
    packed = pooled_array(n, np.uint64)
    np.copyto(packed, k, casting="unsafe")  # k modulo 2**64, as k.astype(np.uint64)
    packed -= np.uint64(lo & 0xFFFF_FFFF_FFFF_FFFF)  # k - lo, modulo 2**64: exact, as k >= lo
    packed <<= np.uint64(row_bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort(kind=kind)  # packed values are distinct: either kind gives the same order
    packed &= np.uint64((1 << row_bits) - 1)
    return packed.view(np.int64)  # rows < 2**63


def _tie_fixed_argsort(k: np.ndarray) -> np.ndarray:
    """``np.argsort(k, kind="stable")``: numpy's vectorized (unstable) sort, then the rows of each
    run of equal values put back in input order. numpy's stable sort of 64-bit values is a
    timsort: 5x slower on arrival-order keys (a flush of 100k rows: 9.2 against 1.7 ms) and
    slower even on 10 concatenated sorted runs (250k rows: 5.2 against 4.5 ms)."""
    n = len(k)
    rows = np.argsort(k)
    s = k[rows]
    same = s[1:] == s[:-1]
    if same.any():
        tied = np.zeros(n, dtype=bool)
        tied[1:] |= same
        tied[:-1] |= same
        at = np.flatnonzero(tied)
        group = np.cumsum(np.concatenate([[True], s[at[1:]] != s[at[:-1]]]), dtype=np.int64)
        # (group, row) packed in one int64 (both < n) and sorted: input order within each group
        rows[at] = np.sort(group * n + rows[at]) % n
    return rows


def _gathered(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` (``rows``: valid positions) into an array of the read pool (see
    :func:`~impl.format.memory_pool.pooled_array`: no fresh pages for each bucket's merge)."""
    return np.take(values, rows, out=pooled_array(len(rows), values.dtype), mode="clip")


@dataclass(frozen=True)
class _Order:
    """A merge order of a KV table: ``rows`` (the permutation) and, when known for free, the
    mask of rows (in that order) that start a new key."""

    rows: np.ndarray
    new_key: np.ndarray | None


def _merge_order(kv: pa.Table, spec: MergeSpec) -> _Order:
    """The stable (key, sequence fields, ``_SEQUENCE_NUMBER``) order of ``kv``: exactly the
    permutation of ``pc.sort_indices(kv, spec.sort_keys())``.

    Fast path: a KV table concatenated run by run in sequence order (a sorted run holds a key
    once, and a newer run has higher sequence numbers) is already in sequence order within
    each key, so a stable sort of the key alone gives that order. With integer keys and no
    ``sequence.field`` that sort is numpy's stable sort (a timsort, which merges the
    pre-sorted runs it detects), far cheaper than Arrow's multi-column comparison sort. The
    precondition is checked (sequence numbers never decrease within a key of the result),
    and the general sort runs when it does not hold, so the result never depends on it: a
    stable sort by key that leaves each key's rows in ascending sequence order is the stable
    sort by (key, sequence) (rows tied on both stay in input order in both). One string or
    binary key without a ``sequence.field`` takes :func:`_string_order` (integer codes).
    """
    n = kv.num_rows
    if n <= 1:
        return _Order(np.arange(n, dtype=np.int64), np.ones(n, dtype=bool))
    ints = None if spec.sequence_fields else integer_keys(kv, spec.key_columns)
    if ints is None and not spec.sequence_fields and len(spec.key_columns) == 1:
        codes = string_key_codes(kv.column(spec.key_columns[0]))
        if codes is not None:
            return _string_order(kv, spec, codes)
    if ints is None:
        return _Order(pc.sort_indices(kv, sort_keys=spec.sort_keys()).to_numpy(), None)
    seq_all = np.asarray(kv.column(SEQUENCE_NUMBER).to_numpy())
    if len(ints) == 1 and pa.types.is_integer(kv.column(spec.key_columns[0]).type):
        # rows in arrival order (a flush): numpy's quicksort of the key, then (key rank, sequence)
        order = _key_sequence_order(ints[0], seq_all)
        if order is not None:
            return _Order(order.astype(np.int64, copy=False), None)
    rows = stable_argsort(ints[0]) if len(ints) == 1 else np.lexsort(ints[::-1])
    return _checked_order(kv, spec, rows, [_gathered(a, rows) for a in ints])


def _string_order(kv: pa.Table, spec: MergeSpec, codes: KeyCodes) -> _Order:
    """The (key, sequence number) order of ``kv`` (one string key column, no sequence field) from
    its key codes: numpy's stable sort of the words, which merges sorted runs as they come.

    Exact codes whose equal words all have equal lengths: the words alone order the keys, and
    a key's rows keep their input order, which is the sequence order when the input is sorted
    runs concatenated oldest first (checked); otherwise (a flush's arrival order) they are sorted
    by (key rank, sequence number) in one integer sort. Inexact codes: the rows that share a word
    are ordered by Arrow's full sort of just those rows."""
    rows = stable_argsort(codes.words)
    w = _gathered(codes.words, rows)
    same = w[1:] == w[:-1]
    # the rows that share a word with the next one in this order (a key's older rows, mostly):
    # the checks below look at those pairs only, not at every row
    tie = np.flatnonzero(same)
    first, second = rows[tie], rows[tie + 1]
    if not codes.exact or np.any(codes.lengths[first] != codes.lengths[second]):
        if not same.any():
            return _Order(rows, None)
        tied = np.zeros(len(w), dtype=bool)
        tied[1:] |= same
        tied[:-1] |= same
        at = np.flatnonzero(tied)
        group = np.cumsum(np.concatenate([[True], w[at[1:]] != w[at[:-1]]]), dtype=np.int64)
        sub = kv.select([*spec.key_columns, SEQUENCE_NUMBER]).take(pa.array(rows[at]))
        sub = sub.append_column("__group", pa.array(group))
        perm = pc.sort_indices(sub, sort_keys=[("__group", "ascending"), *spec.sort_keys()]).to_numpy()
        rows[at] = rows[at][perm]
        return _Order(rows, None)
    new = np.ones(len(w), dtype=bool)
    np.logical_not(same, out=new[1:])
    seq_all = np.asarray(kv.column(SEQUENCE_NUMBER).to_numpy())
    if not np.any(seq_all[second] < seq_all[first]):
        return _Order(rows, new)
    seq = seq_all[rows].astype(np.int64, copy=False)
    rank = np.cumsum(new, dtype=np.int64) - 1
    lo = int(seq.min())
    span = int(seq.max()) - lo + 1
    if int(rank[-1]) >= (1 << 62) // span:
        return _Order(pc.sort_indices(kv, sort_keys=spec.sort_keys()).to_numpy(), None)
    # sorting by (rank, sequence) moves rows only within a key: ``new`` stays true
    return _Order(rows[stable_argsort(rank * span + (seq - lo))], new)


def _checked_order(kv: pa.Table, spec: MergeSpec, rows: np.ndarray, sorted_keys: Sequence[np.ndarray]) -> _Order:
    """``rows`` (a stable key order of ``kv``; ``sorted_keys``: the key, as integers, in that
    order) when each key's rows ascend in sequence number, else Arrow's full sort."""
    new = _new_key_mask(sorted_keys)
    seq = _gathered(np.asarray(kv.column(SEQUENCE_NUMBER).to_numpy()), rows)
    descending = np.less(seq[1:], seq[:-1])  # in place below: fresh temporaries cost page faults
    descending &= ~new[1:]
    if not descending.any():
        return _Order(rows.astype(np.int64, copy=False), new)
    return _Order(pc.sort_indices(kv, sort_keys=spec.sort_keys()).to_numpy(), None)


def merge_order(kv: pa.Table, spec: MergeSpec) -> np.ndarray:
    """Row indices that sort ``kv`` stably by (key, sequence fields, sequence number): the
    order every merge works in (see :func:`_merge_order` for the fast path)."""
    return _merge_order(kv, spec).rows


# ---------------------------------------------------------------------------- entry points


def sort_kv(kv: pa.Table, spec: MergeSpec) -> pa.Table:
    """Stable sort by (key, sequence fields, sequence number)."""
    if kv.num_rows <= 1:
        return kv
    return kv.take(pa.array(merge_order(kv, spec)))


def _first_rows(g: Groups) -> np.ndarray:
    return g.starts


def _last_rows(g: Groups) -> np.ndarray:
    return g.last


def merge_sorted(kv: pa.Table, spec: MergeSpec, drop_delete: bool, *, final: bool = False) -> pa.Table:
    """One row per key of a KV table already sorted by :func:`sort_kv`.

    ``final`` marks the merge whose result is read by users (not stored): only aggregation
    cares (see the module docstring).
    """
    kv = kv.combine_chunks()
    if spec.drops_retract_input() and kv.num_rows:
        retract = retract_mask(kv.column(VALUE_KIND))
        if retract.any():
            kv = kv.filter(pa.array(~retract))
    if kv.num_rows == 0:
        return kv
    groups = key_groups(kv, spec.key_columns)
    pick = _ROW_PICKERS.get(spec.engine)
    if pick:
        out = kv.take(pa.array(pick(groups)))
    elif spec.engine is MergeEngine.PARTIAL_UPDATE:
        out = _built_rows(kv, groups, spec, final)
    else:
        out = _ROW_BUILDERS[spec.engine](kv, groups, spec, final)
    if drop_delete and out.num_rows and spec.engine is not MergeEngine.AGGREGATION:  # it never deletes a key
        retract = retract_mask(out.column(VALUE_KIND))
        if retract.any():
            out = out.filter(pa.array(~retract))
    return out


def single_record_keys(g: Groups) -> np.ndarray:
    """Per key group, whether it holds exactly one row: Paimon's ``ReducerMergeFunctionWrapper``
    emits such a key's record as written (values and kind) without running the merge function."""
    return (g.ends - g.starts) == 1


def _built_rows(kv: pa.Table, g: Groups, spec: MergeSpec, final: bool) -> pa.Table:
    """The merged rows of a partial-update merge: the engine's row for each key of two or more
    rows, the row itself for a key of one (:func:`single_record_keys`): a lone row keeps the
    fields of a sequence group whose sequence is null, and a lone retraction stays one (a read
    drops it). A merged row read alone again is its own merge, so this keeps compaction from
    changing what a read returns.

    Aggregation does not take this path: its stored merge of retractions alone is one combined
    -D row (see the module docstring), which read alone must still become Paimon's +I row."""
    single = single_record_keys(g)
    if single.all():
        return kv  # sorted, one row per key: nothing to merge
    if not single.any():
        return _ROW_BUILDERS[spec.engine](kv, g, spec, final)
    multi_rows = np.flatnonzero(~single[g.gid])
    multi = kv.take(pa.array(multi_rows))
    built = _ROW_BUILDERS[spec.engine](multi, _groups_of(np.diff(g.gid[multi_rows], prepend=-1) != 0), spec, final)
    lone = kv.take(pa.array(g.starts[single]))
    # back into key order: the i-th lone key / the i-th built key at its group's position
    n_lone = len(lone)
    position = np.where(single, np.cumsum(single) - 1, n_lone + np.cumsum(~single) - 1)
    both = pa.concat_tables([lone, built.cast(lone.schema)]) if built.schema != lone.schema else \
        pa.concat_tables([lone, built])
    return both.take(pa.array(position))


def merge_kv(kv: pa.Table, spec: MergeSpec, drop_delete: bool, *, final: bool = False,
             columns: Sequence[str] | None = None) -> pa.Table:
    """Sort, then merge: the merged view of any set of KV rows of one bucket.

    ``columns`` (default: all) selects the columns of the result; engines that pick whole
    rows then gather only those."""
    if spec.picks_whole_rows:
        return _merge_pick(kv, spec, drop_delete, columns)
    out = merge_sorted(sort_kv(kv, spec), spec, drop_delete, final=final)
    return out if columns is None else out.select(list(columns))


def iter_merge_kv(kv: pa.Table, spec: MergeSpec, drop_delete: bool, chunk_rows: int) -> Iterator[pa.Table]:
    """:func:`merge_kv` (not ``final``) as key-ordered pieces of about ``chunk_rows`` input rows.

    Concatenated, the pieces equal ``merge_kv(kv, spec, drop_delete)``. Only the sort order and
    the key columns in that order are held besides ``kv``, plus one piece: never a sorted copy
    of ``kv``, so a flush peaks at the buffer plus one piece instead of twice the buffer.
    deduplicate / first-row take the chosen rows a piece at a time; the other engines merge
    one piece of whole keys at a time (a key's rows never straddle two pieces).
    """
    if chunk_rows <= 0:
        raise ValueError(f"chunk_rows must be > 0, got {chunk_rows}")
    n = kv.num_rows
    if n == 0:
        return
    if spec.picks_whole_rows:
        rows = _picked_rows(kv, spec, drop_delete)
        pool = write_pool()  # the pieces a flush encodes (see write_pool)
        for start in range(0, len(rows), chunk_rows):
            yield pc.take(kv, pa.array(rows[start:start + chunk_rows]), memory_pool=pool)
        return
    order = merge_order(kv, spec)
    starts = key_groups(kv.select(list(spec.key_columns)).take(pa.array(order)), spec.key_columns).starts
    # cut at the first key starting at or after each multiple of chunk_rows
    cuts = np.unique(starts[np.minimum(np.searchsorted(starts, np.arange(chunk_rows, n, chunk_rows)),
                                       len(starts) - 1)])
    bounds = [0, *[int(c) for c in cuts if 0 < c < n], n]
    for a, b in zip(bounds, bounds[1:], strict=False):
        out = merge_sorted(kv.take(pa.array(order[a:b])), spec, drop_delete)
        if out.num_rows:
            yield out


def _picked_rows(kv: pa.Table, spec: MergeSpec, drop_delete: bool) -> np.ndarray:
    """Indices into ``kv`` of the rows deduplicate / first-row keep, in key order."""
    if kv.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    ordered = _merge_order(kv, spec)
    order, new = ordered.rows, ordered.new_key
    kinds = np.asarray(kv.column(VALUE_KIND).to_numpy())
    # -U and -D are the odd kinds: without any, no row is dropped and kinds need no ordering
    retracts = bool(np.bitwise_and(kinds, 1).any())
    kinds = kinds[order] if retracts else kinds
    if retracts and spec.drops_retract_input():
        keep = ~retract_mask(kinds)
        if not keep.all():
            order, kinds = order[keep], kinds[keep]
            if new is not None:
                # a dropped row that started its key passes the start to the key's next kept row
                kept_keys = (np.cumsum(new) - 1)[keep]
                new = np.ones(len(kept_keys), dtype=bool)
                new[1:] = kept_keys[1:] != kept_keys[:-1]
    if len(order) == 0:
        return order
    if new is None:
        new = new_key_mask(kv.select(list(spec.key_columns)).take(pa.array(order)), spec.key_columns)
    # A boolean mask, not Groups: a flush of millions of rows would otherwise hold several
    # int64 arrays per row (starts, ends, group ids) at its peak.
    if _ROW_PICKERS[spec.engine] is _first_rows:
        chosen = np.flatnonzero(new)
    else:  # the last row of each key: the row before the next key's first
        new[:-1] = new[1:]
        new[-1] = True
        chosen = np.flatnonzero(new)
    del new
    if drop_delete and retracts and len(chosen):
        chosen = chosen[~retract_mask(kinds[chosen])]
    return _gathered(order, chosen)


def _merge_pick(kv: pa.Table, spec: MergeSpec, drop_delete: bool, columns: Sequence[str] | None = None) -> pa.Table:
    """deduplicate / first-row without materializing the sorted table: these engines pick whole
    rows, so only the order, keys and kinds are worked out and the chosen rows taken once
    (``columns`` of them; default all)."""
    if kv.num_rows == 0:
        return kv if columns is None else kv.select(list(columns))
    # a table of no columns would lose its row count in take: take one column, then drop it
    src = kv if columns is None else kv.select(list(columns) or [VALUE_KIND])
    pool = read_pool()  # the winners are most of a read's allocations (see read_pool)
    # The rows are positions of a sort of kv's own rows (argsort, flatnonzero of masks of its
    # length), valid by construction: Arrow's bounds check, a pass over the rows for each
    # column, cost 10-15 % of this take (issue 49).
    rows = pa.array(_picked_rows(kv, spec, drop_delete))
    out = pc.take(src, rows, boundscheck=False, memory_pool=pool).combine_chunks(pool)
    return out if columns is None else out.select(list(columns))


# ---------------------------------------------------------------------------- helpers


def _value_columns(kv: pa.Table, spec: MergeSpec) -> list[str]:
    return [c for c in kv.column_names
            if c not in SYSTEM_COLUMNS and not c.startswith(KEY_PREFIX) and c not in spec.passthrough]


def _take_or_null(values: pa.Array, pick: np.ndarray) -> pa.Array:
    """``values[pick]`` with null where ``pick`` is -1."""
    missing = pick < 0
    indices = pa.array(np.where(missing, 0, pick), mask=missing if missing.any() else None)
    return pc.take(values, indices)


def _column(kv: pa.Table, name: str) -> pa.Array:
    col = kv.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _valid(values: pa.Array) -> np.ndarray:
    if values.null_count == 0:
        return np.ones(len(values), dtype=bool)
    return pc.is_valid(values).to_numpy(zero_copy_only=False)


def _null_where(values: pa.Array, mask: np.ndarray) -> pa.Array:
    if not mask.any():
        return values
    return pc.if_else(pa.array(mask), pa.scalar(None, values.type), values)


def _replace(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, table.schema.field(i), values)


def _last_rows_shell(kv: pa.Table, g: Groups, spec: MergeSpec) -> pa.Table:
    """The last row of each key group, with null placeholders for the value columns: the
    aggregation and partial-update builders replace every one of them, so gathering them here
    would be wasted work (a STRING column gathered twice)."""
    values = set(_value_columns(kv, spec))
    rows = pa.array(g.last)
    cols = [pa.nulls(g.count, kv.schema.field(i).type) if name in values else kv.column(i).take(rows)
            for i, name in enumerate(kv.column_names)]
    return pa.Table.from_arrays(cols, schema=kv.schema)


def _kind_column(kinds: np.ndarray) -> pa.Array:
    return pa.array(kinds.astype(np.int8), type=pa.int8())


# ---------------------------------------------------------------------------- aggregation


def _merge_aggregation(kv: pa.Table, g: Groups, spec: MergeSpec, final: bool) -> pa.Table:
    n, ng = kv.num_rows, g.count
    out = _last_rows_shell(kv, g, spec)
    retract = retract_mask(kv.column(VALUE_KIND))
    has_retract = bool(retract.any())
    columns = _value_columns(kv, spec)
    if has_retract:
        spec.check_retract_allowed(columns)
    mask_arr = pa.array(retract) if has_retract else None
    # A stored merge of a key's retractions alone stays one combined retraction (so that
    # merging it later with older rows retracts from them); Paimon's +I result is only
    # materialized for the final read.
    combined = (~g.any(~retract)) if (has_retract and not final) else np.zeros(ng, dtype=bool)
    any_combined = bool(combined.any())

    hashed: list[tuple[str, pa.Array, str]] = []
    for name in columns:
        agg = spec.aggregators.get(name, FieldAgg("last_non_null_value"))
        values = _column(kv, name)
        fn = agg.function
        if fn in _HASH_AGG:
            v = values
            if has_retract:
                if agg.ignore_retract:
                    v = _null_where(values, retract)
                else:  # sum / count: a retraction subtracts
                    v = pc.if_else(mask_arr, pc.negate(values), values)
            hashed.append((name, v, _HASH_AGG[fn]))
            continue
        skip = retract if (has_retract and agg.ignore_retract) else np.zeros(n, dtype=bool)
        if fn == "last_value":
            pick = g.last_where(~skip)
            null_out = pick >= 0
            null_out[null_out] = retract[pick[null_out]]
            res = _null_where(_take_or_null(values, pick), null_out)
        elif fn == "last_non_null_value":
            pick = g.last_where(_valid(values) & ~skip)
            null_out = pick >= 0
            null_out[null_out] = retract[pick[null_out]]
            res = _null_where(_take_or_null(values, pick), null_out)
            if any_combined and not agg.ignore_retract:
                # the combined retraction carries a non-null value iff one was retracted
                retracted = _take_or_null(values, g.last_where(_valid(values) & retract))
                res = pc.if_else(pa.array(combined), retracted, res)
        elif fn == "first_value":
            res = _take_or_null(values, g.first_where(~skip))
        elif fn == "first_non_null_value":
            res = _take_or_null(values, g.first_where(_valid(values) & ~skip))
        elif fn == "listagg":
            res = _listagg(values, g, ~skip, agg.delimiter)
        else:  # pragma: no cover - validated in MergeSpec.from_schema
            raise MergeEngineError(f"unknown aggregate function {fn!r}")
        out = _replace(out, name, res)

    if hashed:
        arrays = [pa.array(g.gid)] + [v for _, v, _ in hashed]
        names = ["__g"] + [f"c{i}" for i in range(len(hashed))]
        opts = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
        aggs = [(f"c{i}", fn, opts) for i, (_, _, fn) in enumerate(hashed)]
        res = pa.Table.from_arrays(arrays, names=names).group_by("__g", use_threads=False).aggregate(aggs)
        order = res.column("__g").to_numpy()
        if len(order) != ng or (ng and not np.array_equal(order, np.arange(ng))):
            res = res.take(pa.array(np.argsort(order, kind="stable")))
        for i, (name, _values, fn) in enumerate(hashed):
            col = res.column(f"c{i}_{fn}").combine_chunks()
            target = kv.schema.field(name).type
            if col.type != target:
                col = col.cast(target, safe=False)
            if any_combined and fn == "sum":
                # sum / count of a combined retraction: the retracted amount, un-negated
                col = pc.if_else(pa.array(combined), pc.negate(col), col)
            out = _replace(out, name, col)

    kinds = np.where(combined, RowKind.DELETE, RowKind.INSERT)
    return _replace(out, VALUE_KIND, _kind_column(kinds))


def _listagg(values: pa.Array, g: Groups, allowed: np.ndarray, delimiter: str) -> pa.Array:
    """Join the non-blank strings of each group in order (Paimon skips null and blank inputs)."""
    keep = _valid(values) & allowed
    if keep.any():
        blank = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(values), ""), True)
        keep &= ~blank.to_numpy(zero_copy_only=False)
    sel = np.flatnonzero(keep)
    counts = np.bincount(g.gid[sel], minlength=g.count)
    offsets = np.zeros(g.count + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    items = pc.take(values, pa.array(sel)).cast(pa.large_string())
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), items)
    joined = pc.binary_join(lists, pa.scalar(delimiter, pa.large_string())).cast(values.type)
    return _null_where(joined, counts == 0)


# ---------------------------------------------------------------------------- partial update


def _merge_partial_update(kv: pa.Table, g: Groups, spec: MergeSpec, final: bool) -> pa.Table:
    """Per column the last non-null value (see the module docstring); ``final`` changes nothing here."""
    n, ng = kv.num_rows, g.count
    out = _last_rows_shell(kv, g, spec)
    kinds = kv.column(VALUE_KIND).to_numpy(zero_copy_only=False)
    retract = retract_mask(kinds)
    if retract.any():
        spec.check_retract_allowed()
    active = ~retract
    result_kind = np.zeros(ng, dtype=np.int8)
    if spec.sequence_groups:
        # a key that met no +I / +U row is deleted (Paimon's ``meetInsert``)
        result_kind[~g.any(active)] = RowKind.DELETE
    if spec.remove_record_on_delete:
        last_delete = g.last_where(kinds == RowKind.DELETE)
        active &= np.arange(n, dtype=np.int64) > last_delete[g.gid]
        deleted = ~g.any(active)
        result_kind[deleted] = RowKind.DELETE
    else:
        deleted = None

    grouped = {c for grp in spec.sequence_groups for c in grp.columns}
    for name in _value_columns(kv, spec):
        if name in grouped:
            continue
        values = _column(kv, name)
        res = _take_or_null(values, g.last_where(active & _valid(values)))
        out = _replace(out, name, res)

    for grp in spec.sequence_groups:
        present = [c for c in grp.columns if c in kv.column_names]
        if not present:
            continue
        missing_seq = [c for c in grp.sequence_fields if c not in kv.column_names]
        if missing_seq:
            raise MergeEngineError(f"sequence group fields {missing_seq} were not read but are needed to merge {present}")
        pick = _sequence_group_winner(kv, g, grp)
        win_retract = np.zeros(ng, dtype=bool)
        has = pick >= 0
        win_retract[has] = retract[pick[has]]
        for c in present:
            agg = spec.aggregators.get(c)
            if agg is not None:
                res = _group_aggregate(_column(kv, c), g, agg, _group_rows(kv, grp), retract)
            else:
                res = _take_or_null(_column(kv, c), pick)
                if c not in grp.sequence_fields:
                    res = _null_where(res, win_retract)
            out = _replace(out, c, res)

    if deleted is not None and deleted.any():
        for name in _value_columns(kv, spec):
            out = _replace(out, name, _null_where(_column(out, name), deleted))
    return _replace(out, VALUE_KIND, _kind_column(result_kind))


def _group_rows(kv: pa.Table, grp: SequenceGroup) -> np.ndarray:
    """The rows that take part in sequence group ``grp``: those with a non-null group sequence
    field (Paimon skips a row whose group sequence is empty)."""
    eligible = np.zeros(kv.num_rows, dtype=bool)
    for c in grp.sequence_fields:
        eligible |= _valid(_column(kv, c))
    return eligible


def _group_aggregate(values: pa.Array, g: Groups, agg: FieldAgg, rows: np.ndarray, retract: np.ndarray) -> pa.Array:
    """Per key, ``agg`` of a sequence-group field over the group's ``rows``: Paimon aggregates a
    row of a newer group sequence with ``agg`` and one of an older with ``aggReversed``, the
    same for the order-free functions of :data:`GROUP_AGG_FUNCTIONS`. A retraction subtracts
    from a sum and is skipped with ``ignore-retract`` (others were refused before the merge)."""
    use = rows & ~retract if agg.ignore_retract or agg.function != "sum" else rows
    v = values if not (use & retract).any() else pc.if_else(pa.array(retract), pc.negate(values), values)
    sel = np.flatnonzero(use)
    opts = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
    res = pa.table({"__g": pa.array(g.gid[sel]), "v": pc.take(v, pa.array(sel))}) \
        .group_by("__g", use_threads=False).aggregate([("v", _HASH_AGG[agg.function], opts)])
    found = res.column("__g").to_numpy()
    pick = np.full(g.count, -1, dtype=np.int64)
    pick[found] = np.arange(len(found), dtype=np.int64)
    col = res.column(f"v_{_HASH_AGG[agg.function]}").combine_chunks()
    if col.type != values.type:
        col = col.cast(values.type, safe=False)  # as Java's arithmetic in the column's type
    return _take_or_null(col, pick)


def _sequence_group_winner(kv: pa.Table, g: Groups, grp: SequenceGroup) -> np.ndarray:
    """Per key, the row with the highest (group sequence fields, position); -1 if none qualifies.

    Rows whose group sequence fields are all null do not take part (Paimon skips them).
    """
    rows = np.flatnonzero(_group_rows(kv, grp))
    pick = np.full(g.count, -1, dtype=np.int64)
    if len(rows) == 0:
        return pick
    sel = pa.array(rows)
    sub = pa.Table.from_arrays(
        [pa.array(g.gid[rows])] + [pc.take(_column(kv, c), sel) for c in grp.sequence_fields] + [sel],
        names=["__g", *[f"s{i}" for i in range(len(grp.sequence_fields))], "__p"])
    keys = [("__g", "ascending")] + [(f"s{i}", "ascending", "at_start") for i in range(len(grp.sequence_fields))]
    keys.append(("__p", "ascending"))
    sub = sub.take(pc.sort_indices(sub, sort_keys=keys))
    gids = sub.column("__g").to_numpy()
    last = np.append(gids[1:] != gids[:-1], True)
    pick[gids[last]] = sub.column("__p").to_numpy()[last]
    return pick


# ---------------------------------------------------------------------------- dispatch

# Engines whose merged row is one input row of the key: which row of each key group they keep.
_ROW_PICKERS: Mapping[MergeEngine, Callable[[Groups], np.ndarray]] = {
    MergeEngine.FIRST_ROW: _first_rows,
    MergeEngine.DEDUPLICATE: _last_rows,
}
# Engines that compute the merged row from all rows of the key: (kv, groups, spec, final) -> rows.
_ROW_BUILDERS: Mapping[MergeEngine, Callable[[pa.Table, Groups, MergeSpec, bool], pa.Table]] = {
    MergeEngine.AGGREGATION: _merge_aggregation,
    MergeEngine.PARTIAL_UPDATE: _merge_partial_update,
}

"""The key-value row layout of primary-key data files, and turning user rows into it.

A KV table (in memory and in Parquet) has the columns ``_KEY_<k>`` for each trimmed primary
key field (primary key minus partition fields), ``_SEQUENCE_NUMBER`` (int64), ``_VALUE_KIND``
(int8: 0 +I, 1 -U, 2 +U, 3 -D), then every user column in schema order.

Nullability follows pypaimon 2.1.0 (the compatibility target): ``_SEQUENCE_NUMBER`` and
``_VALUE_KIND`` are required, every other column is written as nullable even when the schema
says NOT NULL (NOT NULL is enforced on input instead). Java Paimon writes required columns
for NOT NULL fields; reading casts either form to the nullable in-memory schema.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.data.binary_row import decode_row, encode_row, sort_key
from impl.data.types import DataType, to_arrow
from impl.datafile.meta import DataFileMeta
from impl.errors import SchemaMismatchError
from impl.format.memory_pool import write_pool
from impl.schema.evolution import column_sources
from impl.schema.manager import SchemaManager
from impl.schema.records import TableSchema

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
SYSTEM_COLUMNS = (SEQUENCE_NUMBER, VALUE_KIND)


class RowKind(enum.IntEnum):
    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3


# How rowkind.field spells the kinds (Paimon's RowKind short strings), indexed by kind value.
ROW_KIND_STRINGS = ("+I", "-U", "+U", "-D")


def retract_mask(kinds: pa.Array | pa.ChunkedArray | np.ndarray) -> np.ndarray:
    """Boolean numpy mask of the -U / -D rows."""
    k = kinds if isinstance(kinds, np.ndarray) else np.asarray(kinds.to_numpy(zero_copy_only=False))
    return (k == RowKind.UPDATE_BEFORE) | (k == RowKind.DELETE)


@dataclass(frozen=True)
class KVLayout:
    """Column names and types of a table's KV files, derived from its schema.

    ``schemas`` finds the schema an older data file was written under, so its columns are
    matched to this schema by field id (renamed keys and values keep their data). Without it,
    only files of ``schema`` itself can be read: matching an older file by column name would
    read a renamed column as null and a dropped-then-re-added one as the dropped data."""

    schema: TableSchema
    schemas: "SchemaManager | None" = field(default=None, compare=False, hash=False, repr=False)

    def file_sources(self, f: "DataFileMeta") -> Mapping[str, str | None] | None:
        """Current user column -> column name in ``f`` (by field id); None when ``f`` was written
        under this schema (names match as they are). :class:`SchemaMismatchError` for a file
        of another schema when this layout has no schema manager to map it with."""
        if f.schema_id == self.schema.id:
            return None
        if self.schemas is None:
            raise SchemaMismatchError(
                f"data file {f.file_name} was written under schema {f.schema_id}, and this read of schema "
                f"{self.schema.id} has no schema manager to match its columns by field id")
        return column_sources(self.schemas.schema(f.schema_id), self.schema)

    @cached_property
    def key_names(self) -> tuple[str, ...]:
        """User names of the trimmed primary key (what min/max keys and ``_KEY_`` columns hold)."""
        if not self.schema.primary_keys:
            raise SchemaMismatchError(f"schema {self.schema.id} has no primary key: not a merge-tree table")
        return tuple(self.schema.trimmed_primary_keys)

    @cached_property
    def key_columns(self) -> tuple[str, ...]:
        return tuple(KEY_PREFIX + k for k in self.key_names)

    @cached_property
    def key_types(self) -> tuple[DataType, ...]:
        return tuple(self.schema.field(k).type for k in self.key_names)

    @cached_property
    def value_names(self) -> tuple[str, ...]:
        return tuple(self.schema.field_names)

    @cached_property
    def value_types(self) -> tuple[DataType, ...]:
        return tuple(f.type for f in self.schema.fields)

    @cached_property
    def arrow_types(self) -> dict[str, pa.DataType]:
        """Arrow type of every physical column (key, system and user columns)."""
        out = {kc: to_arrow(t) for kc, t in zip(self.key_columns, self.key_types, strict=True)}
        out[SEQUENCE_NUMBER] = pa.int64()
        out[VALUE_KIND] = pa.int8()
        for name, t in zip(self.value_names, self.value_types, strict=True):
            out[name] = to_arrow(t)
        return out

    @cached_property
    def all_columns(self) -> tuple[str, ...]:
        return (*self.key_columns, SEQUENCE_NUMBER, VALUE_KIND, *self.value_names)

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        """In-memory and on-file schema of a full KV table."""
        return self.schema_for(self.all_columns)

    def schema_for(self, columns: Sequence[str]) -> pa.Schema:
        """Schema of a KV table holding ``columns`` (physical names), in that order."""
        types = self.arrow_types
        return pa.schema([pa.field(c, types[c], nullable=c not in SYSTEM_COLUMNS) for c in columns])

    @cached_property
    def user_schema(self) -> pa.Schema:
        """Arrow schema of the user columns (declared nullability)."""
        return pa.schema([pa.field(f.name, to_arrow(f.type), nullable=f.type.nullable) for f in self.schema.fields])

    def empty(self, columns: Sequence[str] | None = None) -> pa.Table:
        return self.schema_for(self.all_columns if columns is None else columns).empty_table()

    # ------------------------------------------------------------------ input

    def user_table(self, data: pa.Table | pa.RecordBatch) -> pa.Table:
        """Validate written rows against the schema: all columns present, castable, NOT NULL kept.

        Returns the columns in schema order with the schema's arrow types. Raises
        :class:`SchemaMismatchError` naming the column at fault.
        """
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if not isinstance(data, pa.Table):
            raise SchemaMismatchError(f"expected a pyarrow Table or RecordBatch, got {type(data).__name__}")
        names = set(data.column_names)
        missing = [n for n in self.value_names if n not in names]
        if missing:
            raise SchemaMismatchError(f"written data misses column(s) {missing} of schema {self.schema.id}")
        extra = [n for n in data.column_names if n not in set(self.value_names)]
        if extra:
            raise SchemaMismatchError(f"written data has column(s) {extra} that schema {self.schema.id} does not have")
        if len(set(data.column_names)) != len(data.column_names):
            raise SchemaMismatchError(f"written data has duplicate column names {data.column_names}")
        cols = []
        for f in self.user_schema:
            col = data.column(f.name)
            if col.type != f.type:
                try:
                    col = col.cast(f.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                    raise SchemaMismatchError(
                        f"column {f.name!r}: cannot convert {col.type} to {f.type} ({e})") from e
            if not f.nullable and col.null_count:
                raise SchemaMismatchError(f"column {f.name!r} is NOT NULL but {col.null_count} written value(s) are null")
            cols.append(col)
        return pa.Table.from_arrays(cols, schema=self.user_schema)

    def row_kinds(self, user: pa.Table, row_kinds, rowkind_field: str | None) -> pa.Array:
        """The int8 kind of each written row: ``row_kinds`` if given, else ``rowkind.field``, else +I."""
        n = user.num_rows
        if row_kinds is not None:
            kinds = row_kinds if isinstance(row_kinds, (pa.Array, pa.ChunkedArray)) else pa.array(row_kinds)
            if isinstance(kinds, pa.ChunkedArray):
                kinds = kinds.combine_chunks()
            if len(kinds) != n:
                raise SchemaMismatchError(f"row_kinds has {len(kinds)} values for {n} rows")
            if kinds.null_count:
                raise SchemaMismatchError("row_kinds contains nulls")
            if not pa.types.is_integer(kinds.type):
                raise SchemaMismatchError(f"row_kinds must be integers 0..3, got type {kinds.type}")
            if n:
                mm = pc.min_max(kinds).as_py()
                if mm["min"] < 0 or mm["max"] > 3:
                    raise SchemaMismatchError(f"row_kinds values must be in 0..3, found {mm['min']}..{mm['max']}")
            return kinds.cast(pa.int8())
        if rowkind_field is not None:
            if rowkind_field not in user.column_names:
                raise SchemaMismatchError(f"rowkind.field {rowkind_field!r} is not a column of schema {self.schema.id}")
            col = user.column(rowkind_field)
            idx = pc.index_in(col, value_set=pa.array(ROW_KIND_STRINGS))
            if idx.null_count:
                bad = pc.filter(col, pc.is_null(idx)).slice(0, 3).to_pylist()
                raise SchemaMismatchError(
                    f"rowkind.field {rowkind_field!r} has values {bad} that are not one of {ROW_KIND_STRINGS}")
            if isinstance(idx, pa.ChunkedArray):
                idx = idx.combine_chunks()
            return idx.cast(pa.int8())
        return pa.array(np.zeros(n, dtype=np.int8))

    def to_kv(self, user: pa.Table, kinds: pa.Array, first_sequence: int) -> pa.Table:
        """A KV table of validated user rows with sequence numbers from ``first_sequence`` on.

        The ``_KEY_`` columns share the user key columns' buffers (no copy).
        """
        n = user.num_rows
        # Added in Arrow, so the buffered column lives in Arrow's memory pool: a numpy array
        # kept in the write buffer would sit on the C heap between the short-lived allocations
        # of later writes, which the heap then cannot give back (RSS grew ~25 % over the buffer).
        seq = pc.add(pa.array(np.arange(n, dtype=np.int64)), pa.scalar(first_sequence, pa.int64()),
                     memory_pool=write_pool())
        cols = [user.column(k) for k in self.key_names] + [seq, kinds] + list(user.columns)
        return pa.Table.from_arrays(cols, schema=self.arrow_schema)


class KeyCodec:
    """Encodes trimmed keys to BinaryRow bytes and orders encoded keys as Paimon does.

    Ordering decodes the bytes to Python values (nulls first); it is used per file, never
    per row, so the decode cost is bounded by the number of files.
    """

    def __init__(self, key_types: Sequence[DataType]):
        self.key_types = tuple(key_types)
        self._cache: dict[bytes, tuple] = {}

    def encode(self, values: Sequence) -> bytes:
        return encode_row(list(values), self.key_types)

    def sort_key(self, key: bytes) -> tuple:
        k = self._cache.get(key)
        if k is None:
            k = sort_key(decode_row(key, self.key_types))
            if len(self._cache) > 100_000:
                self._cache.clear()
            self._cache[key] = k
        return k

"""The Arrow PyCapsule stream protocol (``__arrow_c_stream__``) for tables and read builders.

Any Arrow-native consumer (``pa.table(t)``, ``pl.DataFrame(t)``, DuckDB's replacement scan)
pulls record batches through the C stream interface from a lazy
:class:`pyarrow.RecordBatchReader`: rows are read split by split as the consumer asks, never
copied through Python objects.

``requested_schema`` (the consumer's wish, per the protocol) is honoured by casting when the
rows' schema has the same column names in the same order and each type casts; anything else
is refused with :class:`impl.errors.RequestedSchemaError` naming the column.
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa

from impl.errors import RequestedSchemaError
from impl.predicate.predicate import Predicate


def cast_plan(source: pa.Schema, requested: pa.Schema) -> pa.Schema:
    """The schema to cast ``source`` rows to for a consumer requesting ``requested``.

    Checked on the schemas alone (an empty array per column), so a refusal comes before any
    data file is read; a value that does not fit (e.g. an overflow) fails while streaming."""
    for i, want in enumerate(requested):
        if i >= len(source):
            raise RequestedSchemaError(want.name, f"is not a column of the rows (columns: {source.names})")
        have = source.field(i)
        if have.name != want.name:
            raise RequestedSchemaError(want.name, f"at position {i}, where the rows have {have.name!r} "
                                                  f"(columns: {source.names})")
        if not have.type.equals(want.type):
            try:
                pa.array([], type=have.type).cast(want.type)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
                raise RequestedSchemaError(want.name, f"{have.type} does not cast to {want.type}: {e}") from e
    if len(source) > len(requested):
        extra = source.field(len(requested)).name
        raise RequestedSchemaError(extra, f"is in the rows but not in the requested schema ({requested.names})")
    return requested


def export_stream(reader: pa.RecordBatchReader, requested_schema: Any = None) -> Any:
    """The ``ArrowArrayStream`` PyCapsule of ``reader``, cast to ``requested_schema`` (an
    ``ArrowSchema`` PyCapsule) when one is given."""
    if requested_schema is not None:
        requested = pa.schema(_SchemaCapsule(requested_schema))
        if not requested.equals(reader.schema):
            reader = reader.cast(cast_plan(reader.schema, requested))
    return reader.__arrow_c_stream__()


__all__ = ["cast_plan", "export_stream"]


class _SchemaCapsule:
    """A bare ``ArrowSchema`` capsule as an object of the PyCapsule protocol, which
    ``pa.schema`` imports through public API."""

    def __init__(self, capsule: object):
        self._capsule = capsule

    def __arrow_c_schema__(self) -> object:
        return self._capsule


class BuilderReads:
    """The whole read of a read builder (its filter, projection and limit) as an Arrow reader
    and stream: shared by the data and the system tables' builders, which supply
    ``new_scan`` and ``new_read``."""

    def new_scan(self) -> Any:
        raise NotImplementedError

    def new_read(self) -> Any:
        raise NotImplementedError

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """Every row this builder reads, lazily: splits planned now, read as batches are pulled."""
        return self.new_read().to_arrow_batch_reader(self.new_scan().plan().splits())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream of this builder's rows (``pa.table(rb)``, DuckDB)."""
        return export_stream(self.to_arrow_batch_reader(), requested_schema)


class TableReads:
    """``to_arrow`` / ``to_arrow_batch_reader`` / ``__arrow_c_stream__`` of a table through its
    read builder: shared by data and system tables, which supply ``new_read_builder``."""

    def new_read_builder(self) -> Any:
        raise NotImplementedError

    def to_arrow(self, predicate: Predicate | None = None, projection: Sequence[str] | None = None) -> pa.Table:
        """Every row of the snapshot this view reads (filter and projection applied)."""
        rb = self.new_read_builder().with_filter(predicate).with_projection(projection)
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def to_arrow_batch_reader(self, predicate: Predicate | None = None,
                              projection: Sequence[str] | None = None) -> pa.RecordBatchReader:
        """The rows ``to_arrow`` returns, as a lazy reader: splits are planned now, read one at a
        time as batches are pulled."""
        return self.new_read_builder().with_filter(predicate).with_projection(projection).to_arrow_batch_reader()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream of every row (``pa.table(t)``, ``pl.DataFrame(t)``, DuckDB)."""
        return export_stream(self.to_arrow_batch_reader(), requested_schema)

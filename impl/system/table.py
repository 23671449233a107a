"""SystemTable: a read-only table over a data table's metadata, read like any table.

>>> t = catalog.get_table("db.t$snapshots")                          # doctest: +SKIP
>>> rb = t.new_read_builder().with_projection(["snapshot_id", "commit_kind"])  # doctest: +SKIP
>>> rb.new_read().to_arrow(rb.new_scan().plan().splits())            # doctest: +SKIP

Planning pins the snapshot a snapshot-based table describes (the latest, or the one the
time-travel options ``scan.snapshot-id`` / ``scan.timestamp-millis`` choose), so every read of
one plan describes the same snapshot. Filters and projections apply to the built rows; the
columns that cost a decode per file are built only when projected or filtered on.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Iterator, Mapping, NoReturn, Sequence

import pyarrow as pa

from impl._optional import require
from impl.errors import InvalidPredicateError, SystemTableReadOnlyError
from impl.predicate.predicate import Predicate, PredicateBuilder
from impl.read.arrow_stream import BuilderReads, TableReads
from impl.read.pandas_io import arrow_to_pandas
from impl.read.projection import check_limit, resolve_projection
from impl.read.scan import TableScan
from impl.system.tables import ReadRequest, SystemTableSpec
from impl.table.api import Table
from impl.table.table import FileStoreTable

SYSTEM_TABLE_SPLITTER = "$"


@dataclass(frozen=True)
class SystemSplit:
    """The one split of a system table read: which table, and the snapshot it describes
    (None for tables not tied to a snapshot, or an empty table)."""

    system_table: str
    snapshot_id: int | None


@dataclass(frozen=True)
class SystemPlan:
    """The plan of a system table scan: always exactly one split."""

    snapshot_id: int | None
    splits_: tuple[SystemSplit, ...]

    def splits(self) -> list[SystemSplit]:
        return list(self.splits_)


class SystemTable(TableReads):
    """``<table>$<name>``: rows describing the data table (snapshots, files, ...), read-only.

    Obtain one from :meth:`impl.Catalog.get_table` with ``"db.t$snapshots"`` etc. Every
    write or maintenance entry point raises :class:`SystemTableReadOnlyError`.
    """

    def __init__(self, data_table: FileStoreTable, spec: SystemTableSpec):
        self.data_table = data_table
        self.spec = spec
        self.identifier = f"{data_table.identifier}{SYSTEM_TABLE_SPLITTER}{spec.name}"
        self.arrow_schema = spec.arrow_schema
        self.schema = spec.table_schema

    @property
    def name(self) -> str:
        return self.identifier

    @property
    def system_table_name(self) -> str:
        return self.spec.name

    @property
    def primary_keys(self) -> list[str]:
        return []

    @property
    def partition_keys(self) -> list[str]:
        return []

    @property
    def is_primary_key_table(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"SystemTable({self.identifier!r})"

    def copy(self, dynamic_options: Mapping[str, str]) -> "SystemTable":
        """The same system table over ``data_table.copy(dynamic_options)`` (e.g. time travel)."""
        return SystemTable(self.data_table.copy(dynamic_options), self.spec)

    def new_read_builder(self) -> "SystemReadBuilder":
        return SystemReadBuilder(self)

    # ------------------------------------------------------------------ refused

    def _refuse(self, operation: str) -> NoReturn:
        raise SystemTableReadOnlyError(self.identifier, operation)

    def new_batch_write_builder(self) -> NoReturn:
        self._refuse("new_batch_write_builder")

    def new_stream_write_builder(self) -> NoReturn:
        self._refuse("new_stream_write_builder")

    def write_arrow(self, data, *, overwrite: Mapping | None | bool = False) -> NoReturn:
        self._refuse("write_arrow")

    def compact(self, full: bool = False) -> NoReturn:
        self._refuse("compact")

    def expire_snapshots(self, *, retain_min: int | None = None, retain_max: int | None = None,
                         time_retained_ms: int | None = None, max_deletes: int | None = None,
                         now_millis: int | None = None) -> NoReturn:
        self._refuse("expire_snapshots")

    def remove_orphan_files(self, older_than: int | _dt.datetime | None = None, *,
                            older_than_millis: int | None = None, dry_run: bool = False) -> NoReturn:
        self._refuse("remove_orphan_files")

    def rollback_to(self, target: int | str) -> NoReturn:
        self._refuse("rollback_to")

    def create_tag(self, tag_name: str, snapshot_id: int | None = None,
                   time_retained: _dt.timedelta | str | None = None, ignore_if_exists: bool = False) -> NoReturn:
        self._refuse("create_tag")

    def delete_tag(self, tag_name: str) -> NoReturn:
        self._refuse("delete_tag")

    def create_branch(self, branch_name: str, tag: str | None = None, ignore_if_exists: bool = False) -> NoReturn:
        self._refuse("create_branch")

    def delete_branch(self, branch_name: str) -> NoReturn:
        self._refuse("delete_branch")

    def fast_forward(self, branch_name: str) -> NoReturn:
        self._refuse("fast_forward")


class SystemReadBuilder(BuilderReads):
    """The read builder of a system table: the same calls as :class:`impl.table.ReadBuilder`."""

    def __init__(self, table: SystemTable):
        self.table = table
        self._predicate: Predicate | None = None
        self._projection: list[str] | None = None
        self._limit: int | None = None

    def with_filter(self, predicate: Predicate | None) -> "SystemReadBuilder":
        if predicate is not None:
            if not isinstance(predicate, Predicate):
                raise InvalidPredicateError(f"with_filter takes a Predicate, got {type(predicate).__name__}")
            unknown = sorted(predicate.fields() - set(self.table.arrow_schema.names))
            if unknown:
                raise InvalidPredicateError(
                    f"filter on {self.table.identifier}: {unknown} are not columns "
                    f"(columns: {self.table.arrow_schema.names})")
        self._predicate = predicate
        return self

    def with_projection(self, projection: Sequence[str | int] | None) -> "SystemReadBuilder":
        self._projection = None if projection is None else resolve_projection(
            projection, self.table.arrow_schema.names, owner=str(self.table.identifier))
        return self

    def with_limit(self, limit: int | None) -> "SystemReadBuilder":
        self._limit = check_limit(limit)
        return self

    def new_predicate_builder(self) -> PredicateBuilder:
        return PredicateBuilder(self.table.schema)

    def read_type(self) -> pa.Schema:
        """The pyarrow schema of what ``new_read()`` returns."""
        return self.new_read().output_schema()

    def new_scan(self) -> "SystemTableScan":
        return SystemTableScan(self.table)

    def new_read(self) -> "SystemTableRead":
        return SystemTableRead(self.table, self._predicate, self._projection, self._limit)


class SystemTableScan:
    """Plans the single split of a system table read, pinning the snapshot it describes."""

    def __init__(self, table: SystemTable):
        self.table = table

    def plan(self) -> SystemPlan:
        snapshot_id = None
        if self.table.spec.snapshot_based:
            snapshot = TableScan(self.table.data_table.core).resolve_snapshot()
            snapshot_id = None if snapshot is None else snapshot.id
        return SystemPlan(snapshot_id, (SystemSplit(self.table.spec.name, snapshot_id),))


class SystemTableRead:
    """Builds the rows of the splits of a system table into Arrow."""

    def __init__(self, table: SystemTable, predicate: Predicate | None = None,
                 projection: Sequence[str] | None = None, limit: int | None = None):
        self.table = table
        self.predicate = predicate
        self.projection = list(projection) if projection is not None else list(table.arrow_schema.names)
        self.limit = limit
        self.files_read = 0  # data files opened: a system table's rows come from metadata alone

    def output_schema(self) -> pa.Schema:
        return pa.schema([self.table.arrow_schema.field(n) for n in self.projection])

    def _needed(self) -> frozenset[str]:
        return frozenset(self.projection) | (self.predicate.fields() if self.predicate is not None else frozenset())

    def _read_split(self, split: SystemSplit) -> pa.Table:
        if not isinstance(split, SystemSplit) or split.system_table != self.table.spec.name:
            raise InvalidPredicateError(
                f"{self.table.identifier} reads only its own splits, got {split!r}")
        data = self.table.data_table.core
        snapshot = data.snapshot_manager.snapshot(split.snapshot_id) if split.snapshot_id is not None else None
        columns = self.table.spec.build(data, snapshot, ReadRequest(self._needed(), self.predicate))
        schema = self.table.arrow_schema
        t = pa.Table.from_arrays([columns[f.name].cast(f.type) for f in schema], schema=schema)
        if self.predicate is not None and t.num_rows:
            t = t.filter(self.predicate.to_arrow())
        return t.select(self.projection)

    def _tables(self, splits: Sequence[SystemSplit]) -> Iterator[pa.Table]:
        produced = 0
        for s in splits:
            if self.limit is not None and produced >= self.limit:
                return
            t = self._read_split(s)
            if self.limit is not None:
                t = t.slice(0, self.limit - produced)
            produced += t.num_rows
            yield t

    def to_arrow(self, splits: Sequence[SystemSplit]) -> pa.Table:
        """All rows of ``splits`` as one table (filter, projection and limit applied)."""
        tables = list(self._tables(list(splits)))
        return pa.concat_tables(tables) if tables else self.output_schema().empty_table()

    def to_arrow_batch_reader(self, splits: Sequence[SystemSplit]) -> pa.RecordBatchReader:
        """A streaming reader over the rows of ``splits``."""
        splits = list(splits)

        def batches() -> Iterator[pa.RecordBatch]:
            for t in self._tables(splits):
                yield from t.to_batches()
        return pa.RecordBatchReader.from_batches(self.output_schema(), batches())

    def to_pandas(self, splits: Sequence[SystemSplit]):
        """The rows as a pandas DataFrame (needs the ``pandas`` extra), values kept exactly (a BIGINT
        column with nulls as ``Int64``: see :mod:`impl.read.pandas_io`)."""
        require("pandas", "to_pandas()")  # checked before reading anything
        return arrow_to_pandas(self.to_arrow(splits))


__all__ = ["SystemTable", "SystemReadBuilder", "SystemTableScan", "SystemTableRead", "SystemSplit",
           "SystemPlan", "SYSTEM_TABLE_SPLITTER"]


# mypy checks that both kinds of table satisfy the Table protocol
TABLE_KINDS: tuple[type[Table], ...] = (FileStoreTable, SystemTable)

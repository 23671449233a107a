"""The ``Table`` protocol: what a data table (:class:`impl.table.FileStoreTable`) and a system
table (:class:`impl.table.SystemTable`) share, so code reading "a table" takes either.

Both read the same way (``new_read_builder``, ``to_arrow``, ``to_arrow_batch_reader``, the Arrow
stream protocol ``__arrow_c_stream__``, ``copy`` for time travel). Both
name every write, maintenance, tag and branch entry point; a system table refuses each with
:class:`impl.errors.SystemTableReadOnlyError`, raised before anything is written.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

import pyarrow as pa

from impl.predicate.predicate import Predicate
from impl.schema.records import TableSchema


@runtime_checkable
class Table(Protocol):
    """A table one can read; writing it is allowed for data tables only."""

    @property
    def identifier(self) -> str: ...

    @property
    def schema(self) -> TableSchema: ...

    @property
    def name(self) -> str: ...

    @property
    def arrow_schema(self) -> pa.Schema: ...

    @property
    def primary_keys(self) -> list[str]: ...

    @property
    def partition_keys(self) -> list[str]: ...

    @property
    def is_primary_key_table(self) -> bool: ...

    # ------------------------------------------------------------------ reads

    def copy(self, dynamic_options: Mapping[str, str]) -> "Table": ...

    def new_read_builder(self) -> Any:
        """A read builder (``with_filter``, ``with_projection``, ``with_limit``, ``new_scan``,
        ``new_read``); the data table's and the system table's are different classes."""

    def to_arrow(self, predicate: Predicate | None = None, projection: Sequence[str] | None = None) -> pa.Table: ...

    def to_arrow_batch_reader(self, predicate: Predicate | None = None,
                              projection: Sequence[str] | None = None) -> pa.RecordBatchReader: ...

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream protocol: Arrow-native libraries read the rows directly."""

    # ------------------------------------------------------------------ writes (data tables only)

    def new_batch_write_builder(self) -> Any: ...

    def new_stream_write_builder(self) -> Any: ...

    def write_arrow(self, data, *, overwrite: Mapping | None | bool = False) -> None: ...

    def compact(self, full: bool = False) -> Any: ...

    def expire_snapshots(self, *, retain_min: int | None = None, retain_max: int | None = None,
                         time_retained_ms: int | None = None, max_deletes: int | None = None,
                         now_millis: int | None = None) -> Any: ...

    def remove_orphan_files(self, older_than: int | _dt.datetime | None = None, *,
                            older_than_millis: int | None = None, dry_run: bool = False) -> list[str]: ...

    def rollback_to(self, target: int | str) -> list[str]: ...

    def create_tag(self, tag_name: str, snapshot_id: int | None = None,
                   time_retained: _dt.timedelta | str | None = None, ignore_if_exists: bool = False) -> Any: ...

    def delete_tag(self, tag_name: str) -> list[str]: ...

    def create_branch(self, branch_name: str, tag: str | None = None, ignore_if_exists: bool = False) -> None: ...

    def delete_branch(self, branch_name: str) -> None: ...

    def fast_forward(self, branch_name: str) -> None: ...

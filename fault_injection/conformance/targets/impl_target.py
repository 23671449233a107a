"""The ``impl`` target: this repository's implementation, driven through its public table API."""

from __future__ import annotations

import uuid
from typing import Sequence

import pyarrow as pa

import impl
from fault_injection.conformance.adapter import (
    Capability,
    CommitResult,
    Outcome,
    Prepared,
    TableRef,
    TableSpec,
)
from impl.errors import CommitConflictError, OverwritePartitionError

NEVER_BY_TIME_MS = 100 * 365 * 24 * 3600 * 1000  # a century
ARROW_SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def _conflict_classes() -> tuple[type[BaseException], ...]:
    """impl's refusals: a commit conflict, or an overwrite it rejects as bad input."""
    return (CommitConflictError, OverwritePartitionError)


def result_of_error(e: BaseException) -> CommitResult:
    """A refusal the target detected is CONFLICT (class name kept); anything else ERROR."""
    outcome = Outcome.CONFLICT if isinstance(e, _conflict_classes()) else Outcome.ERROR
    return CommitResult(outcome, error_class=type(e).__name__, message=str(e))


class ImplTarget:
    """Target over ``impl.Catalog``; one catalog per warehouse, prepared messages kept by handle."""

    name = "impl"
    capabilities = frozenset(Capability)

    def __init__(self) -> None:
        self._catalogs: dict[tuple, impl.FileSystemCatalog] = {}
        self._prepared: dict[str, list] = {}

    def _catalog(self, table: TableRef) -> impl.FileSystemCatalog:
        key = (table.warehouse, table.storage_options)
        if key not in self._catalogs:
            self._catalogs[key] = impl.FileSystemCatalog(table.warehouse, options=dict(table.storage_options) or None)
        return self._catalogs[key]

    def _table(self, table: TableRef) -> impl.FileStoreTable:
        t = self._catalog(table).get_table(table.identifier)
        assert isinstance(t, impl.FileStoreTable), f"{table.identifier} is a system table"
        return t

    def create_table(self, table: TableRef, spec: TableSpec) -> None:
        cat = self._catalog(table)
        cat.create_database(table.identifier.split(".")[0], ignore_if_exists=True)
        options = {"bucket": str(spec.bucket), **dict(spec.options)}
        cat.create_table(table.identifier, ARROW_SCHEMA, primary_keys=spec.primary_keys() or None,
                         partition_keys=spec.partition_keys() or None, options=options)

    def prepare(self, table: TableRef, rows: Sequence[dict]) -> Prepared:
        t = self._table(table)
        # A stream write: its messages may be committed under any user and identifier later.
        w = t.new_stream_write_builder().new_write()
        try:
            w.write_arrow(pa.Table.from_pylist(list(rows), schema=ARROW_SCHEMA))
            messages = w.prepare_commit()
        finally:
            w.close()
        handle = uuid.uuid4().hex
        self._prepared[handle] = messages
        names = tuple(f.file_name for m in messages for f in m.written_files())
        return Prepared(handle, names)

    def commit(self, table: TableRef, prepared: Prepared, commit_user: str, identifier: int, *,
               filter_committed: bool = False) -> CommitResult:
        messages = self._prepared[prepared.handle]
        c = self._table(table).new_stream_write_builder().with_commit_user(commit_user).new_commit()
        try:
            if filter_committed:
                stats_list = c.filter_and_commit({identifier: messages})
                ids = tuple(i for s in stats_list for i in s.snapshot_ids)
            else:
                ids = tuple(c.commit(messages, identifier).snapshot_ids)
        except Exception as e:  # noqa: BLE001 - every failure is reported as an outcome
            return result_of_error(e)
        finally:
            c.close()
        return CommitResult(Outcome.OK, ids)

    def overwrite(self, table: TableRef, rows: Sequence[dict], partition: dict | None, commit_user: str,
                  identifier: int) -> CommitResult:
        wb = self._table(table).new_batch_write_builder().overwrite(partition)
        wb.commit_user = commit_user  # the builder's write and commit share this user
        w, c = wb.new_write(), wb.new_commit()
        try:
            w.write_arrow(pa.Table.from_pylist(list(rows), schema=ARROW_SCHEMA))
            ids = tuple(c.commit(w.prepare_commit(), identifier).snapshot_ids)
        except Exception as e:  # noqa: BLE001
            return result_of_error(e)
        finally:
            w.close()
            c.close()
        return CommitResult(Outcome.OK, ids)

    def compact(self, table: TableRef, commit_user: str, identifier: int) -> CommitResult:
        # impl's table-level compaction picks its own user and identifier (a dedicated job), as
        # Paimon's compact action does; the suites only check the COMPACT snapshot it publishes.
        try:
            stats = self._table(table).compact(full=True)
        except Exception as e:  # noqa: BLE001
            return result_of_error(e)
        return CommitResult(Outcome.OK, tuple(stats.snapshot_ids) if stats else ())

    def expire(self, table: TableRef, retain_min: int, retain_max: int) -> list[int]:
        # "By count": the time threshold never expires anything, so retain_max alone decides (with
        # time_retained_ms=0 every snapshot beyond retain_min would be old enough to go).
        result = self._table(table).expire_snapshots(retain_min=retain_min, retain_max=retain_max,
                                                     time_retained_ms=NEVER_BY_TIME_MS)
        return sorted(result.expired_snapshot_ids)

    def read_rows(self, table: TableRef, snapshot_id: int | None = None) -> list[dict]:
        t = self._table(table)
        if snapshot_id is not None:
            t = t.copy({"scan.snapshot-id": str(snapshot_id)})
        return t.to_arrow().select(["dt", "id", "v"]).to_pylist()

    def close(self) -> None:
        self._prepared.clear()
        self._catalogs.clear()

"""The implementation adapter: the operations the conformance suites drive, for any target.

A *target* is one implementation of Paimon's table format and commit protocol (``impl``, or
pypaimon 2.1.0 in its own venv behind a JSON-lines subprocess). The suites see only this
interface and the table's files on storage, which Paimon's format defines; what a target does
inside is a black box.

Every table the suites use has one schema, so that rows travel as plain JSON across the process
boundary::

    dt string (the partition key when the spec is partitioned), id bigint, v bigint

Rows are dicts ``{"dt": str, "id": int, "v": int}``. Primary-key tables have ``id`` (plus ``dt``
when partitioned) as primary key and the deduplicate merge engine.

An operation a target cannot do raises :class:`Unsupported`; the suites report it as
*unsupported*, never as passed or silently skipped. A commit the target refused is a
:class:`CommitResult` with ``outcome`` CONFLICT (the target's error class and message kept), not
an exception, so the suites can compare refusals with the model's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol, Sequence

SCHEMA_FIELDS = (("dt", "string"), ("id", "bigint"), ("v", "bigint"))


class Capability(enum.Enum):
    """What a target can do (the suites run the checks whose capabilities the target has)."""

    APPEND_TABLE = "append-table"
    PRIMARY_KEY_TABLE = "primary-key-table"
    COMMIT_IDENTIFIER = "commit-identifier"  # commit under a given user and identifier
    FILTER_COMMITTED = "filter-committed"  # recovery: re-commit only what is not yet published
    OVERWRITE = "overwrite"
    COMPACT = "compact"  # a full compaction committed as a COMPACT snapshot
    EXPIRE = "expire"
    TIME_TRAVEL = "time-travel"  # read the rows of a given snapshot
    OBJECT_STORE = "object-store"  # tables on S3 through fs.s3.* options


class Unsupported(Exception):
    """The target cannot do this operation (names the capability)."""

    def __init__(self, capability: Capability, detail: str = ""):
        super().__init__(f"{capability.value}{': ' + detail if detail else ''}")
        self.capability = capability


class Outcome(enum.Enum):
    OK = "ok"  # the target reported success
    CONFLICT = "conflict"  # the target refused the commit (a conflict it detected)
    ERROR = "error"  # the target raised something else (outcome unknown to the caller)


@dataclass(frozen=True)
class TableSpec:
    primary_key: bool
    partitioned: bool = False
    bucket: int = 1  # fixed bucket count (primary-key tables), or -1 for bucket-unaware append tables
    options: tuple[tuple[str, str], ...] = ()  # further Paimon table options

    def primary_keys(self) -> list[str]:
        if not self.primary_key:
            return []
        return ["dt", "id"] if self.partitioned else ["id"]

    def partition_keys(self) -> list[str]:
        return ["dt"] if self.partitioned else []


@dataclass(frozen=True)
class TableRef:
    """Where a table lives: ``warehouse`` (a local path or ``s3://bucket/prefix``), its
    ``identifier`` (``db.t``) and the storage options (``fs.s3.endpoint`` & co.)."""

    warehouse: str
    identifier: str
    storage_options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CommitResult:
    outcome: Outcome
    snapshot_ids: tuple[int, ...] = ()  # what the target reported (empty when it reports none)
    error_class: str | None = None  # the class name of what the target raised
    message: str | None = None


@dataclass(frozen=True)
class Prepared:
    """Handle of files a target wrote and has not committed yet (kept inside the target)."""

    handle: str
    file_names: tuple[str, ...] = field(default=())  # the data files written, when the target says


class Target(Protocol):
    """One implementation under test. Instances are not shared between OS processes; racing
    suites open one target per process."""

    name: str
    capabilities: frozenset[Capability]

    def create_table(self, table: TableRef, spec: TableSpec) -> None: ...

    def prepare(self, table: TableRef, rows: Sequence[dict]) -> Prepared:
        """Write ``rows`` into new data files (nothing committed)."""
        ...

    def commit(self, table: TableRef, prepared: Prepared, commit_user: str, identifier: int, *,
               filter_committed: bool = False) -> CommitResult:
        """Commit what ``prepare`` wrote (APPEND). With ``filter_committed``, first drop what this
        user already published under ``identifier`` (Paimon's recovery path)."""
        ...

    def overwrite(self, table: TableRef, rows: Sequence[dict], partition: dict | None, commit_user: str,
                  identifier: int) -> CommitResult: ...

    def compact(self, table: TableRef, commit_user: str, identifier: int) -> CommitResult:
        """A full compaction of every bucket, committed (COMPACT snapshot)."""
        ...

    def expire(self, table: TableRef, retain_min: int, retain_max: int) -> list[int]:
        """Expire snapshots by count (time retention off); the expired ids."""
        ...

    def read_rows(self, table: TableRef, snapshot_id: int | None = None) -> list[dict]:
        """Every row of the latest (or the given) snapshot, merged as the table's reads merge."""
        ...

    def close(self) -> None: ...


__all__ = ["Capability", "Unsupported", "Outcome", "TableSpec", "TableRef", "CommitResult", "Prepared", "Target",
           "SCHEMA_FIELDS"]

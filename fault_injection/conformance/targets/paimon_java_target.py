"""The Apache Paimon Java target: a client of the Java harness's JSON-lines server.

The harness (``tests/paimon_java/harness``, built by ``.ci/run`` or on first use by
``tests/_support/paimon_java.py``) runs Paimon's own Java implementation, release 1.4.2 from
Maven Central (2.0.0 is not published there). One JVM per :class:`PaimonJavaTarget`: racing
suites open one target per OS process, so each racer has its own Paimon.

The Paimon Java calls each op uses (Harness.java names them): prepare = a
``StreamTableWrite`` whose ``prepareCommit`` messages are kept under a handle; commit =
``TableCommitImpl.commit(identifier, messages)`` under the given user (``ignoreEmptyCommit``
true), or ``filterAndCommit`` for the recovery path; overwrite = ``withOverwrite(partition)``
with ``dynamic-partition-overwrite`` off; compact = ``TableWrite.compact(partition, bucket,
true)`` for every bucket of the latest snapshot (``AppendCompactCoordinator`` for bucket-unaware
append tables); expire = ``ExpireSnapshots`` with ``ExpireConfig`` (time retention a century, i.e. off); reads =
``ReadBuilder`` with ``scan.snapshot-id`` for time travel.

Tables on S3 are not supported (the harness carries no S3 file system): they raise
:class:`Unsupported` before any request is sent.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Sequence

from fault_injection.conformance.adapter import (
    SCHEMA_FIELDS,
    Capability,
    CommitResult,
    Outcome,
    Prepared,
    TableRef,
    TableSpec,
    Unsupported,
)
from fault_injection.conformance.targets import load_support_module
from impl.errors import PaimonError

_HELPER = Path(__file__).resolve().parents[3] / "tests" / "_support" / "paimon_java.py"
_NEVER_MS = 100 * 365 * 24 * 3600 * 1000  # a century: no snapshot is that old
_PAIMON_TYPES = {"string": "STRING", "bigint": "BIGINT"}


class PaimonJavaError(PaimonError):
    """The Paimon Java harness failed a request that is not a commit (its exception says why)."""


def _helper() -> ModuleType:
    """tests/_support/paimon_java.py, which builds and runs the Paimon Java harness."""
    return load_support_module(_HELPER, "_conformance_paimon_java", PaimonJavaError)


def _table_args(table: TableRef) -> dict:
    if table.storage_options:
        raise Unsupported(Capability.OBJECT_STORE, "the Paimon Java harness has no S3 file system")
    return {"warehouse": table.warehouse, "table": table.identifier}


class PaimonJavaTarget:
    """Paimon Java behind the harness's JSON-lines server (see the module docstring)."""

    name = "paimon-java"
    capabilities = frozenset({Capability.APPEND_TABLE, Capability.PRIMARY_KEY_TABLE, Capability.COMMIT_IDENTIFIER,
                              Capability.FILTER_COMMITTED, Capability.OVERWRITE, Capability.COMPACT,
                              Capability.EXPIRE, Capability.TIME_TRAVEL})

    def __init__(self) -> None:
        helper = _helper()
        self._errors = helper.JavaHarnessError
        self._server = helper.JavaServer(helper.harness_classpath(), heap="512m")
        self._closed = False

    @property
    def server_pid(self) -> int:
        """The JVM's process id (crash suites kill it mid-commit)."""
        return self._server._proc.pid

    def _result(self, op: str, **args):
        if self._closed:
            raise PaimonJavaError("this PaimonJavaTarget is closed")
        try:
            return self._server.call(op, **args)
        except self._errors as e:
            raise PaimonJavaError(f"Paimon Java {op} failed: {e.error_class}: {e.message}") from e

    def _commit_like(self, op: str, **args) -> CommitResult:
        """OK with the snapshot ids Paimon created; CONFLICT when Paimon's message names a
        conflict (Harness.isConflict); ERROR for anything else (outcome unknown)."""
        try:
            ids = self._server.call(op, **args)
        except self._errors as e:
            outcome = Outcome.CONFLICT if e.conflict else Outcome.ERROR
            return CommitResult(outcome, error_class=e.error_class, message=e.message)
        return CommitResult(Outcome.OK, tuple(ids))

    # ------------------------------------------------------------------ Target

    def create_table(self, table: TableRef, spec: TableSpec) -> None:
        self._result("create_table", **_table_args(table), fields=[[n, _PAIMON_TYPES[t]] for n, t in SCHEMA_FIELDS],
                     primary_keys=spec.primary_keys(), partition_keys=spec.partition_keys(),
                     table_options={"bucket": str(spec.bucket), **dict(spec.options)})

    def prepare(self, table: TableRef, rows: Sequence[dict]) -> Prepared:
        result = self._result("prepare", **_table_args(table), rows=list(rows))
        return Prepared(result["handle"], tuple(result["file_names"]))

    def commit(self, table: TableRef, prepared: Prepared, commit_user: str, identifier: int, *,
               filter_committed: bool = False) -> CommitResult:
        return self._commit_like("commit", **_table_args(table), handle=prepared.handle, commit_user=commit_user,
                                 identifier=identifier, filter_committed=filter_committed)

    def overwrite(self, table: TableRef, rows: Sequence[dict], partition: dict | None, commit_user: str,
                  identifier: int) -> CommitResult:
        return self._commit_like("overwrite", **_table_args(table), rows=list(rows), partition=partition or {},
                                 commit_user=commit_user, identifier=identifier)

    def compact(self, table: TableRef, commit_user: str, identifier: int) -> CommitResult:
        try:
            result = self._server.call("compact", **_table_args(table), full=True, commit_user=commit_user,
                                       identifier=identifier)
        except self._errors as e:
            return CommitResult(Outcome.CONFLICT if e.conflict else Outcome.ERROR, error_class=e.error_class,
                                message=e.message)
        return CommitResult(Outcome.OK, tuple(result["snapshot_ids"]))

    def expire(self, table: TableRef, retain_min: int, retain_max: int) -> list[int]:
        before = self._result("snapshot_ids", **_table_args(table))
        # "Time retention off": Paimon expires a snapshot between retain_min and retain_max only
        # once it is older than snapshot.time-retained, so a retention no snapshot reaches
        # leaves the count rule alone (ExpireSnapshotsImpl.expire).
        self._result("expire", **_table_args(table), retain_min=retain_min, retain_max=retain_max,
                     time_retain_ms=_NEVER_MS)
        after = set(self._result("snapshot_ids", **_table_args(table)))
        return [i for i in before if i not in after]

    def read_rows(self, table: TableRef, snapshot_id: int | None = None) -> list[dict]:
        return list(self._result("read_rows", **_table_args(table), snapshot_id=snapshot_id))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._server.close()

    def __enter__(self) -> "PaimonJavaTarget":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["PaimonJavaTarget", "PaimonJavaError"]

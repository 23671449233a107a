"""The pypaimon 2.1.0 target: a client of ``pypaimon_server.py`` running in pypaimon's own venv.

One server process per :class:`PypaimonTarget` (racing suites open one target per OS process, so
each racer has its own pypaimon). Requests and responses are JSON lines over the server's
stdin/stdout; its stderr goes to a temporary file whose tail explains a dead server. Nothing is
restarted silently: once the server is gone every call raises :class:`PypaimonServerError`.

What pypaimon 2.1.0 supports (see pypaimon_server.py for the API each op uses): append and
primary-key tables, commits under a given user and identifier, overwrite, time travel, tables on
S3. It has no compaction, no snapshot expiration and no filter-committed (recovery) API: those
raise :class:`Unsupported` here, before any request is sent.

The venv is the one the interop tests use (``fault_injection/conformance/pypaimon_env.py``, built
once and cached; the tests import it through ``tests/_support/pypaimon_env.py``). It is part of the
package, so an installed ``python -m fault_injection.conformance --target pypaimon`` finds it.
"""

from __future__ import annotations

import itertools
import json
import os
import selectors
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Sequence

from fault_injection.conformance import pypaimon_env
from fault_injection.conformance.adapter import (
    Capability,
    CommitResult,
    Outcome,
    Prepared,
    TableRef,
    TableSpec,
    Unsupported,
)
from impl.errors import PaimonError

SERVER_SCRIPT = Path(__file__).with_name("pypaimon_server.py")
DEFAULT_TIMEOUT_S = 600.0  # one request (an S3 commit under contention can retry for minutes)
_STDERR_TAIL = 4000


class PypaimonServerError(PaimonError):
    """The pypaimon server died, hung, or answered outside the protocol (its stderr tail says why)."""


def pypaimon_python() -> Path:
    """The pypaimon 2.1.0 venv's interpreter (built and cached by fault_injection/conformance/pypaimon_env.py)."""
    try:
        return pypaimon_env.pypaimon_python()
    except (OSError, subprocess.CalledProcessError) as e:
        raise PypaimonServerError(f"cannot build the pypaimon {pypaimon_env.PYPAIMON_VERSION} venv under "
                                  f"{pypaimon_env.cache_dir()}: {e}") from e


def _table_args(table: TableRef) -> dict:
    return {"warehouse": table.warehouse, "identifier": table.identifier,
            "storage_options": dict(table.storage_options)}


def commit_result(response: dict) -> CommitResult:
    """A commit-like response as the adapter's result: OK, CONFLICT for a conflict pypaimon
    detected (the server classifies its exception, see ``pypaimon_server.is_conflict``), ERROR
    for anything else. pypaimon's commit returns nothing, so ``snapshot_ids`` stays empty."""
    if response["ok"]:
        return CommitResult(Outcome.OK)
    outcome = Outcome.CONFLICT if response.get("conflict") else Outcome.ERROR
    return CommitResult(outcome, error_class=response.get("error_class"), message=response.get("message"))


class PypaimonTarget:
    """pypaimon 2.1.0 behind a JSON-lines subprocess (see the module docstring)."""

    name = "pypaimon"
    capabilities = frozenset({Capability.APPEND_TABLE, Capability.PRIMARY_KEY_TABLE, Capability.COMMIT_IDENTIFIER,
                              Capability.OVERWRITE, Capability.TIME_TRAVEL, Capability.OBJECT_STORE})

    server_script = SERVER_SCRIPT  # run under the peer's interpreter; subclasses name their own

    def __init__(self, python: Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        self._timeout_s = timeout_s
        self._stderr = tempfile.NamedTemporaryFile(prefix=f"{self.name}-server-", suffix=".log", delete=False)
        self._proc = subprocess.Popen([str(python or self.peer_python()), str(self.server_script)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                      env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._ids = itertools.count()
        self._buffer = b""
        self._closed = False

    @staticmethod
    def peer_python() -> Path:
        """The interpreter of the peer's venv (built on first use)."""
        return pypaimon_python()

    @property
    def server_pid(self) -> int:
        """The server's process id (crash suites kill it mid-commit)."""
        return self._proc.pid

    # ------------------------------------------------------------------ protocol

    def _stderr_tail(self) -> str:
        try:
            return Path(self._stderr.name).read_text(errors="replace")[-_STDERR_TAIL:]
        except OSError:
            return "(stderr unavailable)"

    def _dead(self, what: str) -> PypaimonServerError:
        code = self._proc.poll()
        return PypaimonServerError(f"{self.name} server (pid {self._proc.pid}) {what}"
                                   f"{'' if code is None else f', exit code {code}'}; stderr tail:\n"
                                   f"{self._stderr_tail()}")

    def _readline(self) -> bytes:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + self._timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    # A late answer would desynchronise the protocol: end the server for good.
                    self._proc.kill()
                    self._proc.wait()
                    raise self._dead(f"answered nothing within {self._timeout_s:.0f} s (killed)")
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._dead("closed its output (it died)")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _call(self, op: str, **args) -> dict:
        """Send one request; the raw response (``ok`` false included)."""
        if self._closed:
            raise PypaimonServerError(f"this {type(self).__name__} is closed")
        request_id = next(self._ids)
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write((json.dumps({"id": request_id, "op": op, "args": args}) + "\n").encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._dead(f"refused the request {op!r} (it died)") from None
        line = self._readline()
        try:
            response = json.loads(line)
        except ValueError:
            raise self._dead(f"answered {line[:200]!r}, not a JSON line") from None
        if response.get("id") != request_id:
            raise self._dead(f"answered request {response.get('id')} to request {request_id}")
        return response

    def _result(self, op: str, **args):
        """Send one request; its result, or the server's error raised as PypaimonServerError."""
        response = self._call(op, **args)
        if not response["ok"]:
            raise PypaimonServerError(f"{self.name} {op} failed: {response['error_class']}: {response['message']}\n"
                                      f"{response.get('traceback', '')}")
        return response["result"]

    # ------------------------------------------------------------------ Target

    def create_table(self, table: TableRef, spec: TableSpec) -> None:
        self._result("create_table", table=_table_args(table), primary_keys=spec.primary_keys(),
                     partition_keys=spec.partition_keys(), bucket=spec.bucket, options=dict(spec.options))

    def prepare(self, table: TableRef, rows: Sequence[dict]) -> Prepared:
        result = self._result("prepare", table=_table_args(table), rows=list(rows))
        return Prepared(result["handle"], tuple(result["file_names"]))

    def commit(self, table: TableRef, prepared: Prepared, commit_user: str, identifier: int, *,
               filter_committed: bool = False) -> CommitResult:
        if filter_committed:
            raise Unsupported(Capability.FILTER_COMMITTED, "pypaimon 2.1.0 has no filter-committed (recovery) API")
        return commit_result(self._call("commit", table=_table_args(table), handle=prepared.handle,
                                        commit_user=commit_user, identifier=identifier))

    def overwrite(self, table: TableRef, rows: Sequence[dict], partition: dict | None, commit_user: str,
                  identifier: int) -> CommitResult:
        return commit_result(self._call("overwrite", table=_table_args(table), rows=list(rows), partition=partition,
                                        commit_user=commit_user, identifier=identifier))

    def compact(self, table: TableRef, commit_user: str, identifier: int) -> CommitResult:
        raise Unsupported(Capability.COMPACT, "pypaimon 2.1.0 has no compaction API")

    def expire(self, table: TableRef, retain_min: int, retain_max: int) -> list[int]:
        raise Unsupported(Capability.EXPIRE, "pypaimon 2.1.0 has no snapshot expiration")

    def read_rows(self, table: TableRef, snapshot_id: int | None = None) -> list[dict]:
        return list(self._result("read_rows", table=_table_args(table), snapshot_id=snapshot_id))

    def close(self) -> None:
        """Stop the server (politely, then by force) and remove its stderr log."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._proc.poll() is None:
                try:
                    assert self._proc.stdin is not None
                    self._proc.stdin.write(b'{"id": -1, "op": "close", "args": {}}\n')
                    self._proc.stdin.close()
                    self._proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    self._proc.kill()
                    self._proc.wait()
        finally:
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._stderr.close()
            Path(self._stderr.name).unlink(missing_ok=True)

    def __enter__(self) -> "PypaimonTarget":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["PypaimonTarget", "PypaimonServerError", "pypaimon_python", "commit_result"]

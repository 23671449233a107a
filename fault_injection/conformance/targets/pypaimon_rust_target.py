"""The pypaimon-rust 0.4.0 target: a client of ``pypaimon_rust_server.py`` in pypaimon-rust's venv.

pypaimon-rust is Apache Paimon's Rust core with Python bindings (PyPI ``pypaimon-rust``). The
client is the pypaimon target's (one JSON-lines server process per target, nothing restarted
silently); only the server script, the venv and what the peer can do differ.

What pypaimon-rust 0.4.0 supports (see pypaimon_rust_server.py for the API each op uses):
append and primary-key tables, stream commits under a given user and identifier,
``filter_and_commit`` (the recovery path), overwrite (published under the batch identifier
i64::MAX whatever identifier is asked), time travel, tables on S3. It has no compaction and no
snapshot expiration in its Python API: those raise :class:`Unsupported` here, before any
request is sent.

The venv is the one the interop tests use (``tests/_support/pypaimon_rust_env.py`` imports
:func:`pypaimon_rust_python` from here), built once and cached by ``pypaimon_env.peer_python``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from fault_injection.conformance import pypaimon_env
from fault_injection.conformance.adapter import Capability, CommitResult, Prepared, TableRef, Unsupported
from fault_injection.conformance.targets.pypaimon_target import (
    PypaimonServerError,
    PypaimonTarget,
    _table_args,
    commit_result,
)

PYPAIMON_RUST_VERSION = "0.4.0"
REQUIREMENTS = (f"pypaimon-rust=={PYPAIMON_RUST_VERSION}", "pyarrow")


def pypaimon_rust_python() -> Path:
    """The pypaimon-rust 0.4.0 venv's interpreter (built once and cached);
    :class:`pypaimon_env.PeerUnavailable` when pip cannot install the wheel."""
    try:
        return pypaimon_env.peer_python("pypaimon-rust", PYPAIMON_RUST_VERSION, list(REQUIREMENTS))
    except (OSError, subprocess.CalledProcessError) as e:
        raise PypaimonServerError(f"cannot build the pypaimon-rust {PYPAIMON_RUST_VERSION} venv under "
                                  f"{pypaimon_env.cache_dir()}: {e}") from e


class PypaimonRustTarget(PypaimonTarget):
    """pypaimon-rust 0.4.0 behind a JSON-lines subprocess (see the module docstring)."""

    name = "pypaimon-rust"
    capabilities = frozenset({Capability.APPEND_TABLE, Capability.PRIMARY_KEY_TABLE, Capability.COMMIT_IDENTIFIER,
                              Capability.FILTER_COMMITTED, Capability.OVERWRITE, Capability.TIME_TRAVEL,
                              Capability.OBJECT_STORE})
    server_script = Path(__file__).with_name("pypaimon_rust_server.py")

    @staticmethod
    def peer_python() -> Path:
        return pypaimon_rust_python()

    def commit(self, table: TableRef, prepared: Prepared, commit_user: str, identifier: int, *,
               filter_committed: bool = False) -> CommitResult:
        return commit_result(self._call("commit", table=_table_args(table), handle=prepared.handle,
                                        commit_user=commit_user, identifier=identifier,
                                        filter_committed=filter_committed))

    def compact(self, table: TableRef, commit_user: str, identifier: int) -> CommitResult:
        raise Unsupported(Capability.COMPACT, "pypaimon-rust 0.4.0 has no compaction API")

    def expire(self, table: TableRef, retain_min: int, retain_max: int) -> list[int]:
        raise Unsupported(Capability.EXPIRE, "pypaimon-rust 0.4.0 exposes no snapshot expiration to Python")


__all__ = ["PypaimonRustTarget", "pypaimon_rust_python", "PYPAIMON_RUST_VERSION"]

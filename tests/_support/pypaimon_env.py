"""The pypaimon 2.1.0 venv helper for the tests: it lives in the package
(fault_injection/conformance/pypaimon_env.py) so that the installed conformance CLI finds it too."""

from __future__ import annotations

import pytest

from fault_injection.conformance.pypaimon_env import (  # noqa: F401 - re-exported for the tests
    PYPAIMON_VERSION,
    READ_TABLE,
    PeerUnavailable,
    cache_dir,
    pypaimon_python,
    run_pypaimon,
)


def read_with_pypaimon(warehouse: str, table: str, sort_by: list[str] | None = None) -> list[dict]:
    """The rows pypaimon 2.1.0 reads of ``table`` (``db.name``) in ``warehouse``; skips the calling
    test, saying why, when the peer cannot be installed here."""
    try:
        return run_pypaimon(READ_TABLE, warehouse=warehouse, table=table, sort_by=sort_by)
    except PeerUnavailable as e:
        pytest.skip(f"pypaimon {PYPAIMON_VERSION} cannot be installed here: {e}")

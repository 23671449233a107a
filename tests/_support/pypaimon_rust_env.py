"""A private virtual environment with pypaimon-rust 0.4.0 (Apache Paimon's Rust core with Python
bindings), created once and cached, as ``pypaimon_env`` does for pypaimon 2.1.0.

The venv lives in ``$PAIMON_PY_CACHE`` (default ``~/.cache/paimon-py-core``); a file lock makes
concurrent pytest-xdist workers build it once. When the package registry cannot be reached the
build fails and :func:`pypaimon_rust_python` raises :class:`Unavailable`, which the fixture turns
into a skip naming the reason.
"""

from __future__ import annotations

from pathlib import Path

from fault_injection.conformance.pypaimon_env import PeerUnavailable, peer_python, run_in_python

PYPAIMON_RUST_VERSION = "0.4.0"

Unavailable = PeerUnavailable  # the tests' name for it


def pypaimon_rust_python() -> Path:
    """Path of the python executable of the pypaimon-rust venv, building the venv if needed."""
    return peer_python("pypaimon-rust", PYPAIMON_RUST_VERSION, [f"pypaimon-rust=={PYPAIMON_RUST_VERSION}", "pyarrow"])


def run_pypaimon_rust(script: str, **params) -> object:
    """Run ``script`` under pypaimon-rust's interpreter (see ``run_in_python``)."""
    return run_in_python(pypaimon_rust_python(), "pypaimon-rust", script, **params)

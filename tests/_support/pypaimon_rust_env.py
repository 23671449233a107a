"""A private virtual environment with pypaimon-rust 0.4.0 (Apache Paimon's Rust core with Python
bindings), created once and cached, as ``pypaimon_env`` does for pypaimon 2.1.0; the conformance
target (fault_injection/conformance/targets/pypaimon_rust_target.py) owns its requirements.

The venv lives in ``$PAIMON_PY_CACHE`` (default ``~/.cache/paimon-py-core``); a file lock makes
concurrent pytest-xdist workers build it once. When the package registry cannot be reached the
build fails and :func:`pypaimon_rust_python` raises :class:`Unavailable`, which the fixture turns
into a skip naming the reason.
"""

from __future__ import annotations

from fault_injection.conformance.pypaimon_env import PeerUnavailable, run_in_python
from fault_injection.conformance.targets.pypaimon_rust_target import pypaimon_rust_python

Unavailable = PeerUnavailable  # the tests' name for it
__all__ = ["Unavailable", "pypaimon_rust_python", "run_pypaimon_rust"]


def run_pypaimon_rust(script: str, **params) -> object:
    """Run ``script`` under pypaimon-rust's interpreter (see ``run_in_python``)."""
    return run_in_python(pypaimon_rust_python(), "pypaimon-rust", script, **params)

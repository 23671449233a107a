"""Fixtures of the tests that run Apache Paimon Java (marker ``paimon_java``).

One warm JVM per test session (per xdist worker): the harness's JSON-lines server. The harness is
built by ``.ci/run`` beforehand; the fixture builds it only when the jar is missing or stale. The
tests skip only when Java or Maven is not installed at all.
"""

from __future__ import annotations

import pytest
from paimon_java import JavaServer, harness_classpath, tools_missing


@pytest.fixture(scope="session")
def java():
    """The Paimon Java harness server (tests/_support/paimon_java.py documents the protocol)."""
    reason = tools_missing()
    if reason:
        pytest.skip(f"Paimon Java harness needs a JDK and Maven: {reason}")
    server = JavaServer(harness_classpath())
    try:
        yield server
    finally:
        server.close()

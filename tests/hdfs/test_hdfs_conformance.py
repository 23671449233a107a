"""The conformance suite's process checks against impl on HDFS (``--store hdfs``): racing OS
processes and SIGKILL mid-commit, judged by the executable model as on local disk and S3."""

from __future__ import annotations

import uuid

from fault_injection.conformance.adapter import TableRef
from fault_injection.conformance.checks.processes import check_race, check_sigkill
from fault_injection.conformance.checks.result import Status
from fault_injection.conformance.targets import open_target


def _table(hdfs_server) -> TableRef:
    return TableRef(hdfs_server.webhdfs_url(hdfs_server.new_root("conformance")), f"db.t{uuid.uuid4().hex[:6]}",
                    tuple(sorted(hdfs_server.options().items())))


def test_impl_races_on_hdfs(hdfs_server):
    result = check_race("impl", lambda: open_target("impl"), _table(hdfs_server), 3, 4, "hdfs")
    assert result.status is Status.PASS, result
    assert result.name == "racing processes (hdfs)" and result.details.startswith("12 of 12")


def test_impl_survives_sigkill_on_hdfs(hdfs_server):
    result = check_sigkill("impl", lambda: open_target("impl"), _table(hdfs_server), 2, 7)
    assert result.status is Status.PASS, result

"""Crash-point enumeration on HDFS (MiniDFSCluster through WebHDFS) at the publication operations.

The ``race`` scenario (a competitor publishes the snapshot id this commit is about to take)
crashed at each operation that publishes: the temporary snapshot file's write and the
rename-if-absent that publishes it, with ``Crash`` (the operation never lands) and
``CrashAfter`` (it lands, the process dies before learning it: a rename whose response is
lost). After each crash the same checks as on memory, local disk and S3
(fault_scenarios.full_check): the table reads a state the model allows, ids are contiguous,
nothing reachable is missing, the orphans are what the crashed run wrote, and recovery through
filter_committed completes every commit exactly once. The other operations of a commit are the
same on every store and are enumerated on memory and local disk.
"""

from __future__ import annotations

import pytest
from fault_scenarios import SCENARIOS, full_check, record_summary

from fault_injection import Crash, CrashAfter, enumerate_crash_points, object_store_storage
from impl.fs.webhdfs import HdfsWebFileSystem


def _publishing(record) -> bool:
    return record.kind == "rename_if_absent" or (record.kind == "pipe_file" and "/snapshot/.snapshot-" in record.path)


# CrashAfter at an operation leaves the storage Crash at the next one leaves (the rename landed,
# its answer lost), so CI runs Crash only, as the S3 enumeration does; -m large runs both
@pytest.mark.parametrize("mode", ["crash", pytest.param("crash_after", marks=pytest.mark.large)])
def test_crash_at_publication_on_hdfs(hdfs_server, mode):
    scn = SCENARIOS["race"]
    storage = object_store_storage(lambda: HdfsWebFileSystem("127.0.0.1", hdfs_server.http_port, user="paimon",
                                                                   timeouts_seconds=(5.0, 60.0)), "")
    fault = Crash if mode == "crash" else CrashAfter
    tried = renames = 0
    for outcome in enumerate_crash_points(lambda fs, root: scn.run(fs, root), storage, setup=scn.setup,
                                          fault_at=lambda r: fault(r.op) if _publishing(r) else None):
        assert outcome.crashed, outcome.describe()
        full_check(outcome, scn)
        renames += outcome.reference.kind == "rename_if_absent"
        tried += 1
    assert renames >= 2  # the competitor's rename and ours, at least
    assert tried >= 4
    record_summary("crash_at_publication_on_hdfs", "race", f"{fault.__name__} at every publication op, HDFS", tried)

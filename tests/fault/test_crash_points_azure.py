"""Crash-point enumeration on Azure Blob (Azurite): the racing-commit scenario crashed at every
operation that changes storage, with publication by a create sent with ``If-None-Match: *``.

The same checks as on S3 (tests/fault/test_crash_points_s3.py, fault_scenarios.full_check): after
each crash the table reads a state the model allows, snapshot ids are contiguous, nothing reachable
is missing, the orphans are exactly what the crashed run wrote, and recovery completes every commit
exactly once.

In CI, as on S3: ``Crash`` at every operation that changes storage (``at_state_changes``);
``-m large`` adds ``CrashAfter`` (the create lands, its answer is lost), which on an object store
leaves the storage ``Crash`` at the next state change leaves.

What it costs: each crash point was some 365 HTTP requests to Azurite at ~15 ms each (half the
Azure SDK's Python, half Azurite's node, on the same two cores), most of them the checks re-reading
the same table, and the removal of each run's blobs one by one. So every run gets a fresh container
of the one session Azurite through one client (removed with one request), the history goes up in
adlfs's concurrent batches, Azurite keeps blobs in memory, and the checks and the recovery read
through fault_injection.listed_reads (one listing, then bytes already held when the listed MD5
matches: what a GET returns, so no check changes): about 135 requests a crash point, the
enumeration's CPU 133 s -> 75 s. Wall time, interleaved in one session at load 11-13 on the
2-core machine: 161 s before, 87 s and 105 s after (it follows the load: 175 s at load 12-16).
"""

from __future__ import annotations

import posixpath

import pytest
from fault_scenarios import SCENARIOS, full_check, record_summary, table_path

from fault_injection import Crash, CrashAfter, at_state_changes, container_storage, enumerate_crash_points
from impl.fs.azure import AzureConfig


def concurrent_setup(scn):
    """The scenario's setup (the history's files copied in), uploaded by adlfs in concurrent
    batches rather than one PUT after another: the same blobs, in a fraction of the wall time."""

    def setup(fs, root: str) -> None:
        fs.inner.pipe({posixpath.join(table_path(root), rel): data for rel, data in scn.history_files().items()})

    return setup


@pytest.mark.parametrize("mode", ["crash", pytest.param("crash_after", marks=pytest.mark.large)])
def test_crash_at_every_state_change_on_azure(azure_server, mode):
    scn = SCENARIOS["race"]
    storage = container_storage(AzureConfig.from_options(azure_server.options()).filesystem())
    fault = Crash if mode == "crash" else CrashAfter
    tried = 0
    for outcome in enumerate_crash_points(lambda fs, root: scn.run(fs, root), storage, setup=concurrent_setup(scn),
                                          fault_at=at_state_changes(lambda record: fault(record.op))):
        assert outcome.crashed, outcome.describe()
        full_check(outcome, scn)
        tried += 1
    assert tried > 10
    record_summary("crash_at_every_op_on_azure", "race", f"{fault.__name__} at every state change, Azurite", tried)

"""Crash-point enumeration on Azure Blob (Azurite): the racing-commit scenario crashed at every
operation that changes storage, with publication by a create sent with ``If-None-Match: *``.

The same checks as on S3 (tests/fault/test_crash_points_s3.py, fault_scenarios.full_check): after
each crash the table reads a state the model allows, snapshot ids are contiguous, nothing reachable
is missing, the orphans are exactly what the crashed run wrote, and recovery completes every commit
exactly once. ``-m large`` adds ``CrashAfter`` (the create lands, its answer is lost).

The whole module is ``large`` (CI skips it): its 25 crash points took 560 s on the 2-core machine
at load 30 (each point opens a new adlfs client and replays the scenario over HTTP). The Azure
publication path is the S3 one (object_store.conditional_create) and CI crashes it on S3 and, on
Azure, kills it (tests/azure/test_azure_concurrency.py) and holds it (test_azure_conformance.py).
"""

from __future__ import annotations

import pytest
from fault_scenarios import SCENARIOS, full_check, record_summary

from fault_injection import Crash, CrashAfter, at_state_changes, enumerate_crash_points, object_store_storage
from impl.fs.azure import AzureConfig

pytestmark = pytest.mark.large


@pytest.mark.parametrize("mode", ["crash", "crash_after"])
def test_crash_at_every_state_change_on_azure(azure_server, azure_container, mode):
    scn = SCENARIOS["race"]
    config = AzureConfig.from_options(azure_server.options())
    storage = object_store_storage(config.filesystem, azure_container)
    fault = Crash if mode == "crash" else CrashAfter
    tried = 0
    for outcome in enumerate_crash_points(lambda fs, root: scn.run(fs, root), storage, setup=scn.setup,
                                          fault_at=at_state_changes(lambda record: fault(record.op))):
        assert outcome.crashed, outcome.describe()
        full_check(outcome, scn)
        tried += 1
    assert tried > 10
    record_summary("crash_at_every_op_on_azure", "race", f"{fault.__name__} at every state change, Azurite", tried)

"""Crash-point enumeration on Google Cloud Storage (fake-gcs-server): the racing-commit scenario
crashed at every operation that changes storage, with publication by an upload sent with
``ifGenerationMatch=0``.

The same checks as on S3 and Azure (fault_scenarios.full_check): after each crash the table reads a
state the model allows, snapshot ids are contiguous, nothing reachable is missing, the orphans are
exactly what the crashed run wrote, and recovery completes every commit exactly once.

CI runs ``Crash`` (the operation never lands) at the publication operations: every state change
under a table's ``snapshot/`` directory (the probe, each ``snapshot-N`` upload, the hints): 11 points, 29 s at load 12.
``-m large`` crashes at every state change (25 points, 59 s at load 12.5 on the 2-core machine) and
adds ``CrashAfter`` (the upload lands, its answer is lost), which on an object store leaves the
storage ``Crash`` at the next state change leaves (see tests/fault/test_crash_points_s3.py).
"""

from __future__ import annotations

import pytest
from fault_scenarios import SCENARIOS, full_check, record_summary

from fault_injection import Crash, CrashAfter, at_state_changes, enumerate_crash_points, object_store_storage
from impl.fs.gcs import GcsConfig


@pytest.mark.parametrize("mode", ["crash", pytest.param("crash_after", marks=pytest.mark.large)])
@pytest.mark.parametrize("points", ["publication", pytest.param("state_changes", marks=pytest.mark.large)])
def test_crash_at_every_state_change_on_gcs(gcs_server, gcs_bucket, mode, points):
    scn = SCENARIOS["race"]
    config = GcsConfig.from_options(gcs_server.options())
    storage = object_store_storage(config.filesystem, gcs_bucket)
    fault = Crash if mode == "crash" else CrashAfter

    def fault_at(record):
        if points == "publication" and "/snapshot/" not in record.path:
            return None
        return fault(record.op)

    tried = 0
    for outcome in enumerate_crash_points(lambda fs, root: scn.run(fs, root), storage, setup=scn.setup,
                                          fault_at=at_state_changes(fault_at)):
        assert outcome.crashed, outcome.describe()
        full_check(outcome, scn)
        tried += 1
    assert tried > (3 if points == "publication" else 10)
    record_summary("crash_at_every_op_on_gcs", "race",
                   f"{fault.__name__} at every {'publication op' if points == 'publication' else 'state change'}, "
                   "fake-gcs-server", tried)

"""The conformance suite's process checks against impl on HDFS, Azure Blob and Google Cloud Storage
(``python -m fault_injection.conformance --store hdfs|azure|gcs`` runs them all): racing OS processes
and SIGKILL mid-commit, judged by the executable model as on local disk and S3; on Azure and GCS also
a publication held on the wire while another writer commits (refused with 409 on Azure, 412 on GCS)."""

from __future__ import annotations

import uuid

import pytest

from fault_injection.conformance.adapter import TableRef
from fault_injection.conformance.checks.held import check_held_publication
from fault_injection.conformance.checks.processes import check_race, check_sigkill
from fault_injection.conformance.checks.result import Status
from fault_injection.conformance.targets import open_target

CONFORMANCE_STORES = ["azure", "hdfs", "gcs"]


def _table(store) -> TableRef:
    return TableRef(store.warehouse, f"db.t{uuid.uuid4().hex[:6]}", tuple(sorted(store.options().items())))


@pytest.mark.parametrize("process_store", CONFORMANCE_STORES, indirect=True)
def test_impl_races(process_store):
    result = check_race("impl", lambda: open_target("impl"), _table(process_store), 3, 4, process_store.name)
    assert result.status is Status.PASS, result
    assert result.name == f"racing processes ({process_store.name})" and result.details.startswith("12 of 12")


@pytest.mark.parametrize("process_store", CONFORMANCE_STORES, indirect=True)
def test_impl_survives_sigkill_mid_commit(process_store):
    result = check_sigkill("impl", lambda: open_target("impl"), _table(process_store), 2, 7)
    assert result.status is Status.PASS, result


@pytest.mark.parametrize("process_store", ["azure", "gcs"], indirect=True)
def test_impl_passes_the_held_publication_check(process_store):
    """Writer A's create of snapshot-2 held at the proxy until writer B committed: the create finds
    snapshot 2 taken (409 on Azure, 412 on GCS) and A retries as snapshot 3, both commits once."""
    result = check_held_publication(lambda: open_target("impl"), _table(process_store))
    assert result.status is Status.PASS, result
    assert result.name == f"held publication ({process_store.name})" and "writer-a: ok, writer-b: ok" in result.details

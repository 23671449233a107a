"""The conformance suite's object-store checks against impl with tables on Google Cloud Storage
(fake-gcs-server): racing processes, a publication held on the wire while another writer commits,
and SIGKILL mid-commit (``python -m fault_injection.conformance --store gcs`` runs them all)."""

from __future__ import annotations

import uuid

from fault_injection.conformance.adapter import TableRef
from fault_injection.conformance.checks.held import check_held_publication
from fault_injection.conformance.checks.processes import check_race, check_sigkill
from fault_injection.conformance.checks.result import Status
from fault_injection.conformance.targets import open_target


def _table(gcs_server) -> TableRef:
    return TableRef(gcs_server.url(gcs_server.new_bucket()), f"db.t{uuid.uuid4().hex[:6]}",
                    tuple(sorted(gcs_server.options().items())))


def test_impl_races_on_gcs(gcs_server):
    result = check_race("impl", lambda: open_target("impl"), _table(gcs_server), 3, 4, "gcs")
    assert result.status is Status.PASS, result
    assert result.name == "racing processes (gcs)" and result.details.startswith("12 of 12")


def test_impl_passes_the_held_publication_check_on_gcs(gcs_server):
    """Writer A's upload of snapshot-2 held at the proxy until writer B committed: the upload finds
    snapshot 2 taken (412) and A retries as snapshot 3, both commits once."""
    result = check_held_publication(lambda: open_target("impl"), _table(gcs_server))
    assert result.status is Status.PASS, result
    assert result.name == "held publication (gcs)" and "writer-a: ok, writer-b: ok" in result.details


def test_impl_survives_sigkill_mid_commit_on_gcs(gcs_server):
    result = check_sigkill("impl", lambda: open_target("impl"), _table(gcs_server), 2, 7)
    assert result.status is Status.PASS, result

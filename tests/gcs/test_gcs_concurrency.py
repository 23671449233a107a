"""Racing OS processes and SIGKILLs on one table on Google Cloud Storage (fake-gcs-server), no lock
service: the same checks as on S3 and Azure (tests/_support/commit_races.py), publication by uploads
sent with ``ifGenerationMatch=0``."""

from __future__ import annotations

import pytest
from commit_races import race_processes, sigkill_rounds


@pytest.mark.parametrize("processes,commits", [(4, 10)])
def test_racing_processes_lose_no_acknowledged_commit(gcs_server, gcs_bucket, processes, commits):
    race_processes(gcs_server.url(gcs_bucket), gcs_server.options(), processes, commits)


def test_sigkill_mid_commit_leaves_table_intact_and_orphans_removable(gcs_server, gcs_bucket):
    # four rounds, as on Azure: each round starts a Python process
    sigkill_rounds(gcs_server.url(gcs_bucket), gcs_server.options(), rounds=4)

"""Racing OS processes and SIGKILLs on one table on Azure Blob (Azurite), no lock service: the same
checks as on S3 (tests/_support/commit_races.py), publication by ``If-None-Match: *`` creates."""

from __future__ import annotations

import pytest
from commit_races import race_processes, sigkill_rounds


@pytest.mark.parametrize("processes,commits", [(4, 10)])
def test_racing_processes_lose_no_acknowledged_commit(azure_server, azure_container, processes, commits):
    race_processes(azure_server.url(azure_container), azure_server.options(), processes, commits)


def test_sigkill_mid_commit_leaves_table_intact_and_orphans_removable(azure_server, azure_container):
    # four rounds, not S3's six: each round starts a Python process (about 20 s on a loaded CI machine)
    sigkill_rounds(azure_server.url(azure_container), azure_server.options(), rounds=4)

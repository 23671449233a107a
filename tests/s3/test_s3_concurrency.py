"""Racing OS processes and SIGKILLs on one table on the S3 server (no lock service); the checks
themselves live in tests/_support/commit_races.py, shared with the other stores' suites.
"""

from __future__ import annotations

import pytest
from commit_races import race_processes, sigkill_rounds


@pytest.mark.parametrize("processes,commits", [(4, 10)])
def test_racing_processes_lose_no_acknowledged_commit(s3_server, s3_bucket, processes, commits):
    race_processes(f"s3://{s3_bucket}/wh", s3_server.options(), processes, commits)


def test_sigkill_mid_commit_leaves_table_intact_and_orphans_removable(s3_server, s3_bucket):
    sigkill_rounds(f"s3://{s3_bucket}/wh", s3_server.options())

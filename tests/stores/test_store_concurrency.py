"""Racing OS processes and SIGKILLs on one table on every store (tests/_support/stores.py:
PROCESS_STORES), no lock service: the checks live in tests/_support/commit_races.py.

- Racing: 4 processes x 10 commits into one primary-key table; every acknowledged commit is in
  exactly one snapshot, ids contiguous from 1, the table holds exactly the acknowledged rows.
- SIGKILL: a process commits in a loop and is killed at random moments; after each kill the table
  is intact and holds every acknowledged commit (plus at most the one in flight), and the files the
  killed commit left behind are found as orphans and removed without changing a read.

Publication differs by store (a conditional PUT on S3, an ``If-None-Match: *`` create on Azure, a
rename-if-absent on HDFS through WebHDFS, an upload with ``ifGenerationMatch=0`` on GCS); the checks
do not.
"""

from __future__ import annotations

import pytest
from commit_races import race_processes, sigkill_rounds


@pytest.mark.parametrize("processes,commits", [(4, 10)])
def test_racing_processes_lose_no_acknowledged_commit(process_store, processes, commits):
    race_processes(process_store.warehouse, process_store.options(), processes, commits,
                   result_timeout_seconds=process_store.kind.race_timeout_seconds)


def test_sigkill_mid_commit_leaves_table_intact_and_orphans_removable(process_store):
    sigkill_rounds(process_store.warehouse, process_store.options(), rounds=process_store.kind.sigkill_rounds)

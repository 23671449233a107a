"""Racing OS processes and SIGKILLs on one table on HDFS (MiniDFSCluster, WebHDFS), no lock:
the S3 suite's checks (tests/_support/commit_races.py, whose helpers run here unchanged) with
publication by rename-if-absent instead of a conditional PUT.

- Racing: 4 processes x 10 commits into one primary-key table; every acknowledged commit is
  in exactly one snapshot, ids contiguous from 1, the table holds exactly the acknowledged rows.
- SIGKILL: a process commits in a loop and is killed at random moments; after each kill the
  table is intact and holds every acknowledged commit (plus at most the one in flight), and the
  files the killed commit left behind are found as orphans and removed without changing a read.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

# the killed writer imports the helpers from this directory (sys.argv[3])
SUPPORT_DIR = str(Path(__file__).resolve().parents[1] / "_support")

from commit_races import (  # noqa: E402 - the object-store suites' helpers, store-agnostic
    _check_table,
    _committer,
    _create_table,
    _open_table,
    sigkill_rounds,
)


@pytest.mark.parametrize("processes,commits", [(4, 10)])
def test_racing_processes_lose_no_acknowledged_commit(hdfs_server, processes, commits):
    warehouse = hdfs_server.webhdfs_url(hdfs_server.new_root("race"))
    options = hdfs_server.options()
    _create_table(warehouse, options, **{"commit.max-retries": "100", "commit.min-retry-wait": "5 ms",
                                         "commit.max-retry-wait": "200 ms"})
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_committer, args=(warehouse, options, w, commits, start, results))
             for w in range(processes)]
    for p in procs:
        p.start()
    start.set()
    acked: dict[int, list[int]] = {}
    errors = []
    while len(acked) < processes:
        writer, what, payload = results.get(timeout=900)
        if what == "acked":
            acked[writer] = payload
        else:
            errors.append((writer, payload))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert not errors, errors
    assert sum(len(v) for v in acked.values()) == processes * commits
    table = _open_table(warehouse, options)
    _check_table(table, acked)
    assert table.snapshot_manager().latest_snapshot_id() == processes * commits


def test_sigkill_mid_commit_leaves_table_intact(hdfs_server):
    sigkill_rounds(hdfs_server.webhdfs_url(hdfs_server.new_root("kill")), hdfs_server.options(), rounds=3)

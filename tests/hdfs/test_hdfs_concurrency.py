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

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from impl.fs.paths import SNAPSHOT_PREFIX

# the killed writer imports the helpers from this directory (sys.argv[3])
SUPPORT_DIR = str(Path(__file__).resolve().parents[1] / "_support")

from commit_races import (  # noqa: E402 - the object-store suites' helpers, store-agnostic
    _KILLED_WRITER,
    _check_table,
    _committer,
    _create_table,
    _open_table,
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
    warehouse = hdfs_server.webhdfs_url(hdfs_server.new_root("kill"))
    options = hdfs_server.options()
    _create_table(warehouse, options)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), *sys.path])}
    rng = random.Random(13)
    acked: list[int] = []
    orphans_removed = 0
    for _round in range(3):
        start_seq = (max(acked) + 1) if acked else 0
        proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, warehouse, json.dumps(options), SUPPORT_DIR,
                                 str(start_seq)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stdout is not None
        first = proc.stdout.readline()  # it is committing: killed after its first acknowledgement
        time.sleep(rng.uniform(0.05, 3.0))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, err[-2000:]
        acked.extend(int(line.split()[1]) for line in (first + out).splitlines() if line.startswith("ACK "))
        table = _open_table(warehouse, options)
        sm = table.snapshot_manager()
        ids = sm.snapshot_ids()
        assert ids == list(range(1, len(ids) + 1))
        published = {sm.snapshot(i).commit_identifier for i in ids}
        assert set(acked) <= published  # every acknowledged commit is there
        unacked = published - set(acked)
        assert len(unacked) <= 1, unacked  # at most the one in flight landed unacknowledged
        acked.extend(sorted(unacked))
        rb = table.new_read_builder()
        rows = rb.new_read().to_arrow(rb.new_scan().plan().splits())  # every referenced file reads
        assert sorted(set(rows.column("seq").to_pylist())) == sorted(set(acked))
        # what the killed commit left behind is unreferenced, and removing it changes no read
        removed = table.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000)
        assert all(SNAPSHOT_PREFIX not in p.rsplit("/", 1)[-1] for p in removed)
        orphans_removed += len(removed)
        again = rb.new_read().to_arrow(table.new_read_builder().new_scan().plan().splits())
        assert again.num_rows == rows.num_rows
    assert len(acked) >= 3
    assert orphans_removed > 0  # the kills hit commits in flight; orphan removal saw the files' ages

"""Racing OS processes and SIGKILLs on one table on an object store (no lock service): the
checks every store runs (tests/stores/test_store_concurrency.py, over tests/_support/stores.py).

- Racing: K processes x M commits into one primary-key table, each commit with its own
  (commit user, identifier), all publishing by conditional create. Every commit a process saw
  acknowledged is in exactly one snapshot, ids are contiguous from 1, and the table holds
  exactly the acknowledged rows (pypaimon 2.1.0 lost 2-9 of 40 on S3, per issue 11).
- SIGKILL: a process commits in a loop and is killed at a random moment, again and again.
  After each kill the table is intact (snapshots contiguous, every referenced file present and
  readable, rows = the acknowledged commits plus possibly the one in flight), and the files
  the killed commit left behind are found as orphans and removed without changing any read.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import time

import pyarrow as pa

import impl
from fault_injection.conformance.checks.processes import FIRST_ACK_TIMEOUT_S, first_line
from impl.fs.paths import SNAPSHOT_PREFIX

SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.int64()), ("seq", pa.int64())])
ROWS_PER_COMMIT = 3


def _open_table(warehouse: str, options: dict):
    cat = impl.Catalog(warehouse, options=options)
    return cat.get_table("db.t")


def _create_table(warehouse: str, options: dict, **table_options):
    cat = impl.Catalog(warehouse, options=options)
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"],
                            options={"bucket": "2", "write-only": "true", **table_options})


def _rows(writer: int, seq: int) -> pa.Table:
    base = writer * 1_000_000 + seq * ROWS_PER_COMMIT
    return pa.table({"id": list(range(base, base + ROWS_PER_COMMIT)), "writer": [writer] * ROWS_PER_COMMIT,
                     "seq": [seq] * ROWS_PER_COMMIT}, schema=SCHEMA)


def _committer(warehouse: str, options: dict, writer: int, commits: int, start, results) -> None:
    table = _open_table(warehouse, options)
    builder = table.new_stream_write_builder().with_commit_user(f"writer-{writer}")
    write, commit = builder.new_write(), builder.new_commit()
    start.wait()
    acked = []
    for seq in range(commits):
        write.write_arrow(_rows(writer, seq))
        try:
            commit.commit(write.prepare_commit(seq), seq)
            acked.append(seq)
        except Exception as e:  # a failed commit is reported, never counted as acknowledged
            results.put((writer, "error", f"{type(e).__name__}: {e}"))
    results.put((writer, "acked", acked))


def _check_table(table, acked: dict[int, list[int]]) -> None:
    sm = table.snapshot_manager()
    ids = sm.snapshot_ids()
    assert ids == list(range(1, len(ids) + 1)), f"snapshot ids not contiguous from 1: {ids}"
    seen: dict[tuple[str, int], list[int]] = {}
    for sid in ids:
        snap = sm.snapshot(sid)
        seen.setdefault((snap.commit_user, snap.commit_identifier), []).append(sid)
    dupes = {k: v for k, v in seen.items() if len(v) > 1}
    assert not dupes, f"commits published twice: {dupes}"
    for writer, seqs in acked.items():
        for seq in seqs:
            assert (f"writer-{writer}", seq) in seen, f"acknowledged commit writer-{writer}/{seq} was lost"
    rb = table.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    want = {(w, s) for w, seqs in acked.items() for s in seqs}
    got_pairs = {(w, s) for w, s in zip(got.column("writer").to_pylist(), got.column("seq").to_pylist(), strict=True)}
    assert got_pairs == want
    assert got.num_rows == len(want) * ROWS_PER_COMMIT


def race_processes(warehouse: str, options: dict, processes: int, commits: int, *,
                   result_timeout_seconds: float = 600) -> None:
    """``processes`` OS processes x ``commits`` commits into one table at ``warehouse``: every
    acknowledged commit is published exactly once (asserts). ``result_timeout_seconds``: the
    longest wait for a process's answer (HDFS's NameNode is slower under load)."""
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
        writer, what, payload = results.get(timeout=result_timeout_seconds)
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
    # one snapshot per acknowledged commit, found from the hints as a committer finds it
    assert table.snapshot_manager().latest_snapshot_id() == processes * commits


# ------------------------------------------------------------------------------ SIGKILL

_KILLED_WRITER = r"""
import json, sys
import pyarrow as pa
sys.path.insert(0, sys.argv[3])
from commit_races import _open_table, _rows
warehouse, options = sys.argv[1], json.loads(sys.argv[2])
table = _open_table(warehouse, options)
builder = table.new_stream_write_builder().with_commit_user("killed")
write, commit = builder.new_write(), builder.new_commit()
start = int(sys.argv[4])
# resume exactly once: what a previous incarnation left unacknowledged is recovered first
for seq in range(start, start + 1000):
    write.write_arrow(_rows(7, seq))
    commit.commit(write.prepare_commit(seq), seq)
    print(f"ACK {seq}", flush=True)
"""


def sigkill_rounds(warehouse: str, options: dict, rounds: int = 6) -> None:
    """``rounds`` rounds of a committing process SIGKILLed at a random moment (asserts after each)."""
    table = _create_table(warehouse, options)
    here = os.path.dirname(os.path.abspath(__file__))  # tests/_support, for the killed writer's import
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), *sys.path])}
    rng = random.Random(11)
    acked: list[int] = []
    kills = orphans_removed = 0
    for _round in range(rounds):
        start_seq = (max(acked) + 1) if acked else 0
        proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, warehouse, json.dumps(options), here,
                                 str(start_seq)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # kill only once it is committing: after its first acknowledgement (or a bound)
        first = first_line(proc, FIRST_ACK_TIMEOUT_S)
        time.sleep(rng.uniform(0.05, 1.5))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, err[-2000:]
        kills += 1
        new_acks = [int(line.split()[1]) for line in (first + out).splitlines() if line.startswith("ACK ")]
        acked.extend(new_acks)
        table = _open_table(warehouse, options)
        sm = table.snapshot_manager()
        ids = sm.snapshot_ids()
        assert ids == list(range(1, len(ids) + 1))
        published = {sm.snapshot(i).commit_identifier for i in ids}
        assert set(acked) <= published  # every acknowledged commit is there
        # at most the one commit in flight landed without its acknowledgement reaching us
        unacked = published - set(acked)
        assert len(unacked) <= 1, unacked
        acked.extend(sorted(unacked))  # it is committed: the next incarnation continues after it
        # every file a snapshot references exists and reads
        rb = table.new_read_builder()
        rows = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        assert sorted(set(rows.column("seq").to_pylist())) == sorted(set(acked))
        # what the killed commit left behind is unreferenced, and removing it changes no read
        removed = table.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000)
        # never a published snapshot (a killed commit's temporary '.snapshot-N.<uuid>.tmp' is garbage)
        assert not [p for p in removed if re.fullmatch(SNAPSHOT_PREFIX + r"\d+", p.rsplit("/", 1)[-1])]
        orphans_removed += len(removed)
        again = rb.new_read().to_arrow(table.new_read_builder().new_scan().plan().splits())
        assert again.num_rows == rows.num_rows
    assert kills == rounds and len(acked) >= rounds
    # the kills did hit commits in flight: their written files were left behind and removed
    assert orphans_removed > 0

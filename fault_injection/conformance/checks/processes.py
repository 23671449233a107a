"""Racing OS processes and SIGKILL mid-commit, each process with its own target instance."""

from __future__ import annotations

import json
import os
import random
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Sequence

from fault_injection.conformance.adapter import Outcome, TableRef, TableSpec, Target
from fault_injection.conformance.checks.result import (
    CheckResult,
    Classification,
    Status,
    exactly_once_problems,
    rows_difference,
)
from fault_injection.conformance.observe import observe
from fault_injection.conformance.runner import rows_for

SPEC = TableSpec(primary_key=False, partitioned=True, bucket=-1)
BASE = 100_000  # each process writes ids base*k + identifier: every row is distinct


def _spawn(target_name: str, table: TableRef, user: str, commits: int, base: int,
           barrier: tuple[str, int] | None = None, compact_every: int = 0) -> subprocess.Popen:
    cfg = {"target": target_name, "warehouse": table.warehouse, "identifier": table.identifier,
           "storage_options": [list(kv) for kv in table.storage_options], "user": user, "commits": commits,
           "base": base, "compact_every": compact_every}
    if barrier is not None:
        cfg["barrier_dir"], cfg["barrier_count"] = barrier
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # its own process group: a kill takes the whole committer, including a target's helper
    # process (pypaimon's server), which would otherwise finish the commit in flight after the kill
    return subprocess.Popen([sys.executable, "-m", "fault_injection.conformance.runner", json.dumps(cfg)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)


def final_problems(target: Target, table: TableRef, acked: list[tuple[str, int]], rows: list[dict]) -> list[str]:
    """After the processes: the storage audit, every acknowledged commit exactly once, and the rows
    the target reads equal to the acknowledged rows."""
    obs = observe(table)
    problems = list(obs.problems) + exactly_once_problems(obs, acked)
    diff = rows_difference(rows, target.read_rows(table))
    if diff:
        problems.append(f"rows read vs acknowledged rows: {diff}")
    return problems


def _acks(out: str) -> tuple[list[int], list[dict]]:
    msgs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [m["ack"] for m in msgs if "ack" in m], [m for m in msgs if "fail" in m]


def check_race(target_name: str, open_target: Callable[[], Target], table: TableRef, processes: int,
               commits: int, store: str, racer_targets: Sequence[str] = ()) -> CheckResult:
    """``processes`` OS processes commit ``commits`` times each into one table. With
    ``racer_targets`` the racers are mixed writers: process k runs racer_targets[k % len]
    (e.g. impl and Paimon Java committing into one table); the final check is the same."""
    racers = [racer_targets[k % len(racer_targets)] if racer_targets else target_name for k in range(processes)]
    name = f"racing processes ({store}{', ' + ' + '.join(sorted(set(racers))) if racer_targets else ''})"
    repro = f"{processes} OS processes ({', '.join(racers)}) x {commits} commits each into one append table " \
            f"{SPEC} on {store}"
    target = open_target()
    try:
        target.create_table(table, SPEC)
        # Mixed writers start together (runner._await_barrier): a JVM starts far slower than impl.
        barrier = (tempfile.mkdtemp(prefix="race-barrier-"), processes) if racer_targets else None
        procs = [_spawn(racers[k], table, f"racer-{k}", commits, BASE * (k + 1), barrier) for k in range(processes)]
        acked: list[tuple[str, int]] = []
        rows: list[dict] = []
        failures = []
        for k, p in enumerate(procs):
            out, err = p.communicate(timeout=600)
            ids, fails = _acks(out)
            acked += [(f"racer-{k}", i) for i in ids]
            rows += [r for i in ids for r in rows_for(BASE * (k + 1), i)]
            failures += fails
            if p.returncode != 0:
                failures.append({"process": k, "exit": p.returncode, "stderr": err[-500:]})
        problems = final_problems(target, table, acked, rows)
    finally:
        target.close()
    details = f"{len(acked)} of {processes * commits} commits acknowledged"
    if failures:
        details += f"; not acknowledged: {failures[:5]}"
    if problems:
        return CheckResult(name, Status.DIVERGENCE, f"{details}; " + "; ".join(problems[:20]), repro,
                           "every acknowledged commit in exactly one snapshot; rows = acknowledged rows",
                           Classification.TARGET_DEFECT,
                           "Paimon docs, Concurrency Control: snapshot commits are atomic and optimistic "
                           "(a commit that loses the race retries); specs/invariants.md")
    return CheckResult(name, Status.PASS, details, repro)


_LOST_COMMIT = re.compile(r"acknowledged commit \((racer-(\d+)), (\d+)\) appears in 0 snapshots")


def replaced_by_rename(details: str, losable: Callable[[str], bool]) -> tuple[list[tuple[str, int]], list[str]]:
    """A local-disk race's problems (``check_race`` details), split into the acknowledged commits
    a peer's replacing publication lost and the problems nothing explains.

    Paimon Java's ``LocalFileIO`` and pypaimon-rust's OpenDAL fs service publish a snapshot by an
    existence check, then rename(2), which replaces: two processes can both pass the check and the
    later rename replaces the earlier snapshot. A lost commit is explained only when its racer is
    ``losable`` (one a replacing writer can lose: impl publishes with ``os.link``, so an impl
    racer can lose a commit only to a peer racer) and the rows read miss exactly the lost commits'
    rows, with nothing extra.
    """
    lost: list[tuple[str, int]] = []
    rest: list[str] = []
    for problem in details.split("; ")[1:]:
        m = _LOST_COMMIT.fullmatch(problem)
        if m and losable(m[1]):
            lost.append((m[1], int(m[3])))
        else:
            rest.append(problem)
    if lost:
        lost_rows = [r for user, ident in lost for r in rows_for(BASE * (int(user.split("-")[1]) + 1), ident)]
        expected = f"rows read vs acknowledged rows: {rows_difference(lost_rows, [])}"
        rest = [p for p in rest if p != expected] if expected in rest else rest + [f"rows read do not miss exactly the lost commits' rows: {expected}"]
    return lost, rest


FIRST_ACK_TIMEOUT_S = 120.0


def first_line(p: subprocess.Popen, timeout_s: float) -> str:
    """What the child printed of its first output line within ``timeout_s`` ('' if nothing).

    Read from the pipe's descriptor a byte at a time, never through ``p.stdout``'s buffer:
    ``communicate()`` reads the descriptor itself, so the lines a buffered ``readline()`` had
    taken from the pipe beyond the first (a child that printed several before the parent woke,
    as on a loaded machine) were lost, and the acknowledged commits they named with them.

        first = first_line(p, 60.0)
        out, _ = p.communicate()  # every line after ``first``
    """
    assert p.stdout is not None
    fd = p.stdout.fileno()
    deadline = time.monotonic() + timeout_s
    line = bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                break
            byte = os.read(fd, 1)
            if not byte:
                break
            line += byte
    return line.decode()


def check_sigkill(target_name: str, open_target: Callable[[], Target], table: TableRef, rounds: int,
                  seed: int) -> CheckResult:
    name = "SIGKILL mid-commit"
    rng = random.Random(seed)
    delays = []
    target = open_target()
    acked: list[tuple[str, int]] = []
    rows: list[dict] = []
    problems: list[str] = []
    try:
        target.create_table(table, SPEC)
        for r in range(rounds):
            user, base = f"killed-{r}", BASE * (r + 1)
            p = _spawn(target_name, table, user, 1000, base)
            # Kill at a random moment of the commit loop, timed from its first acknowledged commit:
            # start-up (imports, a peer's server, an S3 client) takes from under 1 s to several.
            first = first_line(p, FIRST_ACK_TIMEOUT_S)
            delay = rng.uniform(0.0, 1.5)
            delays.append(round(delay, 2))
            time.sleep(delay)
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            ids, _ = _acks(first + out)
            acked += [(user, i) for i in ids]
            rows += [row for i in ids for row in rows_for(base, i)]
            # the in-flight commit (the one after the last ack) may or may not have landed, once
            inflight = (ids[-1] + 1) if ids else 1
            obs = observe(table)
            problems += [f"round {r}: {m}" for m in obs.problems]
            problems += [f"round {r}: {m}" for m in exactly_once_problems(obs, [(user, i) for i in ids])]
            landed = [s for s in obs.snapshots if s.commit_user == user and s.commit_identifier == inflight]
            if len(landed) > 1:
                problems.append(f"round {r}: in-flight commit {inflight} published {len(landed)} times")
            if landed:
                acked.append((user, inflight))
                rows += rows_for(base, inflight)
        fresh = target.prepare(table, rows_for(BASE * (rounds + 1), 1))
        res = target.commit(table, fresh, "after-kill", 1)
        if res.outcome is not Outcome.OK:
            problems.append(f"a fresh commit after the kills: {res.outcome.value} {res.error_class}: {res.message}")
        else:
            acked.append(("after-kill", 1))
            rows += rows_for(BASE * (rounds + 1), 1)
        problems += final_problems(target, table, acked, rows)
    finally:
        target.close()
    repro = (f"{rounds} rounds: a child commits in a loop into an append table {SPEC}, SIGKILL {delays} s after "
             f"its first acknowledged commit")
    details = f"{len(acked)} commits acknowledged or landed over {rounds} kills"
    if problems:
        return CheckResult(name, Status.DIVERGENCE, f"{details}; " + "; ".join(problems[:20]), repro,
                           "contiguous complete snapshots, referenced files exist, acknowledged commits once, "
                           "the in-flight one at most once, a fresh commit succeeds",
                           Classification.TARGET_DEFECT, "specs/invariants.md")
    return CheckResult(name, Status.PASS, details, repro)


# write-only: the writers never compact on their own (on either side), so write commits are pure
# APPENDs and every compaction is one of the racers' explicit full compactions.
PK_SPEC = TableSpec(primary_key=True, partitioned=True, bucket=2, options=(("write-only", "true"),))


def check_mixed_compacting_race(racer_targets: Sequence[str], open_target: Callable[[], Target], table: TableRef,
                                processes: int, commits: int, compact_every: int) -> CheckResult:
    """Mixed writers on a primary-key table (2 buckets), each racer also compacting fully every
    ``compact_every`` commits, so compactions race with each other and with appends.

    What the model says (model/rules.py check_conflicts): an APPEND of brand-new files never
    conflicts, so every write commit is acknowledged; a COMPACT conflicts only when a file it
    deletes is already gone, which only another COMPACT (or an overwrite) does, so a refused
    compaction is explained only if another racer's compaction landed. Then the usual final
    check: audit, every acknowledged commit (writes and compactions) exactly once, rows equal the
    acknowledged rows (distinct keys, so merging keeps them all).
    """
    racers = [racer_targets[k % len(racer_targets)] for k in range(processes)]
    name = f"racing compacting processes ({' + '.join(sorted(set(racers)))})"
    repro = (f"{processes} OS processes ({', '.join(racers)}) x {commits} commits, a full compaction after every "
             f"{compact_every}, into one primary-key table {PK_SPEC}")
    target = open_target()
    problems: list[str] = []
    try:
        target.create_table(table, PK_SPEC)
        barrier = (tempfile.mkdtemp(prefix="race-barrier-"), processes)
        procs = [_spawn(racers[k], table, f"racer-{k}", commits, BASE * (k + 1), barrier, compact_every)
                 for k in range(processes)]
        acked: list[tuple[str, int]] = []
        rows: list[dict] = []
        refused: list[tuple[str, dict]] = []
        compacted: list[tuple[str, int]] = []  # (racer, snapshot id its compaction reported)
        compactions = 0
        for k, p in enumerate(procs):
            out, err = p.communicate(timeout=600)
            msgs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            for m in msgs:
                if "ack" in m:
                    acked.append((f"racer-{k}", m["ack"]))
                    rows += rows_for(BASE * (k + 1), m["ack"])
                elif "fail" in m:
                    problems.append(f"racer-{k} ({racers[k]}) write commit {m['fail']} refused: "
                                    f"{m['outcome']} {m['error']}: {str(m['message'])[:200]}")
                elif "compact" in m and m["outcome"] == "ok":
                    compacted += [(f"racer-{k}", i) for i in m["snapshot_ids"]]
                    compactions += 1
                elif "compact" in m:
                    refused.append((f"racer-{k}", m))
            if p.returncode != 0:
                problems.append(f"racer-{k} ({racers[k]}) exit {p.returncode}: {err[-500:]}")
        obs = observe(table)
        # Each acknowledged compaction's snapshots exist, are COMPACT, and belong to it alone
        # (impl's compaction job commits under a user of its own, so ids are what identify it).
        sids = [sid for _, sid in compacted]
        for racer, sid in compacted:
            snap = obs.by_id(sid)
            if snap is None or snap.kind != "COMPACT":
                problems.append(f"{racer}'s acknowledged compaction reported snapshot {sid}, which is "
                                f"{'missing' if snap is None else snap.kind}")
        if len(set(sids)) != len(sids):
            problems.append(f"a snapshot id reported by two compactions: {sorted(compacted)}")
        compacting_racers = {racer for racer, _ in compacted}
        for racer, m in refused:
            if m["outcome"] != "conflict" or not (compacting_racers - {racer}):
                problems.append(f"{racer} compaction {m['compact']} refused ({m['outcome']} {m['error']}: "
                                f"{str(m['message'])[:200]}) and no other racer's compaction explains it")
        problems += final_problems(target, table, acked, rows)
    finally:
        target.close()
    details = (f"{len(acked)} of {processes * commits} write commits acknowledged; {compactions} compactions "
               f"acknowledged ({len(compacted)} COMPACT snapshots), {len(refused)} refused"
               + "".join(f"; {r} ({racers[int(r.split('-')[1])]}) compaction {m['compact']}: {m['outcome']} "
                         f"{m['error']}" for r, m in refused))
    if problems:
        return CheckResult(name, Status.DIVERGENCE, f"{details}; " + "; ".join(problems[:20]), repro,
                           "every write commit acknowledged; refusals only of compactions, each explained by "
                           "another racer's compaction; every acknowledged commit exactly once; rows = acknowledged",
                           Classification.TARGET_DEFECT, "model/rules.py check_conflicts; specs/invariants.md")
    return CheckResult(name, Status.PASS, details, repro)

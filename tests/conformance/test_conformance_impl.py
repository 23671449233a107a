"""The conformance suite against impl (0 divergences, every check ran) and proof that it can fail."""

from __future__ import annotations

import subprocess
import sys
import uuid

from fault_injection.conformance.adapter import CommitResult, Outcome, TableRef, TableSpec
from fault_injection.conformance.checks.duplicate import check_duplicates
from fault_injection.conformance.checks.held import check_held_publication
from fault_injection.conformance.checks.machine import check_machine, fresh_local_table
from fault_injection.conformance.checks.processes import check_race, first_line
from fault_injection.conformance.checks.result import Status
from fault_injection.conformance.suite import SuiteConfig, render_report, run_suite, summary_line
from fault_injection.conformance.targets import open_target
from fault_injection.conformance.targets.impl_target import ImplTarget

CI = SuiteConfig("impl", "local", examples=4, seed=7, processes=3, commits=4, kill_rounds=2)


def _assert_all_pass(results):
    assert results, "no checks ran"
    assert [r.name for r in results if r.status is not Status.PASS] == [], [r for r in results]
    assert summary_line(results).endswith(f"{len(results)} checks, 0 divergences")


def test_impl_conforms_on_local_disk():
    results = run_suite(CI)
    _assert_all_pass(results)
    names = {r.name for r in results}
    assert {"commit state machine (primary-key table)", "commit state machine (append table)",
            "duplicate commit (plain)", "duplicate commit (filter_committed)", "racing processes (local)",
            "SIGKILL mid-commit"} <= names
    report = render_report(CI, results)
    assert report.rstrip().splitlines()[-1] == f"conformance: {len(results)} checks, 0 divergences"


def test_first_line_leaves_every_later_line_to_communicate():
    """The SIGKILL checks read a child's first acknowledgement, then ``communicate()`` for the
    rest. A child that printed several lines before the parent read (a loaded machine): a
    buffered ``readline()`` took them all from the pipe and ``communicate()``, which reads the
    descriptor, never saw the later ones (acknowledged commits lost: the flaky SIGKILL check)."""
    p = subprocess.Popen([sys.executable, "-c", "for i in range(5): print(i, flush=True)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.wait(timeout=60)  # all five lines are in the pipe before the parent reads any
    first = first_line(p, 60.0)
    out, _ = p.communicate(timeout=60)
    assert first == "0\n"
    assert (first + out).split() == ["0", "1", "2", "3", "4"]
    silent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert first_line(silent, 0.2) == ""  # bounded: nothing printed within the timeout
    finally:
        silent.kill()
        silent.communicate()


def test_impl_races_on_s3(s3_server):
    bucket = s3_server.new_bucket()
    table = TableRef(f"s3://{bucket}/wh", f"db.t{uuid.uuid4().hex[:6]}", tuple(sorted(s3_server.options().items())))
    result = check_race("impl", lambda: open_target("impl"), table, 3, 4, "s3")
    assert result.status is Status.PASS, result
    assert result.details.startswith("12 of 12")


def test_impl_passes_the_held_publication_check(s3_server):
    """Writer A's PUT of snapshot-2 held at the S3 fault proxy until writer B committed: impl's
    conditional PUT finds snapshot 2 taken and A retries as snapshot 3, both commits once."""
    table = TableRef(f"s3://{s3_server.new_bucket()}/wh", "db.t", tuple(sorted(s3_server.options().items())))
    result = check_held_publication(lambda: open_target("impl"), table)
    assert result.status is Status.PASS, result
    assert "writer-a: ok, writer-b: ok" in result.details


class DoubleCommitTarget(ImplTarget):
    """Broken on purpose: every commit publishes its files twice (the second as new copies)."""

    def commit(self, table, prepared, commit_user, identifier, *, filter_committed=False) -> CommitResult:
        res = super().commit(table, prepared, commit_user, identifier, filter_committed=filter_committed)
        if res.outcome is Outcome.OK and res.snapshot_ids:
            rows = self.read_rows(table)[-1:]  # one more row the caller never wrote
            again = super().prepare(table, rows)
            super().commit(table, again, commit_user, identifier)
        return res


class SilentTarget(ImplTarget):
    """Broken on purpose: reports success for a duplicate commit without refusing it, and drops
    every third acknowledged commit."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def commit(self, table, prepared, commit_user, identifier, *, filter_committed=False) -> CommitResult:
        self.n += 1
        if self.n % 3 == 0:
            return CommitResult(Outcome.OK, (999,))
        res = super().commit(table, prepared, commit_user, identifier, filter_committed=filter_committed)
        return CommitResult(Outcome.OK, res.snapshot_ids)


def test_machine_finds_a_double_commit_and_shrinks_it():
    caps = ImplTarget.capabilities
    results = check_machine("broken", DoubleCommitTarget, fresh_local_table, caps,
                            TableSpec(False, True, -1), "append table", examples=3, seed=1)
    (r,) = [r for r in results if r.status is Status.DIVERGENCE]
    assert "new snapshots, expected 1" in r.details
    steps = [line for line in r.reproduction.splitlines() if line[:1].isdigit()]
    assert 1 <= len(steps) <= 2, r.reproduction  # shrunk to the first commit (after a prepare at most)


def test_dropped_and_unrefused_commits_are_divergences():
    results = check_duplicates(SilentTarget, fresh_local_table, ImplTarget.capabilities)
    plain = next(r for r in results if r.name == "duplicate commit (plain)")
    assert plain.status is Status.DIVERGENCE and "expected a refusal" in plain.details
    assert "FileEntry.mergeEntries" in plain.citation and plain.reproduction
    machine = check_machine("broken", SilentTarget, fresh_local_table, ImplTarget.capabilities,
                            TableSpec(True, True, 2), "primary-key table", examples=3, seed=2)
    assert machine[0].status is Status.DIVERGENCE and machine[0].reproduction


def test_skipped_ops_are_never_generated():
    """--skip-ops recommit lets the machine look past a known duplicate-commit divergence."""
    import random

    from fault_injection.conformance.adapter import Capability
    from fault_injection.conformance.checks.machine import gen_steps

    caps, rng = frozenset(Capability), random.Random(1)
    ops = {s.op for _ in range(20) for s in gen_steps(rng, 12, caps)}
    assert "recommit" in ops
    skipped = {s.op for _ in range(20) for s in gen_steps(rng, 12, caps, frozenset({"recommit"}))}
    assert "recommit" not in skipped and "commit" in skipped


def test_replaced_by_rename_explains_only_lost_commits_with_exactly_their_rows_missing():
    from fault_injection.conformance.checks.processes import BASE, replaced_by_rename
    from fault_injection.conformance.checks.result import rows_difference
    from fault_injection.conformance.runner import rows_for

    def details(lost, missing_rows, extra_rows=()):
        problems = [f"acknowledged commit ({u}, {i}) appears in 0 snapshots" for u, i in lost]
        diff = rows_difference(list(missing_rows), list(extra_rows))
        return "; ".join(["6 of 6 commits acknowledged", *problems,
                          *([f"rows read vs acknowledged rows: {diff}"] if diff else [])])

    racer0_2 = rows_for(BASE * 1, 2)
    racer1_3 = rows_for(BASE * 2, 3)
    every = lambda user: True  # noqa: E731
    assert replaced_by_rename(details([("racer-0", 2)], racer0_2), every) == ([("racer-0", 2)], [])
    assert replaced_by_rename("6 of 6 commits acknowledged", every) == ([], [])
    # a racer that cannot lose a commit this way: unexplained
    only_even = lambda user: int(user.split("-")[1]) % 2 == 0  # noqa: E731
    lost, rest = replaced_by_rename(details([("racer-1", 3)], racer1_3), only_even)
    assert lost == [] and len(rest) == 2
    # rows missing that no lost commit explains, or rows extra: unexplained
    lost, rest = replaced_by_rename(details([("racer-0", 2)], racer0_2 + racer1_3), every)
    assert lost == [("racer-0", 2)] and len(rest) == 2 and "exactly the lost commits' rows" in rest[-1]
    _, rest = replaced_by_rename(details([("racer-0", 2)], racer0_2, rows_for(BASE * 3, 1)), every)
    assert rest
    # a commit in two snapshots is never explained
    _, rest = replaced_by_rename("6 of 6 commits acknowledged; acknowledged commit (racer-0, 1) appears in 2 snapshots",
                                 every)
    assert rest

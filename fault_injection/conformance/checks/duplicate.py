"""Duplicate and repeated commits: the same prepared files committed twice under one identifier."""

from __future__ import annotations

from typing import Callable

from fault_injection.conformance.adapter import Capability, Outcome, TableRef, TableSpec, Target
from fault_injection.conformance.checks.result import CheckResult, Classification, Status, rows_difference
from fault_injection.conformance.observe import observe

# What Paimon Java does with a plain second commit of the same files: its APPEND commits skip the
# conflict check unless asked (FileStoreCommitImpl.commit: noConflictCheck() unless
# appendCommitCheckConflict; a duplicate is dropped only with discardDuplicateFiles), so Java
# publishes it too. The table is then broken by Paimon's own rule: FileEntry.mergeEntries, which
# every scan and manifest merge folds entries with, fails with checkState("Trying to add file %s
# which is already in the the map"). The model (and impl) refuse the commit instead: stricter
# than Java's commit path, not than Paimon's format.
PLAIN_CITATION = ("Apache Paimon paimon-core FileStoreCommitImpl.commit: APPEND commits run noConflictCheck() "
                  "unless appendCommitCheckConflict, and drop re-added files only with discardDuplicateFiles, so "
                  "Paimon Java accepts this commit too; the table then breaks FileEntry.mergeEntries, which every "
                  "scan folds entries with (checkState 'Trying to add file %s which is already in the the map'): "
                  "Java reads of it fail. The model refuses it (model/rules.py check_conflicts).")
FILTER_CITATION = ("Apache Paimon paimon-core: FileStoreCommitImpl.filterCommitted (drops committables whose "
                   "identifier this commit user already published); model/table.py Model.commit(skip_committed)")

ROWS = [{"dt": "a", "id": 1, "v": 10}, {"dt": "a", "id": 2, "v": 20}]


def _one(target: Target, table: TableRef, spec: TableSpec, filter_committed: bool) -> str:
    """What is wrong after committing one prepared handle twice ('' when nothing is)."""
    target.create_table(table, spec)
    prepared = target.prepare(table, ROWS)
    first = target.commit(table, prepared, "dup-user", 1)
    if first.outcome is not Outcome.OK:
        return f"first commit: {first.outcome.value} {first.error_class}: {first.message}"
    second = target.commit(table, prepared, "dup-user", 1, filter_committed=filter_committed)
    problems = []
    if filter_committed and second.outcome is not Outcome.OK:
        problems.append(f"second commit with filter_committed: {second.outcome.value} {second.error_class}")
    if not filter_committed and second.outcome is not Outcome.CONFLICT:
        problems.append(f"second plain commit: {second.outcome.value} "
                        f"{second.error_class or ''} (expected a refusal)")
    obs = observe(table)
    problems += list(obs.problems)
    if len(obs.snapshots) != 1:
        problems.append(f"{len(obs.snapshots)} snapshots, expected 1")
    diff = rows_difference(ROWS, target.read_rows(table))
    if diff:
        problems.append(f"rows: {diff}")
    return "; ".join(problems)


def check_duplicates(open_target: Callable[[], Target], make_table: Callable[[], TableRef],
                     caps: frozenset[Capability]) -> list[CheckResult]:
    spec = TableSpec(primary_key=False, partitioned=True, bucket=-1)
    out = []
    for flt, name, expected, citation in (
            (False, "duplicate commit (plain)", "a refusal (FileAlreadyLiveError); one snapshot; rows once",
             PLAIN_CITATION),
            (True, "duplicate commit (filter_committed)", "success publishing nothing; one snapshot; rows once",
             FILTER_CITATION)):
        if flt and Capability.FILTER_COMMITTED not in caps:
            out.append(CheckResult(name, Status.UNSUPPORTED, "target lacks filter-committed"))
            continue
        target = open_target()
        try:
            problem = _one(target, make_table(), spec, flt)
        finally:
            target.close()
        repro = (f"append table {spec}; prepare {ROWS}; commit(user='dup-user', identifier=1); "
                 f"commit the same handle again (user='dup-user', identifier=1, filter_committed={flt})")
        # the plain case: Paimon Java's commit path accepts it too (see PLAIN_CITATION)
        kind = Classification.TARGET_DEFECT if flt else Classification.MODEL_STRICTER
        out.append(CheckResult(name, Status.DIVERGENCE, problem, repro, expected, kind, citation)
                   if problem else CheckResult(name, Status.PASS, expected))
    return out

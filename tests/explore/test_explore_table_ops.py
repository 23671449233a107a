"""The explorer driving whole table operations (fault_injection.explore.table_ops): CI-sized
random and exhaustive runs of every configuration, the planted bug found both ways, replay,
and the regressions the explorer found."""

from __future__ import annotations

import logging

import pytest

from fault_injection.explore.scheduler import Action
from fault_injection.explore.search import exhaustive, random_mode, run_schedule, seeded_chooser
from fault_injection.explore.table_ops import TAG, Outcome, TableOp, TablePlant, TableScenario
from tests.explore.test_explore import Phases

TAG_EXPIRE = TableScenario(TableOp.TAG_EXPIRE, writers=1)


@pytest.fixture(autouse=True)
def _quiet():
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.parametrize("scenario, schedules", [
    (TableScenario(TableOp.PK_COMPACT), 30),
    (TableScenario(TableOp.DELETION_VECTORS), 30),
    (TableScenario(TableOp.DYNAMIC_BUCKET), 40),
    (TableScenario(TableOp.SCHEMA_CHANGE), 30),
    (TAG_EXPIRE, 40),
], ids=lambda x: x.label() if isinstance(x, TableScenario) else "")
def test_random_table_schedules_with_crashes_and_faults_find_nothing(scenario, schedules):
    report = random_mode(scenario, schedules=schedules, seed=2000, faults=True)
    assert report.schedules == schedules
    assert [(f.seed, [str(v) for v in f.violations]) for f in report.findings] == []


@pytest.mark.parametrize("scenario", [
    TableScenario(TableOp.TAG_EXPIRE, writers=0),
    TableScenario(TableOp.SCHEMA_CHANGE, writers=1),
], ids=lambda x: x.label())
def test_exhaustive_with_one_storage_fault_checks_every_schedule_of_the_small_configurations(scenario):
    """Every distinct interleaving with at most one failed or lost-response operation (68 and
    109 schedules when written), and without faults (3 each)."""
    report = exhaustive(scenario, max_faults=1)
    assert report.complete and report.findings == []
    plain = exhaustive(scenario)
    assert plain.complete and plain.findings == [] and 1 < plain.schedules < report.schedules


def test_exhaustive_tag_creation_racing_expiration_finds_nothing():
    """The first 80 schedules of the exhaustive search (the race below is schedule 47)."""
    report = exhaustive(TAG_EXPIRE, max_schedules=80)
    assert report.schedules == 80 and report.findings == []


@pytest.mark.parametrize("scenario, expected", [
    (TableScenario(TableOp.TAG_EXPIRE, writers=1, plant=TablePlant.EXPIRE_IGNORES_TAGS), f"tag {TAG}"),
    # the loser of the COMPACT race publishes its compaction over the winner's: a deleted key comes back
    (TableScenario(TableOp.PK_COMPACT, plant=TablePlant.NO_RECHECK_AFTER_LOST_RACE), "the published commits give"),
], ids=lambda x: x.plant.value if isinstance(x, TableScenario) else "")
@pytest.mark.parametrize("exhaustively", [False, True], ids=["random", "exhaustive"])
def test_the_oracle_finds_each_planted_bug(scenario, expected, exhaustively):
    if exhaustively:
        found = exhaustive(scenario, stop_at_first=True, max_schedules=60).findings
    else:
        found = random_mode(scenario, schedules=60, seed=0, faults=True, stop_at_first=True).findings
    assert found, f"{scenario.plant} not found"
    assert any(v.rule in ("invariant 3", "invariant 4") and expected in v.message for v in found[0].violations)


def test_a_table_schedule_replays_step_for_step_with_the_same_files():
    scenario = TableScenario(TableOp.DYNAMIC_BUCKET)
    first = run_schedule(scenario, seeded_chooser(scenario, 11, faults=True), None, 11)
    again = run_schedule(scenario, seeded_chooser(scenario, 11, faults=True), None, 11)
    assert first.steps == again.steps and len(first.steps) > 50
    assert [r.commit_user for r in first.reports] == [r.commit_user for r in again.reports]


def _is(kind, name):
    return lambda op: op.kind.value == kind and op.path.endswith("/" + name)


def test_dynamic_bucket_writers_that_routed_by_the_same_index_do_not_both_publish():
    """Both writers load partition 0's HASH index and assign new keys to the same free slots;
    the second to commit is refused (IndexFileConflictError), so no key lands in two buckets."""
    scenario = TableScenario(TableOp.DYNAMIC_BUCKET)
    outcome = run_schedule(scenario, Phases((0, _is("create", "snapshot-3")), (1, None), (0, None)))
    assert [str(v) for v in outcome.violations] == []
    w0, w1 = outcome.reports
    assert w1.outcome is Outcome.OK
    assert w0.outcome is Outcome.CONFLICT and "IndexFileConflictError" in (w0.error or "")


def _pending_tag(kind):
    return lambda op: op.kind.value == kind and op.path.rsplit("/", 1)[-1].startswith("pending-tag-")


def test_a_tag_whose_snapshot_expires_before_the_tag_is_written_is_withdrawn():
    """Regression (found by the explorer, exhaustive schedule 47 of tag-expire; apache/paimon#9220):
    create_tag read snapshot 3 as the latest; w0 published 4; expiration, having listed the
    tags before the tag existed, deleted snapshot 3 and its manifest lists; create_tag then
    wrote tag t1 for snapshot 3, acknowledged and unreadable. It now writes a pending tag first
    and finds the snapshot gone after writing it: it deletes the pending tag, never publishes
    one for snapshot 3, and tags the new latest."""
    chooser = Phases((0, _is("create", "snapshot-4")), (1, _pending_tag("create")), (0, None), (2, None),
                     (1, None))
    outcome = run_schedule(TAG_EXPIRE, chooser)
    assert [str(v) for v in outcome.violations] == []
    tag = outcome.reports[1]
    assert tag.outcome is Outcome.OK and tag.tag_snapshot == 4
    ops = [(s.actor, s.op.kind.value, s.op.path.rsplit("/", 1)[-1]) for s in outcome.steps]
    pending_creates = [i for i, (a, k, n) in enumerate(ops) if a == 1 and k == "create" and n.startswith("pending-tag-")]
    pending_deletes = [i for i, (a, k, n) in enumerate(ops) if a == 1 and k == "delete" and n.startswith("pending-tag-")]
    assert len(pending_creates) == 2 and len(pending_deletes) == 2
    assert ops.count((1, "create", f"tag-{TAG}")) == 1 and (1, "delete", f"tag-{TAG}") not in ops
    assert ops.index((2, "delete", "snapshot-3")) < pending_creates[0]


def test_expiration_reads_the_tags_again_after_deleting_snapshot_files():
    """The other half of the same race: the pending tag is written after expiration listed the
    tags but before it deleted snapshot 3, so the tag is published (its snapshot was there after
    the pending tag was written); expiration reads the tags again once the snapshot files are
    gone and keeps the tag's files."""
    chooser = Phases((0, _is("create", "snapshot-4")), (1, _pending_tag("create")), (0, None),
                     (2, _is("delete", "snapshot-1")), (1, None), (2, None))
    outcome = run_schedule(TAG_EXPIRE, chooser)
    assert [str(v) for v in outcome.violations] == []
    tag, expire = outcome.reports[1], outcome.reports[2]
    assert tag.outcome is Outcome.OK and tag.tag_snapshot == 3 and expire.outcome is Outcome.OK
    ops = [(s.actor, s.op.kind.value, s.op.path.rsplit("/", 1)[-1]) for s in outcome.steps]
    assert ops.index((1, "create", f"tag-{TAG}")) < ops.index((2, "delete", "snapshot-3"))
    assert (1, "delete", f"tag-{TAG}") not in ops


def test_a_deletion_vector_writer_crashed_between_its_append_and_compact_leaves_the_table_readable():
    """w0 publishes its APPEND (snapshot 5; set-up made 1..4) and crashes before the COMPACT
    with its deletion vectors; w1 then writes and compacts on top of the uncompacted file."""
    scenario = TableScenario(TableOp.DELETION_VECTORS)
    chooser = Phases((0, _is("create", "snapshot-6")), (0, Action.CRASH), (1, None))
    outcome = run_schedule(scenario, chooser)
    assert [str(v) for v in outcome.violations] == []
    assert outcome.reports[0].outcome is Outcome.DIED and outcome.reports[1].outcome is Outcome.OK

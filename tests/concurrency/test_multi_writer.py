"""Concurrent committers (threads and OS processes) on one local table, checked by
simulation.committers against a model replay; and the snapshot publish race.

Sizes: 4 committers x 25 commits by default; ``PAIMON_SIM_LARGE=1`` runs 8 x 200.
Every assertion is about what happened (ids, outcomes, file contents), never about timing:
how many races were lost varies from run to run and is only printed.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from simulation.committers import CommitterSimConfig, check_simulation, race_publish, run_simulation

LARGE = os.environ.get("PAIMON_SIM_LARGE") == "1"
COMMITTERS, COMMITS = (8, 200) if LARGE else (4, 25)


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_concurrent_committers_equal_a_serial_replay(tmp_path, mode):
    config = CommitterSimConfig(str(tmp_path / "db.db" / "t"), committers=COMMITTERS,
                                commits_per_committer=COMMITS, mode=mode, seed=7 if mode == "thread" else 11)
    result = run_simulation(config)
    print(result.summary())
    assert not result.problems, "\n".join(result.problems[:20])
    assert result.commits == COMMITTERS * COMMITS
    assert result.compactions > 0
    # every call published its APPEND (new files only ever conflict on nothing): so at least
    # one snapshot per call, plus one per landed COMPACT part
    assert result.snapshots == sum(len(r.published) for r in result.records)
    assert all(r.published for r in result.records), "an APPEND part of brand-new files was refused"


def test_checker_reports_lost_misattributed_and_duplicated_commits(tmp_path):
    """The checker is not vacuous: tampering with the records of a correct run is reported."""
    config = CommitterSimConfig(str(tmp_path / "t"), committers=2, commits_per_committer=6, mode="thread", seed=3)
    clean = run_simulation(config)
    assert not clean.problems, clean.problems

    def problems_after(tamper) -> list[str]:
        result = replace(clean, records=list(clean.records), problems=[])
        tamper(result.records)
        check_simulation(result)
        return result.problems

    # a success whose snapshot is not where it says (lost / misattributed)
    def shift(records):
        records[0] = replace(records[0], published=tuple(s + 1 for s in records[0].published))
    assert any("reported snapshots" in p for p in problems_after(shift))

    # a call whose snapshot holds other entries than it asked for
    def other_entries(records):
        i, r = next((i, r) for i, r in enumerate(records) if r.published)
        records[i] = replace(r, new_files=r.new_files + (replace(r.new_files[0], file_name="never-written"),))
    assert any("holds other entries" in p for p in problems_after(other_entries))

    # a commit applied twice: the last snapshot published again under the next id
    snapshot_dir = tmp_path / "t" / "snapshot"
    last = max(int(p.name.split("-")[1]) for p in snapshot_dir.glob("snapshot-*"))
    again = json.loads((snapshot_dir / f"snapshot-{last}").read_bytes())
    again["id"] = last + 1
    (snapshot_dir / f"snapshot-{last + 1}").write_text(json.dumps(again))
    found = problems_after(lambda records: None)
    assert any("applied more than once" in p for p in found), found


def test_conflict_window_check_rejects_a_conflict_no_snapshot_explains(tmp_path):
    """A reported conflict must be reproducible by the model against a snapshot in the window."""
    config = CommitterSimConfig(str(tmp_path / "t"), committers=1, commits_per_committer=4, mode="thread", seed=5)
    clean = run_simulation(config)
    assert not clean.problems, clean.problems
    extra = replace(clean.records[-1], identifier=999, error="KeyRangeOverlapError", message="made up",
                    published=(), compact_before=(), compact_after=(),
                    seen_before=clean.snapshots, seen_after=clean.snapshots)
    result = replace(clean, records=[*clean.records, extra], problems=[])
    check_simulation(result)
    assert any("conflicts with none of snapshots" in p for p in result.problems), result.problems


@pytest.mark.parametrize("contenders", [2, 4])
def test_processes_racing_for_one_snapshot_id_never_both_win(tmp_path, contenders):
    rounds = 1000 if LARGE else 150
    table = tmp_path / "t"
    winners = race_publish(str(table), rounds=rounds, contenders=contenders)
    assert len(winners) == rounds
    for r, won in enumerate(winners, start=1):
        assert len(won) == 1, f"round {r}: winners {won}"
        data = (table / "snapshot" / f"snapshot-{r}").read_bytes()
        if r % 2:
            assert data == f"contender {won[0]} round {r}".encode(), f"round {r}: file holds {data!r}"
        else:
            assert json.loads(data)["commitUser"] == f"contender-{won[0]}", f"round {r}"
    leftovers = [p.name for p in (table / "snapshot").iterdir() if p.name.startswith(".")]
    assert not leftovers, f"temp files left behind: {leftovers}"

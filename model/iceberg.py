"""Iceberg metadata in the model: which Paimon snapshot each Iceberg snapshot mirrors, and the
crash-safety rules of the Iceberg view (issue 48 item 4). Pure rules, no I/O.

An Iceberg snapshot mirrors the Paimon snapshot of the same id: Paimon Java's
``IcebergCommitCallback`` gives it the Paimon snapshot's id as snapshot id and as sequence
number (its summary carries only Iceberg's totals and operation), and impl does the same.

The Iceberg metadata is written after the Paimon snapshot is published and is derived from it
alone, so a crash in between leaves the view *behind*, never wrong:

- the current Iceberg snapshot mirrors a Paimon snapshot that exists, at or below the latest;
- every Iceberg snapshot of the history mirrors a retained Paimon snapshot, ids ascending, the
  current one last;
- a reader of any of them reads exactly the rows of the Paimon snapshot it mirrors;
- a commit that finishes, or an explicit sync, makes the current one the latest.
"""

from __future__ import annotations

from typing import Collection, Sequence


def mirrored_paimon_snapshot(iceberg_snapshot_id: int) -> int:
    """The id of the Paimon snapshot an Iceberg snapshot mirrors (the same id)."""
    return iceberg_snapshot_id


def iceberg_view_problems(current: int | None, history: Sequence[int], retained: Collection[int],
                          latest: int | None) -> list[str]:
    """What is wrong with an Iceberg view whose current snapshot is ``current`` and whose
    snapshot history is ``history`` (Iceberg snapshot ids, in the metadata's order), for a
    table whose retained Paimon snapshots are ``retained`` and latest ``latest`` (empty: fine).
    ``current`` None means no Iceberg metadata was written yet."""
    problems = []
    if current is None:
        if history:
            problems.append(f"no current Iceberg snapshot, yet a history {list(history)}")
        return problems
    mirrored = mirrored_paimon_snapshot(current)
    if latest is None or mirrored > latest:
        problems.append(f"Iceberg snapshot {current} mirrors Paimon snapshot {mirrored}, ahead of the latest {latest}")
    if mirrored not in retained:
        problems.append(f"Iceberg snapshot {current} mirrors Paimon snapshot {mirrored}, which does not exist")
    if not history or history[-1] != current:
        problems.append(f"the history {list(history)} does not end with the current snapshot {current}")
    if list(history) != sorted(set(history)):
        problems.append(f"the history {list(history)} is not in ascending id order")
    gone = [s for s in history if mirrored_paimon_snapshot(s) not in retained]
    if gone:
        problems.append(f"Iceberg snapshots {gone} mirror Paimon snapshots that do not exist")
    return problems


def level_after_sync(current: int | None, latest: int | None) -> bool:
    """Whether the view is level with Paimon, as it must be after a finished commit or a sync."""
    return latest is None or (current is not None and mirrored_paimon_snapshot(current) == latest)

"""The table's edge of :mod:`impl.maintenance.repair`: ``doctor`` and ``repair`` of one branch of a
table (the rules live there; this only hands them the table's parts)."""

from __future__ import annotations

from impl.maintenance.cleanup import metadata_checker
from impl.maintenance.repair import RepairPlan, TableHealth, apply_repair, diagnose, plan_repair
from impl.store.core import TableCore


def doctor(core: TableCore) -> TableHealth:
    """Every damaged metadata file of the table's branch (snapshots, their schemas, manifest
    lists, manifests and index manifests, tags, hints), each with what it breaks."""
    return diagnose(core.file_io, core.snapshot_manager, core.tag_manager, metadata_checker(core))


def repair(core: TableCore, dry_run: bool = False) -> RepairPlan:
    """Move the table's branch back to its newest readable snapshot, setting the damaged newer
    snapshot files aside (``dry_run``: only say so). Deletes no manifest or data file."""
    plan = plan_repair(core.snapshot_manager, metadata_checker(core))
    if not dry_run:
        apply_repair(core.snapshot_manager, plan)
    return plan


__all__ = ["doctor", "repair"]

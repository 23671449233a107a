"""Snapshots: the record, and the manager that finds and publishes them."""

from impl.format.json_records import CommitKind, Snapshot
from impl.snapshot.manager import SnapshotManager

__all__ = ["CommitKind", "Snapshot", "SnapshotManager"]

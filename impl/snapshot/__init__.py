"""Snapshots: the manager that finds and publishes them (``snapshot/snapshot-<id>`` and the
LATEST / EARLIEST hints), the files a snapshot references, and expiration (which of them
expired snapshots alone used). The record itself is :class:`impl.format.json_records.Snapshot`,
re-exported here."""

from impl.format.json_records import CommitKind, Snapshot
from impl.snapshot.manager import SnapshotManager

__all__ = ["CommitKind", "Snapshot", "SnapshotManager"]

"""Snapshots: the manager that finds and publishes them (``snapshot/snapshot-<id>`` and the
LATEST / EARLIEST hints), the files a snapshot references, and expiration (which of them
expired snapshots alone used). The record itself is :class:`impl.snapshot.records.Snapshot`,
re-exported here."""

from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import CommitKind, Snapshot

__all__ = ["CommitKind", "Snapshot", "SnapshotManager"]

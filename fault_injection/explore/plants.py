"""Planted bugs, switchable by name: small subclasses the explorer swaps in through
:class:`fault_injection.explore.scenario.Factories`. They live here, never in impl, and
prove that the oracle and the schedules bite."""

from __future__ import annotations

import enum
from typing import Any, Sequence

from fault_injection.explore.scenario import TABLE, Factories
from impl.commit.conflicts import Fold
from impl.commit.file_store_commit import FileStoreCommit
from impl.commit.live_files import LiveFiles
from impl.fs.file_io import FileIO
from impl.fs.paths import LATEST_HINT
from impl.manifest.records import ManifestEntry
from impl.snapshot.expire import ExpireConfig, ExpireResult, Protected, SnapshotExpiration
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import Snapshot
from impl.snapshot.references import Missing


class Plant(enum.Enum):
    EXISTS_THEN_WRITE = "exists-then-write"
    NO_RECHECK_AFTER_LOST_RACE = "no-recheck-after-lost-race"
    TRUST_LATEST_HINT = "trust-latest-hint"
    EXPIRE_REFERENCED_FILE = "expire-referenced-file"


class ExistsThenWriteFileIO(FileIO):
    """Publishes by an existence check, then a plain (unconditional) PUT."""

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        if self.file_exists(path):
            return False
        self.write_bytes(path, data)
        return True


class NoRecheckCommit(FileStoreCommit):
    """After a lost race, reuses the conflict check made against the older snapshot."""

    def _checked_changes(self, attempt: Any, live: LiveFiles,
                         latest: Snapshot | None) -> tuple[list[ManifestEntry], Fold]:
        if attempt.checked is not None and attempt.overwrite_matches is None:
            return list(attempt.part.table), attempt.checked.fold
        return super()._checked_changes(attempt, live, latest)


class TrustLatestHint(SnapshotManager):
    """Takes the LATEST hint as the latest snapshot without probing the ids above it."""

    def latest_snapshot_id(self) -> int | None:
        hint = self._read_hint(LATEST_HINT)
        return hint if hint is not None else super().latest_snapshot_id()


class ExpireReferencedFile(SnapshotExpiration):
    """After expiring, deletes every data file the latest snapshot (as read at its start) does
    not hold live: also files an in-flight commit wrote and is about to publish, or files a
    snapshot published meanwhile references."""

    def expire(self, config: ExpireConfig, protected: Protected = frozenset()) -> ExpireResult:
        latest = self.snapshot_manager.latest_snapshot()
        keep = {e.file.file_name for e in self.references.files(latest, Missing.SKIP).data_files} if latest else set()
        result = super().expire(config, protected)
        doomed = [f.path for f in self.file_io.walk_files(TABLE)
                  if "/bucket-" in f.path and f.path.rsplit("/", 1)[-1] not in keep]
        self._delete_each(sorted(doomed))
        return result


def factories(plant: Plant | None) -> Factories:
    f = Factories()
    if plant is Plant.EXISTS_THEN_WRITE:
        f.file_io = ExistsThenWriteFileIO
    elif plant is Plant.NO_RECHECK_AFTER_LOST_RACE:
        f.commit = NoRecheckCommit
    elif plant is Plant.TRUST_LATEST_HINT:
        f.snapshot_manager = TrustLatestHint
    elif plant is Plant.EXPIRE_REFERENCED_FILE:
        f.expiration = ExpireReferencedFile
    return f


def names() -> Sequence[str]:
    return [p.value for p in Plant]

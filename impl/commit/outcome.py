"""Deciding whether a publication whose outcome was unknown landed.

Two questions, both answered with an :class:`Outcome` (never a ``bool | None``):

- :meth:`OutcomeResolver.joined`: after creating snapshot ``n`` on a base, did ``n`` join the
  table's history, or did it re-take an id that expiration had freed?
- :meth:`OutcomeResolver.landed_and_expired`: with no snapshot of ours found after a failed
  publish call, did it land and expiration remove it since, or provably not land?

plus :meth:`OutcomeResolver.resolve_try`, which combines them for the retry after an unknown
outcome. ``UNKNOWN`` always means: nothing is deleted (a retained snapshot may list the
files) and the caller is told with :class:`CommitOutcomeUnknownError`.

The resolver only reads (and, for a snapshot proved not to have joined the history,
withdraws it); deleting a try's own files is left to its
:class:`impl.commit.metadata_writer.WrittenFiles`, decided by the caller from the outcome.
"""

from __future__ import annotations

import enum
import logging
from typing import Callable

from impl.commit.attempt import Attempt, UnknownOutcome
from impl.errors import CommitOutcomeUnknownError
from impl.fs.file_io import FileIO
from impl.fs.paths import LATEST_HINT
from impl.manifest.entries import live_entries
from impl.manifest.manifest_file import ManifestFile, ManifestList
from impl.manifest.records import ManifestEntry
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import CommitKind, Snapshot

log = logging.getLogger(__name__)


class Outcome(enum.Enum):
    """Whether a publication took effect, as far as storage tells."""

    LANDED = "landed"  # it is (or was, before expiration) in the table's history
    NOT_LANDED = "not-landed"  # provably not: what it wrote may be deleted
    UNKNOWN = "unknown"  # no read tells: nothing may be deleted


def successor_outcome(added: set[str], live_after: set[str]) -> Outcome:
    """Did ours join, judged by the base of the snapshot right after it? Our added file names
    are ours alone: all live there means it was built on ours, none means it was not."""
    if added <= live_after:
        return Outcome.LANDED
    return Outcome.NOT_LANDED if added.isdisjoint(live_after) else Outcome.UNKNOWN


def outcome_without_successor(latest_id: int | None, snapshot_id: int) -> Outcome:
    """Did ours join, with ours still on storage and no snapshot right after it? Had ours
    joined, a successor could only be expired after ours was. So a snapshot above means ours
    re-took an expired id; ours being the latest means it joined, on a base expired since."""
    if latest_id == snapshot_id:
        return Outcome.LANDED
    return Outcome.NOT_LANDED if latest_id is not None and latest_id > snapshot_id + 1 else Outcome.UNKNOWN


class OutcomeResolver:
    """Reads that decide an unknown outcome, for one committer (``commit_user``) of one table.

    Built per use: the snapshot manager can be swapped on a committer after construction (the
    deterministic explorer does), and this always reads through the current one."""

    def __init__(self, file_io: FileIO, snapshot_manager: SnapshotManager, manifest_file: ManifestFile,
                 manifest_list: ManifestList, *, commit_user: str, table_name: str,
                 read_live: Callable[[Snapshot], list[ManifestEntry]]):
        self.file_io = file_io
        self.snapshot_manager = snapshot_manager
        self.manifest_file = manifest_file
        self.manifest_list = manifest_list
        self.commit_user = commit_user
        self.table_name = table_name
        self._read_live = read_live

    def find_own_snapshot(self, tried_id: int, latest: Snapshot | None, identifier: int,
                          kind: CommitKind) -> int | None:
        """Our snapshot among ids >= the one the unknown try tried to take, if it landed."""
        if latest is None:
            return None
        # oldest first: a publication that landed took exactly tried_id
        for snap in self.snapshot_manager.snapshots_of_user(self.commit_user, range(tried_id, latest.id + 1),
                                                            known=latest):
            if snap.commit_identifier == identifier and snap.commit_kind is kind:
                return snap.id
        return None

    def joined(self, added: set[str], snapshot_id: int, base: Snapshot | None) -> Outcome:
        """After creating ``snapshot_id`` on ``base``: whether it joined the table's history.

        The create is conditional, but an id can be free twice: if this committer stalled
        between its base check and the create while others published that id and more and
        expiration deleted them, the create re-takes an expired id below the latest (found by
        the deterministic explorer). Expiration deletes snapshots in increasing id order, so a
        base still on storage, unchanged, proves that our id was never expired before the
        create: the common case, one GET. Otherwise the snapshot after ours decides
        (:func:`successor_outcome`); with none after ours, whether any snapshot above exists
        decides (:func:`outcome_without_successor`).
        """
        if base is None or self.snapshot_manager.still_holds(base):
            return Outcome.LANDED
        try:
            successor = self.snapshot_manager.try_snapshot(snapshot_id + 1)
            if successor is None:
                if self.snapshot_manager.try_snapshot(snapshot_id) is None:
                    return Outcome.UNKNOWN
                return outcome_without_successor(self.snapshot_manager.latest_snapshot_id(), snapshot_id)
            if not added:
                return Outcome.UNKNOWN
            after = {e.file.file_name for e in live_entries(
                self.manifest_file.read_all(self.manifest_list.read_base_manifests(successor)))}
        except FileNotFoundError:
            return Outcome.UNKNOWN  # the successor expired while we read it
        return successor_outcome(added, after)

    def landed_and_expired(self, added: set[str], tried_id: int, latest: Snapshot | None) -> Outcome:
        """With no snapshot of ours among ids >= ``tried_id``: whether the unknown try did land
        and expiration removed it since (LANDED), provably did not land (NOT_LANDED: its files
        may go), or no read tells (UNKNOWN: its files must stay, a retained snapshot may list them).

        Found by the deterministic explorer: a lost response on the create, another writer
        built on our snapshot, expiration removed ours, and our cleanup then deleted a delta
        manifest the other writer's snapshot still listed.
        """
        if latest is None or latest.id < tried_id:
            return Outcome.NOT_LANDED  # nobody ever took the id
        if self.snapshot_manager.snapshot_exists(tried_id):
            return Outcome.NOT_LANDED  # another writer holds it (the scan saw it was not ours)
        earliest = self.snapshot_manager.earliest_snapshot()
        if not added or earliest is None:
            return Outcome.UNKNOWN
        try:
            live = {e.file.file_name for e in self._read_live(earliest)}
        except FileNotFoundError:
            return Outcome.UNKNOWN  # expired while we read it
        # our file names are ours alone: live in a retained snapshot means our snapshot landed
        return Outcome.LANDED if added <= live else Outcome.UNKNOWN

    def resolve_try(self, attempt: Attempt, unknown: UnknownOutcome, latest: Snapshot | None) -> int | None:
        """The id of the previous try's snapshot if it landed (and joined the history); None
        when it provably did not, after its files were deleted. Still undecidable, or a read
        failing on the way: CommitOutcomeUnknownError, nothing deleted."""
        tried = unknown.unknown_snapshot_id
        try:
            own = self.find_own_snapshot(tried, latest, attempt.committable.identifier, attempt.kind)
            if own is None:
                expired = self.landed_and_expired(attempt.added_names(), tried, latest)
                if expired is Outcome.UNKNOWN:
                    raise self.expired_unknown_error(attempt, tried)
                if expired is Outcome.LANDED:
                    return tried  # it landed; expiration already removed it
            else:
                own_joined = self.joined(attempt.added_names(), own, unknown.base)
                if own_joined is Outcome.UNKNOWN:
                    raise self.stale_id_error(attempt, own, unknown.base)
                if own_joined is Outcome.LANDED:
                    if latest is not None and latest.id == own:  # the hint its create did not get
                        self.snapshot_manager.commit_hint(LATEST_HINT, own)
                    return own  # its files are now referenced
                self.withdraw(own)  # it re-took an expired id: it never joined the history
        except CommitOutcomeUnknownError:
            raise
        except Exception as e:  # noqa: BLE001 - the outcome stays unknown; nothing was deleted
            raise CommitOutcomeUnknownError(
                f"cannot tell whether snapshot {tried} of {self.table_name} landed: {e}") from e
        # Known now: it did not land. Its files are ours to remove.
        unknown.resolved_not_landed()
        return None

    def withdraw(self, snapshot_id: int) -> None:
        """Delete the snapshot this committer created on an expired id. No one builds on it: the
        snapshot after it existed before it did, so every search for the latest passes it."""
        log.warning("snapshot %s of %s re-took an id expiration had freed; withdrawn", snapshot_id, self.table_name)
        self.file_io.delete(self.snapshot_manager.snapshot_path(snapshot_id))

    def stale_id_error(self, attempt: Attempt, snapshot_id: int, base: Snapshot | None) -> CommitOutcomeUnknownError:
        # The LATEST hint is not moved onto a snapshot that may be stale. Retention
        # (snapshot.num-retained.min, snapshot.time-retained) keeps this window closed in
        # practice; the deterministic explorer opens it on purpose.
        base_id = base.id if base is not None else "?"
        return CommitOutcomeUnknownError(
            f"{attempt.describe(self.table_name)} by {self.commit_user}: snapshot {snapshot_id} was created, but its "
            f"base snapshot {base_id} was expired or replaced meanwhile, so whether snapshot {snapshot_id} joined the "
            f"table's history or re-took an id that expiration had freed cannot be told. Nothing was deleted. Check "
            f"the table before committing this identifier again, and keep snapshot.num-retained.min and "
            f"snapshot.time-retained larger than any commit can stall")

    def expired_unknown_error(self, attempt: Attempt, tried_id: int) -> CommitOutcomeUnknownError:
        return CommitOutcomeUnknownError(
            f"{attempt.describe(self.table_name)} by {self.commit_user}: the outcome of publishing snapshot {tried_id} "
            f"was unknown, and snapshot {tried_id} has been expired since, so whether it was ours cannot be told. "
            f"Nothing was deleted (orphan removal reclaims what no snapshot uses). Check the table before "
            f"committing this identifier again")

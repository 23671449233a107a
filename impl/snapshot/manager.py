"""SnapshotManager: finding and publishing snapshots.

Snapshot ids are contiguous from EARLIEST to LATEST. The ``LATEST`` / ``EARLIEST`` hint
files only speed up the search; a hint is never trusted over the snapshot files themselves.

Finding the latest snapshot never lists the directory while a hint names an existing snapshot:
from there the ids above are probed one file at a time (HEAD on object stores), galloping
then bisecting, so a hint k snapshots stale costs O(log k) probes and a fresh one costs two.
This keeps the commit path free of LIST requests (no ListBucket permission needed) and its
request count independent of the history length. Only when no hint leads to an existing
snapshot (a new table, or hints that are missing, torn or garbage) is the directory listed.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable, Iterator, Protocol

from impl.errors import (
    CorruptMetadataError,
    DamagedSnapshotError,
    FileIOError,
    SnapshotNotExistError,
    UnsupportedVersionError,
)
from impl.fs.file_io import FileIO
from impl.fs.names import BranchName
from impl.fs.paths import EARLIEST_HINT, LATEST_HINT, SNAPSHOT_PREFIX, TablePaths
from impl.snapshot.records import Snapshot

log = logging.getLogger(__name__)


class SnapshotCommit(Protocol):
    """Who publishes a table's new snapshots (Paimon's ``SnapshotCommit``). Without one, the
    :class:`SnapshotManager` creates ``snapshot-<id>`` on the file system itself; a catalog that
    owns publication (the REST catalog: ``impl.rest``) passes its own, and the commit core's
    conflict detection and retries run unchanged on its answer."""

    def commit(self, snapshot: Snapshot, branch: BranchName) -> bool:
        """Publish ``snapshot`` on ``branch``; False when its id is taken (a lost race)."""
        ...


class SnapshotManager:
    """Finds snapshots of one table (latest, earliest, by id, by time, by commit user) and
    publishes new ones."""

    def __init__(self, file_io: FileIO, table_path: str | TablePaths, *,
                 snapshot_commit: SnapshotCommit | None = None, table_name: str | None = None):
        """``snapshot_commit``: publishes new snapshots (default: an atomic create on ``file_io``);
        ``table_name``: how errors name the table (the ``db.t`` the user gave; default: its path)."""
        self.file_io = file_io
        self.paths = table_path if isinstance(table_path, TablePaths) else TablePaths(table_path)
        self.snapshot_commit = snapshot_commit
        self.table_name = table_name or self.paths.table_path

    @property
    def table_path(self) -> str:
        return self.paths.table_path

    # ------------------------------------------------------------------ by id

    def snapshot_path(self, snapshot_id: int) -> str:
        return self.paths.snapshot_path(snapshot_id)

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return self.file_io.file_exists(self.snapshot_path(snapshot_id))

    def try_snapshot(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot, or None if its file does not exist (never written, or expired)."""
        path = self.snapshot_path(snapshot_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            return None
        try:
            snap = Snapshot.from_json_bytes(data, path)
        except UnsupportedVersionError:
            raise  # a newer format, not damage
        except CorruptMetadataError as e:
            raise DamagedSnapshotError(e.path, e.reason) from None
        if snap.id != snapshot_id:
            raise DamagedSnapshotError(path, f"file holds snapshot id {snap.id}")
        return snap

    def snapshot(self, snapshot_id: int) -> Snapshot:
        snap = self.try_snapshot(snapshot_id)
        if snap is None:
            raise SnapshotNotExistError(self.table_name, snapshot_id)
        return snap

    # ------------------------------------------------------------------ listing

    def snapshot_ids(self) -> list[int]:
        """Ids of the snapshot files present, ascending (temp files are skipped)."""
        ids = []
        for name in self.file_io.list_names(self.paths.snapshot_dir):
            if name.startswith(SNAPSHOT_PREFIX):
                tail = name[len(SNAPSHOT_PREFIX):]
                if tail.isascii() and tail.isdigit():
                    ids.append(int(tail))
        return sorted(ids)

    def snapshots(self) -> Iterator[Snapshot]:
        for i in self.snapshot_ids():
            snap = self.try_snapshot(i)
            if snap is not None:  # expired while we listed
                yield snap

    def _read_hint(self, name: str) -> int | None:
        try:
            text = self.file_io.read_bytes(self.paths.hint_path(name)).decode("ascii", "replace").strip()
        except FileNotFoundError:
            return None
        return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else None

    def latest_snapshot_id(self) -> int | None:
        for name in (LATEST_HINT, EARLIEST_HINT):
            hint = self._read_hint(name)
            if hint is not None and self.snapshot_exists(hint):
                return last_present(hint, self.snapshot_exists)
        if self.snapshot_exists(1):
            return last_present(1, self.snapshot_exists)
        # No hint and no snapshot 1: a new table, or one whose hints are gone and whose first
        # snapshots expired. Only a listing tells these apart; a committer without permission
        # to list (no ListBucket on S3) takes the table for empty, which is what it is unless
        # both hints were destroyed from outside.
        try:
            ids = self.snapshot_ids()
        except FileIOError as e:
            if isinstance(e.__cause__, PermissionError):
                log.warning("cannot list %s (%s); no hint names a snapshot, so the table is taken as empty",
                            self.paths.snapshot_dir, e.__cause__)
                return None
            raise
        return ids[-1] if ids else None

    def earliest_snapshot_id(self) -> int | None:
        hint = self._read_hint(EARLIEST_HINT)
        if hint is not None:
            if self.snapshot_exists(hint):
                return first_present_below(hint, self.snapshot_exists)
            latest = self._latest_by_hint()
            if latest is not None and latest > hint:
                # expiration went past the hint: the earliest is the first present id above it
                return first_present_between(hint, latest, self.snapshot_exists)
        ids = self.snapshot_ids()
        return ids[0] if ids else None

    def _latest_by_hint(self) -> int | None:
        hint = self._read_hint(LATEST_HINT)
        if hint is not None and self.snapshot_exists(hint):
            return last_present(hint, self.snapshot_exists)
        return None

    def latest_snapshot(self) -> Snapshot | None:
        """The newest snapshot, or None for an empty table (DamagedSnapshotError if its file
        cannot be read)."""
        return self._read_with_retry(self.latest_snapshot_id)

    def earliest_snapshot(self) -> Snapshot | None:
        """The oldest snapshot not yet expired, or None for an empty table."""
        return self._read_with_retry(self.earliest_snapshot_id)

    # pypaimon 2.1.0's names for the reads above, so a pypaimon script's
    # ``table.snapshot_manager().get_latest_snapshot()`` runs unchanged (the snapshots are impl's).

    def get_latest_snapshot(self) -> Snapshot | None:
        """pypaimon's name for :meth:`latest_snapshot`."""
        return self.latest_snapshot()

    def get_snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        """pypaimon's name for :meth:`try_snapshot` (None when the snapshot's file does not exist)."""
        return self.try_snapshot(snapshot_id)

    def list_snapshots(self) -> list[Snapshot]:
        """pypaimon's name for :meth:`snapshots`, as a list in ascending id order."""
        return list(self.snapshots())

    def try_get_earliest_snapshot(self) -> Snapshot | None:
        """pypaimon's name for :meth:`earliest_snapshot`."""
        return self.earliest_snapshot()

    def _read_with_retry(self, find_id: Callable[[], int | None]) -> Snapshot | None:
        # A concurrent expiration can delete what we just found; look again then.
        missing_id = 0
        for _ in range(3):
            sid = find_id()
            if sid is None:
                return None
            snap = self.try_snapshot(sid)
            if snap is not None:
                return snap
            missing_id = sid
        raise SnapshotNotExistError(self.table_name, missing_id)

    # ------------------------------------------------------------------ searching

    def earlier_or_equal_time_millis(self, time_millis: int) -> Snapshot | None:
        """The newest snapshot committed at or before ``time_millis`` (time travel by time), or None.

        Commit times never decrease with the snapshot id, so this is a binary search over the
        ids from EARLIEST to LATEST: O(log n) snapshot reads. An id whose file is missing
        (expired meanwhile) is replaced by the next existing id above it.
        """
        earliest, latest = self.earliest_snapshot_id(), self.latest_snapshot_id()
        if earliest is None or latest is None:
            return None
        found: Snapshot | None = None
        low, high = earliest, latest
        while low <= high:
            middle = (low + high) // 2
            probe = self._first_existing(middle, high)
            if probe is None or probe.time_millis > time_millis:
                # middle..high hold nothing at or before the time: the answer is below middle
                high = middle - 1
            else:
                # equal times go on upwards: the newest of them is the answer
                found, low = probe, probe.id + 1
        return found

    def _first_existing(self, low: int, high: int) -> Snapshot | None:
        """The snapshot with the smallest id in ``low..high`` whose file exists, or None."""
        for sid in range(low, high + 1):
            snap = self.try_snapshot(sid)
            if snap is not None:
                return snap
        return None

    def snapshots_of_user(self, commit_user: str, ids: Iterable[int] | None = None, *,
                          known: Snapshot | None = None) -> Iterator[Snapshot]:
        """The snapshots committed by ``commit_user`` among ``ids``, in the order of ``ids``;
        ids whose file is missing (never written, or expired) are skipped.

        ``ids`` defaults to every snapshot id from LATEST down to EARLIEST (found by the
        hints, so normally without a listing). The commit path passes an explicit range. A snapshot
        the caller already holds is passed as ``known`` and not read again. Snapshots are read
        lazily, so a caller that stops early reads no further.
        """
        if ids is None:
            latest = self.latest_snapshot_id()
            earliest = self.earliest_snapshot_id() if latest is not None else None
            ids = range(latest, earliest - 1, -1) if latest is not None and earliest is not None else ()
        for sid in ids:
            snap = known if known is not None and sid == known.id else self.try_snapshot(sid)
            if snap is not None and snap.commit_user == commit_user:
                yield snap

    def latest_snapshot_of_user(self, commit_user: str) -> Snapshot | None:
        """The newest snapshot committed by ``commit_user``, or None."""
        return next(self.snapshots_of_user(commit_user), None)

    # ------------------------------------------------------------------ publishing

    def try_publish(self, snapshot: Snapshot) -> bool:
        """Atomically create ``snapshot-<id>``; False if another writer holds that id.

        On success the LATEST hint is updated; a failure to write the hint is logged and
        ignored, since the snapshot is already published and hints are never trusted.
        """
        published = self.try_create(snapshot)
        if published:
            self.commit_hint(LATEST_HINT, snapshot.id)
        return published

    def try_create(self, snapshot: Snapshot) -> bool:
        """Atomically create ``snapshot-<id>`` without touching the hints (through the
        :class:`SnapshotCommit` when there is one); False if the id is taken."""
        if self.snapshot_commit is not None:
            return self.snapshot_commit.commit(snapshot, self.paths.branch)
        return self.file_io.try_write_atomic(self.snapshot_path(snapshot.id), snapshot.to_json_bytes())

    def still_holds(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot-<id>`` is still on storage with exactly this content (not expired,
        not expired and re-created by someone else)."""
        return self.try_snapshot(snapshot.id) == snapshot

    def commit_hint(self, name: str, snapshot_id: int) -> None:
        try:
            self.file_io.overwrite_hint(self.paths.hint_path(name), str(snapshot_id))
        except Exception as e:  # noqa: BLE001 - a stale hint is tolerated by every reader
            log.warning("could not write %s hint of %s: %s", name, self.table_path, e)


# ---------------------------------------------------------------------- searching ids
#
# Snapshot ids present form one contiguous range [EARLIEST, LATEST] (invariant 1), so whether
# an id is present is monotone on either side of a present id: these searches probe O(log k)
# ids instead of listing the directory.


def _bisect(low: int, high: int, go_high: Callable[[int], bool]) -> tuple[int, int]:
    """Narrow ``low < high`` to adjacent ids: ``go_high(middle)`` moves ``low`` up, else ``high`` down."""
    while high - low > 1:
        middle = (low + high) // 2
        if go_high(middle):
            low = middle
        else:
            high = middle
    return low, high


def last_present(start: int, present: Callable[[int], bool]) -> int:
    """The largest id of the contiguous run of present ids that contains ``start`` (present)."""
    low, step = start, 1
    while present(low + step):
        low += step
        step *= 2
    return _bisect(low, low + step, present)[0]


def first_present_below(start: int, present: Callable[[int], bool]) -> int:
    """The smallest id of the contiguous run of present ids that contains ``start`` (present)."""
    high, step = start, 1
    while high - step >= 1 and present(high - step):
        high -= step
        step *= 2
    return _bisect(max(0, high - step), high, lambda i: not present(i))[1]


def first_present_between(absent: int, present_id: int, present: Callable[[int], bool]) -> int:
    """The smallest present id in ``(absent, present_id]``, where ids are absent up to some
    point and present from there on."""
    return _bisect(absent, present_id, lambda i: not present(i))[1]

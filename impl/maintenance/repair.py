"""Checking a table's metadata (``doctor``) and moving it back from a damaged latest snapshot
(``repair``).

A snapshot is *readable* when its file parses and holds its id, its schema loads, and its
manifest lists, the manifests in them and its index manifest are there and parse (sizes and
entry counts checked, as on every read path). The newest readable snapshot is where a damaged
table can go back to without losing anything a reader could still see.

:func:`diagnose` names every damaged file that a present snapshot, a tag or a hint refers to
and what it breaks. :func:`plan_repair` and :func:`apply_repair` move the table back: every
snapshot file above the newest readable snapshot (each is damaged, or that snapshot would be
the newest readable one) is set aside, newest first, then the LATEST hint is rewritten.

Setting aside, not deleting: a damaged file is copied to ``snapshot/damaged-snapshot-<id>-<hash>``
(a name no reader lists: Paimon's and ours only take ``snapshot-<digits>``, and orphan cleanup
never touches the snapshot directory), then the original goes. The bytes stay for whoever wants
to find out what happened, or to put back a file that was only unreadable for a while; the
content hash in the name makes a re-run after a crash write the same name again. Nothing else
is deleted: manifests and data files that only the set-aside snapshots used are left to
``remove_orphan_files``, which keeps everything a readable snapshot or tag references.

Crash safety: nothing is written before everything is read and checked. Each set-aside is copy
then delete, newest first, so after a crash the snapshot ids present stay one contiguous range
whose newest is either still the damaged one (a re-run finishes) or readable. The LATEST hint is
written last; readers never trust a hint over the files, so a stale one only costs a probe.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import posixpath
from dataclasses import dataclass
from typing import Callable, Iterable

from impl.errors import CorruptMetadataError, TableNotRepairableError, UnsupportedVersionError
from impl.fs.file_io import FileIO
from impl.fs.paths import EARLIEST_HINT, LATEST_HINT
from impl.manifest.records import ManifestFileMeta
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import Snapshot
from impl.snapshot.references import SnapshotFileReader
from impl.tag.manager import TagManager

QUARANTINE_PREFIX = "damaged-snapshot-"


class Role(enum.Enum):
    """What a damaged file is to the table."""

    SNAPSHOT = "snapshot"
    SCHEMA = "schema"
    MANIFEST_LIST = "manifest list"
    MANIFEST = "manifest"
    INDEX_MANIFEST = "index manifest"
    TAG = "tag"
    HINT = "hint"


@dataclass(frozen=True)
class Damage:
    """One damaged (missing, truncated, garbage) file and what it breaks."""

    path: str
    role: Role
    reason: str
    breaks: str  # e.g. "snapshot 3 (the latest)", "tag t1"
    unsupported: bool = False  # written in a format version this library does not read: not damage to undo


@dataclass(frozen=True)
class TableHealth:
    """What :func:`diagnose` found."""

    latest_id: int | None  # newest snapshot file present
    readable_id: int | None  # newest readable snapshot
    damages: tuple[Damage, ...]
    checked_snapshots: int
    checked_tags: int

    @property
    def healthy(self) -> bool:
        return not self.damages


@dataclass(frozen=True)
class RepairPlan:
    """Move the table back to snapshot ``target_id``: set aside ``quarantine`` (snapshot path,
    new path), newest first. Empty ``quarantine``: nothing to do (the hints are still rewritten)."""

    target_id: int | None
    quarantine: tuple[tuple[str, str], ...]


class MetadataChecker:
    """Reads every metadata file a snapshot needs, each distinct file once per checker (snapshots
    share manifest lists and manifests), and says what is damaged."""

    def __init__(self, reader: SnapshotFileReader, load_schema: Callable[[int], object]):
        self.reader = reader
        self.load_schema = load_schema
        self._lists: dict[str, list[ManifestFileMeta] | Damage] = {}
        self._seen: dict[str, Damage | None] = {}

    def damages(self, snap: Snapshot, breaks: str) -> list[Damage]:
        """The damaged files among those ``snap`` needs to be read (empty: it is readable)."""
        paths = self.reader.paths
        out: list[Damage] = []
        d = self._once(f"schema:{snap.schema_id}", paths.schema_path(snap.schema_id), Role.SCHEMA, breaks,
                       lambda: self.load_schema(snap.schema_id))
        out += [d] if d else []
        for name, size in ((snap.base_manifest_list, snap.base_manifest_list_size),
                           (snap.delta_manifest_list, snap.delta_manifest_list_size),
                           (snap.changelog_manifest_list, snap.changelog_manifest_list_size)):
            if not name:
                continue
            if name not in self._lists:
                try:
                    self._lists[name] = self.reader.manifest_list.read(name, size)
                except (CorruptMetadataError, FileNotFoundError) as e:
                    self._lists[name] = _damage(paths.manifest_path(name), Role.MANIFEST_LIST, e, breaks)
            got = self._lists[name]
            if isinstance(got, Damage):
                out.append(got)
                continue
            for meta in got:
                d = self._once(f"manifest:{meta.file_name}", paths.manifest_path(meta.file_name), Role.MANIFEST,
                               breaks, functools.partial(self.reader.manifest_file.read_manifest, meta))
                out += [d] if d else []
        if snap.index_manifest:
            name = snap.index_manifest
            d = self._once(f"index:{name}", paths.manifest_path(name), Role.INDEX_MANIFEST, breaks,
                           lambda: self.reader.index_manifest_file.read(name))
            out += [d] if d else []
        return out

    def _once(self, key: str, path: str, role: Role, breaks: str, read: Callable[[], object]) -> Damage | None:
        if key not in self._seen:
            try:
                read()
                self._seen[key] = None
            except (CorruptMetadataError, FileNotFoundError) as e:
                self._seen[key] = _damage(path, role, e, breaks)
        return self._seen[key]


def _damage(path: str, role: Role, error: Exception, breaks: str) -> Damage:
    if isinstance(error, CorruptMetadataError):
        path, reason = error.path, error.reason
    else:
        reason = "is missing"
    return Damage(path, role, reason, breaks, isinstance(error, UnsupportedVersionError))


def read_snapshot(sm: SnapshotManager, sid: int, breaks: str) -> Snapshot | Damage | None:
    """Snapshot ``sid``, the damage of its file, or None if the file is gone."""
    try:
        return sm.try_snapshot(sid)
    except CorruptMetadataError as e:
        return _damage(sm.snapshot_path(sid), Role.SNAPSHOT, e, breaks)


def snapshot_damages(sm: SnapshotManager, checker: MetadataChecker, sid: int, latest: int) -> list[Damage]:
    """What is damaged of snapshot ``sid`` (empty: readable, or gone meanwhile)."""
    breaks = f"snapshot {sid}" + (" (the latest)" if sid == latest else "")
    got = read_snapshot(sm, sid, breaks)
    if got is None:
        return []
    if isinstance(got, Damage):
        return [got]
    return checker.damages(got, breaks)


def hint_damages(file_io: FileIO, sm: SnapshotManager) -> list[Damage]:
    """A LATEST / EARLIEST hint that is there but holds no snapshot id (readers ignore such a
    hint and list the directory instead, so it costs requests, never correctness)."""
    out = []
    for name in (LATEST_HINT, EARLIEST_HINT):
        path = sm.paths.hint_path(name)
        try:
            text = file_io.read_bytes(path).decode("ascii", "replace").strip()
        except FileNotFoundError:
            continue
        if not (text.isascii() and text.isdigit() and int(text) > 0):
            out.append(Damage(path, Role.HINT, f"holds {text[:40]!r}, not a snapshot id",
                              "nothing (readers list the snapshot directory instead)"))
    return out


def diagnose(file_io: FileIO, sm: SnapshotManager, tags: TagManager, checker: MetadataChecker) -> TableHealth:
    """Read every present snapshot of the branch, every tag and the hints; name what is damaged.

    Work is one read per snapshot, tag and hint and one per distinct metadata file they
    reference (data files are not opened)."""
    ids = sm.snapshot_ids()
    latest = ids[-1] if ids else None
    damages: list[Damage] = []
    readable: int | None = None
    for sid in reversed(ids):
        found = snapshot_damages(sm, checker, sid, latest or 0)
        damages += found
        if not found and readable is None and sm.snapshot_exists(sid):
            readable = sid
    names = tags.tag_names()
    for name in names:
        try:
            tag = tags.try_get(name)
        except CorruptMetadataError as e:
            damages.append(_damage(tags.tag_path(name), Role.TAG, e, f"tag {name}"))
            continue
        if tag is not None:
            damages += checker.damages(tag.snapshot, f"tag {name}")
    damages += hint_damages(file_io, sm)
    return TableHealth(latest, readable, tuple(dict.fromkeys(damages)), len(ids), len(names))


def quarantine_path(snapshot_path: str, data: bytes) -> str:
    """Where a damaged snapshot file is set aside: beside it, under a name no reader lists,
    the same for the same bytes (a re-run after a crash writes the same file)."""
    directory, name = posixpath.split(snapshot_path)
    sid = name.rsplit("-", 1)[-1]
    return posixpath.join(directory, f"{QUARANTINE_PREFIX}{sid}-{hashlib.sha256(data).hexdigest()[:16]}")


def plan_repair(sm: SnapshotManager, checker: MetadataChecker) -> RepairPlan:
    """What :func:`apply_repair` does: walk down from the newest snapshot file to the first
    readable one. Reads only, so a refusal changes nothing.

    TableNotRepairableError if no snapshot is readable (roll back to a tag instead), or if one
    above it is only written in a format version this library does not read (not damaged)."""
    ids = sm.snapshot_ids()
    if not ids:
        return RepairPlan(None, ())
    aside: list[tuple[str, str]] = []
    for sid in reversed(ids):
        found = snapshot_damages(sm, checker, sid, ids[-1])
        if not found:
            if sm.snapshot_exists(sid):
                return RepairPlan(sid, tuple(aside))
            continue
        unsupported = [d for d in found if d.unsupported]
        if unsupported:
            raise TableNotRepairableError(sm.table_path, f"snapshot {sid} needs {unsupported[0].path}, written in a "
                                          f"format this library does not read ({unsupported[0].reason}); "
                                          "it is not damaged, so it is not set aside")
        path = sm.snapshot_path(sid)
        aside.append((path, quarantine_path(path, sm.file_io.read_bytes(path))))
    raise TableNotRepairableError(sm.table_path, f"none of its {len(ids)} snapshots is readable; "
                                  "roll back to a tag (rollback_to / paimon-py rollback-to --tag) instead")


def set_aside(file_io: FileIO, path: str, new_path: str) -> None:
    """Copy ``path`` to ``new_path``, then delete ``path`` (both idempotent: a re-run after a
    crash between them finishes the move)."""
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError:
        return  # already moved by an earlier run
    file_io.write_bytes(new_path, data)
    file_io.delete(path)


def apply_repair(sm: SnapshotManager, plan: RepairPlan) -> None:
    """Carry out ``plan`` (module docstring: the order is what makes it crash-safe)."""
    for path, new_path in plan.quarantine:
        set_aside(sm.file_io, path, new_path)
    if plan.target_id is not None:
        sm.commit_hint(LATEST_HINT, plan.target_id)
        earliest = sm.earliest_snapshot_id()
        if earliest is not None:
            sm.commit_hint(EARLIEST_HINT, earliest)


def damaged_newer(sm: SnapshotManager, ids: Iterable[int]) -> dict[int, str]:
    """Of snapshot files ``ids``, those whose file cannot be read (not an unsupported version),
    by id, with where :func:`set_aside` puts each (for a rollback past them)."""
    out: dict[int, str] = {}
    for sid in ids:
        got = read_snapshot(sm, sid, f"snapshot {sid}")
        if isinstance(got, Damage):
            if got.unsupported:
                raise TableNotRepairableError(sm.table_path, f"snapshot {sid} is written in a format this library "
                                              f"does not read ({got.reason}); not rolling back past it")
            path = sm.snapshot_path(sid)
            out[sid] = quarantine_path(path, sm.file_io.read_bytes(path))
    return out


__all__ = ["Damage", "MetadataChecker", "QUARANTINE_PREFIX", "RepairPlan", "Role", "TableHealth", "apply_repair",
           "damaged_newer", "diagnose", "hint_damages", "plan_repair", "quarantine_path",
           "read_snapshot", "set_aside", "snapshot_damages"]

"""Table-level tag operations: which snapshot a new tag keeps, and the ``$tags`` rows."""

from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import replace

from impl.errors import InvalidOptionError, NoSnapshotError, SnapshotNotExistError, TagAlreadyExistError
from impl.options.values import parse_duration_millis
from impl.snapshot.records import Snapshot
from impl.store.core import TableCore
from impl.tag.manager import TagManager
from impl.tag.tag import Tag, check_tag_name


def parse_time_retained(value: _dt.timedelta | str | None) -> _dt.timedelta | None:
    """A tag's retention: a timedelta, or a duration such as ``"1 d"`` / ``"12h"``."""
    if value is None or isinstance(value, _dt.timedelta):
        if value is not None and value < _dt.timedelta(0):
            raise InvalidOptionError(f"time_retained {value!r} is negative; a retention must be >= 0")
        return value
    if not isinstance(value, str):
        raise InvalidOptionError(f"time_retained {value!r} is neither a timedelta nor a duration such as '1 d'")
    return _dt.timedelta(milliseconds=parse_duration_millis("time_retained", value))


def snapshot_to_tag(core: TableCore, snapshot_id: int | None) -> Snapshot:
    """The snapshot a new tag keeps: the latest, or ``snapshot_id``; an expired id only while
    another tag of the branch still holds it (Paimon's findSnapshot)."""
    sm = core.snapshot_manager
    if snapshot_id is None:
        latest = sm.latest_snapshot()
        if latest is None:
            raise NoSnapshotError(core.identifier, "commit before tagging the latest snapshot")
        return latest
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise InvalidOptionError(f"snapshot_id {snapshot_id!r} is not an integer snapshot id")
    snap = sm.try_snapshot(snapshot_id)
    if snap is not None:
        return snap
    for tag in core.tag_manager.tags():
        if tag.snapshot.id == snapshot_id:
            return tag.snapshot
    raise SnapshotNotExistError(core.identifier, snapshot_id)


def create_tag(core: TableCore, name: str, snapshot_id: int | None,
               time_retained: _dt.timedelta | str | None, ignore_if_exists: bool) -> Tag:
    name = check_tag_name(name)
    retained = parse_time_retained(time_retained)
    tags = core.tag_manager
    if ignore_if_exists:
        existing = tags.try_get(name)
        if existing is not None:
            return existing
    for _ in range(_TAG_ATTEMPTS):
        snap = snapshot_to_tag(core, snapshot_id)
        try:
            # Through a pending tag: an expiration may delete the snapshot between reading it
            # and writing the tag and, having read the tags before this one existed, its files
            # too (apache/paimon#9220). Expiration reads the tags and pending tags again after
            # deleting snapshot files, so a snapshot still there once the pending tag is written
            # keeps its files; one gone is not tagged. A creator dying midway leaves a pending
            # file, never a tag whose files may be gone.
            tag = tags.create(name, snap, retained, now=None if retained is None else core.now_local(),
                              confirm=functools.partial(_still_held, core, name, snap.id),
                              new_id=core.env.new_id)
        except TagAlreadyExistError:
            if ignore_if_exists:  # lost a race to a creator of the same name
                return tags.get(name)
            raise
        if tag is not None:
            return tag
        if snapshot_id is not None:
            raise SnapshotNotExistError(core.identifier, snap.id)
    raise SnapshotNotExistError(core.identifier, snap.id)


_TAG_ATTEMPTS = 3  # tagging "the latest", each attempt lost to an expiration of what it read


def _still_held(core: TableCore, name: str, snapshot_id: int) -> bool:
    """Whether the snapshot a new tag keeps is still present, or kept by another tag."""
    if core.snapshot_manager.snapshot_exists(snapshot_id):
        return True
    return any(t.snapshot.id == snapshot_id for t in core.tag_manager.tags() if t.name != name)


def tags_with_branches(core: TableCore) -> list[Tag]:
    """The tags of the table's branch, by name, each with ``branches``: the branches created
    from it (they hold a copy of it, as Paimon's TagsTable finds them)."""
    branch_tags: dict[str, list[str]] = {}
    for branch in core.branch_manager.branches():
        for name in TagManager(core.file_io, core.paths.with_branch(branch)).tag_names():
            branch_tags.setdefault(name, []).append(branch)
    return [replace(tag, branches=tuple(b for b in branch_tags.get(tag.name, ()) if b != core.branch))
            for tag in core.tag_manager.tags()]

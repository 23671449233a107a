"""Orphan-file removal, rollback and tag deletion.

All rest on :func:`used_file_names`: every file name a present snapshot references, by the
rule of :mod:`impl.snapshot.references` (shared with expiration). Files are shared between
the branches of a table and kept by tags, so what the whole table still needs
(:func:`table_used_names`) is the union over every branch (main included) of its present
snapshots and of its tags; nothing in that union is ever deleted.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from impl.branch.manager import BranchManager
from impl.errors import CorruptMetadataError, SnapshotNotExistError
from impl.fs.file_io import FileStatus
from impl.fs.names import BranchName
from impl.fs.paths import EARLIEST_HINT, LATEST_HINT, MAIN_BRANCH, PENDING_TAG_PREFIX, TAG_DIR_NAME, TablePaths
from impl.maintenance.repair import MetadataChecker, damaged_newer, set_aside
from impl.snapshot.expire import tags_to_skip
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import Snapshot
from impl.snapshot.references import Missing, PartitionPathOf, SnapshotFileReader, SnapshotFiles
from impl.store.core import TableCore
from impl.tag.manager import TagManager
from impl.tag.tag import Tag


def snapshot_file_reader(core: TableCore) -> SnapshotFileReader:
    return SnapshotFileReader(core.manifest_list, core.manifest_file,
                              core.index_manifest_file, core.paths)


def used_file_names(core: TableCore, snapshots: Iterable[Snapshot] | None = None,
                    snapshot_manager: SnapshotManager | None = None) -> set[str]:
    """Every file name the given (default: all present snapshots of ``snapshot_manager``'s
    branch, by default the table's) snapshots reference.

    CorruptMetadataError if a metadata file of one of them is missing or corrupt: a present
    snapshot must be complete, and guessing would delete files it needs.
    """
    reader = snapshot_file_reader(core)
    used: set[str] = set()
    if snapshots is not None:
        for snap in snapshots:
            used |= reader.files(snap, Missing.RAISE).names()
        return used
    # Every present snapshot, in increasing id order, then those published since the listing,
    # until none is new: a concurrent commit's snapshot may carry older manifests forward. A
    # snapshot expired while we read it is skipped: expiration goes in increasing id order, so
    # whatever it referenced that is still in use, a later snapshot we read references too.
    # (Both found by the deterministic explorer's orphan-removal actor.)
    sm = snapshot_manager or core.snapshot_manager
    ids = sm.snapshot_ids()
    seen = 0
    while ids:
        for sid in ids:
            present = sm.try_snapshot(sid)
            if present is None:
                continue
            try:
                used |= reader.files(present, Missing.RAISE).names()
            except CorruptMetadataError:
                if sm.snapshot_exists(sid):
                    raise
        seen = max(seen, ids[-1])
        latest = sm.latest_snapshot_id()
        ids = list(range(seen + 1, latest + 1)) if latest is not None else []
    return used


def all_branches(core: TableCore) -> list[BranchName]:
    """``main`` and every branch of the table."""
    return [MAIN_BRANCH, *BranchManager(core.file_io, core.path).branches()]


def all_tags(core: TableCore) -> list[tuple[str, Tag]]:
    """(branch, tag) for every tag of every branch."""
    out: list[tuple[str, Tag]] = []
    for branch in all_branches(core):
        out.extend((branch, t) for t in TagManager(core.file_io, core.paths.with_branch(branch)).tags())
    return out


def tag_names_used(core: TableCore, tags: Iterable[Tag], missing: Missing = Missing.RAISE) -> set[str]:
    """Every file name the given tags reference (each distinct snapshot read once).

    A tag must be complete: CorruptMetadataError if a file it needs is missing. A pending tag
    may not be (``Missing.SKIP``): its creator confirms the snapshot only after writing it.
    """
    reader = snapshot_file_reader(core)
    used: set[str] = set()
    seen: set[Snapshot] = set()
    for tag in tags:
        if tag.snapshot not in seen:
            seen.add(tag.snapshot)
            used |= reader.files(tag.snapshot, missing).names()
    return used


def protected_names(core: TableCore) -> Callable[[int, int], frozenset[str]]:
    """What expiring snapshots ``begin .. end - 1`` of the table's branch must not delete (a
    function of the range, called by the expiration only when it has something to expire):
    the files of the branch's tags :func:`impl.snapshot.expire.tags_to_skip` selects (Paimon's
    skipping tags), and of every tag and present snapshot of the other branches, which share
    files with this one (created from its tags, or fast-forwarded to).

    The expiration calls it twice (before and after deleting the snapshot files); the second
    call costs one listing of the tag directory unless a tag (or pending tag: one being
    created, whose snapshot may be only partly there) was created in between."""
    last: list[tuple[frozenset[str], frozenset[str]]] = []  # (tag names, protected names) of the last call

    def protect(begin: int, end: int) -> frozenset[str]:
        if last and frozenset(core.file_io.list_names(core.paths.tag_dir)) <= last[0][0]:
            return last[0][1]
        own, pending, listed = core.tag_manager.protecting_tags()
        wanted = set(tags_to_skip([t.snapshot.id for t in [*own, *pending]], begin, end))
        used = tag_names_used(core, (t for t in own if t.snapshot.id in wanted))
        used |= tag_names_used(core, (t for t in pending if t.snapshot.id in wanted), Missing.SKIP)
        names = frozenset(used | other_branches_used_names(core))
        last[:] = [(listed, names)]
        return names
    return protect


def table_used_names(core: TableCore, ignored_pending: frozenset[str] = frozenset()) -> set[str]:
    """Every file name any present snapshot, tag or pending tag of any branch references
    (pending tags whose file name is in ``ignored_pending`` aside).

    Each branch's tags and pending tags come from one reading (TagManager.protecting_tags), so
    a pending tag published between reading the tags and reading the pending ones is not missed."""
    used: set[str] = set()
    tags: list[Tag] = []
    pending: list[Tag] = []
    for branch in all_branches(core):
        used |= used_file_names(core, snapshot_manager=SnapshotManager(core.file_io, core.paths.with_branch(branch)))
        own, waiting, _ = TagManager(core.file_io, core.paths.with_branch(branch)).protecting_tags()
        tags += own
        pending += (t for t in waiting if t.name not in ignored_pending)
    return used | tag_names_used(core, tags) | tag_names_used(core, pending, Missing.SKIP)


def _older_than(f: FileStatus, millis: int) -> bool:
    return f.modified_millis is not None and f.modified_millis < millis


def _is_pending_tag(path: str) -> bool:
    """A pending tag file of any branch's tag directory (see impl.tag.manager)."""
    return (posixpath.basename(path).startswith(PENDING_TAG_PREFIX)
            and posixpath.basename(posixpath.dirname(path)) == TAG_DIR_NAME)


def _is_candidate(core: TableCore, path: str) -> bool:
    """Files orphan cleanup may touch: data / changelog files in bucket directories, manifests,
    index files, and dot-prefixed temp files. Never schema, snapshot, tag, branch or hint files."""
    rel = posixpath.relpath(path, core.path)
    parts = rel.split("/")
    name = parts[-1]
    if name.startswith(".") and name.endswith(".tmp"):
        return True
    if parts[0] in ("schema", "snapshot", "tag", "branch"):
        return False
    if parts[0] in ("manifest", "index") and len(parts) == 2:
        return True
    return len(parts) >= 2 and parts[-2].startswith("bucket-")


def remove_orphan_files(core: TableCore, older_than_millis: int, dry_run: bool = False) -> list[str]:
    """Delete unreferenced files last modified before ``older_than_millis``, and pending tags
    as old (left by tag creators that died before publishing, see impl.tag.manager) with the
    files only they kept; return their paths (``dry_run``: the paths only, nothing deleted)."""
    walked = core.file_io.walk_files(core.path)  # every branch's tag directory is under the table's
    # pending tags left by creators that died (a creation takes seconds): deleted with the files
    # only they kept
    stale = sorted(f.path for f in walked if _is_pending_tag(f.path) and _older_than(f, older_than_millis))
    files = [f for f in walked if _is_candidate(core, f.path)]
    doomed: list[str] = []
    if files:
        # raises before deleting anything if a snapshot or tag is unreadable
        used = table_used_names(core, frozenset(posixpath.basename(p) for p in stale))
        doomed = [f.path for f in files
                  if posixpath.basename(f.path) not in used and _older_than(f, older_than_millis)]
    if not dry_run:
        core.file_io.delete_quietly(stale + doomed)
    return stale + doomed


# ============================================================================ rollback


@dataclass(frozen=True)
class RollbackPlan:
    """What rolling back to ``target_id`` removes.

    ``snapshot_ids`` are the newer snapshots, newest first (deleted in that order, a crash
    leaves a contiguous range); ``candidates`` maps the name of every file they reference to
    its path. Which candidates go is known only once they are gone: :meth:`files_to_delete`.
    """

    target_id: int
    snapshot_ids: tuple[int, ...]
    candidates: Mapping[str, str]

    def files_to_delete(self, still_used: Iterable[str]) -> list[str]:
        """Paths of the candidates no remaining snapshot references."""
        keep = set(still_used)
        return [p for name, p in self.candidates.items() if name not in keep]


def plan_rollback(target_id: int, newer: Sequence[SnapshotFiles], table_paths: TablePaths,
                  partition_path_of: PartitionPathOf) -> RollbackPlan:
    """The rollback to ``target_id`` given what each newer snapshot references (pure)."""
    candidates: dict[str, str] = {}
    for files in sorted(newer, key=lambda f: f.snapshot_id):
        candidates.update(files.paths(table_paths, partition_path_of))
    ids = tuple(sorted((f.snapshot_id for f in newer), reverse=True))
    return RollbackPlan(target_id, ids, candidates)


def rollback_to(core: TableCore, target: int | str) -> list[str]:
    """Make snapshot ``target`` (an id) or the snapshot of tag ``target`` (a name) the latest.

    Paimon's RollbackHelper, after everything is read and checked (a target whose metadata
    cannot be read is refused with CorruptMetadataError before anything is written): the
    LATEST hint is set, newer snapshot files are deleted newest first (a crash leaves a
    contiguous range whose newest is read; a newer snapshot whose file cannot be read is set
    aside as impl.maintenance.repair does, and what only it used is left to orphan removal), then the tags of
    newer snapshots, then the files that only the removed snapshots referenced (nothing any
    remaining snapshot or tag of any branch uses). A tag whose snapshot expired is first
    written back as ``snapshot-<id>`` (EARLIEST hint set to it), so the table always has a
    snapshot to read. An id whose snapshot expired is taken from a tag of that id. Returns
    the deleted data / metadata file paths. Not safe while other writers commit.
    """
    sm = core.snapshot_manager
    tags = core.tag_manager
    if isinstance(target, str):
        snap = tags.get(target).snapshot  # TagNotExistError
    else:
        present = sm.try_snapshot(target)  # CorruptMetadataError for a damaged target: nothing changed
        if present is None:
            held = [t for t in tags.tags() if t.snapshot.id == target]
            if not held:
                raise SnapshotNotExistError(core.identifier, target)
            present = held[0].snapshot
        snap = present
    # everything is read and checked before anything is written: a refused rollback changes nothing
    target_damage = metadata_checker(core).damages(snap, f"snapshot {snap.id} (the rollback's target)")
    if target_damage:
        raise CorruptMetadataError(target_damage[0].path, f"{target_damage[0].reason}; the rollback's target, "
                                   f"snapshot {snap.id}, cannot be read, so the table is not rolled back to it")
    reader = snapshot_file_reader(core)
    newer_ids = [i for i in sm.snapshot_ids() if i > snap.id]
    # a newer snapshot whose file is damaged is set aside, not read (see impl.maintenance.repair);
    # what only it used stays for remove_orphan_files
    damaged = damaged_newer(sm, newer_ids)
    # a file of a newer snapshot already gone (an interrupted rollback) only cannot be deleted again
    newer = [_files_or_none(reader, s) for s in (sm.try_snapshot(i) for i in newer_ids if i not in damaged)
             if s is not None]
    newer_tags = [t for t in tags.tags() if t.snapshot.id > snap.id]
    newer += [_files_or_none(reader, t.snapshot) for t in newer_tags]
    plan = plan_rollback(snap.id, [f for f in newer if f is not None], core.paths, core.partition_cache.path)
    if not sm.snapshot_exists(snap.id):
        # expired: write the tag's copy back first, so a crash below still leaves it readable
        core.file_io.try_write_atomic(core.paths.snapshot_path(snap.id), snap.to_json_bytes())
        sm.commit_hint(EARLIEST_HINT, snap.id)
    sm.commit_hint(LATEST_HINT, snap.id)
    for sid in sorted(newer_ids, reverse=True):
        if sid in damaged:
            set_aside(core.file_io, core.paths.snapshot_path(sid), damaged[sid])
        else:
            core.file_io.delete(core.paths.snapshot_path(sid))
    for t in newer_tags:
        tags.delete_file(t.name)
    sm.commit_hint(LATEST_HINT, snap.id)
    doomed = plan.files_to_delete(table_used_names(core))
    core.file_io.delete_quietly(doomed)
    return doomed


def _files_or_none(reader: SnapshotFileReader, snap: Snapshot) -> SnapshotFiles | None:
    """What a snapshot that is being dropped references, or None if a metadata file of it is
    corrupt (its files are then unknown: they stay, for remove_orphan_files)."""
    try:
        return reader.files(snap, Missing.SKIP)
    except CorruptMetadataError:
        return None


def metadata_checker(core: TableCore) -> MetadataChecker:
    """A checker of the table's snapshot metadata (impl.maintenance.repair)."""
    return MetadataChecker(snapshot_file_reader(core), core.schema_manager.schema)


def cleanup_neighbours(tag_id: int, other_tag_ids: Sequence[int], earliest_id: int | None) -> tuple[int | None, int | None]:
    """Which snapshots can still need the files of a deleted tag of expired snapshot ``tag_id``
    (Paimon's TagManager.doClean): the newest other tag below it, and the nearest of the
    earliest snapshot and the oldest other tag above it, as (left tag id, right id). A file is
    live over one contiguous range of snapshots, so if any retained snapshot or other tag of
    the branch holds a file of the tag, one of these two does."""
    left = max((i for i in other_tag_ids if i < tag_id), default=None)
    right = min((i for i in (*other_tag_ids, *([earliest_id] if earliest_id is not None else ())) if i > tag_id),
                default=None)
    return left, right


def delete_tag(core: TableCore, name: str) -> list[str]:
    """Delete tag ``name`` and the files only it kept; return the deleted paths.

    As Paimon's TagManager.deleteTag: if the tagged snapshot is still present, or another tag
    keeps the same snapshot, only the tag file goes. Otherwise the tag's files that neither its
    neighbours (:func:`cleanup_neighbours`) nor any tag or present snapshot of another branch
    references are deleted, after the tag file. What to keep is read before anything is
    deleted, so an unreadable neighbour stops the call with nothing changed.
    """
    tags = core.tag_manager
    sm = core.snapshot_manager
    tag = tags.get(name)  # TagNotExistError
    others = [t for t in tags.tags() if t.name != name]
    if sm.try_snapshot(tag.snapshot.id) == tag.snapshot or any(t.snapshot == tag.snapshot for t in others):
        # (compared, not only probed: an id re-used after a rollback holds another snapshot)
        tags.delete_file(name)
        return []
    reader = snapshot_file_reader(core)
    files = reader.files(tag.snapshot, Missing.SKIP)
    earliest = sm.earliest_snapshot()
    if earliest is not None and earliest.id < tag.snapshot.id:
        # not one linear history (an id re-used after a rollback): check everything else
        used = used_file_names(core) | tag_names_used(core, others) | other_branches_used_names(core)
    else:
        left, right = cleanup_neighbours(tag.snapshot.id, [t.snapshot.id for t in others],
                                         earliest.id if earliest is not None else None)
        keep = [t.snapshot for t in others if t.snapshot.id in (left, right)]
        if earliest is not None and earliest.id == right:
            keep.append(earliest)
        used = set()
        for snap in dict.fromkeys(keep):
            used |= reader.files(snap, Missing.RAISE).names()
        used |= other_branches_used_names(core)
    tags.delete_file(name)
    candidates = files.paths(core.paths, core.partition_cache.path)
    doomed = [p for n, p in candidates.items() if n not in used]
    core.file_io.delete_quietly(doomed)
    return doomed


def other_branches_used_names(core: TableCore) -> set[str]:
    """Every file name a tag or present snapshot of a branch other than the table's references."""
    used: set[str] = set()
    for branch in all_branches(core):
        if branch != core.branch:
            paths = core.paths.with_branch(branch)
            used |= tag_names_used(core, TagManager(core.file_io, paths).tags())
            used |= used_file_names(core, snapshot_manager=SnapshotManager(core.file_io, paths))
    return used

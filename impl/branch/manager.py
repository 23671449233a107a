"""BranchManager: the branches of a table (``<table>/branch/branch-<name>/``), after Paimon's
FileSystemBranchManager.

A branch has its own ``schema/``, ``snapshot/`` and ``tag/`` directories; manifests, index
files and data files are shared with the table root. Facts carried over from Paimon:

- a branch made without a tag gets the schemas up to the current latest one and no snapshot:
  it starts empty. A branch made from a tag gets a copy of the tag, the tag's snapshot (from the
  snapshot file, or from the tag if that snapshot expired) and the schemas up to the
  snapshot's; its next commit is that snapshot's id + 1.
- names: not ``main``, not blank, not only digits (plus, here: usable as a directory name). The
  rule is :mod:`impl.fs.names`; every name given or listed goes through it.
- ``fast_forward(branch)`` makes the current branch (main) equal to the branch from the
  branch's earliest snapshot E on: main's snapshots >= E (newest first), its tags of snapshots
  >= E and its schemas above E's schema id are deleted, then the branch's schemas, snapshots
  (ascending) and tags are copied in. A crash leaves main readable (its snapshots below E, plus
  a prefix of the branch's); running ``fast_forward`` again completes it.
- deleting a branch deletes its directory; files only it referenced become orphans, which
  :meth:`impl.FileStoreTable.remove_orphan_files` removes.

A branch exists when its schema directory holds a schema file. Creation writes the snapshot
and tag first and the schemas last (highest id first), so a crash leaves either no branch or
one whose latest schema is in place; re-running ``create_branch`` after such a crash finds
the branch existing.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from impl.errors import (
    BranchAlreadyExistError,
    BranchNotExistError,
    BranchStateError,
    InvalidBranchNameError,
)
from impl.fs.file_io import FileIO
from impl.fs.names import BranchName, check_branch, check_new_branch, check_tag
from impl.fs.paths import BRANCH_PREFIX, EARLIEST_HINT, LATEST_HINT, MAIN_BRANCH, TablePaths
from impl.schema.manager import schema_ids_in
from impl.snapshot.manager import SnapshotManager
from impl.tag.manager import TagManager

# the rule for a new branch's name (kept under its old name; the rule lives in impl.fs.names)
check_branch_name = check_new_branch


@dataclass(frozen=True)
class BranchInfo:
    """One row of Paimon's ``$branches`` system table."""

    branch_name: str
    create_time: _dt.datetime | None  # modification time of the branch's oldest schema file (local)

    @property
    def name(self) -> str:
        return self.branch_name


class BranchManager:
    """Creates, lists, deletes and fast-forwards the branches of one table, from ``current``."""

    def __init__(self, file_io: FileIO, table_path: str, current: BranchName = MAIN_BRANCH,
                 table_name: str | None = None):
        self.file_io = file_io
        self.root = TablePaths(table_path)
        self.current = check_branch(current)
        self.paths = self.root.with_branch(self.current)
        self.table_name = table_name or table_path

    # ------------------------------------------------------------------ reading

    def branch_exists(self, name: str) -> bool:
        """Whether branch ``name`` exists (InvalidBranchNameError for a name no branch can have)."""
        branch = check_branch(name)
        if branch == MAIN_BRANCH:
            return True
        return bool(schema_ids_in(self.file_io, self.root.with_branch(branch).schema_dir))

    def branches(self) -> list[BranchName]:
        """Names of the branches (``main`` not included), sorted. A directory entry whose name
        breaks the name rule is refused (InvalidBranchNameError naming it), not used in a path
        nor skipped (skipping would let orphan removal delete the files it references)."""
        out = []
        for n in self.file_io.list_names(self.root.branches_dir):
            if n.startswith(BRANCH_PREFIX) and len(n) > len(BRANCH_PREFIX):
                name = check_branch(n[len(BRANCH_PREFIX):], where=self.root.branches_dir)
                if self.branch_exists(name):
                    out.append(name)
        return sorted(out)

    def branch_infos(self) -> list[BranchInfo]:
        out = []
        for name in self.branches():
            statuses = self.file_io.list_status(self.root.with_branch(name).schema_dir)
            times = [s.modified_millis for s in statuses if s.modified_millis is not None]
            created = _dt.datetime.fromtimestamp(min(times) / 1000) if times else None
            out.append(BranchInfo(name, created))
        return out

    def _require(self, name: BranchName) -> TablePaths:
        if not self.branch_exists(name):
            raise BranchNotExistError(self.table_name, name)
        return self.root.with_branch(name)

    # ------------------------------------------------------------------ create / delete

    def create_branch(self, name: str, tag_name: str | None = None, ignore_if_exists: bool = False) -> None:
        name = check_new_branch(name)
        tag = None if tag_name is None else check_tag(tag_name)  # refused before anything is written
        if self.branch_exists(name):
            if ignore_if_exists:
                return
            raise BranchAlreadyExistError(self.table_name, name)
        target = self.root.with_branch(name)
        if tag is None:
            ids = schema_ids_in(self.file_io, self.paths.schema_dir)
            if not ids:
                raise BranchStateError(f"table {self.table_name} has no schema to start branch {name!r} from")
            self._copy_schemas(target, ids[-1])
            return
        snap = TagManager(self.file_io, self.paths, self.table_name).get(tag).snapshot  # TagNotExistError
        # the snapshot file, or the tag's own copy of it if the snapshot expired
        self.file_io.write_bytes(target.snapshot_path(snap.id), snap.to_json_bytes())
        self.file_io.write_bytes(target.hint_path(EARLIEST_HINT), str(snap.id).encode("ascii"))
        self.file_io.write_bytes(target.hint_path(LATEST_HINT), str(snap.id).encode("ascii"))
        self.file_io.write_bytes(target.tag_path(tag), self.file_io.read_bytes(self.paths.tag_path(tag)))
        self._copy_schemas(target, snap.schema_id)

    def _copy_schemas(self, target: TablePaths, up_to: int) -> None:
        ids = [i for i in schema_ids_in(self.file_io, self.paths.schema_dir) if i <= up_to]
        for sid in sorted(ids, reverse=True):  # the latest first: see the module docstring
            self.file_io.write_bytes(target.schema_path(sid), self.file_io.read_bytes(self.paths.schema_path(sid)))

    def delete_branch(self, name: str) -> None:
        """Delete the branch's directory (its snapshots, schemas and tags)."""
        name = check_branch(name)
        if name == MAIN_BRANCH:
            raise InvalidBranchNameError(f"branch {name!r} cannot be deleted: it is the default branch",
                                         kind="branch", name=name)
        target = self._require(name)
        # schemas first: once they are gone the branch no longer exists, whatever a crash leaves
        for sid in schema_ids_in(self.file_io, target.schema_dir):
            self.file_io.delete(target.schema_path(sid))
        try:
            self.file_io.fs.rm(target.branch_dir, recursive=True)
        except FileNotFoundError:
            pass
        except OSError:  # what is left is unreferenced; the branch is gone already
            pass

    # ------------------------------------------------------------------ fast-forward

    def fast_forward(self, name: str) -> None:
        """Replace the current branch's history from the branch's earliest snapshot on by the branch's."""
        name = check_branch(name)
        if name == MAIN_BRANCH:
            raise InvalidBranchNameError(f"branch name {name!r} cannot be fast-forwarded from",
                                         kind="branch", name=name)
        if name == self.current:
            raise BranchStateError(f"cannot fast-forward branch {name!r} of {self.table_name} from itself")
        source = self._require(name)
        source_sm = SnapshotManager(self.file_io, source)
        earliest_id = source_sm.earliest_snapshot_id()
        if earliest_id is None:
            raise BranchStateError(
                f"cannot fast-forward to branch {name!r} of {self.table_name}: it has no snapshot")
        earliest_schema = source_sm.snapshot(earliest_id).schema_id
        sm = SnapshotManager(self.file_io, self.paths)
        tags = TagManager(self.file_io, self.paths, self.table_name)

        # delete the current branch's newer history, newest snapshot first (what is left stays contiguous)
        self.file_io.delete(self.paths.hint_path(LATEST_HINT))
        for sid in reversed(sm.snapshot_ids()):
            if sid >= earliest_id:
                self.file_io.delete(self.paths.snapshot_path(sid))
        for tag in list(tags.tags()):
            if tag.snapshot.id >= earliest_id:
                self.file_io.delete(tags.tag_path(tag.name))
        # Paimon deletes schemas >= E's and copies the branch's in; keeping E's own schema
        # (overwritten by the copy below) means a crash in between leaves main's remaining
        # snapshots, whose schemas are at most E's, with their schemas
        for sid in schema_ids_in(self.file_io, self.paths.schema_dir):
            if sid > earliest_schema:
                self.file_io.delete(self.paths.schema_path(sid))

        # copy the branch's: schemas before the snapshots that name them, snapshots in id order
        for sid in schema_ids_in(self.file_io, source.schema_dir):
            self._copy(source.schema_path(sid), self.paths.schema_path(sid))
        ids = source_sm.snapshot_ids()
        for sid in ids:
            self._copy(source.snapshot_path(sid), self.paths.snapshot_path(sid))
        for tag_name in TagManager(self.file_io, source).tag_names():
            self._copy(source.tag_path(tag_name), self.paths.tag_path(tag_name))
        if ids:
            sm.commit_hint(LATEST_HINT, ids[-1])
            if not sm.snapshot_exists(earliest_id - 1):
                sm.commit_hint(EARLIEST_HINT, earliest_id)

    def _copy(self, src: str, dst: str) -> None:
        try:
            data = self.file_io.read_bytes(src)
        except FileNotFoundError:  # expired on the branch while we copied
            return
        self.file_io.write_bytes(dst, data)


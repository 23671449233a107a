"""TagManager: the tags of one branch of a table (``<branch dir>/tag/tag-<name>``).

Creating a tag is one atomic create-if-absent of its file (the same primitive that publishes
snapshots), so two callers racing for a name never both win and a reader never sees half a
tag. Deleting a tag removes its file; the table layer then frees the files only that tag kept
(:func:`impl.maintenance.cleanup.delete_tag`).

A tag whose snapshot an expiration may be deleting is created through a *pending tag*
(``pending-tag-<id>``, the same JSON): written first, then the snapshot is confirmed to be
still there, then the tag is published and the pending file removed. An expiration keeps the
files of pending tags as it keeps those of tags (:meth:`TagManager.protecting_tags`), so a
tag published after its confirmation always finds its files, and a creator that dies
before publishing leaves a pending file, never a tag whose files may be gone (orphan removal
deletes pending files older than its threshold). Paimon lists ``tag-*`` files only.
"""

from __future__ import annotations

import datetime as _dt
import posixpath
from typing import Callable, Iterator

from impl.errors import TagAlreadyExistError, TagNotExistError, TagsUnsettledError
from impl.fs.file_io import FileIO
from impl.fs.names import TagName, check_tag
from impl.fs.paths import PENDING_TAG_PREFIX, TAG_PREFIX, TablePaths, random_id
from impl.snapshot.records import Snapshot
from impl.tag.tag import Tag


def tag_names_in(names: list[str], where: str) -> list[TagName]:
    """Tag names among the entries of tag directory ``where`` (temp files skipped), sorted. An
    entry whose name breaks the name rule is refused (InvalidTagNameError naming ``where``):
    a hostile writer's odd file is never used to build a path."""
    return sorted(check_tag(n[len(TAG_PREFIX):], where=where)
                  for n in names if n.startswith(TAG_PREFIX) and len(n) > len(TAG_PREFIX))


# listings of the tag directory an expiration tries while pending tags are being published
_PROTECTION_LISTINGS = 20


class TagManager:
    """Creates, reads, lists and deletes the tag files of one branch."""

    def __init__(self, file_io: FileIO, paths: TablePaths, table_name: str | None = None):
        self.file_io = file_io
        self.paths = paths
        self.table_name = table_name or paths.table_path

    def tag_path(self, name: str) -> str:
        """The tag's file (InvalidTagNameError for a name that breaks the name rule)."""
        return self.paths.tag_path(check_tag(name))

    def tag_exists(self, name: str) -> bool:
        return self.file_io.file_exists(self.tag_path(name))

    def try_get(self, name: str) -> Tag | None:
        """The tag, or None if it does not exist."""
        path = self.tag_path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            return None
        return Tag.from_json_bytes(name, data, path)

    def get(self, name: str) -> Tag:
        """The tag; TagNotExistError if it does not exist."""
        tag = self.try_get(name)
        if tag is None:
            raise TagNotExistError(self.table_name, name)
        return tag

    def tag_names(self) -> list[TagName]:
        return tag_names_in(self.file_io.list_names(self.paths.tag_dir), self.paths.tag_dir)

    def tags(self) -> Iterator[Tag]:
        """Every tag of the branch, by name (one deleted while listing is skipped)."""
        for name in self.tag_names():
            tag = self.try_get(name)
            if tag is not None:
                yield tag

    def create(self, name: str, snapshot: Snapshot, time_retained: _dt.timedelta | None = None,
               now: _dt.datetime | None = None, *, confirm: Callable[[], bool] | None = None,
               new_id: Callable[[], str] = random_id) -> Tag | None:
        """Write ``tag-<name>`` for ``snapshot`` if no tag has that name; TagAlreadyExistError if one has.

        With ``time_retained`` the tag records its creation time (local, as Java's
        LocalDateTime.now()) and retention; without, the file is the plain snapshot JSON.

        With ``confirm``, the tag goes through a pending tag (see the module): ``confirm()``
        runs once the pending file is written, and when it returns False nothing is published
        and the result is None. ``new_id`` names the pending file.
        """
        name = check_tag(name)
        created = None if time_retained is None else (now or _dt.datetime.now())
        tag = Tag(name, snapshot, created, time_retained)
        data = tag.to_json_bytes()
        if confirm is None:
            if not self.file_io.try_write_atomic(self.paths.tag_path(name), data):
                raise TagAlreadyExistError(self.table_name, name)
            return tag
        if self.tag_exists(name):
            raise TagAlreadyExistError(self.table_name, name)
        pending = self.paths.pending_tag_path(new_id())
        if not self.file_io.try_write_atomic(pending, data):  # whole or absent, as a tag
            raise FileExistsError(f"pending tag {pending} exists: its id was not new")
        try:
            if not confirm():
                return None
            if not self.file_io.try_write_atomic(self.paths.tag_path(name), data):
                raise TagAlreadyExistError(self.table_name, name)
            return tag
        finally:
            # only after the tag is published: an expiration listing the directory meanwhile
            # finds the pending file or the tag (see protecting_tags)
            self.file_io.delete_quietly([pending])

    def protecting_tags(self) -> tuple[list[Tag], list[Tag], frozenset[str]]:
        """(tags, pending tags, the file names listed): what an expiration keeps the files of.

        A pending file that vanishes between the listing and its read was published (or
        withdrawn) meanwhile; the directory is listed again then, so a tag published that way
        is never missed. TagsUnsettledError (nothing decided) if pending files keep vanishing."""
        for _ in range(_PROTECTION_LISTINGS):
            names = self.file_io.list_names(self.paths.tag_dir)
            tags: list[Tag] = []
            pending: list[Tag] = []
            vanished = False
            for n in sorted(names):
                if n.startswith(PENDING_TAG_PREFIX):
                    path = posixpath.join(self.paths.tag_dir, n)
                    try:
                        pending.append(Tag.from_json_bytes(n, self.file_io.read_bytes(path), path))
                    except FileNotFoundError:
                        vanished = True
                        break
            if vanished:
                continue
            for name in tag_names_in(names, self.paths.tag_dir):
                tag = self.try_get(name)
                if tag is not None:  # deleted since the listing
                    tags.append(tag)
            return tags, pending, frozenset(names)
        raise TagsUnsettledError(self.table_name, _PROTECTION_LISTINGS)

    def delete_file(self, name: str) -> None:
        """Remove the tag file (nothing else)."""
        self.file_io.delete(self.tag_path(name))

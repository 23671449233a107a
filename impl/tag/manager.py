"""TagManager: the tags of one branch of a table (``<branch dir>/tag/tag-<name>``).

Creating a tag is one atomic create-if-absent of its file (the same primitive that publishes
snapshots), so two callers racing for a name never both win and a reader never sees half a
tag. Deleting a tag removes its file; the table layer then frees the files only that tag kept
(:func:`impl.table.maintenance.delete_tag`).
"""

from __future__ import annotations

import datetime as _dt
from typing import Iterator

from impl.errors import TagAlreadyExistError, TagNotExistError
from impl.format.json_records import Snapshot
from impl.fs.file_io import FileIO
from impl.fs.paths import TAG_PREFIX, TablePaths
from impl.tag.tag import Tag, check_tag_name


def tag_names_in(names: list[str]) -> list[str]:
    """Tag names among the entries of a tag directory (temp files skipped), sorted."""
    return sorted(n[len(TAG_PREFIX):] for n in names if n.startswith(TAG_PREFIX) and len(n) > len(TAG_PREFIX))


class TagManager:
    """Creates, reads, lists and deletes the tag files of one branch."""

    def __init__(self, file_io: FileIO, paths: TablePaths, table_name: str | None = None):
        self.file_io = file_io
        self.paths = paths
        self.table_name = table_name or paths.table_path

    def tag_path(self, name: str) -> str:
        return self.paths.tag_path(check_tag_name(name))

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

    def tag_names(self) -> list[str]:
        return tag_names_in(self.file_io.list_names(self.paths.tag_dir))

    def tags(self) -> Iterator[Tag]:
        """Every tag of the branch, by name (one deleted while listing is skipped)."""
        for name in self.tag_names():
            tag = self.try_get(name)
            if tag is not None:
                yield tag

    def create(self, name: str, snapshot: Snapshot, time_retained: _dt.timedelta | None = None,
               now: _dt.datetime | None = None) -> Tag:
        """Write ``tag-<name>`` for ``snapshot`` if no tag has that name; TagAlreadyExistError if one has.

        With ``time_retained`` the tag records its creation time (local, as Java's
        LocalDateTime.now()) and retention; without, the file is the plain snapshot JSON.
        """
        check_tag_name(name)
        created = None if time_retained is None else (now or _dt.datetime.now())
        tag = Tag(name, snapshot, created, time_retained)
        if not self.file_io.try_write_atomic(self.paths.tag_path(name), tag.to_json_bytes()):
            raise TagAlreadyExistError(self.table_name, name)
        return tag

    def delete_file(self, name: str) -> None:
        """Remove the tag file (nothing else)."""
        self.file_io.delete(self.tag_path(name))

"""Tags and branches as ``$tags`` / ``$branches`` need them.

Tags come from :class:`impl.tag.TagManager`; branches are listed with their creation time as
Java's ``$branches`` shows it (the branch directory's modification time).

Layout (Paimon's TagManager / FileSystemBranchManager):

- ``<table>/tag/tag-<name>``: the tagged snapshot's JSON plus, optionally, ``tagCreateTime``
  (a Java ``LocalDateTime`` as ``[year, month, day, hour, minute, second, nano]``) and
  ``tagTimeRetained`` (a Java ``Duration`` as decimal seconds);
- ``<table>/branch/branch-<name>/``: one directory per branch (its own schema/, snapshot/ ...).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import posixpath
from dataclasses import dataclass

from impl.errors import FileIOError
from impl.fs.file_io import FileIO, mtime_millis
from impl.fs.paths import TablePaths
from impl.tag import Tag, TagManager

TAG_PREFIX = "tag-"
BRANCH_PREFIX = "branch-"


@dataclass(frozen=True)
class BranchInfo:
    """One branch: its name and when its directory was created (epoch millis, local clock)."""

    name: str
    create_time_millis: int


def list_tags(file_io: FileIO, paths: TablePaths) -> list[Tag]:
    """Every tag of the branch ``paths`` names, sorted by name (Paimon's TagManager)."""
    return list(TagManager(file_io, paths).tags())


def list_branches(file_io: FileIO, paths: TablePaths) -> list[BranchInfo]:
    """Every branch of the table, sorted by name. (Seam: becomes ``BranchManager.branches``.)

    The creation time is the branch directory's modification time, as Java reads it; object
    stores have no directories, so there it is the oldest file of the branch's ``schema/``
    (written when the branch was created), or 0 when even that is unknown.
    """
    branch_dir = posixpath.join(paths.table_path, "branch")
    try:
        entries = file_io.fs.ls(branch_dir, detail=True)
    except FileNotFoundError:
        return []
    except OSError as e:
        raise FileIOError(f"cannot list {branch_dir}: {e}") from e
    out = []
    for info in entries:
        base = posixpath.basename(str(info["name"]).rstrip("/"))
        if info.get("type") != "directory" or not base.startswith(BRANCH_PREFIX) or base == BRANCH_PREFIX:
            continue
        millis = mtime_millis(info)
        if millis is None:
            times = [s.modified_millis for s in file_io.list_status(posixpath.join(branch_dir, base, "schema"))
                     if s.modified_millis is not None]
            millis = min(times) if times else 0
        out.append(BranchInfo(base[len(BRANCH_PREFIX):], millis))
    return sorted(out, key=lambda b: b.name)


def duration_string(seconds: decimal.Decimal) -> str:
    """Java's ``Duration.toString``: ``PT24H``, ``PT1H30M``, ``PT0.5S``, ``PT0S``."""
    nanos = int((seconds * 1_000_000_000).to_integral_value())
    if nanos == 0:
        return "PT0S"
    sign = "-" if nanos < 0 else ""
    total_s, frac = divmod(abs(nanos), 1_000_000_000)
    hours, rem = divmod(total_s, 3600)
    minutes, secs = divmod(rem, 60)
    text = "PT"
    if hours:
        text += f"{sign}{hours}H"
    if minutes:
        text += f"{sign}{minutes}M"
    if secs or frac:
        text += f"{sign}{secs}"
        if frac:
            text += "." + f"{frac:09d}".rstrip("0")
        text += "S"
    return text


def timedelta_seconds(delta: _dt.timedelta) -> decimal.Decimal:
    """``delta`` as exact decimal seconds (no float rounding of the microseconds)."""
    return decimal.Decimal(delta.days * 86400 + delta.seconds) + decimal.Decimal(delta.microseconds) / 1_000_000


__all__ = ["BranchInfo", "list_tags", "list_branches", "duration_string", "timedelta_seconds"]

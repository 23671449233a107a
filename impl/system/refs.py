"""Tags and branches as ``$tags`` / ``$branches`` need them.

Tags come from :class:`impl.tag.TagManager`, branches (with their creation time: the oldest
file of the branch's ``schema/``, written when the branch was created, which object stores
without directory objects also keep) from :class:`impl.branch.BranchManager`.

Layout (Paimon's TagManager / FileSystemBranchManager):

- ``<table>/tag/tag-<name>``: the tagged snapshot's JSON plus, optionally, ``tagCreateTime``
  (a Java ``LocalDateTime`` as ``[year, month, day, hour, minute, second, nano]``) and
  ``tagTimeRetained`` (a Java ``Duration`` as decimal seconds);
- ``<table>/branch/branch-<name>/``: one directory per branch (its own schema/, snapshot/ ...).
"""

from __future__ import annotations

import datetime as _dt
import decimal

from impl.branch.manager import BranchInfo, BranchManager
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.tag import Tag, TagManager


def list_tags(file_io: FileIO, paths: TablePaths) -> list[Tag]:
    """Every tag of the branch ``paths`` names, sorted by name (Paimon's TagManager)."""
    return list(TagManager(file_io, paths).tags())


def list_branches(file_io: FileIO, paths: TablePaths) -> list[BranchInfo]:
    """Every branch of the table, sorted by name (Paimon's BranchManager; ``main`` not included)."""
    return BranchManager(file_io, paths.table_path).branch_infos()


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

"""Tags and branches as ``$tags`` / ``$branches`` need them, read straight from Paimon's layout.

This is the one seam between the system tables and tag / branch management: two small
functions. Once a TagManager / BranchManager exists, these two bodies become calls to it and
nothing else here changes.

Layout (Paimon's TagManager / FileSystemBranchManager):

- ``<table>/tag/tag-<name>``: the tagged snapshot's JSON plus, optionally, ``tagCreateTime``
  (a Java ``LocalDateTime`` as ``[year, month, day, hour, minute, second, nano]``) and
  ``tagTimeRetained`` (a Java ``Duration`` as decimal seconds);
- ``<table>/branch/branch-<name>/``: one directory per branch (its own schema/, snapshot/ ...).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import posixpath
from dataclasses import dataclass

from impl.errors import CorruptMetadataError, FileIOError
from impl.format.json_records import Snapshot
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths

TAG_PREFIX = "tag-"
BRANCH_PREFIX = "branch-"


@dataclass(frozen=True)
class TagInfo:
    """One tag: its name, the snapshot it holds and its retention metadata (None when absent)."""

    name: str
    snapshot: Snapshot
    create_time: _dt.datetime | None
    time_retained: decimal.Decimal | None  # seconds


@dataclass(frozen=True)
class BranchInfo:
    """One branch: its name and when its directory was created (epoch millis, local clock)."""

    name: str
    create_time_millis: int


def _local_date_time(value, path: str) -> _dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, str):  # ISO text, as some writers produce
        try:
            return _dt.datetime.fromisoformat(value)
        except ValueError as e:
            raise CorruptMetadataError(path, f"tagCreateTime {value!r} is not a date-time") from e
    if (not isinstance(value, list) or not 5 <= len(value) <= 7
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in value)):
        raise CorruptMetadataError(path, f"tagCreateTime {value!r} is not [y, mo, d, h, mi, s, ns]")
    y, mo, d, h, mi = value[:5]
    s = value[5] if len(value) > 5 else 0
    ns = value[6] if len(value) > 6 else 0
    try:
        return _dt.datetime(y, mo, d, h, mi, s, ns // 1000)
    except ValueError as e:
        raise CorruptMetadataError(path, f"tagCreateTime {value!r}: {e}") from e


def _duration_seconds(value, path: str) -> decimal.Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise CorruptMetadataError(path, f"tagTimeRetained {value!r} is not a number of seconds")
    try:
        return decimal.Decimal(str(value))
    except decimal.InvalidOperation as e:
        raise CorruptMetadataError(path, f"tagTimeRetained {value!r} is not a number of seconds") from e


def read_tag(data: bytes, name: str, path: str) -> TagInfo:
    """Parse one ``tag-<name>`` file (pure: bytes in, record out)."""
    snapshot = Snapshot.from_json_bytes(data, path)
    obj = json.loads(data)  # valid JSON: from_json_bytes checked it
    return TagInfo(name, snapshot, _local_date_time(obj.get("tagCreateTime"), path),
                   _duration_seconds(obj.get("tagTimeRetained"), path))


def list_tags(file_io: FileIO, paths: TablePaths) -> list[TagInfo]:
    """Every tag of the table, sorted by name. (Seam: becomes ``TagManager.list``.)"""
    tag_dir = posixpath.join(paths.table_path, "tag")
    out = []
    for file_name in sorted(file_io.list_names(tag_dir)):
        if not file_name.startswith(TAG_PREFIX) or len(file_name) == len(TAG_PREFIX):
            continue
        path = posixpath.join(tag_dir, file_name)
        try:
            data = file_io.read_bytes(path)
        except FileNotFoundError:
            continue  # deleted while we listed
        out.append(read_tag(data, file_name[len(TAG_PREFIX):], path))
    return out


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
        millis = _mtime(info)
        if millis is None:
            times = [s.modified_millis for s in file_io.list_status(posixpath.join(branch_dir, base, "schema"))
                     if s.modified_millis is not None]
            millis = min(times) if times else 0
        out.append(BranchInfo(base[len(BRANCH_PREFIX):], millis))
    return sorted(out, key=lambda b: b.name)


def _mtime(info: dict) -> int | None:
    for key in ("mtime", "LastModified", "modified", "created"):
        v = info.get(key)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return int(v.timestamp() * 1000)
        try:
            return int(float(v) * 1000)
        except (TypeError, ValueError):
            continue
    return None


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


__all__ = ["TagInfo", "BranchInfo", "read_tag", "list_tags", "list_branches", "duration_string"]

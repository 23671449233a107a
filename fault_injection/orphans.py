"""A harness-side orphan finder: files under a table that no retained snapshot references.

What a crashed or failed commit can leave behind: data files of a commit that never
published, manifests and manifest lists of an attempt that died before (or while)
publishing, the dot-prefixed temp file of a snapshot (``snapshot/.snapshot-N.<uuid>.tmp``),
files a LoseUnsynced crash emptied. None of them is reachable, so deleting them changes no
read; they only cost space. This is the test bed's own implementation, independent of
impl's table layer, so the two can be compared once ``remove_orphan_files`` exists there.

Kept, always: schema files, the LATEST / EARLIEST hints and every ``snapshot-N`` file
(a snapshot is the table, not an orphan). Everything else under the table that is not
referenced by a retained snapshot (see
:meth:`fault_injection.table_audit.TableAudit.referenced_paths`) is an orphan, unless it
is younger than ``older_than_millis`` (a running writer's files are not referenced *yet*:
that grace period is what makes orphan removal safe next to live writers).

If any snapshot cannot be read completely the scan refuses (:class:`OrphanScanRefused`):
with an unreadable manifest we cannot know what is referenced, and deleting on a guess
could destroy live data.
"""

from __future__ import annotations

import posixpath

from fault_injection.table_audit import TableAudit, audit_table
from impl.fs.file_io import FileIO, FileStatus
from impl.fs.paths import EARLIEST_HINT, LATEST_HINT, SCHEMA_PREFIX, SNAPSHOT_PREFIX, TablePaths
from impl.schema.records import TableSchema

__all__ = ["OrphanScanRefused", "find_orphans", "remove_orphans", "is_table_metadata"]


class OrphanScanRefused(Exception):
    """Some retained snapshot is unreadable: what is referenced cannot be known."""


def _norm(path: str) -> str:
    return str(path).rstrip("/")


def is_table_metadata(table_path: str, path: str) -> bool:
    """Schema files, snapshot files and hints: never orphans."""
    paths = TablePaths(table_path)
    directory, name = posixpath.split(_norm(path))
    if directory == _norm(paths.schema_dir):
        return name.startswith(SCHEMA_PREFIX) and name[len(SCHEMA_PREFIX):].isdigit()
    if directory == _norm(paths.snapshot_dir):
        if name in (LATEST_HINT, EARLIEST_HINT):
            return True
        return name.startswith(SNAPSHOT_PREFIX) and name[len(SNAPSHOT_PREFIX):].isdigit()
    return False


def find_orphans(
    file_io: FileIO,
    table_path: str,
    *,
    older_than_millis: int | None = None,
    schema: TableSchema | None = None,
    audit: TableAudit | None = None,
) -> list[FileStatus]:
    """Files under ``table_path`` that no retained snapshot references (sorted by path).

    ``older_than_millis``: only files modified strictly before it (None: every age). A file
    whose modification time the file system does not report counts as old.
    """
    if audit is None:
        audit = audit_table(file_io, table_path, schema=schema, check_data_files=False)
    unreadable = [sid for sid in audit.snapshot_ids if sid not in audit.views or not audit.views[sid].readable]
    if unreadable:
        raise OrphanScanRefused(
            f"table {table_path}: snapshots {unreadable} cannot be read completely, refusing to look for orphans: "
            + "; ".join(audit.problems))
    referenced = {_norm(p) for p in audit.referenced_paths()}
    out = []
    for status in file_io.walk_files(table_path):
        p = _norm(status.path)
        if p in referenced or is_table_metadata(table_path, p):
            continue
        if older_than_millis is not None and status.modified_millis is not None \
                and status.modified_millis >= older_than_millis:
            continue
        out.append(FileStatus(p, status.size_bytes, status.modified_millis))
    return sorted(out, key=lambda s: s.path)


def remove_orphans(
    file_io: FileIO,
    table_path: str,
    *,
    older_than_millis: int | None = None,
    schema: TableSchema | None = None,
) -> list[str]:
    """Delete what :func:`find_orphans` finds; return the deleted paths."""
    found = find_orphans(file_io, table_path, older_than_millis=older_than_millis, schema=schema)
    for status in found:
        file_io.delete(status.path)
    return [s.path for s in found]

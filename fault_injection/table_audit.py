"""Audit a table's storage the way a restarted process would see it.

After a crash (or any fault) a test reopens the table through a *healthy* file system and
asks: which snapshots exist, do they parse, are their ids contiguous, does the LATEST /
EARLIEST resolution agree with the listing, and does every file a retained snapshot
reaches (manifest lists, manifests, index manifest, live data files) exist and hold what
its metadata says? :func:`audit_table` answers all of that in one pass and never raises
for a problem it can name: every problem is a line in ``TableAudit.problems``.

It reads through impl's own codecs (SnapshotManager, ManifestList, ManifestFile), so it
checks the *storage*, not impl's reading logic; the live set of a snapshot is the fold of
its base + delta manifests (invariant 3), computed here with impl's merge rules.

The audit also knows every file a retained snapshot *references*
(:meth:`TableAudit.referenced_paths`), which is what :mod:`fault_injection.orphans` needs.
"""

from __future__ import annotations

import hashlib
import posixpath
import threading
from dataclasses import dataclass, field
from typing import Callable

from impl.data.partition_names import PartitionNaming
from impl.data.types import DataType
from impl.errors import PaimonError
from impl.format import avro
from impl.fs.file_io import FileIO
from impl.fs.paths import SCHEMA_PREFIX, TablePaths
from impl.manifest.entries import merge_entries
from impl.manifest.manifest_file import IndexManifestFile
from impl.manifest.records import FileKind, ManifestEntry, ManifestFileMeta
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import Snapshot

__all__ = ["SnapshotView", "TableAudit", "audit_table", "read_table_schema"]

DataCheck = Callable[[bytes, ManifestEntry], "str | None"]


@dataclass
class SnapshotView:
    """What one retained snapshot reaches."""

    snapshot: Snapshot
    manifest_lists: list[str] = field(default_factory=list)  # file names
    manifests: list[str] = field(default_factory=list)  # file names, data + changelog
    live: list[ManifestEntry] = field(default_factory=list)  # live ADD entries (the read)
    entry_paths: set[str] = field(default_factory=set)  # every data/changelog file any entry names
    index_paths: set[str] = field(default_factory=set)
    readable: bool = True  # every manifest list and manifest parsed

    @property
    def id(self) -> int:
        return self.snapshot.id


@dataclass
class TableAudit:
    table_path: str
    snapshot_ids: list[int]  # from listing the snapshot directory
    latest_id: int | None  # SnapshotManager.latest_snapshot_id() (hint, or listing)
    earliest_id: int | None
    views: dict[int, SnapshotView]
    problems: list[str]
    schema: TableSchema | None = None
    snapshot_problems: dict[int, list[str]] = field(default_factory=dict)  # per snapshot id
    table_problems: list[str] = field(default_factory=list)  # not tied to one snapshot (ids, hints, schema)

    @property
    def ok(self) -> bool:
        return not self.problems

    def live_entries(self, snapshot_id: int | None = None) -> list[ManifestEntry]:
        """Live entries of a snapshot (default: the latest); empty for an empty table."""
        if snapshot_id is None:
            snapshot_id = self.snapshot_ids[-1] if self.snapshot_ids else None
        if snapshot_id is None:
            return []
        return list(self.views[snapshot_id].live)

    def referenced_paths(self) -> set[str]:
        """Every file some retained snapshot references, as full paths (snapshot files included)."""
        paths = TablePaths(self.table_path)
        out: set[str] = set()
        for sid, view in self.views.items():
            out.add(paths.snapshot_path(sid))
            out.update(paths.manifest_path(n) for n in view.manifest_lists)
            out.update(paths.manifest_path(n) for n in view.manifests)
            if view.snapshot.index_manifest:
                out.add(paths.manifest_path(view.snapshot.index_manifest))
            out.update(view.entry_paths)
            out.update(view.index_paths)
        return out


# Parsed manifests and lists keyed by (path, digest of the bytes read): a crash enumeration
# audits the same history files hundreds of times, and parsing Avro is the expensive part.
# Keyed by content, so a torn, emptied or replaced file is always parsed afresh.
_PARSED: dict[tuple[str, bytes], list] = {}
_PARSED_LOCK = threading.Lock()
_PARSED_MAX = 50_000


def _parse_cached(file_io: FileIO, path: str, parse: Callable[[bytes], list]) -> list:
    data = file_io.read_bytes(path)  # FileNotFoundError for a missing file
    key = (path, hashlib.blake2b(data, digest_size=16).digest())
    with _PARSED_LOCK:
        hit = _PARSED.get(key)
    if hit is not None:
        return hit
    value = parse(data)
    with _PARSED_LOCK:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = value
    return value


def _read_manifest(file_io: FileIO, path: str) -> list[ManifestEntry]:
    return _parse_cached(file_io, path, lambda data: [
        ManifestEntry.from_avro(r, path) for r in avro.read_avro(data, path, "ManifestEntry", ("_KIND", "_FILE"))])


def _read_manifest_list(file_io: FileIO, path: str) -> list[ManifestFileMeta]:
    return _parse_cached(file_io, path, lambda data: [
        ManifestFileMeta.from_avro(r, path)
        for r in avro.read_avro(data, path, "ManifestFileMeta", ("_FILE_NAME", "_FILE_SIZE"))])


def read_table_schema(file_io: FileIO, table_path: str) -> TableSchema | None:
    """The newest ``schema/schema-<id>`` of the table, or None if there is none."""
    paths = TablePaths(table_path)
    ids = []
    for name in file_io.list_names(paths.schema_dir):
        tail = name[len(SCHEMA_PREFIX):] if name.startswith(SCHEMA_PREFIX) else ""
        if tail.isdigit():
            ids.append(int(tail))
    if not ids:
        return None
    path = paths.schema_path(max(ids))
    return TableSchema.from_json_bytes(file_io.read_bytes(path), path)


def audit_table(
    file_io: FileIO,
    table_path: str,
    *,
    schema: TableSchema | None = None,
    data_check: DataCheck | None = None,
    check_data_files: bool = True,
) -> TableAudit:
    """Read every retained snapshot of the table and list what is wrong.

    Checks (each failure is one line in ``problems``):
    - snapshot ids (from listing) are contiguous; every snapshot file parses and holds its id;
    - ``latest_snapshot_id()`` / ``earliest_snapshot_id()`` (hint, else listing) equal the
      listing's max / min: a stale, torn or empty hint must not mislead a reader;
    - every manifest list and manifest a snapshot reaches exists and parses; the fold of its
      entries (base + delta) folds without a second ADD and leaves no DELETE behind;
    - every live data file exists and its size equals ``file_size`` of its metadata (an
      emptied or torn data file is caught), plus ``data_check(bytes, entry)`` if given;
    - the snapshot's ``total_record_count`` equals the sum of its live row counts.

    ``schema`` defaults to the newest schema file of the table (partition names and types
    are needed to find data files).
    """
    paths = TablePaths(table_path)
    manager = SnapshotManager(file_io, paths)
    table_problems: list[str] = []
    if schema is None:
        try:
            schema = read_table_schema(file_io, table_path)
        except PaimonError as e:
            table_problems.append(f"schema unreadable: {e}")
    ids = manager.snapshot_ids()
    table_problems += _contiguity_problems(ids)
    latest_id = earliest_id = None
    try:
        latest_id = manager.latest_snapshot_id()
        earliest_id = manager.earliest_snapshot_id()
    except PaimonError as e:
        table_problems.append(f"latest/earliest resolution failed: {e}")
    table_problems += _hint_problems(ids, latest_id, earliest_id)

    auditor = _SnapshotAuditor(file_io, paths, schema, data_check, check_data_files)
    views: dict[int, SnapshotView] = {}
    snapshot_problems: dict[int, list[str]] = {}
    for sid in ids:
        view, found = auditor.audit(manager, sid)
        if view is not None:
            views[sid] = view
        if found:
            snapshot_problems[sid] = found
    problems = table_problems + [f"snapshot {sid}: {m}" for sid, ms in snapshot_problems.items() for m in ms]
    return TableAudit(table_path, ids, latest_id, earliest_id, views, problems, schema, snapshot_problems,
                      table_problems)


def _contiguity_problems(ids: list[int]) -> list[str]:
    """The listed snapshot ids have no gap."""
    if ids and ids != list(range(ids[0], ids[-1] + 1)):
        return [f"snapshot ids not contiguous: {ids}"]
    return []


def _hint_problems(ids: list[int], latest_id: int | None, earliest_id: int | None) -> list[str]:
    """The latest / earliest lookups (hint, else listing) agree with the listing."""
    problems = []
    if ids and latest_id != ids[-1]:
        problems.append(f"latest_snapshot_id() = {latest_id} but the newest snapshot file is {ids[-1]}")
    if ids and earliest_id != ids[0]:
        problems.append(f"earliest_snapshot_id() = {earliest_id} but the oldest snapshot file is {ids[0]}")
    if not ids and latest_id is not None:
        problems.append(f"latest_snapshot_id() = {latest_id} but there is no snapshot file")
    return problems


def _fold_live(data_entries: list[ManifestEntry]) -> tuple[list[ManifestEntry] | None, list[str]]:
    """The live ADD entries of base + delta (None if they do not fold), and what is wrong."""
    try:
        merged = merge_entries(data_entries)
    except PaimonError as e:
        return None, [f"entries do not fold: {e}"]
    dangling = [entry.file.file_name for entry in merged.values() if entry.kind is FileKind.DELETE]
    # base + delta of any snapshot fold the whole history (the base list is the merged
    # previous base + delta), so a DELETE left over means deleting a file never live.
    problems = [f"deletes files that were never live: {sorted(dangling)}"] if dangling else []
    return [entry for entry in merged.values() if entry.kind is FileKind.ADD], problems


def _record_count_problems(snap: Snapshot, live: list[ManifestEntry]) -> list[str]:
    """The snapshot's totalRecordCount is the sum of its live row counts."""
    if snap.total_record_count is None:
        return []
    total = sum(entry.file.row_count for entry in live)
    if total != snap.total_record_count:
        return [f"totalRecordCount {snap.total_record_count} != live rows {total}"]
    return []


@dataclass(frozen=True)
class _ManifestContent:
    entries: list[ManifestEntry]
    named_paths: frozenset[str]  # every data / changelog file (and extra file) an entry names


class _SnapshotAuditor:
    """Audits one snapshot at a time, remembering across snapshots what it already read: the
    directory of each partition, each manifest (or why it is unreadable), each data file's check."""

    def __init__(self, file_io: FileIO, paths: TablePaths, schema: TableSchema | None,
                 data_check: DataCheck | None, check_data_files: bool):
        self.file_io = file_io
        self.paths = paths
        self.partition_names = list(schema.partition_keys) if schema else []
        self.partition_type: list[DataType] = [schema.field(k).type for k in self.partition_names] if schema else []
        self.data_check = data_check
        self.check_data_files = check_data_files
        self.index_file = IndexManifestFile(file_io, paths)
        self._partition_dirs: dict[bytes, str] = {}
        self._manifests: dict[str, _ManifestContent | str] = {}  # file name -> content, or a problem
        self._data_files: dict[str, str | None] = {}  # path -> problem

    def audit(self, manager: SnapshotManager, sid: int) -> tuple[SnapshotView | None, list[str]]:
        """What snapshot ``sid`` reaches (None if it cannot be read), and what is wrong with it."""
        try:
            snap = manager.try_snapshot(sid)
        except PaimonError as e:
            return None, [f"unreadable: {e}"]
        if snap is None:
            return None, ["listed but vanished"]
        view = SnapshotView(snap)
        data_entries, problems = self._read_manifests(view)
        problems += self._read_index(view)
        if not view.readable:
            return view, problems
        live, fold_problems = _fold_live(data_entries)
        problems += fold_problems
        if live is None:
            return view, problems
        view.live = live
        problems += _record_count_problems(snap, live)
        if self.check_data_files:
            problems += self._data_file_problems(live)
        return view, problems

    def data_path(self, e: ManifestEntry) -> str:
        ppath = self._partition_dirs.get(e.partition)
        if ppath is None:
            ppath = PartitionNaming(tuple(self.partition_names), tuple(self.partition_type)).path_of_row(e.partition)
            self._partition_dirs[e.partition] = ppath
        return self.paths.data_file_path(ppath, e.bucket, e.file.file_name, e.file.external_path)

    def _read_manifests(self, view: SnapshotView) -> tuple[list[ManifestEntry], list[str]]:
        """Every manifest list and manifest the snapshot reaches exists and parses. Fills in the
        view's lists, manifests and entry paths; returns the data (base + delta) entries."""
        snap = view.snapshot
        lists = [("base", snap.base_manifest_list), ("delta", snap.delta_manifest_list)]
        if snap.changelog_manifest_list:
            lists.append(("changelog", snap.changelog_manifest_list))
        data_entries: list[ManifestEntry] = []
        problems: list[str] = []
        for role, list_name in lists:
            view.manifest_lists.append(list_name)
            try:
                metas = _read_manifest_list(self.file_io, self.paths.manifest_path(list_name))
            except FileNotFoundError:
                problems.append(f"{role} manifest list {list_name} is missing")
                view.readable = False
                continue
            except PaimonError as e:
                problems.append(f"{role} manifest list {list_name} unreadable: {e}")
                view.readable = False
                continue
            for m in metas:
                view.manifests.append(m.file_name)
                content = self._manifest(m.file_name)
                if isinstance(content, str):
                    problems.append(content)
                    view.readable = False
                    continue
                view.entry_paths |= content.named_paths
                if role != "changelog":
                    data_entries.extend(content.entries)
        return data_entries, problems

    def _manifest(self, name: str) -> _ManifestContent | str:
        got = self._manifests.get(name)
        if got is None:
            try:
                entries = _read_manifest(self.file_io, self.paths.manifest_path(name))
            except FileNotFoundError:
                got = f"manifest {name} is missing"
            except PaimonError as e:
                got = f"manifest {name} unreadable: {e}"
            else:
                named = set()
                for entry in entries:
                    dp = self.data_path(entry)
                    named.add(dp)
                    for extra in entry.file.extra_files:
                        named.add(posixpath.join(posixpath.dirname(dp), extra))
                got = _ManifestContent(entries, frozenset(named))
            self._manifests[name] = got
        return got

    def _read_index(self, view: SnapshotView) -> list[str]:
        """The index manifest (if any) exists and parses; fills in the view's index paths."""
        name = view.snapshot.index_manifest
        if not name:
            return []
        try:
            for ie in self.index_file.read(name):
                f = ie.index_file
                view.index_paths.add(f.external_path or self.paths.index_file_path(f.file_name))
        except FileNotFoundError:
            view.readable = False
            return [f"index manifest {name} is missing"]
        except PaimonError as e:
            view.readable = False
            return [f"index manifest {name} unreadable: {e}"]
        return []

    def _data_file_problems(self, live: list[ManifestEntry]) -> list[str]:
        """Every live data file exists and holds what its metadata says."""
        problems = []
        for entry in live:
            p = self.data_path(entry)
            if p not in self._data_files:
                self._data_files[p] = _check_data_file(self.file_io, p, entry, self.data_check)
            problem = self._data_files[p]
            if problem is not None:
                problems.append(problem)
        return problems


def _check_data_file(file_io: FileIO, path: str, e: ManifestEntry, data_check: DataCheck | None) -> str | None:
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError:
        return f"data file {path} is missing"
    except PaimonError as e2:
        return f"data file {path} unreadable: {e2}"
    if len(data) != e.file.file_size:
        return f"data file {path} holds {len(data)} bytes, its metadata says {e.file.file_size}"
    if data_check is not None:
        msg = data_check(data, e)
        if msg:
            return f"data file {path}: {msg}"
    return None

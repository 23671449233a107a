"""Writes the Iceberg metadata of a table's newest Paimon snapshot after a commit published it
(Paimon Java's ``IcebergCommitCallback``, ``metadata.iceberg.storage`` = ``table-location`` /
``hadoop-catalog``).

Layout, as Java's: ``<metadata dir>/v<snapshot id>.metadata.json``, ``version-hint.text``
(the snapshot id), manifest lists ``snap-<n>-<uuid>.avro`` (n counts per writer: 1) and manifests ``<uuid>-m<n>.avro``
in the same directory; the metadata directory is ``<table>/metadata`` (``table-location``) or
``<warehouse>/iceberg/<db>/<table>/metadata`` (catalog storage location).

Crash safety: everything here is derived from the published Paimon snapshot, and is written
after it, in an order where each file is complete before anything names it (manifest, then
manifest list, then ``vN.metadata.json``, then the version hint). A crash in between leaves the
Iceberg view at an older Paimon snapshot (behind, never wrong); the next commit, or
:func:`sync_iceberg`, writes the newest one again from the Paimon snapshot.

Per commit only what changed is written, as Java's: the previous Iceberg snapshot's manifests
are carried over, a manifest lists the added files, only manifests holding a removed file are
rewritten (it DELETED, the rest EXISTING), and small manifests are merged as Java merges them
(``metadata.iceberg.compaction.min/max.file-num``, ``manifest.target-file-size``). Iceberg
snapshots whose Paimon snapshots expired (or were rolled back) leave the metadata, and their
manifest lists and the manifests nothing listed names any more are deleted. Primary-key tables
show their files at the highest level only (the table as of its last full compaction).

Not yet as Java: no column statistics in manifests (readers prune by partition: the manifest
list's partition summaries and the entries' partition values); Iceberg snapshots of intermediate
Paimon snapshots (APPEND then COMPACT in one commit) are skipped, only the newest is mirrored;
no Iceberg v3 deletion vectors (deletion-vector tables are refused); tags are not Iceberg refs.
"""

from __future__ import annotations

import io
import json
import logging
import posixpath
import uuid
from dataclasses import dataclass
from typing import Callable, Sequence

from impl.data.binary_row import decode_row
from impl.datafile.meta import DataFileMeta
from impl.errors import InvalidOptionError, PaimonError, UnsupportedOptionError
from impl.format.avro import fastavro_module
from impl.fs.names import MAIN_BRANCH
from impl.iceberg.build import (
    CONTENT_DATA,
    FORMAT_VERSION,
    MANIFEST_LIST_AVRO_SCHEMA,
    OPERATIONS,
    PARTITION_SPEC_ID,
    DataFile,
    aged_entry,
    carried_entry,
    exposed_level,
    is_live,
    live_totals,
    manifest_entry,
    manifest_entry_avro_schema,
    manifest_file_record,
    may_hold_partition,
    name_mapping,
    partition_fields,
    schema_json,
    snapshot_json,
    table_metadata,
    with_stats_maps,
)
from impl.manifest.records import FileKind, ManifestEntry
from impl.options.iceberg import STORAGE, IcebergSettings, StorageLocation, check_iceberg_table
from impl.schema.records import TableSchema
from impl.snapshot.records import Snapshot
from impl.store.core import TableCore

log = logging.getLogger(__name__)

VERSION_HINT = "version-hint.text"
# a metadata file larger than this is not one impl wrote for a table it can mirror: rebuilt
_MAX_METADATA_BYTES = 64 * 1024 * 1024
# the Iceberg view this many Paimon snapshots behind is written afresh, not folded forward
_MAX_FOLDED_SNAPSHOTS = 100
# every this many snapshots the metadata directory is listed for versions a crash left behind
_SWEEP_EVERY = 20


def metadata_dir(table_path: str, settings: IcebergSettings) -> str:
    """Where the Iceberg metadata of the table at ``table_path`` goes (Java's
    ``catalogTableMetadataPath``). InvalidOptionError for a catalog location outside a
    ``<db>.db`` warehouse directory, as Java refuses it."""
    table_path = table_path.rstrip("/")
    db_path, table_name = posixpath.split(table_path)
    if settings.location is StorageLocation.TABLE_LOCATION:
        return posixpath.join(table_path, "metadata")
    db_dir, db_name = posixpath.split(db_path)
    if not db_name.endswith(".db"):
        raise InvalidOptionError(
            f"option 'metadata.iceberg.storage' = {settings.storage.value} with the catalog storage location needs "
            f"a Paimon warehouse database directory (<db>.db), not {db_path!r}; set "
            "'metadata.iceberg.storage-location' = table-location")
    return posixpath.join(db_dir, "iceberg", db_name[:-3], table_name, "metadata")


def check_table(core: TableCore) -> IcebergSettings | None:
    """The table's Iceberg settings after the refusals of :func:`check_iceberg_table` (None:
    Iceberg metadata is off). Refused on a branch: Java mirrors the main branch only."""
    s = core.schema
    settings = check_iceberg_table(core.options.raw, s.primary_keys, s.fields, s.partition_keys, core.identifier)
    if settings is not None and core.branch != MAIN_BRANCH:
        raise UnsupportedOptionError(STORAGE, settings.storage.value, "refused write",
                                     f"{core.identifier}: Iceberg metadata of branch {str(core.branch)!r}")
    return settings


def _avro(schema: dict, records: Sequence[dict], codec: str, metadata: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    fastavro = fastavro_module()  # imported on first use: import impl does not load fastavro
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec, metadata=metadata)
    return buf.getvalue()


def _read_previous(core: TableCore, directory: str) -> dict | None:
    """The metadata the version hint names, or None (absent, or unreadable: rebuilt)."""
    fio = core.file_io
    try:
        hint = int(fio.read_bytes(posixpath.join(directory, VERSION_HINT)).decode("ascii").strip())
        path = posixpath.join(directory, f"v{hint}.metadata.json")
        data = fio.read_bytes(path)
        if len(data) > _MAX_METADATA_BYTES:
            return None
        doc = json.loads(data)
        return doc if isinstance(doc, dict) and isinstance(doc.get("snapshots"), list) else None
    except (FileNotFoundError, ValueError, UnicodeDecodeError, PaimonError):
        return None


def _kept_snapshots(core: TableCore, previous: dict | None, current: Snapshot) -> list[dict]:
    """Earlier Iceberg snapshots that still mirror a Paimon snapshot: older id, that Paimon
    snapshot still there with the same time (expired or rolled-back ones are dropped)."""
    if previous is None:
        return []
    earlier = [s for s in previous["snapshots"]
               if isinstance(s, dict) and isinstance(s.get("snapshot-id"), int) and s["snapshot-id"] < current.id]
    if not earlier:
        return []
    sm = core.snapshot_manager
    newest = max(earlier, key=lambda s: s["snapshot-id"])
    paimon = sm.try_snapshot(newest["snapshot-id"])
    oldest = min(s["snapshot-id"] for s in earlier)
    # the oldest one still there: nothing expired (no listing of the snapshot directory)
    earliest = oldest if sm.snapshot_exists(oldest) else sm.earliest_snapshot_id()
    if paimon is not None and _mirrors(newest, paimon) and earliest is not None:
        # Paimon's ids are one contiguous range and a rollback replaces the newest ones first:
        # when the newest earlier snapshot still mirrors its Paimon snapshot, so do all older
        # ones Paimon has not expired (one snapshot read per commit, not one per snapshot)
        return [s for s in earlier if s["snapshot-id"] >= earliest]
    kept = []
    for s in earlier:
        p = sm.try_snapshot(s["snapshot-id"])
        if p is not None and _mirrors(s, p):
            kept.append(s)
    return kept


def _mirrors(iceberg_snapshot: dict, paimon: Snapshot) -> bool:
    """Whether an Iceberg snapshot of the same id mirrors this Paimon snapshot: it was written
    after it (impl stamps it with the Paimon snapshot's time, Java with its clock after the
    commit). One written before mirrors a rolled-back snapshot whose id was used again."""
    ts = iceberg_snapshot.get("timestamp-ms")
    return isinstance(ts, int) and ts >= paimon.time_millis


def _exposed(core: TableCore) -> Callable[[DataFileMeta], bool]:
    """Whether the Iceberg view lists a data file (:func:`impl.iceberg.build.exposed_level`)."""
    pks = core.schema.primary_keys
    level = exposed_level(pks, core.merge_tree_options.num_levels if pks else 0)
    return (lambda f: True) if level is None else (lambda f: f.level == level)


class _Partitions:
    """Serialized Paimon partitions as the dicts of partition values manifests hold (cached)."""

    def __init__(self, core: TableCore):
        self.keys = list(core.schema.partition_keys)
        self.types = [core.schema.field(k).type for k in self.keys]
        self.cache: dict[bytes, dict] = {}

    def __call__(self, partition: bytes) -> dict:
        part = self.cache.get(partition)
        if part is None:
            part = dict(zip(self.keys, decode_row(partition, self.types), strict=True)) if self.keys else {}
            self.cache[partition] = part
        return part


def _data_files(core: TableCore, entries: Sequence[ManifestEntry],
                file_path: Callable[[bytes, int, DataFileMeta], str]) -> list[DataFile]:
    partition = _Partitions(core)
    keep = _exposed(core)
    return [DataFile(file_path(e.partition, e.bucket, e.file), partition(e.partition), e.file.row_count,
                     e.file.file_size) for e in entries if keep(e.file)]


@dataclass(frozen=True)
class _Changes:
    """The data files the Paimon snapshots after the mirrored one added to / removed from the
    Iceberg view, by full path (insertion order kept: manifests list them in commit order)."""

    added: dict[str, DataFile]
    removed: dict[str, DataFile]
    add_only: bool  # no file deleted at all (a moved file is deleted and added: not add-only)


def _changes(core: TableCore, after: int, snapshot: Snapshot,
             file_path: Callable[[bytes, int, DataFileMeta], str]) -> _Changes | None:
    """The changes of Paimon snapshots ``after + 1 .. snapshot.id`` from their delta manifests,
    or None when one of them is gone (expired, or too many to fold: a full rewrite is cheaper).
    Within a snapshot its DELETEs go first: a file moved to another level is deleted and added
    under the same path, and stays."""
    if snapshot.id - after > _MAX_FOLDED_SNAPSHOTS:
        return None
    sm = core.snapshot_manager
    partition = _Partitions(core)
    keep = _exposed(core)
    added: dict[str, DataFile] = {}
    removed: dict[str, DataFile] = {}
    add_only = True
    for sid in range(after + 1, snapshot.id + 1):
        snap = snapshot if sid == snapshot.id else sm.try_snapshot(sid)
        if snap is None:
            return None
        entries = core.manifest_file.read_all(core.manifest_list.read_delta_manifests(snap))
        for kind in (FileKind.DELETE, FileKind.ADD):
            for e in entries:
                if e.kind is not kind or (kind is FileKind.ADD and not keep(e.file)):
                    continue
                path = file_path(e.partition, e.bucket, e.file)
                f = DataFile(path, partition(e.partition), e.file.row_count, e.file.file_size)
                if kind is FileKind.ADD:
                    removed.pop(path, None)
                    added[path] = f
                else:
                    add_only = False
                    if added.pop(path, None) is None:
                        removed[path] = f
    return _Changes(added, removed, add_only)


def _own_file(directory: str, path: str) -> str:
    """The file of the metadata directory a manifest (list) path names: read by its name in
    ``directory``, as Java reads them, so a path in a hostile metadata file reaches nothing
    outside it (ValueError for a name that is not an Avro file's)."""
    name = posixpath.basename(path)
    if not name.endswith(".avro") or name.startswith("."):
        raise ValueError(f"{path!r} is not an Iceberg manifest or manifest list")
    return posixpath.join(directory, name)


def _read_avro(core: TableCore, directory: str, path: str) -> list[dict]:
    fastavro = fastavro_module()
    path = _own_file(directory, path)
    data = core.file_io.read_bytes(path)
    if len(data) > _MAX_METADATA_BYTES:
        raise ValueError(f"{path}: {len(data)} bytes, more than an Iceberg manifest impl reads")
    return [r for r in fastavro.reader(io.BytesIO(data)) if isinstance(r, dict)]


def _base(core: TableCore, directory: str, previous: dict | None, kept: Sequence[dict],
          spec: list[dict]) -> tuple[dict, list[dict]] | None:
    """The previous current Iceberg snapshot and its manifest list, when the new one can be
    derived from them: it mirrors a Paimon snapshot still there (it is among ``kept``), it is
    older than ``snapshot``, same format version and partition spec, data manifests only, and
    its manifest list reads. Otherwise None: everything is written again from the Paimon
    snapshot (correct first: a crash, a rollback, another writer's metadata)."""
    if previous is None or previous.get("format-version") != FORMAT_VERSION:
        return None
    current = previous.get("current-snapshot-id")
    base = next((s for s in kept if s.get("snapshot-id") == current), None)
    if base is None or not isinstance(base.get("manifest-list"), str):
        return None
    if not base["manifest-list"].startswith(core.file_io.uri(directory).rstrip("/") + "/"):
        # written under another spelling of the table's URL (opened as abfs:// then abfss://, or by a
        # version that named no Azure account): a removed file's path would not match its entry
        return None
    specs = previous.get("partition-specs")
    if not isinstance(specs, list) or [s.get("fields") for s in specs if isinstance(s, dict)] != [spec]:
        return None
    try:
        manifests = _read_avro(core, directory, base["manifest-list"])
    except (FileNotFoundError, ValueError, OSError, PaimonError, EOFError, TypeError) as e:
        log.info("Iceberg manifest list %s not read (%s): rewriting all manifests", base["manifest-list"], e)
        return None
    if any(m.get("content") != CONTENT_DATA or not isinstance(m.get("manifest_path"), str) for m in manifests):
        return None
    return base, manifests


class _Writer:
    """Writes the manifests of one Iceberg snapshot (names ``<run>-m<n>.avro``)."""

    def __init__(self, core: TableCore, directory: str, schema: TableSchema, snapshot_id: int, codec: str):
        self.core, self.directory, self.schema, self.snapshot_id, self.codec = (
            core, directory, schema, snapshot_id, codec)
        self.run = str(uuid.uuid4())
        self.count = 0
        self.avro_schema = manifest_entry_avro_schema(schema)
        self.file_meta = {"schema": json.dumps(schema_json(schema)), "schema-id": str(schema.id),
                          "partition-spec": json.dumps(partition_fields(schema)),
                          "partition-spec-id": str(PARTITION_SPEC_ID), "format-version": "2", "content": "data"}

    def manifest(self, entries: Sequence[dict]) -> dict:
        self.count += 1
        path = posixpath.join(self.directory, f"{self.run}-m{self.count}.avro")
        data = _avro(self.avro_schema, [with_stats_maps(e) for e in entries], self.codec, self.file_meta)
        self.core.file_io.write_bytes(path, data)
        return manifest_file_record(self.core.file_io.uri(path), len(data), self.snapshot_id, self.schema, entries)

    def manifest_list(self, manifests: Sequence[dict]) -> str:
        path = posixpath.join(self.directory, f"snap-1-{self.run}.avro")
        self.core.file_io.write_bytes(path, _avro(MANIFEST_LIST_AVRO_SCHEMA, manifests, self.codec, {
            "snapshot-id": str(self.snapshot_id), "sequence-number": str(self.snapshot_id), "format-version": "2"}))
        return path


def _derive(core: TableCore, writer: _Writer, base_manifests: list[dict],
            changes: _Changes) -> tuple[list[dict], int]:
    """The manifests of the new snapshot from the base's (Java's ``createMetadataWithBase``):
    unchanged ones carried over by path; one that lists a removed file rewritten (the file
    DELETED, the others EXISTING); a manifest for the added files. Only manifests whose
    partition summaries may hold a changed partition are read. Also returns the bytes the live
    files grew by."""
    added = dict(changes.added)
    out: list[dict] = []
    removed_bytes = 0
    if not changes.add_only:
        touched = list({json.dumps(f.partition, sort_keys=True, default=str): f.partition
                        for f in [*changes.removed.values(), *added.values()]}.values())
        for m in base_manifests:
            if not any(may_hold_partition(writer.schema, m.get("partitions"), p) for p in touched):
                out.append(m)
                continue
            entries = [e for e in _read_avro(core, writer.directory, m["manifest_path"]) if is_live(e)]
            hit = False
            for e in entries:
                path = e["data_file"]["file_path"]
                if path in added:
                    added.pop(path)  # already listed (a file moved to another level): no duplicate
                elif path in changes.removed:
                    hit = True
                    removed_bytes += int(e["data_file"]["file_size_in_bytes"])
            if not hit:
                out.append(m)
            else:
                out.append(writer.manifest([carried_entry(e, e["data_file"]["file_path"] in changes.removed,
                                                          writer.snapshot_id) for e in entries]))
    else:
        out.extend(base_manifests)
    if added:
        out.append(writer.manifest([manifest_entry(f, writer.snapshot_id) for f in added.values()]))
    return out, sum(f.size for f in added.values()) - removed_bytes


def _compact(core: TableCore, writer: _Writer, manifests: list[dict], settings: IcebergSettings) -> list[dict]:
    """Java's ``compactMetadataIfNeeded``: manifests under 2/3 of the manifest target size are
    merged into one once there are ``compaction.min.file-num`` of them and they reach the target
    size together, or once there are ``compaction.max.file-num``: the manifests per snapshot
    stay bounded as the table grows. A merged manifest written for this snapshot is deleted
    (nothing else names it)."""
    target = core.options.commit.merge.target_file_size_bytes
    small = [m for m in manifests if m["manifest_length"] < target * 2 // 3]
    if len(small) < settings.compact_min_file_num:
        return manifests
    if len(small) < settings.compact_max_file_num and sum(m["manifest_length"] for m in small) < target:
        return manifests
    entries = []
    for m in small:
        for e in _read_avro(core, writer.directory, m["manifest_path"]):
            aged = aged_entry(e, writer.snapshot_id)
            if aged is not None:
                entries.append(aged)
    merged = writer.manifest(entries) if entries else None
    core.file_io.delete_quietly([_own_file(writer.directory, m["manifest_path"]) for m in small
                                 if m.get("added_snapshot_id") == writer.snapshot_id
                                 and m.get("sequence_number") == writer.snapshot_id])
    small_paths = {m["manifest_path"] for m in small}
    return [*(m for m in manifests if m["manifest_path"] not in small_paths), *([merged] if merged else [])]


def sync_iceberg(core: TableCore, read_live: Callable[[Snapshot], list[ManifestEntry]],
                 file_path: Callable[[bytes, int, DataFileMeta], str]) -> str | None:
    """Write the Iceberg metadata of the newest Paimon snapshot, unless it is already there;
    return the path of its ``vN.metadata.json`` (None: Iceberg metadata is off, or no
    snapshot). ``read_live`` gives a snapshot's live file entries, ``file_path`` a data file's
    full path (FileStoreCommit's).

    Only what changed is written when the current Iceberg snapshot mirrors an earlier Paimon
    snapshot still there: the delta manifests of the Paimon snapshots since then say which
    files came and went, unchanged Iceberg manifests are carried over by path. Otherwise all
    live files are listed again (a crash far behind, a rollback, metadata of another layout).

    Example::

        fsc = table.new_batch_write_builder().new_commit().file_store_commit
        sync_iceberg(table.core, fsc.read_live_entries, fsc.data_file_path)  # '.../metadata/v7.metadata.json'
    """
    settings = check_table(core)
    if settings is None:
        return None
    snapshot = core.snapshot_manager.latest_snapshot()
    if snapshot is None:
        return None
    fio = core.file_io
    directory = metadata_dir(core.path, settings)
    previous = _read_previous(core, directory)
    meta_path = posixpath.join(directory, f"v{snapshot.id}.metadata.json")
    if previous is not None and previous.get("current-snapshot-id") == snapshot.id and any(
            isinstance(s, dict) and s.get("snapshot-id") == snapshot.id and _mirrors(s, snapshot)
            for s in previous["snapshots"]):
        return meta_path  # already mirrored
    schema = core.schema_manager.schema(snapshot.schema_id)
    older = core.schema_manager.schemas(core.schema_manager.list_ids())
    table_uuid = previous.get("table-uuid") if previous is not None else None
    if not isinstance(table_uuid, str):
        table_uuid = str(uuid.uuid4())
    kept = _kept_snapshots(core, previous, snapshot)
    uri = fio.uri  # Iceberg readers open full URIs (s3://bucket/...): impl's paths are scheme-less

    def full_path(partition: bytes, bucket: int, f: DataFileMeta) -> str:
        return uri(file_path(partition, bucket, f))

    writer = _Writer(core, directory, schema, snapshot.id, settings.avro_codec)
    base = _base(core, directory, previous, kept, partition_fields(schema))
    changes = _changes(core, base[0]["snapshot-id"], snapshot, full_path) if base is not None else None
    manifests: list[dict] | None = None
    size: int | None = None
    if base is not None and changes is not None:
        try:
            derived, grown = _derive(core, writer, base[1], changes)
            manifests = _compact(core, writer, derived, settings)
        except (FileNotFoundError, ValueError, KeyError, TypeError, EOFError, PaimonError) as e:
            # a base manifest gone or not of this layout: list every live file again
            log.info("Iceberg manifests of %s not reused (%s): rewriting all", core.identifier, e)
            manifests = None
        summary = base[0].get("summary")
        prev_size = summary.get("total-files-size") if isinstance(summary, dict) else None
        if manifests is not None and isinstance(prev_size, str) and prev_size.isdigit():
            size = int(prev_size) + grown
    if manifests is None:
        files = _data_files(core, read_live(snapshot), full_path)
        manifests = [writer.manifest([manifest_entry(f, snapshot.id) for f in files])] if files else []
        size = sum(f.size for f in files)
    list_path = uri(writer.manifest_list(manifests))
    n_files, n_rows = live_totals(manifests)
    totals = {"total-records": n_rows, "total-data-files": n_files}
    if size is not None and size >= 0:
        totals["total-files-size"] = size
    parent = max((s["snapshot-id"] for s in kept), default=None)
    current = snapshot_json(snapshot.id, parent, snapshot.time_millis,
                            OPERATIONS.get(snapshot.commit_kind.value, "overwrite"), schema.id, list_path, totals)
    doc = table_metadata(table_uuid=table_uuid, location=uri(core.path), schema=schema, older_schemas=older,
                         name_map=name_mapping(older), snapshots=kept, current=current)
    # compact JSON: an indent makes json use its pure-Python encoder, which cost 0.3 s a commit
    # at 150 snapshots listed (the document grows with the snapshots kept)
    _publish_metadata(core, meta_path, json.dumps(doc).encode(), snapshot)
    fio.overwrite_hint(posixpath.join(directory, VERSION_HINT), str(snapshot.id))
    below = snapshot.id - settings.previous_versions_max
    before = previous.get("current-snapshot-id") if previous is not None else None
    if isinstance(before, int) and before == snapshot.id - 1 and snapshot.id % _SWEEP_EVERY:
        # the usual step: the previous commit cleaned up below its own bound, so only the
        # versions between that bound and this one are left; no listing of a directory that
        # grows with the manifests (a periodic sweep below catches what a crash left)
        if settings.delete_after_commit:
            fio.delete_quietly([posixpath.join(directory, f"v{v}.metadata.json")
                                for v in range(max(1, before - settings.previous_versions_max), below)])
    else:
        names = fio.list_names(directory)
        _delete_rolled_back(core, directory, names, snapshot.id)
        if settings.delete_after_commit:
            _delete_old_metadata(core, directory, names, below)
    if previous is not None:
        _expire(core, directory, previous, kept, list_path)
    return meta_path


def _expire(core: TableCore, directory: str, previous: dict, kept: Sequence[dict], current_list: str) -> None:
    """Delete the manifest lists of the previous metadata's snapshots the new one no longer
    lists (Paimon expired or rolled back their snapshots), and their manifests no snapshot
    listed now can name (Java's ``expireManifestList``). Manifests only move forward (each
    snapshot's are its predecessor's or new), so a manifest of a dropped snapshot that its
    successor does not list is named by nothing later; a dropped snapshot after a kept one (an
    old timeline) is compared with the newest kept one before it and the new snapshot."""
    kept_lists = {s.get("manifest-list") for s in kept}
    old = sorted((s for s in previous["snapshots"] if isinstance(s, dict) and isinstance(s.get("snapshot-id"), int)
                  and isinstance(s.get("manifest-list"), str)), key=lambda s: s["snapshot-id"])
    dropped = [s for s in old if s["manifest-list"] not in kept_lists and s["manifest-list"] != current_list]
    if not dropped:
        return
    cache: dict[str, set[str]] = {}

    def manifests_of(list_path: str) -> set[str]:
        if list_path not in cache:
            try:
                cache[list_path] = {_own_file(directory, m["manifest_path"])
                                    for m in _read_avro(core, directory, list_path)}
            except (FileNotFoundError, ValueError, OSError, PaimonError, EOFError, TypeError, KeyError):
                cache[list_path] = set()
        return cache[list_path]

    doomed: set[str] = set()
    lists = []
    for i, s in enumerate(old):
        if s not in dropped:
            continue
        older_kept = [k for k in old[:i] if k["manifest-list"] in kept_lists]
        if older_kept:
            protect = manifests_of(older_kept[-1]["manifest-list"]) | manifests_of(current_list)
        else:
            successor = old[i + 1]["manifest-list"] if i + 1 < len(old) else current_list
            protect = manifests_of(successor) | manifests_of(current_list)
        doomed |= manifests_of(s["manifest-list"]) - protect
        try:
            lists.append(_own_file(directory, s["manifest-list"]))
        except ValueError:
            continue
    core.file_io.delete_quietly([*doomed, *lists])


def _publish_metadata(core: TableCore, path: str, data: bytes, snapshot: Snapshot) -> None:
    """Create ``vN.metadata.json`` whole or not at all (a reader, or the hint, never finds it
    torn). One already there that mirrors this snapshot (a racing writer's, Java's) is kept;
    one left by a rolled-back timeline whose id was used again is replaced."""
    fio = core.file_io
    if fio.try_write_atomic(path, data):
        return
    try:
        doc = json.loads(fio.read_bytes(path))
        ok = isinstance(doc, dict) and doc.get("current-snapshot-id") == snapshot.id and any(
            isinstance(s, dict) and s.get("snapshot-id") == snapshot.id and _mirrors(s, snapshot)
            for s in doc.get("snapshots") or ())
    except (FileNotFoundError, ValueError, UnicodeDecodeError, PaimonError):
        ok = False
    if not ok:
        fio.delete(path)
        fio.try_write_atomic(path, data)  # False: a racing writer created it just now


def _versions(names: Sequence[str]) -> dict[int, str]:
    out = {}
    for name in names:
        if name.startswith("v") and name.endswith(".metadata.json"):
            try:
                out[int(name[1:-len(".metadata.json")])] = name
            except ValueError:
                continue
    return out


def _delete_old_metadata(core: TableCore, directory: str, names: Sequence[str], below: int) -> None:
    """Java's delete-after-commit: metadata JSON files of versions below ``below``."""
    core.file_io.delete_quietly([posixpath.join(directory, n) for v, n in _versions(names).items() if v < below])


def _delete_rolled_back(core: TableCore, directory: str, names: Sequence[str], current: int) -> None:
    """Metadata files of versions above the snapshot just mirrored that mirror no Paimon
    snapshot (left by a rollback): a reader listing versions must not take them for the
    newest. One a racing writer wrote for a newer snapshot mirrors it and stays."""
    fio = core.file_io
    stale = []
    for version, name in _versions(names).items():
        if version <= current:
            continue
        path = posixpath.join(directory, name)
        paimon = core.snapshot_manager.try_snapshot(version)
        try:
            doc = json.loads(fio.read_bytes(path))
            ok = paimon is not None and any(isinstance(s, dict) and s.get("snapshot-id") == version and
                                            _mirrors(s, paimon) for s in doc.get("snapshots") or ())
        except (FileNotFoundError, ValueError, UnicodeDecodeError, AttributeError, PaimonError):
            ok = paimon is not None  # unreadable: only a file of a dead timeline is removed
        if not ok:
            stale.append(path)
    fio.delete_quietly(stale)


def sync_after_commit(core: TableCore, read_live: Callable[[Snapshot], list[ManifestEntry]],
                      file_path: Callable[[bytes, int, DataFileMeta], str]) -> None:
    """The commit callback: :func:`sync_iceberg`, where a failure is logged, not raised. The
    Paimon snapshot is published already, so the commit succeeded; the Iceberg view stays at an
    older snapshot until the next commit (or ``sync_iceberg``) writes it."""
    try:
        sync_iceberg(core, read_live, file_path)
    except (PaimonError, OSError) as e:
        log.warning("Iceberg metadata of %s not written (it stays behind until the next commit): %s",
                    core.identifier, e)

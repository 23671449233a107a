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

Not yet as Java (issue 48 later steps): every commit writes one manifest listing all live
files (Java reuses unchanged manifests); no column statistics in manifests (readers prune by
partition: the manifest list's partition summaries and the entries' partition values); Iceberg snapshots of intermediate Paimon snapshots (APPEND then COMPACT in one commit)
are skipped, only the newest is mirrored.
"""

from __future__ import annotations

import io
import json
import logging
import posixpath
import uuid
from typing import Callable, Sequence

from impl.data.binary_row import decode_row
from impl.datafile.meta import DataFileMeta
from impl.errors import InvalidOptionError, PaimonError, UnsupportedOptionError
from impl.format.avro import fastavro_module
from impl.fs.names import MAIN_BRANCH
from impl.iceberg.build import (
    MANIFEST_LIST_AVRO_SCHEMA,
    PARTITION_SPEC_ID,
    DataFile,
    manifest_entry,
    manifest_entry_avro_schema,
    manifest_file_record,
    name_mapping,
    partition_fields,
    schema_json,
    snapshot_json,
    table_metadata,
)
from impl.manifest.records import ManifestEntry
from impl.options.iceberg import STORAGE, IcebergSettings, StorageLocation, check_iceberg_table
from impl.snapshot.records import Snapshot
from impl.store.core import TableCore

log = logging.getLogger(__name__)

VERSION_HINT = "version-hint.text"
# a metadata file larger than this is not one impl wrote for a table it can mirror: rebuilt
_MAX_METADATA_BYTES = 64 * 1024 * 1024


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
    earliest = sm.earliest_snapshot_id()
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


def _data_files(core: TableCore, entries: Sequence[ManifestEntry],
                file_path: Callable[[bytes, int, DataFileMeta], str]) -> list[DataFile]:
    keys = list(core.schema.partition_keys)
    types = [core.schema.field(k).type for k in keys]
    cache: dict[bytes, dict] = {}
    out = []
    for e in entries:
        part = cache.get(e.partition)
        if part is None:
            part = dict(zip(keys, decode_row(e.partition, types), strict=True)) if keys else {}
            cache[e.partition] = part
        out.append(DataFile(file_path(e.partition, e.bucket, e.file), part, e.file.row_count, e.file.file_size))
    return out


def sync_iceberg(core: TableCore, read_live: Callable[[Snapshot], list[ManifestEntry]],
                 file_path: Callable[[bytes, int, DataFileMeta], str]) -> str | None:
    """Write the Iceberg metadata of the newest Paimon snapshot, unless it is already there;
    return the path of its ``vN.metadata.json`` (None: Iceberg metadata is off, or no
    snapshot). ``read_live`` gives a snapshot's live file entries, ``file_path`` a data file's
    full path (FileStoreCommit's)."""
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
    uri = fio.uri  # Iceberg readers open full URIs (s3://bucket/...): impl's paths are scheme-less
    files = _data_files(core, read_live(snapshot), lambda p, b, f: uri(file_path(p, b, f)))
    run = str(uuid.uuid4())
    table_uuid = previous.get("table-uuid") if previous is not None else None
    if not isinstance(table_uuid, str):
        table_uuid = str(uuid.uuid4())
    schema_doc = schema_json(schema)
    file_meta = {"schema": json.dumps(schema_doc), "schema-id": str(schema.id),
                 "partition-spec": json.dumps(partition_fields(schema)),
                 "partition-spec-id": str(PARTITION_SPEC_ID), "format-version": "2", "content": "data"}
    manifests = []
    if files:
        manifest_path = posixpath.join(directory, f"{run}-m1.avro")
        data = _avro(manifest_entry_avro_schema(schema), [manifest_entry(f, snapshot.id) for f in files],
                     settings.avro_codec, file_meta)
        fio.write_bytes(manifest_path, data)
        manifests.append(manifest_file_record(uri(manifest_path), len(data), snapshot.id, schema, files))
    list_path = posixpath.join(directory, f"snap-1-{run}.avro")
    fio.write_bytes(list_path, _avro(MANIFEST_LIST_AVRO_SCHEMA, manifests, settings.avro_codec, {
        "snapshot-id": str(snapshot.id), "sequence-number": str(snapshot.id), "format-version": "2"}))
    kept = _kept_snapshots(core, previous, snapshot)
    parent = max((s["snapshot-id"] for s in kept), default=None)
    current = snapshot_json(snapshot.id, parent, snapshot.time_millis, snapshot.commit_kind.value, schema.id,
                            uri(list_path), files)
    doc = table_metadata(table_uuid=table_uuid, location=uri(core.path), schema=schema, older_schemas=older,
                         name_map=name_mapping(older), snapshots=kept, current=current)
    _publish_metadata(core, meta_path, json.dumps(doc, indent=2).encode(), snapshot)
    fio.overwrite_hint(posixpath.join(directory, VERSION_HINT), str(snapshot.id))
    names = fio.list_names(directory)
    _delete_rolled_back(core, directory, names, snapshot.id)
    if settings.delete_after_commit:
        _delete_old_metadata(core, directory, names, snapshot.id - settings.previous_versions_max)
    return meta_path


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

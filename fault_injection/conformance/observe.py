"""The black-box observer: a table's state as its files on storage say, whoever wrote them.

Paimon's format defines the snapshot, manifest list and manifest files, so reading them with
impl's codecs (through :func:`fault_injection.table_audit.audit_table`) is fair for any target:
the observer sees what a Paimon reader would see, not what the target reports.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from fault_injection.conformance.adapter import TableRef
from fault_injection.table_audit import TableAudit, audit_table
from impl.data.binary_row import decode_row
from impl.fs.file_io import FileIO
from impl.manifest.records import ManifestEntry
from impl.schema.records import TableSchema
from model import FileFacts


@dataclass(frozen=True)
class ObservedSnapshot:
    id: int
    kind: str  # APPEND, COMPACT, OVERWRITE (Paimon's commitKind)
    commit_user: str
    commit_identifier: int
    total_record_count: int | None
    delta_record_count: int | None
    live: tuple[FileFacts, ...]  # the fold of its base + delta manifests


@dataclass(frozen=True)
class Observation:
    snapshots: tuple[ObservedSnapshot, ...]  # every retained snapshot that could be read, by id
    snapshot_ids: tuple[int, ...]  # every snapshot file listed
    problems: tuple[str, ...]  # what the storage audit found wrong (ids, hints, missing files, folds)

    def latest(self) -> ObservedSnapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    def by_id(self, snapshot_id: int) -> ObservedSnapshot | None:
        return next((s for s in self.snapshots if s.id == snapshot_id), None)


def table_path(table: TableRef) -> tuple[FileIO, str]:
    """The FileIO and path of the table's directory (``<warehouse>/<db>.db/<name>``)."""
    file_io, root = FileIO.for_path(table.warehouse, options=dict(table.storage_options) or None)
    db, name = table.identifier.split(".", 1)
    return file_io, posixpath.join(root.rstrip("/"), f"{db}.db", name)


def file_facts(entry: ManifestEntry, schema: TableSchema) -> FileFacts:
    """The model's facts of one live entry: partition and keys decoded to plain tuples."""
    partition = decode_row(entry.partition, [schema.field(k).type for k in schema.partition_keys]) \
        if schema.partition_keys else ()
    min_key = max_key = None
    if schema.primary_keys:
        key_types = [schema.field(k).type for k in schema.trimmed_primary_keys]
        min_key = decode_row(entry.file.min_key, key_types)
        max_key = decode_row(entry.file.max_key, key_types)
    return FileFacts(partition, entry.bucket, entry.total_buckets, entry.file.level, entry.file.file_name,
                     min_key, max_key, entry.file.row_count)


def snapshots_of(audit: TableAudit) -> tuple[ObservedSnapshot, ...]:
    out = []
    for sid in audit.snapshot_ids:
        view = audit.views.get(sid)
        if view is None or audit.schema is None:
            continue
        s = view.snapshot
        live = tuple(sorted((file_facts(e, audit.schema) for e in view.live), key=lambda f: f.file_name))
        out.append(ObservedSnapshot(s.id, s.commit_kind.value, s.commit_user, s.commit_identifier,
                                    s.total_record_count, s.delta_record_count, live))
    return tuple(out)


def observe(table: TableRef) -> Observation:
    """Read every retained snapshot of ``table`` from storage (never raises for a problem it can name)."""
    file_io, path = table_path(table)
    audit = audit_table(file_io, path)
    return Observation(snapshots_of(audit), tuple(audit.snapshot_ids), tuple(audit.problems))

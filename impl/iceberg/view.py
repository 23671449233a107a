"""The Iceberg view of a table, as an Iceberg reader sees it (``paimon-py iceberg``): where its
metadata is, which Iceberg snapshot is current and which Paimon snapshot it mirrors, the schema
with field ids, the partition spec and the snapshot history.

Each Iceberg snapshot mirrors the Paimon snapshot of the same id (impl and Paimon Java both
give an Iceberg snapshot its Paimon snapshot's id; Java's summary carries no other key for
it), so a view is *behind* when its current snapshot id is below the newest Paimon snapshot's
(a crash between the Paimon publication and the Iceberg write): the next commit, or
``sync_iceberg``, brings it level.

Example::

    view = iceberg_view(table.core)
    print(view.metadata_location, view.current_snapshot_id, view.behind)
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from impl.errors import IcebergMetadataNotExistError
from impl.iceberg.commit import _read_previous, check_table, metadata_dir
from impl.store.core import TableCore


@dataclass(frozen=True)
class IcebergField:
    """A column of the Iceberg schema: Iceberg's field id (= Paimon's), name, type, required."""

    field_id: int
    name: str
    type: str
    required: bool


@dataclass(frozen=True)
class IcebergPartitionField:
    """An identity partition field of the spec: its field id (from 1000) and source column id."""

    field_id: int
    name: str
    source_id: int
    transform: str


@dataclass(frozen=True)
class IcebergSnapshot:
    """One Iceberg snapshot of the history; it mirrors Paimon snapshot ``snapshot_id``."""

    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int
    operation: str
    total_records: int | None


@dataclass(frozen=True)
class IcebergView:
    """The Iceberg metadata of a table's newest mirrored Paimon snapshot."""

    storage: str
    metadata_location: str
    table_uuid: str
    current_snapshot_id: int | None
    latest_paimon_snapshot_id: int | None
    fields: tuple[IcebergField, ...]
    partition_spec: tuple[IcebergPartitionField, ...]
    snapshots: tuple[IcebergSnapshot, ...]

    @property
    def mirrored_paimon_snapshot_id(self) -> int | None:
        """The Paimon snapshot the current Iceberg snapshot mirrors (the same id)."""
        return self.current_snapshot_id

    @property
    def behind(self) -> bool:
        """Whether a newer Paimon snapshot is not mirrored yet (``sync_iceberg`` catches up)."""
        latest = self.latest_paimon_snapshot_id
        return latest is not None and (self.current_snapshot_id is None or self.current_snapshot_id < latest)


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def view_of(doc: dict, *, storage: str, location: str, latest_paimon: int | None) -> IcebergView:
    """The view of one ``vN.metadata.json`` document (pure: no I/O; malformed parts left out)."""
    current = _int(doc.get("current-snapshot-id"))
    schema_id = doc.get("current-schema-id")
    schema = next((s for s in doc.get("schemas") or () if isinstance(s, dict) and s.get("schema-id") == schema_id),
                  {})
    fields = tuple(IcebergField(f["id"], str(f.get("name")), str(f.get("type")), bool(f.get("required")))
                   for f in schema.get("fields") or () if isinstance(f, dict) and _int(f.get("id")) is not None)
    spec_id = doc.get("default-spec-id")
    spec = next((s for s in doc.get("partition-specs") or () if isinstance(s, dict) and s.get("spec-id") == spec_id),
                {})
    parts = tuple(IcebergPartitionField(p["field-id"], str(p.get("name")), int(p.get("source-id", -1)),
                                        str(p.get("transform")))
                  for p in spec.get("fields") or () if isinstance(p, dict) and _int(p.get("field-id")) is not None)
    snaps = []
    for s in doc.get("snapshots") or ():
        sid = _int(s.get("snapshot-id")) if isinstance(s, dict) else None
        if sid is None:
            continue
        summary = s.get("summary") if isinstance(s.get("summary"), dict) else {}
        total = summary.get("total-records")
        snaps.append(IcebergSnapshot(sid, _int(s.get("parent-snapshot-id")), _int(s.get("timestamp-ms")) or 0,
                                     str(summary.get("operation")),
                                     int(total) if isinstance(total, str) and total.isdigit() else None))
    snaps.sort(key=lambda s: s.snapshot_id)
    return IcebergView(storage=storage, metadata_location=location, table_uuid=str(doc.get("table-uuid")),
                       current_snapshot_id=current, latest_paimon_snapshot_id=latest_paimon, fields=fields,
                       partition_spec=parts, snapshots=tuple(snaps))


def iceberg_view(core: TableCore) -> IcebergView:
    """The Iceberg view of the table ``core``, read from its version hint and metadata file.

    IcebergMetadataNotExistError when the table keeps no Iceberg metadata
    (``metadata.iceberg.storage`` is off) or none has been written yet (no commit since it was
    turned on; ``sync_iceberg`` writes it). The refusals of ``check_table`` (a branch, an
    unsupported table kind) are raised as they are.

    >>> view = iceberg_view(table.core)  # doctest: +SKIP
    >>> view.current_snapshot_id == table.latest_snapshot().id  # doctest: +SKIP
    True
    """
    settings = check_table(core)
    if settings is None:
        raise IcebergMetadataNotExistError(
            core.identifier, "option 'metadata.iceberg.storage' is not set (or disabled): the table keeps no "
            "Iceberg metadata; set it to table-location or hadoop-catalog")
    directory = metadata_dir(core.path, settings)
    doc = _read_previous(core, directory)
    latest = core.snapshot_manager.latest_snapshot_id()
    if doc is None or _int(doc.get("current-snapshot-id")) is None:
        raise IcebergMetadataNotExistError(
            core.identifier, f"no readable Iceberg metadata under {directory!r} yet (the next commit writes it; "
            "paimon-py iceberg --sync writes it now)")
    location = core.file_io.uri(posixpath.join(directory, f"v{doc['current-snapshot-id']}.metadata.json"))
    return view_of(doc, storage=settings.storage.value, location=location, latest_paimon=latest)

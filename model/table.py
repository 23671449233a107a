"""The model table: a list of retained snapshots, and the operations commit, overwrite, expire, read."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Hashable, Iterable, Mapping

from model.errors import (
    InvalidTagNameError,
    SchemaChangedError,
    SnapshotNotExistError,
    TagAlreadyExistError,
    TagNotExistError,
)
from model.rules import (
    ADD,
    APPEND,
    COMPACT,
    DELETE,
    OVERWRITE,
    Entry,
    FileFacts,
    Identity,
    IndexEntry,
    IndexFacts,
    IndexIdentity,
    check_conflicts,
    check_index_conflicts,
    file_names_kept,
    files_kept,
    fold_index,
)
from model.schema import SchemaFacts, commit_schema_problem

_EMPTY: Mapping[Identity, FileFacts] = MappingProxyType({})
_NO_INDEX: Mapping[IndexIdentity, IndexFacts] = MappingProxyType({})


@dataclass(frozen=True)
class Snapshot:
    id: int
    kind: str  # APPEND, COMPACT or OVERWRITE
    commit_user: str
    commit_identifier: int
    live: Mapping[Identity, FileFacts]  # the fold of every entry published up to this snapshot
    changes: tuple[Entry, ...]  # the entries this snapshot published (its delta), in order
    total_record_count: int  # sum of row_count over live
    delta_record_count: int  # sum of ADD row counts - sum of DELETE row counts over changes
    # live index files (the index manifest)
    index: Mapping[IndexIdentity, IndexFacts] = field(default_factory=lambda: _NO_INDEX)
    schema_id: int = 0  # the table's latest schema when the snapshot was published


class Model:
    """Reference table. ``snapshots`` holds the retained snapshots, ids contiguous and ascending;
    ``tags`` maps a tag name to the snapshot it keeps (which may have expired)."""

    def __init__(self, primary_key: bool, schema: SchemaFacts | None = None):
        self.primary_key = primary_key
        self.snapshots: list[Snapshot] = []
        self.tags: dict[str, Snapshot] = {}
        # schema ids 0..n, never removed; empty when a test does not track schemas
        self.schemas: list[SchemaFacts] = [schema] if schema is not None else []

    def alter(self, new: SchemaFacts) -> int:
        """Publish the next schema (id latest + 1); its id."""
        expected = self.schemas[-1].id + 1 if self.schemas else 0
        if new.id != expected:
            raise ValueError(f"the next schema has id {expected}, not {new.id}")
        self.schemas.append(new)
        return new.id

    def schema_problem(self, prepared_schema_id: int | None) -> str | None:
        """Why a commit prepared under ``prepared_schema_id`` would be refused now, or None."""
        if not self.schemas or prepared_schema_id is None:
            return None
        return commit_schema_problem(self.schemas[prepared_schema_id], self.schemas[-1])

    def _schema_id_for(self, prepared_schema_id: int | None) -> int:
        """The rule of a commit prepared under ``prepared_schema_id`` (None: the latest)."""
        if not self.schemas:
            return 0
        latest = self.schemas[-1]
        if prepared_schema_id is not None:
            problem = commit_schema_problem(self.schemas[prepared_schema_id], latest)
            if problem is not None:
                raise SchemaChangedError(f"prepared under schema {prepared_schema_id}, table at {latest.id}: {problem}",
                                         prepared_schema_id, latest.id)
        return latest.id

    # ------------------------------------------------------------------ reading

    def latest(self) -> Snapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    def earliest(self) -> Snapshot | None:
        return self.snapshots[0] if self.snapshots else None

    def snapshot(self, snapshot_id: int) -> Snapshot:
        first = self.snapshots[0].id if self.snapshots else 1
        index = snapshot_id - first
        if not 0 <= index < len(self.snapshots):  # never published, or expired
            raise SnapshotNotExistError(snapshot_id)
        return self.snapshots[index]

    def read(self, snapshot_id: int) -> Mapping[Identity, FileFacts]:
        return self.snapshot(snapshot_id).live

    def live(self) -> Mapping[Identity, FileFacts]:
        """Live files of the latest snapshot (empty before the first commit)."""
        latest = self.latest()
        return latest.live if latest else _EMPTY

    def live_index(self) -> Mapping[IndexIdentity, IndexFacts]:
        """Live index files of the latest snapshot."""
        latest = self.latest()
        return latest.index if latest else _NO_INDEX

    def files_needed(self) -> frozenset[Identity]:
        """Identities live in any retained or tagged snapshot: what storage must still hold."""
        return files_kept((s.live for s in self.snapshots), (s.live for s in self.tags.values()))

    def file_names_needed(self) -> frozenset[str]:
        """Names of the data files of ``files_needed`` and of their extra files (``.index``)."""
        return file_names_kept((s.live for s in self.snapshots), (s.live for s in self.tags.values()))

    def committed_kinds(self, user: str, identifier: int) -> set[str]:
        """Kinds of the retained snapshots published by (user, identifier)."""
        return {
            s.kind
            for s in self.snapshots
            if s.commit_user == user and s.commit_identifier == identifier
        }

    # ------------------------------------------------------------------ writing

    def commit(
        self,
        user: str,
        identifier: int,
        new_files: Iterable[FileFacts] = (),
        deleted_files: Iterable[FileFacts] = (),
        compact_before: Iterable[FileFacts] = (),
        compact_after: Iterable[FileFacts] = (),
        *,
        new_index_files: Iterable[IndexFacts] = (),
        deleted_index_files: Iterable[IndexFacts] = (),
        index_views: Mapping[Hashable, frozenset[str]] | None = None,
        skip_committed: bool = False,
        prepared_schema_id: int | None = None,
    ) -> list[int]:
        """Commit one committable: an APPEND snapshot, then a COMPACT snapshot; return the new ids.

        ``prepared_schema_id``: the schema the files were written under; each publication
        checks it against the latest schema (``model.schema.commit_schema_problem``) and takes
        the latest schema id.

        Each part is checked against the LATEST snapshot at its own publication (a committer's
        stale view only shows up as conflicts). Empty parts publish nothing. The two snapshots are
        two publications: a conflict in the COMPACT part raises but leaves the APPEND published.
        With ``skip_committed``, a part whose (user, identifier, kind) is already in a retained
        snapshot is skipped, so re-running a commit completes it exactly once. Index file
        changes and ``index_views`` (dynamic bucket mode: per partition, the HASH index file
        names the rows were routed by) ride in the APPEND part.
        """
        append = [Entry(ADD, f) for f in new_files] + [Entry(DELETE, f) for f in deleted_files]
        index = [IndexEntry(ADD, f) for f in new_index_files] + [IndexEntry(DELETE, f) for f in deleted_index_files]
        compact = [Entry(DELETE, f) for f in compact_before] + [Entry(ADD, f) for f in compact_after]
        done = self.committed_kinds(user, identifier) if skip_committed else set()
        published = []
        if (append or index or index_views) and APPEND not in done:
            published.append(self._publish(APPEND, user, identifier, append, prepared_schema_id, index, index_views))
        if compact and COMPACT not in done:
            # may raise: APPEND stays
            published.append(self._publish(COMPACT, user, identifier, compact, prepared_schema_id))
        return published

    def overwrite(
        self,
        user: str,
        identifier: int,
        partitions: Iterable[Hashable] | None = None,
        new_files: Iterable[FileFacts] = (),
        *,
        new_index_files: Iterable[IndexFacts] = (),
        skip_committed: bool = False,
        prepared_schema_id: int | None = None,
    ) -> list[int]:
        """Replace the live files of ``partitions`` (None: the whole table) by ``new_files``;
        every index file of those partitions (HASH, deletion vectors) is replaced by
        ``new_index_files``, as impl and Paimon do: their data files all go.

        Always publishes one OVERWRITE snapshot, even with no changes (unless skipped as already
        committed). A new file outside ``partitions`` is bad input (ValueError), as in Paimon.
        """
        new_files = list(new_files)
        if partitions is not None:
            partitions = set(partitions)
            outside = [f.file_name for f in new_files if f.partition not in partitions]
            if outside:
                raise ValueError(f"overwrite of partitions {partitions}: files {outside} lie outside")
        if skip_committed and OVERWRITE in self.committed_kinds(user, identifier):
            return []
        changes = [
            Entry(DELETE, f)
            for f in self.live().values()
            if partitions is None or f.partition in partitions
        ] + [Entry(ADD, f) for f in new_files]
        index = [
            IndexEntry(DELETE, f)
            for f in self.live_index().values()
            if partitions is None or f.partition in partitions
        ] + [IndexEntry(ADD, f) for f in new_index_files]
        return [self._publish(OVERWRITE, user, identifier, changes, prepared_schema_id, index)]

    def _publish(self, kind: str, user: str, identifier: int, changes: list[Entry],
                 prepared_schema_id: int | None = None, index_changes: list[IndexEntry] | None = None,
                 index_views: Mapping[Hashable, frozenset[str]] | None = None) -> int:
        """Check ``changes`` against the latest snapshot and append the next snapshot (or raise)."""
        live = check_conflicts(self.live(), changes, kind, self.primary_key)
        schema_id = self._schema_id_for(prepared_schema_id)  # impl checks the schema before the index
        index = self.live_index()
        check_index_conflicts(index, index_changes or (), index_views)
        if index_changes:
            index = MappingProxyType(fold_index(index, index_changes))
        latest = self.latest()
        snapshot = Snapshot(
            id=latest.id + 1 if latest else 1,
            kind=kind,
            commit_user=user,
            commit_identifier=identifier,
            live=MappingProxyType(live),
            changes=tuple(changes),
            total_record_count=sum(f.row_count for f in live.values()),
            delta_record_count=sum(
                e.file.row_count if e.kind == ADD else -e.file.row_count for e in changes
            ),
            index=index,
            schema_id=schema_id,
        )
        self.snapshots.append(snapshot)
        return snapshot.id

    # ------------------------------------------------------------------ expiring

    def expire(self, retain_min: int, retain_max: int) -> list[int]:
        """Remove the oldest snapshots so that at most ``retain_max`` and at least ``retain_min``
        remain (the latest always remains). Requires 1 <= retain_min <= retain_max, as Paimon does.
        Returns the removed ids, oldest first.
        """
        if not 1 <= retain_min <= retain_max:
            raise ValueError(f"need 1 <= retain_min <= retain_max, got {retain_min}, {retain_max}")
        keep = max(retain_min, min(retain_max, len(self.snapshots)))
        removed = self.snapshots[: max(0, len(self.snapshots) - keep)]
        del self.snapshots[: len(removed)]
        return [s.id for s in removed]

    # ------------------------------------------------------------------ tags

    def create_tag(self, name: str, snapshot_id: int | None = None) -> Snapshot:
        """Tag the latest snapshot or ``snapshot_id``. An expired snapshot can be tagged only
        while another tag keeps it; a taken name is refused (tags are created if absent)."""
        # checked in this order: the name's form, the snapshot, then whether the name is taken
        if not name.strip():
            raise InvalidTagNameError(f"tag name {name!r} is blank")
        if snapshot_id is None:
            snap = self.latest()
            if snap is None:
                raise SnapshotNotExistError(0)
        else:
            held = [s for s in self.tags.values() if s.id == snapshot_id]
            snap = held[0] if held else self.snapshot(snapshot_id)
        if name in self.tags:
            raise TagAlreadyExistError(f"tag {name!r} already exists")
        self.tags[name] = snap
        return snap

    def delete_tag(self, name: str) -> None:
        if name not in self.tags:
            raise TagNotExistError(f"tag {name!r} does not exist")
        del self.tags[name]

    def read_tag(self, name: str) -> Mapping[Identity, FileFacts]:
        if name not in self.tags:
            raise TagNotExistError(f"tag {name!r} does not exist")
        return self.tags[name].live

    def rollback_to(self, snapshot_id: int) -> None:
        """Make ``snapshot_id`` the latest: newer snapshots and the tags of newer snapshots go.
        An expired snapshot that a tag keeps comes back as the only snapshot."""
        held = [s for s in self.tags.values() if s.id == snapshot_id]
        first = self.snapshots[0].id if self.snapshots else None
        if first is not None and first <= snapshot_id <= self.snapshots[-1].id:
            del self.snapshots[snapshot_id - first + 1:]
        elif held:
            self.snapshots = [held[0]]
        else:
            raise SnapshotNotExistError(snapshot_id)
        self.tags = {n: s for n, s in self.tags.items() if s.id <= snapshot_id}

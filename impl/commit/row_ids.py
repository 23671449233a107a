"""Row tracking at commit (Paimon's RowTrackingCommitUtils): first row ids and the snapshot's ``nextRowId``.

On a ``row-tracking.enabled`` table every row has a stable id. The commit, not the writer,
hands out ids, on every try against the snapshot it builds on, so racing writers never share
one: each try starts at the latest snapshot's ``nextRowId`` (0 when it has none) and

1. gives every entry whose file has min sequence number 0 (a fresh append file) the new
   snapshot id as its min and max sequence number: a row's ``_SEQUENCE_NUMBER`` is the snapshot
   that wrote it;
2. gives every APPEND-source file without a first row id (and without a ``_ROW_ID`` write
   column) the next ``row_count`` ids, in entry order; compaction outputs and files that
   already carry ids (a data-evolution column update names the range it rewrites) keep theirs;
3. records the id after the last one handed out as the new snapshot's ``nextRowId``.

The rules (one home each, checked by the model in ``model/row_ids.py``): ids are never reused,
the ranges of live files that are not column updates never overlap, and ``nextRowId`` never
decreases.

Column updates of data-evolution tables (:func:`check_column_updates`, Paimon's
ConflictDetection ``checkForRowIdFromSnapshot``) must cover exactly the range of a live file
that is not an update, and conflict with any file a later snapshot (not a compaction) added over
their ranges among the rows that existed when the update read them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from impl.commit.conflicts import Fold
from impl.datafile.meta import FileSource
from impl.errors import RowIdConflictError
from impl.manifest.records import FileKind, ManifestEntry

ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"


def needs_row_ids(entry: ManifestEntry) -> bool:
    """True for an appended file the commit must give ids to (rule 2)."""
    f = entry.file
    return (f.file_source is FileSource.APPEND and f.first_row_id is None
            and not (f.write_cols is not None and ROW_ID in f.write_cols))


def assign_row_tracking(changes: Sequence[ManifestEntry], snapshot_id: int,
                        next_row_id: int) -> tuple[list[ManifestEntry], int]:
    """The changes with sequence numbers and first row ids assigned (rules 1 and 2), and the
    snapshot's ``nextRowId`` (rule 3). ``next_row_id``: the base snapshot's, 0 if it has none."""
    out: list[ManifestEntry] = []
    start = next_row_id
    for e in changes:
        f = e.file
        if f.min_sequence_number == 0:
            f = replace(f, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
        if needs_row_ids(e):
            f = replace(f, first_row_id=start)
            start += f.row_count
        out.append(e if f is e.file else replace(e, file=f))
    return out, start


def with_assigned(fold: Fold, assigned: Sequence[ManifestEntry]) -> Fold:
    """``fold`` with its added entries replaced by their assigned forms (same identities)."""
    by_identity = {e.identity: e for e in assigned}
    return Fold(fold.removed, {i: by_identity.get(i, e) for i, e in fold.added.items()})


def _range(e: ManifestEntry) -> tuple[int, int] | None:
    f = e.file
    if f.first_row_id is None or f.row_count <= 0:
        return None
    return f.first_row_id, f.first_row_id + f.row_count - 1


def is_column_update(e: ManifestEntry) -> bool:
    """An ADD of a file rewriting some columns of an existing row-id range."""
    return e.kind is FileKind.ADD and e.file.write_cols is not None and e.file.first_row_id is not None \
        and ROW_ID not in e.file.write_cols


def check_column_updates(changes: Sequence[ManifestEntry], live: Sequence[ManifestEntry],
                         read_next_row_id: int | None, later_adds: Sequence[ManifestEntry]) -> None:
    """RowIdConflictError unless each column update of ``changes`` covers exactly the range of a
    file of ``live`` that is not an update, and no file of ``later_adds`` (added by the snapshots
    after the one the update read, compactions excluded) lies over its range below
    ``read_next_row_id`` (that snapshot's nextRowId; None: not checked)."""
    updates = [(e, _range(e)) for e in changes if is_column_update(e)]
    if not updates:
        return
    bases = {_range(e) for e in live if not is_column_update(e) and e.file.write_cols is None} - {None}
    for e, r in updates:
        if r not in bases:
            raise RowIdConflictError(
                f"column update {e.file.file_name} rewrites row ids {r}, which is not the range of a live file "
                "(its rows were overwritten, deleted or compacted since they were read)", (e.file.file_name,))
    if read_next_row_id is None:
        return
    for later in later_adds:
        lr = _range(later)
        if lr is None or lr[0] >= read_next_row_id:
            continue
        for e, r in updates:
            assert r is not None
            if r[0] <= lr[1] and lr[0] <= r[1]:
                raise RowIdConflictError(
                    f"column update {e.file.file_name} (row ids {r}) conflicts with {later.file.file_name} "
                    f"(row ids {lr}), committed after the snapshot the update read: one of the two updates of "
                    "the same rows would be lost", (e.file.file_name, later.file.file_name))

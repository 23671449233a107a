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
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from impl.commit.conflicts import Fold
from impl.format.records import FileSource, ManifestEntry

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

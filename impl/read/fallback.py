"""``scan.fallback-branch``: a batch read of a table reads, for each partition its branch lacks,
that partition from the fallback branch (Paimon's ``FallbackReadFileStoreTable``).

Paimon 1.4.2's rules, carried over:

- the partitions that hold live files in this branch's snapshot (after the read's partition
  filter alone) are complete and read from this branch only, with the whole filter; every
  other partition the fallback branch holds (same partition filter) is read from the fallback
  branch, with the whole filter;
- the fallback branch is opened with this view's dynamic options, except ``branch``; a
  ``scan.snapshot-id`` becomes the fallback branch's newest snapshot committed at or before
  that snapshot's time (snapshot 1 when there is none); ``bucket`` is dropped (each branch
  keeps its own); ``scan.tag-name`` and ``scan.timestamp-millis`` are passed on as they are;
- both branches' row types must be equal position by position, nullability aside (Java:
  "Branch ... and ... does not have the same row type"); fallback rows are returned under
  this branch's column names and types;
- writes, streaming reads and incremental reads (``incremental-between``) are this branch's
  alone: only snapshot reads planned through a read builder fall back.

Where Paimon logs an error and reads this branch alone (the fallback branch does not exist),
this library raises BranchNotExistError: partitions would be missing without a word.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from impl.errors import BranchNotExistError, InvalidSchemaError, TableNotExistError
from impl.fs.names import BranchName
from impl.fs.paths import TablePaths
from impl.predicate.predicate import CompoundPredicate, LeafPredicate, Predicate
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotManager
from impl.store.core import TableCore, load_latest_schema

FALLBACK_BRANCH_KEY = "scan.fallback-branch"
_FIRST_SNAPSHOT_ID = 1


def fallback_branch_name(core: TableCore) -> BranchName | None:
    """The fallback branch of ``core``'s view (checked when the option was parsed), or None when
    it has none (unset, blank, or the view's own branch: reading a branch's own partitions again
    adds nothing)."""
    name = core.options.scan_fallback_branch
    if name is None or name == core.branch:
        return None
    return name


def fallback_options(core: TableCore, name: str, other_snapshots: SnapshotManager) -> dict[str, str]:
    """The dynamic options of the fallback branch's view (Java's ``rewriteOtherOptions``)."""
    out = {k: v for k, v in core.dynamic_options.items() if k != "bucket"}
    out["branch"] = name
    out[FALLBACK_BRANCH_KEY] = ""  # the fallback branch's own fallback is never read (no chains)
    snapshot_id = core.options.scan_snapshot_id
    if snapshot_id is not None and "scan.snapshot-id" in core.dynamic_options:
        millis = core.snapshot_manager.snapshot(snapshot_id).time_millis
        other = other_snapshots.earlier_or_equal_time_millis(millis)
        out["scan.snapshot-id"] = str(other.id if other is not None else _FIRST_SNAPSHOT_ID)
    return out


def check_same_row_type(main: TableSchema, main_branch: str, other: TableSchema, other_branch: str) -> None:
    """InvalidSchemaError unless both row types are equal field by field, nullability aside."""
    same = len(main.fields) == len(other.fields) and all(
        a.type.copy(True) == b.type.copy(True) for a, b in zip(main.fields, other.fields, strict=True))
    if not same:
        def row(s: TableSchema) -> str:
            return ", ".join(f"{f.name} {f.type}" for f in s.fields)
        raise InvalidSchemaError(
            f"option {FALLBACK_BRANCH_KEY!r}: branch {main_branch!r} and its fallback branch {other_branch!r} do "
            f"not have the same row type: ({row(main)}) against ({row(other)})")


def open_fallback(core: TableCore) -> TableCore | None:
    """The view of ``core``'s fallback branch, or None without one. BranchNotExistError when the
    branch has no schema, InvalidSchemaError when its row type differs."""
    name = fallback_branch_name(core)
    if name is None:
        return None
    paths = TablePaths(core.path, id_factory=core.env.new_id, branch=name)
    try:
        schema = load_latest_schema(core.file_io, paths, core.identifier)
    except TableNotExistError:
        raise BranchNotExistError(core.identifier, name) from None
    check_same_row_type(core.schema, core.branch, schema, name)
    dynamic = fallback_options(core, name, SnapshotManager(core.file_io, paths))
    return TableCore.open(core.file_io, core.path, schema, core.identifier, dynamic, env=core.env)


def renamed_predicate(p: Predicate | None, names: Mapping[str, str]) -> Predicate | None:
    """``p`` over the columns ``names`` maps each name to (unmapped names kept)."""
    if p is None or not names:
        return p
    if isinstance(p, LeafPredicate):
        return replace(p, field=names.get(p.field, p.field))
    if isinstance(p, CompoundPredicate):
        return replace(p, children=tuple(renamed_predicate(c, names) for c in p.children))  # type: ignore[misc]
    raise TypeError(f"unknown predicate {type(p).__name__}")


def column_names(main: TableSchema, other: TableSchema) -> dict[str, str]:
    """This branch's column name -> the fallback branch's, by position, where they differ."""
    return {a.name: b.name for a, b in zip(main.fields, other.fields, strict=True) if a.name != b.name}

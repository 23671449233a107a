"""The oracle run after every schedule: invariants of specs/invariants.md and linearizability.

The published history is every write that landed on a ``snapshot-N`` key, from the simulated
store's log (so snapshots expiration removed later still count). Checks:

- one write per ``snapshot-N`` and ids 1..max without a gap (invariants 1, 6); the ids on
  storage at the end are contiguous;
- each (user, identifier, kind) publishes once (invariant 5);
- linearizability: the model's serial replay of the published parts in snapshot order accepts
  every part (invariants 11, 12) and yields, for every retained snapshot, the live set impl's
  manifests fold to (invariants 3, 9);
- every actor's report agrees with that history: acknowledged parts are there exactly once
  with the reported ids, a refused part is absent and the model refuses it (same class)
  against some state published since the actor started, a crashed-and-recovered actor's
  parts are there exactly once;
- readers saw only published states, and never a state older than a commit acknowledged
  before their read began (real-time order);
- every file live in a retained snapshot exists (invariant 4); in a run without crashes and
  storage faults the manifest directory holds exactly what retained snapshots reference
  (invariant 10), and an orphan removal that finished removed what set-up left unreferenced.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Sequence

from fault_injection.explore.scenario import (
    SETUP_ORPHANS,
    TABLE,
    ActorReport,
    Plan,
    Role,
    Status,
    World,
    seed_files,
)
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.snapshot.records import CommitKind, Snapshot
from model import Model, ModelError, check_conflicts
from model.rules import ADD, DELETE, Entry
from simulation.bridge import ModelFactsReader


@dataclass(frozen=True)
class Violation:
    rule: str  # e.g. "invariant 6", "linearizability"
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


def _part_entries(plan: Plan, kind: CommitKind) -> list[Entry]:
    if kind is CommitKind.COMPACT:
        return [Entry(DELETE, f) for f in plan.compact_before] + [Entry(ADD, f) for f in plan.compact_after]
    return [Entry(ADD, f) for f in plan.append]


def _kinds(plan: Plan) -> list[CommitKind]:
    if plan.overwrite_partition is not None:
        return [CommitKind.OVERWRITE]
    return ([CommitKind.APPEND] if plan.append else []) + ([CommitKind.COMPACT] if plan.compact_before else [])


def check(world: World, *, faults: bool) -> list[Violation]:
    out: list[Violation] = []
    store = world.store
    io = FileIO(store)
    paths = TablePaths(TABLE)

    # ---- publication: one write per id, contiguous ids
    history: dict[int, Snapshot] = {}
    for w in store.snapshot_writes:
        snap = Snapshot.from_json_bytes(w.data, w.path)
        if snap.id in history:
            # a second write of an id: a violation unless its writer withdrew it again (a
            # committer that re-took an expired id takes it back; see impl.commit.outcome.OutcomeResolver.joined)
            if store.files.get(w.path) == w.data:
                out.append(Violation("invariant 6", f"snapshot-{snap.id} written twice (by "
                                                    f"{history[snap.id].commit_user} and {snap.commit_user})"))
            continue
        history[snap.id] = snap
    ids = sorted(history)
    if ids != list(range(1, len(ids) + 1)):
        out.append(Violation("invariant 1", f"published ids are not contiguous from 1: {ids}"))
    reader = ModelFactsReader(io, TABLE)
    on_storage = reader.snapshot_ids()
    if on_storage and on_storage != list(range(on_storage[0], on_storage[-1] + 1)):
        out.append(Violation("invariant 1", f"snapshot ids on storage have a gap: {on_storage}"))
    parts: dict[tuple[str, int, CommitKind], list[int]] = {}
    for sid in ids:
        s = history[sid]
        parts.setdefault((s.commit_user, s.commit_identifier, s.commit_kind), []).append(sid)
    for key, sids in parts.items():
        if len(sids) > 1:
            out.append(Violation("invariant 5", f"part {key[0]}/{key[1]}/{key[2].value} published {len(sids)} times: "
                                                f"snapshots {sids}"))

    # ---- serial replay through the model
    model = Model(primary_key=True)
    plans = {r.plan.user: r.plan for r in world.reports if r.plan is not None}
    for sid in ids:
        s = history[sid]
        try:
            if s.commit_user == "seed":
                model.commit("seed", s.commit_identifier, new_files=seed_files(world.scenario))
            elif s.commit_user not in plans:
                out.append(Violation("linearizability", f"snapshot {sid} by unknown user {s.commit_user}"))
                return out
            else:
                plan = plans[s.commit_user]
                if s.commit_kind is CommitKind.OVERWRITE:
                    model.overwrite(s.commit_user, s.commit_identifier, [plan.overwrite_partition],
                                    new_files=plan.append)
                elif s.commit_kind is CommitKind.COMPACT:
                    model.commit(s.commit_user, s.commit_identifier, compact_before=plan.compact_before,
                                 compact_after=plan.compact_after)
                else:
                    model.commit(s.commit_user, s.commit_identifier, new_files=plan.append)
        except ModelError as e:
            out.append(Violation("linearizability", f"snapshot {sid} ({s.commit_user} {s.commit_kind.value}) "
                                                    f"publishes a part the serial replay refuses: {type(e).__name__}: {e}"))
            return out
    for sid in on_storage:
        try:
            snap = reader.snapshot(sid)
            live = reader.live(snap)
        except Exception as e:  # noqa: BLE001 - a retained snapshot that cannot be read is the finding
            out.append(Violation("invariant 4", f"retained snapshot {sid} cannot be read: {type(e).__name__}: {e}"))
            continue
        if live != dict(model.read(sid)):
            out.append(Violation("invariant 3", f"snapshot {sid} reads {sorted(k[3] for k in live)}, the serial "
                                                f"replay {sorted(k[3] for k in model.read(sid))}"))
        for facts in live.values():
            path = world.data_path(facts)
            if path not in store.files:
                out.append(Violation("invariant 4", f"{facts.file_name}, live in retained snapshot {sid}, is missing"))
        for name in reader.referenced_files(snap):
            if paths.manifest_path(name) not in store.files:
                out.append(Violation("invariant 4", f"{name}, referenced by snapshot {sid}, is missing"))

    # ---- failed attempts leave nothing (runs without crashes and storage faults)
    if not faults and on_storage:
        referenced: set[str] = set()
        for sid in on_storage:
            referenced |= reader.referenced_files(reader.snapshot(sid))
        manifest_dir = paths.manifest_dir + "/"
        setup_orphans = {posixpath.basename(rel) for rel in SETUP_ORPHANS}
        leftovers = sorted(posixpath.basename(k) for k in store.files
                           if k.startswith(manifest_dir) and posixpath.basename(k) not in referenced | setup_orphans)
        if leftovers and not world.scenario.expire:
            out.append(Violation("invariant 10", f"manifests no retained snapshot references: {leftovers}"))

    # ---- orphan removal that ran to its end removed what set-up left unreferenced
    for r in world.reports:
        if r.role is Role.ORPHANS and r.status is Status.OK and not faults:
            left = [rel for rel in SETUP_ORPHANS if posixpath.join(TABLE, rel) in store.files]
            if left:
                out.append(Violation("orphan removal", f"finished but left the unreferenced {left}"))

    # ---- every actor's report agrees with the history
    for r in world.reports:
        out.extend(_check_report(r, parts, model, ids))
    out.extend(_check_reads(world.reports, history, model))
    return out


def _check_report(r: ActorReport, parts: dict[tuple[str, int, CommitKind], list[int]], model: Model,
                  ids: Sequence[int]) -> list[Violation]:
    out: list[Violation] = []
    if r.error is not None and r.status is None:
        return [Violation("actor", f"{r.name} ended without an outcome: {r.error}")]
    if r.plan is None:
        return out
    mine = sorted(sid for (user, _, _), sids in parts.items() if user == r.name for sid in sids)
    if r.status is Status.OK:
        for kind in _kinds(r.plan):
            if (r.name, 1, kind) not in parts:
                out.append(Violation("linearizability", f"{r.name} was acknowledged but its {kind.value} part "
                                                        f"is not in the history"))
        if r.restarts == 0 and sorted(r.snapshot_ids) != mine:
            out.append(Violation("linearizability", f"{r.name} reported snapshots {r.snapshot_ids}, the history "
                                                    f"holds {mine}"))
    elif r.status is Status.CONFLICT:
        if r.restarts == 0 and sorted(r.snapshot_ids) != mine:
            out.append(Violation("linearizability", f"{r.name} reported {r.snapshot_ids} published before its "
                                                    f"conflict, the history holds {mine}"))
        refused = [k for k in _kinds(r.plan) if (r.name, 1, k) not in parts]
        # A restarted actor recovers through filter_committed, which cannot see a part of its
        # crashed predecessor that expiration removed already: committing that part again is
        # refused (its files are live), which is the safe outcome, so that part may be the refused one.
        candidates = refused[:1] if r.restarts == 0 else _kinds(r.plan)
        if not refused:
            out.append(Violation("linearizability", f"{r.name} reported {r.conflict} but all its parts are published"))
        else:
            start = max(r.latest_at_start or 1, 1)
            classes = set()
            for kind in candidates:
                for sid in range(start, (ids[-1] if ids else 0) + 1):
                    try:
                        check_conflicts(model.read(sid), _part_entries(r.plan, kind), kind.value, True)
                    except ModelError as e:
                        classes.add(type(e).__name__)
            if r.conflict not in classes:
                which = "/".join(k.value for k in candidates)
                out.append(Violation("invariant 11", f"{r.name} reported {r.conflict} for its {which} part; "
                                                     f"the model refuses it with {sorted(classes) or 'nothing'} "
                                                     f"against snapshots {start}..{ids[-1] if ids else 0}"))
    return out


def _check_reads(reports: Sequence[ActorReport], history: dict[int, Snapshot], model: Model) -> list[Violation]:
    out: list[Violation] = []
    acked = [(r.finished_step, max(r.snapshot_ids)) for r in reports
             if r.role in (Role.COMMITTER, Role.OVERWRITE, Role.COMPACTOR) and r.status is Status.OK and r.snapshot_ids
             and r.finished_step is not None]
    for r in reports:
        if r.role is not Role.READER:
            continue
        for obs in r.reads:
            if obs.snapshot_id is None:
                continue
            if obs.snapshot_id not in history:
                out.append(Violation("linearizability", f"{r.name} read snapshot {obs.snapshot_id}, never published"))
                continue
            if obs.live is not None and obs.live != frozenset(model.read(obs.snapshot_id)):
                out.append(Violation("linearizability", f"{r.name} read snapshot {obs.snapshot_id} as "
                                                        f"{sorted(k[3] for k in obs.live)}, published as "
                                                        f"{sorted(k[3] for k in model.read(obs.snapshot_id))}"))
            if obs.latest:
                floor = max((sid for step, sid in acked if step <= obs.started_step), default=0)
                if obs.snapshot_id < floor:
                    out.append(Violation("linearizability", f"{r.name} read latest = {obs.snapshot_id} after snapshot "
                                                            f"{floor} was acknowledged"))
    return out

"""The commit state machine through the adapter: seeded random step lists, shrunk on divergence.

Each run drives a fresh table with a list of steps; after every step the observer reads the
table's storage and the new snapshots are fed to :class:`model.Model` (a transition the model
refuses, a live set or record count that differs, a storage problem: divergence), and the rows
the target reads are compared with the rows the steps imply. Hypothesis' stateful machinery would
need the target in-process; plain seeded lists with greedy step deletion work the same for a
subprocess target and shrink just as well for these short lists.
"""

from __future__ import annotations

import random
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Callable

from fault_injection.conformance.adapter import (
    Capability,
    Outcome,
    Prepared,
    TableRef,
    TableSpec,
    Target,
    Unsupported,
)
from fault_injection.conformance.checks.duplicate import PLAIN_CITATION
from fault_injection.conformance.checks.result import CheckResult, Classification, Status, rows_difference
from fault_injection.conformance.observe import ObservedSnapshot, observe
from model import APPEND, COMPACT, OVERWRITE, CommitConflictError, FileFacts, Model, identity

USER = "machine-user"
OP_CAPABILITY = {"overwrite": Capability.OVERWRITE, "compact": Capability.COMPACT, "expire": Capability.EXPIRE,
                 "read_at": Capability.TIME_TRAVEL, "recommit_filter": Capability.FILTER_COMMITTED}
PARTITIONS = ("a", "b")


@dataclass(frozen=True)
class Step:
    op: str  # write, prepare, commit, recommit, recommit_filter, overwrite, compact, expire, read, read_at
    arg: tuple = ()
    seed: int = 0  # the step's own rows come from this seed: dropping other steps keeps them

    def __str__(self) -> str:
        return f"{self.op}{self.arg}"


def gen_steps(rng: random.Random, n: int, caps: frozenset[Capability],
              skip_ops: frozenset[str] = frozenset()) -> list[Step]:
    ops = ["write", "write", "write", "prepare", "commit", "commit", "recommit", "recommit_filter", "overwrite", "compact",
           "expire", "read", "read_at"]
    ops = [o for o in ops if (o not in OP_CAPABILITY or OP_CAPABILITY[o] in caps) and o not in skip_ops]
    steps = []
    for _ in range(n):
        op = rng.choice(ops)
        arg: tuple = ()
        if op in ("prepare", "commit", "recommit", "recommit_filter"):
            arg = (rng.randrange(3),)  # one of three handle slots
        elif op == "overwrite":
            arg = (rng.choice([None, *PARTITIONS]),)
        elif op == "expire":
            lo = rng.randint(1, 3)
            arg = (lo, lo + rng.randint(0, 2))
        steps.append(Step(op, arg, rng.randrange(1 << 30)))
    return steps


def step_rows(step: Step, spec: TableSpec, fresh_keys: bool, partition: str | None = None) -> list[dict]:
    """Rows of one step: few, unique keys within the step; pending handles use keys no other step uses."""
    rng = random.Random(step.seed)
    base = 1000 + (step.seed % 100_000) * 10 if fresh_keys else 0
    ids = rng.sample(range(base, base + 8), rng.randint(1, 4))
    return [{"dt": partition or rng.choice(PARTITIONS), "id": i, "v": rng.randrange(1000)} for i in ids]


def expected_after(rows: list[dict], new: list[dict], primary_key: bool) -> list[dict]:
    """Rows after committing ``new``: deduplicated by (dt, id) for primary-key tables, else appended."""
    if not primary_key:
        return rows + new
    merged = {(r["dt"], r["id"]): r for r in rows}
    merged.update({(r["dt"], r["id"]): r for r in new})
    return list(merged.values())


def transition(prev: tuple[FileFacts, ...], snap: ObservedSnapshot) -> tuple[list[FileFacts], list[FileFacts]]:
    """(added, deleted) between two consecutive live sets, by file identity."""
    before = {identity(f): f for f in prev}
    after = {identity(f): f for f in snap.live}
    return [f for k, f in after.items() if k not in before], [f for k, f in before.items() if k not in after]


def feed_model(model: Model, prev: tuple[FileFacts, ...], snap: ObservedSnapshot) -> list[str]:
    """Apply an observed snapshot to the model; what the model says is wrong with it."""
    added, deleted = transition(prev, snap)
    try:
        if snap.kind == APPEND:
            model.commit(snap.commit_user, snap.commit_identifier, added, deleted)
        elif snap.kind == COMPACT:
            model.commit(snap.commit_user, snap.commit_identifier, compact_before=deleted, compact_after=added)
        elif snap.kind == OVERWRITE:
            model.overwrite(snap.commit_user, snap.commit_identifier, {f.partition for f in added + deleted}, added)
        else:
            return [f"snapshot {snap.id} has kind {snap.kind}"]
    except CommitConflictError as e:
        return [f"snapshot {snap.id} ({snap.kind}) publishes what the model refuses: {type(e).__name__}: {e}"]
    latest = model.latest()
    problems = []
    if latest is None or latest.id != snap.id:
        problems.append(f"snapshot {snap.id}: the model numbers it {latest.id if latest else None}")
    elif set(latest.live) != {identity(f) for f in snap.live}:
        problems.append(f"snapshot {snap.id}: live files differ from the model's fold")
    elif snap.total_record_count is not None and snap.total_record_count != latest.total_record_count:
        problems.append(f"snapshot {snap.id}: totalRecordCount {snap.total_record_count}, "
                        f"model {latest.total_record_count}")
    elif snap.delta_record_count is not None and snap.delta_record_count != latest.delta_record_count:
        problems.append(f"snapshot {snap.id}: deltaRecordCount {snap.delta_record_count}, "
                        f"model {latest.delta_record_count}")
    return problems


@dataclass
class Run:
    """One run's state: the model, the implied rows per snapshot, the handles."""

    spec: TableSpec
    model: Model
    rows: list[dict] = field(default_factory=list)
    rows_at: dict[int, list[dict]] = field(default_factory=dict)
    handles: dict[int, tuple[Prepared, list[dict]]] = field(default_factory=dict)
    committed: dict[int, int] = field(default_factory=dict)  # slot -> identifier it was committed under
    next_ident: int = 1
    unsupported: set[Capability] = field(default_factory=set)


class Divergence(Exception):
    def __init__(self, step_index: int, message: str, expected: str):
        super().__init__(message)
        self.step_index = step_index
        self.expected = expected


def run_steps(target: Target, table: TableRef, spec: TableSpec, steps: list[Step]) -> Run:
    """Drive ``steps``; raise :class:`Divergence` at the first step whose outcome the model contradicts."""
    target.create_table(table, spec)
    run = Run(spec, Model(spec.primary_key))
    for i, step in enumerate(steps):
        before = observe(table)
        try:
            expect_new, expected_rows, note = _do(target, table, run, step)
        except Divergence as d:
            raise Divergence(i, str(d), d.expected) from None
        except Unsupported as e:
            run.unsupported.add(e.capability)
            continue
        after = observe(table)
        problems = list(after.problems)
        last = before.latest()
        prev_live = last.live if last else ()
        new = [s for s in after.snapshots if last is None or s.id > last.id]
        if expect_new is not None and len(new) != expect_new:
            problems.append(f"{len(new)} new snapshots, expected {expect_new}")
        for snap in new:
            problems += feed_model(run.model, prev_live, snap)
            prev_live = snap.live
            run.rows_at[snap.id] = list(expected_rows)
        if step.op == "expire":
            problems += note
        if step.op in ("read", "read_at") or new:
            retained = sorted(run.rows_at)
            sid = retained[step.seed % len(retained)] if step.op == "read_at" and retained else None
            try:
                got = target.read_rows(table, sid)
            except Unsupported as e:
                run.unsupported.add(e.capability)
                got = expected_rows if sid is None else run.rows_at[sid]
            except Exception as e:  # noqa: BLE001 - a failing read is a finding, not a crash of the suite
                problems.append(f"reading{f' snapshot {sid}' if sid else ''} raised {type(e).__name__}: {e}")
                got = None
            diff = rows_difference(run.rows_at[sid] if sid else expected_rows, got) if got is not None else ""
            if diff:
                problems.append(f"rows read{f' at snapshot {sid}' if sid else ''}: {diff}")
        run.rows = expected_rows
        if problems:
            raise Divergence(i, "; ".join(problems), note if isinstance(note, str) else
                             "expired ids and retained snapshots as Model.expire (retain_min, retain_max)")
    return run


def _do(target: Target, table: TableRef, run: Run, step: Step):
    """Perform one step: (snapshots expected, rows expected after it, what the model expected)."""
    pk = run.spec.primary_key
    if step.op == "write":
        rows = step_rows(step, run.spec, fresh_keys=False)
        res = target.commit(table, target.prepare(table, rows), USER, _ident(run))
        _require_ok(res, "a commit of new files")
        return 1, expected_after(run.rows, rows, pk), "one APPEND snapshot"
    slot = step.arg[0] if step.arg else 0
    if step.op == "prepare":
        rows = step_rows(step, run.spec, fresh_keys=True)
        if slot not in run.handles:
            run.handles[slot] = (target.prepare(table, rows), rows)
        return 0, run.rows, "nothing published"
    if step.op == "commit":
        if slot in run.committed:
            return 0, run.rows, "nothing published"
        if slot not in run.handles:  # prepare it now
            run.handles[slot] = (target.prepare(table, step_rows(step, run.spec, fresh_keys=True)),
                                 step_rows(step, run.spec, fresh_keys=True))
        prepared, rows = run.handles[slot]
        ident = _ident(run)
        _require_ok(target.commit(table, prepared, USER, ident), "a commit of new files")
        run.committed[slot] = ident
        return 1, expected_after(run.rows, rows, pk), "one APPEND snapshot"
    if step.op in ("recommit", "recommit_filter"):
        if slot not in run.committed:
            return 0, run.rows, "nothing published"
        prepared, _ = run.handles[slot]
        flt = step.op == "recommit_filter"
        res = target.commit(table, prepared, USER, run.committed[slot], filter_committed=flt)
        if flt and res.outcome is not Outcome.OK:
            raise Divergence(-1, f"re-commit with filter_committed: {res.outcome.value} {res.error_class}",
                             "success publishing nothing (already committed)")
        if not flt and res.outcome is Outcome.ERROR:
            raise Divergence(-1, f"duplicate commit raised {res.error_class}: {res.message}",
                             "a refusal (FileAlreadyLiveError), nothing published")
        live_names = {f.file_name for f in run.model.live().values()}
        if flt or not prepared.file_names or set(prepared.file_names) & live_names:
            return 0, run.rows, "nothing published (FileAlreadyLiveError, or filtered as committed)"
        # its files were removed since (an overwrite): the model accepts adding them again
        return 1, expected_after(run.rows, run.handles[slot][1], run.spec.primary_key), \
            "one APPEND snapshot re-adding files no longer live"
    if step.op == "overwrite":
        part = step.arg[0]
        rows = step_rows(step, run.spec, fresh_keys=False, partition=part)
        _require_ok(target.overwrite(table, rows, {"dt": part} if part else None, USER, _ident(run)),
                    "an overwrite")
        kept = [r for r in run.rows if part is not None and r["dt"] != part]
        return 1, expected_after(kept, rows, pk), "one OVERWRITE snapshot"
    if step.op == "compact":
        _require_ok(target.compact(table, USER, _ident(run)), "a compaction")
        return None, run.rows, "at most one COMPACT snapshot, same rows"
    if step.op == "expire":
        retain_min, retain_max = step.arg
        got = target.expire(table, retain_min, retain_max)
        want = run.model.expire(retain_min, retain_max)
        note = []
        if sorted(got) != want:
            note.append(f"expire({retain_min}, {retain_max}) expired {sorted(got)}, the model {want}")
        remaining = [s.id for s in observe(table).snapshots]
        if remaining != [s.id for s in run.model.snapshots]:
            note.append(f"retained snapshots {remaining}, the model {[s.id for s in run.model.snapshots]}")
        for sid in want:
            run.rows_at.pop(sid, None)
        return 0, run.rows, note
    if step.op == "read_at":
        return 0, run.rows, "the rows of a retained snapshot (chosen by the step's seed)"
    return 0, run.rows, "the rows committed so far"


def _ident(run: Run) -> int:
    run.next_ident += 1
    return run.next_ident - 1


def _require_ok(res, what: str) -> None:
    if res.outcome is not Outcome.OK:
        raise Divergence(-1, f"{what} was refused: {res.outcome.value} {res.error_class}: {res.message}",
                         f"{what} succeeds (no concurrent writer)")


def attempt(open_target: Callable[[], Target], make_table: Callable[[], TableRef], spec: TableSpec,
            steps: list[Step]) -> tuple[Divergence | None, set[Capability]]:
    target = open_target()
    try:
        run = run_steps(target, make_table(), spec, steps)
        return None, run.unsupported
    except Divergence as d:
        return d, set()
    finally:
        target.close()


def shrink(fails: Callable[[list[Step]], Divergence | None], steps: list[Step], budget: int) -> list[Step]:
    """Greedy: drop the tail after the failing step, then single steps while it still fails."""
    i = 0
    while i < len(steps) and budget > 0:
        candidate = steps[:i] + steps[i + 1:]
        budget -= 1
        if fails(candidate) is not None:
            steps = candidate
        else:
            i += 1
    return steps


def check_machine(target_name: str, open_target: Callable[[], Target], make_table: Callable[[], TableRef],
                  caps: frozenset[Capability], spec: TableSpec, label: str, examples: int, seed: int,
                  steps_per_example: int = 12, skip_ops: frozenset[str] = frozenset()) -> list[CheckResult]:
    """Run ``examples`` seeded step lists (without the ops in ``skip_ops``, e.g. ``recommit`` to
    look past a known duplicate-commit divergence); the first divergence is shrunk and reported."""
    name = f"commit state machine ({label})"
    rng = random.Random(seed)
    unsupported: set[Capability] = set(c for c in OP_CAPABILITY.values() if c not in caps)
    for _ in range(examples):
        steps = gen_steps(rng, steps_per_example, caps, skip_ops)
        found, unsup = attempt(open_target, make_table, spec, steps)
        unsupported |= unsup
        if found is not None:
            steps = steps[:found.step_index + 1] if found.step_index >= 0 else steps

            def fails(candidate: list[Step]) -> Divergence | None:
                return attempt(open_target, make_table, spec, candidate)[0]
            steps = shrink(fails, steps, budget=40)
            final = fails(steps) or found
            repro = "\n".join(f"{n + 1}. {s}" for n, s in enumerate(steps))
            if steps and steps[-1].op == "recommit":
                # a plain second commit of the same files: Paimon Java's commit path accepts it too
                kind, cite = Classification.MODEL_STRICTER, PLAIN_CITATION
            else:
                kind, cite = Classification.TARGET_DEFECT, "specs/invariants.md; model/table.py"
            return [CheckResult(name, Status.DIVERGENCE, str(final), f"table {spec}\n{repro}", final.expected,
                                kind, cite)]
    out = [CheckResult(name, Status.PASS, f"{examples} examples x {steps_per_example} steps")]
    out += [CheckResult(f"{name}: {c.value}", Status.UNSUPPORTED, f"{target_name} lacks {c.value}")
            for c in sorted(unsupported, key=lambda c: c.value)]
    return out


def fresh_local_table() -> TableRef:
    return TableRef(tempfile.mkdtemp(prefix="conformance-"), f"db.t{uuid.uuid4().hex[:8]}")

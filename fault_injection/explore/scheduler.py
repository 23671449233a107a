"""A deterministic scheduler: actors run one storage operation at a time, in an order chosen
by a :class:`Chooser`.

Each actor is an OS thread, but only the actor holding the baton runs: every storage operation
of the simulated store calls :meth:`Runner.point`, where the running actor asks the chooser
for the next step and hands the baton over (or keeps it, without a thread switch, when the
chooser picks it again) and parks until it is picked. Everything else an actor does between two operations (clock, ids,
backoff jitter) comes from seeded seams, so a run is a pure function of its decisions and can
be replayed step for step.

A decision can also fail the chosen operation or crash the actor there. The failures are
faulty_fs's :class:`~fault_injection.faulty_fs.IOErrorAt` at that step: an I/O error before
the operation (nothing happened) or, ``landed``, after it (the effect happened, the response
was lost); the store raises the same ``OSError(EIO)`` for both. A crash makes that operation
and every later one of the actor raise :class:`ActorCrashed` (a BaseException, as faulty_fs's
``SimulatedCrash``, so impl's best-effort cleanup cannot swallow it) until the actor's body
restarts it.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol, Sequence

from fault_injection.explore.store import Op
from fault_injection.faulty_fs import IOErrorAt

_STUCK_SECONDS = 60.0  # an actor that neither reaches a point nor ends: a lock held across a point


class Action(enum.Enum):
    """What a decision does to the chosen actor's operation."""

    PROCEED = "proceed"
    FAIL_BEFORE = "fail-before"  # IOErrorAt(landed=False): an I/O error, nothing happened
    FAIL_AFTER = "fail-after"  # IOErrorAt(landed=True): it happened, the caller sees an I/O error
    CRASH = "crash"  # the actor's process dies before the operation

    def io_error(self, step: int) -> IOErrorAt | None:
        """The storage fault of this action at ``step`` (None: no I/O error)."""
        if self is Action.FAIL_BEFORE:
            return IOErrorAt(at_op=step)
        if self is Action.FAIL_AFTER:
            return IOErrorAt(at_op=step, landed=True)
        return None


@dataclass(frozen=True)
class Decision:
    actor: int
    action: Action = Action.PROCEED

    def __str__(self) -> str:
        return str(self.actor) if self.action is Action.PROCEED else f"{self.actor}:{self.action.value}"


@dataclass(frozen=True)
class Step:
    """One executed step: the actor, its operation and what was done to it."""

    actor: int
    op: Op
    action: Action


class Chooser(Protocol):
    def choose(self, step: int, enabled: Mapping[int, Op]) -> Decision | None:
        """The next decision among the enabled actors (their pending operations); None abandons
        the run (the exhaustive search does so for a schedule its sleep sets make redundant)."""


class ActorCrashed(BaseException):
    """The actor's simulated process died (at this operation or before)."""


class RunAbandoned(BaseException):
    """The scheduler stopped the run; the actor unwinds without touching storage."""


class SchedulerStuckError(RuntimeError):
    """An actor did not come back to a scheduling point (it blocks on something else)."""


class ScheduleError(ValueError):
    """A decision names an actor that is not enabled."""


class ActorContext:
    """What an actor body sees of the scheduler: its index, the step counter, restarting."""

    def __init__(self, runner: Runner, index: int):
        self._runner = runner
        self.index = index

    @property
    def step(self) -> int:
        """Steps executed so far (a logical clock for real-time order)."""
        return len(self._runner.steps)

    def restart(self) -> None:
        """The crashed actor's process starts again: its operations reach storage again."""
        self._runner._slots[self.index].crashed = False


def _closed_gate() -> threading.Lock:
    """A lock used as a binary semaphore (one thread releases, the other acquires): the
    hand-over between the scheduler and an actor, cheaper than an Event's condition variable."""
    gate = threading.Lock()
    gate.acquire()
    return gate


@dataclass
class _Slot:
    thread: threading.Thread | None = None
    pending: Op | None = None
    action: Action = Action.PROCEED
    step: int = 0  # the step number of the decision that resumed the actor
    crashed: bool = False
    done: bool = False
    error: BaseException | None = None
    go: threading.Lock = field(default_factory=_closed_gate)  # released: the actor may run


ActorBody = Callable[[ActorContext], None]


@dataclass(frozen=True)
class RunResult:
    steps: tuple[Step, ...]
    abandoned: bool
    errors: Mapping[int, BaseException]  # actor index -> what escaped its body
    void_fault: bool = False  # abandoned because a lost response met an operation that failed anyway


class Runner:
    """Runs actor bodies to completion under one chooser (one run = one schedule).

    Set-up and abandonment go through the scheduler's thread (each actor is resumed in turn
    and parks again); in between, the actors pass the baton among themselves: the actor at a
    storage operation (or at its end) makes the next decision, so a run of steps of one actor
    costs no thread switch and a switch costs one hand-over instead of two.

    With ``abandon_void_faults``, a run whose FAIL_AFTER met an operation that failed on its
    own (so the caller saw what it sees without the fault) is abandoned: it repeats the run
    without that fault step for step (the exhaustive search runs that one anyway)."""

    def __init__(self, chooser: Chooser, *, max_steps: int = 5000, abandon_void_faults: bool = False):
        self._chooser = chooser
        self._max_steps = max_steps
        self._abandon_void_faults = abandon_void_faults
        self._void = False
        self._slots: list[_Slot] = []
        self._parked = _closed_gate()  # set-up / abandonment: released by the actor when it parks or ends
        self._over = _closed_gate()  # released by whoever finds that the run's steps are over
        self._running = False  # the actors pass the baton among themselves
        self._abandoned = False
        self._failure: BaseException | None = None  # the chooser's error, raised in the scheduler's thread
        self._local = threading.local()
        self._abandon = False
        self.steps: list[Step] = []

    # --------------------------------------------------------------- the gate
    def void(self, op: Op) -> None:
        if self._abandon_void_faults:
            self._void = True

    def point(self, op: Op) -> IOErrorAt | None:
        index = getattr(self._local, "index", None)
        if index is None:  # setup and the oracle run outside the schedule
            return None
        slot = self._slots[index]
        if self._abandon:
            raise RunAbandoned()
        if slot.crashed:
            raise ActorCrashed()
        slot.pending = op
        if self._running:
            self._pass_baton(index)
        else:
            self._parked.release()
            slot.go.acquire()
        slot.pending = None
        if self._abandon:
            raise RunAbandoned()
        if slot.action is Action.CRASH:
            slot.crashed = True
            raise ActorCrashed()
        return slot.action.io_error(slot.step)

    # --------------------------------------------------------------- running
    def run(self, bodies: Sequence[ActorBody]) -> RunResult:
        self._slots = [_Slot() for _ in bodies]
        for i, body in enumerate(bodies):
            thread = threading.Thread(target=self._actor_main, args=(i, body), name=f"sim-actor-{i}", daemon=True)
            self._slots[i].thread = thread
            thread.start()
            self._resume(i)  # runs to its first operation (or its end)
        self._running = True
        self._pass_baton(None)
        seen = -1
        while not self._over.acquire(timeout=_STUCK_SECONDS):
            if len(self.steps) == seen:
                raise SchedulerStuckError(f"no step within {_STUCK_SECONDS} s after step {seen}: an actor "
                                          f"blocks on something else than a storage operation")
            seen = len(self.steps)
        if self._abandoned or self._failure is not None:
            self._abandon = True
            for i, s in enumerate(self._slots):
                if not s.done:
                    self._resume(i)
        for s in self._slots:
            if s.thread is not None:
                s.thread.join(_STUCK_SECONDS)
        if self._failure is not None:
            raise self._failure
        errors = {i: s.error for i, s in enumerate(self._slots) if s.error is not None}
        return RunResult(tuple(self.steps), self._abandoned, errors, self._void)

    def _pass_baton(self, me: int | None) -> None:
        """Decide the next step and hand the baton to its actor; ``me`` (the deciding actor,
        None for the scheduler or an actor that ended) parks until it is picked."""
        try:
            chosen = self._decide()
        except BaseException as e:  # noqa: BLE001 - raised again by run() in the scheduler's thread
            self._failure, chosen = e, None
        if chosen is not None and chosen == me:
            return
        if chosen is None:
            self._running = False
            self._over.release()
        else:
            self._slots[chosen].go.release()
        if me is not None:
            self._slots[me].go.acquire()

    def _decide(self) -> int | None:
        """The actor of the next step (its action set), or None: no actor is enabled, or the run
        is abandoned (the chooser says so, a void fault, or the step limit)."""
        enabled = {i: s.pending for i, s in enumerate(self._slots) if not s.done and s.pending is not None}
        if not enabled:
            return None
        decision = None
        if len(self.steps) < self._max_steps and not self._void:
            decision = self._chooser.choose(len(self.steps), enabled)
        if decision is None:
            self._abandoned = True
            return None
        if decision.actor not in enabled:
            raise ScheduleError(f"step {len(self.steps)}: actor {decision.actor} is not enabled ({sorted(enabled)})")
        slot = self._slots[decision.actor]
        slot.step = len(self.steps)
        self.steps.append(Step(decision.actor, enabled[decision.actor], decision.action))
        slot.action = decision.action
        return decision.actor

    def _resume(self, index: int) -> None:
        self._slots[index].go.release()
        if not self._parked.acquire(timeout=_STUCK_SECONDS):
            raise SchedulerStuckError(f"actor {index} did not reach a storage operation within {_STUCK_SECONDS} s")

    def _actor_main(self, index: int, body: ActorBody) -> None:
        self._local.index = index
        slot = self._slots[index]
        slot.go.acquire()
        try:
            body(ActorContext(self, index))
        except RunAbandoned:
            pass
        except BaseException as e:  # noqa: BLE001 - reported to the oracle as the actor's failure
            slot.error = e
        finally:
            slot.done = True
            if self._running:
                self._pass_baton(None)
            else:
                self._parked.release()

"""A deterministic scheduler: actors run one storage operation at a time, in an order chosen
by a :class:`Chooser`.

Each actor is an OS thread, but only the actor holding the baton runs: every storage operation
of the simulated store calls :meth:`Runner.point`, which parks the calling actor until the
chooser picks it again. Everything else an actor does between two operations (clock, ids,
backoff jitter) comes from seeded seams, so a run is a pure function of its decisions and can
be replayed step for step.

A decision can also fail the chosen operation (an I/O error before it, or a lost response
after it) or crash the actor there: that operation and every later one of the actor raise
:class:`ActorCrashed` (a BaseException, so impl's best-effort cleanup cannot swallow it) until
the actor's body restarts it.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

from fault_injection.explore.store import FaultAction, Op

_STUCK_SECONDS = 60.0  # an actor that neither reaches a point nor ends: a lock held across a point


class Action(enum.Enum):
    PROCEED = "proceed"
    FAIL_BEFORE = "fail-before"
    FAIL_AFTER = "fail-after"
    CRASH = "crash"


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


@dataclass
class _Slot:
    thread: threading.Thread | None = None
    pending: Op | None = None
    action: Action = Action.PROCEED
    crashed: bool = False
    done: bool = False
    error: BaseException | None = None
    go: threading.Event = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.go = threading.Event()


ActorBody = Callable[[ActorContext], None]


@dataclass(frozen=True)
class RunResult:
    steps: tuple[Step, ...]
    abandoned: bool
    errors: Mapping[int, BaseException]  # actor index -> what escaped its body


class Runner:
    """Runs actor bodies to completion under one chooser (one run = one schedule)."""

    def __init__(self, chooser: Chooser, *, max_steps: int = 5000):
        self._chooser = chooser
        self._max_steps = max_steps
        self._slots: list[_Slot] = []
        self._parked = threading.Event()
        self._local = threading.local()
        self._abandon = False
        self.steps: list[Step] = []

    # --------------------------------------------------------------- the gate
    def point(self, op: Op) -> FaultAction:
        index = getattr(self._local, "index", None)
        if index is None:  # setup and the oracle run outside the schedule
            return FaultAction.PROCEED
        slot = self._slots[index]
        if self._abandon:
            raise RunAbandoned()
        if slot.crashed:
            raise ActorCrashed()
        slot.pending = op
        self._parked.set()
        slot.go.wait()
        slot.go.clear()
        slot.pending = None
        if self._abandon:
            raise RunAbandoned()
        action = slot.action
        if action is Action.CRASH:
            slot.crashed = True
            raise ActorCrashed()
        if action is Action.FAIL_BEFORE:
            return FaultAction.FAIL_BEFORE
        if action is Action.FAIL_AFTER:
            return FaultAction.FAIL_AFTER
        return FaultAction.PROCEED

    # --------------------------------------------------------------- running
    def run(self, bodies: Sequence[ActorBody]) -> RunResult:
        self._slots = [_Slot() for _ in bodies]
        for i, body in enumerate(bodies):
            thread = threading.Thread(target=self._actor_main, args=(i, body), name=f"sim-actor-{i}", daemon=True)
            self._slots[i].thread = thread
            thread.start()
            self._resume(i)  # runs to its first operation (or its end)
        abandoned = False
        while True:
            enabled = {i: s.pending for i, s in enumerate(self._slots) if not s.done and s.pending is not None}
            if not enabled:
                break
            decision = self._chooser.choose(len(self.steps), enabled) if len(self.steps) < self._max_steps else None
            if decision is None:
                abandoned = True
                break
            if decision.actor not in enabled:
                raise ScheduleError(f"step {len(self.steps)}: actor {decision.actor} is not enabled ({sorted(enabled)})")
            slot = self._slots[decision.actor]
            self.steps.append(Step(decision.actor, enabled[decision.actor], decision.action))
            slot.action = decision.action
            self._resume(decision.actor)
        if abandoned:
            self._abandon = True
            for i, s in enumerate(self._slots):
                if not s.done:
                    self._resume(i)
        for s in self._slots:
            if s.thread is not None:
                s.thread.join(_STUCK_SECONDS)
        errors = {i: s.error for i, s in enumerate(self._slots) if s.error is not None}
        return RunResult(tuple(self.steps), abandoned, errors)

    def _resume(self, index: int) -> None:
        self._parked.clear()
        self._slots[index].go.set()
        if not self._parked.wait(_STUCK_SECONDS):
            raise SchedulerStuckError(f"actor {index} did not reach a storage operation within {_STUCK_SECONDS} s")

    def _actor_main(self, index: int, body: ActorBody) -> None:
        self._local.index = index
        slot = self._slots[index]
        slot.go.wait()
        slot.go.clear()
        try:
            body(ActorContext(self, index))
        except RunAbandoned:
            pass
        except BaseException as e:  # noqa: BLE001 - reported to the oracle as the actor's failure
            slot.error = e
        finally:
            slot.done = True
            self._parked.set()

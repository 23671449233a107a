"""The environment seam: wall clock, monotonic clock, sleep, ids and randomness, passed in.

Everything that writes a table reads time, ids and randomness through one frozen
:class:`Environment`, handed from the catalog to the table core and from there to the
commit, the writers, compaction, schema changes, tags and expiration. The defaults are the
real ones (``time.time``, ``time.monotonic``, ``time.sleep``, uuid4, OS-seeded generators), so
production behaviour does not change; :meth:`Environment.seeded` gives a deterministic one
for simulations and tests: the same seed and the same operations produce the same file
names and the same snapshot JSON, time fields included.

Not covered, on purpose: the temporary names of local atomic writes and of the conditional
write probe (never part of a table), and the Spark data path's query and plan ids.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from impl.fs.paths import IdFactory, random_id


def wall_clock_millis() -> int:
    """The real wall clock in epoch milliseconds."""
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Environment:
    """Where time, ids and randomness come from.

    ``clock_millis``: wall clock in epoch millis (snapshot, schema, file and tag times; expiry
    cut-offs). ``monotonic``: seconds for timeouts. ``sleep``: seconds to wait (commit retry
    backoff). ``new_id``: the uuid part of new file names and default commit users.
    ``new_random``: a fresh random generator (commit retry jitter, the dynamic-bucket fallback).
    """

    clock_millis: Callable[[], int] = wall_clock_millis
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    new_id: IdFactory = random_id
    new_random: Callable[[], random.Random] = random.Random

    def with_parts(self, *, clock_millis: Callable[[], int] | None = None,
                   monotonic: Callable[[], float] | None = None, sleep: Callable[[float], None] | None = None,
                   new_id: IdFactory | None = None) -> "Environment":
        """This environment with the given parts replaced (None: kept)."""
        return Environment(clock_millis=clock_millis or self.clock_millis, monotonic=monotonic or self.monotonic,
                           sleep=sleep or self.sleep, new_id=new_id or self.new_id, new_random=self.new_random)

    @classmethod
    def seeded(cls, seed: int | str, start_millis: int = 1_700_000_000_000, tick_millis: int = 1) -> "Environment":
        """A deterministic environment: a simulated clock starting at ``start_millis`` that
        advances ``tick_millis`` per reading (and by the slept time on ``sleep``), ids and
        generators drawn from streams seeded by ``seed``. Deterministic for a deterministic
        order of calls: background compaction threads reading it make the order theirs."""
        clock = SimulatedClock(start_millis, tick_millis)
        ids = SeededIds(seed)
        return cls(clock_millis=clock.millis, monotonic=clock.seconds, sleep=clock.sleep,
                   new_id=ids.new_id, new_random=ids.new_random)


PRODUCTION = Environment()


class SimulatedClock:
    """A thread-safe simulated wall clock: each reading advances it by ``tick_millis``, sleeping
    advances it by the slept time (nothing really waits)."""

    def __init__(self, start_millis: int, tick_millis: int = 1):
        self._now_ms = start_millis
        self._tick_ms = tick_millis
        self._lock = threading.Lock()

    def millis(self) -> int:
        with self._lock:
            self._now_ms += self._tick_ms
            return self._now_ms

    def seconds(self) -> float:
        return self.millis() / 1000.0

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self._now_ms += max(0, round(seconds * 1000))


class SeededIds:
    """uuid4-shaped ids and random generators from two streams seeded by ``seed`` (two, so that
    drawing a generator never shifts the ids that follow)."""

    def __init__(self, seed: int | str):
        self._ids = random.Random(f"{seed}-ids")
        self._randoms = random.Random(f"{seed}-random")
        self._lock = threading.Lock()

    def new_id(self) -> str:
        with self._lock:
            bits = self._ids.getrandbits(128)
        return str(uuid.UUID(int=bits, version=4))

    def new_random(self) -> random.Random:
        with self._lock:
            seed = self._randoms.getrandbits(64)
        return random.Random(seed)

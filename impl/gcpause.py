"""Pausing the cyclic garbage collector around bulk object building.

Planning a 100,000-file table builds (cold) or walks (warm) hundreds of thousands of small
objects. With the collector on, every few thousand allocations trigger a collection, and the
full ones walk every object alive, the cached manifest entries included: a third of a cold
plan, more than half of a warm one. What is built here holds no reference cycles, so pausing
the collector loses nothing; the one collection after it meets only the new objects.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

_lock = threading.Lock()
_depth = 0  # blocks inside paused_gc, over all threads
_restore = False  # whether the last block to leave re-enables the collector


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector disabled for the block.

    Blocks may nest and run in several threads at once: the first to enter records whether the
    collector was on, the last to leave turns it back on only then, so overlapping plans never
    leave it off (nor turn on a collector the application had turned off).
    """
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restore:
                gc.enable()

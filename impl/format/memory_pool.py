"""The Arrow memory pool of impl's reads."""

from __future__ import annotations

import pyarrow as pa


def read_pool() -> pa.MemoryPool:
    """The pool the read path allocates decoded and merged columns from: jemalloc when pyarrow's process-wide default
    is mimalloc and jemalloc is built in, else the default.

    Why: in a fresh process mimalloc backs its first arenas with transparent huge pages, and a
    first read of 1M rows spent 0.2-0.4 s of system time zeroing them (more than the decode's
    own user time); the same decode from jemalloc's pool paid 0.04 s. The choice is this
    reader's, per call: the process default (the user's) is left alone, and a user who set a pool
    of their own (``pa.set_memory_pool`` / ``ARROW_DEFAULT_MEMORY_POOL``) to anything but
    mimalloc gets it."""
    default = pa.default_memory_pool()
    if default.backend_name != "mimalloc":
        return default
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc
        return default

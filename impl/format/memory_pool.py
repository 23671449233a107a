"""The Arrow memory pool of impl's reads and writes."""

from __future__ import annotations

import numpy as np
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


def write_pool() -> pa.MemoryPool:
    """The pool the write path allocates what it keeps from: the rows a write buffer holds
    (routed to buckets, sequence numbers), a flush's merged pieces and the Parquet writer's
    buffers; the same pool as :func:`read_pool`, chosen the same way.

    Why: a 64 MB writer without spilling peaked at 394-420 MB RSS at 20M-50M rows with these
    allocations in Arrow's default pool (mimalloc keeps pages freed by another thread resident:
    compaction reads decode on Arrow's threads, the merge frees on the compaction thread), against
    297-317 MB with jemalloc made the process default (benchmarks/README.md, issue 49). Choosing
    the pool per call leaves the application's process-wide default alone.

    >>> write_pool().backend_name in ("jemalloc", pa.default_memory_pool().backend_name)
    True
    """
    return read_pool()


def pooled_array(n: int, dtype: np.typing.DTypeLike) -> np.ndarray:
    """An uninitialized writable numpy array of ``n`` items whose memory comes from
    :func:`read_pool`, for a merge's large temporaries (key codes, gathers of the merge order).

    Why: numpy allocates with malloc, which hands an array of a few MB back to the kernel when it
    is freed, so the next bucket's array is fresh memory faulted in page by page (a 250k-row
    STRING bucket's merge: ~3,400 faults, 5 ms of its 30); the pool keeps freed pages for the
    next allocation (benchmarks/README.md, issue 49).

    >>> a = pooled_array(3, np.int64); a[:] = 7; a.tolist()
    [7, 7, 7]
    """
    dt = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(n * dt.itemsize, memory_pool=read_pool()), dtype=dt)

"""Memory of a merge-tree writer besides its write buffer: the bounded merges' budget, and
handing freed Arrow memory back to the system after a flush or compaction.

A bounded merge (:func:`impl.mergetree.read.iter_merged_runs`: a compaction, the merge of
spilled runs, a streamed merge-on-read) holds about :data:`MERGE_BUFFER_BYTES` of decoded rows
however many runs it merges; each running compaction holds its own, so a table write holds
about ``write-buffer-size`` + (compaction threads + 1) x that, plus what one chunk's merge and
encoding take.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from impl.format.memory_pool import read_pool

# Bytes of decoded rows all runs' buffers of one bounded merge hold together (at least one
# decoded batch per run): a compaction of many runs must not hold a large batch per run.
MERGE_BUFFER_BYTES = 8 * 1024 * 1024


@dataclass
class MergeMemory:
    """What a bounded merge held (for tests and profiling): ``peak_bytes``, the most bytes of
    decoded rows its runs' buffers held at once (whole Arrow buffers, slices included)."""

    peak_bytes: int = 0


# A flush or compaction hands freed memory back only when it freed at least this much. Arrow's
# default pool (mimalloc) backs its pages with transparent huge pages: a page handed back is
# faulted in and zeroed again, 2 MB at a time, by the next allocation, which after a small flush
# costs more than it keeps. A 1M-row write-only write in 10 commits (40 flushes of about 2 MB)
# took 490 ms instead of 583 and peaked 42 MB higher: each flushing thread keeps at most one
# small flush's pages (benchmarks/README.md, session 41).
RELEASE_MIN_BYTES = 16 * 1024 * 1024


def release_unused() -> None:
    """Hand the memory Arrow's pool keeps after a flush or compaction back to the system.

    Arrow's default pool (mimalloc) keeps freed pages in the heap of the thread that freed
    them until that thread allocates again: a compaction thread that goes idle, or the writer's
    thread between flushes, would otherwise keep its last merge's memory resident (measured:
    about 45 MB of a 20M-row write's peak of ~400 MB with a 64 MB buffer)."""
    pa.default_memory_pool().release_unused()
    read_pool().release_unused()  # the reads' own pool, when it is not the default


def release_thread_pages() -> None:
    """Hand back the freed pages Arrow's default pool keeps for the calling thread, when that pool
    is mimalloc (per-thread heaps); nothing for another pool (jemalloc's release purges every
    arena, the system pool's trims the whole heap: process-wide work, not this thread's).

    Why: pyarrow's Parquet reader takes its column-chunk buffers and decompressed pages from the
    default pool, which no pyarrow API lets a reader choose. A compaction decodes its runs on
    the merge's read threads, and mimalloc keeps what each thread freed resident until that
    thread frees or allocates enough again: a full compaction of 3 runs a bucket (4M rows)
    peaked at 271-276 MB RSS, and at 246-255 MB with each read thread releasing after every
    fill of a run's buffer (same CPU; benchmarks/README.md, issue 49 item 4).

    >>> release_thread_pages()  # any thread, any pool
    """
    pool = pa.default_memory_pool()
    if pool.backend_name == "mimalloc":
        pool.release_unused()


def release_after(freed_bytes: float) -> None:
    """:func:`release_unused` after a flush or compaction that freed ``freed_bytes``, when that is
    at least :data:`RELEASE_MIN_BYTES`; a small one's memory is kept for the next."""
    if freed_bytes >= RELEASE_MIN_BYTES:
        release_unused()

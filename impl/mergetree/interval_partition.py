"""Split files into key-disjoint sections, and each section into the fewest sorted runs.

Sections: files sorted by (min key, max key); a new section starts when a file's min key is
above the largest max key seen so far in the current section (no overlap with it). Within a
section, each file goes to the run whose last file ends first, if that end is below the file's
min key; otherwise it opens a new run (greedy interval partitioning, optimal run count).
"""

from __future__ import annotations

import heapq
from typing import Sequence

from impl.datafile.meta import DataFileMeta
from impl.mergetree.kv import KeyCodec
from impl.mergetree.levels import SortedRun


def interval_partition(files: Sequence[DataFileMeta], codec: KeyCodec) -> list[list[SortedRun]]:
    """Sections in key order; each a list of sorted runs."""
    ordered = sorted(files, key=lambda f: (codec.sort_key(f.min_key), codec.sort_key(f.max_key)))
    sections: list[list[SortedRun]] = []
    current: list[DataFileMeta] = []
    bound: tuple | None = None  # the largest max key of the current section
    for f in ordered:
        lo, hi = codec.sort_key(f.min_key), codec.sort_key(f.max_key)
        if current and bound is not None and lo > bound:
            sections.append(_partition_section(current, codec))
            current, bound = [], None
        current.append(f)
        bound = hi if bound is None or hi > bound else bound
    if current:
        sections.append(_partition_section(current, codec))
    return sections


def _partition_section(files: list[DataFileMeta], codec: KeyCodec) -> list[SortedRun]:
    runs: list[list[DataFileMeta]] = []
    heap: list[tuple[tuple, int]] = []  # (max key of the run's last file, run index)
    for f in files:
        lo = codec.sort_key(f.min_key)
        if heap and heap[0][0] < lo:
            _, i = heapq.heappop(heap)
            runs[i].append(f)
        else:
            i = len(runs)
            runs.append([f])
        heapq.heappush(heap, (codec.sort_key(f.max_key), i))
    return [SortedRun(tuple(r)) for r in runs]

"""Read units: a table's planned splits cut into independently readable pieces and packed into
read tasks of similar size. Engine-neutral: the Spark reader (``impl.spark.reader``: its input
partitions) and the Ray datasource (``impl.ray.source``: its read tasks) plan with these.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import replace

# bytes of data files one read task is sized for when the cluster has fewer slots than that needs
DEFAULT_TARGET_BYTES = 64 * 1024 * 1024


def read_units(table, splits) -> list:
    """Independently readable pieces: a primary-key bucket whole, an append file alone (a
    data-evolution split whole: its files are merged by row id)."""
    if table.is_primary_key_table or table.options.data_evolution:
        return list(splits)
    out = []
    for s in splits:
        if len(s.files) == 1:
            out.append(s)
        else:
            out.extend(replace(s, files=(f,)) for f in s.files)
    return out


def partition_count(units, slots: int, target_bytes: int) -> int:
    """Read tasks for ``units``: at least one per slot, more when the data exceeds
    ``target_bytes`` a task, never more than the units (1 for none)."""
    if not units:
        return 1
    total = sum(u.file_size for u in units)
    return max(1, min(len(units), max(slots, math.ceil(total / max(target_bytes, 1)))))


def pack_units(units, count: int) -> list[list]:
    """Largest-first into the lightest of ``count`` bins; each bin keeps plan order. Deterministic."""
    bins: list[list[tuple[int, object]]] = [[] for _ in range(count)]
    heap = [(0, i) for i in range(count)]
    order = sorted(range(len(units)), key=lambda i: (-units[i].file_size, i))
    for i in order:
        weight, b = heapq.heappop(heap)
        bins[b].append((i, units[i]))
        heapq.heappush(heap, (weight + max(units[i].file_size, 1), b))
    return [[u for _, u in sorted(b, key=lambda x: x[0])] for b in bins]


__all__ = ["DEFAULT_TARGET_BYTES", "read_units", "partition_count", "pack_units"]

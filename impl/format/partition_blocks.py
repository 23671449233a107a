"""Which blocks of an Avro manifest hold which partition: an index in the container's header.

A partition-filtered read (a one-partition scan plan, a commit's conflict check) of a manifest
that spans several partitions otherwise decompresses every block and decodes the partition of
every entry to find the few it keeps. The manifests written here carry, in their header's
metadata map (under :data:`KEY`), each partition the file holds with the blocks it lies in and
its entries in each; the reader then decompresses and decodes only those blocks. Avro readers
keep a header's other keys and ignore them (Avro reserves only ``avro.*``), so Paimon Java,
pypaimon and pypaimon-rust read these manifests as before, and manifests without the key (any
other writer's) are read the long way.

The index is checked against the container before use: its counts must add up, block by block,
to the records each block header declares, and a read through it must find exactly the entries
it promises; anything else falls back to the long way (see ``columnar_entries.partition_entries``).
It is left out when it would weigh on the file (:func:`encode`).
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

KEY = "paimon-py.partition-blocks"
_VERSION = 1
# pairs (partition, block) an index may hold: at least this many, else one per this many entries
_MIN_PAIRS = 256
_ENTRIES_PER_PAIR = 16


@dataclass(frozen=True)
class PartitionBlocks:
    """For each partition of a manifest (serialized BinaryRow), its entries in each block."""

    blocks: Mapping[bytes, Mapping[int, int]]  # partition -> block ordinal -> entries of it there

    def entries(self, partitions: Sequence[bytes]) -> int:
        """How many entries of the file lie in ``partitions``."""
        return sum(sum(self.blocks[p].values()) for p in partitions)

    def blocks_of(self, partitions: Sequence[bytes]) -> list[int]:
        """The ordinals of the blocks holding an entry of ``partitions``, ascending."""
        return sorted({b for p in partitions for b in self.blocks[p]})


def encode(block_counts: Sequence[int], partitions: Sequence[bytes]) -> bytes | None:
    """The index of a manifest whose blocks hold ``block_counts`` records each, the records'
    partitions being ``partitions`` in file order; None when it would hold more (partition,
    block) pairs than :data:`_MIN_PAIRS` or one per :data:`_ENTRIES_PER_PAIR` entries (entries
    in no order by partition, or a partition each: the index would weigh on the file for little)."""
    if sum(block_counts) != len(partitions):
        raise ValueError(f"{len(partitions)} partitions for {sum(block_counts)} records")
    per: dict[bytes, dict[int, int]] = {}
    start = 0
    for block, count in enumerate(block_counts):
        for p, n in Counter(partitions[start:start + count]).items():
            per.setdefault(p, {})[block] = n
        start += count
    pairs = sum(len(b) for b in per.values())
    if pairs > max(_MIN_PAIRS, len(partitions) // _ENTRIES_PER_PAIR):
        return None
    doc = {"version": _VERSION,
           "partitions": [base64.b64encode(p).decode() for p in per],
           # per partition: block, entries, block, entries, ...
           "blocks": [[x for item in b.items() for x in item] for b in per.values()]}
    return json.dumps(doc, separators=(",", ":")).encode()


def decode(value: bytes | None, block_counts: Sequence[int]) -> PartitionBlocks | None:
    """The index ``value`` of a container whose blocks hold ``block_counts`` records; None
    without one (or of a version this does not know). ValueError when it does not agree with
    the blocks: every record of every block must be counted in exactly one partition."""
    if value is None:
        return None
    doc = json.loads(value)
    if not isinstance(doc, dict) or doc.get("version") != _VERSION:
        return None
    names, lists = doc["partitions"], doc["blocks"]
    if len(names) != len(lists):
        raise ValueError("partitions and block lists disagree")
    per: dict[bytes, dict[int, int]] = {}
    counted = [0] * len(block_counts)
    for name, flat in zip(names, lists, strict=True):
        partition = base64.b64decode(name, validate=True)
        if partition in per or len(flat) % 2:
            raise ValueError("a partition listed twice, or a block without its count")
        blocks = dict(zip(flat[0::2], flat[1::2], strict=True))
        for block, n in blocks.items():
            if not (isinstance(block, int) and isinstance(n, int) and 0 <= block < len(block_counts) and n > 0):
                raise ValueError(f"block {block!r} with {n!r} entries")
            counted[block] += n
        if len(blocks) * 2 != len(flat):
            raise ValueError("a block listed twice for one partition")
        per[partition] = blocks
    if counted != list(block_counts):
        raise ValueError("the index does not count the records of the blocks")
    return PartitionBlocks(per)

"""The LSM levels of one bucket.

Level 0 holds files that each are their own sorted run, newest first (by max sequence number,
then min sequence number, creation time and name, as Paimon orders them). Every level >= 1 is
one sorted run: files sorted by min key, key ranges not overlapping.

``Levels`` is the writer's bookkeeping; it does no I/O. ``LevelSortedRun``/``SortedRun`` are
immutable values handed to the pure compaction strategy.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterable, Sequence

from impl.datafile.meta import DataFileMeta
from impl.errors import LevelsError
from impl.mergetree.kv import KeyCodec


@dataclass(frozen=True)
class SortedRun:
    """Files with non-overlapping key ranges, sorted by min key."""

    files: tuple[DataFileMeta, ...]

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)

    @property
    def is_empty(self) -> bool:
        return not self.files

    @staticmethod
    def of(files: Iterable[DataFileMeta], codec: KeyCodec) -> "SortedRun":
        """Sort ``files`` by min key and check that their key ranges do not overlap."""
        ordered = tuple(sorted(files, key=lambda f: (codec.sort_key(f.min_key), codec.sort_key(f.max_key))))
        for a, b in itertools.pairwise(ordered):
            if codec.sort_key(a.max_key) >= codec.sort_key(b.min_key):
                raise LevelsError(
                    f"files {a.file_name} and {b.file_name} of level {a.level} overlap in key range")
        return SortedRun(ordered)


@dataclass(frozen=True)
class LevelSortedRun:
    level: int
    run: SortedRun

    @property
    def total_size(self) -> int:
        return self.run.total_size


def level0_order(f: DataFileMeta) -> tuple:
    """Sort key of level-0 files: newest (largest max sequence number) first."""
    return (-f.max_sequence_number, f.min_sequence_number, f.creation_time_millis or 0, f.file_name)


class Levels:
    """Mutable level structure of one bucket (used by a single writer thread)."""

    def __init__(self, codec: KeyCodec, files: Sequence[DataFileMeta], num_levels: int):
        self.codec = codec
        # restored files may sit on deeper levels than this writer's num-levels (Paimon widens)
        deepest = max((f.level for f in files), default=-1)
        self.num_levels = max(num_levels, deepest + 1)
        if self.num_levels < 2:
            raise ValueError(f"num-levels must be at least 2, got {self.num_levels}")
        self._level0: list[DataFileMeta] = []
        self._runs: list[SortedRun] = [SortedRun(()) for _ in range(self.num_levels - 1)]
        by_level: dict[int, list[DataFileMeta]] = {}
        for f in files:
            if f.level < 0:
                raise LevelsError(f"file {f.file_name} has negative level {f.level}")
            by_level.setdefault(f.level, []).append(f)
        self._level0 = sorted(by_level.pop(0, []), key=level0_order)
        for lvl, fs in by_level.items():
            self._runs[lvl - 1] = SortedRun.of(fs, codec)

    @property
    def max_level(self) -> int:
        return self.num_levels - 1

    @property
    def level0(self) -> tuple[DataFileMeta, ...]:
        return tuple(self._level0)

    def run_of_level(self, level: int) -> SortedRun:
        if not 0 <= level < self.num_levels:
            raise ValueError(f"level {level} is outside 0..{self.max_level}")
        return SortedRun(tuple(self._level0)) if level == 0 else self._runs[level - 1]

    def add_level0_file(self, f: DataFileMeta) -> None:
        if f.level != 0:
            raise ValueError(f"file {f.file_name} is on level {f.level}, not 0")
        self._level0.append(f)
        self._level0.sort(key=level0_order)

    def level_sorted_runs(self) -> list[LevelSortedRun]:
        """Every sorted run, newest first: each level-0 file, then levels 1..max that are not empty."""
        runs = [LevelSortedRun(0, SortedRun((f,))) for f in self._level0]
        runs += [LevelSortedRun(i + 1, r) for i, r in enumerate(self._runs) if not r.is_empty]
        return runs

    def number_of_sorted_runs(self) -> int:
        return len(self._level0) + sum(1 for r in self._runs if not r.is_empty)

    def non_empty_highest_level(self) -> int:
        """Highest level holding a file; -1 when the bucket is empty."""
        for i in range(len(self._runs) - 1, -1, -1):
            if not self._runs[i].is_empty:
                return i + 1
        return 0 if self._level0 else -1

    def all_files(self) -> list[DataFileMeta]:
        return [*self._level0, *(f for r in self._runs for f in r.files)]

    def update(self, before: Iterable[DataFileMeta], after: Iterable[DataFileMeta]) -> None:
        """Apply a compaction result: drop ``before`` from their levels, add ``after`` to theirs."""
        before = list(before)
        after = list(after)
        removed = {(f.level, f.file_name) for f in before}
        self._level0 = [f for f in self._level0 if (0, f.file_name) not in removed]
        touched = {f.level for f in before} | {f.level for f in after}
        for f in after:
            if f.level >= self.num_levels:
                raise LevelsError(f"compaction output {f.file_name} is on level {f.level} >= num-levels {self.num_levels}")
        for lvl in touched:
            if lvl == 0:
                continue
            keep = [f for f in self._runs[lvl - 1].files if (lvl, f.file_name) not in removed]
            keep += [f for f in after if f.level == lvl]
            self._runs[lvl - 1] = SortedRun.of(keep, self.codec)
        for f in after:
            if f.level == 0:
                self._level0.append(f)
        self._level0.sort(key=level0_order)

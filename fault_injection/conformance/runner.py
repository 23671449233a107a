"""A committing child process for the racing and SIGKILL suites.

``python -m fault_injection.conformance.runner '<json>'`` opens its own target, then for
identifiers 1..commits: prepares rows ``{"dt": "p", "id": base + i, "v": i}``, commits them
under ``user`` and, on success, prints ``{"ack": i}`` (flushed) so the parent knows which
commits were acknowledged before it was killed. Other outcomes print ``{"fail": i, ...}``.
With ``barrier_dir`` (and ``barrier_count``) in the config, the racers first wait for each other
so that their commits overlap; with ``compact_every`` = k, every k-th commit is followed by a
full compaction under ``<user>-compact`` (printed as ``{"compact": i, "outcome": ...}``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from fault_injection.conformance.adapter import Outcome, TableRef, TableSpec
from fault_injection.conformance.targets import open_target


def rows_for(base: int, ident: int) -> list[dict]:
    return [{"dt": "p", "id": base + ident, "v": ident}]


def _await_barrier(target, table: TableRef, directory: str, count: int, user: str) -> None:
    """Start together: warm the target up (one write, commit and read on a scratch table of its
    own, which loads and compiles a JVM's write path), mark this racer ready, then wait until all
    ``count`` racers are (mixed writers start at very different speeds: a JVM's first commit
    takes seconds, impl's a fraction of one)."""
    scratch = TableRef(str(Path(directory, f"warm-{user}")), "db.warm")
    target.create_table(scratch, TableSpec(primary_key=False, partitioned=True, bucket=-1))
    for ident in (1, 2):
        target.commit(scratch, target.prepare(scratch, rows_for(0, ident)), user, ident)
    target.read_rows(scratch)
    target.read_rows(table)
    Path(directory, f"{user}.ready").touch()
    deadline = time.monotonic() + 120
    while len(list(Path(directory).glob("*.ready"))) < count and time.monotonic() < deadline:
        time.sleep(0.005)


def main(arg: str) -> None:
    cfg = json.loads(arg)
    table = TableRef(cfg["warehouse"], cfg["identifier"], tuple(tuple(kv) for kv in cfg["storage_options"]))
    target = open_target(cfg["target"])
    try:
        if cfg.get("barrier_dir"):
            _await_barrier(target, table, cfg["barrier_dir"], cfg["barrier_count"], cfg["user"])
        for ident in range(1, cfg["commits"] + 1):
            prepared = target.prepare(table, rows_for(cfg["base"], ident))
            res = target.commit(table, prepared, cfg["user"], ident)
            msg = {"ack": ident} if res.outcome is Outcome.OK else \
                {"fail": ident, "outcome": res.outcome.value, "error": res.error_class, "message": res.message}
            print(json.dumps(msg), flush=True)
            if cfg.get("compact_every") and ident % cfg["compact_every"] == 0:
                # a full compaction under "<user>-compact", identifier = the commit's
                res = target.compact(table, cfg["user"] + "-compact", ident)
                print(json.dumps({"compact": ident, "outcome": res.outcome.value, "error": res.error_class,
                                  "message": res.message, "snapshot_ids": list(res.snapshot_ids)}), flush=True)
    finally:
        target.close()


if __name__ == "__main__":
    main(sys.argv[1])

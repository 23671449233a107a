"""A committing child process for the racing and SIGKILL suites.

``python -m fault_injection.conformance.runner '<json>'`` opens its own target, then for
identifiers 1..commits: prepares rows ``{"dt": "p", "id": base + i, "v": i}``, commits them
under ``user`` and, on success, prints ``{"ack": i}`` (flushed) so the parent knows which
commits were acknowledged before it was killed. Other outcomes print ``{"fail": i, ...}``.
"""

from __future__ import annotations

import json
import sys

from fault_injection.conformance.adapter import Outcome, TableRef
from fault_injection.conformance.targets import open_target


def rows_for(base: int, ident: int) -> list[dict]:
    return [{"dt": "p", "id": base + ident, "v": ident}]


def main(arg: str) -> None:
    cfg = json.loads(arg)
    table = TableRef(cfg["warehouse"], cfg["identifier"], tuple(tuple(kv) for kv in cfg["storage_options"]))
    target = open_target(cfg["target"])
    try:
        for ident in range(1, cfg["commits"] + 1):
            prepared = target.prepare(table, rows_for(cfg["base"], ident))
            res = target.commit(table, prepared, cfg["user"], ident)
            msg = {"ack": ident} if res.outcome is Outcome.OK else \
                {"fail": ident, "outcome": res.outcome.value, "error": res.error_class, "message": res.message}
            print(json.dumps(msg), flush=True)
    finally:
        target.close()


if __name__ == "__main__":
    main(sys.argv[1])

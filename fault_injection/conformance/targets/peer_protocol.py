"""The JSON-lines request loop every peer server runs (pypaimon's, pypaimon-rust's), stdlib only.

A peer server runs under its peer's own interpreter and imports nothing from this repository
but this file, which sits beside it (a script's directory is first on ``sys.path``).

Protocol: one request per line on stdin, ``{"id": n, "op": "...", "args": {...}}``; one response
per line on stdout, ``{"id": n, "ok": true, "result": ...}`` or ``{"id": n, "ok": false,
"error_class": "...", "message": "...", "conflict": bool, "unsupported": bool, "traceback":
"..."}``. Everything else (the peer's prints and logs) goes to stderr, so stdout carries only the
protocol. The loop ends when stdin closes (so a server never outlives its client) or on the
``close`` op.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from typing import Callable

OPS = ("create_table", "prepare", "commit", "overwrite", "compact", "expire", "read_rows")


class UnsupportedOp(Exception):
    """The peer has no API for this operation."""


def protect_stdout():
    """The real stdout, kept for the protocol; ``sys.stdout`` becomes stderr so that anything the
    peer (or a library under it) prints cannot corrupt the protocol stream. Call before importing
    the peer."""
    out = sys.stdout
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    return out


def serve(server: object, out, is_conflict: Callable[[BaseException], bool]) -> None:
    """Answer requests from stdin with ``server``'s methods (one per op in :data:`OPS`) on ``out``."""
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request.get("op")
        response: dict = {"id": request.get("id")}
        if op == "close":
            response.update(ok=True, result=None)
            out.write(json.dumps(response) + "\n")
            out.flush()
            return
        try:
            if op not in OPS:
                raise ValueError(f"unknown op {op!r}")
            response.update(ok=True, result=getattr(server, op)(**request.get("args", {})))
        except Exception as e:  # every failure goes back to the client, typed by class name
            response.update(ok=False, error_class=type(e).__name__, message=str(e), conflict=is_conflict(e),
                            unsupported=isinstance(e, UnsupportedOp), traceback=traceback.format_exc())
        out.write(json.dumps(response, default=str) + "\n")
        out.flush()

"""Check results, their classification, and the pure comparisons every suite shares."""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass

from fault_injection.conformance.observe import Observation


class Status(enum.Enum):
    PASS = "pass"
    DIVERGENCE = "divergence"
    UNSUPPORTED = "unsupported"


class Classification(enum.Enum):
    TARGET_DEFECT = "target defect"
    UNSUPPORTED_FEATURE = "unsupported feature"
    MODEL_STRICTER = "model stricter than Paimon"


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    details: str = ""
    reproduction: str = ""  # the shrunk steps, or the race parameters
    expected: str = ""  # what the model expected
    classification: Classification | None = None  # divergences only
    citation: str = ""  # the document or code the classification rests on


def row_key(row: dict) -> tuple:
    return (row["dt"], row["id"], row["v"])


def row_multiset(rows) -> Counter:
    """Rows as a multiset of (dt, id, v): order-free comparison."""
    return Counter(row_key(r) for r in rows)


def rows_difference(expected, actual) -> str:
    """'' when equal as multisets, else what is missing and what is extra."""
    e, a = row_multiset(expected), row_multiset(actual)
    if e == a:
        return ""
    missing, extra = sorted((e - a).elements()), sorted((a - e).elements())
    return f"missing rows {missing[:10]}{'...' if len(missing) > 10 else ''}, " \
           f"extra rows {extra[:10]}{'...' if len(extra) > 10 else ''}"


def commits_seen(obs: Observation) -> Counter:
    """How many retained snapshots each (commit user, identifier, kind) published."""
    return Counter((s.commit_user, s.commit_identifier, s.kind) for s in obs.snapshots)


def exactly_once_problems(obs: Observation, acknowledged: list[tuple[str, int]]) -> list[str]:
    """Every acknowledged APPEND commit appears exactly once in the snapshots."""
    seen = commits_seen(obs)
    out = []
    for user, ident in acknowledged:
        n = seen[(user, ident, "APPEND")]
        if n != 1:
            out.append(f"acknowledged commit ({user}, {ident}) appears in {n} snapshots")
    return out

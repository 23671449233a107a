"""The one rule for a read's projection and limit, shared by table and system-table read builders.

    resolve_projection(["id", 2], ["id", "v", "dt"], owner="db.t")   # ['id', 'dt']
"""

from __future__ import annotations

from typing import Callable, Collection, Sequence

from impl.errors import InvalidPredicateError


def resolve_projection(projection: Sequence[str | int], names: Sequence[str], *, owner: str | None = None,
                       extra_columns: Collection[str] = (),
                       missing_hint: Callable[[object], str] = lambda _: "") -> list[str]:
    """Column names for ``projection`` (names or 0-based indexes into ``names``), in its order.
    ``extra_columns`` may be named though not in ``names`` (system columns a table serves);
    ``missing_hint`` adds to the error for a name that is neither. Refused with
    InvalidPredicateError: an index out of range, an unknown name or a non-name, a column twice."""
    out: list[str] = []
    for p in projection:
        if isinstance(p, int) and not isinstance(p, bool):
            if not 0 <= p < len(names):
                raise InvalidPredicateError(f"projection index {p} is out of range (0..{len(names) - 1})")
            p = names[p]
        if not isinstance(p, str) or (p not in names and p not in extra_columns):
            of = f" of {owner}" if owner else ""
            raise InvalidPredicateError(
                f"projection: {p!r} is not a column{of} (columns: {list(names)}){missing_hint(p)}")
        out.append(p)
    if len(set(out)) != len(out):
        raise InvalidPredicateError(f"projection {out} names a column twice")
    return out


def check_limit(limit: object) -> int | None:
    """``limit`` as a read takes it: None (no limit) or an int >= 0; InvalidPredicateError otherwise."""
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise InvalidPredicateError(f"limit must be an int >= 0, got {limit!r}")
    return limit

"""Predicates over table columns (Paimon's PredicateBuilder), three ways to use them:

- ``to_arrow()``: a pyarrow compute expression, applied to rows after reading;
- ``test_stats(lookup)``: may any row of a file / manifest / partition match, given per-column
  min / max / null count? (False only when certainly not: used to skip files);
- ``fields()``: the columns it reads (to know whether partition values decide it alone).

Predicates are immutable trees of :class:`LeafPredicate` and :class:`CompoundPredicate`.
Trees stay shallow whatever builds them: a compound's children of its own operator are spliced
into it (``or(or(a, b), c)`` is ``or(a, b, c)``), so a chain of 10,000 ORs is one node with
10,000 children, and nesting deeper than :data:`MAX_PREDICATE_DEPTH` (alternating AND / OR) is
refused with ``InvalidPredicateError``. Every recursive walk over a predicate, here or in the
engines' translations, is bounded by that depth; ``to_arrow`` combines a compound's children as
a tree of logarithmic depth (pyarrow binds an expression recursively and crashes the
interpreter on a 10,000-deep one: see :func:`balanced`).
SQL semantics: a comparison with null is not true, so nulls never match anything except
``is_null``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from impl.data.types import to_arrow
from impl.datafile.stats import ColumnStats
from impl.errors import InvalidPredicateError
from impl.schema.records import TableSchema

StatsLookup = Callable[[str], "ColumnStats | None"]

_COMPARISONS = ("equal", "not_equal", "less_than", "less_or_equal", "greater_than", "greater_or_equal")
_NO_LITERAL = ("is_null", "is_not_null")
_PATTERNS = ("startswith", "endswith", "contains")
_OPS = ("and", "or")

# The deepest predicate tree accepted: a leaf is depth 1, a compound one more than its deepest
# child. Same-operator children are spliced, so only alternating AND / OR nests; no real filter
# alternates 64 times, and every walk over a tree (here, in the engines' translations, in the
# file-index evaluation) recurses at most this deep.
MAX_PREDICATE_DEPTH = 64


class Predicate:
    """Base class of predicates."""

    depth: int = 1  # see MAX_PREDICATE_DEPTH

    def to_arrow(self) -> pc.Expression:  # pragma: no cover - abstract
        raise NotImplementedError

    def test_stats(self, lookup: StatsLookup) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def fields(self) -> frozenset[str]:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class LeafPredicate(Predicate):
    """``method(field, literals)``; method is one of the PredicateBuilder method names."""

    method: str
    field: str
    literals: tuple = ()

    def fields(self) -> frozenset[str]:
        return frozenset((self.field,))

    def to_arrow(self) -> pc.Expression:
        f = pc.field(self.field)
        m, lits = self.method, self.literals
        if m == "equal":
            return f == lits[0]
        if m == "not_equal":
            return f != lits[0]
        if m == "less_than":
            return f < lits[0]
        if m == "less_or_equal":
            return f <= lits[0]
        if m == "greater_than":
            return f > lits[0]
        if m == "greater_or_equal":
            return f >= lits[0]
        if m == "is_null":
            return f.is_null()
        if m == "is_not_null":
            return f.is_valid()
        if m == "is_in":
            return f.isin(list(lits))
        if m == "is_not_in":
            return f.is_valid() & ~f.isin(list(lits))
        if m == "between":
            return (f >= lits[0]) & (f <= lits[1])
        if m == "startswith":
            return pc.starts_with(f, pattern=lits[0])
        if m == "endswith":
            return pc.ends_with(f, pattern=lits[0])
        if m == "contains":
            return pc.match_substring(f, pattern=lits[0])
        raise InvalidPredicateError(f"unknown predicate method {m!r}")

    def test_stats(self, lookup: StatsLookup) -> bool:
        s = lookup(self.field)
        if s is None:
            return True
        m = self.method
        all_null = (s.null_count is not None and s.row_count is not None and s.null_count >= s.row_count)
        if m == "is_null":
            return s.null_count is None or s.null_count > 0
        if m == "is_not_null":
            return not all_null
        if all_null:
            return False
        lo, hi = s.min, s.max
        try:
            return _may_match(m, self.literals, lo, hi, s)
        except TypeError:
            return True  # incomparable literal / stats types: cannot decide


def _may_match(m: str, lits: tuple, lo, hi, s: ColumnStats) -> bool:
    if m in ("not_equal", "is_not_in"):
        if lo is None or hi is None:
            return True
        if lo == hi:
            return lo not in lits if m == "is_not_in" else lo != lits[0]
        return True
    if m == "startswith":
        p = lits[0]
        if lo is None or hi is None or not isinstance(p, (str, bytes)):
            return True
        return lo[: len(p)] <= p <= hi[: len(p)]
    if m == "equal":
        v = lits[0]
        return (lo is None or lo <= v) and (hi is None or v <= hi)
    if m == "is_in":
        return any((lo is None or lo <= v) and (hi is None or v <= hi) for v in lits if v is not None)
    if m == "less_than":
        return lo is None or lo < lits[0]
    if m == "less_or_equal":
        return lo is None or lo <= lits[0]
    if m == "greater_than":
        return hi is None or hi > lits[0]
    if m == "greater_or_equal":
        return hi is None or hi >= lits[0]
    if m == "between":
        return (lo is None or lo <= lits[1]) and (hi is None or hi >= lits[0])
    return True


@dataclass(frozen=True)
class CompoundPredicate(Predicate):
    """``and`` / ``or`` of child predicates (children of the same operator are spliced in; a
    tree deeper than :data:`MAX_PREDICATE_DEPTH` is ``InvalidPredicateError``)."""

    op: str
    children: tuple[Predicate, ...]
    depth: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise InvalidPredicateError(f"unknown predicate operator {self.op!r} (and / or)")
        if not self.children:
            raise InvalidPredicateError(f"{self.op} of no predicates")
        flat: list[Predicate] = []
        depth = 1
        for c in self.children:
            if not isinstance(c, Predicate):
                raise InvalidPredicateError(f"{self.op}: {_shown(c)} is not a Predicate")
            if isinstance(c, CompoundPredicate) and c.op == self.op:
                # already flat and checked: spliced in one step (a chain built one or_ at a time
                # must not walk its children again)
                flat.extend(c.children)
                depth = max(depth, c.depth)
            else:
                flat.append(c)
                depth = max(depth, c.depth + 1)
        if depth > MAX_PREDICATE_DEPTH:
            raise InvalidPredicateError(
                f"predicate nested {depth} levels deep (alternating AND / OR); at most {MAX_PREDICATE_DEPTH} "
                "are accepted")
        object.__setattr__(self, "children", tuple(flat))
        object.__setattr__(self, "depth", depth)

    def fields(self) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for c in self.children:
            out |= c.fields()
        return out

    def to_arrow(self) -> pc.Expression:
        return balanced(self.op, [c.to_arrow() for c in self.children])

    def test_stats(self, lookup: StatsLookup) -> bool:
        if self.op == "and":
            return all(c.test_stats(lookup) for c in self.children)
        return any(c.test_stats(lookup) for c in self.children)


# Children of one AND / OR combined per group in ``balanced``: see there.
_ARROW_GROUP = 8


def balanced(op: str, exprs: Sequence[pc.Expression]) -> pc.Expression:
    """The AND / OR of ``exprs`` as a tree of depth O(log n).

    pyarrow binds, simplifies and evaluates expressions recursively and overflows its stack
    (SIGSEGV, the interpreter dies) on a chain of about 10,000 terms. A balanced tree alone does
    not help: pyarrow's canonicalization flattens every run of one associative operator and
    folds it again left-deep. So children are combined in groups of ``_ARROW_GROUP``, and each
    group is wrapped in a double ``invert`` (the identity on true / false / null, and not an
    AND / OR, so the flattening stops there) before the groups are combined the same way: at most
    ``_ARROW_GROUP + 2`` levels per ``log_8(n)``.
    """
    level = list(exprs)
    if not level:
        raise InvalidPredicateError(f"{op} of no expressions")
    while len(level) > 1:
        grouped = []
        for i in range(0, len(level), _ARROW_GROUP):
            acc = level[i]
            for e in level[i + 1: i + _ARROW_GROUP]:
                acc = (acc & e) if op == "and" else (acc | e)
            grouped.append(~~acc if len(level) > _ARROW_GROUP else acc)
        level = grouped
    return level[0]


def split_and(p: Predicate | None) -> list[Predicate]:
    if p is None:
        return []
    if isinstance(p, CompoundPredicate) and p.op == "and":
        out: list[Predicate] = []
        for c in p.children:
            out.extend(split_and(c))
        return out
    return [p]


def and_all(preds: Sequence[Predicate]) -> Predicate | None:
    preds = list(preds)
    if not preds:
        return None
    if len(preds) == 1:
        return preds[0]
    return CompoundPredicate("and", tuple(preds))


def only_fields(p: Predicate | None, names: set[str] | frozenset[str]) -> Predicate | None:
    """The conjuncts of ``p`` that read only ``names`` (a weaker predicate, safe for pruning)."""
    return and_all([c for c in split_and(p) if c.fields() <= names])


# ---------------------------------------------------------------------- as data (JSON)
# Predicates cross process boundaries (Spark planning workers) as JSON, never as pickles: a
# reader of a pickle runs whatever code its writer chose.

def _literal_to_json(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return {"float": repr(v)}  # repr keeps nan / inf, which JSON has no literal for
    if isinstance(v, decimal.Decimal):
        return {"decimal": str(v)}
    if isinstance(v, (bytes, bytearray)):
        return {"bytes": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, _dt.datetime):  # before date: a datetime is a date
        return {"datetime": v.isoformat()}
    if isinstance(v, _dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, _dt.time):
        return {"time": v.isoformat()}
    raise InvalidPredicateError(f"predicate literal {v!r} of type {type(v).__name__} has no JSON form")


_LITERAL_FROM_JSON: dict[str, Callable[[str], Any]] = {
    "float": float, "decimal": decimal.Decimal, "bytes": base64.b64decode,
    "datetime": _dt.datetime.fromisoformat, "date": _dt.date.fromisoformat, "time": _dt.time.fromisoformat,
}


def _literal_from_json(v: Any) -> Any:
    if isinstance(v, dict):
        ((kind, text),) = v.items()
        return _LITERAL_FROM_JSON[kind](text)
    return v


def _to_data(p: Predicate) -> dict:
    if isinstance(p, LeafPredicate):
        return {"leaf": p.method, "field": p.field, "literals": [_literal_to_json(v) for v in p.literals]}
    if isinstance(p, CompoundPredicate):
        return {"op": p.op, "children": [_to_data(c) for c in p.children]}
    raise InvalidPredicateError(f"{p!r} is not a LeafPredicate or CompoundPredicate")


def _from_data(d: dict, depth: int = 1) -> Predicate:
    if depth > MAX_PREDICATE_DEPTH:  # before recursing further
        raise InvalidPredicateError(f"predicate nested more than {MAX_PREDICATE_DEPTH} levels deep")
    if "leaf" in d:
        return LeafPredicate(d["leaf"], d["field"], tuple(_literal_from_json(v) for v in d["literals"]))
    return CompoundPredicate(d["op"], tuple(_from_data(c, depth + 1) for c in d["children"]))


def predicate_to_json(p: Predicate) -> str:
    """``p`` as JSON text; :func:`predicate_from_json` gives back an equal predicate.

    >>> predicate_from_json(predicate_to_json(LeafPredicate("equal", "id", (3,)))) == LeafPredicate("equal", "id", (3,))
    True
    """
    return json.dumps(_to_data(p), sort_keys=True, separators=(",", ":"))


def predicate_from_json(text: str) -> Predicate:
    """The predicate :func:`predicate_to_json` wrote (raises ``InvalidPredicateError`` on other text)."""
    try:
        return _from_data(json.loads(text))
    except InvalidPredicateError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        # RecursionError: json.loads of text nested deeper than the interpreter's stack allows
        raise InvalidPredicateError(f"not a predicate in JSON form: {text[:200]!r} ({e})") from e


def _shown(literal: Any) -> str:
    """A literal for an error message: short, and never failing (``repr`` of an int of more
    than 4,300 digits raises ValueError)."""
    try:
        text = repr(literal)
    except ValueError:
        return f"<{type(literal).__name__} of more than 4300 digits>"
    return text if len(text) <= 100 else f"{text[:100]}...({len(text)} characters)"


def _overflowed_to_infinity(literal: Any, value: Any) -> bool:
    """Did a finite number become an infinity converting to the column's type?"""
    if not isinstance(value, float) or not math.isinf(value) or isinstance(literal, bool):
        return False
    if isinstance(literal, int):
        return True
    if isinstance(literal, (float, decimal.Decimal)):
        return not math.isinf(literal) if isinstance(literal, float) else not literal.is_infinite()
    return False


class PredicateBuilder:
    """Builds predicates over the columns of one table, checking names and literal types.

    >>> pb = table.new_read_builder().new_predicate_builder()    # doctest: +SKIP
    >>> pb.and_(pb.equal("dt", "2024-01-01"), pb.greater_than("v", 10))  # doctest: +SKIP
    """

    def __init__(self, schema: TableSchema):
        self._types = {f.name: f.type for f in schema.fields}

    def _leaf(self, method: str, field: str, literals: Sequence[Any]) -> LeafPredicate:
        if field not in self._types:
            raise InvalidPredicateError(
                f"predicate {method}: {field!r} is not a column of the table (columns: {list(self._types)})")
        t = self._types[field]
        arrow_type = to_arrow(t)
        checked = []
        for lit in literals:
            if lit is None:
                raise InvalidPredicateError(f"predicate {method} on {field!r}: literal is None (use is_null)")
            try:
                scalar = pa.scalar(lit, type=arrow_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
                raise InvalidPredicateError(
                    f"predicate {method} on {field!r} ({t}): literal {_shown(lit)} does not fit the column type: "
                    f"{str(e)[:200]}") from e
            value = scalar.as_py()
            if pa.types.is_integer(arrow_type) and value != lit:
                # pyarrow truncates 1.5 to 1 for an integer column: the filter would match other rows
                raise InvalidPredicateError(
                    f"predicate {method} on {field!r} ({t}): literal {_shown(lit)} is not a value of the column type")
            if _overflowed_to_infinity(lit, value):
                # pyarrow makes 1e300 inf for a FLOAT column: the filter would match infinities
                raise InvalidPredicateError(
                    f"predicate {method} on {field!r} ({t}): literal {_shown(lit)} is out of the column type's range")
            checked.append(value)
        if method in _PATTERNS and not (t.is_string or t.is_binary):
            raise InvalidPredicateError(f"predicate {method} on {field!r}: column type {t} is not a string")
        return LeafPredicate(method, field, tuple(checked))

    def equal(self, field: str, literal) -> Predicate:
        return self._leaf("equal", field, [literal])

    def not_equal(self, field: str, literal) -> Predicate:
        return self._leaf("not_equal", field, [literal])

    def less_than(self, field: str, literal) -> Predicate:
        return self._leaf("less_than", field, [literal])

    def less_or_equal(self, field: str, literal) -> Predicate:
        return self._leaf("less_or_equal", field, [literal])

    def greater_than(self, field: str, literal) -> Predicate:
        return self._leaf("greater_than", field, [literal])

    def greater_or_equal(self, field: str, literal) -> Predicate:
        return self._leaf("greater_or_equal", field, [literal])

    def is_null(self, field: str) -> Predicate:
        return self._leaf("is_null", field, [])

    def is_not_null(self, field: str) -> Predicate:
        return self._leaf("is_not_null", field, [])

    def is_in(self, field: str, literals: Sequence) -> Predicate:
        literals = list(literals)
        if not literals:
            raise InvalidPredicateError(f"predicate is_in on {field!r}: empty literal list")
        return self._leaf("is_in", field, literals)

    def is_not_in(self, field: str, literals: Sequence) -> Predicate:
        literals = list(literals)
        if not literals:
            raise InvalidPredicateError(f"predicate is_not_in on {field!r}: empty literal list")
        return self._leaf("is_not_in", field, literals)

    def between(self, field: str, included_lower, included_upper) -> Predicate:
        return self._leaf("between", field, [included_lower, included_upper])

    def startswith(self, field: str, pattern_literal) -> Predicate:
        return self._leaf("startswith", field, [pattern_literal])

    def endswith(self, field: str, pattern_literal) -> Predicate:
        return self._leaf("endswith", field, [pattern_literal])

    def contains(self, field: str, pattern_literal) -> Predicate:
        """The column holds ``pattern_literal`` as a substring."""
        return self._leaf("contains", field, [pattern_literal])

    def and_(self, *predicates) -> Predicate:
        return self._compound("and", predicates)

    def or_(self, *predicates) -> Predicate:
        return self._compound("or", predicates)

    def and_predicates(self, predicates: Sequence[Predicate]) -> Predicate:
        """pypaimon's name of :meth:`and_` over a list."""
        return self._compound("and", (list(predicates),))

    def or_predicates(self, predicates: Sequence[Predicate]) -> Predicate:
        """pypaimon's name of :meth:`or_` over a list."""
        return self._compound("or", (list(predicates),))

    @staticmethod
    def _compound(op: str, predicates) -> Predicate:
        """The ``op`` of ``predicates`` (spliced flat, depth checked: see CompoundPredicate)."""
        if len(predicates) == 1 and isinstance(predicates[0], (list, tuple)):
            predicates = tuple(predicates[0])
        if not predicates:
            raise InvalidPredicateError(f"{op}_ needs at least one predicate")
        for p in predicates:
            if not isinstance(p, Predicate):
                raise InvalidPredicateError(f"{op}_: {_shown(p)} is not a Predicate")
        if len(predicates) == 1:
            return predicates[0]
        return CompoundPredicate(op, tuple(predicates))

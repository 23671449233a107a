"""Predicates as JSON (``predicate_to_json`` / ``predicate_from_json``): the form in which they
cross process boundaries instead of pickles. Every literal type a filter can carry comes back
equal, with its type."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from impl.errors import InvalidPredicateError
from impl.predicate.predicate import CompoundPredicate, LeafPredicate, predicate_from_json, predicate_to_json

_literals = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=8),
    st.floats(allow_nan=False), st.binary(max_size=8), st.dates(),
    st.datetimes(), st.datetimes(timezones=st.just(dt.timezone.utc)), st.times(),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
)
_leaves = st.builds(LeafPredicate, st.sampled_from(["equal", "less_than", "is_in", "is_null", "between"]),
                    st.sampled_from(["a", "b", "dt"]), st.lists(_literals, max_size=3).map(tuple))
_predicates = st.recursive(_leaves, lambda kids: st.builds(
    CompoundPredicate, st.sampled_from(["and", "or"]), st.lists(kids, min_size=1, max_size=3).map(tuple)),
    max_leaves=6)


def _typed(p):
    """The predicate with each literal's type beside it (1 == 1.0 == True in Python)."""
    if isinstance(p, LeafPredicate):
        return (p.method, p.field, tuple((type(v), v) for v in p.literals))
    return (p.op, tuple(_typed(c) for c in p.children))


@given(_predicates)
def test_round_trip_keeps_values_and_types(p):
    back = predicate_from_json(predicate_to_json(p))
    assert back == p
    assert _typed(back) == _typed(p)


def test_nan_and_infinities():
    p = LeafPredicate("is_in", "f", (math.inf, -math.inf, math.nan))
    back = predicate_from_json(predicate_to_json(p))
    assert back.literals[:2] == (math.inf, -math.inf) and math.isnan(back.literals[2])


@pytest.mark.parametrize("text", ["", "[]", "{}", '{"leaf": "equal"}', '{"op": "and", "children": [1]}',
                                  '{"leaf": "equal", "field": "a", "literals": [{"pickle": "x"}]}', "\x80abc"])
def test_other_text_is_refused(text):
    with pytest.raises(InvalidPredicateError):
        predicate_from_json(text)


def test_an_unknown_literal_type_is_refused_by_name():
    with pytest.raises(InvalidPredicateError, match="complex"):
        predicate_to_json(LeafPredicate("equal", "a", (1j,)))
    assert predicate_to_json(LeafPredicate("equal", "a", (decimal.Decimal("1.10"),))) == \
        '{"field":"a","leaf":"equal","literals":[{"decimal":"1.10"}]}'

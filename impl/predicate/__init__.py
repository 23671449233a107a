"""Predicates over table columns (Paimon's ``predicate`` package): the tree and its builder
(``predicate``) and the one filter-text parser (``where``) that the command line, Spark and
DuckDB share.

>>> from impl.predicate import PredicateBuilder
"""

from impl.predicate.predicate import CompoundPredicate, LeafPredicate, Predicate, PredicateBuilder

__all__ = ["CompoundPredicate", "LeafPredicate", "Predicate", "PredicateBuilder"]

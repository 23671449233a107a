"""Errors of the command line's own input (the rest are impl's typed errors, raised as they are)."""

from __future__ import annotations

from impl.errors import PaimonError
from impl.table.errors import InvalidPredicateError


class FilterSyntaxError(InvalidPredicateError):
    """A ``--where`` filter that is not in the small SQL subset the command line parses: names
    what was found, where, and what is supported."""

    def __init__(self, text: str, position: int, problem: str):
        self.text = text
        self.position = position
        super().__init__(f"--where {text!r} at position {position}: {problem} (supported: comparisons "
                         "=, !=, <>, <, <=, >, >= of a column and a literal, IN (...), NOT IN (...), "
                         "BETWEEN a AND b, IS NULL, IS NOT NULL, AND, OR, parentheses)")


class SqlError(PaimonError):
    """DuckDB refused the query of ``paimon-py sql`` (a syntax error, an unknown table or column
    ...): its message, as DuckDB gives it."""

    def __init__(self, query: str, message: str):
        self.query = query
        super().__init__(f"sql: {message}")


__all__ = ["FilterSyntaxError", "SqlError"]

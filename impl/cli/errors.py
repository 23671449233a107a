"""Errors of the command line's own input (they live in the library's error homes; the rest are
impl's typed errors, raised as they are)."""

from impl.errors import FilterSyntaxError, SqlError

__all__ = ["FilterSyntaxError", "SqlError"]

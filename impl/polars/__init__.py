"""Polars over tables: a LazyFrame whose filters, projections and row limits reach the read
(needs the polars extra).

>>> lf = impl.polars.scan_table(table)                # or a table path; or table.to_polars()  # doctest: +SKIP
>>> lf.filter((pl.col("dt") == "2024-01-01") & (pl.col("id") == 3)).select("v").collect()  # doctest: +SKIP

See :mod:`impl.polars.source` for how Polars' predicates reach the read and what errors
look like through Polars.
"""

from __future__ import annotations

from typing import Mapping

from impl._optional import require
from impl.catalog.filesystem import open_table_path
from impl.polars.source import PolarsSource, to_predicate


def scan_table(table_or_path, options: Mapping[str, str] | None = None):
    """A ``polars.LazyFrame`` over a table (or the table at a path ``<warehouse>/<db>.db/<t>``),
    with ``options`` as dynamic options (e.g. ``{"scan.snapshot-id": "3"}`` for time travel)."""
    require("polars", "impl.polars.scan_table()")
    table = open_table_path(table_or_path) if isinstance(table_or_path, str) else table_or_path
    if options:
        table = table.copy(dict(options))
    return PolarsSource(table).lazy()


__all__ = ["PolarsSource", "scan_table", "to_predicate"]

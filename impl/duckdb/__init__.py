"""DuckDB over tables, with filters and projections pushed into the read (needs the duckdb extra).

>>> con = impl.duckdb.register(duckdb.connect(), "t", table)      # or a table path; or table.to_duckdb(con, "t")  # doctest: +SKIP
>>> con.sql("select id, v from t where dt = '2024-01-01' and id = 3").fetchall()  # doctest: +SKIP
>>> events = impl.duckdb.TableDataset(table)           # DuckDB's replacement scan finds it by name  # doctest: +SKIP
>>> duckdb.sql("select count(*) from events where dt = '2024-01-01'").fetchall()  # doctest: +SKIP

See :mod:`impl.duckdb.dataset` for how DuckDB's filters reach the read and what errors
look like through DuckDB.
"""

from __future__ import annotations

from typing import Any

from impl._optional import require
from impl.catalog.filesystem import open_table_path
from impl.duckdb.dataset import TableDataset, expression_tree, to_predicate


def register(connection, name: str, table) -> Any:
    """Register ``table`` (or the table at a path ``<warehouse>/<db>.db/<table>``) as ``name``
    on DuckDB ``connection``, with pushdown; returns the connection."""
    require("duckdb", "impl.duckdb.register()")
    t = open_table_path(table) if isinstance(table, str) else table
    connection.register(name, TableDataset(t))
    return connection


__all__ = ["TableDataset", "register", "expression_tree", "to_predicate"]

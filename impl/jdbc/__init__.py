"""The JDBC catalog's old import path, kept for earlier callers: it lives in
:mod:`impl.catalog.jdbc`."""

from impl.catalog.jdbc import JdbcCatalog

__all__ = ["JdbcCatalog"]

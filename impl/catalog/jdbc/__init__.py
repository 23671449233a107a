"""Paimon's JDBC catalog (Paimon Java's org.apache.paimon.jdbc): databases and tables as rows of
a SQLite or PostgreSQL database in Java's layout, table files in the warehouse."""

from impl.catalog.jdbc.catalog import JdbcCatalog

__all__ = ["JdbcCatalog"]

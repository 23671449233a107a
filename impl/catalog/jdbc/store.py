"""The catalog's tables in the database, in Paimon Java's JdbcCatalog layout (JdbcUtils and the
distributed-lock dialects of Paimon 1.4): ``paimon_tables``, ``paimon_database_properties``,
``paimon_table_properties`` and, with locks enabled, ``paimon_distributed_locks``; every row
carries the catalog key, so several catalogs can share one database.

:class:`JdbcStore` holds one DB-API connection (sqlite3, or psycopg for PostgreSQL) and turns
the driver's errors into :class:`CatalogConnectionError` / :class:`CatalogStoreError` naming the
catalog.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

from impl._optional import require
from impl.catalog.jdbc.uri import JdbcProtocol, JdbcUri
from impl.errors import CatalogConnectionError, CatalogStoreError, UnsupportedCatalogOptionError

CATALOG_TABLE = "paimon_tables"
DATABASE_PROPERTIES_TABLE = "paimon_database_properties"
TABLE_PROPERTIES_TABLE = "paimon_table_properties"
LOCKS_TABLE = "paimon_distributed_locks"
# the database property Java writes so that a database without tables still has a row
DATABASE_EXISTS_PROPERTY = "exists"

_CREATE_TABLES = (
    f"CREATE TABLE IF NOT EXISTS {CATALOG_TABLE}(catalog_key VARCHAR(255) NOT NULL,"
    " database_name VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,"
    " PRIMARY KEY (catalog_key, database_name, table_name))",
    f"CREATE TABLE IF NOT EXISTS {DATABASE_PROPERTIES_TABLE}(catalog_key VARCHAR(255) NOT NULL,"
    " database_name VARCHAR(255) NOT NULL, property_key VARCHAR(255), property_value VARCHAR(1000),"
    " PRIMARY KEY (catalog_key, database_name, property_key))",
    f"CREATE TABLE IF NOT EXISTS {TABLE_PROPERTIES_TABLE}(catalog_key VARCHAR(255) NOT NULL,"
    " database_name VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, property_key VARCHAR(255) NOT NULL,"
    " property_value VARCHAR(1000), PRIMARY KEY (catalog_key, database_name, table_name, property_key))",
)
_CREATE_LOCKS_TABLE = (f"CREATE TABLE IF NOT EXISTS {LOCKS_TABLE}(lock_id VARCHAR({{}}) NOT NULL,"
                       " acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,"
                       " expire_time_seconds BIGINT DEFAULT 0 NOT NULL, PRIMARY KEY (lock_id))")
# a lock older than its expiry is taken over (the dialects' tryReleaseTimedOutLock)
_EXPIRED_LOCK_AGE = {
    JdbcProtocol.SQLITE: "strftime('%s', 'now') - strftime('%s', acquired_at)",
    JdbcProtocol.POSTGRESQL: "EXTRACT(EPOCH FROM AGE(NOW(), acquired_at))",
}


class JdbcStore:
    """The catalog rows of catalog key ``catalog_key`` in the database at ``uri``."""

    def __init__(self, uri: JdbcUri, properties: Mapping[str, str], catalog_key: str, *,
                 connect_timeout_seconds: float):
        self.uri = uri
        self.catalog_key = catalog_key
        self.name = f"{uri.shown} (catalog-key {catalog_key!r})"
        self._mutex = threading.RLock()
        self._conn: Any = None
        self._conn = self._connect(dict(properties), connect_timeout_seconds)
        try:
            for ddl in _CREATE_TABLES:
                self._run(ddl)
        except CatalogStoreError as e:
            self.close()
            raise CatalogConnectionError(self.name, e.reason) from e

    # ------------------------------------------------------------------ connection

    def _connect(self, props: dict[str, str], timeout_seconds: float) -> Any:
        if self.uri.protocol is JdbcProtocol.SQLITE:
            import sqlite3  # here, not with impl: only a SQLite catalog needs it (import impl stays light)

            target = self.uri.target
            try:
                # autocommit (isolation_level None) as JDBC's default; transaction() opens one
                return sqlite3.connect(target, timeout=timeout_seconds, isolation_level=None,
                                       check_same_thread=False, uri=target.startswith("file:"))
            except sqlite3.Error as e:
                raise CatalogConnectionError(self.name, f"cannot open the SQLite database {target!r}: {e}") from e
        psycopg = require("psycopg", "the JDBC catalog on PostgreSQL")
        props = {**self.uri.properties, **props}
        user = props.pop("user", props.pop("username", None))
        password = props.pop("password", None)
        timeout = props.pop("connectTimeout", None)  # pgjdbc's name, seconds
        try:
            timeout_seconds = max(1, round(float(timeout or timeout_seconds)))
        except ValueError:
            raise UnsupportedCatalogOptionError("jdbc.connectTimeout", timeout, "is not a number of seconds") from None
        host = props.pop("host", self.uri.host)
        port = props.pop("port", self.uri.port or 5432)
        for key in ("database", "dbname"):
            props.pop(key, None)
        try:
            # other properties are libpq's (sslmode, application_name, ...), as pypaimon passes them
            return psycopg.connect(host=host, port=int(port), dbname=self.uri.target, user=user, password=password,
                                   autocommit=True, connect_timeout=timeout_seconds,
                                   **props)
        except psycopg.Error as e:
            raise CatalogConnectionError(self.name, str(e).strip()) from e

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _driver_errors(self) -> tuple[type[BaseException], type[BaseException]]:
        """(the driver's base error, its integrity error)."""
        if self.uri.protocol is JdbcProtocol.SQLITE:
            import sqlite3  # cached by now: _connect imported it

            return sqlite3.Error, sqlite3.IntegrityError
        psycopg = require("psycopg", "the JDBC catalog on PostgreSQL")
        return psycopg.Error, psycopg.IntegrityError

    def _sql(self, sql: str) -> str:
        return sql if self.uri.protocol is JdbcProtocol.SQLITE else sql.replace("?", "%s")

    def _run(self, sql: str, args: Sequence = (), *, fetch: bool = False, many: bool = False) -> Any:
        """Run one statement: its rows (``fetch``) or its row count. An integrity violation
        (a duplicate key) propagates as the driver's IntegrityError for the caller to name."""
        base, integrity = self._driver_errors()
        with self._mutex:
            if self._conn is None:
                raise CatalogStoreError(self.name, sql.split(" ", 1)[0], "the catalog is closed")
            cur = self._conn.cursor()
            try:
                if many:
                    cur.executemany(self._sql(sql), args)
                else:
                    cur.execute(self._sql(sql), tuple(args))
                return cur.fetchall() if fetch else cur.rowcount
            except integrity:
                raise
            except base as e:
                raise CatalogStoreError(self.name, sql.split(" ", 1)[0], str(e).strip()) from e
            finally:
                cur.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The statements run inside commit together or not at all."""
        with self._mutex:
            if self.uri.protocol is JdbcProtocol.SQLITE:
                self._run("BEGIN IMMEDIATE")
                try:
                    yield
                except BaseException:
                    self._conn.rollback()
                    raise
                self._run("COMMIT")
            else:
                with self._conn.transaction():
                    yield

    def is_integrity_error(self, error: BaseException) -> bool:
        return isinstance(error, self._driver_errors()[1])

    # ------------------------------------------------------------------ databases

    def database_exists(self, database: str) -> bool:
        for table in (CATALOG_TABLE, DATABASE_PROPERTIES_TABLE):
            if self._run(f"SELECT database_name FROM {table} WHERE catalog_key = ? AND database_name = ? LIMIT 1",
                         (self.catalog_key, database), fetch=True):
                return True
        return False

    def list_databases(self) -> list[str]:
        names: set[str] = set()
        for table in (CATALOG_TABLE, DATABASE_PROPERTIES_TABLE):
            rows = self._run(f"SELECT DISTINCT database_name FROM {table} WHERE catalog_key = ?",
                             (self.catalog_key,), fetch=True)
            names.update(r[0] for r in rows)
        return sorted(names)

    def database_properties(self, database: str) -> dict[str, str]:
        rows = self._run(f"SELECT property_key, property_value FROM {DATABASE_PROPERTIES_TABLE}"
                         " WHERE catalog_key = ? AND database_name = ?", (self.catalog_key, database), fetch=True)
        return {k: v for k, v in rows}

    def insert_database(self, database: str, properties: Mapping[str, str]) -> None:
        self._run(f"INSERT INTO {DATABASE_PROPERTIES_TABLE} (catalog_key, database_name, property_key, property_value)"
                  " VALUES (?,?,?,?)", [(self.catalog_key, database, k, v) for k, v in properties.items()], many=True)

    def delete_database(self, database: str) -> None:
        """Every row of ``database``: its tables, their properties, its properties."""
        with self.transaction():
            for table in (CATALOG_TABLE, DATABASE_PROPERTIES_TABLE, TABLE_PROPERTIES_TABLE):
                self._run(f"DELETE FROM {table} WHERE catalog_key = ? AND database_name = ?",
                          (self.catalog_key, database))

    # ------------------------------------------------------------------ tables

    def table_exists(self, database: str, table: str) -> bool:
        return bool(self._run(f"SELECT table_name FROM {CATALOG_TABLE} WHERE catalog_key = ? AND database_name = ?"
                              " AND table_name = ?", (self.catalog_key, database, table), fetch=True))

    def list_tables(self, database: str) -> list[str]:
        rows = self._run(f"SELECT table_name FROM {CATALOG_TABLE} WHERE catalog_key = ? AND database_name = ?",
                         (self.catalog_key, database), fetch=True)
        return sorted(r[0] for r in rows)

    def insert_table(self, database: str, table: str, properties: Mapping[str, str] | None) -> None:
        """The table's row and (``properties`` not None) its properties, in one transaction."""
        with self.transaction():
            self._run(f"INSERT INTO {CATALOG_TABLE} (catalog_key, database_name, table_name) VALUES (?,?,?)",
                      (self.catalog_key, database, table))
            if properties is not None:
                self._insert_table_properties(database, table, properties)

    def _insert_table_properties(self, database: str, table: str, properties: Mapping[str, str]) -> None:
        self._run(f"INSERT INTO {TABLE_PROPERTIES_TABLE} (catalog_key, database_name, table_name, property_key,"
                  " property_value) VALUES (?,?,?,?,?)",
                  [(self.catalog_key, database, table, k, v) for k, v in properties.items()], many=True)

    def replace_table_properties(self, database: str, table: str, properties: Mapping[str, str]) -> None:
        with self.transaction():
            self._run(f"DELETE FROM {TABLE_PROPERTIES_TABLE} WHERE catalog_key = ? AND database_name = ?"
                      " AND table_name = ?", (self.catalog_key, database, table))
            self._insert_table_properties(database, table, properties)

    def delete_table(self, database: str, table: str) -> bool:
        """Remove the table's row and properties; whether there was a row."""
        with self.transaction():
            deleted = self._run(f"DELETE FROM {CATALOG_TABLE} WHERE catalog_key = ? AND database_name = ?"
                                " AND table_name = ?", (self.catalog_key, database, table))
            self._run(f"DELETE FROM {TABLE_PROPERTIES_TABLE} WHERE catalog_key = ? AND database_name = ?"
                      " AND table_name = ?", (self.catalog_key, database, table))
        return deleted > 0

    def rename_table(self, source: tuple[str, str], target: tuple[str, str]) -> bool:
        """Move the table's row and properties to ``target``; whether there was a row."""
        with self.transaction():
            moved = 0
            for table in (CATALOG_TABLE, TABLE_PROPERTIES_TABLE):
                n = self._run(f"UPDATE {table} SET database_name = ?, table_name = ? WHERE catalog_key = ?"
                              " AND database_name = ? AND table_name = ?", (*target, self.catalog_key, *source))
                moved = moved or n
        return moved > 0

    # ------------------------------------------------------------------ distributed lock

    def create_lock_table(self, lock_key_max_length: int) -> None:
        self._run(_CREATE_LOCKS_TABLE.format(int(lock_key_max_length)))

    def try_acquire_lock(self, lock_id: str, expire_seconds: int) -> bool:
        """Clear ``lock_id`` if it expired, then insert it: whether this call holds it now."""
        age = _EXPIRED_LOCK_AGE[self.uri.protocol]
        self._run(f"DELETE FROM {LOCKS_TABLE} WHERE {age} > expire_time_seconds AND lock_id = ?", (lock_id,))
        try:
            self._run(f"INSERT INTO {LOCKS_TABLE} (lock_id, expire_time_seconds) VALUES (?,?)",
                      (lock_id, int(expire_seconds)))
        except Exception as e:
            if self.is_integrity_error(e):
                return False
            raise
        return True

    def release_lock(self, lock_id: str) -> None:
        self._run(f"DELETE FROM {LOCKS_TABLE} WHERE lock_id = ?", (lock_id,))

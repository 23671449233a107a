"""Paimon Java's JDBC catalog lock (JdbcCatalogLock): a row ``<catalog-key>.<db>.<table>`` in
``paimon_distributed_locks``, taken by insert, retried with doubling sleeps (from 100 ms up to
``lock-check-max-sleep``) until ``lock-acquire-timeout``, and taken over by anyone once older
than its expiry (the acquire timeout, in seconds)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from impl.environment import Environment
from impl.jdbc.store import JdbcStore
from impl.table.errors import CatalogStoreError

FIRST_SLEEP_MILLIS = 50  # doubled before the first sleep, as in Java


@dataclass(frozen=True)
class LockRules:
    """``lock.enabled`` (default: whether the warehouse is an object store, as in Java),
    ``lock-check-max-sleep``, ``lock-acquire-timeout``, ``lock-key-max-length``."""

    enabled: bool
    check_max_sleep_millis: int = 8_000
    acquire_timeout_millis: int = 8 * 60_000
    key_max_length: int = 255


def lock_id(catalog_key: str, database: str, table: str) -> str:
    return f"{catalog_key}.{database}.{table}"


@contextmanager
def table_lock(store: JdbcStore, rules: LockRules, database: str, table: str, env: Environment) -> Iterator[None]:
    """Hold the table's lock for the block (no lock when the rules disable it);
    CatalogStoreError naming the lock when it is not acquired within the timeout."""
    if not rules.enabled:
        yield
        return
    key = lock_id(store.catalog_key, database, table)
    expire_seconds = rules.acquire_timeout_millis // 1000
    start = env.monotonic()
    sleep_millis = FIRST_SLEEP_MILLIS
    while not store.try_acquire_lock(key, expire_seconds):
        waited_millis = (env.monotonic() - start) * 1000
        if waited_millis > rules.acquire_timeout_millis:
            raise CatalogStoreError(store.name, f"lock {key!r}",
                                    f"not acquired within {rules.acquire_timeout_millis} ms (lock-acquire-timeout)")
        sleep_millis = min(sleep_millis * 2, rules.check_max_sleep_millis)
        env.sleep(sleep_millis / 1000)
    try:
        yield
    finally:
        store.release_lock(key)

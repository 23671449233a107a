"""Paimon Java's JDBC catalog lock (JdbcCatalogLock): a row ``<catalog-key>.<db>.<table>`` in
``paimon_distributed_locks``, taken by insert, retried with doubling sleeps (from 100 ms up to
``lock-check-max-sleep``) until ``lock-acquire-timeout``, and taken over by anyone once older
than its expiry (the acquire timeout, in seconds)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from impl.catalog.jdbc.store import JdbcStore
from impl.environment import Environment
from impl.errors import CatalogConnectionError, CatalogStoreError, CommitRefusedError
from impl.fs.file_io import FileIO
from impl.fs.names import BranchName
from impl.fs.paths import TablePaths
from impl.snapshot.records import Snapshot

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


@dataclass(frozen=True)
class LockedSnapshotCommit:
    """Publishes a table's snapshots while holding its catalog lock, as Paimon Java's
    ``RenamingSnapshotCommit`` does when the catalog has a lock (``lock.enabled``): a Java writer
    on an object store without conditional writes checks and writes ``snapshot-<id>`` under this
    lock, so impl takes it too, or the two could both publish one id. Inside the lock the
    create is still the atomic one (rename without overwrite, conditional PUT)."""

    file_io: FileIO
    table_path: str
    store: JdbcStore
    rules: LockRules
    database: str
    table: str
    env: Environment

    def commit(self, snapshot: Snapshot, branch: BranchName) -> bool:
        path = TablePaths(self.table_path, branch=branch).snapshot_path(snapshot.id)
        acquired = False
        try:
            with table_lock(self.store, self.rules, self.database, self.table, self.env):
                acquired = True
                if self.file_io.file_exists(path):
                    return False
                return self.file_io.try_write_atomic(path, snapshot.to_json_bytes())
        except (CatalogStoreError, CatalogConnectionError) as e:
            if acquired:  # the lock's release failed after the create: the outcome stays unknown
                raise
            # the lock was never held, nothing was published: a definite refusal
            raise CommitRefusedError(f"snapshot {snapshot.id} of {self.database}.{self.table}: {e}") from e

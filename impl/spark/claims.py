"""A tiny create-if-absent key/value ledger that read tasks use to agree with each other.

Why it exists: Spark 4.3 caches the planned read (reader object + input partitions) on the
data source relation, not on the query. A later query on the same DataFrame or view that pushes
no filter (``df.count()`` after ``df.filter(...).count()``), and any re-execution of an already
planned DataFrame, runs the *cached* plan again: with the filters, the pruned splits and the
snapshot of whichever query planned it last. (``PythonScanBuilder.pushFilters`` calls
``PythonDataSourceV2.setReadInfo`` and ``PythonBatch`` reads ``getOrCreateReadInfo``.)

So every plan carries a random ``plan_id``, and the first SQL execution that runs it claims it
(``claim(plan_id, execution)``). Tasks of that execution read the plan as planned (pinned
snapshot, pruned splits). Tasks of any other execution see someone else's claim: they ignore
the plan's filters and splits, agree on one snapshot through a second claim (the latest one
when the first of them looked), and split the whole table among themselves. Spark evaluates all
filters itself (the reader hands every filter back), so both ways return exactly the right rows.

One more sharing Spark 4.3 does inside a single query: every scan of one loaded relation gets
the same plan, so ``df.union(df.filter(...))`` would read the filtered plan on both sides. When a
plan with pushed filters is read twice within one stage (the union case) the read fails with
:class:`impl.spark.reader.SharedPlanError` instead of answering wrongly. (Scans in different
stages cannot be told apart from one scan read by two jobs, e.g. a sort's sampling job; load
the table once per use when one query reads it several times with different filters.)

Storage: a local temporary directory when Spark runs in local mode on a local warehouse (all
tasks share one machine); otherwise the warehouse's own store (a directory beside the databases),
which needs an atomic create-if-absent, as snapshot publication does. On an object store each
claim is a write-once object published by a conditional PUT (no rename, no append), and a task
reaches the store through the table's storage options, whatever the master: nothing assumes a
disk shared by driver and executors, and local-mode runs exercise what a cluster does.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import tempfile
import time

from impl.fs.file_io import FileIO
from impl.spark.tables import TableRef
from impl.spark.tracking import INTENT_ROOT

LOCAL_ROOT = os.path.join(tempfile.gettempdir(), "paimon_py_spark_claims")


class ClaimLedger:
    def __init__(self, file_io: FileIO, root: str):
        self.file_io = file_io
        self.root = root.rstrip("/")

    @staticmethod
    def for_task(app_id: str, local_mode: bool, ref: TableRef) -> "ClaimLedger":
        """The ledger of Spark application ``app_id`` for reads of the table ``ref``."""
        app = hashlib.sha1(app_id.encode()).hexdigest()[:16]
        if local_mode and not ref.on_object_store:
            return ClaimLedger(FileIO(), os.path.join(LOCAL_ROOT, app))
        file_io, root = FileIO.for_path(ref.warehouse, ref.filesystem())
        return ClaimLedger(file_io, posixpath.join(root, INTENT_ROOT, "claims", app))

    def _path(self, key: str) -> str:
        return posixpath.join(self.root, hashlib.sha1(key.encode()).hexdigest())

    def claim(self, key: str, value: str) -> str:
        """Store ``value`` under ``key`` unless a value is there; return the stored value."""
        path = self._path(key)
        for _ in range(50):
            if self.file_io.exists(path):
                try:
                    return self.file_io.read_bytes(path).decode()
                except FileNotFoundError:
                    pass
            if not self.file_io.is_object_store:  # a key needs no directory on an object store
                self.file_io.mkdirs(self.root)
            if self.file_io.try_write_atomic(path, value.encode()):
                return value
            time.sleep(0.01)
        raise RuntimeError(f"claim ledger {self.root}: cannot settle key {key!r}")


def prune_local_ledgers(max_age_seconds: float = 86_400.0) -> None:
    """Remove local ledger directories of applications older than ``max_age_seconds``."""
    try:
        entries = os.listdir(LOCAL_ROOT)
    except OSError:
        return
    now = time.time()
    for name in entries:
        p = os.path.join(LOCAL_ROOT, name)
        try:
            if now - os.path.getmtime(p) > max_age_seconds:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


__all__ = ["ClaimLedger", "prune_local_ledgers"]

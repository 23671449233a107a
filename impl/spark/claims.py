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
the plan of the last filter push, so ``df.filter(a).join(df.filter(b))`` would read the plan
pruned for ``b`` on both sides. Spark plans every scan of a query before it runs any, so each
push is recorded per loaded relation (:func:`record_pushed`, on the driver) and the plan is
pruned with the OR of all of them: right for every filtered scan, whatever stage reads it. A scan
that pushes nothing (``df.union(df.filter(a))``) calls no method of the source and cannot be
seen at planning; when such a scan shares a stage with the one filtered scan (the union case),
the read fails with :class:`impl.spark.reader.SharedPlanError` instead of answering wrongly.
The one case still unseen is an unfiltered and a filtered use of one loaded DataFrame in
*different* stages with no join between them (a join's keys give both sides a pushed
``IS NOT NULL``); load the table once per use there, or read with ``pushdown`` = ``false``.

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
import pickle
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


# ---------------------------------------------------------------------- filters pushed per relation

_NO_PRUNING = b"-"  # a push none of whose filters translates: that scan needs the whole table


def record_pushed(relation_id: str, predicate) -> None:
    """Remember on the driver that a scan of the loaded relation ``relation_id`` pushed
    ``predicate`` (an impl Predicate, or None when none of its filters could prune).

    Spark 4.3 plans all scans of a query before running any and hands every scan of one loaded
    relation the plan of the last push; planning with the OR of every push recorded here makes
    that plan right for each filtered scan. Planning runs in Python workers on the driver, so a
    local directory is shared by all of them, whatever the master.
    """
    data = _NO_PRUNING if predicate is None else pickle.dumps(predicate)
    d = os.path.join(LOCAL_ROOT, "relations", relation_id)
    os.makedirs(d, exist_ok=True)
    final = os.path.join(d, hashlib.sha1(data).hexdigest())
    if os.path.exists(final):
        return
    tmp = f"{final}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, final)  # readers never see a partial record


def pushed_predicates(relation_id: str) -> list | None:
    """The distinct predicates recorded for ``relation_id`` (see :func:`record_pushed`); None
    when one of the pushes could not prune (the relation must then be read whole)."""
    d = os.path.join(LOCAL_ROOT, "relations", relation_id)
    try:
        names = sorted(n for n in os.listdir(d) if not n.endswith(".tmp"))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        with open(os.path.join(d, name), "rb") as fh:
            data = fh.read()
        if data == _NO_PRUNING:
            return None
        out.append(pickle.loads(data))
    return out


def prune_local_ledgers(max_age_seconds: float = 86_400.0) -> None:
    """Remove local ledger directories of applications older than ``max_age_seconds``."""
    try:
        entries = os.listdir(LOCAL_ROOT)
    except OSError:
        return
    now = time.time()
    relations = os.path.join(LOCAL_ROOT, "relations")
    try:
        entries += [os.path.join("relations", r) for r in os.listdir(relations)]
    except OSError:
        pass
    for name in entries:
        if name == "relations":
            continue
        p = os.path.join(LOCAL_ROOT, name)
        try:
            if now - os.path.getmtime(p) > max_age_seconds:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


__all__ = ["ClaimLedger", "prune_local_ledgers", "record_pushed", "pushed_predicates"]

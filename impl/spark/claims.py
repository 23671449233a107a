"""A tiny create-if-absent key/value ledger that read tasks use to agree with each other, and
the filters pushed on each loaded relation (``pushdown`` = ``true`` only).

Why it exists: Spark 4.3 caches the planned read (reader object + input partitions) of a Python
data source on the loaded relation, not on the query, and hands it to every scan of that
relation (``PythonScanBuilder.pushFilters`` calls ``PythonDataSourceV2.setReadInfo``, and every
``PythonBatch`` reads ``getOrCreateReadInfo``). Nothing a scan can see tells it which scan it is.

Two consequences, and what this module does about each:

1. A later query on the same DataFrame or view, and any re-execution of an already planned
   DataFrame, runs the *cached* plan again, with the snapshot of whichever query planned it last.
   So every plan carries a random ``plan_id``, and the first SQL execution that runs it claims it
   (``claim(plan_id, execution)``). Tasks of that execution read the plan as planned (pinned
   snapshot). Tasks of any other execution see someone else's claim: they agree on one snapshot
   through a second claim (the latest one when the first of them looked) and split the whole
   table among themselves. Spark evaluates all filters itself, so both ways return exactly the
   right rows.
2. Every scan of one loaded relation in a query reads the plan of the *last* filter push. A plan
   pruned by one scan's filters would silently drop rows another scan of the same relation needs
   (``df.agg(count).crossJoin(df.filter(...).agg(count))``), and a scan that pushes no filter
   calls no method of the source, so it cannot be seen at planning. That is why the default
   reader prunes nothing (``pushdown`` = ``false``): every scan reads the whole snapshot. With
   ``pushdown`` = ``true`` the plan is pruned with the OR of every push recorded on the relation
   (:func:`record_pushed`), right for every *filtered* scan; a query that also scans the relation
   unfiltered is refused where the read can see it (two scans of one plan in one stage:
   :class:`impl.spark.errors.SharedPlanError`) and can answer wrongly where it cannot (the
   unfiltered scan in another stage), which is why it is opt-in, for a DataFrame each query scans
   once.

Storage: nothing here is ever unpickled, and nothing lives where another user can write. The
pushed filters are JSON (``impl.predicate.predicate.predicate_to_json``) in a directory private to
the user (:func:`private_root`: created with mode 0700, used only if it is a real directory
owned by this user with no group or other permissions; a name someone else took first is
stepped around). The claim ledger lives there too when
Spark runs in local mode on a local warehouse (all tasks share one machine); otherwise in the
warehouse's own store (a directory beside the databases), which needs an atomic
create-if-absent, as snapshot publication does. On an object store each claim is a write-once
object published by a conditional PUT (no rename, no append), and a task reaches the store
through the table's storage options, whatever the master: nothing assumes a disk shared by
driver and executors, and local-mode runs exercise what a cluster does. Claims hold only
execution keys and snapshot ids, read as text.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import stat
import tempfile
import time

from impl.fs.file_io import FileIO
from impl.jobs.tables import TableRef
from impl.jobs.tracking import INTENT_ROOT
from impl.predicate.predicate import Predicate, predicate_from_json, predicate_to_json
from impl.spark.errors import SparkConnectorError

# How many names in the shared temp directory are tried before giving up: each one another
# local user created first (a file, a link, a directory of theirs or one others may write) is
# stepped around.
PRIVATE_DIR_CANDIDATES = 16


def _is_private_dir(path: str) -> bool:
    """A directory (not a link) owned by this user that no one else may read or write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def private_dir_candidates(tmp: str, runtime_dir: str | None) -> list[str]:
    """Where this user's connector state may live, in order of preference.

    ``$XDG_RUNTIME_DIR`` (when it is private, as the login manager makes it): no one else can
    create anything in it. Otherwise names in the shared ``tmp`` directory, which any local user
    can create first: ``paimon_py_spark-<uid>``, then ``paimon_py_spark-<uid>.1`` and on. The
    order is fixed, so every process of the user (driver, planning and task workers) finds the
    same one."""
    if runtime_dir and _is_private_dir(runtime_dir):
        return [os.path.join(runtime_dir, "paimon_py_spark")]
    base = os.path.join(tmp, f"paimon_py_spark-{os.getuid()}")
    return [base] + [f"{base}.{k}" for k in range(1, PRIVATE_DIR_CANDIDATES)]


def choose_private_dir(candidates: list[str]) -> str:
    """The first candidate that already is a private directory of this user, else the first one
    this process can create (mode 0700); ``SparkConnectorError`` when every one is taken.

    An existing private directory wins over creating an earlier name, so processes agree even
    when a squatted name is freed later (state recorded in ``.1`` stays found)."""
    for path in candidates:
        if _is_private_dir(path):
            return path
    for path in candidates:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # taken: ours if a racing process of this user just made it, else stepped around
        except OSError:
            continue
        if _is_private_dir(path):
            return path
    raise SparkConnectorError(
        f"no private directory for the paimon_py connector's read state: {candidates[0]} and the "
        f"{len(candidates) - 1} names after it are all taken by files, links or directories that are not "
        f"this user's with mode 0700 (uid {os.getuid()}). Remove them, or point TMPDIR elsewhere.")


def private_root() -> str:
    """This user's directory for the connector's local state, mode 0700 (see
    :func:`private_dir_candidates` and :func:`choose_private_dir`): another local user who
    creates the predictable name first cannot block this user's reads or feed them state."""
    return choose_private_dir(private_dir_candidates(tempfile.gettempdir(), os.environ.get("XDG_RUNTIME_DIR")))


class ClaimLedger:
    def __init__(self, file_io: FileIO, root: str):
        self.file_io = file_io
        self.root = root.rstrip("/")

    @staticmethod
    def for_task(app_id: str, local_mode: bool, ref: TableRef) -> "ClaimLedger":
        """The ledger of Spark application ``app_id`` for reads of the table ``ref``."""
        app = hashlib.sha1(app_id.encode()).hexdigest()[:16]
        if local_mode and not ref.on_object_store:
            return ClaimLedger(FileIO(), os.path.join(private_root(), "claims", app))
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

_NO_PRUNING = "-"  # a push none of whose filters translates: that scan needs the whole table


def _relation_dir(relation_id: str) -> str:
    if not relation_id.isalnum():  # a uuid hex: never a path of its own
        raise SparkConnectorError(f"invalid relation id {relation_id!r}")
    return os.path.join(private_root(), "relations", relation_id)


def record_pushed(relation_id: str, predicate: Predicate | None) -> None:
    """Remember on the driver that a scan of the loaded relation ``relation_id`` pushed
    ``predicate`` (None when none of its filters could prune).

    Spark 4.3 plans all scans of a query before running any and hands every scan of one loaded
    relation the plan of the last push; planning with the OR of every push recorded here makes
    that plan right for each filtered scan. Planning runs in Python workers on the driver, so a
    local directory is shared by all of them, whatever the master.
    """
    text = _NO_PRUNING if predicate is None else predicate_to_json(predicate)
    data = text.encode()
    d = _relation_dir(relation_id)
    os.makedirs(os.path.dirname(d), mode=0o700, exist_ok=True)  # makedirs gives only the leaf its mode
    os.makedirs(d, mode=0o700, exist_ok=True)
    final = os.path.join(d, hashlib.sha1(data).hexdigest() + ".json")
    if os.path.exists(final):
        return
    tmp = f"{final}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, final)  # readers never see a partial record


def pushed_predicates(relation_id: str) -> list[Predicate] | None:
    """The distinct predicates recorded for ``relation_id`` (see :func:`record_pushed`); None
    when one of the pushes could not prune (the relation must then be read whole)."""
    d = _relation_dir(relation_id)
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".json"))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        with open(os.path.join(d, name), "rb") as fh:
            text = fh.read().decode("utf-8", errors="replace")  # not JSON: predicate_from_json refuses it
        if text == _NO_PRUNING:
            return None
        out.append(predicate_from_json(text))
    return out


def prune_local_ledgers(max_age_seconds: float = 86_400.0) -> None:
    """Remove local ledger directories of applications older than ``max_age_seconds``."""
    root = private_root()
    entries = []
    for sub in ("claims", "relations"):
        try:
            entries += [os.path.join(sub, r) for r in os.listdir(os.path.join(root, sub))]
        except OSError:
            pass
    now = time.time()
    for name in entries:
        p = os.path.join(root, name)
        try:
            if now - os.path.getmtime(p) > max_age_seconds:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


__all__ = ["ClaimLedger", "private_root", "private_dir_candidates", "choose_private_dir", "prune_local_ledgers", "record_pushed", "pushed_predicates"]

"""``python -m simulation``: concurrent writers, compaction and expiration on one table, verified.

What runs (all in one local Spark session, on a local warehouse, ``./warehouse`` by default, or on
an S3-compatible store: ``--warehouse s3://bucket/prefix`` with ``--s3-endpoint`` & co., or
``--embedded-s3`` for a local moto S3 server started for the run):

- K writer threads. Each owns the keys ``id % K == w`` of a partitioned primary-key table and
  upserts a generated change stream into it: per batch a set of distinct keys, each inserted
  (if absent), updated or deleted (if present). A batch is one Spark job through
  :func:`impl.spark.write_dataframe` with ``write-only`` writers (no compaction in the writers),
  then one commit on the driver under the writer's own commit user and a growing commit
  identifier (a streaming commit, so a crashed commit can be recovered exactly once).
- One compaction thread running :func:`impl.spark.compact` (a dedicated Spark job; one
  COMPACT snapshot per run), and one thread expiring snapshots.
- With ``--faults``: some writer commits go through fault_injection's ``FaultyFileSystem``
  with an injected I/O error, crash, or crash-after-success at a random storage operation.
  The writer then recovers through ``filter_committed`` on a healthy file system (what is not
  yet published gets published, what is gets skipped).
- A monitor thread replays every new snapshot through the executable model (``model.Model``),
  comparing live file sets and record counts after each one.

At the end (after a final full compaction): a fresh model replay of all retained snapshots, a
storage audit (fault_injection.table_audit), an orphan scan, and the table's rows (read through
Spark and through impl) against the rows recomputed from the change stream in plain pyarrow.
Prints a summary, writes ``reports/<run>/report.md`` with plots (always on local disk), exits 1 on
any failed check.

On S3 every part goes through the store: the Spark tasks and the driver open it from the storage
options, the injected faults wrap the S3 client, and the checks read and list the table there.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import posixpath
import random
import sys
import threading
import time
import traceback
import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
from fsspec.implementations.local import LocalFileSystem

import impl
from fault_injection import Crash, CrashAfter, Fault, FaultyFileSystem, IOErrorAt, SimulatedCrash
from fault_injection.orphans import find_orphans
from fault_injection.table_audit import audit_table
from impl._cli import HelpFormatter
from impl._optional import require
from impl.catalog import FileSystemCatalog, open_catalog
from impl.catalog.jdbc.uri import redact
from impl.commit.messages import CommitMessage
from impl.errors import CommitConflictError, MissingExtraError
from impl.fs.file_io import FileIO
from impl.fs.object_store import SECRET_KEY_KEYS, SESSION_TOKEN_KEYS, STORAGE_OPTION_PREFIXES, is_object_store_url
from impl.rest import RESTCatalogServer
from impl.table.table import FileStoreTable
from simulation.report import write_report
from simulation.verify import ModelReplayer, compare_rows, expected_rows, replay_retained

if TYPE_CHECKING:  # pragma: no cover - pyspark is imported when the job runs (--help works without it)
    from impl.spark.compaction import CompactResult

# What the job imports when it runs: checked before anything starts, so a missing extra fails at
# once instead of after minutes of Spark work (pyspark: the spark extra; rich, matplotlib: sim)
RUN_REQUIREMENTS = ("pyspark", "rich", "matplotlib")

log = logging.getLogger("simulation.spark_job")

TABLE = "sim.events"
KEYS = ["dt", "id"]
INTENTS = posixpath.join(".paimon_py_spark", "writes", TABLE)

# the --s3-* flags and the option each sets (pypaimon's names)
S3_FLAGS = {"s3_endpoint": "fs.s3.endpoint", "s3_access_key": "fs.s3.accessKeyId",
            "s3_secret_key": "fs.s3.accessKeySecret", "s3_region": "fs.s3.region"}


@dataclass(frozen=True)
class SparkJobConfig:
    """The main job's settings (the command-line flags)."""

    warehouse: str = "./warehouse"
    reports: str = "./reports"
    writers: int = 3
    commits: int = 8  # per writer
    seconds: float | None = None  # if set: run until then (commits is then an upper bound)
    keys: int = 20000
    partitions: int = 3
    buckets: int = 2
    batch_rows: int = 2000
    compact_interval_s: float = 4.0
    compactors: int = 1  # concurrent compaction jobs (2 or more make them conflict now and then)
    expire_interval_s: float = 3.0
    retain_min: int = 6
    retain_max: int = 12
    faults: bool = False
    fault_rate: float = 0.35
    seed: int = 7
    progress: bool = True
    keep_table: bool = False
    storage_options: tuple[tuple[str, str], ...] = ()  # how to reach an object-store warehouse
    embedded_s3: bool = False  # start a local S3 server and use a bucket on it as the warehouse
    # the catalog that lists the table (--catalog: metastore=jdbc and its uri); none: the warehouse's directories
    catalog_options: tuple[tuple[str, str], ...] = ()
    rest_catalog: bool = False  # --catalog rest: the writers' commits go through impl's REST catalog server

    def redacted(self) -> dict[str, Any]:
        """The settings for the report, with secrets (secret key, session token) masked."""
        out = asdict(self)
        hidden = set(SECRET_KEY_KEYS) | set(SESSION_TOKEN_KEYS)
        out["storage_options"] = {k: ("***" if k in hidden else v) for k, v in self.storage_options}
        out["catalog_options"] = {k: redact(v) for k, v in self.catalog_options}
        return out


@dataclass
class SparkJobStats:
    """Counters the job's threads add to (under ``lock``); the summary and the report read them."""

    started: float = field(default_factory=time.time)
    writer_commits: int = 0
    rows_written: int = 0
    batches_failed: int = 0
    conflicts: int = 0
    lost_races: int = 0  # commit attempts that lost the race for a snapshot id and retried
    faults_injected: int = 0
    faults_hit: int = 0
    recoveries: int = 0
    compactions: int = 0
    compaction_failures: int = 0
    expired_snapshots: int = 0
    leftovers_removed: int = 0
    commit_latency_s: list[float] = field(default_factory=list)
    write_latency_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **counts: Any) -> None:
        """Add to counters; a list field gets the value appended."""
        with self.lock:
            for k, v in counts.items():
                cur = getattr(self, k)
                if isinstance(cur, list):
                    cur.append(v)
                else:
                    setattr(self, k, cur + v)


class Check(NamedTuple):
    """One line of the verification: what was checked, whether it held, and the evidence."""

    name: str
    passed: bool
    detail: str


def _report_series(commit_user: str) -> str:
    """The plot series a snapshot's committer belongs to."""
    if commit_user.startswith("writer-"):
        return commit_user
    if commit_user.startswith("spark-compact"):
        return "compaction"
    return "other"


def _percentile_ms(sorted_s: Sequence[float], p: float) -> str:
    if not sorted_s:
        return "-"
    return f"{sorted_s[min(len(sorted_s) - 1, int(p * len(sorted_s)))] * 1000:.0f} ms"


class SparkJob:
    """One run of the main job (see the module docstring): ``setup()``, then ``run()``."""

    table: FileStoreTable
    replayer: ModelReplayer
    store_root: str  # the warehouse as the table's file system spells it (set by setup)

    def __init__(self, cfg: SparkJobConfig, spark: Any = None):
        self.cfg = cfg
        self.run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
        self.warehouse = (cfg.warehouse.rstrip("/") if is_object_store_url(cfg.warehouse)
                          else os.path.abspath(cfg.warehouse))
        self.table_path = posixpath.join(self.warehouse, "sim.db", "events")
        self.options = {**dict(cfg.storage_options), **dict(cfg.catalog_options)}
        self.stats = SparkJobStats()
        self.spark = spark
        self._stream: list[pa.Table] = []  # committed change batches, with __order
        self._committed: set[tuple[str, int]] = set()  # (writer user, commit identifier)
        self._order = 0
        self._stream_lock = threading.Lock()
        self._stop = threading.Event()
        self._writers_done = threading.Event()
        self._progress_lock = threading.Lock()
        self._progress_done = 0
        self.final_compaction: CompactResult | None = None
        self.final_replay: ModelReplayer | None = None
        self.elapsed_s = 0.0
        self.orphans_before: int | None = None
        self.expected_count: int | None = None
        self.summary: dict[str, object] = {}
        self.checks: list[Check] = []
        self.rest_server: RESTCatalogServer | None = None

    # ================================================================== setup

    def setup(self) -> None:
        import impl.spark  # noqa: F401 - binds impl.spark (the connector needs pyspark: imported on use)

        if self.spark is None:
            self.spark = impl.spark.session(app_name="paimon-py-simulate")
        impl.spark.register(self.spark)
        cat = open_catalog(self.warehouse, options=self.options)
        # the filesystem or JDBC catalog (--catalog): the warehouse's files are at hand
        assert isinstance(cat, FileSystemCatalog)
        if cat.table_exists(TABLE) and not self.cfg.keep_table:
            cat.drop_table(TABLE)
        try:  # intents of an earlier run's writes (their files went with the table)
            cat.file_io.fs.rm(posixpath.join(cat.warehouse, INTENTS), recursive=True)
        except FileNotFoundError:
            pass
        self.store_root = cat.warehouse  # the warehouse in the file system's own form
        cat.create_database("sim", ignore_if_exists=True)
        schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()),
                            ("writer", pa.int32()), ("batch", pa.int32())])
        cat.create_table(TABLE, schema=schema, primary_keys=KEYS, partition_keys=["dt"],
                         options={"bucket": str(self.cfg.buckets), "file.compression": "zstd",
                                  "num-sorted-run.compaction-trigger": "4"},
                         ignore_if_exists=True)
        if self.cfg.rest_catalog:
            # a REST catalog server over the warehouse, in this process: the writers' commits
            # (and their recoveries) are published by it; compactions and expirations stay direct
            # (on 127.0.0.1, for this process alone: no token; the writers bring the store's options,
            # since the server hands out no storage keys of its own)
            self.rest_server = RESTCatalogServer(self.warehouse, options=self.options, no_auth=True).start()
            rest = impl.CatalogFactory.create({"metastore": "rest", "uri": self.rest_server.uri, "warehouse": "sim",
                                               **dict(self.cfg.storage_options)})
            table = rest.get_table(TABLE)
        else:
            table = cat.get_table(TABLE)
        assert isinstance(table, FileStoreTable)  # TABLE names a data table, not a system table
        self.table = table
        self.replayer = ModelReplayer(self.table)

    # ================================================================== writers

    def _gen_batch(self, rng: np.random.Generator, owned: np.ndarray, present: np.ndarray, w: int,
                   i: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """A change batch of writer ``w``: (rows with an ``op`` column, indexes into ``owned``, ops)."""
        n = min(self.cfg.batch_rows, len(owned))
        idx = rng.choice(len(owned), size=n, replace=False)
        ids = owned[idx]
        was = present[idx]
        r = rng.random(n)
        ops = np.where(~was, "+I", np.where(r < 0.25, "-D", "+U"))
        names = np.array([f"p{j}" for j in range(self.cfg.partitions)])
        dt = names[(ids // self.cfg.writers) % self.cfg.partitions]
        t = pa.table({
            "dt": pa.array(dt, pa.string()),
            "id": pa.array(ids, pa.int64()),
            "v": pa.array(rng.integers(0, 1_000_000_000, n), pa.int64()),
            "writer": pa.array(np.full(n, w, np.int32)),
            "batch": pa.array(np.full(n, i, np.int32)),
            "op": pa.array(ops, pa.string()),
        })
        return t, idx, ops

    @staticmethod
    def _fault(rng: random.Random) -> Fault:
        kind = rng.choice(["io", "crash", "crash-after"])
        at = rng.randrange(0, 40)
        faults: dict[str, Callable[[int], Fault]] = {"io": IOErrorAt, "crash": Crash, "crash-after": CrashAfter}
        return faults[kind](at)

    def _commit(self, user: str, identifier: int, messages: Sequence[CommitMessage], rng: random.Random) -> bool:
        """Commit one batch as ``user``; with faults, maybe through a failing file system, then
        recover. Returns whether the batch is published (False: a conflict refused it)."""
        faulty = None
        if self.cfg.faults and rng.random() < self.cfg.fault_rate:
            # over the table's own store: the S3 client itself, or local disk
            inner = self.table.file_io.fs if self.table.file_io.is_object_store else LocalFileSystem()
            faulty = FaultyFileSystem(inner, [self._fault(rng)])
            self.stats.add(faults_injected=1)
        try:
            table = self.table if faulty is None else FileSystemCatalog(self.warehouse, filesystem=faulty).get_table(TABLE)
            c = table.new_stream_write_builder().with_commit_user(user).new_commit()
            st = c.commit(messages, commit_identifier=identifier)
            self.stats.add(lost_races=st.lost_races)
            return True
        except CommitConflictError as e:
            self.stats.add(conflicts=1, errors=f"{user}#{identifier}: conflict: {e}")
            return False
        except (Exception, SimulatedCrash) as e:  # noqa: BLE001 - injected (or real) failure: recover
            if faulty is None:
                raise
            self.stats.add(faults_hit=1)
            log.info("%s#%s: commit failed (%s: %s), recovering", user, identifier, type(e).__name__, e)
        # recovery: a healthy file system, the same commit user and identifier
        rc = self.table.new_stream_write_builder().with_commit_user(user).new_commit()
        rc.filter_and_commit({identifier: messages})
        self.stats.add(recoveries=1)
        return True

    def _record_committed(self, user: str, i: int, batch: pa.Table) -> None:
        with self._stream_lock:
            self._committed.add((user, i))
            self._order += 1
            self._stream.append(batch.append_column("__order", pa.array(
                np.full(batch.num_rows, self._order, np.int64))))

    def _writer(self, w: int, deadline: float | None) -> None:
        cfg = self.cfg
        rng = np.random.default_rng(cfg.seed * 1000 + w)
        frng = random.Random(cfg.seed * 7919 + w)
        owned = np.arange(w, cfg.keys, cfg.writers, dtype=np.int64)
        present = np.zeros(len(owned), dtype=bool)
        user = f"writer-{w}"
        for i in range(1, cfg.commits + 1):
            if self._stop.is_set() or (deadline is not None and time.time() >= deadline):
                break
            batch, idx, ops = self._gen_batch(rng, owned, present, w, i)
            t0 = time.time()
            try:
                df = self.spark.createDataFrame(batch)
                res = impl.spark.write_dataframe(df, self.table_path, options={"write-only": "true", **self.options},
                                                 row_kind_column="op", commit=False,
                                                 num_tasks=min(4, cfg.buckets * cfg.partitions))
            except Exception as e:  # noqa: BLE001 - the job failed: nothing committed, files removed
                self.stats.add(batches_failed=1, errors=f"{user}#{i}: write job failed: {e}")
                continue
            t1 = time.time()
            try:
                ok = self._commit(user, i, res.messages, frng)
            except Exception as e:  # noqa: BLE001 - a failed commit is counted, the writer goes on
                ok = False
                self.stats.add(batches_failed=1, errors=f"{user}#{i}: commit failed: {e!r}")
            t2 = time.time()
            try:
                removed = res.finish(ok, commit_user=user)
                self.stats.add(leftovers_removed=len(removed))
            except Exception as e:  # noqa: BLE001 - a failed cleanup shows as orphans at the end
                self.stats.add(errors=f"{user}#{i}: cleanup failed: {e!r}")
            if ok:
                present[idx[ops != "-D"]] = True
                present[idx[ops == "-D"]] = False
                self._record_committed(user, i, batch)
                self.stats.add(writer_commits=1, rows_written=batch.num_rows, commit_latency_s=t2 - t1,
                               write_latency_s=t1 - t0)
            else:
                self.stats.add(batches_failed=1)
            with self._progress_lock:
                self._progress_done += 1

    # ================================================================== maintenance

    def _compactor(self) -> None:
        while not self._writers_done.wait(self.cfg.compact_interval_s):
            try:
                r = impl.spark.compact(self.spark, self.table_path, full=False, options=self.options)
                self.stats.add(compactions=1 if r.snapshot_ids else 0, leftovers_removed=r.leftovers_removed)
            except CommitConflictError:  # another compaction got there first
                self.stats.add(conflicts=1)
            except Exception as e:  # noqa: BLE001 - a failed compaction is counted, the job goes on
                self.stats.add(compaction_failures=1, errors=f"compaction: {type(e).__name__}: {e}")

    def _expirer(self) -> None:
        while not self._writers_done.wait(self.cfg.expire_interval_s):
            try:
                r = self.table.expire_snapshots(retain_min=self.cfg.retain_min, retain_max=self.cfg.retain_max,
                                                time_retained_ms=0)
                self.stats.add(expired_snapshots=len(r.expired_snapshot_ids))
            except Exception as e:  # noqa: BLE001 - a failed expiration is a note, the job goes on
                self.stats.add(errors=f"expiration: {type(e).__name__}: {e}")

    def _monitor(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.replayer.catch_up()
            except Exception as e:  # noqa: BLE001 - e.g. a snapshot expired under the replay
                self.stats.add(errors=f"monitor: {type(e).__name__}: {e}")
        self.replayer.catch_up()

    # ================================================================== run

    def run(self) -> int:
        """Set up, run every thread to the end, verify, report; 0 if every check passed."""
        cfg = self.cfg
        self.setup()
        deadline = time.time() + cfg.seconds if cfg.seconds else None
        writers = [threading.Thread(target=self._guard, args=(self._writer, w, deadline), name=f"writer-{w}",
                                    daemon=True) for w in range(cfg.writers)]
        background = [threading.Thread(target=self._guard, args=(self._compactor,), name=f"compactor-{c}",
                                       daemon=True) for c in range(cfg.compactors)]
        background.append(threading.Thread(target=self._guard, args=(self._expirer,), name="expirer", daemon=True))
        monitor = threading.Thread(target=self._guard, args=(self._monitor,), name="monitor", daemon=True)
        self.stats.started = time.time()
        for t in writers + background + [monitor]:
            t.start()
        self._show_progress(writers, deadline)
        for t in writers:
            t.join()
        self._writers_done.set()
        for t in background:
            t.join()
        # a final full compaction: everything into one sorted run per bucket
        try:
            self.final_compaction = impl.spark.compact(self.spark, self.table_path, full=True,
                                                       options=self.options)
        except Exception as e:  # noqa: BLE001 - reported; the verification still runs
            self.stats.add(errors=f"final compaction: {type(e).__name__}: {e}")
        self._stop.set()
        monitor.join()
        if self.rest_server is not None:
            self.rest_server.stop()
        self.elapsed_s = time.time() - self.stats.started
        checks = self.verify()
        return self.finish(checks)

    def _guard(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            impl.spark.register(self.spark)  # the JVM keeps the active session per thread
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - a dying thread is a finding, not a hang
            self.stats.add(errors=f"{threading.current_thread().name} died: {type(e).__name__}: {e}\n"
                                  f"{traceback.format_exc(limit=4)}")

    def _progress_info(self, deadline: float | None) -> str:
        s = self.stats
        snaps = self.replayer.steps[-1].snapshot_id if self.replayer.steps else 0
        info = (f"snapshot {snaps}  commits {s.writer_commits}  compactions {s.compactions}  "
                f"expired {s.expired_snapshots}  races {s.lost_races}  faults {s.faults_hit}/"
                f"{s.faults_injected}")
        if deadline is not None:
            info += f"  {max(0, deadline - time.time()):.0f}s left"
        return info

    def _show_progress(self, writers: Sequence[threading.Thread], deadline: float | None) -> None:
        total = self.cfg.writers * self.cfg.commits
        if not self.cfg.progress:
            for t in writers:
                t.join()
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("{task.fields[info]}"), console=console,
                      transient=False) as progress:
            task = progress.add_task("writer batches", total=total, info="")
            while any(t.is_alive() for t in writers):
                progress.update(task, completed=self._progress_done, info=self._progress_info(deadline))
                time.sleep(0.25)
            progress.update(task, completed=self._progress_done)

    # ================================================================== verification

    def _check_live_replay(self) -> Check:
        live = self.replayer
        if live.problems:
            return Check("model replay while running", False, "; ".join(live.problems[:5]))
        return Check("model replay while running", True,
                     f"{live.checked} snapshots replayed as they appeared ({live.gaps} re-seeds after expiration)")

    def _check_final_replay(self, final: ModelReplayer) -> Check:
        ids = self.table.snapshot_manager().snapshot_ids()
        if final.problems:
            return Check("model replay of retained snapshots", False, "; ".join(final.problems[:5]))
        return Check("model replay of retained snapshots", True,
                     f"snapshots {ids[0] if ids else '-'}..{ids[-1] if ids else '-'}: live files and record "
                     f"counts equal the model's")

    def _storage(self) -> FileIO:
        """A FileIO of its own on the table's store (local disk, or the S3 client), for the checks."""
        return FileIO(self.table.file_io.fs)

    def _check_audit(self) -> Check:
        audit = audit_table(self._storage(), self.table.path)
        return Check("storage audit (ids contiguous, files present, counts)", audit.ok,
                     "ok" if audit.ok else "; ".join(audit.problems[:5]))

    def _check_orphans(self) -> Check:
        """Crashes injected into commits may leave unreferenced manifests; without faults there
        must be none. Either way, remove them and check nothing is left."""
        before = find_orphans(self._storage(), self.table.path)
        self.orphans_before = len(before)
        removed = self.table.remove_orphan_files(older_than_millis=int(time.time() * 1000) + 1)
        after = find_orphans(self._storage(), self.table.path)
        allowed = "allowed: injected crashes" if self.cfg.faults else "none allowed"
        return Check("no orphan files", not after and (self.cfg.faults or not before),
                     f"{len(before)} found before cleanup ({allowed}), {len(removed)} removed, {len(after)} left")

    def _check_intents(self) -> Check:
        intents = self._storage().walk_files(posixpath.join(self.store_root, INTENTS))
        return Check("no write intents left", not intents, f"{len(intents)} intent markers left")

    def _check_rows(self, stream: pa.Table) -> list[Check]:
        expected = expected_rows(stream, KEYS, "op", "__order")
        self.expected_count = expected.num_rows
        checks = []
        spark_rows = self.spark.read.format("paimon_py").options(**self.options).load(self.table_path).toArrow()
        for via, actual in (("Spark", spark_rows),
                            ("impl", self.table.to_arrow())):
            diff = compare_rows(expected, actual, KEYS)
            checks.append(Check(f"rows read through {via} = rows recomputed from the change stream", not diff,
                                f"{expected.num_rows} rows" if not diff else "; ".join(diff)))
        return checks

    def _check_exactly_once(self) -> Check:
        """Every committed batch is exactly one APPEND snapshot of its writer (the monitor saw
        every snapshot unless expiration outran it: then only "no duplicates" can be checked)."""
        live = self.replayer
        seen: dict[tuple[str, int], int] = {}
        for st in live.steps:
            if st.commit_user.startswith("writer-") and st.kind == "APPEND":
                seen[(st.commit_user, st.commit_identifier)] = seen.get((st.commit_user, st.commit_identifier), 0) + 1
        dups = sorted(k for k, n in seen.items() if n > 1)
        exact = live.gaps == 0
        once_ok = not dups and (set(seen) == self._committed if exact else set(seen) <= self._committed)
        return Check("every writer commit published exactly once", once_ok,
                     f"{len(self._committed)} committed batches, {len(seen)} writer APPEND snapshots"
                     + ("" if exact else " (some expired unseen)") + (f", duplicated: {dups[:3]}" if dups else ""))

    def verify(self) -> list[Check]:
        """Every check of the run, in the order the summary shows them."""
        final = replay_retained(self.table)
        checks = [self._check_live_replay(), self._check_final_replay(final), self._check_audit(),
                  self._check_orphans(), self._check_intents()]
        with self._stream_lock:
            stream = pa.concat_tables(self._stream) if self._stream else None
        if stream is None:
            checks.append(Check("rows equal the recomputed change stream", False, "nothing was committed"))
            self.expected_count = 0
            return checks
        checks += self._check_rows(stream)
        checks.append(self._check_exactly_once())
        fatal = [e for e in self.stats.errors if " died: " in e]
        checks.append(Check("no thread died", not fatal, "; ".join(fatal[:2]) if fatal else "ok"))
        self.final_replay = final
        return checks

    # ================================================================== summary and report

    def _summary(self) -> dict[str, object]:
        s = self.stats
        latest = self.table.snapshot_manager().latest_snapshot()
        steps = self.final_replay.steps if self.final_replay else []
        levels = steps[-1].files_per_level if steps else {}
        level_text = ", ".join(f"L{lvl}: {n}" for lvl, n in sorted(levels.items())) or "-"
        lat = sorted(s.commit_latency_s)
        final_compactions = 1 if self.final_compaction and self.final_compaction.snapshot_ids else 0
        return {
            "elapsed": f"{self.elapsed_s:.1f} s",
            "writer commits": s.writer_commits,
            "snapshots published (latest id)": latest.id if latest else 0,
            "snapshots retained": len(self.table.snapshot_manager().snapshot_ids()),
            "snapshots expired": s.expired_snapshots,
            "compaction commits": s.compactions + final_compactions,
            "conflicts (aborted cleanly)": s.conflicts,
            "compaction failures": s.compaction_failures,
            "commit retries (lost races)": s.lost_races,
            "faults injected / hit / recoveries": f"{s.faults_injected} / {s.faults_hit} / {s.recoveries}",
            "batches failed": s.batches_failed,
            "rows written": s.rows_written,
            "rows/s (written)": f"{s.rows_written / max(self.elapsed_s, 1e-9):.0f}",
            "rows in table": "-" if self.expected_count is None else self.expected_count,
            "commit latency p50 / p90 / max":
                f"{_percentile_ms(lat, 0.5)} / {_percentile_ms(lat, 0.9)} / {_percentile_ms(lat, 0.9999)}",
            "live files per level (latest)": level_text,
            "orphans found before cleanup": "-" if self.orphans_before is None else self.orphans_before,
            "leftover files of failed attempts removed": s.leftovers_removed,
            **({} if self.rest_server is None else {
                "REST server commits published / lost races": "{published} / {lost}".format(
                    published=self.rest_server.service.commit_counts["published"],
                    lost=self.rest_server.service.commit_counts["lost"])}),
        }

    def finish(self, checks: list[Check]) -> int:
        """Print the summary, write the report; 0 if every check passed, else 1."""
        s, cfg = self.stats, self.cfg
        summary = self._summary()
        ok = all(c.passed for c in checks)
        _print_summary(summary, checks, ok)
        start_ms = s.started * 1000
        steps = [st for st in self.replayer.steps if st.time_millis >= start_ms]
        events = [((st.time_millis - start_ms) / 1000.0, _report_series(st.commit_user), st.kind) for st in steps]
        level_points = [((st.time_millis - start_ms) / 1000.0, st.files_per_level) for st in steps]
        directory = os.path.join(os.path.abspath(cfg.reports), f"sim-{self.run_id}")
        notes = [e.splitlines()[0] for e in s.errors[:20]]
        path = write_report(directory, title=f"Multi-writer simulation {self.run_id}", config=cfg.redacted(),
                            summary=summary, checks=checks, snapshot_events=events,
                            latencies_s={"commit (driver)": s.commit_latency_s,
                                         "write job (Spark)": s.write_latency_s},
                            level_points=level_points, notes=notes)
        print(f"report: {path}")
        self.summary = summary
        self.checks = checks
        return 0 if ok else 1


def _print_summary(summary: dict[str, object], checks: Sequence[Check], ok: bool) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich comes with the sim extra; plain text otherwise
        for k, v in summary.items():
            print(f"{k:45s} {v}")
        for c in checks:
            print(f"[{'pass' if c.passed else 'FAIL'}] {c.name}: {c.detail}")
        print("VERIFICATION PASSED" if ok else "VERIFICATION FAILED")
        return
    console = Console()
    t = Table(title="simulation summary", show_header=False)
    for k, v in summary.items():
        t.add_row(k, str(v))
    console.print(t)
    table = Table(title="verification")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail")
    for c in checks:
        table.add_row(c.name, "[green]pass[/green]" if c.passed else "[red]FAIL[/red]", str(c.detail)[:160])
    console.print(table)
    console.print("[bold green]VERIFICATION PASSED[/bold green]" if ok else "[bold red]VERIFICATION FAILED[/bold red]")


_DESCRIPTION = """\
The main job: concurrent writer jobs upsert a generated change stream into a partitioned
primary-key table on local Spark, a dedicated compaction job compacts it and snapshots expire;
at the end the table is verified against the model replay of its snapshots and an independent
recomputation of its rows, a summary is printed and a report with plots is written.
Needs the spark and sim extras (pip install -e ".[spark,sim]")."""

_EPILOG = """\
object stores:
  --warehouse s3://bucket/prefix runs everything on an S3-compatible store (AWS S3, MinIO, R2, ...;
  it must support conditional writes). The --s3-* flags set Paimon's storage options
  (fs.s3.endpoint, fs.s3.accessKeyId, fs.s3.accessKeySecret, fs.s3.region); --option KEY=VALUE
  (repeatable) sets any other one, e.g. --option s3.path-style-access=true. Without keys the
  usual AWS credential chain applies (AWS_ACCESS_KEY_ID, profiles, instance roles). Spark's
  tasks open the store from the same options. Reports are written locally (--reports).

  --embedded-s3 starts a local S3 server (moto, on 127.0.0.1, a free port), creates a bucket and
  runs against s3://<bucket>/warehouse: a self-contained demo of the S3 path
  (needs the s3-server extra: pip install -e ".[s3-server]").

examples:
  python -m simulation --embedded-s3 --writers 2 --commits 4
  python -m simulation --warehouse s3://my-bucket/paimon --s3-endpoint http://127.0.0.1:9000 \\
      --s3-access-key minio --s3-secret-key minio123 --s3-region us-east-1
  python -m simulation --catalog jdbc:sqlite:./catalog.db     (the table listed by a JDBC catalog)
  python -m simulation --catalog rest     (the writers commit through impl's REST catalog server)
"""


def _storage_options(p: argparse.ArgumentParser, a: argparse.Namespace) -> dict[str, str]:
    """The storage options of the --s3-* and --option flags (errors name the flag)."""
    options: dict[str, str] = {}
    for item in a.option:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            p.error(f"--option {item!r}: expected KEY=VALUE")
        if not key.startswith(STORAGE_OPTION_PREFIXES):
            p.error(f"--option {item!r}: {key!r} is not a storage option (keys start with fs., s3. or s3a.)")
        options[key] = value
    for flag, key in S3_FLAGS.items():
        value = getattr(a, flag)
        if value is not None:
            options[key] = value
    return options


def parse_args(argv: Sequence[str] | None = None) -> SparkJobConfig:
    """The job's settings from the command line (``--help`` lists them)."""
    d = SparkJobConfig()
    p = argparse.ArgumentParser(prog="python -m simulation", description=_DESCRIPTION, epilog=_EPILOG,
                                formatter_class=HelpFormatter)
    p.add_argument("--warehouse", default=None,
                   help="warehouse directory or object-store URL s3://bucket/prefix (default: ./warehouse)")
    p.add_argument("--reports", default=d.reports, help="where reports go")
    p.add_argument("--writers", type=int, default=d.writers, help="concurrent writer jobs (K)")
    p.add_argument("--commits", type=int, default=d.commits, help="commits per writer")
    p.add_argument("--seconds", type=float, default=None, help="run for this long instead (commits is then a cap)")
    p.add_argument("--keys", type=int, default=d.keys, help="distinct primary keys")
    p.add_argument("--partitions", type=int, default=d.partitions, help="partitions of the table (values of dt)")
    p.add_argument("--buckets", type=int, default=d.buckets, help="buckets per partition")
    p.add_argument("--batch-rows", type=int, default=d.batch_rows, help="changes per writer commit")
    p.add_argument("--compact-interval", type=float, default=d.compact_interval_s,
                   help="seconds between compactions")
    p.add_argument("--compactors", type=int, default=d.compactors,
                   help="concurrent compaction jobs (>= 2 provokes commit conflicts)")
    p.add_argument("--expire-interval", type=float, default=d.expire_interval_s,
                   help="seconds between expirations")
    p.add_argument("--retain-min", type=int, default=d.retain_min,
                   help="expiration keeps at least this many snapshots (snapshot.num-retained.min)")
    p.add_argument("--retain-max", type=int, default=d.retain_max,
                   help="expiration keeps at most this many snapshots (snapshot.num-retained.max)")
    p.add_argument("--faults", action="store_true", help="inject I/O errors and crashes into some commits")
    p.add_argument("--fault-rate", type=float, default=d.fault_rate,
                   help="with --faults: the share of writer commits that get a fault")
    p.add_argument("--seed", type=int, default=d.seed, help="seed of the change stream and the faults")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (for logs and CI)")
    p.add_argument("--keep-table", action="store_true", help="do not drop sim.events from a previous run")
    p.add_argument("--catalog", metavar="URI", default=None,
                   help="a JDBC catalog lists the table (jdbc:sqlite:<file>, jdbc:postgresql://host/db?user=..."
                        "&password=...; its files stay in the warehouse), or 'rest': the writers commit through "
                        "impl's REST catalog server (python -m impl.rest), started over the warehouse in this process")
    s3 = p.add_argument_group("object stores (see below)")
    s3.add_argument("--s3-endpoint", metavar="URL", help="S3 endpoint, e.g. http://127.0.0.1:9000 (fs.s3.endpoint)")
    s3.add_argument("--s3-access-key", metavar="KEY", help="access key id (fs.s3.accessKeyId)")
    s3.add_argument("--s3-secret-key", metavar="SECRET", help="secret access key (fs.s3.accessKeySecret)")
    s3.add_argument("--s3-region", metavar="REGION", help="region, e.g. us-east-1 (fs.s3.region)")
    s3.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="any other storage option (fs.*, s3.*, s3a.*); repeatable")
    s3.add_argument("--embedded-s3", action="store_true",
                    help="start a local S3 server (moto; the s3-server extra) and run on a fresh bucket of it")
    a = p.parse_args(argv)
    if a.writers < 1 or a.commits < 1 or a.keys < a.writers or a.partitions < 1 or a.buckets < 1:
        p.error("writers, commits, partitions, buckets must be >= 1 and keys >= writers")
    if a.retain_min < 1 or a.retain_max < a.retain_min:
        p.error("need 1 <= --retain-min <= --retain-max")
    if a.catalog is not None and a.catalog != "rest" and not a.catalog.startswith("jdbc:"):
        p.error(f"--catalog {redact(a.catalog)!r}: expected a JDBC URI (jdbc:sqlite:<file> or "
                "jdbc:postgresql://host/db) or 'rest'")
    options = _storage_options(p, a)
    if a.embedded_s3 and (a.warehouse is not None or options):
        p.error("--embedded-s3 chooses the warehouse and its options itself: drop --warehouse, --s3-* and --option")
    warehouse = a.warehouse if a.warehouse is not None else d.warehouse
    if options and not is_object_store_url(warehouse):
        p.error(f"storage options ({', '.join(sorted(options))}) need an object-store warehouse "
                f"(--warehouse s3://bucket/prefix); {warehouse!r} is a local path")
    return dataclasses.replace(
        d, warehouse=warehouse, reports=a.reports, writers=a.writers,
        commits=a.commits if a.seconds is None else max(a.commits, 10**9), seconds=a.seconds,
        keys=a.keys, partitions=a.partitions, buckets=a.buckets, batch_rows=a.batch_rows,
        compact_interval_s=a.compact_interval, compactors=max(1, a.compactors),
        expire_interval_s=a.expire_interval, retain_min=a.retain_min, retain_max=a.retain_max,
        faults=a.faults, fault_rate=a.fault_rate, seed=a.seed, progress=not a.no_progress,
        keep_table=a.keep_table, storage_options=tuple(sorted(options.items())), embedded_s3=a.embedded_s3,
        catalog_options=(("metastore", "jdbc"), ("uri", a.catalog)) if a.catalog and a.catalog != "rest" else (),
        rest_catalog=a.catalog == "rest")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job with the command line's settings; the exit code (0: verification passed)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    cfg = parse_args(argv)
    server = None
    try:
        for module in RUN_REQUIREMENTS:
            require(module, "python -m simulation")
        if is_object_store_url(cfg.warehouse):
            require("s3fs", "an S3 warehouse")
        if cfg.embedded_s3:
            from simulation.embedded_s3 import EmbeddedS3

            server = EmbeddedS3()
    except MissingExtraError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    if server is not None:
        store = server.start()
        cfg = dataclasses.replace(cfg, warehouse=store.warehouse, storage_options=tuple(sorted(store.options().items())))
        print(f"embedded S3 server at {store.endpoint}, warehouse {store.warehouse}")
    had_session = SparkSession.getActiveSession() is not None
    job = SparkJob(cfg)
    try:
        return job.run()
    finally:
        if job.spark is not None and not had_session:
            try:
                job.spark.stop()
            except Exception:  # noqa: BLE001 - stopping is best effort; the exit code is what matters
                pass
        if server is not None:
            server.stop()


__all__ = ["Check", "SparkJob", "SparkJobConfig", "SparkJobStats", "main", "parse_args"]

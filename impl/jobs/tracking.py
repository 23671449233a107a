"""Write intents: every data file a parallel write (Spark, Ray) creates is logged before it is written.

Spark task attempts can fail or be retried (or run speculatively), and a failed attempt never
reports the files it already wrote. So each task writes through a *tracking* file system: before
any file is created under the table, an empty marker naming it is written to the write's intent
directory ``<warehouse>/.paimon_py_spark/writes/<db>.<table>/<write-id>/<task-attempt>/``.
The driver then knows every file the write produced, whichever attempt made it:

- after a successful commit it deletes the logged files no committed message names (leftovers
  of failed, retried or speculative attempts), then the intent directory;
- on abort it deletes every logged file that no snapshot of this write's commit user added,
  then the intent directory. If it cannot tell (storage failing, snapshots expired meanwhile)
  it deletes nothing and keeps the intent, so no file a snapshot may use is ever removed.

Spark does not wait for the other running tasks of a failed job (or for the speculative
duplicates of a finished one) before it calls abort (or commit): those attempts go on writing
until they end or Spark kills their Python worker (``spark.python.task.killTimeout``, 2 s by
default), and a killed worker's last PUT can still land. So each attempt also records that it
started and that it ended (``<write-id>/<task-attempt>.started`` / ``.ended`` under
``.paimon_py_spark/attempts/``); the driver, after closing the write, waits for the attempts it
saw start to end (at most ``grace_seconds``, then a little longer for a killed one's requests)
and sweeps once more.

The intent directory sits beside the databases, outside every table directory, so tables stay
byte-compatible with Paimon.

What is left after a close is the write's closed marker (``.paimon_py_spark/closed/<db>.<table>/
<write-id>``): it turns away attempts that start after the close and makes stragglers remove
their own files. A write is *settled* once no attempt of it can still run: the driver waited for
the attempts it saw start, and Spark kills the rest within seconds (``spark.python.task.killTimeout``).
Each close deletes the markers of the table's writes closed more than
``CLOSED_MARKER_RETENTION_SECONDS`` before its own (storage modification times, compared with
the new marker's, so the driver's clock does not matter), so the directory holds only the recent ones.
Recovery never reads a marker: streams find a micro-batch's earlier runs by their intents and
attempt records (impl/spark/stream_writer.py), and a run id is never reused.
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
import threading
import time
import urllib.parse
import uuid
from typing import Any, Callable, Iterable, Iterator

from impl.errors import WriteClosedError
from impl.fs.file_io import FileIO
from impl.store.core import bucket_index_files

log = logging.getLogger(__name__)

INTENT_ROOT = ".paimon_py_spark"


def new_write_id() -> str:
    return uuid.uuid4().hex


# How long the driver waits for task attempts it saw start to end, and then how long it lets
# the requests of an attempt that never ended (a killed Python worker) land before the last sweep.
ATTEMPT_GRACE_SECONDS = 10.0
KILLED_ATTEMPT_SETTLE_SECONDS = 1.0
_POLL_SECONDS = 0.2
# How long a closed marker is kept after its write closed: far longer than the attempt grace
# period and Spark's kill timeout, so no attempt of a pruned write is alive.
CLOSED_MARKER_RETENTION_SECONDS = 3600.0


class WriteIntent:
    """The intent log of one write (``write_id``) to one table."""

    def __init__(self, file_io: FileIO, warehouse_root: str, identifier: str, table_root: str, write_id: str):
        self.file_io = file_io
        self.table_root = table_root.rstrip("/")
        self.write_id = write_id
        root = warehouse_root.rstrip("/") or "/"
        self.dir = posixpath.join(root, INTENT_ROOT, "writes", identifier, write_id)
        self.attempts_dir = posixpath.join(root, INTENT_ROOT, "attempts", identifier, write_id)
        # Outlives the intent: a task attempt still writing when the driver commits or aborts
        # finds it after its write and removes its own file (see drop_if_closed).
        self.closed_marker = posixpath.join(root, INTENT_ROOT, "closed", identifier, write_id)

    @staticmethod
    def for_table(table, write_id: str, file_io: FileIO | None = None) -> "WriteIntent":
        """The intent of ``write_id`` on an open table (``impl.FileStoreTable``)."""
        root = posixpath.dirname(posixpath.dirname(table.path))
        return WriteIntent(file_io or table.file_io, root, table.identifier, table.path, write_id)

    # ------------------------------------------------------------------ tasks

    def _marker(self, task_key: str, path: str) -> str:
        p = path.rstrip("/")
        if p.startswith(self.table_root + "/"):
            rel = p[len(self.table_root) + 1:]
        else:
            rel = "@" + p
        return posixpath.join(self.dir, task_key, urllib.parse.quote(rel, safe=""))

    def _attempt_marker(self, task_key: str, state: str) -> str:
        return posixpath.join(self.attempts_dir, f"{task_key}.{state}")

    def begin(self, task_key: str) -> None:
        """Before an attempt writes anything: record that it started, then make sure the write
        is still open. Either the driver's listing (after its closed marker) sees this attempt
        start, or this attempt sees the marker and writes nothing (:class:`WriteClosedError`)."""
        started = self._attempt_marker(task_key, "started")
        self.file_io.write_bytes(started, b"")
        if self.file_io.file_exists(self.closed_marker):
            self.file_io.delete_quietly([started])
            raise WriteClosedError(f"write {self.write_id} was already committed or aborted; "
                                   f"task attempt {task_key} writes nothing")

    def end(self, task_key: str) -> None:
        """After an attempt's last write (whether it succeeded or failed). Best effort: an attempt
        that cannot say it ended only makes the driver wait its grace period."""
        try:
            self.file_io.write_bytes(self._attempt_marker(task_key, "ended"), b"")
        except Exception as e:  # noqa: BLE001
            log.warning("write %s: cannot record the end of task attempt %s: %s", self.write_id, task_key, e)

    @contextlib.contextmanager
    def task_attempt(self, task_key: str, fs) -> Iterator[Any]:
        """The tracking copy of ``fs`` for one task attempt, between :meth:`begin` and :meth:`end`."""
        self.begin(task_key)
        try:
            yield tracking_filesystem(fs, lambda p: self.mark(task_key, p),
                                      lambda p: self.drop_if_closed(task_key, p))
        finally:
            self.end(task_key)

    def mark(self, task_key: str, path: str) -> None:
        """Record that ``path`` is about to be written (before it is)."""
        self.file_io.write_bytes(self._marker(task_key, path), b"")

    def drop_if_closed(self, task_key: str, path: str) -> None:
        """After ``path`` was written: if the driver already closed this write (committed or
        aborted), nobody will clean it up any more, so the task removes it itself.

        Why this closes the race with a straggling task: the task logs, writes, then looks for
        the marker; the driver writes the marker, then lists the log and deletes. If the task
        saw no marker, its write happened before the marker, so the driver's listing, which
        comes after the marker, sees the log entry and the file. Needs a store with
        read-after-write consistency (local disk, S3). An attempt killed between its write and
        this check is covered by the driver's wait for the attempts it saw start.
        """
        if self.file_io.file_exists(self.closed_marker):
            self.file_io.delete_quietly([path, self._marker(task_key, path)])

    # ------------------------------------------------------------------ driver

    def logged_paths(self) -> list[str]:
        """Every data file path any attempt of this write logged."""
        out = []
        for st in self.file_io.walk_files(self.dir):
            name = urllib.parse.unquote(posixpath.basename(st.path))
            out.append(name[1:] if name.startswith("@") else posixpath.join(self.table_root, name))
        return sorted(set(out))

    def unfinished_attempts(self) -> set[str]:
        """Task attempts that recorded their start but not (yet) their end."""
        states: dict[str, set[str]] = {}
        for name in self.file_io.list_names(self.attempts_dir):
            key, _, state = name.rpartition(".")
            states.setdefault(key, set()).add(state)
        return {k for k, s in states.items() if "ended" not in s}

    def delete_unreferenced(self, keep_names: Iterable[str], *, grace_seconds: float = ATTEMPT_GRACE_SECONDS,
                            settle_seconds: float = KILLED_ATTEMPT_SETTLE_SECONDS,
                            monotonic: Callable[[], float] = time.monotonic,
                            sleep: Callable[[float], None] = time.sleep) -> list[str]:
        """Close the write, delete logged files whose name is not in ``keep_names``, wait for the
        attempts still running (at most ``grace_seconds``) and sweep again; then drop the intent.
        Returns the deleted paths."""
        keep = set(keep_names)
        self.file_io.write_bytes(self.closed_marker, b"")  # before listing: see begin, drop_if_closed
        doomed = self._sweep(keep)
        running = self.unfinished_attempts()
        if running:
            deadline = monotonic() + grace_seconds
            while running and monotonic() < deadline:
                sleep(_POLL_SECONDS)
                running = self.unfinished_attempts()
            if running:
                log.warning("write %s: task attempt(s) %s did not end within %.0f s (killed?)",
                            self.write_id, sorted(running), grace_seconds)
                sleep(settle_seconds)
            doomed = sorted(set(doomed) | set(self._sweep(keep)))
        self.discard()
        self.prune_settled_markers()
        return doomed

    def prune_settled_markers(self, retention_seconds: float = CLOSED_MARKER_RETENTION_SECONDS) -> list[str]:
        """Delete the closed markers of this table's writes that closed more than ``retention_seconds``
        before this one (whose marker must exist). Markers without a modification time are kept.
        Best effort: a marker left behind only costs an entry. Returns the deleted paths."""
        closed_dir = posixpath.dirname(self.closed_marker)
        try:
            markers = self.file_io.list_status(closed_dir)
            own = next((m.modified_millis for m in markers
                        if posixpath.basename(m.path) == posixpath.basename(self.closed_marker)), None)
            if own is None:
                return []
            cutoff = own - retention_seconds * 1000
            doomed = [posixpath.join(closed_dir, posixpath.basename(m.path)) for m in markers
                      if m.modified_millis is not None and m.modified_millis < cutoff]
            self.file_io.delete_quietly(doomed)
            return doomed
        except Exception as e:  # noqa: BLE001 - pruning is housekeeping; the write is done
            log.warning("cannot prune the closed markers in %s: %s", closed_dir, e)
            return []

    def _sweep(self, keep: set[str]) -> list[str]:
        doomed = [p for p in self.logged_paths() if posixpath.basename(p) not in keep]
        self.file_io.delete_quietly(doomed)
        return doomed

    def discard(self) -> None:
        for d in (self.dir, self.attempts_dir):
            try:
                self.file_io.fs.rm(d, recursive=True)
            except FileNotFoundError:
                pass
            except Exception as e:  # noqa: BLE001 - a leftover intent only costs disk space
                log.warning("cannot remove write intent %s: %s", d, e)


# ---------------------------------------------------------------------- tracking file system


# The write methods the tracking file system intercepts.
_TRACKED = ("pipe_file", "cp_file", "put_file")


class _TrackingMixin:
    """Calls ``self._paimon_on_write(path)`` before any file is created or overwritten."""

    cachable = False
    # set on each instance by tracking_filesystem; _strip_protocol comes from the fsspec class
    # the mixin is combined with
    _paimon_on_write: Callable[[str], None]
    _paimon_after_write: Callable[[str], None] | None
    _paimon_seen: set[str]
    _paimon_lock: threading.Lock
    _paimon_inner: dict[str, Callable[..., Any]]
    _strip_protocol: Callable[[str], str]

    def _paimon_track(self, path) -> None:
        if isinstance(path, str) and path.endswith("/"):
            return  # an object store's directory marker (FileIO.mkdirs): not a file of the table
        path = self._strip_protocol(path) if isinstance(path, str) else path
        seen = self._paimon_seen
        with self._paimon_lock:
            if path in seen:
                return
            seen.add(path)
        self._paimon_on_write(path)

    def _paimon_call(self, name: str, *args, **kwargs):
        inner = self._paimon_inner.get(name)
        if inner is not None:
            return inner(*args, **kwargs)
        return getattr(super(), name)(*args, **kwargs)

    def _paimon_written(self, path) -> None:
        after = self._paimon_after_write
        if after is not None and isinstance(path, str) and not path.endswith("/"):
            after(self._strip_protocol(path))

    def pipe_file(self, path, value, *args, **kwargs):
        self._paimon_track(path)
        out = self._paimon_call("pipe_file", path, value, *args, **kwargs)
        self._paimon_written(path)
        return out

    def _open(self, path, mode="rb", *args, **kwargs):
        if any(c in mode for c in "wax+"):
            self._paimon_track(path)
        return super()._open(path, mode, *args, **kwargs)

    def cp_file(self, path1, path2, *args, **kwargs):
        self._paimon_track(path2)
        out = self._paimon_call("cp_file", path1, path2, *args, **kwargs)
        self._paimon_written(path2)
        return out

    def put_file(self, lpath, rpath, *args, **kwargs):
        self._paimon_track(rpath)
        out = self._paimon_call("put_file", lpath, rpath, *args, **kwargs)
        self._paimon_written(rpath)
        return out


_SUBCLASSES: dict[type, type] = {}


def tracking_filesystem(fs, on_write: Callable[[str], None], after_write: Callable[[str], None] | None = None):
    """A copy of the fsspec file system ``fs`` that calls ``on_write(path)`` before each write
    (and ``after_write(path)`` after each whole-file write: pipe_file, cp_file, put_file).

    The copy is an instance of a subclass of ``type(fs)``, so isinstance checks (local disk,
    memory) keep working; fsspec's instance cache is bypassed. It shares ``fs``'s state (an
    object store's client and event loop included).

    Async file systems (s3fs) bind their blocking ``pipe_file`` & co. on the instance (fsspec's
    ``mirror_sync_methods``), where they would shadow the mixin's methods in the copied state:
    those bound methods are taken out of the copy and called by the mixin after logging. The
    log is written before entering the store's event loop, never from inside it.
    """
    cls = type(fs)
    sub = _SUBCLASSES.get(cls)
    if sub is None:
        sub = type(f"Tracking{cls.__name__}", (_TrackingMixin, cls), {"cachable": False})
        _SUBCLASSES[cls] = sub
    obj: Any = object.__new__(sub)  # a copy of fs's state, not a fresh fsspec instance
    obj.__dict__.update(fs.__dict__)
    obj._paimon_inner = {name: obj.__dict__.pop(name) for name in _TRACKED if name in obj.__dict__}
    obj._paimon_on_write = on_write
    obj._paimon_after_write = after_write
    obj._paimon_seen = set()
    obj._paimon_lock = threading.Lock()
    return obj


# ---------------------------------------------------------------------- what a commit user published


def files_added_by(table, commit_user: str, since_snapshot_id: int) -> set[str] | None:
    """Names of the files that snapshots of ``commit_user`` newer than ``since_snapshot_id`` added.

    None when that cannot be known for sure: a snapshot after ``since_snapshot_id`` has been
    expired (it may have been ours), or storage failed while looking.
    """
    try:
        sm = table.snapshot_manager()
        ids = sm.snapshot_ids()
        newer = [i for i in ids if i > since_snapshot_id]
        if not newer:
            return set()
        if newer[0] != since_snapshot_id + 1:
            return None  # something in between is gone
        names: set[str] = set()
        for sid in newer:
            snap = sm.try_snapshot(sid)
            if snap is None:
                return None
            if snap.commit_user != commit_user:
                continue
            metas = table.manifest_list.read(snap.delta_manifest_list)
            for e in table.manifest_file.read_all(metas):
                names.update((e.file.file_name, *e.file.extra_files))
            if snap.changelog_manifest_list:
                for e in table.manifest_file.read_all(table.manifest_list.read(snap.changelog_manifest_list)):
                    names.update((e.file.file_name, *e.file.extra_files))
            # the index files the snapshot holds (its index manifest lists them all, ours among
            # them: keeping another writer's too deletes nothing it needs)
            for files in bucket_index_files(table.core, snap).values():
                names.update(f.file_name for f in files)
        return names
    except Exception as e:  # noqa: BLE001 - unknown means: delete nothing
        log.warning("cannot list the files committed by %s to %s: %s", commit_user, table.identifier, e)
        return None


def clean_after_failure(table, intent: WriteIntent, commit_user: str, since_snapshot_id: int,
                        **wait: Any) -> list[str]:
    """Abort path: delete the logged files no snapshot of ``commit_user`` added (all of them
    when nothing was published), waiting for running attempts as :meth:`WriteIntent.delete_unreferenced`
    does (``wait`` are its keyword arguments). Deletes nothing, and keeps the intent, when unsure."""
    kept = files_added_by(table, commit_user, since_snapshot_id)
    if kept is None:
        log.warning("write %s to %s: outcome unknown, keeping its files (intent %s)",
                    intent.write_id, table.identifier, intent.dir)
        return []
    return intent.delete_unreferenced(kept, **wait)


__all__ = ["WriteIntent", "WriteClosedError", "tracking_filesystem", "files_added_by", "clean_after_failure", "new_write_id",
           "INTENT_ROOT"]

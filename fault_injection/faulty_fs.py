"""An fsspec file system that fails on purpose.

:class:`FaultyFileSystem` wraps any fsspec file system (``inner``: memory, local disk, ...)
and runs every storage operation through a *fault plan*. It is what the crash, I/O-error and
concurrency tests plug into ``impl.fs.FileIO`` in place of the real file system; impl needs no
monkeypatching because FileIO only ever talks to an fsspec object.

Operations
----------
Every storage operation the wrapper performs is one *numbered operation* (a 0-based counter,
thread-safe, shared by all threads using the wrapper) and is recorded in ``fs.recorder.ops``
as an :class:`OpRecord` ``(op, kind, path)``. The kinds are::

    reads   cat_file exists ls find size info isfile isdir modified created open_read
    writes  pipe_file open_write copy link_if_absent rename_if_absent touch
    meta    makedirs mkdir rm_file rm rmdir mv sync
    object-store rename (NonAtomicRename):  mv.copy then mv.delete

For two-path operations (copy, mv, mv.copy, link_if_absent) ``path`` is the destination and
``record.src`` the source; ``record.nbytes`` is the number of bytes written by a write (for
copy and link_if_absent, the size of the source). Helpers fsspec builds out of these
(``cat``, ``pipe``, ``walk``, ``glob``, ``rename``, ``delete``, ...) count as the operations
they are made of. A file opened for writing is one ``open_write`` operation when it is
closed (its whole content lands then, like an object-store PUT); opening for reading is one
``open_read`` operation (reads from the returned handle are not counted).

Numbers are assigned when an operation starts (after any :class:`Latency` sleep); an
operation is attempted, and recorded, even when it then fails, so ``recorder.ops`` also shows
what a program *tried* to do after a crash.

Faults
------
``Crash(at_op=n)``
    Operation n and every later one raise :class:`SimulatedCrash`; operation n does not
    reach storage and nothing reaches storage after it (operations numbered below n that
    other threads still have in flight are allowed to finish, as in a real process kill
    they either landed or did not; the wrapper waits for them before it applies
    :class:`LoseUnsynced`).
``CrashAfter(at_op=n)``
    Operation n lands completely, then it and every later operation raise
    SimulatedCrash: the caller never learns that it succeeded (the "outcome unknown" case,
    e.g. a snapshot published just before the process died).
``IOErrorAt(at_op=n, landed=False)``
    Operation n raises ``OSError(EIO)``; later operations succeed (transient). With
    ``landed=True`` the operation reaches storage first and *then* reports the error.
``TornWrite(at_op=n, keep_bytes=k)``
    The write at operation n lands only its first k bytes, then SimulatedCrash (at n and
    after). For ``link_if_absent`` the target appears (only if it was absent) holding a
    prefix of the source. An operation that writes no bytes (rename, delete, mkdir, a
    read) lands nothing: a TornWrite there behaves as a Crash.
``NonAtomicRename()``
    ``mv``/``rename`` becomes copy-then-delete as on object stores: one ``mv.copy`` and one
    ``mv.delete`` operation per file (all copies first, then all deletes, for a directory),
    so a crash can fall between them and leave both names.
``LoseUnsynced(seed=0, mode="mixed", barrier="global")``
    On crash, files written but not yet durable vanish or are left empty (see below).
``Latency(match, seconds)``
    Sleep ``seconds`` before every operation whose kind or path matches (``match`` is a
    callable ``(kind, path) -> bool`` or a substring of the kind or the path), to widen
    race windows in concurrency tests. The sleep happens before the operation takes its
    number and holds no lock.

A plan may hold at most one op-numbered fault per operation number (ValueError otherwise).

Durability model (what LoseUnsynced loses)
------------------------------------------
The wrapper keeps the set of *unsynced* files: a file becomes unsynced when its content is
written through the wrapper (``pipe_file``, a closed ``open_write``, ``copy``, ``mv.copy``,
``touch``), even though the write call has returned (the bytes sit in a page cache). A
rename carries the unsynced state to the new name; deleting a file forgets it. A file
becomes *durable* at a durability point:

* ``fs.sync(path=None)``: an explicit fsync (one ``sync`` operation): the given file(s), or
  every file under a given directory, or with no argument every unsynced file;
* ``fs.link_if_absent(src, dst)``: a barrier, like fsync-before-link. With
  ``barrier="global"`` (default) every file written before the link becomes durable
  (the commit protocol writes data, manifests and manifest lists, then publishes the
  snapshot: this models "everything the snapshot names was synced before it was
  published"); with ``barrier="source"`` only ``src`` and ``dst`` do, and anything else
  needs an explicit ``sync``. The link target itself is durable once the link happened.
  The barrier takes effect only if the link operation is reached: a Crash *at* the link
  operation means the process died before its fsync.
* files that existed before this wrapper was created (e.g. written by a setup phase
  through another wrapper) are durable.

Metadata operations (mkdir, delete, rename) are durable as soon as they return (a
simplification: the model loses file *contents*, not directory entries), and the prefix
landed by a TornWrite is durable (it is what the disk holds after the crash).

When the crash happens (the first SimulatedCrash, or ``fs.crash()``), every file still
unsynced is, deterministically from ``(seed, path)`` (SHA-256, not Python's salted
``hash``), either deleted ("vanished") or truncated to zero bytes ("emptied");
``mode="vanish"`` or ``mode="empty"`` forces one outcome for every file. What happened is
listed in ``fs.lost_files`` as ``(path, "vanished" | "emptied")``.

Why SimulatedCrash derives from BaseException
---------------------------------------------
A crash models the death of the process. impl has best-effort paths such as
``FileIO.delete_quietly`` that catch ``Exception``; a crash derived from Exception (or from
OSError, or from impl's errors) would be swallowed there, and the program would carry on as
if it had survived. Deriving from BaseException makes it pass through every ``except
Exception`` and, because every operation after the crash raises again, any ``finally`` block
that tries to clean up still cannot reach storage. Tests catch it explicitly with
``except SimulatedCrash``.

Paths, instances, memory
------------------------
The wrapper takes and passes paths in the inner file system's form unchanged
(``_strip_protocol`` on an instance is the inner's). Writes create missing parent
directories (memory and object stores have implicit directories; on local disk this
matches what FileIO does for a plain LocalFileSystem). Every wrapper has its own plan and
counter, so the class is not cached by fsspec (``cachable = False``) and compares by
identity. Op numbers are per wrapper object, hence per process.

fsspec's MemoryFileSystem keeps ONE store per process (class attribute ``store``): "fresh
storage" on memory means a fresh unique root path, and cleaning up means deleting the keys
under it (see :mod:`fault_injection.crash_points`).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import io
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence, Union

from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from impl.fs.object_store import has_conditional_create

__all__ = [
    "SimulatedCrash",
    "Fault",
    "Crash",
    "CrashAfter",
    "IOErrorAt",
    "io_error",
    "TornWrite",
    "NonAtomicRename",
    "LoseUnsynced",
    "Latency",
    "OpRecord",
    "OpRecorder",
    "FaultyFileSystem",
    "WRITE_KINDS",
    "READ_KINDS",
]

#: Operation kinds that write bytes (the ones a TornWrite can tear).
WRITE_KINDS = frozenset({"pipe_file", "open_write", "copy", "mv.copy", "link_if_absent", "touch"})
#: Operation kinds that only look at storage and change nothing there.
READ_KINDS = frozenset({"cat_file", "exists", "ls", "find", "size", "info", "isfile", "isdir", "modified", "created",
                        "open_read"})

# How long a crashing operation waits for lower-numbered operations still in flight in
# other threads before it applies LoseUnsynced anyway.
_INFLIGHT_WAIT_SECONDS = 60.0


# =============================================================================== crash


class SimulatedCrash(BaseException):
    """The simulated process died at operation ``op`` (or, for ``op > crash_op``, had died).

    Derived from BaseException on purpose (see the module docstring): it must not be
    swallowed by ``except Exception`` in impl's best-effort cleanup.
    """

    def __init__(self, op: int, kind: str, path: str, crash_op: int | None = None, fault: Any = None):
        self.op = op
        self.kind = kind
        self.path = path
        self.crash_op = op if crash_op is None else crash_op
        self.fault = fault
        if self.crash_op == op:
            msg = f"simulated crash at op {op} ({kind} {path})"
        else:
            msg = f"simulated crash: op {op} ({kind} {path}) after the crash at op {self.crash_op}"
        super().__init__(msg)


# =============================================================================== faults


class Fault:
    """Base class of the faults a plan holds."""


@dataclass(frozen=True)
class Crash(Fault):
    """Operation ``at_op`` and every later one raise SimulatedCrash; op ``at_op`` does not land."""

    at_op: int


@dataclass(frozen=True)
class CrashAfter(Fault):
    """Operation ``at_op`` lands, then it and every later one raise SimulatedCrash."""

    at_op: int


@dataclass(frozen=True)
class IOErrorAt(Fault):
    """Operation ``at_op`` raises OSError(``errno``); later ones succeed.

    ``landed=True``: the operation reaches storage before the error is reported.
    """

    at_op: int
    landed: bool = False
    errno: int = errno.EIO


@dataclass(frozen=True)
class TornWrite(Fault):
    """The write at ``at_op`` lands only its first ``keep_bytes`` bytes, then SimulatedCrash."""

    at_op: int
    keep_bytes: int


@dataclass(frozen=True)
class NonAtomicRename(Fault):
    """mv/rename becomes copy-then-delete (two operations per file)."""


@dataclass(frozen=True)
class LoseUnsynced(Fault):
    """On crash, unsynced files vanish or are emptied (see the module docstring).

    mode: "mixed" (choose per file from seed and path), "vanish" or "empty".
    barrier: "global" (link_if_absent makes every earlier write durable) or "source"
    (it makes only its source and target durable).
    """

    seed: int = 0
    mode: str = "mixed"
    barrier: str = "global"

    def __post_init__(self):
        if self.mode not in ("mixed", "vanish", "empty"):
            raise ValueError(f"LoseUnsynced mode must be mixed, vanish or empty, not {self.mode!r}")
        if self.barrier not in ("global", "source"):
            raise ValueError(f"LoseUnsynced barrier must be global or source, not {self.barrier!r}")

    def fate(self, path: str) -> str:
        """"vanished" or "emptied": what a crash does to the unsynced file ``path``."""
        if self.mode == "vanish":
            return "vanished"
        if self.mode == "empty":
            return "emptied"
        digest = hashlib.sha256(f"{self.seed}\0{path}".encode()).digest()
        return "vanished" if digest[0] & 1 == 0 else "emptied"


Matcher = Union[str, Callable[[str, str], bool]]


@dataclass(frozen=True)
class Latency(Fault):
    """Sleep ``seconds`` before every operation whose kind or path matches ``match``."""

    match: Matcher
    seconds: float

    def matches(self, kind: str, path: str) -> bool:
        if callable(self.match):
            return bool(self.match(kind, path))
        return self.match in kind or self.match in (path or "")


_OP_FAULTS = (Crash, CrashAfter, IOErrorAt, TornWrite)
_CRASH_FAULTS = (Crash, CrashAfter, TornWrite)


# =============================================================================== recorder


class OpRecord(tuple):
    """One operation: a tuple ``(op, kind, path)``, plus ``.src`` and ``.nbytes``.

    Compares equal to the plain tuple ``(op, kind, path)``.
    """

    src: str | None  # the source path of a copy or rename
    nbytes: int | None  # bytes written, for writes

    def __new__(cls, op: int, kind: str, path: str, src: str | None = None, nbytes: int | None = None):
        self = super().__new__(cls, (op, kind, path))
        self.src = src
        self.nbytes = nbytes
        return self

    def __getnewargs__(self):
        return tuple(self)

    @property
    def op(self) -> int:
        return self[0]

    @property
    def kind(self) -> str:
        return self[1]

    @property
    def path(self) -> str:
        return self[2]

    @property
    def is_write(self) -> bool:
        return self[1] in WRITE_KINDS

    @property
    def is_read(self) -> bool:
        return self[1] in READ_KINDS

    def __repr__(self) -> str:
        extra = ""
        if self.src is not None:
            extra += f", src={self.src!r}"
        if self.nbytes is not None:
            extra += f", nbytes={self.nbytes}"
        return f"OpRecord({self[0]}, {self[1]!r}, {self[2]!r}{extra})"


class OpRecorder:
    """The operations of a run, in op-number order: ``ops`` is a list of :class:`OpRecord`."""

    def __init__(self) -> None:
        self.ops: list[OpRecord] = []
        self._lock = threading.Lock()

    def _add(self, record: OpRecord) -> None:
        with self._lock:
            self.ops.append(record)

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self):
        return iter(list(self.ops))

    def kinds(self) -> list[str]:
        return [r.kind for r in self.ops]

    def select(self, kind: str | None = None, path_contains: str | None = None) -> list[OpRecord]:
        """Records of one kind and/or whose path (or source) contains a substring."""
        out = []
        for r in list(self.ops):
            if kind is not None and r.kind != kind:
                continue
            if path_contains is not None and path_contains not in (r.path or "") and path_contains not in (r.src or ""):
                continue
            out.append(r)
        return out

    def clear(self) -> None:
        with self._lock:
            self.ops.clear()


# =============================================================================== the wrapper


class _InstanceStripProtocol:
    """``_strip_protocol``: the inner file system's on an instance, identity on the class."""

    def __get__(self, obj, objtype=None):
        if obj is None or "inner" not in obj.__dict__:
            return _identity_strip
        return obj.inner._strip_protocol


def _identity_strip(path):
    if isinstance(path, list):
        return [str(p) for p in path]
    return str(path)


class FaultyFileSystem(AbstractFileSystem):
    """Wrap ``inner`` and apply the fault plan ``faults`` to every storage operation.

    >>> import fsspec
    >>> fs = FaultyFileSystem(fsspec.filesystem("memory"), [IOErrorAt(1)])
    >>> fs.pipe_file("/doc/a", b"x")           # op 0
    >>> fs.cat_file("/doc/a")                   # op 1: transient EIO
    Traceback (most recent call last):
    OSError: [Errno 5] simulated I/O error at op 1 (cat_file /doc/a): '/doc/a'
    >>> fs.cat_file("/doc/a")                   # op 2
    b'x'
    >>> fs.recorder.ops
    [OpRecord(0, 'pipe_file', '/doc/a', nbytes=1), OpRecord(1, 'cat_file', '/doc/a'), OpRecord(2, 'cat_file', '/doc/a')]

    ``atomic_create=False`` models an object store without a conditional put: the wrapper
    then offers no ``link_if_absent`` (the attribute is None), so ``impl.fs.link_if_absent``
    raises UnsupportedFileSystemError and impl must refuse to publish snapshots.

    Over an object store (s3fs), the wrapper offers the store's conditional create instead
    (``supports_conditional_create``): impl publishes with ``pipe_file(path, data,
    mode="create")``, which is one numbered operation like every other write.
    """

    protocol = "faulty"
    cachable = False
    root_marker = ""
    _strip_protocol = _InstanceStripProtocol()

    def __init__(
        self,
        inner: AbstractFileSystem,
        faults: Iterable[Fault] = (),
        *,
        atomic_create: bool = True,
        recorder: OpRecorder | None = None,
    ):
        super().__init__()
        if not isinstance(inner, AbstractFileSystem):
            raise TypeError(f"inner must be an fsspec AbstractFileSystem, not {type(inner).__name__}")
        self.inner = inner
        self.faults: tuple[Fault, ...] = tuple(faults)
        self.recorder = recorder if recorder is not None else OpRecorder()
        self.atomic_create = atomic_create
        # Over an object store, publication is the inner store's conditional PUT
        # (pipe_file(mode="create"), one operation here like any other write), not a link.
        self.supports_conditional_create = atomic_create and has_conditional_create(inner)
        if not atomic_create or self.supports_conditional_create:
            # impl.fs.link_if_absent looks for this attribute; None = no atomic create. The
            # instance attribute hides the method on purpose, which mypy cannot express.
            self.link_if_absent = None  # type: ignore[method-assign, assignment]
        if atomic_create and callable(getattr(inner, "rename_if_absent", None)):
            # Over HDFS, publication is the inner store's rename-if-absent (one operation here).
            self.link_if_absent = None  # type: ignore[method-assign, assignment]
        else:
            self.rename_if_absent = None  # type: ignore[method-assign, assignment]

        self._at_op: dict[int, Fault] = {}
        self._latencies: list[Latency] = []
        self._non_atomic_rename = False
        self._lose: LoseUnsynced | None = None
        for f in self.faults:
            if isinstance(f, _OP_FAULTS):
                if not isinstance(f.at_op, int) or f.at_op < 0:
                    raise ValueError(f"{f!r}: at_op must be a non-negative int")
                if isinstance(f, TornWrite) and f.keep_bytes < 0:
                    raise ValueError(f"{f!r}: keep_bytes must be >= 0")
                if f.at_op in self._at_op:
                    raise ValueError(f"two faults at op {f.at_op}: {self._at_op[f.at_op]!r} and {f!r}")
                self._at_op[f.at_op] = f
            elif isinstance(f, Latency):
                self._latencies.append(f)
            elif isinstance(f, NonAtomicRename):
                self._non_atomic_rename = True
            elif isinstance(f, LoseUnsynced):
                if self._lose is not None:
                    raise ValueError("at most one LoseUnsynced per plan")
                self._lose = f
            else:
                raise TypeError(f"not a fault: {f!r}")

        self._cond = threading.Condition(threading.Lock())
        self._next_op = 0
        self._inflight = 0
        self._crash: SimulatedCrash | None = None
        self._crash_finished = False
        self._unsynced: dict[str, None] = {}
        self.lost_files: list[tuple[str, str]] = []

    # ------------------------------------------------------------------ identity

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def __repr__(self) -> str:
        return f"FaultyFileSystem({self.inner!r}, faults={list(self.faults)!r}, atomic_create={self.atomic_create})"

    def unstrip_protocol(self, name: str) -> str:
        """The inner file system's URI of ``name`` (what impl writes into metadata other
        readers open, such as Iceberg's), not a ``faulty://`` one no reader knows."""
        return str(self.inner.unstrip_protocol(name))

    # ------------------------------------------------------------------ state

    @property
    def op_count(self) -> int:
        """How many operations have been numbered so far."""
        with self._cond:
            return self._next_op

    @property
    def crashed(self) -> bool:
        with self._cond:
            return self._crash is not None

    @property
    def crash_info(self) -> SimulatedCrash | None:
        """The SimulatedCrash of the crashing operation, or None."""
        with self._cond:
            return self._crash

    def unsynced_paths(self) -> list[str]:
        """Files written through this wrapper that are not durable yet."""
        with self._cond:
            return list(self._unsynced)

    def crash(self) -> None:
        """Crash now, between operations (as a kill would): later operations raise SimulatedCrash
        and LoseUnsynced is applied. Does not itself raise."""
        with self._cond:
            if self._crash is None:
                self._crash = SimulatedCrash(self._next_op, "crash()", "", fault=None)
            self._finish_crash_locked()

    # ------------------------------------------------------------------ the engine

    def _key(self, path: str) -> str:
        try:
            return str(self.inner._strip_protocol(path)).rstrip("/") or "/"
        except Exception:  # noqa: BLE001 - a key is only for bookkeeping
            return str(path)

    def _run(
        self,
        kind: str,
        path: str,
        action: Callable[[], Any],
        *,
        src: str | None = None,
        nbytes: int | None = None,
        sizer: Callable[[], int] | None = None,
        torn: Callable[[int], None] | None = None,
    ) -> Any:
        for lat in self._latencies:
            if lat.matches(kind, path):
                time.sleep(lat.seconds)
        with self._cond:
            n = self._next_op
            self._next_op += 1
            record = OpRecord(n, kind, path, src=src, nbytes=nbytes)
            self.recorder._add(record)
            if self._crash is not None:
                raise SimulatedCrash(n, kind, path, crash_op=self._crash.crash_op, fault=self._crash.fault)
            fault = self._at_op.get(n)
            crash = None
            if isinstance(fault, _CRASH_FAULTS):
                crash = SimulatedCrash(n, kind, path, fault=fault)
                self._crash = crash  # from here on every other operation raises
                if isinstance(fault, Crash):
                    self._finish_crash_locked()
                    raise crash
            self._inflight += 1

        result = None
        try:
            if sizer is not None:
                try:
                    record.nbytes = int(sizer())
                except Exception:  # noqa: BLE001 - size is informational
                    pass
            if isinstance(fault, IOErrorAt) and not fault.landed:
                raise io_error(fault, kind, path)
            if isinstance(fault, TornWrite):
                if torn is not None:
                    try:
                        torn(fault.keep_bytes)
                    except Exception:  # noqa: BLE001 - whatever landed landed; the crash follows
                        pass
            elif crash is not None:  # CrashAfter: land fully, then die
                try:
                    result = action()
                except Exception:  # noqa: BLE001 - the crash supersedes the outcome
                    pass
            else:
                result = action()
        finally:
            with self._cond:
                self._inflight -= 1
                self._cond.notify_all()
                if crash is not None:
                    self._finish_crash_locked()
        if crash is not None:
            raise crash
        if isinstance(fault, IOErrorAt):  # landed
            raise io_error(fault, kind, path)
        return result

    def _finish_crash_locked(self) -> None:
        """Wait for lower-numbered operations in flight, then apply LoseUnsynced (once)."""
        deadline = time.monotonic() + _INFLIGHT_WAIT_SECONDS
        while self._inflight > 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._cond.wait(remaining)
        if self._crash_finished:
            return
        self._crash_finished = True
        if self._lose is None:
            return
        for key in list(self._unsynced):
            fate = self._lose.fate(key)
            try:
                if fate == "vanished":
                    self.inner.rm_file(key)
                else:
                    self.inner.pipe_file(key, b"")
            except FileNotFoundError:
                continue
            self.lost_files.append((key, fate))
        self._unsynced.clear()

    # -- durability bookkeeping (called inside an operation)

    def _mark_written(self, path: str) -> None:
        with self._cond:
            self._unsynced[self._key(path)] = None

    def _mark_durable(self, path: str) -> None:
        key = self._key(path)
        with self._cond:
            for k in [k for k in self._unsynced if k == key or k.startswith(key.rstrip("/") + "/")]:
                del self._unsynced[k]

    def _mark_all_durable(self) -> None:
        with self._cond:
            self._unsynced.clear()

    def _mark_moved(self, src: str, dst: str) -> None:
        skey, dkey = self._key(src), self._key(dst)
        with self._cond:
            for k in [k for k in self._unsynced if k == skey or k.startswith(skey + "/")]:
                del self._unsynced[k]
                self._unsynced[dkey + k[len(skey):]] = None

    def _prepare_parent(self, path: str) -> None:
        if isinstance(self.inner, LocalFileSystem):
            parent = self.inner._parent(path)
            if parent:
                os.makedirs(parent, exist_ok=True)

    # ------------------------------------------------------------------ reads

    def cat_file(self, path, start=None, end=None, **kwargs):
        return self._run("cat_file", path, lambda: self.inner.cat_file(path, start=start, end=end, **kwargs))

    def exists(self, path, **kwargs):
        return self._run("exists", path, lambda: self.inner.exists(path, **kwargs))

    def ls(self, path, detail=True, **kwargs):
        return self._run("ls", path, lambda: self.inner.ls(path, detail=detail, **kwargs))

    def find(self, path, maxdepth=None, withdirs=False, detail=False, **kwargs):
        return self._run(
            "find",
            path,
            lambda: self.inner.find(path, maxdepth=maxdepth, withdirs=withdirs, detail=detail, **kwargs),
        )

    def info(self, path, **kwargs):
        return self._run("info", path, lambda: self.inner.info(path, **kwargs))

    def size(self, path):
        return self._run("size", path, lambda: self.inner.size(path))

    def isfile(self, path):
        return self._run("isfile", path, lambda: self.inner.isfile(path))

    def isdir(self, path):
        return self._run("isdir", path, lambda: self.inner.isdir(path))

    def modified(self, path):
        return self._run("modified", path, lambda: self.inner.modified(path))

    def created(self, path):
        return self._run("created", path, lambda: self.inner.created(path))

    # ------------------------------------------------------------------ writes

    def pipe_file(self, path, value, mode="overwrite", **kwargs):
        data = bytes(value)

        def action():
            self._prepare_parent(path)
            self.inner.pipe_file(path, data, mode=mode, **kwargs)
            self._mark_written(path)

        def torn(keep):
            self._prepare_parent(path)
            self.inner.pipe_file(path, data[:keep], mode=mode, **kwargs)

        return self._run("pipe_file", path, action, nbytes=len(data), torn=torn)

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None, **kwargs):
        if mode == "rb":
            return self._run(
                "open_read",
                path,
                lambda: self.inner.open(path, "rb", block_size=block_size, cache_options=cache_options, **kwargs),
            )
        if mode in ("wb", "xb", "ab"):
            return _WriteOnClose(self, path, mode)
        raise ValueError(f"FaultyFileSystem supports modes rb, wb, xb, ab (and text variants), not {mode!r}")

    def _commit_open_write(self, path: str, mode: str, data: bytes) -> None:
        def content():
            if mode == "ab":
                try:
                    return self.inner.cat_file(path) + data
                except FileNotFoundError:
                    return data
            return data

        pipe_mode = "create" if mode == "xb" else "overwrite"

        def action():
            self._prepare_parent(path)
            self.inner.pipe_file(path, content(), mode=pipe_mode)
            self._mark_written(path)

        def torn(keep):
            self._prepare_parent(path)
            self.inner.pipe_file(path, content()[:keep], mode=pipe_mode)

        self._run("open_write", path, action, nbytes=len(data), torn=torn)

    def touch(self, path, truncate=True, **kwargs):
        def action():
            self._prepare_parent(path)
            self.inner.touch(path, truncate=truncate, **kwargs)
            self._mark_written(path)

        return self._run("touch", path, action, nbytes=0, torn=lambda keep: action())

    def cp_file(self, path1, path2, **kwargs):
        def action():
            self._prepare_parent(path2)
            self.inner.cp_file(path1, path2, **kwargs)
            self._mark_written(path2)

        def torn(keep):
            data = self.inner.cat_file(path1)
            self._prepare_parent(path2)
            self.inner.pipe_file(path2, data[:keep])

        return self._run("copy", path2, action, src=path1, sizer=lambda: self.inner.size(path1), torn=torn)

    def copy(self, path1, path2, recursive=False, maxdepth=None, on_error=None, **kwargs):
        if isinstance(path1, str) and isinstance(path2, str) and not recursive:
            return self.cp_file(path1, path2, **kwargs)
        return super().copy(path1, path2, recursive=recursive, maxdepth=maxdepth, on_error=on_error, **kwargs)

    def link_if_absent(self, src: str, dst: str) -> bool:
        """Create ``dst`` as a copy of the finished file ``src`` unless it exists: one operation.

        Delegates to ``impl.fs.link_if_absent`` on the inner file system (``os.link`` on
        local disk, lock + copy on memory), so it never replaces an existing file. It is a
        durability barrier for LoseUnsynced (see the module docstring).
        """
        from impl.fs import link_if_absent as impl_link_if_absent

        def barrier():
            if self._lose is not None and self._lose.barrier == "source":
                self._mark_durable(src)
            else:
                self._mark_all_durable()

        def action():
            barrier()
            self._prepare_parent(dst)
            created = bool(impl_link_if_absent(self.inner, src, dst))
            self._mark_durable(dst)
            return created

        def torn(keep):
            barrier()
            data = self.inner.cat_file(src)[:keep]
            self._prepare_parent(dst)
            _create_exclusive(self.inner, dst, data)

        return self._run("link_if_absent", dst, action, src=src, sizer=lambda: self.inner.size(src), torn=torn)

    def rename_if_absent(self, src: str, dst: str) -> bool:
        """HDFS's rename that refuses an existing ``dst`` (the inner store's own): one operation.
        Offered only over a store that has it (``impl.fs.hdfs.is_hdfs``); a durability barrier."""

        def action():
            self._mark_all_durable()
            return bool(self.inner.rename_if_absent(src, dst))

        return self._run("rename_if_absent", dst, action, src=src)

    def sync(self, path: str | Sequence[str] | None = None) -> None:
        """fsync: make ``path`` (a file, every file under a directory, or a list) or, with no
        argument, every unsynced file durable. One ``sync`` operation."""
        paths = [path] if isinstance(path, str) else (None if path is None else list(path))

        def action():
            if paths is None:
                self._mark_all_durable()
            else:
                for p in paths:
                    self._mark_durable(p)

        self._run("sync", "" if paths is None else ",".join(paths), action)

    # ------------------------------------------------------------------ metadata

    def makedirs(self, path, exist_ok=False):
        return self._run("makedirs", path, lambda: self.inner.makedirs(path, exist_ok=exist_ok))

    def mkdir(self, path, create_parents=True, **kwargs):
        return self._run("mkdir", path, lambda: self.inner.mkdir(path, create_parents=create_parents, **kwargs))

    def rm_file(self, path):
        def action():
            self.inner.rm_file(path)
            self._mark_durable(path)  # forget it

        return self._run("rm_file", path, action)

    def rm(self, path, recursive=False, maxdepth=None):
        def action():
            self.inner.rm(path, recursive=recursive, maxdepth=maxdepth)
            for p in path if isinstance(path, list) else [path]:
                self._mark_durable(p)

        return self._run("rm", path if isinstance(path, str) else ",".join(path), action)

    def rmdir(self, path):
        return self._run("rmdir", path, lambda: self.inner.rmdir(path))

    def mv(self, path1, path2, recursive=False, maxdepth=None, **kwargs):
        if not (isinstance(path1, str) and isinstance(path2, str)):
            raise TypeError("FaultyFileSystem.mv takes one source and one destination path")
        if self._non_atomic_rename:
            return self._mv_non_atomic(path1, path2)

        def action():
            self._prepare_parent(path2)
            if isinstance(self.inner, LocalFileSystem):
                self.inner.mv(path1, path2)
            else:
                self.inner.mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)
            self._mark_moved(path1, path2)

        return self._run("mv", path2, action, src=path1)

    def _mv_non_atomic(self, path1: str, path2: str) -> None:
        # Which files to move is decided from the inner state (a listing is not part of the
        # object store's copy/delete sequence); after a crash storage is not even looked at:
        # the first copy operation raises.
        if self.crashed:
            self._run("mv.copy", path2, lambda: None, src=path1)
        if self.inner.isdir(path1):
            base1 = self._key(path1)
            base2 = self._key(path2)
            sources = sorted(self.inner.find(path1))
            pairs = [(s, base2 + self._key(s)[len(base1):]) for s in sources]
        else:
            pairs = [(path1, path2)]
        for s, d in pairs:
            self._mv_copy(s, d)
        for s, _ in pairs:
            self._run("mv.delete", s, functools.partial(self._rm_and_forget, s))

    def _mv_copy(self, src: str, dst: str) -> None:
        def action():
            data = self.inner.cat_file(src)
            self._prepare_parent(dst)
            self.inner.pipe_file(dst, data)
            self._mark_written(dst)

        def torn(keep):
            data = self.inner.cat_file(src)
            self._prepare_parent(dst)
            self.inner.pipe_file(dst, data[:keep])

        self._run("mv.copy", dst, action, src=src, sizer=lambda: self.inner.size(src), torn=torn)

    def _rm_and_forget(self, path: str) -> None:
        self.inner.rm_file(path)
        self._mark_durable(path)

    # ------------------------------------------------------------------ pass-through (no storage)

    def invalidate_cache(self, path=None):
        self.inner.invalidate_cache(path)


class _WriteOnClose(io.BytesIO):
    """A file opened for writing: its content lands as one ``open_write`` operation on close."""

    def __init__(self, fs: FaultyFileSystem, path: str, mode: str):
        super().__init__()
        self._fs = fs
        self.path = path
        self._mode = mode
        self._committed = False

    @property
    def mode(self) -> str:
        return self._mode

    def close(self) -> None:
        if not self.closed and not self._committed:
            self._committed = True
            data = self.getvalue()
            try:
                self._fs._commit_open_write(self.path, self.mode, data)
            finally:
                super().close()
            return
        super().close()

    def discard(self) -> None:
        self._committed = True
        super().close()


def io_error(fault: IOErrorAt, kind: str, path: str) -> OSError:
    """The error an :class:`IOErrorAt` raises at its operation (``kind`` on ``path``); the
    deterministic explorer's simulated store raises the same."""
    return OSError(fault.errno, f"simulated I/O error at op {fault.at_op} ({kind} {path})", path)


# memory create-if-absent must take the same lock impl's link_if_absent uses on memory
_FALLBACK_LOCK = threading.Lock()


def _create_exclusive(fs: AbstractFileSystem, path: str, data: bytes) -> None:
    """Create ``path`` holding ``data`` unless it exists (torn link_if_absent)."""
    if isinstance(fs, LocalFileSystem):
        try:
            fd = os.open(fs._strip_protocol(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        return
    if isinstance(fs, MemoryFileSystem):
        try:
            from impl.fs import file_io

            lock = getattr(file_io, "_MEMORY_LINK_LOCK", _FALLBACK_LOCK)
        except ImportError:  # pragma: no cover
            lock = _FALLBACK_LOCK
        with lock:
            if not fs.exists(path):
                fs.pipe_file(path, data)
        return
    try:
        fs.pipe_file(path, data, mode="create")
    except FileExistsError:
        return

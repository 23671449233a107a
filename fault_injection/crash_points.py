"""Crash-point enumeration: run a scenario once per storage operation, failing at that one.

In the spirit of ALICE and CrashMonkey: a scenario (a function of a file system and a root
path, e.g. "commit one APPEND to the table under root") is run once on fresh storage through
a recording :class:`~fault_injection.faulty_fs.FaultyFileSystem` to learn its operations
0..N-1, then once more per operation i on fresh storage with a fault at i (by default
``Crash(at_op=i)``). Each run yields a :class:`CrashOutcome` that holds the healthy inner
file system and the root, so the caller can reopen the table the way a restarted process
would, and check its invariants::

    for outcome in enumerate_crash_points(
        scenario=lambda fs, root: commit_append(FileIO(fs), root),
        make_storage=fresh_memory_storage,
        setup=lambda fs, root: create_table_with_history(FileIO(fs), root),
    ):
        check_table(FileIO(outcome.inner_fs), outcome.root, outcome.describe())

Fresh storage
-------------
``make_storage()`` returns ``(inner_fs, root)`` and is called once per run (N + 1 times). On
memory, fsspec keeps ONE store per process, so fresh storage is a fresh unique root
(``/faulty-<uuid>``, see :func:`fresh_memory_storage`); on local disk, a fresh directory
(:func:`local_storage`). With ``cleanup=True`` (default) the storage of an outcome is deleted
when the generator is resumed, i.e. after the caller's loop body has checked it: consume the
outcomes in a ``for`` loop, or pass ``cleanup=False`` to keep them all (and clean up with
:func:`remove_storage`).

Determinism
-----------
Op i means the same thing in every run only if the scenario is deterministic in its
*sequence of operation kinds* (random temp-file names are fine). ``outcome.diverged`` flags
a run whose op i differs in kind from the recording run, or never reached op i.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, Union

from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from fault_injection.faulty_fs import (
    Crash,
    CrashAfter,
    Fault,
    FaultyFileSystem,
    IOErrorAt,
    OpRecord,
    SimulatedCrash,
    TornWrite,
)
from impl.fs import azure

__all__ = [
    "CrashOutcome",
    "container_storage",
    "enumerate_crash_points",
    "record_operations",
    "crash_at",
    "crash_after",
    "io_error_at",
    "torn_writes",
    "fresh_memory_storage",
    "local_storage",
    "remove_storage",
]

Scenario = Callable[[FaultyFileSystem, str], Any]
StorageFactory = Callable[[], "tuple[AbstractFileSystem, str]"]
FaultFactory = Callable[[OpRecord], Union[Fault, Sequence[Fault], None]]


# =============================================================================== storage


def fresh_memory_storage(prefix: str = "faulty") -> tuple[MemoryFileSystem, str]:
    """The process-wide memory file system and a fresh unique root ``/<prefix>-<uuid>``."""
    return MemoryFileSystem(), f"/{prefix}-{uuid.uuid4().hex}"


def local_storage(base_dir: str | os.PathLike) -> StorageFactory:
    """A storage factory: each call gives a new empty directory under ``base_dir``."""
    base = os.fspath(base_dir)

    def make() -> tuple[LocalFileSystem, str]:
        root = os.path.join(base, f"faulty-{uuid.uuid4().hex}")
        os.makedirs(root)
        return LocalFileSystem(), LocalFileSystem._strip_protocol(root)

    return make


def object_store_storage(make_fs: Callable[[], AbstractFileSystem], bucket: str) -> StorageFactory:
    """A storage factory over an object store: each call gives a new empty prefix in ``bucket``
    of the file system ``make_fs()`` (s3fs for the S3 server, for example)."""

    def make() -> tuple[AbstractFileSystem, str]:
        return make_fs(), f"{bucket}/faulty-{uuid.uuid4().hex}"

    return make


def container_storage(fs: AbstractFileSystem, prefix: str = "faulty") -> StorageFactory:
    """A storage factory over a store with containers (Azure Blob): each call gives a new empty
    container of the file system ``fs`` (one client for every run), whose name is the root.
    Removing it is one request (delete the container), not a listing plus a delete per blob."""

    def make() -> tuple[AbstractFileSystem, str]:
        name = f"{prefix}-{uuid.uuid4().hex[:24]}"
        fs.mkdir(name)
        return fs, name

    return make


def remove_storage(fs: AbstractFileSystem, root: str) -> None:
    """Delete everything under ``root`` (for memory: its keys in the shared store; for a whole
    Azure container, the container)."""
    if azure.is_azure(fs) and "/" not in root.strip("/"):
        fs.rmdir(root.strip("/"))
        return
    if isinstance(fs, MemoryFileSystem):
        prefix = root.rstrip("/") + "/"
        for key in [k for k in list(fs.store) if k == root or k.startswith(prefix)]:
            fs.store.pop(key, None)
        fs.pseudo_dirs[:] = [d for d in fs.pseudo_dirs if not (d == root or d.startswith(prefix))]
        return
    try:
        if fs.exists(root):
            fs.rm(root, recursive=True)
    except FileNotFoundError:
        pass


# =============================================================================== fault factories


def crash_at(record: OpRecord) -> Fault:
    """Crash at the operation: it does not land (the default)."""
    return Crash(record.op)


def crash_after(record: OpRecord) -> Fault:
    """The operation lands, then the process dies before learning it."""
    return CrashAfter(record.op)


def at_state_changes(factory: FaultFactory) -> FaultFactory:
    """``factory`` at the operations that change storage only (reads are skipped).

    A crash at a read, or just after it, leaves storage as a crash at the next state-changing
    operation leaves it (the reads between change nothing), and what a check sees after a crash
    (the table, its orphans, a new process's recovery) depends on storage alone. So crashing
    (``crash_at`` and ``crash_after``) at the state-changing operations reaches every state that
    crashing at every operation reaches, in a fraction of the runs where reads dominate (on an
    object store, each run costs its requests). Not for faults the crashed process survives
    (``io_error_at``): there the process goes on, and what it read matters.
    """

    def skip_reads(record: OpRecord) -> Fault | Sequence[Fault] | None:
        return None if record.is_read else factory(record)

    return skip_reads


def io_error_at(record: OpRecord) -> Fault:
    """A transient EIO at the operation (it does not land); the scenario carries on."""
    return IOErrorAt(record.op)


def torn_writes(keep: Callable[[int], int] | int = lambda size: size // 2) -> FaultFactory:
    """A factory tearing every write operation (others are skipped).

    ``keep`` is a byte count, or a function of the write's size (default: half of it).
    """

    def factory(record: OpRecord) -> Fault | None:
        if not record.is_write:
            return None
        size = record.nbytes or 0
        k = keep(size) if callable(keep) else int(keep)
        return TornWrite(record.op, max(0, int(k)))

    return factory


# =============================================================================== outcomes


@dataclass
class CrashOutcome:
    """What happened when the scenario ran with a fault at operation ``op``.

    ``inner_fs`` and ``root`` are the healthy storage: reopen the table through them (or
    through :meth:`healthy_fs`) as a restarted process would.
    """

    op: int
    kind: str | None
    path: str | None
    faults: tuple[Fault, ...]
    crashed: bool
    error: BaseException | None
    result: Any
    inner_fs: AbstractFileSystem
    root: str
    fs: FaultyFileSystem
    reference: OpRecord
    total_ops: int
    atomic_create: bool = True

    @property
    def crash_op(self) -> int:
        return self.op

    @property
    def ops(self) -> list[OpRecord]:
        """The operations the faulty run attempted (including any after the crash)."""
        return list(self.fs.recorder.ops)

    @property
    def diverged(self) -> bool:
        """The faulty run's op ``op`` differs in kind from the recording run's (or was never reached)."""
        return self.kind is None or self.kind != self.reference.kind

    @property
    def crash_swallowed(self) -> bool:
        """The wrapper crashed but the scenario returned or raised something else."""
        return self.fs.crashed and not self.crashed

    @property
    def lost_files(self) -> list[tuple[str, str]]:
        return list(self.fs.lost_files)

    def healthy_fs(self) -> FaultyFileSystem:
        """A fresh fault-free wrapper over the same storage (same atomic_create), recording."""
        return FaultyFileSystem(self.inner_fs, atomic_create=self.atomic_create)

    def describe(self) -> str:
        what = ", ".join(repr(f) for f in self.faults)
        end = "crashed" if self.crashed else (f"raised {self.error!r}" if self.error else "returned")
        return (
            f"[{what}] at op {self.op}/{self.total_ops} ({self.kind} {self.path}); scenario {end}"
            + (" [DIVERGED from recording run]" if self.diverged else "")
        )


# =============================================================================== enumeration


def record_operations(
    scenario: Scenario,
    make_storage: StorageFactory = fresh_memory_storage,
    *,
    setup: Scenario | None = None,
    base_faults: Sequence[Fault] = (),
    atomic_create: bool = True,
    cleanup: bool = True,
) -> list[OpRecord]:
    """Run ``scenario`` once on fresh storage (after ``setup``) and return its operations.

    Exceptions from the scenario propagate: the recording run must succeed.
    """
    inner, root = make_storage()
    try:
        if setup is not None:
            setup(FaultyFileSystem(inner, atomic_create=atomic_create), root)
        fs = FaultyFileSystem(inner, base_faults, atomic_create=atomic_create)
        scenario(fs, root)
        return list(fs.recorder.ops)
    finally:
        if cleanup:
            remove_storage(inner, root)


def enumerate_crash_points(
    scenario: Scenario,
    make_storage: StorageFactory = fresh_memory_storage,
    *,
    setup: Scenario | None = None,
    fault_at: FaultFactory = crash_at,
    base_faults: Sequence[Fault] = (),
    atomic_create: bool = True,
    cleanup: bool = True,
) -> Iterator[CrashOutcome]:
    """Yield one :class:`CrashOutcome` per operation of ``scenario`` (N outcomes for N ops).

    scenario(fs, root): the work under test, run through a FaultyFileSystem ``fs``.
    make_storage(): fresh ``(inner_fs, root)``; called once for the recording run and once
        per crash point.
    setup(fs, root): runs first on every fresh storage through a fault-free wrapper (its
        operations are not numbered with the scenario's), e.g. to give a table history.
    fault_at(record): the fault(s) to inject at the recorded operation, or None to skip it
        (see :func:`crash_at` (default), :func:`crash_after`, :func:`io_error_at`,
        :func:`torn_writes`).
    base_faults: faults present in every run, the recording one included (e.g.
        ``NonAtomicRename()``, ``LoseUnsynced(seed)``, ``Latency(...)``); they must not
        change the number of operations between runs.
    atomic_create: passed to every wrapper (False: no link_if_absent, as on an object store
        without conditional put).
    cleanup: delete each run's storage when the generator resumes after yielding it.

    A scenario ending in SimulatedCrash sets ``outcome.crashed``; any other exception is
    kept in ``outcome.error`` (it does not stop the enumeration), a normal return in
    ``outcome.result``.
    """
    reference = record_operations(
        scenario, make_storage, setup=setup, base_faults=base_faults, atomic_create=atomic_create
    )
    total = len(reference)
    for record in reference:
        planned = fault_at(record)
        if planned is None:
            continue
        faults = (planned,) if isinstance(planned, Fault) else tuple(planned)
        if not faults:
            continue
        inner, root = make_storage()
        try:
            if setup is not None:
                setup(FaultyFileSystem(inner, atomic_create=atomic_create), root)
            fs = FaultyFileSystem(inner, [*base_faults, *faults], atomic_create=atomic_create)
            result: Any = None
            error: BaseException | None = None
            try:
                result = scenario(fs, root)
            except SimulatedCrash as e:
                error = e
            except Exception as e:  # noqa: BLE001 - reported in the outcome
                error = e
            ops = fs.recorder.ops
            actual = ops[record.op] if record.op < len(ops) else None
            yield CrashOutcome(
                op=record.op,
                kind=actual.kind if actual is not None else None,
                path=actual.path if actual is not None else None,
                faults=faults,
                crashed=isinstance(error, SimulatedCrash),
                error=error,
                result=result,
                inner_fs=inner,
                root=root,
                fs=fs,
                reference=record,
                total_ops=total,
                atomic_create=atomic_create,
            )
        finally:
            if cleanup:
                remove_storage(inner, root)

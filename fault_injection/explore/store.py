"""The simulated object store of the deterministic explorer.

A small fsspec file system over its own dict (not fsspec's process-global memory store), with
object-store semantics: a PUT is atomic, ``pipe_file(mode="create")`` is a conditional PUT
(``FileExistsError`` when the key exists), there is no rename and no hard link. Every call is
one storage operation and first asks the scheduler for its turn (:meth:`Gate.point`), with an
:class:`Op` label (kind, path) from which the explorer decides which operations commute.

The store also keeps the log of every write to a ``snapshot-N`` key (the published history,
even after expiration deletes the file), for the oracle.
"""

from __future__ import annotations

import contextlib
import enum
import posixpath
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol

from fsspec import AbstractFileSystem

from fault_injection.faulty_fs import IOErrorAt, io_error


class OpKind(enum.Enum):
    GET = "get"
    HEAD = "head"
    LIST = "list"
    PUT = "put"
    CREATE = "create"  # conditional PUT
    DELETE = "delete"


READ_KINDS = frozenset({OpKind.GET, OpKind.HEAD, OpKind.LIST})


@dataclass(frozen=True)
class Op:
    """One storage operation as the scheduler sees it."""

    kind: OpKind
    path: str
    # whether it only reads: asked for every pair of steps by the search, so kept (hashing
    # an enum member for a set lookup is a Python call)
    reads: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reads", self.kind in READ_KINDS)

    def __str__(self) -> str:
        return f"{self.kind.value} {self.path}"


def dependent(a: Op, b: Op) -> bool:
    """Whether the order of ``a`` and ``b`` (of two different actors) can matter.

    Operations on different keys commute, reads commute with reads; a LIST of a directory
    does not commute with a write or delete of a key under it.
    """
    if a.reads and b.reads:
        return False
    if a.path == b.path:
        return True
    if a.kind is OpKind.LIST:
        return _under(b.path, a.path)
    if b.kind is OpKind.LIST:
        return _under(a.path, b.path)
    return False


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/") + "/")


class Gate(Protocol):
    def point(self, op: Op) -> IOErrorAt | None:
        """Waits for the operation's turn; the fault to apply to it, if any (faulty_fs's
        :class:`IOErrorAt`: before the operation, or with ``landed`` after it landed)."""

    def void(self, op: Op) -> None:
        """The operation failed on its own (a missing key, a lost conditional PUT) although
        its fault was to land it and lose the response: the caller saw the same error as
        without the fault (as :class:`FaultyFileSystem` does), so the fault changed nothing."""


class _Ungated:
    def point(self, op: Op) -> IOErrorAt | None:
        return None

    def void(self, op: Op) -> None:
        """Nothing is faulted outside the schedule."""


UNGATED: Gate = _Ungated()  # setup and the oracle: storage access outside the schedule


@dataclass(frozen=True)
class SnapshotWrite:
    """One write that landed on a ``snapshot-N`` key (the oracle's view of publication)."""

    path: str
    data: bytes


class SimStore(AbstractFileSystem):
    """A dict of key -> bytes behind the fsspec API that :class:`impl.fs.file_io.FileIO` uses."""

    protocol = "simstore"
    cachable = False  # every instance is its own store
    supports_conditional_create = True  # FileIO publishes through pipe_file(mode="create")

    def __init__(self, gate: Gate | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.gate: Gate = gate or UNGATED
        self.files: dict[str, bytes] = {}
        self.snapshot_writes: list[SnapshotWrite] = []
        # the last-modified time of every key, from a coarse store clock the explorer moves
        # between set-up and the run: within the run it does not depend on the order of
        # operations, which keeps operations on different keys commuting
        self.epoch_seconds = 0.0
        self.mtimes: dict[str, float] = {}

    # --------------------------------------------------------------- scheduling
    @contextlib.contextmanager
    def _operation(self, kind: OpKind, path: str) -> Iterator[None]:
        """One storage operation: its turn, then the body, with the scheduler's fault applied
        before it (nothing happens) or after it landed (the response is lost)."""
        op = Op(kind, path)
        fault = self.gate.point(op)
        if fault is not None and not fault.landed:
            raise io_error(fault, kind.value, path)
        try:
            yield
        except OSError:
            if fault is not None:
                self.gate.void(op)
            raise
        if fault is not None:
            raise io_error(fault, kind.value, path)

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        text = str(path)
        if text.startswith("simstore://"):
            text = text[len("simstore://"):]
        return "/" + text.strip("/") if text.strip("/") else "/"

    # --------------------------------------------------------------- reads
    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        path = self._strip_protocol(path)
        with self._operation(OpKind.GET, path):
            if path not in self.files:
                raise FileNotFoundError(path)
            data = self.files[path][start:end]
        return data

    def exists(self, path: str, **kwargs: Any) -> bool:
        path = self._strip_protocol(path)
        with self._operation(OpKind.HEAD, path):
            found = path in self.files
        return found

    def size(self, path: str) -> int:
        path = self._strip_protocol(path)
        with self._operation(OpKind.HEAD, path):
            if path not in self.files:
                raise FileNotFoundError(path)
            size = len(self.files[path])
        return size

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        directory = self._strip_protocol(path).rstrip("/")
        prefix = directory + "/"
        names: dict[str, dict[str, Any]] = {}
        with self._operation(OpKind.LIST, directory):
            for key, data in self.files.items():
                if not key.startswith(prefix):
                    continue
                head, _, rest = key[len(prefix):].partition("/")
                full = prefix + head
                if rest:
                    names.setdefault(full, {"name": full, "type": "directory", "size": 0})
                else:
                    names[full] = {"name": full, "type": "file", "size": len(data), "mtime": self.mtimes[key]}
        # an empty listing is a successful LIST (its response can be lost), not a failed one
        if not names:
            raise FileNotFoundError(directory)
        entries = [names[k] for k in sorted(names)]
        return entries if detail else [e["name"] for e in entries]

    def find(self, path: str, maxdepth: int | None = None, withdirs: bool = False, detail: bool = False,
             **kwargs: Any) -> Any:
        directory = self._strip_protocol(path).rstrip("/")
        with self._operation(OpKind.LIST, directory):
            found = {k: {"name": k, "type": "file", "size": len(v), "mtime": self.mtimes[k]}
                     for k, v in sorted(self.files.items()) if k.startswith(directory + "/")}
        return found if detail else sorted(found)

    # --------------------------------------------------------------- writes
    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        kind = OpKind.CREATE if mode == "create" else OpKind.PUT
        with self._operation(kind, path):
            if kind is OpKind.CREATE and path in self.files:
                raise FileExistsError(path)
            self.files[path] = bytes(value)
            self.mtimes[path] = self.epoch_seconds
            if posixpath.basename(path).startswith("snapshot-"):
                self.snapshot_writes.append(SnapshotWrite(path, bytes(value)))

    def rm_file(self, path: str) -> None:
        path = self._strip_protocol(path)
        with self._operation(OpKind.DELETE, path):
            if path not in self.files:
                raise FileNotFoundError(path)
            del self.files[path]
            del self.mtimes[path]

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        """Object stores have no directories: nothing to do."""

    def rmdir(self, path: str) -> None:
        """Object stores have no directories: nothing to do."""

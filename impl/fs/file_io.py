"""FileIO: the only door between impl and storage.

Everything impl reads or writes goes through a :class:`FileIO` built on an fsspec file
system, so any fsspec implementation (local disk, memory, object stores, or the
fault-injecting wrappers in ``fault_injection``) plugs in without monkeypatching.

The one primitive that is not plain fsspec is the create-if-absent that publishes a snapshot:
it must never replace an existing file and must be atomic across OS processes. On local disk it
is :func:`link_if_absent` (a hard link of a finished temp file); on object stores a conditional
PUT (:mod:`impl.fs.object_store`); on HDFS a rename of a finished temp file that HDFS refuses
onto an existing name (:mod:`impl.fs.hdfs`). See :meth:`FileIO.try_write_atomic` for why a rename is not
enough.

Every storage call is counted by request kind (:class:`RequestCounts`), so a caller can see
what an operation cost: on S3 each FileIO call is one HTTP request of that kind.
"""

from __future__ import annotations

import enum
import errno
import io
import os
import posixpath
import threading
import uuid
from dataclasses import dataclass
from typing import Iterable, Mapping

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from impl.errors import FileIOError, UnsupportedFileSystemError
from impl.fs import azure, gcs, hdfs, object_store

# MemoryFileSystem keeps one store per process (a class attribute), so one process-wide lock
# makes its check-then-write create-if-absent atomic for every thread that can see the store.
_MEMORY_LINK_LOCK = threading.Lock()


def link_if_absent(fs: fsspec.AbstractFileSystem, src: str, dst: str) -> bool:
    """Make ``dst`` a copy of the finished file ``src`` unless ``dst`` exists; True if created.

    Dispatch, in order:
    - a file system that defines ``link_if_absent(src, dst)`` itself (the fault-injection
      wrappers, or an object-store adapter with a conditional put) decides on its own;
    - local disk: ``os.link``, which fails with EEXIST instead of replacing, atomically in
      the kernel, whichever process races us;
    - memory: a process-wide lock around check-then-copy.
    Anything else has no safe primitive and raises :class:`UnsupportedFileSystemError`.
    """
    own = getattr(fs, "link_if_absent", None)
    if own is not None:
        return bool(own(src, dst))
    if isinstance(fs, LocalFileSystem):
        try:
            os.link(fs._strip_protocol(src), fs._strip_protocol(dst))
            return True
        except FileExistsError:
            return False
    if isinstance(fs, MemoryFileSystem):
        with _MEMORY_LINK_LOCK:
            if fs.exists(dst):
                return False
            fs.pipe_file(dst, fs.cat_file(src))
            return True
    raise UnsupportedFileSystemError(
        f"file system {type(fs).__name__} has no atomic create-if-absent; "
        "implement link_if_absent(src, dst) on it to publish snapshots safely"
    )


def supports_atomic_create(fs: fsspec.AbstractFileSystem) -> bool:
    return (
        getattr(fs, "link_if_absent", None) is not None
        or hdfs.is_hdfs(fs)
        or isinstance(fs, (LocalFileSystem, MemoryFileSystem))
        or object_store.has_conditional_create(fs)
    )


class RequestKind(enum.Enum):
    """Kinds of storage requests, as object stores bill and throttle them."""

    GET = "GET"
    HEAD = "HEAD"
    PUT = "PUT"
    LIST = "LIST"
    DELETE = "DELETE"
    RENAME = "RENAME"  # HDFS: the publication of a snapshot (one NameNode request)


class RequestCounts:
    """Storage requests by kind, counted by a :class:`FileIO` (thread-safe).

    >>> io = FileIO(fsspec.filesystem("memory"))
    >>> before = io.requests.snapshot()
    >>> io.write_bytes("/x/a", b"1"); _ = io.read_bytes("/x/a")
    >>> io.requests.since(before)
    {'PUT': 1, 'GET': 1}
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = {k: 0 for k in RequestKind}

    def add(self, kind: RequestKind, n: int = 1) -> None:
        with self._lock:
            self._counts[kind] += n

    def snapshot(self) -> dict[RequestKind, int]:
        with self._lock:
            return dict(self._counts)

    def since(self, before: Mapping[RequestKind, int]) -> dict[str, int]:
        """Requests made since ``before`` (a :meth:`snapshot`), kinds with none left out."""
        now = self.snapshot()
        return {k.value: now[k] - before.get(k, 0) for k in RequestKind if now[k] - before.get(k, 0)}

    def total(self) -> int:
        return sum(self.snapshot().values())


@dataclass(frozen=True)
class FileStatus:
    path: str
    size_bytes: int
    modified_millis: int | None


class FileIO:
    """Byte-level storage access over one fsspec file system.

    Paths are plain strings in the file system's own form (``/tmp/wh/db.db/t`` for local
    disk, ``/wh/...`` for memory). Every OSError surfaces as :class:`FileIOError` naming
    the path, except FileNotFoundError, which callers often handle and is passed through.

    >>> io = FileIO(fsspec.filesystem("memory"))
    >>> io.try_write_atomic("/t/snapshot/snapshot-1", b"{}")
    True
    >>> io.try_write_atomic("/t/snapshot/snapshot-1", b"{}")
    False
    """

    def __init__(self, fs: fsspec.AbstractFileSystem | None = None, *, sync_on_write: bool = False):
        """``sync_on_write``: make every written file durable (fsync on local disk, or the file
        system's own ``sync(path)``) before the call returns, so a snapshot is never durable
        before the manifests and data files it names. Off by default, as in Paimon, whose usual
        storages (HDFS, object stores) are durable on close; about 1 ms per file on local disk.
        """
        self.fs = fs if fs is not None else LocalFileSystem()
        self.sync_on_write = sync_on_write
        self.requests = RequestCounts()
        self._object_store = object_store.has_conditional_create(self.fs)
        self._s3 = object_store.is_s3(self.fs)
        self._azure = azure.is_azure(self.fs)
        self._gcs = gcs.is_gcs(self.fs)
        self._conditional_create_checked = False

    @classmethod
    def for_path(cls, path: str, fs: fsspec.AbstractFileSystem | None = None,
                 options: Mapping[str, str] | None = None) -> tuple["FileIO", str]:
        """A FileIO for ``path`` (local path or fsspec URL) and the path in that file system's form.

        ``options`` configure object stores with Paimon's names (``fs.s3.endpoint``,
        ``fs.s3.accessKeyId``, ``fs.s3.accessKeySecret``, ``fs.s3.region``, or Java's
        ``s3.endpoint`` / ``s3.access-key`` / ``s3.secret-key``; on Azure Hadoop's
        ``fs.azure.account.key.<account>.dfs.core.windows.net``, see :mod:`impl.fs.azure`).
        """
        if fs is not None:
            return cls(fs), fs._strip_protocol(path)
        fs, stripped = object_store.filesystem_for_url(path, options)
        return cls(fs), stripped

    @property
    def is_object_store(self) -> bool:
        """True on stores without rename or hard links, where publication is a conditional PUT."""
        return self._object_store

    def uri(self, path: str) -> str:
        """``path`` as another reader opens it: with its scheme on an object store
        (``bucket/wh/t`` -> ``s3://bucket/wh/t``; on Azure with the account as well,
        ``abfss://container@account.dfs.core.windows.net/wh/t``), a local path as it is. Paths
        written into metadata other engines read (Iceberg's) need it: impl's own are scheme-less.

        >>> FileIO().uri("/tmp/wh/db.db/t")
        '/tmp/wh/db.db/t'
        """
        if not self._object_store:
            return path  # local disk (or a wrapper over it): a plain path is what readers open
        if self._azure:
            return azure.qualified_url(self.fs, path)  # adlfs's own abfs://container/... names no account
        return str(self.fs.unstrip_protocol(path))

    # ------------------------------------------------------------------ reads

    def read_bytes(self, path: str) -> bytes:
        """The whole file: one GET on object stores (s3fs's ``cat_file`` asks for the size
        with a HEAD first, to split large reads)."""
        self.requests.add(RequestKind.GET)
        try:
            if self._s3:
                return object_store.get_object(self.fs, path)
            return self.fs.cat_file(path)
        except FileNotFoundError:
            raise
        except OSError as e:
            raise FileIOError(f"cannot read {path}: {e}") from e

    def open_input(self, path: str):
        """A seekable binary file for random-access readers (Parquet): only the parts a reader
        asks for are fetched, instead of the whole file at once. Use as a context manager."""
        self.requests.add(RequestKind.GET)
        try:
            if isinstance(self.fs, LocalFileSystem):
                import pyarrow as pa  # local: pyarrow's own file, no Python in the read path

                return pa.OSFile(self.fs._strip_protocol(path), "rb")
            return self.fs.open(path, "rb")
        except FileNotFoundError:
            raise
        except OSError as e:
            raise FileIOError(f"cannot open {path}: {e}") from e

    def exists(self, path: str) -> bool:
        """Whether a file or directory ``path`` exists (on object stores: an object, or any key
        under the prefix, which can cost a LIST after a 404; see :meth:`file_exists`)."""
        self.requests.add(RequestKind.HEAD)
        try:
            return bool(self.fs.exists(path))
        except OSError as e:
            raise FileIOError(f"cannot stat {path}: {e}") from e

    def file_exists(self, path: str) -> bool:
        """Whether the file ``path`` exists: exactly one HEAD on object stores, never a LIST
        (s3fs's own ``exists`` lists the prefix after a 404, to look for a directory; the
        commit path needs no ListBucket permission)."""
        self.requests.add(RequestKind.HEAD)
        try:
            if self._s3:
                return self._head_object(path)
            if self._azure:
                return azure.blob_exists(self.fs, path)
            if self._gcs:
                return gcs.object_exists(self.fs, path)
            return bool(self.fs.exists(path))
        except OSError as e:
            raise FileIOError(f"cannot stat {path}: {e}") from e

    def _head_object(self, path: str) -> bool:
        bucket, key, _ = self.fs.split_path(path)
        if not key:
            return bool(self.fs.exists(path))
        try:
            self.fs.call_s3("head_object", Bucket=bucket, Key=key)
            return True
        except FileNotFoundError:
            return False

    def list_names(self, directory: str) -> list[str]:
        """Base names of the entries of ``directory``; empty if it does not exist."""
        self.requests.add(RequestKind.LIST)
        try:
            entries = self.fs.ls(directory, detail=False)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise FileIOError(f"cannot list {directory}: {e}") from e
        own = self.fs._strip_protocol(directory).rstrip("/")
        # an object store's directory marker (``dir/``) lists as an entry of its own directory
        return [posixpath.basename(str(p).rstrip("/")) for p in entries if str(p).rstrip("/") != own]

    def list_status(self, directory: str) -> list[FileStatus]:
        """Files (not directories) directly in ``directory``, with size and modification time."""
        self.requests.add(RequestKind.LIST)
        try:
            entries = self.fs.ls(directory, detail=True)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise FileIOError(f"cannot list {directory}: {e}") from e
        out = []
        for info in entries:
            if info.get("type") != "file" or str(info["name"]).endswith("/"):
                continue
            out.append(FileStatus(info["name"], int(info.get("size") or 0), mtime_millis(info)))
        return out

    def walk_files(self, directory: str) -> list[FileStatus]:
        """Every file under ``directory``, recursively."""
        self.requests.add(RequestKind.LIST)
        try:
            found = self.fs.find(directory, detail=True)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise FileIOError(f"cannot walk {directory}: {e}") from e
        return [
            FileStatus(name, int(info.get("size") or 0), mtime_millis(info))
            for name, info in found.items()
            if info.get("type") == "file" and not str(name).endswith("/")
        ]

    def file_size(self, path: str) -> int:
        self.requests.add(RequestKind.HEAD)
        try:
            return int(self.fs.size(path))
        except FileNotFoundError:
            raise
        except OSError as e:
            raise FileIOError(f"cannot stat {path}: {e}") from e

    # ------------------------------------------------------------------ writes

    def mkdirs(self, directory: str) -> None:
        """Create ``directory``. Object stores have no directories; there an empty marker object
        ``directory/`` stands for it (as Hadoop's S3A and pyarrow write; on Azure the file system
        stores it as Hadoop marks directories there), so an empty database still exists."""
        if self._object_store:
            self.requests.add(RequestKind.PUT)
            try:
                self.fs.pipe_file(directory.rstrip("/") + "/", b"")
            except OSError as e:
                raise FileIOError(f"cannot create directory {directory}: {e}") from e
            return
        try:
            self.fs.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise FileIOError(f"cannot create directory {directory}: {e}") from e

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a new immutable file (data file, manifest, manifest list).

        Not atomic: a crash can leave a prefix. That is harmless because nothing references
        such a file until a snapshot naming it is published, which happens strictly later.
        """
        self.requests.add(RequestKind.PUT)
        self._put(path, data)

    def _put(self, path: str, data: bytes) -> None:
        try:
            if self.sync_on_write and isinstance(self.fs, LocalFileSystem):
                _write_local_synced(self.fs._strip_protocol(path), data)
            else:
                self._ensure_parent(path)
                self.fs.pipe_file(path, data)
                if self.sync_on_write and hasattr(self.fs, "sync"):
                    self.fs.sync(path)
        except OSError as e:
            raise FileIOError(f"cannot write {path}: {e}") from e

    def open_output(self, path: str) -> "OutputFile":
        """A new immutable file written as a stream (large data files: never whole in memory).

        One PUT like :meth:`write_bytes`. The file is complete when :meth:`OutputFile.close`
        returns; :meth:`OutputFile.abort` drops it (on object stores the upload is abandoned, so
        no object appears; elsewhere the prefix written so far is deleted). As with
        :meth:`write_bytes` a crash can leave a prefix nobody references.

        Streamed on plain local disk (pyarrow's own file, no Python per write), memory, S3, Azure and GCS.
        Any other file system, in particular a wrapper (the fault-injection file systems, the
        Spark writer's tracking file system, which hooks whole-file writes), gets the whole
        file in one ``pipe_file`` at close, exactly as :meth:`write_bytes` writes it.
        """
        self.requests.add(RequestKind.PUT)
        try:
            if type(self.fs) is LocalFileSystem:
                import pyarrow as pa

                local = self.fs._strip_protocol(path)
                os.makedirs(os.path.dirname(local), exist_ok=True)
                return OutputFile(self, path, pa.OSFile(local, "wb"), local if self.sync_on_write else None)
            if type(self.fs) is MemoryFileSystem or self._s3 or self._azure or self._gcs:
                self._ensure_parent(path)
                return OutputFile(self, path, self.fs.open(path, "wb"), None)
            return OutputFile(self, path, io.BytesIO(), None, buffered=True)
        except OSError as e:
            raise FileIOError(f"cannot write {path}: {e}") from e

    def overwrite_hint(self, path: str, text: str) -> None:
        """Plain overwrite for LATEST / EARLIEST hints: readers never trust them blindly."""
        self.write_bytes(path, text.encode("ascii"))

    def delete(self, path: str, *, missing_ok: bool = True) -> None:
        self.requests.add(RequestKind.DELETE)
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            if not missing_ok:
                raise
        except OSError as e:
            raise FileIOError(f"cannot delete {path}: {e}") from e

    def delete_quietly(self, paths: Iterable[str]) -> None:
        """Best-effort cleanup: never raises (a leftover is an orphan, not an error)."""
        for p in paths:
            self.requests.add(RequestKind.DELETE)
            try:
                self.fs.rm_file(p)
            except Exception:  # noqa: BLE001 - cleanup must not mask the original failure
                pass

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` if it does not exist; False if it already exists.

        Readers see either no file or the whole file, and two writers (threads or OS
        processes) racing for one path never both win. Why not rename: POSIX ``rename``
        silently replaces an existing target, so two committers could both "publish"
        snapshot N, and on object stores a rename is copy-then-delete. Why not plain O_EXCL
        on the target: a reader could then observe a half-written snapshot. So: write a
        temp file in the same directory (dot-prefixed, so listings skip it), make it durable,
        then hard-link it to the target (``link`` fails with EEXIST, never replaces), then
        drop the temp name.

        On object stores a PUT is atomic by itself (a reader sees the whole object or none),
        so the publication is one conditional PUT; see :func:`object_store.conditional_create`
        for how a refused retry of our own landed PUT is told apart from a lost race. The
        first publication through this FileIO checks that the store enforces the condition.
        """
        if self._object_store:
            return self._conditional_create(path, data)
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        if hdfs.is_hdfs(self.fs):
            return self._rename_if_absent(tmp, path, data)
        try:
            self.write_bytes(tmp, data)
            return link_if_absent(self.fs, tmp, path)
        except FileExistsError:  # some file systems report the race this way
            return False
        except OSError as e:
            if e.errno == errno.EEXIST:
                return False
            raise FileIOError(f"cannot publish {path}: {e}") from e
        finally:
            self.delete_quietly([tmp])

    def _rename_if_absent(self, tmp: str, path: str, data: bytes) -> bool:
        """HDFS: write ``tmp``, rename it to ``path`` unless that exists (as Paimon Java commits
        there); see :func:`hdfs.publish_by_rename` for a retried rename whose response was lost."""
        self.write_bytes(tmp, data)
        self.requests.add(RequestKind.RENAME)
        try:
            outcome = hdfs.publish_by_rename(self.fs, tmp, path, data)
        except OSError as e:
            self.delete_quietly([tmp])
            raise FileIOError(f"cannot publish {path}: {e}") from e
        if outcome is not object_store.Publication.CREATED:
            self.requests.add(RequestKind.GET)  # the read-back after a refusal
            if outcome is object_store.Publication.TAKEN:
                self.delete_quietly([tmp])
        return outcome.published

    def _conditional_create(self, path: str, data: bytes) -> bool:
        self.ensure_atomic_create(posixpath.dirname(path))
        self.requests.add(RequestKind.PUT)
        try:
            outcome = object_store.conditional_create(self.fs, path, data)
        except OSError as e:
            raise FileIOError(f"cannot publish {path}: {e}") from e
        if outcome is not object_store.Publication.CREATED:
            self.requests.add(RequestKind.GET)  # the read-back after a refusal
        return outcome.published

    def ensure_atomic_create(self, directory: str) -> None:
        """Raise :class:`UnsupportedFileSystemError` unless publishing under ``directory`` is safe.

        Local disk and memory are known; an object store is probed once per process and bucket
        (see :func:`object_store.probe_conditional_create`). Callers run this before writing
        any file of a commit, so a refused store is left untouched.
        """
        if not self.supports_atomic_create():
            link_if_absent(self.fs, "", "")  # raises the UnsupportedFileSystemError with its advice
        if self._object_store and not self._conditional_create_checked:
            object_store.probe_conditional_create(self.fs, directory)
            self._conditional_create_checked = True

    # ------------------------------------------------------------------ helpers

    def _ensure_parent(self, path: str) -> None:
        if isinstance(self.fs, LocalFileSystem):
            os.makedirs(posixpath.dirname(self.fs._strip_protocol(path)), exist_ok=True)

    def supports_atomic_create(self) -> bool:
        return supports_atomic_create(self.fs)


class OutputFile:
    """A file being written by :meth:`FileIO.open_output`: ``stream`` takes the bytes (a pyarrow
    NativeFile on local disk, else the file system's binary file object; either can be handed
    to a pyarrow writer), :meth:`close` finishes it, :meth:`abort` drops it."""

    def __init__(self, file_io: FileIO, path: str, stream, fsync_path: str | None, *, buffered: bool = False):
        self.file_io = file_io
        self.path = path
        self.stream = stream
        self._fsync_path = fsync_path
        self._buffered = buffered  # stream is a BytesIO stored with one pipe_file at close
        self._done = False

    def tell(self) -> int:
        """Bytes written so far (the file's size once closed)."""
        return int(self.stream.tell())

    def close(self) -> int:
        """Finish the file (durable first with ``sync_on_write``); its size in bytes. On failure
        the partial file is dropped and :class:`FileIOError` raised."""
        if self._done:
            raise FileIOError(f"{self.path} is already closed")
        self._done = True
        try:
            size = self.tell()
            if self._buffered:
                data = self.stream.getvalue()
                self.stream.close()
                self.file_io._put(self.path, data)
                return size
            self.stream.close()
            if self._fsync_path is not None:
                fd = os.open(self._fsync_path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            elif self.file_io.sync_on_write and hasattr(self.file_io.fs, "sync"):
                self.file_io.fs.sync(self.path)
            return size
        except OSError as e:
            self._drop()
            raise FileIOError(f"cannot write {self.path}: {e}") from e
        except BaseException:
            self._drop()
            raise

    def abort(self) -> None:
        """Drop the file: never raises (cleanup must not mask the failure that caused it)."""
        if self._done:
            return
        self._done = True
        self._drop()

    def _drop(self) -> None:
        discard = getattr(self.stream, "discard", None)  # fsspec: abandon the upload, write nothing
        try:
            if discard is not None:
                discard()
                if isinstance(self.stream, fsspec.spec.AbstractBufferedFile):
                    # discard leaves the file open: its __del__ would flush the dropped buffer
                    self.stream.closed = True
            else:
                self.stream.close()
        except Exception:  # noqa: BLE001 - the file is being thrown away
            pass
        self.file_io.delete_quietly([self.path])


def _write_local_synced(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def mtime_millis(info: dict) -> int | None:
    """The modification time (epoch millis) of an fsspec ``ls``/``info`` record, None if it has none."""
    # local/memory: mtime or created; s3fs: LastModified; adlfs: last_modified (without it every
    # blob on Azure would look ageless, and orphan removal would never take one)
    for key in ("mtime", "modified", "LastModified", "last_modified", "created"):
        v = info.get(key)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return int(v.timestamp() * 1000)
        try:
            return int(float(v) * 1000)
        except (TypeError, ValueError):
            continue
    return None

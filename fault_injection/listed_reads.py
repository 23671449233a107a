"""Reads served from bytes already held, checked against one fresh listing: the crash-point checks
on a store where every read is an HTTP request (Azure Blob, S3).

After each crash point the checks (tests/fault/fault_scenarios.full_check) read the whole table
several times: the audit before and after orphan removal, the orphan finder, the recovery's audit.
Most of those files are byte-identical in every crash point (the history the setup copies in, the
scenario's data files), and on Azurite each read costs ~15 ms of two busy processes, which made the
Azure enumeration too slow for CI. Blob storage lists each blob's Content-MD5 (the service computes
it on Put Blob), so :class:`ListedReadsFileIO` lists the directory once and answers a read of a blob
whose listed MD5 and size match bytes it already holds with those bytes, without a GET.

That is exactly what the GET would return: the listing is taken after the last write through this
FileIO (every write drops it), nothing else writes while the checks run, and the bytes are named by
their MD5. A blob the listing does not show, or shows without an MD5 (a block-list upload), or whose
bytes are not held yet, is read with a GET as before (and its bytes kept when its MD5 matches the
listing's). Only :meth:`FileIO.read_bytes` is served so; every other call goes to storage.

>>> # on an Azure file system ``fs`` (see tests/fault/test_listed_reads.py)
>>> # io = ListedReadsFileIO(fs, "container/wh/db.db/t"); io.read_bytes(path)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, Iterable

import fsspec

from impl.fs import azure, object_store
from impl.fs.file_io import FileIO

__all__ = ["ListedReadsFileIO", "checker_file_io", "listed_md5", "READ_METHODS", "WRITE_METHODS"]

# FileIO's public methods by what they do to storage: a write drops the listing, so the next read
# lists again (tests/fault/test_listed_reads.py checks every public method is in one of the two).
READ_METHODS = frozenset({"read_bytes", "open_input", "exists", "file_exists", "list_names", "list_status",
                          "walk_files", "file_size", "uri", "supports_atomic_create", "is_object_store",
                          "for_path"})
WRITE_METHODS = frozenset({"mkdirs", "write_bytes", "open_output", "overwrite_hint", "delete", "delete_quietly",
                           "try_write_atomic", "ensure_atomic_create"})

_HELD_MAX_BYTES = 64 * 1024 * 1024  # bytes kept across instances (the whole crash enumeration)
_held: "OrderedDict[bytes, bytes]" = OrderedDict()  # MD5 -> the bytes with that MD5
_held_bytes = 0
_held_lock = threading.Lock()


def listed_md5(info: dict[str, Any]) -> bytes | None:
    """The MD5 a listing entry gives for the object, or None: Azure's Content-MD5, or an S3 ETag
    of 32 hex digits (a single-part upload's, the MD5 of its bytes unless the store encrypts with
    KMS; a multipart ETag has a ``-N`` suffix and is not an MD5). Whatever it says is checked
    against the bytes before they are held, so an ETag that is no MD5 only costs the GET."""
    settings = info.get("content_settings")
    if settings is not None:
        md5 = settings.get("content_md5") if hasattr(settings, "get") else getattr(settings, "content_md5", None)
        return bytes(md5) if md5 else None
    etag = str(info.get("ETag") or info.get("etag") or "").strip('"')
    if len(etag) == 32 and all(c in "0123456789abcdefABCDEF" for c in etag):
        return bytes.fromhex(etag)
    return None


def _held_get(md5: bytes) -> bytes | None:
    with _held_lock:
        data = _held.get(md5)
        if data is not None:
            _held.move_to_end(md5)
        return data


def _hold(md5: bytes, data: bytes) -> None:
    global _held_bytes
    if len(data) > _HELD_MAX_BYTES // 16:
        return
    with _held_lock:
        if md5 in _held:
            return
        _held[md5] = data
        _held_bytes += len(data)
        while _held_bytes > _HELD_MAX_BYTES:
            _, old = _held.popitem(last=False)
            _held_bytes -= len(old)


class ListedReadsFileIO(FileIO):
    """A FileIO whose ``read_bytes`` under ``root`` is answered from bytes already held when one
    fresh listing of ``root`` shows the blob with the same MD5 and size (see the module docstring).
    ``listings`` and ``served`` count the listings made and the reads answered without a GET."""

    def __init__(self, fs: fsspec.AbstractFileSystem, root: str, **kwargs: Any):
        super().__init__(fs, **kwargs)
        self.root = fs._strip_protocol(root).rstrip("/")
        self._listing: dict[str, tuple[bytes, int]] | None = None  # path -> (MD5, size)
        self.listings = 0
        self.served = 0
        self._streams_opened = False  # a stream lands at its close, unseen here: no listing is fresh after one

    def open_output(self, path: str) -> Any:
        self._streams_opened = True
        self._drop_listing()
        return super().open_output(path)

    def _listed(self) -> dict[str, tuple[bytes, int]]:
        if self._listing is None:
            self.listings += 1
            found = {} if self.root == "" else self.walk_files_detail()
            self._listing = {path: (md5, int(info.get("size") or 0)) for path, info in found.items()
                             if (md5 := listed_md5(info)) is not None}
        return self._listing

    def walk_files_detail(self) -> dict[str, dict[str, Any]]:
        try:
            found = self.fs.find(self.root, detail=True)
        except FileNotFoundError:
            return {}
        return {str(name).rstrip("/"): info for name, info in found.items() if info.get("type") == "file"}

    def read_bytes(self, path: str) -> bytes:
        key = self.fs._strip_protocol(path).rstrip("/")
        if self._streams_opened or not key.startswith(self.root + "/"):
            return super().read_bytes(path)
        listed = self._listed().get(key)
        if listed is not None:
            data = _held_get(listed[0])
            if data is not None and len(data) == listed[1]:
                self.served += 1
                return data
        data = super().read_bytes(path)
        if listed is not None and hashlib.md5(data).digest() == listed[0]:
            _hold(listed[0], data)
        return data

    def _drop_listing(self) -> None:
        self._listing = None


def _dropping_listing(name: str):
    method = getattr(FileIO, name)

    def write(self: ListedReadsFileIO, *args: Any, **kwargs: Any) -> Any:
        self._drop_listing()  # before the write: a write that fails half-way leaves no stale listing
        try:
            return method(self, *args, **kwargs)
        finally:
            self._drop_listing()

    write.__name__ = name
    write.__doc__ = method.__doc__
    return write


for _name in WRITE_METHODS - {"open_output"}:
    setattr(ListedReadsFileIO, _name, _dropping_listing(_name))


def checker_file_io(fs: fsspec.AbstractFileSystem, root: str, *, sync_on_write: bool = False) -> FileIO:
    """The FileIO the crash-point checks and the restarted process's recovery use on the table
    under ``root``: a :class:`ListedReadsFileIO` on Azure and S3 (their listings carry each object's
    MD5), a plain FileIO elsewhere (memory and local disk read cheaply; WebHDFS lists no checksum).
    Its reads return what a GET would, so what the checks see is unchanged."""
    if azure.is_azure(fs) or object_store.is_s3(fs):
        return ListedReadsFileIO(fs, root, sync_on_write=sync_on_write)
    return FileIO(fs, sync_on_write=sync_on_write)


def public_methods(cls: type) -> Iterable[str]:
    """The public attributes of ``cls`` that are methods or properties (for the classification test)."""
    return [n for n in dir(cls) if not n.startswith("_")
            and (callable(getattr(cls, n)) or isinstance(getattr(cls, n), property))]

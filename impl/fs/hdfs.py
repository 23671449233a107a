"""HDFS: opening a ``webhdfs://`` warehouse, and publication by rename-if-absent.

Paimon commits on HDFS without a lock: it writes ``snapshot-N`` to a temporary file and renames
it into place. HDFS's rename refuses an existing destination (WebHDFS ``op=RENAME`` answers
``{"boolean": false}``) atomically at the NameNode, so exactly one of many racing writers wins
snapshot N, and a reader sees the whole file or none. :func:`publish_by_rename` does the same.

The one subtlety is the retry of a rename whose response was lost (timeout, reset connection,
5xx): if the first try landed, the retry answers false although *we* hold the name. So a false
is not trusted on its own: the destination is read back and compared byte for byte with what we
wrote (our bytes are unique: they name manifest lists with random names), as
:func:`impl.fs.object_store.conditional_create` does for S3's 412.

Clients:

- ``webhdfs://namenode:9870/path`` goes through fsspec's WebHDFS client (HTTP only, no native
  library), subclassed in :mod:`impl.fs.webhdfs`: bounded timeouts, one request per whole-file read and one
  CREATE per write, server errors as ``OSError``, and :meth:`impl.fs.webhdfs.HdfsWebFileSystem.rename_if_absent`.
- ``hdfs://`` is refused by name (:class:`UnsupportedFileSystemError`): pyarrow's
  ``HadoopFileSystem`` needs ``libhdfs.so`` and a JVM, and its ``move`` is no rename-if-absent
  (Arrow's HDFS Move deletes an existing destination file and renames again), so it could let
  two writers both publish snapshot N. The same files are reachable through the NameNode's
  WebHDFS port: ``webhdfs://namenode:9870/same/path``.

Options (Hadoop's names, as Paimon Java passes ``hadoop.*`` options to its Hadoop
configuration): ``hadoop.user.name`` (else ``$HADOOP_USER_NAME``) is the user WebHDFS acts as
(simple authentication); ``hadoop.security.authentication`` other than ``simple`` is refused by
name; ``fs.webhdfs.connect-timeout`` / ``fs.webhdfs.read-timeout`` (seconds) bound every request.

>>> fs, path = filesystem_for_webhdfs_url("webhdfs://127.0.0.1:9870/warehouse", {"hadoop.user.name": "paimon"})
>>> path, fs.user
('/warehouse', 'paimon')
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping
from urllib.parse import urlsplit

import fsspec

from impl._optional import require
from impl.errors import FileIOError, InvalidWarehouseError, UnsupportedFileSystemError
from impl.fs.publication import Publication

if TYPE_CHECKING:
    # types only: the client module imports requests, loaded only for a webhdfs:// warehouse
    from impl.fs.webhdfs import HdfsWebFileSystem

WEBHDFS_PROTOCOLS = ("webhdfs",)
HDFS_PROTOCOLS = ("hdfs", "viewfs")
DEFAULT_WEBHDFS_PORT = 9870  # Hadoop 3's NameNode HTTP port

USER_KEY = "hadoop.user.name"
USER_ENV = "HADOOP_USER_NAME"
AUTHENTICATION_KEY = "hadoop.security.authentication"
CONNECT_TIMEOUT_KEY = "fs.webhdfs.connect-timeout"
READ_TIMEOUT_KEY = "fs.webhdfs.read-timeout"
DEFAULT_CONNECT_TIMEOUT_SECONDS = 5.0
DEFAULT_READ_TIMEOUT_SECONDS = 60.0

# a rename whose response was lost is tried again this many times in all, then the error propagates
RENAME_ATTEMPTS = 3


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else ""


def is_hdfs_url(url: str) -> bool:
    """True for ``webhdfs://`` and ``hdfs://`` (``viewfs://``) URLs."""
    return scheme_of(url) in WEBHDFS_PROTOCOLS + HDFS_PROTOCOLS


def _seconds(options: Mapping[str, str], key: str, default: float) -> float:
    raw = options.get(key)
    if raw is None or str(raw) == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidWarehouseError(f"option {key!r}: {raw!r} is not a number of seconds") from None
    if not 0 < value <= 3600:
        raise InvalidWarehouseError(f"option {key!r}: {raw!r} must be > 0 and <= 3600 seconds")
    return value


def filesystem_for_webhdfs_url(url: str, options: Mapping[str, str] | None = None
                               ) -> tuple["HdfsWebFileSystem", str]:
    """The WebHDFS file system and the path for a ``webhdfs://host[:port]/path`` URL."""
    require("requests", "a webhdfs:// warehouse", extra="hdfs")
    # the client (fsspec's WebHDFS, requests) loads only for an HDFS warehouse: import impl stays light
    from impl.fs.webhdfs import HdfsWebFileSystem
    opts = {k: str(v) for k, v in (options or {}).items()}
    auth = opts.get(AUTHENTICATION_KEY, "simple").strip().lower()
    if auth != "simple":
        raise UnsupportedFileSystemError(
            f"option {AUTHENTICATION_KEY!r} = {opts[AUTHENTICATION_KEY]!r}: only simple authentication "
            "(hadoop.user.name) is supported on webhdfs://; Kerberos/SPNEGO is not")
    parts = urlsplit(url)
    if not parts.hostname:
        raise InvalidWarehouseError(f"WebHDFS URL {url!r} names no NameNode (expected webhdfs://host:port/path)")
    try:
        port = parts.port or DEFAULT_WEBHDFS_PORT
    except ValueError:
        raise InvalidWarehouseError(f"WebHDFS URL {url!r} has an invalid port") from None
    user = opts.get(USER_KEY) or parts.username or os.environ.get(USER_ENV) or None
    fs = HdfsWebFileSystem(
        parts.hostname, port, user=user,
        timeouts_seconds=(_seconds(opts, CONNECT_TIMEOUT_KEY, DEFAULT_CONNECT_TIMEOUT_SECONDS),
                          _seconds(opts, READ_TIMEOUT_KEY, DEFAULT_READ_TIMEOUT_SECONDS)))
    return fs, (parts.path or "/").rstrip("/") or "/"


def filesystem_for_hdfs_url(url: str, options: Mapping[str, str] | None = None
                            ) -> tuple[fsspec.AbstractFileSystem, str]:
    """The file system for an HDFS warehouse URL: ``webhdfs://`` opens; ``hdfs://`` / ``viewfs://``
    are refused by name (see the module docstring for why, and the ``webhdfs://`` equivalent)."""
    scheme = scheme_of(url)
    if scheme in WEBHDFS_PROTOCOLS:
        return filesystem_for_webhdfs_url(url, options)
    host = urlsplit(url).hostname or "namenode"
    raise UnsupportedFileSystemError(
        f"{scheme}:// ({url!r}) is not supported: pyarrow's HadoopFileSystem needs libhdfs.so and a JVM, "
        "and its move() replaces an existing file, so it cannot publish a snapshot by rename-if-absent. "
        f"Open the same files through WebHDFS: webhdfs://{host}:{DEFAULT_WEBHDFS_PORT}"
        f"{urlsplit(url).path or '/'}")


def is_hdfs(fs: fsspec.AbstractFileSystem) -> bool:
    """True for file systems that publish by :meth:`impl.fs.webhdfs.HdfsWebFileSystem.rename_if_absent`."""
    return callable(getattr(fs, "rename_if_absent", None))


def publish_by_rename(fs: fsspec.AbstractFileSystem, tmp: str, dst: str, data: bytes,
                      attempts: int = RENAME_ATTEMPTS) -> Publication:
    """Rename the finished temporary file ``tmp`` (holding ``data``) to ``dst`` unless ``dst`` exists.

    A rename that fails in transit (``OSError``: timeout, reset, 5xx) is tried again up to
    ``attempts`` times in all; a refusal (false) is then checked by reading ``dst`` back: our
    bytes there mean an earlier try landed and only its response was lost. A refusal with
    ``dst`` absent (``tmp`` vanished, or the directory did) raises :class:`FileIOError`: nothing
    was published and the reason is not a lost race.
    """
    last: OSError | None = None
    for _ in range(max(1, attempts)):
        try:
            if fs.rename_if_absent(tmp, dst):
                return Publication.CREATED
            last = None
            break
        except (FileNotFoundError, PermissionError):
            raise
        except OSError as e:
            last = e
    if last is not None:
        raise last
    try:
        existing = fs.cat_file(dst)
    except FileNotFoundError:
        raise FileIOError(f"HDFS refused to rename {tmp} to {dst}, which does not exist "
                          "(the temporary file or the directory is gone)") from None
    return Publication.OURS_AFTER_RETRY if existing == data else Publication.TAKEN

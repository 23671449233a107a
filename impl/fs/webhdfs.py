"""The WebHDFS client of :mod:`impl.fs.hdfs`: fsspec's WebHDFS with bounded requests and HDFS's
rename-if-absent. Loaded only for a ``webhdfs://`` warehouse (it imports requests).

>>> fs = HdfsWebFileSystem("127.0.0.1", 9870, user="paimon", timeouts_seconds=(5.0, 60.0))
>>> fs.user
'paimon'
"""

from __future__ import annotations

import functools
from typing import Any

from fsspec.implementations.webhdfs import WebHDFS


class HdfsWebFileSystem(WebHDFS):
    """fsspec's WebHDFS client with what publication and bounded work need.

    - every request carries a (connect, read) timeout: an unreachable NameNode fails in seconds;
    - a server error (5xx, an unknown RemoteException) is an ``OSError``, not a ``RuntimeError``;
    - ``pipe_file`` is one CREATE (NameNode, then the DataNode it redirects to), not fsspec's
      create-empty-then-append; ``cat_file`` of a whole file is one OPEN;
    - listings carry ``mtime`` (seconds), so orphan removal can tell a file's age;
    - ``rm_file`` of a missing file raises ``FileNotFoundError`` (WebHDFS answers false);
    - :meth:`rename_if_absent` is HDFS's atomic rename that refuses an existing destination.
    """

    cachable = False  # one client per warehouse; fsspec's instance cache would share sessions across fork()

    def __init__(self, host: str, port: int, *, user: str | None, timeouts_seconds: tuple[float, float],
                 **kwargs: Any):
        """``timeouts_seconds``: (connect, read) of every request (impl.fs.hdfs reads them from the options)."""
        self.timeouts_seconds = timeouts_seconds
        super().__init__(host, port=port, user=user, **kwargs)

    def _connect(self) -> None:
        super()._connect()
        # requests has no default timeout; Session.get/put/post all go through request()
        self.session.request = functools.partial(self.session.request, timeout=self.timeouts_seconds)

    def _call(self, op, method="get", path=None, data=None, redirect=True, **kwargs):
        try:
            return super()._call(op, method=method, path=path, data=data, redirect=redirect, **kwargs)
        except RuntimeError as e:  # fsspec's mapping of any other RemoteException
            raise OSError(f"WebHDFS {op} {path}: {e}") from e

    @staticmethod
    def _process_info(info):
        info = WebHDFS._process_info(info)
        # WebHDFS reports epoch millis as modificationTime; FileIO's mtime_millis reads "mtime"
        # (seconds): without it orphan removal saw no file as old enough and removed nothing
        info["mtime"] = info.get("modificationTime", 0) / 1000.0
        return info

    def pipe_file(self, path, value, mode="overwrite", **kwargs):
        if mode not in ("overwrite", "create"):
            raise ValueError(f"pipe_file mode {mode!r}")
        created = self._call("CREATE", method="put", path=path, redirect=False,
                             overwrite="true" if mode == "overwrite" else "false")
        location = self._apply_proxy(created.headers["Location"])
        out = self.session.put(location, data=bytes(value), headers={"content-type": "application/octet-stream"})
        out.raise_for_status()

    def cat_file(self, path, start=None, end=None, **kwargs):
        if start is not None or end is not None:
            return super().cat_file(path, start=start, end=end, **kwargs)
        return self._call("OPEN", path=path).content

    def rm_file(self, path, **kwargs):
        if not self._call("DELETE", method="delete", path=path, recursive="false").json().get("boolean"):
            raise FileNotFoundError(path)

    def rename_if_absent(self, src: str, dst: str) -> bool:
        """Rename ``src`` to ``dst`` unless ``dst`` exists (or ``src`` does not, or the parent of
        ``dst`` is missing): True if renamed. One request; atomic at the NameNode."""
        out = self._call("RENAME", method="put", path=src, destination=self._strip_protocol(dst))
        return bool(out.json().get("boolean"))

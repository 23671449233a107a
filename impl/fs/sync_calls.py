"""The synchronous calls FileIO makes on an async fsspec client, each run on the client's loop with
the client's own failures turned into OSErrors (adlfs lets the Azure SDK's errors through, gcsfs its
``HttpError`` and aiohttp's): one home for the wrapping both object-store subclasses need.

FileIO, like every fsspec caller, speaks OSError: ``FileNotFoundError``, ``FileExistsError`` (a refused
conditional create), ``PermissionError`` (a refused request) and a plain ``OSError`` for anything else,
which the commit treats as an unknown outcome and resolves by reading back.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Callable

from fsspec.asyn import sync


class OsErrorCalls:
    """Mixed in before an async fsspec file system: ``ls``, ``info``, ``find``, ``exists``,
    ``cat_file``, ``rm_file`` and ``size`` run its async methods inside :attr:`os_errors`, as fsspec's
    own sync mirrors do without the translation. A subclass sets ``os_errors`` to its store's
    translation (a context manager factory)."""

    os_errors: Callable[[], AbstractContextManager[Any]]
    loop: Any

    def _run(self, method, *args, **kwargs):
        with type(self).os_errors():
            return sync(self.loop, method, *args, **kwargs)

    def ls(self, path, detail=True, **kwargs):
        return self._run(self._ls, path, detail=detail, **kwargs)

    def info(self, path, **kwargs):
        return self._run(self._info, path, **kwargs)

    def find(self, path, maxdepth=None, withdirs=False, detail=False, **kwargs):
        return self._run(self._find, path, maxdepth=maxdepth, withdirs=withdirs, detail=detail, **kwargs)

    def exists(self, path, **kwargs):
        return self._run(self._exists, path, **kwargs)

    def cat_file(self, path, start=None, end=None, **kwargs):
        return self._run(self._cat_file, path, start=start, end=end, **kwargs)

    def rm_file(self, path, **kwargs):
        return self._run(self._rm_file, path, **kwargs)

    def size(self, path):
        return self._run(self._size, path)

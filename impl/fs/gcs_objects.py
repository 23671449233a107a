"""gcsfs's file system with its errors turned into the OSErrors FileIO handles.

gcsfs raises ``FileNotFoundError`` for a 404 and ``FileExistsError`` for a 412 (a refused
``ifGenerationMatch=0``), but a 403 as a plain ``OSError("Forbidden...")``, other statuses as its own
``HttpError`` and a dropped connection (after its retries) as aiohttp's ``ClientError``, neither an
OSError. FileIO, like every fsspec caller, speaks OSError: ``PermissionError`` for a refused request
(a committer without list permission takes a table without hints for empty, as on S3), and a plain
``OSError`` for anything else, which the commit treats as an unknown outcome and resolves by reading
back. Imported only when a ``gs://`` URL is opened (gcsfs is the ``gcs`` extra); a module-level
class, so file systems pickle.
"""

from __future__ import annotations

import contextlib
import errno
from typing import Iterator

import aiohttp
import requests
from fsspec.asyn import sync
from gcsfs.core import GCSFile, GCSFileSystem  # the JSON API client (gcsfs.GCSFileSystem may be its gRPC extension)
from gcsfs.retry import HttpError


@contextlib.contextmanager
def os_errors() -> Iterator[None]:
    """Raise gcsfs's non-OSError failures inside as the matching OSError (the original as its cause)."""
    try:
        yield
    except (FileNotFoundError, FileExistsError, PermissionError):
        raise
    except HttpError as e:
        code = getattr(e, "code", None)
        if code in (401, 403):
            raise PermissionError(errno.EACCES, f"HttpError {code}: {e}") from e
        raise OSError(errno.EIO, f"HttpError {code}: {e}") from e
    except OSError as e:
        if str(e).startswith("Forbidden"):  # gcsfs's spelling of a 403
            raise PermissionError(errno.EACCES, str(e).splitlines()[0]) from e
        raise
    except (aiohttp.ClientError, requests.exceptions.RequestException) as e:
        raise OSError(errno.EIO, f"{type(e).__name__}: {e}") from e


class SmallInOneUploadGcsFile(GCSFile):
    """gcsfs's write file, except that a file smaller than one block is stored by one multipart
    upload at close (gcsfs's own starts a resumable upload for every file: two requests where one
    does); a larger one streams as gcsfs streams it, one resumable upload in blocks."""

    def flush(self, force=False):
        if force and self.offset is None and not self.forced and self.buffer.tell() < self.blocksize:
            self.forced = True
            with os_errors():
                self._simple_upload()
            self.offset = self.buffer.tell()
            return
        with os_errors():
            super().flush(force)


class PaimonGcsFileSystem(GCSFileSystem):
    """gcsfs whose calls FileIO makes raise OSErrors only (see the module docstring). Each runs the
    async method on the file system's loop, as fsspec's own sync mirrors do."""

    def _run(self, method, *args, **kwargs):
        with os_errors():
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

    def pipe_file(self, path, value, *args, **kwargs):
        """Write an object; an empty ``dir/`` (the directory marker FileIO.mkdirs writes) is stored
        under its own name with the slash, as the GCS console and Hadoop's connector mark directories."""
        return self._run(self._pipe_file, path, value, *args, **kwargs)

    def rm_file(self, path, **kwargs):
        return self._run(self._rm_file, path, **kwargs)

    def _open(self, path, mode="rb", block_size=None, **kwargs):
        if "r" in mode:
            return super()._open(path, mode, block_size=block_size, **kwargs)
        return SmallInOneUploadGcsFile(self, path, mode, block_size or self.default_block_size,
                                       consistency=kwargs.pop("consistency", None) or self.consistency, **kwargs)

    def size(self, path):
        return self._run(self._size, path)

    def object_exists(self, bucket: str, key: str) -> bool:
        """One metadata GET of the object (a 404: False), never a LIST."""

        async def head() -> bool:
            try:
                await self._call("GET", "b/{}/o/{}", bucket, key, json_out=True)
                return True
            except FileNotFoundError:
                return False

        return bool(self._run(head))

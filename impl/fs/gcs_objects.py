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
from gcsfs.core import GCSFile, GCSFileSystem  # the JSON API client (gcsfs.GCSFileSystem may be its gRPC extension)
from gcsfs.retry import HttpError

from impl.fs.sync_calls import OsErrorCalls


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


class PaimonGcsFileSystem(OsErrorCalls, GCSFileSystem):
    """gcsfs whose calls FileIO makes raise OSErrors only (see the module docstring and
    :class:`impl.fs.sync_calls.OsErrorCalls`)."""

    os_errors = staticmethod(os_errors)

    def pipe_file(self, path, value, *args, **kwargs):
        # an empty ``dir/`` (FileIO.mkdirs's directory marker) keeps its slash: GCS stores it under
        # that name, as the GCS console and Hadoop's connector mark directories
        return self._run(self._pipe_file, path, value, *args, **kwargs)

    def _open(self, path, mode="rb", block_size=None, **kwargs):
        if "r" in mode:
            return super()._open(path, mode, block_size=block_size, **kwargs)
        return SmallInOneUploadGcsFile(self, path, mode, block_size or self.default_block_size,
                                       consistency=kwargs.pop("consistency", None) or self.consistency, **kwargs)

    def object_exists(self, bucket: str, key: str) -> bool:
        """One metadata GET of the object (a 404: False), never a LIST."""

        async def head() -> bool:
            try:
                await self._call("GET", "b/{}/o/{}", bucket, key, json_out=True)
                return True
            except FileNotFoundError:
                return False

        return bool(self._run(head))

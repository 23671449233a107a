"""adlfs's file system with the Azure SDK's errors turned into the OSErrors FileIO handles.

adlfs lets most of azure-core's exceptions through (a 403 on a listing, a reset connection on an
upload, a 5xx after the SDK's retries). FileIO, like every fsspec caller, speaks OSError:
``FileNotFoundError`` for a missing blob, ``FileExistsError`` for a refused conditional create,
``PermissionError`` for a refused request (a committer without list permission takes a table
without hints for empty, as on S3), and a plain ``OSError`` for anything else, which the commit
treats as an unknown outcome and resolves by reading back. Imported only when an Azure URL is
opened (adlfs is the ``azure`` extra); a module-level class, so file systems pickle.
"""

from __future__ import annotations

import contextlib
import errno
from typing import Iterator

from adlfs import AzureBlobFileSystem
from azure.core.exceptions import AzureError, HttpResponseError, ResourceExistsError, ResourceNotFoundError

from impl.fs.sync_calls import OsErrorCalls

# The metadata that marks an empty blob as a directory: adlfs's key and Hadoop's (WASB, ABFS on an
# account without a hierarchical namespace), so both read an empty database as a directory.
DIRECTORY_METADATA = {"is_directory": "true", "hdi_isfolder": "true"}


def _os_error(e: AzureError) -> OSError:
    status = getattr(e, "status_code", None)
    message = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if isinstance(e, ResourceNotFoundError) or status == 404:
        return FileNotFoundError(errno.ENOENT, message)
    if isinstance(e, ResourceExistsError):
        return FileExistsError(errno.EEXIST, message)
    if isinstance(e, HttpResponseError) and status in (401, 403):
        return PermissionError(errno.EACCES, message)
    return OSError(errno.EIO, message)


@contextlib.contextmanager
def os_errors() -> Iterator[None]:
    """Raise the Azure SDK's errors inside as the matching OSError (the original as its cause)."""
    try:
        yield
    except AzureError as e:
        raise _os_error(e) from e


class PaimonAzureBlobFileSystem(OsErrorCalls, AzureBlobFileSystem):
    """adlfs whose calls FileIO makes raise OSErrors only (see the module docstring and
    :class:`impl.fs.sync_calls.OsErrorCalls`)."""

    os_errors = staticmethod(os_errors)

    def pipe_file(self, path, value, *args, **kwargs):
        """Write a blob; an empty ``dir/`` (the directory marker FileIO.mkdirs writes, as S3A does)
        becomes a blob ``dir`` with the directory metadata, as Hadoop and adlfs mark directories
        (adlfs would drop the slash and store ``dir`` as an empty file, hiding what is under it)."""
        if str(path).endswith("/") and not value:
            return self._run(self._mark_directory, str(path).rstrip("/"))
        return self._run(self._pipe_file, path, value, *args, **kwargs)

    async def _mark_directory(self, path: str) -> None:
        container, blob, _ = self.split_path(path)
        if not blob:
            await self._mkdir(container)  # the container itself: created if absent
            return
        async with self.service_client.get_blob_client(container, blob) as client:
            await client.upload_blob(b"", overwrite=True, metadata=DIRECTORY_METADATA)

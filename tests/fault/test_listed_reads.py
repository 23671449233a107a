"""fault_injection.listed_reads: the crash-point checks' reads on Azure and S3 return what a GET returns.

A read is answered from bytes already held only when a listing taken after the last write through
the FileIO shows the blob with the same MD5 and size; a blob changed behind an older instance's back
is read afresh by a new one, a write or delete through the instance drops its listing, and a
streamed write (which lands at close) turns the shortcut off.
"""

from __future__ import annotations

import uuid

import pytest

from fault_injection.listed_reads import READ_METHODS, WRITE_METHODS, ListedReadsFileIO, checker_file_io, public_methods
from impl.fs.azure import AzureConfig
from impl.fs.file_io import FileIO


@pytest.fixture
def azure_fs(azure_server):
    return AzureConfig.from_options(azure_server.options()).filesystem()


def test_every_file_io_method_is_a_read_or_a_write():
    unclassified = set(public_methods(FileIO)) - READ_METHODS - WRITE_METHODS - {"requests", "sync_on_write"}
    assert not unclassified, f"FileIO methods neither read nor write for ListedReadsFileIO: {sorted(unclassified)}"


@pytest.fixture
def s3_fs(s3_server):
    from impl.fs.object_store import S3Config

    return S3Config.from_options(s3_server.options()).filesystem()


@pytest.mark.parametrize("store", ["azure", "s3"])
def test_reads_answered_only_from_a_matching_listing(store, request):
    """Azure lists each blob's Content-MD5, S3 a single-part object's ETag (its MD5)."""
    if store == "azure":
        azure_fs, azure_container = request.getfixturevalue("azure_fs"), request.getfixturevalue("azure_container")
    else:
        azure_fs, azure_container = request.getfixturevalue("s3_fs"), request.getfixturevalue("s3_bucket")
    root = f"{azure_container}/t"
    # bytes no earlier test held (what is held is keyed by MD5, across instances and tests)
    first, second = (f"{what}-{uuid.uuid4().hex}".encode() for what in ("first", "second"))
    path = f"{root}/manifest/m-1"
    plain = FileIO(azure_fs)
    plain.write_bytes(path, first)
    one = ListedReadsFileIO(azure_fs, root)
    assert one.read_bytes(path) == first and one.served == 0  # a GET: nothing held yet
    again = ListedReadsFileIO(azure_fs, root)
    assert again.read_bytes(path) == first and again.served == 1 and again.listings == 1
    plain.write_bytes(path, second)  # behind the instances' backs: a new listing shows a new MD5
    fresh = ListedReadsFileIO(azure_fs, root)
    assert fresh.read_bytes(path) == second and fresh.served == 0
    fresh.write_bytes(path, first)  # through the instance: its listing is dropped
    assert fresh.read_bytes(path) == first and fresh.listings == 2
    fresh.delete(path)
    with pytest.raises(FileNotFoundError):
        fresh.read_bytes(path)


def test_a_streamed_write_turns_the_shortcut_off(azure_fs, azure_container):
    root = f"{azure_container}/t"
    path = f"{root}/data/f-1"
    FileIO(azure_fs).write_bytes(path, b"old")
    fio = ListedReadsFileIO(azure_fs, root)
    assert fio.read_bytes(path) == b"old"
    out = fio.open_output(path)
    assert fio.read_bytes(path) == b"old"  # the stream has not landed
    out.stream.write(b"new")
    out.close()
    assert fio.read_bytes(path) == b"new"


def test_only_object_stores_get_the_listed_reads(azure_fs, s3_fs, tmp_path):
    from fsspec.implementations.local import LocalFileSystem

    assert isinstance(checker_file_io(azure_fs, "c/t"), ListedReadsFileIO)
    assert isinstance(checker_file_io(s3_fs, "b/t"), ListedReadsFileIO)
    assert type(checker_file_io(LocalFileSystem(), str(tmp_path))) is FileIO

"""fault_injection.listed_reads: the crash-point checks' reads on Azure return what a GET returns.

A read is answered from bytes already held only when a listing taken after the last write through
the FileIO shows the blob with the same MD5 and size; a blob changed behind an older instance's back
is read afresh by a new one, a write or delete through the instance drops its listing, and a
streamed write (which lands at close) turns the shortcut off.
"""

from __future__ import annotations

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


def test_reads_answered_only_from_a_matching_listing(azure_fs, azure_container):
    root = f"{azure_container}/t"
    path = f"{root}/manifest/m-1"
    plain = FileIO(azure_fs)
    plain.write_bytes(path, b"first")
    first = ListedReadsFileIO(azure_fs, root)
    assert first.read_bytes(path) == b"first" and first.served == 0  # a GET: nothing held yet
    again = ListedReadsFileIO(azure_fs, root)
    assert again.read_bytes(path) == b"first" and again.served == 1 and again.listings == 1
    plain.write_bytes(path, b"second")  # behind the instances' backs: a new listing shows a new MD5
    fresh = ListedReadsFileIO(azure_fs, root)
    assert fresh.read_bytes(path) == b"second" and fresh.served == 0
    fresh.write_bytes(path, b"first")  # through the instance: its listing is dropped
    assert fresh.read_bytes(path) == b"first" and fresh.listings == 2
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


def test_only_azure_gets_the_listed_reads(azure_fs, tmp_path):
    from fsspec.implementations.local import LocalFileSystem

    assert isinstance(checker_file_io(azure_fs, "c/t"), ListedReadsFileIO)
    assert type(checker_file_io(LocalFileSystem(), str(tmp_path))) is FileIO

"""Fixtures of the storage-core tests."""

from __future__ import annotations

import os
import sys

import fsspec
import pytest
from fsspec.implementations.local import LocalFileSystem

sys.path.insert(0, os.path.dirname(__file__))

from core_helpers import load_reference_dump, memory_root  # noqa: E402

from impl.fs.file_io import FileIO  # noqa: E402


@pytest.fixture(scope="session")
def reference_dump():
    return load_reference_dump()


@pytest.fixture(params=["memory", "local"])
def storage(request, tmp_path):
    """(fs, root): a healthy fsspec file system and a root directory no other test uses."""
    if request.param == "memory":
        io, root = memory_root()
        yield io.fs, root
        try:
            io.fs.rm(root, recursive=True)
        except FileNotFoundError:
            pass
    else:
        yield LocalFileSystem(), str(tmp_path / "root")


@pytest.fixture
def io_root(storage):
    fs, root = storage
    return FileIO(fs), root


@pytest.fixture
def memory_fs():
    return fsspec.filesystem("memory")

"""Fixtures of the table-layer tests: a catalog on local disk or on fsspec memory."""

from __future__ import annotations

import os
import sys
import uuid

import fsspec
import pytest

import impl

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(params=["local", "memory"])
def catalog(request, tmp_path):
    """A catalog with database ``db``, on local disk or on a memory root unique to this test."""
    if request.param == "local":
        cat = impl.Catalog(str(tmp_path / "warehouse"))
        cat.create_database("db")
        yield cat
    else:
        fs = fsspec.filesystem("memory")
        root = f"/wh-{uuid.uuid4().hex}"
        cat = impl.Catalog(root, filesystem=fs)
        cat.create_database("db")
        yield cat
        try:
            fs.rm(root, recursive=True)
        except FileNotFoundError:
            pass


@pytest.fixture
def local_catalog(tmp_path):
    cat = impl.Catalog(str(tmp_path / "warehouse"))
    cat.create_database("db")
    return cat

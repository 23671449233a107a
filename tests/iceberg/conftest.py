"""The Iceberg tests' warehouse: a local directory with database ``db`` (steps they share are
in tests/_support/iceberg_views.py)."""

from __future__ import annotations

import pytest

import impl


@pytest.fixture
def wh(tmp_path) -> str:
    """The warehouse's path (``<tmp_path>/wh``), database ``db`` created."""
    path = str(tmp_path / "wh")
    impl.Catalog(path).create_database("db")
    return path


@pytest.fixture
def catalog(wh):
    """A filesystem catalog on ``wh``."""
    return impl.Catalog(wh)

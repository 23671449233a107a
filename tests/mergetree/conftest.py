"""Fixtures of the merge-tree tests (helpers live in mergetree_helpers.py)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from mergetree_helpers import DirectExecutor  # noqa: E402


@pytest.fixture
def direct_executor():
    return DirectExecutor()

"""Fixtures of the suites shared by the stores (tests/_support/stores.py lists them): ``object_store``
runs a test on each object store, ``process_store`` on each store of the racing-process suites;
``store_proxy`` puts the S3 fault proxy in front of the test's store. Only the servers of the stores
a test runs on are started (their session fixtures, in tests/conftest.py)."""

from __future__ import annotations

import pytest
from stores import OBJECT_STORES, PROCESS_STORES, STORE_KINDS, StoreUnderTest

from fault_injection.s3_proxy import S3FaultProxy


def _fresh(request) -> StoreUnderTest:
    kind = STORE_KINDS[request.param]
    return kind.fresh(request.getfixturevalue(kind.server_fixture))


@pytest.fixture(params=OBJECT_STORES)
def object_store(request) -> StoreUnderTest:
    return _fresh(request)


@pytest.fixture(params=PROCESS_STORES)
def process_store(request) -> StoreUnderTest:
    return _fresh(request)


@pytest.fixture
def store_proxy(object_store):
    p = S3FaultProxy(object_store.upstream()).start()
    yield p
    p.stop()

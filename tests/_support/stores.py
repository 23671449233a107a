"""The stores the per-store suites run on, in one list: each test parametrized over a store gets a
fresh warehouse URL and the options that reach it (tests/stores/conftest.py makes the fixtures).

A store is a :class:`StoreKind` (its name, the session fixture of its server, and what differs
between stores: how a fault proxy is put in front of it, how many rounds its slower tests run) plus
a function making a fresh :class:`StoreUnderTest` from that server. Adding a store is one entry in
:data:`STORE_KINDS` (and its name in :data:`OBJECT_STORES` if it publishes by a conditional create
and can sit behind the S3 fault proxy, in :data:`PROCESS_STORES` for the racing-process suites).

>>> STORE_KINDS["azure"].server_fixture
'azure_server'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class StoreUnderTest:
    """A fresh warehouse on a running store: its URL, the options that reach it (through
    ``endpoint`` instead of the server's own, e.g. a fault proxy's), and the store's kind."""

    kind: "StoreKind"
    warehouse: str
    server: Any
    container: str  # the bucket / container (or HDFS directory) made for this test

    @property
    def name(self) -> str:
        return self.kind.name

    def options(self, endpoint: str | None = None) -> dict[str, str]:
        return dict(self.server.options(endpoint)) if endpoint is not None else dict(self.server.options())

    def proxied_options(self, proxy) -> dict[str, str]:
        """The options reaching the store through ``proxy`` (a started S3FaultProxy)."""
        return self.options(self.kind.endpoint_through(proxy.endpoint))

    def upstream(self) -> str:
        """What a fault proxy in front of this store forwards to."""
        return self.kind.upstream_of(self.server)


@dataclass(frozen=True)
class StoreKind:
    """What differs between the stores the shared suites run on."""

    name: str
    server_fixture: str
    make: Callable[[Any], tuple[str, str]]  # server -> (a fresh container, the warehouse URL in it)
    upstream_of: Callable[[Any], str] = lambda server: server.endpoint
    endpoint_through: Callable[[str], str] = lambda proxy_endpoint: proxy_endpoint
    sigkill_rounds: int = 6  # each round starts a Python process
    warm_commits: tuple[int, int] = (30, 5)  # commits made, of which the first n are cold
    warm_floor_is_first: bool = True  # no warm commit makes fewer requests than the first warm one
    race_timeout_seconds: float = 600  # the longest wait for a racing process's answer

    def fresh(self, server: Any) -> StoreUnderTest:
        container, warehouse = self.make(server)
        return StoreUnderTest(self, warehouse, server, container)


def _s3(server) -> tuple[str, str]:
    bucket = server.new_bucket()
    return bucket, f"s3://{bucket}/wh"


def _azure(server) -> tuple[str, str]:
    container = server.new_container()
    return container, server.url(container)


def _hdfs(server) -> tuple[str, str]:
    root = server.new_root("t")
    return root, server.webhdfs_url(root)


def _gcs(server) -> tuple[str, str]:
    bucket = server.new_bucket()
    return bucket, server.url(bucket)


def _azure_endpoint_through(proxy_endpoint: str) -> str:
    from azurite import ACCOUNT

    return f"{proxy_endpoint}/{ACCOUNT}"  # Azurite's path-style endpoint names the account


STORE_KINDS: dict[str, StoreKind] = {
    "s3": StoreKind("s3", "s3_server", _s3),
    "azure": StoreKind("azure", "azure_server", _azure,
                       upstream_of=lambda server: server.endpoint.rsplit("/", 1)[0],
                       endpoint_through=_azure_endpoint_through,
                       sigkill_rounds=4,  # not S3's six: about 20 s a round on a loaded CI machine
                       warm_commits=(12, 4), warm_floor_is_first=False),
    "hdfs": StoreKind("hdfs", "hdfs_server", _hdfs, sigkill_rounds=3, race_timeout_seconds=900),
    # fake-gcs-server; the proxy reads the GCS JSON API's requests as S3's verbs (object metadata GET
    # as HEAD, uploads as PUT), and publication is an upload sent with ifGenerationMatch=0
    "gcs": StoreKind("gcs", "gcs_server", _gcs,
                     sigkill_rounds=4,  # as on Azure: each round starts a Python process
                     warm_commits=(12, 4), warm_floor_is_first=False),
}

# publication by a conditional create, faults injected by the S3 fault proxy on the wire
OBJECT_STORES = ("s3", "azure", "gcs")
# the racing-process and SIGKILL suites
PROCESS_STORES = ("s3", "azure", "hdfs", "gcs")

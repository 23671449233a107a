"""Paimon Java 1.4.2 and impl on the same Azure Blob container (Azurite), both ways (issue 51).

Java opens the warehouse as ``wasb://CONTAINER@devstoreaccount1.blob.localhost:PORT/wh``: Paimon's
HadoopFileIO over Hadoop's own NativeAzureFileSystem (hadoop-azure 3.3.6 on the harness class
path; Paimon's paimon-azure is not on Maven Central, and its loader serves ``abfs://`` only, whose
DFS endpoint Azurite does not implement). WASB puts the account in the host name and Azurite takes
it from there ("production-style" URLs), so the JVM resolves that name to 127.0.0.1 through a
hosts file (``-Djdk.net.hosts.file``). impl opens the same container and path as
``abfss://CONTAINER@devstoreaccount1.dfs.core.windows.net/wh`` with ``azure.endpoint``.

The anchor (Java's publication on Azure): Paimon commits ``snapshot-N`` by writing a temporary
file and renaming it (``RenamingSnapshotCommit``: ``!exists(snapshot-N) && rename(tmp,
snapshot-N)``; the filesystem catalog enables a lock for ``wasb`` but has no default lock, so
none is taken). WASB's rename of a file is Copy Blob with ``If-None-Match: *`` on the destination
(``overwriteDestination=false``: a 409 BlobAlreadyExists makes rename return false) and then a
delete of the source. So Java, like impl, publishes by conditional create and needs no lock:
the race tests below count lost and duplicated commits (none), Java against Java and Java
against impl on one table.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from azure.core.exceptions import ResourceExistsError
from azurite import ACCOUNT, ACCOUNT_KEY, AzureEndpoint
from paimon_java import JavaServer, harness_classpath, tools_missing

import impl
from impl.fs.azure import filesystem_for_url

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"
FIELDS = [["id", "INT NOT NULL"], ["v", "STRING"]]
WASB_HOST = f"{ACCOUNT}.blob.localhost"  # Azurite reads the account from the host's first label
JAVA_RACE_COMMITS = 1  # Java's commits while impl commits without pause (each ~2-15 s here)
IMPL_RACE_MAX_COMMITS = 20  # a bound on impl's commits meanwhile


@dataclass(frozen=True)
class JavaAzure:
    """How Paimon Java reaches one Azurite: the wasb URL of a container path and the catalog
    options (Hadoop's account-key name, under Paimon's ``hadoop.`` prefix)."""

    endpoint: AzureEndpoint

    @property
    def authority(self) -> str:
        return f"{WASB_HOST}:{urlparse(self.endpoint.endpoint).port}"

    def warehouse(self, container: str, path: str = "wh") -> str:
        return f"wasb://{container}@{self.authority}/{path}"

    def catalog_options(self) -> dict[str, str]:
        return {f"hadoop.fs.azure.account.key.{self.authority}": ACCOUNT_KEY}


def _java_server(hosts_file: Path) -> JavaServer:
    return JavaServer(harness_classpath(), heap="1g", jvm_options=(f"-Djdk.net.hosts.file={hosts_file}",))


@pytest.fixture(scope="module")
def java_hosts(tmp_path_factory) -> Path:
    reason = tools_missing()
    if reason:
        pytest.skip(f"Paimon Java harness needs a JDK and Maven: {reason}")
    hosts = tmp_path_factory.mktemp("java-hosts") / "hosts"
    hosts.write_text(f"127.0.0.1 {WASB_HOST}\n127.0.0.1 localhost\n")
    return hosts


@pytest.fixture(scope="module")
def java_az(java_hosts):
    """A harness JVM that resolves the WASB host of Azurite to 127.0.0.1."""
    server = _java_server(java_hosts)
    yield server
    server.close()


def _rows(table: pa.Table) -> dict:
    return {r["id"]: r["v"] for r in table.to_pylist()}


class _Java:
    """One Java writer on one table: the harness calls with the Azure catalog options."""

    def __init__(self, server: JavaServer, azure: JavaAzure, container: str, tmp: Path, user: str = "java"):
        self.server, self.tmp, self.user = server, tmp, user
        self.args = {"warehouse": azure.warehouse(container), "catalog_options": azure.catalog_options(),
                     "table": TABLE}
        self.commits = 0

    def create(self, options: dict[str, str]) -> None:
        self.server.call("create_table", **self.args, fields=FIELDS, primary_keys=["id"], partition_keys=[],
                         table_options=options)

    def write(self, ids: list[int], v: str) -> dict:
        self.commits += 1
        path = self.tmp / f"in-{self.user}-{self.commits}.parquet"
        pq.write_table(pa.table({"id": pa.array(ids, pa.int32()), "v": [v] * len(ids)}), path)
        return self.server.call("write", **self.args, parquet=str(path), commit_user=self.user,
                                identifier=self.commits)

    def read(self) -> dict:
        out = self.tmp / f"read-{self.user}.parquet"
        self.server.call("read", **self.args, out=str(out))
        return _rows(pq.read_table(out))

    def snapshot_ids(self) -> list[int]:
        return list(self.server.call("snapshot_ids", **self.args))


def _impl_catalog(azure_server: AzureEndpoint, container: str) -> impl.Catalog:
    return impl.Catalog(azure_server.url(container, "wh"), options=azure_server.options())


def _blob_names(azure_server: AzureEndpoint, container: str, prefix: str) -> set[str]:
    """The blobs under ``prefix`` as Azure's own listing names them (no directory markers)."""
    client = azure_server.service().get_container_client(container)
    return {b.name for b in client.list_blobs(name_starts_with=prefix) if b.size}


def test_java_writes_impl_reads_and_writes_java_reads(java_az, azure_server, azure_container, tmp_path):
    java = _Java(java_az, JavaAzure(azure_server), azure_container, tmp_path)
    java.create({"bucket": "2"})
    java.write([1, 2, 3], "java")
    t = _impl_catalog(azure_server, azure_container).get_table(TABLE)
    assert _rows(t.to_arrow()) == {1: "java", 2: "java", 3: "java"}
    # the two spellings name the same blobs: impl's file system lists what Java wrote
    fs, root = filesystem_for_url(azure_server.url(azure_container, "wh/db.db/t/snapshot"), azure_server.options())
    impl_sees = {p.split("/", 1)[1] for p in fs.find(root)}
    assert impl_sees == _blob_names(azure_server, azure_container, "wh/db.db/t/snapshot/")
    assert "wh/db.db/t/snapshot/snapshot-1" in impl_sees
    t.write_arrow(pa.table({"id": pa.array([3, 4], pa.int32()), "v": ["impl", "impl"]}))
    expected = {1: "java", 2: "java", 3: "impl", 4: "impl"}
    assert java.read() == expected
    java.write([1], "java2")  # Java commits on top of impl's snapshot
    expected[1] = "java2"
    t = _impl_catalog(azure_server, azure_container).get_table(TABLE)
    assert _rows(t.to_arrow()) == expected
    assert t.snapshot_manager().snapshot_ids() == [1, 2, 3] == java.snapshot_ids()


def test_impl_creates_java_writes(java_az, azure_server, azure_container, tmp_path):
    cat = _impl_catalog(azure_server, azure_container)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(TABLE, schema=pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())]),
                         primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["impl", "impl"]}))
    java = _Java(java_az, JavaAzure(azure_server), azure_container, tmp_path)
    assert java.read() == {1: "impl", 2: "impl"}
    java.write([2, 5], "java")
    t = _impl_catalog(azure_server, azure_container).get_table(TABLE)
    assert _rows(t.to_arrow()) == {1: "impl", 2: "java", 5: "java"}
    assert t.snapshot_manager().snapshot_ids() == [1, 2]


def test_copy_blob_refuses_an_existing_destination(azure_server, azure_container):
    """The primitive under WASB's rename (and so under Paimon Java's commit on Azure): Copy Blob
    with ``If-None-Match: *`` fails with 409 when the destination exists, and leaves it as it was."""
    client = azure_server.service().get_container_client(azure_container)
    client.upload_blob("snapshot-1", b"first")
    client.upload_blob("tmp", b"second")
    dst = client.get_blob_client("snapshot-1")
    with pytest.raises(ResourceExistsError):
        # the header WASB sends (azure-storage 7's AccessCondition.generateIfNotExistsCondition())
        dst.start_copy_from_url(client.get_blob_client("tmp").url, headers={"If-None-Match": "*"})
    assert dst.download_blob().readall() == b"first"
    # without the condition the same copy overwrites: the header is what refuses
    dst.start_copy_from_url(client.get_blob_client("tmp").url)
    assert dst.download_blob().readall() == b"second"


def _race(writers: dict[str, Callable[[], None]]) -> dict[str, BaseException]:
    """Run each writer in its own thread at once; their exceptions by name."""
    errors: dict[str, BaseException] = {}
    barrier = threading.Barrier(len(writers))

    def run(name, fn):
        barrier.wait()
        try:
            fn()
        except BaseException as e:  # reported by the test
            errors[name] = e

    threads = [threading.Thread(target=run, args=item) for item in writers.items()]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    return errors


def _java_commits(java: _Java, base: int, commits: int) -> Callable[[], None]:
    def run():
        for i in range(commits):
            java.write([base + i], java.user)
    return run


def _java_race(servers: list[JavaServer], azure_server, container: str, tmp: Path, commits: int) -> None:
    """Each server a Java writer process committing ``commits`` one-row commits at once on one
    table, no lock; asserts none lost (every row read back) and none duplicated (snapshot ids
    1..total, one per commit), and prints the figures."""
    azure = JavaAzure(azure_server)
    writers = [_Java(s, azure, container, tmp, f"java-{n}") for n, s in enumerate(servers)]
    writers[0].create({"bucket": "1", "write-only": "true"})
    started = time.monotonic()
    errors = _race({w.user: _java_commits(w, 1000 * n, commits) for n, w in enumerate(writers)})
    elapsed_s = time.monotonic() - started
    assert not errors, errors
    expected = {1000 * n + i: w.user for n, w in enumerate(writers) for i in range(commits)}
    t = _impl_catalog(azure_server, container).get_table(TABLE)
    got = _rows(t.to_arrow())
    ids = t.snapshot_manager().snapshot_ids()
    print(f"Java on Azurite, {len(writers)} processes x {commits} commits, no lock: "
          f"{len(set(expected) - set(got))} lost, {len(ids) - len(expected)} extra snapshots, {elapsed_s:.1f} s")
    assert got == expected  # none lost
    assert ids == list(range(1, len(expected) + 1))  # none duplicated, consecutive
    assert writers[-1].read() == expected


@pytest.mark.large
def test_java_writers_race_without_a_lock(java_az, java_hosts, azure_server, azure_container, tmp_path):
    """Java processes commit at once on one table, no lock: every commit lands exactly once
    (WASB's conditional Copy Blob refuses the loser's rename, and Paimon retries at N+1).
    4 processes x 5 commits: minutes here (each JVM's first commit on WASB alone takes ~15 s on
    this loaded machine), so ``large``; CI runs the impl-against-Java race below."""
    others = [_java_server(java_hosts) for _ in range(3)]
    try:
        _java_race([java_az, *others], azure_server, azure_container, tmp_path, commits=5)
    finally:
        for s in others:
            s.close()


def test_impl_races_java_on_one_table(java_az, azure_server, azure_container, tmp_path):
    """impl (Put Blob If-None-Match: *) commits without pause for as long as Java (Copy Blob
    If-None-Match: *) commits on the same table: both publish by conditional create on
    snapshot-N, so every commit of either lands exactly once."""
    java = _Java(java_az, JavaAzure(azure_server), azure_container, tmp_path, "java")
    java.create({"bucket": "1", "write-only": "true"})
    t = _impl_catalog(azure_server, azure_container).get_table(TABLE)
    java_done = threading.Event()
    impl_ids: list[int] = []
    impl_lost_races: list[int] = []  # impl's conditional creates that found snapshot-N taken (by Java)

    def java_commits():
        try:
            _java_commits(java, 0, JAVA_RACE_COMMITS)()
        finally:
            java_done.set()

    def impl_commits():
        builder = t.new_stream_write_builder().with_commit_user("impl")
        write, commit = builder.new_write(), builder.new_commit()
        while not java_done.is_set() and len(impl_ids) < IMPL_RACE_MAX_COMMITS:
            key = 2000 + len(impl_ids)
            write.write_arrow(pa.table({"id": pa.array([key], pa.int32()), "v": ["impl"]}))
            stats = commit.commit(write.prepare_commit(len(impl_ids) + 1), len(impl_ids) + 1)
            impl_ids.append(key)
            impl_lost_races.append(stats.lost_races)

    errors = _race({"java": java_commits, "impl": impl_commits})
    assert not errors, errors
    expected = {i: "java" for i in range(JAVA_RACE_COMMITS)}
    expected.update({key: "impl" for key in impl_ids})
    t = _impl_catalog(azure_server, azure_container).get_table(TABLE)
    ids = t.snapshot_manager().snapshot_ids()
    print(f"impl racing Java on Azurite: {len(impl_ids)} impl + {JAVA_RACE_COMMITS} Java commits, "
          f"{len(set(expected) - set(_rows(t.to_arrow())))} lost, {len(ids) - len(expected)} extra snapshots, "
          f"{sum(impl_lost_races)} impl creates refused because Java had taken snapshot-N")
    assert len(impl_ids) > 1  # the two really overlapped
    assert _rows(t.to_arrow()) == expected
    assert ids == list(range(1, len(expected) + 1))
    assert java.read() == expected

"""FileIO on Azure Blob (Azurite on 127.0.0.1): URLs and Hadoop's option names, publication by a
create sent with ``If-None-Match: *`` (Azurite refuses the second one), the read-back rule for a
refused retry of our own landed create, one HEAD per existence check, and schemes refused by name.
"""

from __future__ import annotations

import pytest
from azurite import ACCOUNT, ACCOUNT_KEY

from fault_injection.s3_proxy import Fault, FaultRule, S3FaultProxy
from impl.errors import InvalidWarehouseError, UnsupportedFileSystemError
from impl.fs import FileIO
from impl.fs.azure import AzureConfig, parse_url
from impl.fs.object_store import Publication, conditional_create, filesystem_for_url


@pytest.fixture
def proxy(azure_server):
    p = S3FaultProxy(azure_server.endpoint.rsplit("/", 1)[0]).start()
    yield p
    p.stop()


def _io(azure_server, container, endpoint=None) -> tuple[FileIO, str]:
    return FileIO.for_path(azure_server.url(container), options=azure_server.options(endpoint))


def test_azurite_refuses_a_second_create_and_adlfs_sends_if_none_match(azure_server, azure_container):
    """What publication rests on: adlfs's ``mode="create"`` goes out as ``If-None-Match: *`` and
    the store answers the second one with a refusal (409 BlobAlreadyExists), keeping the first."""
    io, root = _io(azure_server, azure_container)
    sent: list[dict] = []

    def hook(request) -> None:
        sent.append(dict(request.http_request.headers))

    io.fs.pipe_file(f"{root}/k", b"first", mode="create", raw_request_hook=hook)
    with pytest.raises(FileExistsError):
        io.fs.pipe_file(f"{root}/k", b"second", mode="create", raw_request_hook=hook)
    assert [h.get("If-None-Match") for h in sent] == ["*", "*"]
    assert io.read_bytes(f"{root}/k") == b"first"


def test_for_path_opens_abfss_with_hadoop_option_names(azure_server, azure_container):
    io, root = _io(azure_server, azure_container)
    assert root == f"{azure_container}/wh" and io.is_object_store
    io.write_bytes(f"{root}/a/b.txt", b"hello")
    assert io.read_bytes(f"{root}/a/b.txt") == b"hello"
    assert io.exists(f"{root}/a/b.txt") and not io.exists(f"{root}/a/c.txt")
    assert io.file_exists(f"{root}/a/b.txt") and not io.file_exists(f"{root}/a")
    io.mkdirs(f"{root}/empty.db")
    assert io.exists(f"{root}/empty.db") and sorted(io.list_names(root)) == ["a", "empty.db"]
    assert io.list_names(f"{root}/empty.db") == []
    with pytest.raises(FileNotFoundError):
        io.read_bytes(f"{root}/a/missing")
    # blobs carry their modification time (orphan removal goes by age: an ageless blob is never taken)
    (status,) = io.walk_files(f"{root}/a")
    assert status.size_bytes == 5 and status.modified_millis is not None and status.modified_millis > 0
    # the short spellings reach the same blobs (account from the options)
    for scheme in ("abfs", "az"):
        other, path = FileIO.for_path(f"{scheme}://{azure_container}/wh", options=azure_server.options())
        assert path == root and other.read_bytes(f"{path}/a/b.txt") == b"hello"


def test_publication_is_a_conditional_create_and_leaves_only_the_snapshot(azure_server, azure_container):
    io, root = _io(azure_server, azure_container)
    path = f"{root}/db.db/t/snapshot/snapshot-1"
    assert io.try_write_atomic(path, b"first") is True
    assert io.try_write_atomic(path, b"second") is False
    assert io.read_bytes(path) == b"first"
    assert io.list_names(f"{root}/db.db/t/snapshot") == ["snapshot-1"]  # no temp file, no probe blob


def test_refused_retry_of_our_own_create_is_told_apart_by_reading_back(azure_server, azure_container):
    io, root = _io(azure_server, azure_container)
    path = f"{root}/snapshot-7"
    io.fs.pipe_file(path, b"ours", mode="create")  # the first try landed; its answer was lost
    assert conditional_create(io.fs, path, b"ours") is Publication.OURS_AFTER_RETRY
    assert conditional_create(io.fs, path, b"theirs") is Publication.TAKEN


def test_lost_answer_to_the_snapshot_create_is_still_published_once(azure_server, azure_container, proxy):
    """The proxy lets the create land and drops its answer: the SDK retries, Azurite refuses the
    retry, and the read-back finds our bytes: published, exactly once."""
    io, root = _io(azure_server, azure_container, f"{proxy.endpoint}/{ACCOUNT}")
    io.ensure_atomic_create(root)  # the probe first, so the rule hits the snapshot's create
    proxy.add_rule(FaultRule(Fault.LOST_RESPONSE, method="PUT", path=r"/snapshot-1$"))
    assert io.try_write_atomic(f"{root}/snapshot-1", b"mine") is True
    assert proxy.counts().get("PUT", 0) >= 2  # the lost create and the SDK's refused retry
    assert io.try_write_atomic(f"{root}/snapshot-1", b"other") is False


def test_file_exists_is_one_head_never_a_list(azure_server, azure_container, proxy):
    io, root = _io(azure_server, azure_container, f"{proxy.endpoint}/{ACCOUNT}")
    io.write_bytes(f"{root}/x", b"1")
    proxy.reset_counts()
    before = io.requests.snapshot()
    assert io.file_exists(f"{root}/x") and not io.file_exists(f"{root}/missing")
    assert proxy.counts() == {"HEAD": 2}
    assert io.requests.since(before) == {"HEAD": 2}  # FileIO's own count agrees with the wire


def test_option_names_and_urls():
    key = f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net"
    where = parse_url(f"abfss://data@{ACCOUNT}.dfs.core.windows.net/wh/")
    assert (where.container, where.account, where.path) == ("data", ACCOUNT, "data/wh")
    assert parse_url("az://data").path == "data"
    config = AzureConfig.from_options({key: ACCOUNT_KEY})
    assert config.account == ACCOUNT and config.account_key == ACCOUNT_KEY
    assert ACCOUNT_KEY not in repr(config)  # never logged
    sas = AzureConfig.from_options({f"fs.azure.sas.fixed.token.{ACCOUNT}.dfs.core.windows.net": "?sv=1&sig=x"},
                                   ACCOUNT)
    assert sas.sas_token == "sv=1&sig=x" and "SharedAccessSignature=sv=1&sig=x" in str(sas.service_connection_string())
    # Paimon Java's AzureFileIO reads azure.* and fs.wasb.* as fs.azure.*, and fs.azure.account.key alone
    assert AzureConfig.from_options({f"azure.account.key.{ACCOUNT}.blob.core.windows.net": "k"}).account_key == "k"
    assert AzureConfig.from_options({"fs.azure.account.key": "k2"}, ACCOUNT).account_key == "k2"
    wasb = AzureConfig.from_options({f"fs.azure.sas.data.{ACCOUNT}.blob.core.windows.net": "sv=2"}, ACCOUNT, "data")
    assert wasb.sas_token == "sv=2"
    with pytest.raises(InvalidWarehouseError, match="names no container"):
        parse_url(f"abfss://@{ACCOUNT}.dfs.core.windows.net/wh")
    with pytest.raises(InvalidWarehouseError, match="not a storage account host"):
        parse_url("abfss://data@example.com/wh")
    with pytest.raises(InvalidWarehouseError, match="not a container name"):
        parse_url("abfs://Data_1/wh")
    with pytest.raises(InvalidWarehouseError, match="the URL names"):
        AzureConfig.from_options({"azure.account-name": "otheraccount"}, ACCOUNT)
    with pytest.raises(InvalidWarehouseError, match="several accounts"):
        AzureConfig.from_options({key: "a", "fs.azure.account.key.second.blob.core.windows.net": "b"})
    with pytest.raises(InvalidWarehouseError, match="azure.read-timeout"):
        AzureConfig.from_options({"azure.read-timeout": "soon"})


@pytest.mark.parametrize("url", ["oss://bucket/wh", "ftp://host/wh"])
def test_unknown_schemes_are_refused_by_name(url):
    scheme = url.split("://", 1)[0]
    with pytest.raises(UnsupportedFileSystemError, match=f"unknown scheme '{scheme}'"):
        filesystem_for_url(url)

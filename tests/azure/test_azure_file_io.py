"""FileIO on Azure Blob (Azurite on 127.0.0.1): URLs and Hadoop's option names, publication by a
create sent with ``If-None-Match: *`` (Azurite refuses the second one), the read-back rule for a
refused retry of our own landed create, and schemes refused by name. The checks every object store
shares (one HEAD per existence check, a lost answer published once, ...) are
tests/stores/test_store_file_io.py.
"""

from __future__ import annotations

import pytest
from azurite import ACCOUNT, ACCOUNT_KEY

from impl.errors import InvalidWarehouseError, UnsupportedFileSystemError
from impl.fs import FileIO
from impl.fs.azure import AzureConfig, parse_url
from impl.fs.object_store import Publication, conditional_create, filesystem_for_url


def _io(azure_server, container) -> tuple[FileIO, str]:
    return FileIO.for_path(azure_server.url(container), options=azure_server.options())


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


def test_blobs_carry_their_age_and_every_spelling_reaches_them(azure_server, azure_container):
    """Azure's part of the shared FileIO checks (tests/stores/test_store_file_io.py): blobs carry their
    modification time (orphan removal goes by age: an ageless blob is never taken), and the short
    spellings ``abfs://container/wh`` and ``az://container/wh`` (account from the options) reach the
    blobs the ADLS Gen2 URL wrote."""
    io, root = _io(azure_server, azure_container)
    io.write_bytes(f"{root}/a/b.txt", b"hello")
    (status,) = io.walk_files(f"{root}/a")
    assert status.size_bytes == 5 and status.modified_millis is not None and status.modified_millis > 0
    for scheme in ("abfs", "az"):
        other, path = FileIO.for_path(f"{scheme}://{azure_container}/wh", options=azure_server.options())
        assert path == root and other.read_bytes(f"{path}/a/b.txt") == b"hello"


def test_refused_retry_of_our_own_create_is_told_apart_by_reading_back(azure_server, azure_container):
    io, root = _io(azure_server, azure_container)
    path = f"{root}/snapshot-7"
    io.fs.pipe_file(path, b"ours", mode="create")  # the first try landed; its answer was lost
    assert conditional_create(io.fs, path, b"ours") is Publication.OURS_AFTER_RETRY
    assert conditional_create(io.fs, path, b"theirs") is Publication.TAKEN


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

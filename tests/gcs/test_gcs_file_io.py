"""FileIO on Google Cloud Storage (fake-gcs-server on 127.0.0.1), what only GCS has: publication by an
upload sent with ``ifGenerationMatch=0`` on the wire (the emulator refuses the second one with 412),
the read-back rule for a refused retry of our own landed upload, the probe (once per store and
bucket; refusing a store that ignores the precondition), resumable uploads, error mapping, the gcsfs
client and the option names. What every object store has (the round trip, publication leaving only
the snapshot, one metadata GET per existence check, a lost answer to a landed create) runs on GCS in
tests/stores/test_store_file_io.py.
"""

from __future__ import annotations

import json
import threading

import pytest
import requests

from fault_injection.s3_proxy import S3FaultProxy, object_path, request_kind
from impl.errors import InvalidWarehouseError, UnsupportedFileSystemError
from impl.fs import FileIO
from impl.fs.gcs import GcsConfig, parse_url
from impl.fs.object_store import Publication, conditional_create, filesystem_for_url, forget_probes


@pytest.fixture
def proxy(gcs_server):
    p = S3FaultProxy(gcs_server.endpoint).start()
    yield p
    p.stop()


def _io(gcs_server, bucket, endpoint=None) -> tuple[FileIO, str]:
    return FileIO.for_path(gcs_server.url(bucket), options=gcs_server.options(endpoint))


def _multipart(name: str, data: bytes) -> tuple[bytes, dict[str, str]]:
    body = (b"--B\r\nContent-Type: application/json\r\n\r\n" + json.dumps({"name": name}).encode()
            + b"\r\n--B\r\nContent-Type: application/octet-stream\r\n\r\n" + data + b"\r\n--B--")
    return body, {"Content-Type": "multipart/related; boundary=B"}


def test_emulator_refuses_a_second_create_with_if_generation_match_zero(gcs_server, gcs_bucket):
    """What publication rests on, on the wire: a multipart upload with ifGenerationMatch=0 of an
    existing name is refused with 412 and the first object stays; of 8 racing creates one wins."""
    url = f"{gcs_server.endpoint}/upload/storage/v1/b/{gcs_bucket}/o?uploadType=multipart&ifGenerationMatch=0"
    statuses = [requests.post(url, data=_multipart("x", v)[0], headers=_multipart("x", v)[1], timeout=30).status_code
                for v in (b"first", b"second")]
    assert statuses == [200, 412]
    got = requests.get(f"{gcs_server.endpoint}/storage/v1/b/{gcs_bucket}/o/x", params={"alt": "media"}, timeout=30)
    assert got.content == b"first"
    for trial in range(5):
        won: list[int] = []

        threads = [threading.Thread(target=_create, args=(url, f"race-{trial}", i, won)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1, won


def _create(url: str, name: str, i: int, won: list[int]) -> None:
    body, headers = _multipart(name, b"%d" % i)
    if requests.post(url, data=body, headers=headers, timeout=30).status_code == 200:
        won.append(i)


def test_gcsfs_sends_if_generation_match_zero_on_create(gcs_server, gcs_bucket, proxy):
    io, root = _io(gcs_server, gcs_bucket, proxy.endpoint)
    proxy.log = []
    io.fs.pipe_file(f"{root}/k", b"first", mode="create")
    with pytest.raises(FileExistsError):
        io.fs.pipe_file(f"{root}/k", b"second", mode="create")
    puts = [path for kind, path in proxy.log if kind == "PUT"]
    assert len(puts) == 2 and all("uploadType=multipart" in p and "ifGenerationMatch=0" in p for p in puts), puts
    assert io.read_bytes(f"{root}/k") == b"first"


def test_gs_urls_file_status_and_the_short_option_names(gcs_server, gcs_bucket):
    """The round trip with the fs.gs.* names is tests/stores/test_store_file_io.py's; here what is
    GCS's own: the gs:// spelling back, a listed file's size and mtime, and the gs.* names."""
    io, root = _io(gcs_server, gcs_bucket)
    assert root == f"{gcs_bucket}/wh" and io.uri(root) == f"gs://{gcs_bucket}/wh"
    io.write_bytes(f"{root}/a/b.txt", b"hello")
    (status,) = io.walk_files(f"{root}/a")
    assert status.size_bytes == 5 and status.modified_millis is not None and status.modified_millis > 0
    # Paimon's GSFileIO passes gs.* on as well as fs.gs.*
    short = {k.removeprefix("fs."): v for k, v in gcs_server.options().items()}
    other, path = FileIO.for_path(f"gs://{gcs_bucket}/wh", options=short)
    assert path == root and other.read_bytes(f"{path}/a/b.txt") == b"hello"


def test_refused_retry_of_our_own_create_is_told_apart_by_reading_back(gcs_server, gcs_bucket):
    io, root = _io(gcs_server, gcs_bucket)
    path = f"{root}/snapshot-7"
    io.fs.pipe_file(path, b"ours", mode="create")  # the first try landed; its answer was lost
    assert conditional_create(io.fs, path, b"ours") is Publication.OURS_AFTER_RETRY
    assert conditional_create(io.fs, path, b"theirs") is Publication.TAKEN


def test_a_store_ignoring_the_precondition_is_refused_before_any_write(gcs_server, gcs_bucket):
    forget_probes()
    lax = S3FaultProxy(gcs_server.endpoint, ignore_conditional_writes=True).start()
    try:
        io, root = _io(gcs_server, gcs_bucket, lax.endpoint)
        with pytest.raises(UnsupportedFileSystemError, match="no conditional create"):
            io.try_write_atomic(f"{root}/t/snapshot/snapshot-1", b"x")
        assert not io.file_exists(f"{root}/t/snapshot/snapshot-1")
    finally:
        lax.stop()
        forget_probes()


def test_the_proxy_reads_gcs_requests():
    assert request_kind("GET", "/storage/v1/b/bk/o?delimiter=/&prefix=wh/") == "LIST"
    assert request_kind("GET", "/storage/v1/b/bk/o/wh%2Fx") == "HEAD"
    assert request_kind("GET", "/storage/v1/b/bk/o/wh%2Fx?alt=media") == "GET"
    assert request_kind("POST", "/upload/storage/v1/b/bk/o?uploadType=multipart") == "PUT"
    assert object_path("/storage/v1/b/bk/o/wh%2Fsnapshot-1") == "/storage/v1/b/bk/o/wh/snapshot-1"
    body, _ = _multipart("wh/db.db/t/snapshot/snapshot-2", b"{}")
    assert object_path("/upload/storage/v1/b/bk/o?uploadType=multipart", body).endswith("/o/wh/db.db/t/snapshot/snapshot-2")


def test_option_names_and_urls(tmp_path):
    where = parse_url("gs://data/wh/")
    assert (where.bucket, where.path) == ("data", "data/wh")
    assert parse_url("gcs://data").path == "data"
    keyfile = tmp_path / "sa.json"
    config = GcsConfig.from_options({"fs.gs.auth.service.account.json.keyfile": str(keyfile), "gs.project.id": "p"})
    assert config.token == str(keyfile) and config.project == "p"
    assert str(keyfile) not in repr(config)  # where the key lives is not logged either
    assert GcsConfig.from_options({}).token == "google_default"
    assert GcsConfig.from_options({"fs.gs.auth.type": "COMPUTE_ENGINE"}).token == "cloud"
    assert GcsConfig.from_options({"fs.gs.requester.pays.mode": "ENABLED"}).requester_pays
    assert GcsConfig.from_options({"fs.gs.http.read-timeout": "5000"}).read_timeout_seconds == 5.0
    assert GcsConfig.from_options({"fs.gs.storage.root.url": "localhost:4443/"}).endpoint == "https://localhost:4443"
    with pytest.raises(InvalidWarehouseError, match="names no bucket"):
        parse_url("gs:///wh")
    with pytest.raises(InvalidWarehouseError, match="not a bucket name"):
        parse_url("gs://Data/wh")
    with pytest.raises(InvalidWarehouseError, match="'ACCESS_TOKEN_PROVIDER' is not supported"):
        GcsConfig.from_options({"fs.gs.auth.type": "ACCESS_TOKEN_PROVIDER"})
    with pytest.raises(InvalidWarehouseError, match="names no key file"):
        GcsConfig.from_options({"fs.gs.auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE"})
    with pytest.raises(InvalidWarehouseError, match="CUSTOM"):
        GcsConfig.from_options({"fs.gs.requester.pays.mode": "CUSTOM"})
    with pytest.raises(InvalidWarehouseError, match="fs.gs.encryption.key"):
        GcsConfig.from_options({"gs.encryption.key": "k"})
    with pytest.raises(InvalidWarehouseError, match="fs.gs.http.read-timeout"):
        GcsConfig.from_options({"fs.gs.http.read-timeout": "soon"})


def test_gs_urls_are_dispatched_to_gcs():
    fs, path = filesystem_for_url("gs://bucket/wh", {"fs.gs.auth.type": "UNAUTHENTICATED"})
    assert path == "bucket/wh" and type(fs).__name__ == "PaimonGcsFileSystem"


def test_output_files_stream_large_files_and_store_small_ones_in_one_upload(gcs_server, gcs_bucket, proxy):
    io, root = _io(gcs_server, gcs_bucket, proxy.endpoint)
    block = io.fs.default_block_size
    data = bytes(range(256)) * (block // 256 * 2 + 7)  # two blocks and a bit
    proxy.reset_counts()
    out = io.open_output(f"{root}/big.bin")
    for i in range(0, len(data), 2**20):
        out.stream.write(data[i:i + 2**20])
    assert out.close() == len(data)
    assert proxy.counts()["PUT"] >= 3  # a resumable upload in blocks, never the whole file at once
    assert io.read_bytes(f"{root}/big.bin") == data
    proxy.reset_counts()
    small = io.open_output(f"{root}/small.bin")
    small.stream.write(b"abc")
    assert small.close() == 3 and proxy.counts() == {"PUT": 1}  # one multipart upload, as write_bytes
    assert io.read_bytes(f"{root}/small.bin") == b"abc"
    dropped = io.open_output(f"{root}/dropped.bin")
    dropped.stream.write(data)
    dropped.abort()
    assert not io.file_exists(f"{root}/dropped.bin")


def test_gcsfs_failures_reach_file_io_as_os_errors():
    """What the commit's rules rest on: a refused request is a PermissionError, any other failure an
    OSError (an unknown outcome, resolved by reading back), never gcsfs's or aiohttp's own types."""
    import aiohttp
    from gcsfs.retry import HttpError

    from impl.fs.gcs_objects import os_errors

    def raised(error: Exception) -> BaseException:
        with pytest.raises(OSError) as caught, os_errors():
            raise error
        return caught.value

    assert type(raised(HttpError({"code": 500, "message": "boom"}))) is OSError
    assert isinstance(raised(HttpError({"code": 403, "message": "no"})), PermissionError)
    assert isinstance(raised(OSError("Forbidden: bk/wh\nno list permission")), PermissionError)
    assert type(raised(aiohttp.ServerDisconnectedError())) is OSError
    assert isinstance(raised(FileExistsError("bk/k")), FileExistsError)  # a refused create stays itself


def test_the_probe_runs_once_per_store_and_bucket(gcs_server, gcs_bucket, proxy):
    forget_probes()
    first, root = _io(gcs_server, gcs_bucket, proxy.endpoint)
    proxy.reset_counts()
    assert first.try_write_atomic(f"{root}/a/snapshot-1", b"1")
    assert proxy.counts() == {"PUT": 3, "DELETE": 1}  # the probe's two creates and its delete, then ours
    second, _ = _io(gcs_server, gcs_bucket, proxy.endpoint)  # another FileIO (another table) on the store
    proxy.reset_counts()
    assert second.try_write_atomic(f"{root}/b/snapshot-1", b"1")
    assert proxy.counts() == {"PUT": 1}

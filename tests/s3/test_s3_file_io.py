"""FileIO on a real S3 endpoint: opening URLs with Paimon's option names, publication by
conditional PUT (lost responses, refused retries, stores that ignore the condition), request
counting, and clear errors for bad warehouses. The checks every object store shares (the URL
opened, one HEAD per existence check, a lost answer published once, ...) are
tests/stores/test_store_file_io.py."""

from __future__ import annotations

import time

import pytest

from fault_injection.s3_proxy import Fault, FaultRule, S3FaultProxy
from impl.errors import FileIOError, InvalidWarehouseError, UnsupportedFileSystemError
from impl.fs import FileIO
from impl.fs.object_store import S3Config, check_bucket_reachable, forget_probes


@pytest.fixture
def proxy(s3_server):
    p = S3FaultProxy(s3_server.endpoint).start()
    yield p
    p.stop()


def _io(s3_server, bucket, endpoint=None, **extra) -> tuple[FileIO, str]:
    return FileIO.for_path(f"s3://{bucket}/wh", options={**s3_server.options(endpoint), **extra})


def test_java_option_names_are_accepted(s3_server, s3_bucket):
    opts = {"s3.endpoint": s3_server.endpoint, "s3.access-key": "k", "s3.secret-key": "s", "s3.region": "us-east-1"}
    io, root = FileIO.for_path(f"s3://{s3_bucket}/wh", options=opts)
    io.write_bytes(f"{root}/x", b"1")
    assert io.read_bytes(f"{root}/x") == b"1"


def test_refused_publish_with_other_bytes_is_a_lost_race(s3_server, s3_bucket, proxy):
    io, root = _io(s3_server, s3_bucket, proxy.endpoint)
    io.write_bytes(f"{root}/snapshot/snapshot-3", b"theirs")
    io.ensure_atomic_create(f"{root}/snapshot")
    proxy.add_rule(FaultRule(Fault.LOST_RESPONSE, method="PUT", path=r"/snapshot/snapshot-3$"))
    assert io.try_write_atomic(f"{root}/snapshot/snapshot-3", b"mine") is False
    assert io.read_bytes(f"{root}/snapshot/snapshot-3") == b"theirs"


def test_throttling_is_retried(s3_server, s3_bucket, proxy):
    io, root = _io(s3_server, s3_bucket, proxy.endpoint)
    proxy.add_rule(FaultRule(Fault.SLOW_DOWN, method="PUT", times=2))
    io.write_bytes(f"{root}/f", b"data")
    assert io.read_bytes(f"{root}/f") == b"data"


def test_persistent_errors_surface_as_file_io_errors(s3_server, s3_bucket, proxy):
    io, root = _io(s3_server, s3_bucket, proxy.endpoint)
    io.ensure_atomic_create(f"{root}/snapshot")
    proxy.add_rule(FaultRule(Fault.INTERNAL_ERROR, method="PUT", times=None))
    with pytest.raises(FileIOError, match="snapshot-1"):
        io.try_write_atomic(f"{root}/snapshot/snapshot-1", b"x")


def test_store_ignoring_conditional_writes_is_refused_before_writing(s3_server, s3_bucket):
    forget_probes()
    lax = S3FaultProxy(s3_server.endpoint, ignore_conditional_writes=True).start()
    try:
        io, root = _io(s3_server, s3_bucket, lax.endpoint)
        with pytest.raises(UnsupportedFileSystemError, match="If-None-Match"):
            io.try_write_atomic(f"{root}/t/snapshot/snapshot-1", b"x")
        assert io.walk_files(f"{s3_bucket}") == []  # the probe key is gone, nothing else was written
    finally:
        lax.stop()
        forget_probes()


def test_url_without_bucket_is_refused(s3_server):
    with pytest.raises(InvalidWarehouseError, match="no bucket"):
        FileIO.for_path("s3:///wh", options=s3_server.options())


def test_half_given_credentials_are_refused():
    with pytest.raises(InvalidWarehouseError, match="both"):
        S3Config.from_options({"fs.s3.accessKeyId": "k"})


def test_missing_bucket_is_named(s3_server):
    io, root = FileIO.for_path("s3://no-such-bucket-here/wh", options=s3_server.options())
    with pytest.raises(InvalidWarehouseError, match="no-such-bucket-here"):
        check_bucket_reachable(io.fs, root)


def test_wrong_credentials_are_named(s3_server, s3_bucket):
    strict = S3FaultProxy(s3_server.endpoint, required_access_key="the-right-key").start()
    try:
        io, root = _io(s3_server, s3_bucket, strict.endpoint)
        with pytest.raises(InvalidWarehouseError, match="refused|accessKeyId"):
            check_bucket_reachable(io.fs, root)
    finally:
        strict.stop()


def test_unreachable_endpoint_fails_within_bounded_time():
    from simulation.embedded_s3 import free_port

    opts = {"fs.s3.endpoint": f"http://127.0.0.1:{free_port()}", "fs.s3.accessKeyId": "k",
            "fs.s3.accessKeySecret": "s", "fs.s3.connect-timeout": "1", "fs.s3.max-attempts": "2"}
    io, root = FileIO.for_path("s3://bucket/wh", options=opts)
    started = time.monotonic()
    with pytest.raises(InvalidWarehouseError, match="cannot reach"):
        check_bucket_reachable(io.fs, root)
    # bounded: a couple of attempts with 1 s timeouts, not botocore's minutes of defaults
    assert time.monotonic() - started < 60


def test_conditional_create_tells_the_three_outcomes_apart(s3_server, s3_bucket, proxy):
    from impl.fs.object_store import Publication, conditional_create

    io, root = _io(s3_server, s3_bucket, proxy.endpoint)
    assert conditional_create(io.fs, f"{root}/k1", b"a") is Publication.CREATED
    assert conditional_create(io.fs, f"{root}/k1", b"b") is Publication.TAKEN
    proxy.add_rule(FaultRule(Fault.LOST_RESPONSE, method="PUT", path=r"/k2$"))
    assert conditional_create(io.fs, f"{root}/k2", b"c") is Publication.OURS_AFTER_RETRY
    assert io.read_bytes(f"{root}/k1") == b"a" and io.read_bytes(f"{root}/k2") == b"c"


def test_streamed_output_on_s3_has_its_exact_size_and_abort_leaves_no_object(s3_server, s3_bucket):
    io, root = _io(s3_server, s3_bucket)
    path = f"{root}/t/bucket-0/data-0.parquet"
    out = io.open_output(path)
    for i in range(3):
        out.stream.write(bytes([i]) * 100_000)
    assert out.close() == 300_000 == io.file_size(path)
    assert io.read_bytes(path)[:1] == b"\x00"
    dropped = f"{root}/t/bucket-0/data-1.parquet"
    out = io.open_output(dropped)
    out.stream.write(b"x" * 100_000)
    out.abort()
    assert not io.file_exists(dropped)
    # the abandoned upload is closed: its __del__ would otherwise flush a discarded buffer
    # (s3fs raised AttributeError from the garbage collector)
    assert out.stream.closed
    out.stream.close()

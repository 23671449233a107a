"""FileIO on every object store (tests/_support/stores.py: OBJECT_STORES; S3 on moto, Azure Blob on
Azurite, GCS on fake-gcs-server): the URL opens with the store's option names, publication is a conditional create that
leaves only the snapshot, an existence check is one HEAD and never a LIST, and a create that landed
but whose answer was lost is published exactly once. What only one store has stays in its own module
(tests/s3/test_s3_file_io.py, tests/azure/test_azure_file_io.py,
tests/gcs/test_gcs_file_io.py)."""

from __future__ import annotations

import pytest

from fault_injection.s3_proxy import Fault, FaultRule
from impl.fs import FileIO


def _io(store, options=None) -> tuple[FileIO, str]:
    return FileIO.for_path(store.warehouse, options=options or store.options())


def test_for_path_opens_the_store_with_its_option_names(object_store):
    io, root = _io(object_store)
    assert root == f"{object_store.container}/wh" and io.is_object_store
    io.write_bytes(f"{root}/a/b.txt", b"hello")
    assert io.read_bytes(f"{root}/a/b.txt") == b"hello"
    assert io.exists(f"{root}/a/b.txt") and not io.exists(f"{root}/a/c.txt")
    assert io.file_exists(f"{root}/a/b.txt") and not io.file_exists(f"{root}/a")
    io.mkdirs(f"{root}/empty.db")
    assert io.exists(f"{root}/empty.db") and sorted(io.list_names(root)) == ["a", "empty.db"]
    assert io.list_names(f"{root}/empty.db") == []
    assert io.list_names(f"{root}/a") == ["b.txt"]
    with pytest.raises(FileNotFoundError):
        io.read_bytes(f"{root}/a/missing")


def test_publication_is_a_conditional_create_and_leaves_only_the_snapshot(object_store):
    io, root = _io(object_store)
    path = f"{root}/db.db/t/snapshot/snapshot-1"
    assert io.try_write_atomic(path, b"first") is True
    assert io.try_write_atomic(path, b"second") is False
    assert io.read_bytes(path) == b"first"
    assert io.list_names(f"{root}/db.db/t/snapshot") == ["snapshot-1"]  # no temp file, no probe object


def test_file_exists_is_one_head_never_a_list(object_store, store_proxy):
    io, root = _io(object_store, object_store.proxied_options(store_proxy))
    io.write_bytes(f"{root}/s/snapshot-1", b"x")
    store_proxy.reset_counts()
    before = io.requests.snapshot()
    assert io.file_exists(f"{root}/s/snapshot-1")
    assert not io.file_exists(f"{root}/s/snapshot-2")
    assert store_proxy.counts() == {"HEAD": 2}
    assert io.requests.since(before) == {"HEAD": 2}  # FileIO's own count agrees with the wire


def test_lost_answer_to_a_landed_publication_is_ours_exactly_once(object_store, store_proxy):
    """The create lands, its answer is lost, the client retries and the store refuses the retry:
    read back, the bytes are ours, so it is published, once."""
    io, root = _io(object_store, object_store.proxied_options(store_proxy))
    io.ensure_atomic_create(f"{root}/snapshot")  # the probe first, so the rule hits the publication
    store_proxy.add_rule(FaultRule(Fault.LOST_RESPONSE, method="PUT", path=r"/snapshot/snapshot-7$"))
    store_proxy.reset_counts()
    assert io.try_write_atomic(f"{root}/snapshot/snapshot-7", b"mine") is True
    assert store_proxy.counts().get("PUT", 0) >= 2  # the lost create and the client's refused retry
    assert io.read_bytes(f"{root}/snapshot/snapshot-7") == b"mine"
    assert io.try_write_atomic(f"{root}/snapshot/snapshot-7", b"other") is False

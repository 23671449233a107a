"""Tables on the S3 server: the catalog with Paimon's storage options, commits through
object-store faults injected on the wire, request economy, and bad warehouses.

Faults come from the S3 fault proxy between client and server (fault_injection.s3_proxy):
a PUT that lands but whose answer is lost, 503 SlowDown, a 412 on publication, a store that
ignores If-None-Match, and a store that refuses the credentials. The checks every object store
shares (no LIST once warm, commits when every LIST is refused) are tests/stores/test_store_table.py.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import impl
from fault_injection.s3_proxy import Fault, FaultRule, S3FaultProxy
from impl.errors import CommitOutcomeUnknownError, InvalidWarehouseError, UnsupportedFileSystemError
from impl.fs.object_store import forget_probes

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
SNAPSHOT_PUT = r"/snapshot/snapshot-\d+$"


@pytest.fixture
def proxy(s3_server):
    p = S3FaultProxy(s3_server.endpoint).start()
    yield p
    p.stop()


def _catalog(s3_server, bucket, endpoint=None, **extra) -> impl.Catalog:
    cat = impl.Catalog(f"s3://{bucket}/warehouse", options={**s3_server.options(endpoint), **extra})
    cat.create_database("db", ignore_if_exists=True)
    return cat


def _table(cat, **options):
    return cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                            options={"bucket": "2", **options})


def _commit(table, rows: dict, identifier: int | None = None, user: str | None = None):
    builder = table.new_stream_write_builder() if identifier is not None else table.new_batch_write_builder()
    if user is not None:
        builder = builder.with_commit_user(user)
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table(rows, schema=SCHEMA))
    if identifier is None:
        return commit.commit(write.prepare_commit())
    return write, commit, write.prepare_commit(identifier)


def _read(table) -> list[dict]:
    rb = table.new_read_builder()
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: (r["dt"], r["id"]))


def _rows(ids, v="x", dt="2024-01-01"):
    return {"dt": [dt] * len(ids), "id": list(ids), "v": [v] * len(ids)}


def test_catalog_on_s3_writes_compacts_expires_and_reads(s3_server, s3_bucket):
    cat = _catalog(s3_server, s3_bucket)
    table = _table(cat, **{"num-sorted-run.compaction-trigger": "2", "snapshot.num-retained.min": "1",
                           "snapshot.num-retained.max": "3"})
    for i in range(6):
        _commit(table, _rows(range(i * 10, i * 10 + 10), v=f"v{i}"))
    _commit(table, _rows([0, 1], v="updated"))
    rows = _read(table)
    assert len(rows) == 60 and rows[0]["v"] == "updated" and rows[2]["v"] == "v0"
    table.expire_snapshots()
    assert len(table.snapshot_manager().snapshot_ids()) <= 3
    assert _read(cat.get_table("db.t")) == rows
    assert cat.list_databases() == ["db"] and cat.list_tables("db") == ["t"]


def test_lost_response_on_publication_commits_exactly_once(s3_server, s3_bucket, proxy):
    table = _table(_catalog(s3_server, s3_bucket, proxy.endpoint))
    _commit(table, _rows([1]))
    proxy.add_rule(FaultRule(Fault.LOST_RESPONSE, method="PUT", path=SNAPSHOT_PUT))
    stats = _commit(table, _rows([2]))
    assert stats.snapshot_ids == [2]
    assert table.snapshot_manager().snapshot_ids() == [1, 2]
    assert [r["id"] for r in _read(table)] == [1, 2]


def test_412_on_publication_is_a_lost_race_and_retried(s3_server, s3_bucket, proxy):
    table = _table(_catalog(s3_server, s3_bucket, proxy.endpoint))
    _commit(table, _rows([1]))
    proxy.add_rule(FaultRule(Fault.PRECONDITION_FAILED, method="PUT", path=SNAPSHOT_PUT))
    stats = _commit(table, _rows([2]))
    assert stats.lost_races == 1 and stats.snapshot_ids == [2]
    assert [r["id"] for r in _read(table)] == [1, 2]


def test_throttling_on_every_kind_of_write_is_absorbed(s3_server, s3_bucket, proxy):
    table = _table(_catalog(s3_server, s3_bucket, proxy.endpoint))
    proxy.add_rule(FaultRule(Fault.SLOW_DOWN, method="PUT", times=3))
    proxy.add_rule(FaultRule(Fault.SLOW_DOWN, method="GET", times=2))
    _commit(table, _rows([1, 2, 3]))
    assert [r["id"] for r in _read(table)] == [1, 2, 3]


def test_unknown_outcome_then_repeat_completes_once(s3_server, s3_bucket, proxy):
    """The store fails every publication attempt (500s after it landed the first): the outcome
    is unknown; repeating the same commit on the same committer completes it exactly once."""
    table = _table(_catalog(s3_server, s3_bucket, proxy.endpoint, **{"fs.s3.max-attempts": "1"}),
                   **{"commit.max-retries": "2", "commit.min-retry-wait": "1 ms", "commit.max-retry-wait": "5 ms"})
    write, commit, messages = _commit(table, _rows([1, 2]), identifier=1, user="job")
    lost = proxy.add_rule(FaultRule(Fault.LOST_RESPONSE, method="PUT", path=SNAPSHOT_PUT))
    for method in ("GET", "HEAD"):
        proxy.add_rule(FaultRule(Fault.INTERNAL_ERROR, method=method, path=r"/snapshot/", times=None, after=lost))
    with pytest.raises(CommitOutcomeUnknownError):
        commit.commit(messages, 1)
    proxy.clear_rules()
    commit.commit(messages, 1)  # the repeat finds its snapshot and publishes nothing new
    ids = table.snapshot_manager().snapshot_ids()
    assert ids == [1]
    assert [r["id"] for r in _read(table)] == [1, 2]
    # and a fresh committer's recovery agrees: nothing left to commit
    fresh = table.new_stream_write_builder().with_commit_user("job").new_commit()
    assert fresh.filter_and_commit({1: messages}) == []
    assert table.snapshot_manager().snapshot_ids() == [1]


def test_store_without_conditional_writes_is_refused_before_any_file(s3_server, s3_bucket):
    forget_probes()
    lax = S3FaultProxy(s3_server.endpoint, ignore_conditional_writes=True).start()
    try:
        # creating a table publishes schema-0 with a create-if-absent: refused, nothing written
        lax_catalog = _catalog(s3_server, s3_bucket, lax.endpoint)
        with pytest.raises(UnsupportedFileSystemError, match="If-None-Match"):
            _table(lax_catalog)
        assert not lax_catalog.table_exists("db.t")
        assert [f.path for f in lax_catalog.file_io.walk_files(lax_catalog.warehouse)] == []
        # a table made through a proper store, then committed to through the lax one
        _table(_catalog(s3_server, s3_bucket))
        table = lax_catalog.get_table("db.t")
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.table(_rows([1]), schema=SCHEMA))
        messages = write.prepare_commit()
        before = {f.path for f in table.file_io.walk_files(table.path)}
        with pytest.raises(UnsupportedFileSystemError, match="If-None-Match"):
            commit.commit(messages)
        assert {f.path for f in table.file_io.walk_files(table.path)} <= before  # no manifest, list or snapshot
        assert table.snapshot_manager().latest_snapshot_id() is None
    finally:
        lax.stop()
        forget_probes()


def test_bad_warehouses_are_named(s3_server, s3_bucket):
    with pytest.raises(InvalidWarehouseError, match="no bucket"):
        impl.Catalog("s3:///warehouse", options=s3_server.options())
    with pytest.raises(InvalidWarehouseError, match="does not exist"):
        impl.Catalog("s3://no-such-bucket-0/warehouse", options=s3_server.options())
    strict = S3FaultProxy(s3_server.endpoint, required_access_key="another-key").start()
    try:
        with pytest.raises(InvalidWarehouseError, match="refused"):
            impl.Catalog(f"s3://{s3_bucket}/warehouse", options=s3_server.options(strict.endpoint))
    finally:
        strict.stop()

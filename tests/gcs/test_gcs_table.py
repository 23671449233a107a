"""Tables on Google Cloud Storage (fake-gcs-server): the catalog with the Hadoop GCS connector's
option names, a primary-key table written, updated, compacted and read, an append table, and the
commit path's requests counted on the wire (no LIST once warm, and a commit completes when the
store refuses every LIST)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import impl
from fault_injection.s3_proxy import Fault, FaultRule, S3FaultProxy
from impl.errors import InvalidWarehouseError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def proxy(gcs_server):
    p = S3FaultProxy(gcs_server.endpoint).start()
    yield p
    p.stop()


def _catalog(gcs_server, where, endpoint=None):
    cat = impl.Catalog(gcs_server.url(where, "warehouse"), options=gcs_server.options(endpoint))
    cat.create_database("db", ignore_if_exists=True)
    return cat


def _table(gcs_server, where, endpoint=None, **options):
    return _catalog(gcs_server, where, endpoint).create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2", **options},
        ignore_if_exists=True)


def _commit(table, ids, v="x") -> None:
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table({"dt": ["2024-01-01"] * len(ids), "id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA))
    commit.commit(write.prepare_commit())


def _read(table) -> list[tuple]:
    rb = table.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted((r["id"], r["v"]) for r in rows)


def test_primary_key_table_round_trip_with_compaction(gcs_server, gcs_bucket):
    table = _table(gcs_server, gcs_bucket)
    _commit(table, [1, 2, 3])
    _commit(table, [2, 4], v="y")
    _commit(table, [3], v="z")
    assert _read(table) == [(1, "x"), (2, "y"), (3, "z"), (4, "y")]
    table.compact(full=True)
    sm = table.snapshot_manager()
    assert sm.snapshot(sm.latest_snapshot_id()).commit_kind == "COMPACT"
    assert _read(table) == [(1, "x"), (2, "y"), (3, "z"), (4, "y")]
    # a second catalog on the gcs:// spelling sees the same table
    again = impl.Catalog(f"gcs://{gcs_bucket}/warehouse", options=gcs_server.options()).get_table("db.t")
    assert _read(again) == _read(table) and again.snapshot_manager().snapshot_ids() == sm.snapshot_ids()


def test_append_table_round_trip(gcs_server, gcs_bucket):
    cat = _catalog(gcs_server, gcs_bucket)
    table = cat.create_table("db.a", schema=SCHEMA, partition_keys=["dt"])
    _commit(table, [1, 2])
    _commit(table, [2, 3], v="y")
    assert _read(table) == [(1, "x"), (2, "x"), (2, "y"), (3, "y")]
    assert cat.list_tables("db") == ["a"]


def test_warm_append_commit_makes_constant_requests_and_no_list(gcs_server, gcs_bucket, proxy):
    table = _table(gcs_server, gcs_bucket, proxy.endpoint, **{"write-only": "true", "bucket": "1"})
    builder = table.new_stream_write_builder().with_commit_user("w")
    write, commit = builder.new_write(), builder.new_commit()
    per_commit = []
    for i in range(12):
        write.write_arrow(pa.table({"dt": ["d"], "id": [i], "v": ["x"]}, schema=SCHEMA))
        messages = write.prepare_commit(i)
        proxy.reset_counts()
        commit.commit(messages, i)
        per_commit.append(proxy.counts())
    warm = per_commit[4:]
    assert all(c.get("LIST", 0) == 0 for c in warm), warm
    totals = [sum(c.values()) for c in warm]
    assert sorted(totals)[len(totals) // 2] == totals[0] and max(totals) <= totals[0] + 12, totals
    print(f"gcs warm append commit requests: {warm[0]} (total {totals[0]})")


def test_committers_need_no_list_permission(gcs_server, gcs_bucket, proxy):
    table = _table(gcs_server, gcs_bucket, proxy.endpoint)
    proxy.add_rule(FaultRule(Fault.ACCESS_DENIED, method="LIST", times=None))
    proxy.reset_counts()
    for i in range(3):
        _commit(table, [i])
    assert proxy.counts().get("LIST", 0) >= 1  # the first commit of the new table did try to list
    proxy.clear_rules()
    assert _read(table) == [(0, "x"), (1, "x"), (2, "x")]
    assert table.snapshot_manager().snapshot_ids() == [1, 2, 3]


def test_bad_warehouses_are_named(gcs_server):
    with pytest.raises(InvalidWarehouseError, match="bucket 'no-such-bucket' does not exist"):
        impl.Catalog(gcs_server.url("no-such-bucket"), options=gcs_server.options())

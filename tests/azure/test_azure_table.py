"""Tables on Azure Blob (Azurite): the catalog with Hadoop's option names, a primary-key table
written, updated and read, and the commit path's requests counted on the wire (no LIST once warm,
and a commit completes when the store refuses every LIST)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from azurite import ACCOUNT

import impl
from fault_injection.s3_proxy import Fault, FaultRule, S3FaultProxy
from impl.errors import InvalidWarehouseError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def proxy(azure_server):
    p = S3FaultProxy(azure_server.endpoint.rsplit("/", 1)[0]).start()
    yield p
    p.stop()


def _table(azure_server, container, endpoint=None, **options):
    cat = impl.Catalog(azure_server.url(container, "warehouse"), options=azure_server.options(endpoint))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                            options={"bucket": "2", **options}, ignore_if_exists=True)


def _commit(table, ids, v="x") -> None:
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(pa.table({"dt": ["2024-01-01"] * len(ids), "id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA))
    commit.commit(write.prepare_commit())


def _read(table) -> list[tuple]:
    rb = table.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted((r["id"], r["v"]) for r in rows)


def test_primary_key_table_round_trip(azure_server, azure_container):
    table = _table(azure_server, azure_container)
    _commit(table, [1, 2, 3])
    _commit(table, [2, 4], v="y")
    assert _read(table) == [(1, "x"), (2, "y"), (3, "x"), (4, "y")]
    # a second catalog on the short URL spelling sees the same table
    again = impl.Catalog(f"abfs://{azure_container}/warehouse", options=azure_server.options()).get_table("db.t")
    assert _read(again) == _read(table) and again.snapshot_manager().snapshot_ids() == [1, 2]


def test_warm_append_commit_makes_constant_requests_and_no_list(azure_server, azure_container, proxy):
    table = _table(azure_server, azure_container, f"{proxy.endpoint}/{ACCOUNT}", **{"write-only": "true", "bucket": "1"})
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
    print(f"azure warm append commit requests: {warm[0]} (total {totals[0]})")


def test_committers_need_no_list_permission(azure_server, azure_container, proxy):
    table = _table(azure_server, azure_container, f"{proxy.endpoint}/{ACCOUNT}")
    proxy.add_rule(FaultRule(Fault.ACCESS_DENIED, method="LIST", times=None))
    proxy.reset_counts()
    for i in range(3):
        _commit(table, [i])
    assert proxy.counts().get("LIST", 0) >= 1  # the first commit of the new table did try to list
    proxy.clear_rules()
    assert _read(table) == [(0, "x"), (1, "x"), (2, "x")]
    assert table.snapshot_manager().snapshot_ids() == [1, 2, 3]


def test_bad_warehouses_are_named(azure_server, azure_container):
    with pytest.raises(InvalidWarehouseError, match="container 'no-such-container' does not exist"):
        impl.Catalog(azure_server.url("no-such-container"), options=azure_server.options())
    wrong_key = {**azure_server.options(), f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net": "d3Jvbmc="}
    with pytest.raises(InvalidWarehouseError, match="was refused: check fs.azure.account.key") as refused:
        impl.Catalog(azure_server.url(azure_container), options=wrong_key)
    assert "d3Jvbmc=" not in str(refused.value)  # the key is never in a message

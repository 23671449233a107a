"""Schema evolution on the S3 server: schema files published by conditional PUT (a 412 is a lost
race and the alter is rebuilt on the latest schema), and a commit prepared under the old
schema finds the new one with HEAD requests only (no LIST permission on the commit path)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import impl
from fault_injection.s3_proxy import Fault, FaultRule, S3FaultProxy
from impl import SchemaChange as SC

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int32())])


@pytest.fixture
def proxy(s3_server):
    p = S3FaultProxy(s3_server.endpoint).start()
    yield p
    p.stop()


def test_alter_on_s3_then_commit_prepared_before_it(s3_server, s3_bucket, proxy):
    cat = impl.Catalog(f"s3://{s3_bucket}/warehouse", options=s3_server.options(proxy.endpoint))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": pa.array([10], pa.int32())}))
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": [2], "v": pa.array([20], pa.int32())}))
    messages = w.prepare_commit()

    lost = FaultRule(Fault.PRECONDITION_FAILED, method="PUT", path=r"/schema/schema-1$")
    proxy.add_rule(lost)
    cat.alter_table("db.t", [SC.rename_column("v", "w"), SC.update_column_type("w", pa.int64())])
    assert lost.fired == 1  # the first PUT of schema-1 lost "a race"; the alter was rebuilt and landed
    t1 = cat.get_table("db.t")
    assert t1.schema.id == 1 and t1.schema_manager.list_ids() == [0, 1]

    proxy.add_rule(FaultRule(Fault.ACCESS_DENIED, method="LIST", times=None))
    proxy.reset_counts()
    c.commit(messages)
    w.close()
    c.close()
    assert proxy.counts().get("LIST", 0) == 0
    assert t1.latest_snapshot().schema_id == 1
    proxy.clear_rules()
    assert sorted(cat.get_table("db.t").to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "w": 10}, {"id": 2, "w": 20}]

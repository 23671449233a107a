"""Tables on every object store (tests/_support/stores.py: OBJECT_STORES) with the commit path's
requests counted on the wire by the fault proxy: no LIST once warm and a constant count per commit,
and commits that complete when the store refuses every LIST (no list permission). What only one
store has stays in its own module (tests/s3/test_s3_table.py, tests/azure/test_azure_table.py,
tests/gcs/test_gcs_table.py)."""

from __future__ import annotations

from store_tables import SCHEMA, commit_rows, read_rows, rows

import impl
from fault_injection.s3_proxy import Fault, FaultRule


def _table(store, options, **table_options):
    cat = impl.Catalog(store.warehouse, options=options)
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                            options={"bucket": "2", **table_options})


def test_warm_append_commit_makes_constant_requests_and_no_list(object_store, store_proxy):
    table = _table(object_store, object_store.proxied_options(store_proxy), **{"write-only": "true", "bucket": "1"})
    builder = table.new_stream_write_builder().with_commit_user("w")
    write, commit = builder.new_write(), builder.new_commit()
    made, cold = object_store.kind.warm_commits
    per_commit = []
    for i in range(made):
        write.write_arrow(rows([i]))
        messages = write.prepare_commit(i)
        store_proxy.reset_counts()
        commit.commit(messages, i)
        per_commit.append(store_proxy.counts())
    warm = per_commit[cold:]
    assert all(c.get("LIST", 0) == 0 for c in warm), warm
    totals = [sum(c.values()) for c in warm]
    # constant, except the occasional minor manifest merge (one more PUT and GETs of the small manifests)
    assert sorted(totals)[len(totals) // 2] == totals[0] and max(totals) <= totals[0] + 12, totals
    if object_store.kind.warm_floor_is_first:
        assert min(totals) == totals[0], totals
    print(f"{object_store.name} warm append commit requests: {warm[0]} (total {totals[0]})")


def test_committers_need_no_list_permission(object_store, store_proxy):
    """A store that refuses every LIST (no list permission): tables are created, the first commit
    of a new table and every later one go through, and reads work (they list nothing)."""
    table = _table(object_store, object_store.proxied_options(store_proxy))
    store_proxy.add_rule(FaultRule(Fault.ACCESS_DENIED, method="LIST", times=None))
    store_proxy.reset_counts()
    for i in range(3):
        commit_rows(table, [i])
    assert read_rows(table) == [(0, "x"), (1, "x"), (2, "x")]
    assert store_proxy.counts().get("LIST", 0) >= 1  # the first commit of the new table did try to list
    store_proxy.clear_rules()
    assert table.snapshot_manager().snapshot_ids() == [1, 2, 3]

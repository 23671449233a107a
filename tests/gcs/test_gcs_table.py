"""Tables on Google Cloud Storage (fake-gcs-server): the catalog with the Hadoop GCS connector's
option names, a primary-key table written, updated, compacted and read (also through the gcs://
spelling), an append table, and a missing bucket named. The commit path's requests counted on the
wire (no LIST once warm, commits without list permission) run on GCS in
tests/stores/test_store_table.py, racing processes and SIGKILL in tests/stores/test_store_concurrency.py
and the conformance checks in tests/stores/test_store_conformance.py."""

from __future__ import annotations

import pytest
from store_tables import SCHEMA, commit_rows, read_rows

import impl
from impl.errors import InvalidWarehouseError


def _catalog(gcs_server, where):
    cat = impl.Catalog(gcs_server.url(where, "warehouse"), options=gcs_server.options())
    cat.create_database("db", ignore_if_exists=True)
    return cat


def _table(gcs_server, where, **options):
    return _catalog(gcs_server, where).create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2", **options},
        ignore_if_exists=True)


def test_primary_key_table_round_trip_with_compaction(gcs_server, gcs_bucket):
    table = _table(gcs_server, gcs_bucket)
    commit_rows(table, [1, 2, 3])
    commit_rows(table, [2, 4], v="y")
    commit_rows(table, [3], v="z")
    assert read_rows(table) == [(1, "x"), (2, "y"), (3, "z"), (4, "y")]
    table.compact(full=True)
    sm = table.snapshot_manager()
    assert sm.snapshot(sm.latest_snapshot_id()).commit_kind == "COMPACT"
    assert read_rows(table) == [(1, "x"), (2, "y"), (3, "z"), (4, "y")]
    # a second catalog on the gcs:// spelling sees the same table
    again = impl.Catalog(f"gcs://{gcs_bucket}/warehouse", options=gcs_server.options()).get_table("db.t")
    assert read_rows(again) == read_rows(table) and again.snapshot_manager().snapshot_ids() == sm.snapshot_ids()


def test_append_table_round_trip(gcs_server, gcs_bucket):
    cat = _catalog(gcs_server, gcs_bucket)
    table = cat.create_table("db.a", schema=SCHEMA, partition_keys=["dt"])
    commit_rows(table, [1, 2])
    commit_rows(table, [2, 3], v="y")
    assert read_rows(table) == [(1, "x"), (2, "x"), (2, "y"), (3, "y")]
    assert cat.list_tables("db") == ["a"]


def test_bad_warehouses_are_named(gcs_server):
    with pytest.raises(InvalidWarehouseError, match="bucket 'no-such-bucket' does not exist"):
        impl.Catalog(gcs_server.url("no-such-bucket"), options=gcs_server.options())

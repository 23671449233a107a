"""Tables on Azure Blob (Azurite): the catalog with Hadoop's option names, a primary-key table
written, updated and read on both URL spellings, and bad warehouses named. The checks every object
store shares (requests counted on the wire: no LIST once warm, commits when every LIST is refused)
are tests/stores/test_store_table.py."""

from __future__ import annotations

import pytest
from azurite import ACCOUNT
from store_tables import SCHEMA, commit_rows, read_rows

import impl
from impl.errors import InvalidWarehouseError


def _table(azure_server, container, **options):
    cat = impl.Catalog(azure_server.url(container, "warehouse"), options=azure_server.options())
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                            options={"bucket": "2", **options}, ignore_if_exists=True)


def test_primary_key_table_round_trip(azure_server, azure_container):
    table = _table(azure_server, azure_container)
    commit_rows(table, [1, 2, 3])
    commit_rows(table, [2, 4], v="y")
    assert read_rows(table) == [(1, "x"), (2, "y"), (3, "x"), (4, "y")]
    # a second catalog on the short URL spelling sees the same table
    again = impl.Catalog(f"abfs://{azure_container}/warehouse", options=azure_server.options()).get_table("db.t")
    assert read_rows(again) == read_rows(table) and again.snapshot_manager().snapshot_ids() == [1, 2]


def test_bad_warehouses_are_named(azure_server, azure_container):
    with pytest.raises(InvalidWarehouseError, match="container 'no-such-container' does not exist"):
        impl.Catalog(azure_server.url("no-such-container"), options=azure_server.options())
    wrong_key = {**azure_server.options(), f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net": "d3Jvbmc="}
    with pytest.raises(InvalidWarehouseError, match="was refused: check fs.azure.account.key") as refused:
        impl.Catalog(azure_server.url(azure_container), options=wrong_key)
    assert "d3Jvbmc=" not in str(refused.value)  # the key is never in a message

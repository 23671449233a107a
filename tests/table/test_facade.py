"""The table facade keeps the user's API; internals are reached through ``table.core``."""

from __future__ import annotations

import pyarrow as pa

from impl.table.table import FileStoreTable

# TableCore's parts FileStoreTable forwarded before issue 47 (pypaimon has no name for them)
INTERNALS = ("paths", "env", "manifest_list", "manifest_file", "partition_cache", "merge_tree_options",
             "dynamic_options")


def test_internals_are_reached_through_the_core_not_the_table(local_catalog):
    t = local_catalog.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    for name in INTERNALS:
        assert not hasattr(FileStoreTable, name), name
        assert name in dir(t.core), name
    assert t.core.paths.table_path == t.path.rstrip("/")
    # the user's API stays (pypaimon's names among it)
    for name in ("file_io", "identifier", "options", "schema", "primary_keys", "partition_keys",
                 "is_primary_key_table", "schema_manager", "snapshot_manager", "tag_manager", "branch_manager",
                 "new_read_builder", "new_batch_write_builder", "new_stream_write_builder", "copy", "create_tag",
                 "rollback_to", "list_tags", "list_branches"):
        assert hasattr(t, name), name

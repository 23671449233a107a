"""pypaimon 2.1.0's public table methods against impl's ``FileStoreTable``.

pypaimon exposes its table's accessors as methods (``table.snapshot_manager()``,
``table.tag_manager()``, ``table.bucket_mode()`` ...); a pypaimon script run against impl (its
import changed to ``impl.pypaimon``) calls them so. The list of pypaimon's methods is taken
with ``inspect`` in pypaimon's own venv; each is a method of impl's table too, or is named in
``NOT_OFFERED`` with the reason (so a new pypaimon method, or one impl gains, shows here).
"""

from __future__ import annotations

import inspect

import pyarrow as pa
import pytest
from pypaimon_env import PYPAIMON_VERSION, run_pypaimon

import impl
from impl.table.table import FileStoreTable

# pypaimon's public FileStoreTable methods impl's table does not offer as methods, and why.
NOT_OFFERED = {
    "schema": "impl's table.schema is a property (the impl.Table protocol every table and system table shares); "
              "pypaimon's table.schema() is table.schema here",
    "changelog_manager": "impl keeps changelog files inside snapshots; it has no separate changelog lifecycle",
    "consumer_manager": "consumers (streaming read progress kept in the table) are not implemented",
    "copy_without_time_travel": "not implemented: copy() with the scan.* options removed does the same",
    "create_global_index": "global indexes are not implemented",
    "drop_global_index": "global indexes are not implemented",
    "create_row_key_extractor": "a pypaimon write internal; impl's writers route rows themselves",
    "from_path": "open a table through impl.Catalog(warehouse).get_table('db.t') (or impl.polars.scan_table(path))",
    "new_batch_vector_search_builder": "vector search is not implemented",
    "new_vector_search_builder": "vector search is not implemented",
    "new_full_text_search_builder": "full-text search is not implemented",
    "new_hybrid_search_builder": "hybrid search is not implemented",
    "new_postpone_fixed_bucket_write_builder": "a pypaimon compaction internal; impl compacts postpone buckets "
                                               "with table.compact()",
    "new_snapshot_commit": "a pypaimon commit internal; impl's commits come from new_batch_write_builder()",
    "new_stream_read_builder": "streaming reads go through Spark (spark.readStream.format('paimon_py'))",
    "path_factory": "a pypaimon internal; impl's table.paths names the table's files",
    "rename_branch": "renaming branches is not implemented",
    "rename_tag": "renaming tags is not implemented",
    "replace_tag": "replacing tags is not implemented (delete_tag, then create_tag)",
    "rollback_helper": "a pypaimon internal; table.rollback_to(snapshot_id_or_tag) rolls back",
    "rollback_to_timestamp": "not implemented: rollback_to takes a snapshot id or a tag",
}

PYPAIMON_MEMBERS = """
import inspect
from pypaimon.table.file_store_table import FileStoreTable
result = {name: ("property" if isinstance(inspect.getattr_static(FileStoreTable, name), property) else "method")
          for name, member in inspect.getmembers(FileStoreTable)
          if not name.startswith("_") and (callable(member) or isinstance(member, property))}
"""


def impl_methods() -> set[str]:
    """impl's table's public methods (functions, not properties)."""
    return {name for name in dir(FileStoreTable) if not name.startswith("_")
            and inspect.isfunction(inspect.getattr_static(FileStoreTable, name))}


@pytest.fixture(scope="module")
def pypaimon_members() -> dict[str, str]:
    try:
        members = run_pypaimon(PYPAIMON_MEMBERS)
    except Exception as e:
        pytest.skip(f"pypaimon {PYPAIMON_VERSION} cannot be run here: {e}")
    assert isinstance(members, dict) and members
    return members


def test_every_pypaimon_table_method_is_a_method_of_impls_table(pypaimon_members):
    methods = {n for n, kind in pypaimon_members.items() if kind == "method"}
    missing = sorted(methods - impl_methods() - NOT_OFFERED.keys())
    assert missing == [], f"pypaimon {PYPAIMON_VERSION} table methods impl's table lacks (or has as properties)"
    assert sorted(NOT_OFFERED.keys() - methods) == []  # every reason names a pypaimon method
    assert sorted(NOT_OFFERED.keys() & impl_methods()) == []  # ... that impl does not offer


def test_pypaimon_accessors_are_called_as_methods(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
                         primary_keys=["id"], options={"bucket": "1"}, comment="orders")
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    t.write_arrow(pa.table({"id": [2], "v": ["b"]}))
    t.create_tag("v1", 1)
    t.create_branch("dev", tag="v1")
    # what a pypaimon 2.1.0 script writes
    sm = t.snapshot_manager()
    assert sm.get_latest_snapshot().id == 2 and sm.get_snapshot_by_id(1).id == 1
    assert sm.get_snapshot_by_id(9) is None
    assert [s.id for s in sm.list_snapshots()] == [1, 2] and sm.try_get_earliest_snapshot().id == 1
    assert t.tag_manager().tag_exists("v1") and not t.tag_manager().tag_exists("v2")
    assert t.branch_manager().branch_exists("dev")
    assert t.bucket_mode().name == "HASH_FIXED"
    assert t.current_branch() == "main" and t.copy({"branch": "dev"}).current_branch() == "dev"
    assert t.comment() == "orders"

"""The JDBC catalog shared with Paimon Java's JdbcCatalog (through the harness, sqlite-jdbc) and
pypaimon 2.1.0's JdbcCatalog, both directions: what one creates and writes, the others list and
read with the same rows."""

from __future__ import annotations

import pyarrow as pa
import pytest
from paimon_java import JavaServer, harness_classpath, tools_missing
from pypaimon_env import PYPAIMON_VERSION, PeerUnavailable, run_pypaimon

import impl

pytestmark = pytest.mark.paimon_java

ROWS = [[1, "a"], [2, "b"], [3, None]]


@pytest.fixture(scope="module")
def java():
    if tools_missing():
        pytest.skip(f"Paimon Java harness needs a JDK and Maven: {tools_missing()}")
    with JavaServer(harness_classpath()) as server:
        yield server


def pypaimon(script: str, **params):
    try:
        return run_pypaimon(script, **params)
    except PeerUnavailable as e:
        pytest.skip(f"pypaimon {PYPAIMON_VERSION} cannot be installed here: {e}")


PYPAIMON_SIDE = """
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
cat = CatalogFactory.create({"metastore": "jdbc", "uri": params["uri"], "warehouse": params["warehouse"]})
listed = {db: sorted(cat.list_tables(db)) for db in cat.list_databases()}
t = cat.get_table(params["read"])
rb = t.new_read_builder()
read = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
cat.create_database("py", True)
schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
cat.create_table("py.t", Schema.from_pyarrow_schema(schema, primary_keys=["id"], options={"bucket": "1"}), False)
wb = cat.get_table("py.t").new_batch_write_builder()
w = wb.new_write()
w.write_arrow(pa.Table.from_pylist([{"id": r[0], "name": r[1]} for r in params["rows"]], schema=schema))
wb.new_commit().commit(w.prepare_commit())
result = {"listed": listed, "read": sorted([r["id"], r["name"]] for r in read)}
"""


def test_impl_java_and_pypaimon_share_one_sqlite_catalog(java, tmp_path):
    uri, wh = f"jdbc:sqlite:{tmp_path / 'cat.db'}", str(tmp_path / "wh")
    jdbc = dict(op="jdbc", uri=uri, warehouse=wh)
    cat = impl.Catalog(uri, warehouse=wh)
    cat.create_database("imp")
    t = cat.create_table("imp.t", pa.schema([("id", pa.int64()), ("name", pa.string())]), primary_keys=["id"],
                         options={"bucket": "1"})
    builder = t.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(pa.table({"id": [r[0] for r in ROWS], "name": [r[1] for r in ROWS]}))
    builder.new_commit().commit(writer.prepare_commit())

    # Java lists and reads impl's table, then creates and writes its own
    assert java.call(action="list", **jdbc) == {"imp": ["t"]}
    assert sorted(java.call(action="read", table="imp.t", **jdbc)) == ROWS
    java.call(action="create_table", table="jv.t", fields=[["id", "BIGINT"], ["name", "STRING"]],
              primary_keys=["id"], table_options={"bucket": "1"}, **jdbc)
    java.call(action="write", table="jv.t", rows=[[10, "j"], [11, "k"]], **jdbc)

    # pypaimon lists both, reads impl's, creates and writes its own
    out = pypaimon(PYPAIMON_SIDE, uri=uri, warehouse=wh, read="imp.t", rows=[[20, "p"], [21, None]])
    assert out == {"listed": {"imp": ["t"], "jv": ["t"]}, "read": ROWS}

    # impl lists and reads Java's and pypaimon's tables
    assert cat.list_databases() == ["imp", "jv", "py"]
    assert sorted(cat.get_table("jv.t").to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 10, "name": "j"}, {"id": 11, "name": "k"}]
    assert sorted(cat.get_table("py.t").to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 20, "name": "p"}, {"id": 21, "name": None}]
    # and Java sees pypaimon's; a rename and a drop by impl are seen by Java
    assert sorted(java.call(action="read", table="py.t", **jdbc)) == [[20, "p"], [21, None]]
    cat.rename_table("imp.t", "imp.renamed")
    cat.drop_table("jv.t")
    cat.alter_table("imp.renamed", [impl.SchemaChange.add_column("qty", pa.int64())])
    assert java.call(action="list", **jdbc) == {"imp": ["renamed"], "jv": [], "py": ["t"]}
    assert sorted(java.call(action="read", table="imp.renamed", **jdbc)) == [r + [None] for r in ROWS]

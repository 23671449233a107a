"""Schema evolution interop with pypaimon 2.1.0, both ways, with data files under several schema ids.

1. impl creates an append and a primary-key table, writes, alters (rename, widen, drop, add),
   writes again, alters once more; pypaimon reads both (files of schemas 0 and 1 read through
   schema 2), writes under the latest schema (an upsert of a key written under schema 0), reads
   again; impl reads pypaimon's files; impl compacts, pypaimon reads the compacted table.
2. pypaimon creates, writes, alters (the same kinds of change), writes again; impl reads both
   tables, writes under the latest schema, compacts; pypaimon reads impl's result.

Expected rows are written out by hand from what each side wrote, never "both sides agree".
"""

from __future__ import annotations

import pyarrow as pa
from pypaimon_env import run_pypaimon

import impl
from impl import SchemaChange as SC

PP_PRELUDE = """
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import AtomicType, PyarrowFieldParser
from pypaimon.schema.schema_change import SchemaChange
cat = CatalogFactory.create({"warehouse": params["warehouse"]})
def read(name):
    t = cat.get_table(name)
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted(rows, key=lambda r: r["id"])
def write(name, rows):
    t = cat.get_table(name)
    schema = PyarrowFieldParser.from_paimon_schema(t.table_schema.fields)
    wb = t.new_batch_write_builder()
    w = wb.new_write(); c = wb.new_commit()
    w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    c.commit(w.prepare_commit()); w.close(); c.close()
def schema_ids(name):
    t = cat.get_table(name)
    rb = t.new_read_builder()
    return sorted({f.schema_id for s in rb.new_scan().plan().splits() for f in s.files})
"""


def _rows(table) -> list[dict]:
    return sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])


def _write(table, rows):
    table.write_arrow(pa.Table.from_pylist(rows, schema=table.arrow_schema))


def test_impl_alters_pypaimon_reads_and_writes(tmp_path, pypaimon):
    wh = str(tmp_path / "wh")
    cat = impl.Catalog(wh)
    cat.create_database("db")
    base = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("v", pa.string()), ("x", pa.string())])
    ap = cat.create_table("db.ap", base)
    pk = cat.create_table("db.pk", base, primary_keys=["id"], options={"bucket": "2"})
    for t in (ap, pk):
        t.write_arrow(pa.table({"id": [1, 2], "a": pa.array([10, 20], pa.int32()), "v": ["v1", "v2"],
                                "x": ["x1", "x2"]}))
        cat.alter_table(t.identifier, [SC.rename_column("v", "w"), SC.update_column_type("a", pa.int64()),
                                       SC.drop_column("x"), SC.add_column("n", pa.int32())])
        _write(cat.get_table(t.identifier), [{"id": 3, "a": 2 ** 40, "w": "w3", "n": 3}])
        cat.alter_table(t.identifier, [SC.add_column("m", pa.string(), comment="from impl")])
    out = run_pypaimon(PP_PRELUDE + """
result = {}
for name in ("db.ap", "db.pk"):
    before = read(name)
    ids_before = schema_ids(name)
    write(name, [{"id": 2, "a": 22, "w": "pp2", "n": None, "m": "m2"}, {"id": 4, "a": 4, "w": "pp4", "n": 4, "m": None}])
    result[name] = {"before": before, "ids": ids_before, "after": read(name)}
""", warehouse=wh)
    old = [{"id": 1, "a": 10, "w": "v1", "n": None, "m": None}, {"id": 2, "a": 20, "w": "v2", "n": None, "m": None},
           {"id": 3, "a": 2 ** 40, "w": "w3", "n": 3, "m": None}]
    new = [{"id": 2, "a": 22, "w": "pp2", "n": None, "m": "m2"}, {"id": 4, "a": 4, "w": "pp4", "n": 4, "m": None}]
    for name in ("db.ap", "db.pk"):
        assert out[name]["before"] == old
        assert out[name]["ids"] == [0, 1]
    ap_expected = sorted(old + new, key=lambda r: (r["id"], r["w"]))
    pk_expected = [old[0], new[0], old[2], new[1]]
    assert sorted(out["db.ap"]["after"], key=lambda r: (r["id"], r["w"])) == ap_expected
    assert out["db.pk"]["after"] == pk_expected
    # impl reads pypaimon's files (schema 2) beside its own (schemas 0 and 1)
    ap, pk = cat.get_table("db.ap"), cat.get_table("db.pk")
    assert sorted(_rows(ap), key=lambda r: (r["id"], r["w"])) == ap_expected
    assert _rows(pk) == pk_expected
    pk.compact(full=True)
    ap.compact(full=True)
    again = run_pypaimon(PP_PRELUDE + "result = {n: read(n) for n in ('db.ap', 'db.pk')}", warehouse=wh)
    assert sorted(again["db.ap"], key=lambda r: (r["id"], r["w"])) == ap_expected
    assert again["db.pk"] == pk_expected


def test_pypaimon_alters_impl_reads_and_writes(tmp_path, pypaimon):
    wh = str(tmp_path / "wh")
    run_pypaimon(PP_PRELUDE + """
base = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("v", pa.string()), ("x", pa.string())])
cat.create_database("db", True)
cat.create_table("db.ap", Schema.from_pyarrow_schema(base), False)
cat.create_table("db.pk", Schema.from_pyarrow_schema(base, primary_keys=["id"], options={"bucket": "2"}), False)
for name in ("db.ap", "db.pk"):
    write(name, [{"id": 1, "a": 10, "v": "v1", "x": "x1"}, {"id": 2, "a": 20, "v": "v2", "x": "x2"}])
    cat.alter_table(name, [SchemaChange.rename_column("v", "w"), SchemaChange.update_column_type("a", AtomicType("BIGINT")),
                           SchemaChange.drop_column("x"), SchemaChange.add_column("n", AtomicType("INT"))])
    write(name, [{"id": 3, "a": 2 ** 40, "w": "w3", "n": 3}])
""", warehouse=wh)
    cat = impl.Catalog(wh)
    old = [{"id": 1, "a": 10, "w": "v1", "n": None}, {"id": 2, "a": 20, "w": "v2", "n": None},
           {"id": 3, "a": 2 ** 40, "w": "w3", "n": 3}]
    new = [{"id": 1, "a": -1, "w": "impl1", "n": 11}, {"id": 5, "a": 5, "w": None, "n": 5}]
    for name in ("db.ap", "db.pk"):
        t = cat.get_table(name)
        assert t.schema.id == 1 and t.schema.field("n").id == 4 and t.schema.highest_field_id == 4
        assert _rows(t) == old
        _write(t, new)
    ap_expected = sorted(old + new, key=lambda r: (r["id"], r["w"] or ""))
    pk_expected = [new[0], old[1], old[2], new[1]]
    assert sorted(_rows(cat.get_table("db.ap")), key=lambda r: (r["id"], r["w"] or "")) == ap_expected
    pk = cat.get_table("db.pk")
    assert _rows(pk) == pk_expected
    pk.compact(full=True)
    assert _rows(pk) == pk_expected
    out = run_pypaimon(PP_PRELUDE + "result = {n: read(n) for n in ('db.ap', 'db.pk')}", warehouse=wh)
    assert sorted(out["db.ap"], key=lambda r: (r["id"], r["w"] or "")) == ap_expected
    assert out["db.pk"] == pk_expected

"""pypaimon 2.1.0's API names on impl's own classes (issue 29 item 5): what pypaimon code calls,
with pypaimon's argument order, beside this project's keyword forms."""

from __future__ import annotations

import pyarrow as pa
import pytest

import impl


def _table(tmp_path):
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", None, "c"]}))
    return cat, t


def test_to_iterator_yields_rows_in_projection_order(tmp_path):
    _, t = _table(tmp_path)
    rb = t.new_read_builder().with_projection(["v", "id"]).with_limit(2)
    rows = list(rb.new_read().to_iterator(rb.new_scan().plan().splits()))
    assert rows == [("a", 1), (None, 2)]
    assert [r.get_field(1) for r in rows] == [1, 2]


def test_create_table_takes_pypaimons_positional_ignore_if_exists(tmp_path):
    cat = impl.CatalogFactory.create({"warehouse": str(tmp_path), "metastore": "filesystem"})
    cat.create_database("db", False)
    schema = impl.Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())]), primary_keys=["id"],
                                             options={"bucket": "1"}, comment="c")
    t = cat.create_table("db.t", schema, False)
    assert t.primary_keys == ["id"] and t.schema.comment == "c"
    assert cat.create_table("db.t", schema, True).identifier == "db.t"
    with pytest.raises(impl.TableAlreadyExistError):
        cat.create_table("db.t", schema, False)
    # this project's keyword form
    k = cat.create_table("db.k", pa.schema([("id", pa.int64())]), primary_keys=["id"], options={"bucket": "1"})
    assert k.primary_keys == ["id"]
    # the old positional primary keys would silently mean ignore_if_exists: refused by name
    with pytest.raises(impl.InvalidSchemaError, match="third argument is ignore_if_exists"):
        cat.create_table("db.x", pa.schema([("id", pa.int64())]), ["id"])
    assert not cat.table_exists("db.x")


def test_catalog_factory_needs_a_warehouse_and_the_filesystem_metastore(tmp_path):
    with pytest.raises(impl.UnsupportedCatalogOptionError, match="'warehouse'=None: is required"):
        impl.CatalogFactory.create({})
    with pytest.raises(impl.UnsupportedCatalogOptionError, match="'metastore'='hive'"):
        impl.CatalogFactory.create({"warehouse": str(tmp_path), "metastore": "hive"})
    with pytest.raises(impl.UnsupportedCatalogOptionError, match="'uri'=None: is required"):
        impl.CatalogFactory.create({"warehouse": str(tmp_path), "metastore": "jdbc"})


def test_get_database(tmp_path):
    cat, _ = _table(tmp_path)
    db = cat.get_database("db")
    assert (db.name, dict(db.options), db.comment) == ("db", {}, None)
    with pytest.raises(impl.DatabaseNotExistError):
        cat.get_database("nope")


def test_rename_table(tmp_path):
    cat, t = _table(tmp_path)
    cat.create_database("other")
    stale = t.new_batch_write_builder()
    cat.rename_table("db.t", "other.u")
    assert cat.list_tables("db") == [] and cat.list_tables("other") == ["u"]
    assert cat.get_table("other.u").to_arrow().num_rows == 3
    # a handle taken before the rename cannot commit to the old path
    w, c = stale.new_write(), stale.new_commit()
    w.write_arrow(pa.table({"id": [9], "v": ["z"]}))
    with pytest.raises(impl.StaleTableHandleError):
        c.commit(w.prepare_commit())
    with pytest.raises(impl.TableNotExistError):
        cat.rename_table("db.t", "db.w")
    cat.rename_table("db.t", "db.w", ignore_if_not_exists=True)
    cat.create_table("db.v", pa.schema([("id", pa.int64())]))
    with pytest.raises(impl.TableAlreadyExistError):
        cat.rename_table("db.v", "other.u")
    with pytest.raises(impl.DatabaseNotExistError):
        cat.rename_table("db.v", "nodb.v")
    with pytest.raises(impl.SystemTableReadOnlyError):
        cat.rename_table("db.v$snapshots", "db.z")


def test_drop_partitions_in_one_overwrite_snapshot(tmp_path):
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.p", pa.schema([("dt", pa.string()), ("hh", pa.int32()), ("v", pa.int64())]),
                         partition_keys=["dt", "hh"])
    t.write_arrow(pa.table({"dt": ["a", "a", "b", "c"], "hh": [1, 2, 1, 1], "v": [1, 2, 3, 4]},
                           schema=t.arrow_schema))
    cat.drop_partitions("db.p", [{"dt": "a", "hh": "1"}, {"dt": "c"}])
    assert sorted(t.to_arrow().column("v").to_pylist()) == [2, 3]
    assert [s.commit_kind.value for s in t.snapshots()] == ["APPEND", "OVERWRITE"]
    with pytest.raises(impl.OverwritePartitionError, match="non-empty partition specs"):
        cat.drop_partitions("db.p", [])
    with pytest.raises(impl.OverwritePartitionError, match="no partition keys"):
        cat.drop_partitions("db.p", [{"zz": "1"}])
    assert len(t.snapshots()) == 2


def test_write_row_forms_and_order(tmp_path):
    _, t = _table(tmp_path)

    class GenericRow:  # pypaimon's row shape: values by position, with the fields they are
        def __init__(self, values, fields):
            self.values, self.fields = values, fields

        def get_field(self, pos):
            return self.values[pos]

    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_row((10, "a"))
    w.write_row({"v": "b", "id": 11})
    w.write_row(GenericRow([12, None], t.schema.fields))
    w.write_arrow(pa.table({"id": [13], "v": ["d"]}))  # after the buffered rows
    with pytest.raises(impl.SchemaMismatchError, match="1 values for the 2 columns"):
        w.write_row((14,))
    with pytest.raises(impl.SchemaMismatchError, match=r"unknown columns \['x'\]"):
        w.write_row({"id": 14, "v": "e", "x": 1})
    c.commit(w.prepare_commit())
    rows = t.to_arrow().to_pylist()
    assert rows[3:] == [{"id": 10, "v": "a"}, {"id": 11, "v": "b"}, {"id": 12, "v": None}, {"id": 13, "v": "d"}]
    w = t.new_batch_write_builder().new_write()
    w.write_row(("not a number", "x"))
    with pytest.raises(impl.SchemaMismatchError, match="write_row to db.t: column 'id'"):
        w.prepare_commit()


def test_with_write_type(tmp_path):
    cat, t = _table(tmp_path)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write().with_write_type(["v"]), wb.new_commit()
    w.write_arrow(pa.table({"v": ["only v"]}))
    w.write_row(("row v",))
    with pytest.raises(impl.SchemaMismatchError, match=r"unknown columns \['id'\]"):
        w.write_arrow(pa.table({"id": [1], "v": ["x"]}))
    c.commit(w.prepare_commit())
    assert t.to_arrow().to_pylist()[3:] == [{"id": None, "v": "only v"}, {"id": None, "v": "row v"}]
    with pytest.raises(impl.SchemaMismatchError, match="unknown columns"):
        t.new_batch_write_builder().new_write().with_write_type(["nope"])
    pk = cat.create_table("db.pk", pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.string())]),
                          primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(impl.UnsupportedTableFeatureError, match="merge-engine 'deduplicate'"):
        pk.new_batch_write_builder().new_write().with_write_type(["id", "a"])
    pu = cat.create_table("db.pu", pk.arrow_schema, primary_keys=["id"],
                          options={"bucket": "1", "merge-engine": "partial-update"})
    pu.write_arrow(pa.table({"id": [1], "a": ["a1"], "b": ["b1"]}, schema=pu.arrow_schema))
    wb = pu.new_batch_write_builder()
    w, c = wb.new_write().with_write_type(["id", "b"]), wb.new_commit()
    w.write_row((1, "b2"))
    c.commit(w.prepare_commit())
    assert pu.to_arrow().to_pylist() == [{"id": 1, "a": "a1", "b": "b2"}]


def test_pypaimon_predicate_names(tmp_path):
    _, t = _table(tmp_path)
    t.write_arrow(pa.table({"id": [4, 5], "v": ["xay", "ya"]}))
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()

    def ids(p):
        r = t.new_read_builder().with_filter(p)
        return sorted(r.new_read().to_arrow(r.new_scan().plan().splits()).column("id").to_pylist())

    assert ids(pb.endswith("v", "a")) == [1, 5]
    assert ids(pb.endswith("v", "y")) == [4]
    assert ids(pb.contains("v", "a")) == [1, 4, 5]
    assert ids(pb.and_predicates([pb.greater_than("id", 1), pb.contains("v", "a")])) == [4, 5]
    assert ids(pb.or_predicates([pb.equal("id", 1), pb.startswith("v", "c")])) == [1, 3]
    assert ids(pb.and_predicates([pb.is_not_null("v")])) == [1, 3, 4, 5]
    with pytest.raises(impl.InvalidPredicateError, match="contains on 'id'"):
        pb.contains("id", "1")


def test_with_shard(tmp_path):
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.s", pa.schema([("k", pa.int64())]), primary_keys=["k"], options={"bucket": "4"})
    t.write_arrow(pa.table({"k": list(range(40))}, schema=t.arrow_schema))
    rb = t.new_read_builder()
    shards = [rb.new_scan().with_shard(i, 3).plan().splits() for i in range(3)]
    assert sorted(len(s) for s in shards) == [1, 1, 2]
    every = sorted(k for s in shards for k in rb.new_read().to_arrow(s).column("k").to_pylist())
    assert every == list(range(40))
    for bad in ((3, 3), (-1, 2), (0, 0)):
        with pytest.raises(impl.InvalidPredicateError, match="with_shard"):
            rb.new_scan().with_shard(*bad)


def test_compat_module_names():
    import impl.pypaimon as compat

    assert compat.CatalogFactory is impl.CatalogFactory and compat.Schema is impl.Schema
    with pytest.raises(AttributeError, match="does not offer pypaimon's SQLContext"):
        compat.SQLContext  # noqa: B018 - the attribute access is what is tested
    with pytest.raises(ImportError):
        from impl.pypaimon import PaimonVirtualFileSystem  # noqa: F401

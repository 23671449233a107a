"""Issue 48 item 2 against Paimon Java 1.4.2: for the same table contents, impl's Iceberg
metadata and Java's give pyiceberg the same rows (now and at every Iceberg snapshot), the same
schema (names, types, field ids, required), the same partition spec and the same snapshot
history shape (ids, parents, operations); and a table Java keeps Iceberg-readable stays so when
impl compacts it and Java appends after, each step read by pyiceberg."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from iceberg_views import write

import impl
from impl.iceberg.view import iceberg_view

pytestmark = pytest.mark.paimon_java
pyiceberg_table = pytest.importorskip("pyiceberg.table")

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("d", pa.float64())])
FIELDS = [["dt", "STRING"], ["id", "BIGINT"], ["v", "STRING"], ["d", "DOUBLE"]]
OPTIONS = {"metadata.iceberg.storage": "table-location"}
# (partition, ids, overwrite): appends to two partitions, then a static overwrite of one
STEPS = [("a", [1, 2, 3], False), ("b", [4, 5], False), ("a", [6], False), ("a", [7, 8], True)]


def _data(ids, dt) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids],
                     "d": [i / 8 for i in ids]}, schema=SCHEMA)


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*(t.column(n).to_pylist() for n in SCHEMA.names), strict=True), key=str)


def _ice(table):
    return pyiceberg_table.StaticTable.from_metadata(iceberg_view(table.core).metadata_location)


def _java_write(java, tmp_path, wh, table, n, data, overwrite=None) -> None:
    path = str(tmp_path / f"{table}-{n}.parquet")
    pq.write_table(data, path)
    args = {"overwrite": overwrite} if overwrite is not None else {}
    java.call("write", warehouse=wh, table=table, parquet=path, batch=True, **args)


def _shape(ice) -> list[tuple]:
    return [(s.snapshot_id, s.parent_snapshot_id, s.summary.operation.value) for s in ice.snapshots()]


def _schema(ice) -> list[tuple]:
    """Field ids, names, types and whether required. A partition column's "required" is left
    out: impl's create_table makes partition keys NOT NULL in the Paimon schema (Java keeps
    them nullable), so the Iceberg schema says required, and its files hold no null there."""
    return [(f.field_id, f.name, str(f.field_type), None if f.name == "dt" else f.required)
            for f in ice.schema().fields]


def test_same_rows_schema_spec_history_as_java(java, tmp_path):
    wh = str(tmp_path / "wh")
    java.call("create_table", warehouse=wh, table="db.java", fields=FIELDS, partition_keys=["dt"],
              table_options=OPTIONS)
    cat = impl.Catalog(wh)
    mine = cat.create_table("db.mine", schema=SCHEMA, partition_keys=["dt"], options=OPTIONS)
    for n, (dt, ids, overwrite) in enumerate(STEPS):
        spec = {"dt": dt} if overwrite else None
        _java_write(java, tmp_path, wh, "db.java", n, _data(ids, dt), spec)
        write(mine, _data(ids, dt), spec)
    theirs = cat.get_table("db.java")
    mine = cat.get_table("db.mine")
    java_ice, impl_ice = _ice(theirs), _ice(mine)
    assert _rows(java_ice.scan().to_arrow()) == _rows(impl_ice.scan().to_arrow()) == _rows(mine.to_arrow())
    assert _schema(java_ice) == _schema(impl_ice)
    assert [(p.field_id, p.name, p.source_id, str(p.transform)) for p in java_ice.spec().fields] == \
        [(p.field_id, p.name, p.source_id, str(p.transform)) for p in impl_ice.spec().fields]
    assert _shape(java_ice) == _shape(impl_ice)
    for s in java_ice.snapshots():
        assert _rows(java_ice.scan(snapshot_id=s.snapshot_id).to_arrow()) == \
            _rows(impl_ice.scan(snapshot_id=s.snapshot_id).to_arrow()), s.snapshot_id
    # the partition pruning both give pyiceberg: the same files count per partition
    for dt in ("a", "b"):
        assert len(java_ice.scan(row_filter=f"dt = '{dt}'").plan_files()) == \
            len(impl_ice.scan(row_filter=f"dt = '{dt}'").plan_files())


def test_impl_compacts_a_java_table_then_java_appends(java, tmp_path):
    wh = str(tmp_path / "wh")
    java.call("create_table", warehouse=wh, table="db.t", fields=FIELDS, partition_keys=["dt"], table_options=OPTIONS)
    for n, (dt, ids, _overwrite) in enumerate(STEPS[:3]):
        _java_write(java, tmp_path, wh, "db.t", n, _data(ids, dt))
    t = impl.Catalog(wh).get_table("db.t")
    assert _rows(_ice(t).scan().to_arrow()) == _rows(t.to_arrow())
    # impl reads the Java table, writes, and compacts it: the Iceberg view follows each commit
    write(t, _data([9], "b"))
    stats = impl.Catalog(wh).get_table("db.t").compact(full=True)
    assert stats is not None and stats.snapshot_ids
    t = impl.Catalog(wh).get_table("db.t")
    ice = _ice(t)
    assert ice.metadata.current_snapshot_id == t.latest_snapshot().id
    assert ice.current_snapshot().summary.operation.value == "replace"
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow())
    assert [s.snapshot_id for s in ice.snapshots()] == [s.id for s in t.snapshots()]
    for s in ice.snapshots():  # Java's snapshots too, kept in impl's metadata
        assert _rows(ice.scan(snapshot_id=s.snapshot_id).to_arrow()) == \
            _rows(t.copy({"scan.snapshot-id": str(s.snapshot_id)}).to_arrow()), s.snapshot_id
    # Java reads the table impl compacted and appends on top of impl's Iceberg metadata
    assert java.call("read", warehouse=wh, table="db.t", sum_fields=["id"])["rows"] == t.to_arrow().num_rows
    _java_write(java, tmp_path, wh, "db.t", 10, _data([10], "c"))
    t = impl.Catalog(wh).get_table("db.t")
    ice = _ice(t)
    assert ice.metadata.current_snapshot_id == t.latest_snapshot().id
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow())
    assert _rows(ice.scan(row_filter="dt = 'c'").to_arrow()) == _rows(_data([10], "c"))

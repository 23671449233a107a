"""Iceberg metadata written by impl (``metadata.iceberg.storage``, issue 48 first landing),
read by pyiceberg, an Iceberg reader from outside the project: equal rows after appends, an
overwrite and a compaction, with a partition filter and time travel by snapshot id; the
hadoop-catalog location; what is refused by name; a crash between the Paimon publication and
the Iceberg metadata leaves the Iceberg view behind, never wrong, and the next commit catches up.
"""

from __future__ import annotations

import datetime
import decimal
import json
import logging
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from iceberg_views import TABLE_LOCATION, hinted_version, iceberg_at_hint, write

from impl.errors import UnsupportedOptionError
from impl.iceberg import sync_iceberg
from impl.schema.changes import SchemaChange

pytest.importorskip("pyiceberg.table")

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])


def _rows(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: tuple((r[k] is None, str(r[k])) for k in t.column_names))


def _metadata_dir(table) -> str:
    return os.path.join(table.path, "metadata")


def _data(ids, dt="2024-01-01") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()),
                     "name": [f"n{i}" if i % 3 else None for i in ids], "v": [i / 2 for i in ids]}, schema=SCHEMA)


def test_pyiceberg_reads_appends_overwrite_compaction(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=TABLE_LOCATION)
    directory = _metadata_dir(t)
    write(t, _data([1, 2, 3]))
    write(t, _data([4, 5], dt="2024-01-02"))
    write(t, _data([6], dt="2024-01-03"))
    for _ in range(3):  # small files for the compaction below
        write(t, _data([7, 8], dt="2024-01-02"))
    # a static overwrite of one partition
    write(t, _data([10, 11]), overwrite={"dt": "2024-01-01"})
    stats = catalog.get_table("db.t").compact(full=True)
    assert stats is not None and stats.snapshot_ids
    table = catalog.get_table("db.t")
    latest = table.latest_snapshot()
    assert latest.commit_kind.value == "COMPACT"
    ice = iceberg_at_hint(directory)
    # the Iceberg view mirrors the newest Paimon snapshot: same id, same rows
    assert ice.metadata.current_snapshot_id == latest.id == hinted_version(directory)
    assert ice.current_snapshot().summary.operation.value == "replace"
    assert _rows(ice.scan().to_arrow()) == _rows(table.to_arrow())
    assert len(_rows(table.to_arrow())) == 11
    # a partition filter: pruned to the files of that partition, the same rows as impl's
    part = ice.scan(row_filter="dt = '2024-01-02'")
    assert {task.file.partition[0] for task in part.plan_files()} == {"2024-01-02"}
    assert _rows(part.to_arrow()) == _rows(table.to_arrow().filter(pa.compute.equal(table.to_arrow()["dt"],
                                                                                       "2024-01-02")))
    # time travel by Iceberg snapshot id = Paimon snapshot id
    ids = [s.snapshot_id for s in ice.snapshots()]
    assert ids == sorted(ids) and ids[0] == 1 and ids[-1] == latest.id
    first = ice.scan(snapshot_id=1).to_arrow()
    assert _rows(first) == _rows(_data([1, 2, 3]))
    overwritten = [s for s in ice.snapshots() if s.summary.operation.value == "overwrite"]
    assert len(overwritten) == 1
    # the schema carries Paimon's field ids; the name mapping resolves impl's Parquet columns
    fields = {f.name: f.field_id for f in ice.schema().fields}
    assert fields == {f.name: f.id for f in table.core.schema.fields}
    assert [f.name for f in ice.spec().fields] == ["dt"] and ice.spec().fields[0].field_id == 1000
    # Java's delete-after-commit (default on, 0 previous versions kept): one metadata file left
    assert sorted(n for n in os.listdir(directory) if n.endswith(".metadata.json")) == [f"v{latest.id}.metadata.json"]


def test_types_unpartitioned_and_previous_versions(catalog):
    schema = pa.schema([("b", pa.bool_()), ("i", pa.int32()), ("l", pa.int64()), ("f", pa.float32()),
                        ("d", pa.float64()), ("s", pa.string()), ("bin", pa.binary()), ("day", pa.date32()),
                        ("dec", pa.decimal128(10, 2)), ("ts", pa.timestamp("us"))])
    t = catalog.create_table("db.types", schema=schema,
                             options={**TABLE_LOCATION, "metadata.iceberg.previous-versions-max": "1",
                                      "metadata.iceberg.manifest-compression": "gzip"})
    data = pa.table({"b": [True, None], "i": [1, -2], "l": [2**40, None], "f": [1.5, None], "d": [0.25, -1.0],
                     "s": ["x", None], "bin": [b"\x00\x01", None], "day": [datetime.date(2024, 2, 29), None],
                     "dec": [decimal.Decimal("12.34"), None],
                     "ts": [datetime.datetime(2024, 1, 2, 3, 4, 5, 678901), None]}, schema=schema)
    write(t, data)
    write(t, data)
    directory = _metadata_dir(t)
    got = iceberg_at_hint(directory).scan().to_arrow()
    assert _rows(got) == _rows(pa.concat_tables([data, data]))
    # previous-versions-max = 1: the newest and one before it
    assert sorted(n for n in os.listdir(directory) if n.endswith(".metadata.json")) == [
        "v1.metadata.json", "v2.metadata.json"]
    doc = json.loads(open(os.path.join(directory, "v2.metadata.json")).read())
    assert doc["format-version"] == 2 and doc["last-partition-id"] == 999
    assert json.loads(doc["properties"]["schema.name-mapping.default"])[0] == {"field-id": 0, "names": ["b"]}


def test_hadoop_catalog_location(catalog, tmp_path):
    t = catalog.create_table("db.h", schema=SCHEMA, options={"metadata.iceberg.storage": "hadoop-catalog"})
    write(t, _data([1, 2]))
    directory = str(tmp_path / "wh" / "iceberg" / "db" / "h" / "metadata")
    assert _rows(iceberg_at_hint(directory).scan().to_arrow()) == _rows(_data([1, 2]))
    assert not os.path.exists(_metadata_dir(t))


@pytest.mark.parametrize("kwargs, options, needle", [
    ({"primary_keys": ["id"]}, {"deletion-vectors.enabled": "true"}, "deletion vectors"),
    ({}, {"deletion-vectors.enabled": "true"}, "deletion vectors"),
    ({}, {"file.format": "orc"}, "orc data files"),
    ({"partition_keys": ["v"]}, {}, "partition column 'v'"),
    ({}, {"metadata.iceberg.storage": "hive-catalog"}, "Hive or REST catalog"),
    ({}, {"metadata.iceberg.format-version": "3"}, "format versions other than 2"),
    ({}, {"metadata.iceberg.manifest-legacy-version": "true"}, "legacy"),
])
def test_refused_by_name_at_create(catalog, kwargs, options, needle):
    with pytest.raises(UnsupportedOptionError, match=needle) as e:
        catalog.create_table("db.r", schema=SCHEMA, options={**TABLE_LOCATION, **options}, **kwargs)
    assert e.value.key.startswith("metadata.iceberg.")
    assert "db.r" not in catalog.list_tables("db")


def test_refused_types_and_alter(catalog):
    small = pa.schema([("a", pa.int8())])
    with pytest.raises(UnsupportedOptionError, match="column 'a' of type TINYINT"):
        catalog.create_table("db.s", schema=small, options=TABLE_LOCATION)
    ms = pa.schema([("a", pa.timestamp("ms"))])
    with pytest.raises(UnsupportedOptionError, match="column 'a' of type TIMESTAMP\\(3\\)"):
        catalog.create_table("db.s", schema=ms, options=TABLE_LOCATION)
    catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["id"], options={"deletion-vectors.enabled": "true"})
    with pytest.raises(UnsupportedOptionError, match="deletion vectors"):
        catalog.alter_table("db.pk", [SchemaChange.set_option("metadata.iceberg.storage", "table-location")])
    assert "metadata.iceberg.storage" not in catalog.get_table("db.pk").core.schema.options


def test_refused_at_commit_through_dynamic_options(catalog):
    t = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["id"], options={"deletion-vectors.enabled": "true"})
    view = t.copy(TABLE_LOCATION)
    with pytest.raises(UnsupportedOptionError, match="deletion vectors"):
        view.new_batch_write_builder().new_commit()
    assert t.latest_snapshot() is None


def test_crash_between_publication_and_iceberg_metadata(catalog, caplog):
    """The Iceberg metadata directory cannot be written (a file stands in its way) when the
    second commit runs: the Paimon snapshot is published and the commit succeeds; the Iceberg
    view stays at snapshot 1 and reads its rows (behind, never wrong); once the directory can be
    written again the next commit, or an explicit sync, brings it up to date."""
    t = catalog.create_table("db.t", schema=SCHEMA, options=TABLE_LOCATION)
    directory = _metadata_dir(t)
    write(t, _data([1, 2]))
    assert hinted_version(directory) == 1
    os.rename(directory, directory + ".aside")
    with open(directory, "w") as f:
        f.write("in the way")
    with caplog.at_level(logging.WARNING, logger="impl.iceberg.commit"):
        stats = write(t, _data([3]))
    assert stats.snapshot_ids == [2]
    assert "Iceberg metadata of" in caplog.text
    assert catalog.get_table("db.t").latest_snapshot().id == 2
    os.remove(directory)
    os.rename(directory + ".aside", directory)
    # behind, not wrong: the Iceberg view is Paimon snapshot 1, its rows exactly
    behind = iceberg_at_hint(directory)
    assert behind.metadata.current_snapshot_id == 1
    assert _rows(behind.scan().to_arrow()) == _rows(_data([1, 2]))
    # an explicit sync writes the newest snapshot from the Paimon snapshot alone
    table = catalog.get_table("db.t")
    fsc = table.new_batch_write_builder().new_commit().file_store_commit
    path = sync_iceberg(table.core, fsc.read_live_entries, fsc.data_file_path)
    assert path == os.path.join(directory, "v2.metadata.json")
    assert _rows(iceberg_at_hint(directory).scan().to_arrow()) == _rows(_data([1, 2, 3]))
    # and the next commit continues the history
    write(t, _data([4]))
    ice = iceberg_at_hint(directory)
    assert [s.snapshot_id for s in ice.snapshots()] == [1, 2, 3]
    assert _rows(ice.scan().to_arrow()) == _rows(_data([1, 2, 3, 4]))


def test_iceberg_snapshots_expire_with_paimon_snapshots(catalog):
    """Paimon expires snapshots 1-2; the next commit's Iceberg metadata no longer lists them
    (their files are gone, an Iceberg time travel there could not be read)."""
    t = catalog.create_table("db.t", schema=SCHEMA, options=TABLE_LOCATION)
    for i in range(4):
        write(t, _data([i]))
    t.expire_snapshots(retain_min=1, retain_max=2)
    assert [s.id for s in t.core.snapshot_manager.snapshots()] == [3, 4]
    write(t, _data([9]))
    ice = iceberg_at_hint(_metadata_dir(t))
    assert [s.snapshot_id for s in ice.snapshots()] == [3, 4, 5]
    assert ice.snapshot_by_id(3).parent_snapshot_id is None or ice.snapshot_by_id(3).parent_snapshot_id == 2
    assert _rows(ice.scan(snapshot_id=3).to_arrow()) == _rows(_data([0, 1, 2]))
    assert _rows(ice.scan().to_arrow()) == _rows(_data([0, 1, 2, 3, 9]))


def test_parquet_files_carry_paimon_field_ids(catalog):
    """impl's Parquet data files name each column's Paimon field id (PARQUET:field_id), as Java
    writes them: an Iceberg reader needs no name mapping (Java's metadata carries none)."""
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    catalog.alter_table("db.t", [SchemaChange.rename_column("v", "value")])
    t = catalog.get_table("db.t")
    write(t, pa.table({"dt": ["a"], "id": pa.array([1], pa.int64()), "name": ["x"], "value": [0.5]}))
    paths = [os.path.join(dp, n) for dp, _d, ns in os.walk(t.path) for n in ns if n.endswith(".parquet")]
    assert len(paths) == 1
    schema = pq.read_schema(paths[0])
    ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in schema}
    assert ids == {f.name: f.id for f in t.core.schema.fields} == {"dt": 0, "id": 1, "name": 2, "value": 3}


def test_rollback_then_commit_drops_the_rolled_back_iceberg_snapshots(catalog):
    """After a rollback to snapshot 1 the next commit reuses id 2: the Iceberg snapshots 2 and
    3 of the old timeline are gone from the history, the new 2 has the new rows."""
    t = catalog.create_table("db.t", schema=SCHEMA, options=TABLE_LOCATION)
    for i in range(3):
        write(t, _data([i]))
    t.rollback_to(1)
    write(t, _data([7]))
    ice = iceberg_at_hint(_metadata_dir(t))
    assert [s.snapshot_id for s in ice.snapshots()] == [1, 2]
    assert _rows(ice.scan().to_arrow()) == _rows(_data([0, 7]))
    assert _rows(ice.scan(snapshot_id=1).to_arrow()) == _rows(_data([0]))
    # the old timeline's v3 is gone: a reader listing versions finds v2 the newest
    assert sorted(n for n in os.listdir(_metadata_dir(t)) if n.endswith(".metadata.json")) == ["v2.metadata.json"]

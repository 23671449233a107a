"""Iceberg readers from outside the project read impl's tables (issue 48 item 3): pyiceberg
0.12.0 through a StaticTable, through its SQL catalog on SQLite (``register_table``) and, for
``hadoop-catalog`` storage, through the warehouse layout (``<wh>/iceberg/<db>/<table>`` and its
version hint); DuckDB and Polars through pyiceberg; partition pruning (the files pyiceberg plans
are the matching partition's only) and time travel by Iceberg snapshot id (each Iceberg
snapshot's rows are impl's rows of the Paimon snapshot it mirrors); on local disk and on S3
(the moto server on 127.0.0.1: the metadata names ``s3://`` URIs, which an Iceberg reader opens;
before, it named impl's scheme-less ``bucket/...`` paths and no reader found them).
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from iceberg_views import TABLE_LOCATION, write

import impl
from impl.iceberg.view import iceberg_view

pyiceberg_table = pytest.importorskip("pyiceberg.table")
sql_catalog = pytest.importorskip("pyiceberg.catalog.sql")

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64())])


def _data(ids, dt) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [i / 4 for i in ids]},
                    schema=SCHEMA)


def _rows(t) -> list[tuple]:
    t = t if isinstance(t, pa.Table) else t.to_arrow()
    return sorted(zip(*(t.column(n).to_pylist() for n in SCHEMA.names), strict=True), key=str)


def _history(table) -> None:
    """Appends to three partitions, then a static overwrite of one: four Paimon snapshots."""
    write(table, _data([1, 2, 3], "a"))
    write(table, _data([4, 5], "b"))
    write(table, _data([6], "c"))
    write(table, _data([7, 8], "a"), overwrite={"dt": "a"})


def _check_reader(table, ice) -> None:
    """``ice`` (a pyiceberg table) reads what impl reads: now, per partition (pruned) and at
    every Iceberg snapshot, which mirrors the Paimon snapshot of its id."""
    assert ice.metadata.current_snapshot_id == table.latest_snapshot().id
    assert _rows(ice.scan().to_arrow()) == _rows(table.to_arrow())
    scan = ice.scan(row_filter="dt = 'b'")
    planned = scan.plan_files()
    assert planned and {task.file.partition[0] for task in planned} == {"b"}
    splits = table.new_read_builder().new_scan().plan().splits()
    assert len(planned) == sum(len(s.files) for s in splits if s.partition_path.rstrip("/").endswith("dt=b"))
    assert _rows(scan.to_arrow()) == _rows(_data([4, 5], "b"))
    ids = [s.snapshot_id for s in ice.snapshots()]
    assert ids == [s.id for s in table.snapshots()]
    for sid in ids:
        assert _rows(ice.scan(snapshot_id=sid).to_arrow()) == _rows(table.copy({"scan.snapshot-id": str(sid)})
                                                                     .to_arrow()), sid


def test_static_table_sql_catalog_duckdb_polars(catalog, tmp_path, monkeypatch):
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")  # polars_iceberg is not installed: say so once
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=TABLE_LOCATION)
    _history(t)
    view = iceberg_view(t.core)
    assert view.metadata_location == os.path.join(t.path, "metadata", "v4.metadata.json")
    _check_reader(t, pyiceberg_table.StaticTable.from_metadata(view.metadata_location))
    # the table directory alone: pyiceberg follows the version hint
    _check_reader(t, pyiceberg_table.StaticTable.from_metadata(t.path))

    # pyiceberg's SQL catalog on SQLite: the table registered by its metadata file
    sql = sql_catalog.SqlCatalog("local", uri=f"sqlite:///{tmp_path / 'iceberg.db'}",
                                 warehouse=f"file://{tmp_path / 'iceberg-wh'}")
    sql.create_namespace("db")
    registered = sql.register_table("db.t", view.metadata_location)
    _check_reader(t, registered)
    assert _rows(sql.load_table("db.t").scan().to_arrow()) == _rows(t.to_arrow())

    # DuckDB and Polars through pyiceberg
    ice = sql.load_table("db.t")
    con = ice.scan(row_filter="dt = 'a'").to_duckdb("t")
    assert con.execute("select count(*), sum(id) from t").fetchall() == [(2, 15)]
    pl = pytest.importorskip("polars")
    frame = pl.scan_iceberg(ice, reader_override="native").filter(pl.col("dt") != "c").collect()
    assert _rows(frame.to_arrow()) == _rows(t.to_arrow().filter(pc.not_equal(t.to_arrow()["dt"], "c")))
    old = pl.scan_iceberg(ice, snapshot_id=1).collect()
    assert _rows(old.to_arrow()) == _rows(_data([1, 2, 3], "a"))


def test_hadoop_catalog_warehouse_layout(catalog, tmp_path):
    """``hadoop-catalog`` storage: pyiceberg opens ``<warehouse>/iceberg/<db>/<table>`` as a
    Hadoop catalog's table directory (its version hint names the metadata)."""
    t = catalog.create_table("db.h", schema=SCHEMA, partition_keys=["dt"],
                             options={"metadata.iceberg.storage": "hadoop-catalog"})
    _history(t)
    table_dir = str(tmp_path / "wh" / "iceberg" / "db" / "h")
    assert iceberg_view(t.core).metadata_location == os.path.join(table_dir, "metadata", "v4.metadata.json")
    _check_reader(t, pyiceberg_table.StaticTable.from_metadata(table_dir))


def test_readers_on_s3(s3_server, s3_bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")
    from s3_server import ACCESS_KEY, REGION, SECRET_KEY

    cat = impl.Catalog(f"s3://{s3_bucket}/wh", options=s3_server.options())
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=TABLE_LOCATION)
    _history(t)
    view = iceberg_view(t.core)
    assert view.metadata_location == f"s3://{s3_bucket}/wh/db.db/t/metadata/v4.metadata.json"
    props = {"s3.endpoint": s3_server.endpoint, "s3.access-key-id": ACCESS_KEY,
             "s3.secret-access-key": SECRET_KEY, "s3.region": REGION}
    _check_reader(t, pyiceberg_table.StaticTable.from_metadata(view.metadata_location, properties=props))
    sql = sql_catalog.SqlCatalog("s3", uri=f"sqlite:///{tmp_path / 'iceberg.db'}",
                                 warehouse=f"s3://{s3_bucket}/iceberg-wh", **props)
    sql.create_namespace("db")
    ice = sql.register_table("db.t", view.metadata_location)
    _check_reader(t, ice)
    con = ice.scan().to_duckdb("t")
    assert con.execute("select count(*) from t").fetchall() == [(5,)]
    pl = pytest.importorskip("polars")
    storage = {"aws_endpoint_url": s3_server.endpoint, "aws_access_key_id": ACCESS_KEY,
               "aws_secret_access_key": SECRET_KEY, "aws_region": REGION, "aws_allow_http": "true"}
    frame = pl.scan_iceberg(ice, storage_options=storage, reader_override="native").collect()
    assert _rows(frame.to_arrow()) == _rows(t.to_arrow())


def _iceberg_paths(core, metadata_location: str) -> list[str]:
    """Every path the current Iceberg metadata names: the table location, the manifest list, the
    manifests and their data files (read back through impl's FileIO)."""
    import io
    import json

    import fastavro

    fio = core.file_io
    fs_path = fio.fs._strip_protocol
    doc = json.loads(fio.read_bytes(fs_path(metadata_location)))
    current = next(s for s in doc["snapshots"] if s["snapshot-id"] == doc["current-snapshot-id"])
    manifests = list(fastavro.reader(io.BytesIO(fio.read_bytes(fs_path(current["manifest-list"])))))
    files = [e["data_file"]["file_path"] for m in manifests
             for e in fastavro.reader(io.BytesIO(fio.read_bytes(fs_path(m["manifest_path"]))))]
    assert files
    return [doc["location"], current["manifest-list"], *(m["manifest_path"] for m in manifests), *files]


@pytest.mark.parametrize("scheme", ["abfss", "abfs"])
def test_readers_on_azure(azure_server, azure_container, scheme):
    """On Azure the metadata names the account (``abfss://container@account.dfs.core.windows.net/...``,
    in the scheme the table was opened with): pyiceberg, told only the key and the endpoint (Azurite),
    opens every file through it. Before, it named ``abfs://container/...``, which no reader outside
    could place in an account."""
    from azurite import ACCOUNT, ACCOUNT_KEY

    url = f"{scheme}://{azure_container}@{ACCOUNT}.dfs.core.windows.net/wh"
    cat = impl.Catalog(url, options=azure_server.options())
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=TABLE_LOCATION)
    _history(t)
    view = iceberg_view(t.core)
    assert view.metadata_location == f"{url}/db.db/t/metadata/v4.metadata.json"
    for path in _iceberg_paths(t.core, view.metadata_location):
        assert path.startswith(f"{url}/db.db/t"), path
    props = {"adls.connection-string": f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};"
                                       f"AccountKey={ACCOUNT_KEY};BlobEndpoint={azure_server.endpoint};"}
    _check_reader(t, pyiceberg_table.StaticTable.from_metadata(view.metadata_location, properties=props))


def test_azure_metadata_rewritten_when_the_url_spelling_changes(azure_server, azure_container):
    """Opened as ``abfs://`` then ``abfss://``: the new snapshot's metadata is written whole in the
    new spelling (no manifest carried over in the old one), so a file removed later is matched."""
    from azurite import ACCOUNT

    first = impl.Catalog(f"abfs://{azure_container}@{ACCOUNT}.dfs.core.windows.net/wh", options=azure_server.options())
    first.create_database("db")
    t = first.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=TABLE_LOCATION)
    write(t, _data([1, 2, 3], "a"))
    write(t, _data([4], "b"))
    url = f"abfss://{azure_container}@{ACCOUNT}.dfs.core.windows.net/wh"
    again = impl.Catalog(url, options=azure_server.options()).get_table("db.t")
    write(again, _data([7, 8], "a"), overwrite={"dt": "a"})
    view = iceberg_view(again.core)
    for path in _iceberg_paths(again.core, view.metadata_location):
        assert path.startswith(f"{url}/db.db/t"), path
    from azurite import ACCOUNT_KEY

    props = {"adls.connection-string": f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};"
                                       f"AccountKey={ACCOUNT_KEY};BlobEndpoint={azure_server.endpoint};"}
    ice = pyiceberg_table.StaticTable.from_metadata(view.metadata_location, properties=props)
    assert _rows(ice.scan().to_arrow()) == _rows(again.to_arrow()) == _rows(
        pa.concat_tables([_data([4], "b"), _data([7, 8], "a")]))

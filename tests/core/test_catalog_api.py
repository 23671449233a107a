"""The catalog API (issue 47 item 1): one abstract :class:`impl.Catalog`, implemented by the
filesystem, JDBC and REST catalogs; one factory with an explicit registry; each catalog's options
declared once (key, parse, default, description) and an unknown key refused by name."""

from __future__ import annotations

import pyarrow as pa
import pytest

import impl
from impl.catalog import METASTORES, CatalogFactory, FileSystemCatalog, load_catalog
from impl.catalog.options import FILESYSTEM_OPTIONS, JDBC_OPTIONS, REST_OPTIONS
from impl.errors import InvalidOptionError, SystemTableReadOnlyError, UnsupportedCatalogOptionError
from impl.rest import RESTCatalog, RESTCatalogServer

TOKEN = "catalog-api-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with RESTCatalogServer(str(tmp_path_factory.mktemp("rest-wh")), token=TOKEN) as srv:
        yield srv


def rest_options(server) -> dict[str, str]:
    return {"metastore": "rest", "uri": server.uri, "token.provider": "bear", "token": TOKEN}


def test_every_form_of_catalog_makes_an_impl_catalog(tmp_path, server):
    wh = str(tmp_path / "wh")
    uri = f"jdbc:sqlite:{tmp_path / 'c.db'}"
    made = {
        "filesystem": impl.Catalog(wh),
        "filesystem by options": load_catalog({"warehouse": wh}),
        "jdbc by uri": impl.Catalog(uri, warehouse=wh),
        "jdbc by options": impl.Catalog(wh, options={"metastore": "jdbc", "uri": uri}),
        "jdbc by factory": CatalogFactory.create({"warehouse": wh, "metastore": "JDBC", "uri": uri}),
        "rest": impl.Catalog("wh", options=rest_options(server)),
        "rest by factory": load_catalog({**rest_options(server), "warehouse": "wh"}),
    }
    kinds = {name: type(cat) for name, cat in made.items()}
    assert kinds == {"filesystem": FileSystemCatalog, "filesystem by options": FileSystemCatalog,
                     "jdbc by uri": impl.JdbcCatalog, "jdbc by options": impl.JdbcCatalog,
                     "jdbc by factory": impl.JdbcCatalog, "rest": RESTCatalog, "rest by factory": RESTCatalog}
    assert all(isinstance(cat, impl.Catalog) for cat in made.values())
    # the three share the API: what one creates through it, the others of the same store see
    made["jdbc by uri"].create_database("db")
    made["jdbc by uri"].create_table("db.t", pa.schema([("id", pa.int64())]))
    assert made["jdbc by options"].list_tables("db") == ["t"]
    made["rest"].create_database("r")
    assert made["rest by factory"].list_databases() == ["r"]
    for cat in made.values():
        cat.close()


def test_the_registry_is_explicit_and_an_unknown_metastore_is_refused_by_name(tmp_path):
    assert set(METASTORES) == {"filesystem", "jdbc", "rest"}
    with pytest.raises(UnsupportedCatalogOptionError, match="'metastore'='hive'.*filesystem, jdbc, rest"):
        impl.Catalog(str(tmp_path), options={"metastore": "hive"})
    with pytest.raises(UnsupportedCatalogOptionError, match="'metastore'='hive'"):
        load_catalog({"warehouse": str(tmp_path), "metastore": "hive"})
    with pytest.raises(UnsupportedCatalogOptionError, match="'warehouse'"):
        load_catalog({"metastore": "jdbc"})
    with pytest.raises(TypeError, match="abstract"):  # the API itself: only its implementations are constructed
        type.__call__(impl.Catalog)


def test_each_catalog_refuses_the_options_of_another_by_name(tmp_path, server):
    wh = str(tmp_path / "wh")
    uri = f"jdbc:sqlite:{tmp_path / 'c.db'}"
    with pytest.raises(UnsupportedCatalogOptionError, match="'uri'.*not an option of this filesystem catalog"):
        impl.Catalog(wh, options={"uri": uri})
    with pytest.raises(UnsupportedCatalogOptionError, match="'token'.*not an option of the JDBC catalog"):
        impl.Catalog(uri, warehouse=wh, options={"token": "x"})
    with pytest.raises(UnsupportedCatalogOptionError, match="'lock.enabled'.*not an option of the REST catalog"):
        impl.Catalog("wh", options={**rest_options(server), "lock.enabled": "true"})
    # families pass: storage options everywhere, driver properties for JDBC, headers for REST
    impl.Catalog(uri, warehouse=wh, options={"jdbc.connectTimeout": "5", "fs.s3.region": "x"}).close()
    impl.Catalog("wh", options={**rest_options(server), "header.X-Trace": "1"})


def test_catalog_option_values_are_parsed_by_their_declaration(tmp_path):
    wh = str(tmp_path / "wh")
    uri = f"jdbc:sqlite:{tmp_path / 'c.db'}"
    # accepted without any check before: Java's client-pool-size is an integer
    with pytest.raises(InvalidOptionError, match="'client-pool-size'"):
        impl.Catalog(uri, warehouse=wh, options={"client-pool-size": "many"})
    with pytest.raises(InvalidOptionError, match="'lock-key-max-length'"):
        impl.Catalog(uri, warehouse=wh, options={"lock-key-max-length": "0"})
    with impl.Catalog(uri, warehouse=wh, options={"lock.enabled": "true", "lock-check-max-sleep": "2 s"}) as cat:
        assert cat.lock_rules.enabled and cat.lock_rules.check_max_sleep_millis == 2000
        assert cat.lock_rules.acquire_timeout_millis == 8 * 60_000 and cat.catalog_key == "jdbc"


def test_every_catalog_option_is_declared_with_a_description():
    for declared in (FILESYSTEM_OPTIONS, JDBC_OPTIONS, REST_OPTIONS):
        assert {"metastore", "warehouse"} <= declared.keys
        for option in declared.options:
            assert option.description.strip(), option.key
    assert JDBC_OPTIONS.keys - FILESYSTEM_OPTIONS.keys == {
        "uri", "catalog-key", "lock.enabled", "lock-check-max-sleep", "lock-acquire-timeout", "lock-key-max-length",
        "client-pool-size", "sync-all-properties"}
    assert REST_OPTIONS.keys - FILESYSTEM_OPTIONS.keys == {"uri", "token", "token.provider", "prefix",
                                                           "data-token.enabled"}


def test_drop_partitions_of_a_system_table_is_refused(tmp_path):
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([("dt", pa.string()), ("id", pa.int64())]), partition_keys=["dt"])
    with pytest.raises(SystemTableReadOnlyError, match="drop_partitions"):
        cat.drop_partitions("db.t$snapshots", [{"dt": "a"}])

"""Strict options and paths: booleans as Paimon Java takes them, catalog options this catalog does not
implement refused by name, a warehouse that is a regular file refused."""

from __future__ import annotations

import pyarrow as pa
import pytest

import impl
from impl.errors import InvalidOptionError, InvalidWarehouseError, UnsupportedCatalogOptionError
from impl.options.values import parse_bool

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.mark.parametrize("text, expected", [("true", True), ("TRUE", True), (" True ", True), ("false", False),
                                            ("False", False), (True, True), (False, False)])
def test_parse_bool_takes_what_paimon_java_takes(text, expected):
    assert parse_bool("write-only", text) is expected


@pytest.mark.parametrize("text", ["yes", "no", "1", "0", "on", "", "t"])
def test_parse_bool_refuses_the_rest_naming_the_key(text):
    with pytest.raises(InvalidOptionError, match="'deletion-vectors.enabled'.*not a boolean"):
        parse_bool("deletion-vectors.enabled", text)


@pytest.fixture
def cat(local_catalog):
    return local_catalog


def test_create_table_refuses_non_boolean_and_stores_nothing(cat):
    with pytest.raises(InvalidOptionError, match="deletion-vectors.enabled"):
        cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"deletion-vectors.enabled": "yes"})
    assert not cat.table_exists("db.t")


def test_alter_and_dynamic_options_refuse_non_boolean(cat):
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"deletion-vectors.enabled": "TRUE"})
    with pytest.raises(InvalidOptionError, match="write-only"):
        cat.alter_table("db.t", [impl.SchemaChange.set_option("write-only", "1")])
    assert "write-only" not in cat.get_table("db.t").schema.options
    with pytest.raises(InvalidOptionError, match="write-only"):
        t.copy({"write-only": "no"})


def test_catalog_refuses_another_metastore_by_name(tmp_path):
    with pytest.raises(UnsupportedCatalogOptionError, match="'metastore'='hive'.*filesystem, jdbc") as err:
        impl.Catalog(str(tmp_path), options={"metastore": "hive", "uri": "thrift://127.0.0.1:9083"})
    assert err.value.key == "metastore"


@pytest.mark.parametrize("key", ["uri", "lock.enabled", "table-default.bucket"])
def test_catalog_refuses_options_it_does_not_implement(tmp_path, key):
    with pytest.raises(UnsupportedCatalogOptionError, match=f"'{key}'"):
        impl.Catalog(str(tmp_path), options={key: "x"})


def test_catalog_takes_filesystem_metastore_and_its_own_warehouse(tmp_path):
    cat = impl.Catalog(str(tmp_path), options={"metastore": "filesystem", "warehouse": str(tmp_path)})
    assert cat.list_databases() == []
    with pytest.raises(UnsupportedCatalogOptionError, match="'warehouse'.*differs"):
        impl.Catalog(str(tmp_path), options={"warehouse": str(tmp_path / "other")})


def test_catalog_refuses_a_warehouse_that_is_a_regular_file(tmp_path):
    path = tmp_path / "not-a-dir"
    path.write_text("x")
    with pytest.raises(InvalidWarehouseError, match="regular file"):
        impl.Catalog(str(path))


def test_storage_boolean_option_is_strict():
    from impl.fs.object_store import S3Config

    assert S3Config.from_options({"fs.s3.path-style-access": "TRUE"}).path_style is True
    assert S3Config.from_options({"s3.path.style.access": "false"}).path_style is False
    with pytest.raises(InvalidWarehouseError, match="'fs.s3.path-style-access'.*not a boolean"):
        S3Config.from_options({"fs.s3.path-style-access": "yes"})

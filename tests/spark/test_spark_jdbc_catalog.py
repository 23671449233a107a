"""The ``paimon_py`` data source over a JDBC catalog: ``metastore`` = ``jdbc`` and ``uri`` as data
source options make the catalog's rows decide which tables exist (a write creates the table
there too), and the catalog options never land in the table's schema."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import impl
from impl.errors import TableNotExistError


def test_data_source_through_a_jdbc_catalog(spark, tmp_path):
    uri, wh = f"jdbc:sqlite:{tmp_path / 'cat.db'}", str(tmp_path / "wh")
    cat = impl.Catalog(uri, warehouse=wh)
    cat.create_database("db")
    opts = {"metastore": "jdbc", "uri": uri}
    path = os.path.join(wh, "db.db", "t")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
    df.write.format("paimon_py").mode("append").options(**opts).option("primary-key", "id") \
        .option("bucket", "1").save(path)
    assert cat.list_tables("db") == ["t"]
    assert not {"metastore", "uri"} & set(cat.get_table("db.t").schema.options)
    got = spark.read.format("paimon_py").options(**opts).load(path).orderBy("id").collect()
    assert [tuple(r) for r in got] == [(1, "a"), (2, "b")]
    # files the catalog does not list are no table of it
    impl.Catalog(wh).create_table("db.orphan", pa.schema([("x", pa.int64())]))
    with pytest.raises(Exception, match="db.orphan") as e:
        spark.read.format("paimon_py").options(**opts).load(os.path.join(wh, "db.db", "orphan")).collect()
    assert isinstance(e.value, TableNotExistError) or "TableNotExistError" in str(e.value)

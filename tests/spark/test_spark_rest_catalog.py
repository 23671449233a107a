"""The ``paimon_py`` data source refuses ``metastore`` = ``rest`` by name (its writers work on a
filesystem catalog's paths; a REST catalog's tables go through impl.rest.RESTCatalog), rather
than failing inside a Spark task."""

from __future__ import annotations

import os

import pytest

from impl.table.errors import UnsupportedCatalogOptionError


def test_data_source_refuses_a_rest_catalog(spark, tmp_path):
    opts = {"metastore": "rest", "uri": "http://127.0.0.1:9"}
    df = spark.createDataFrame([(1, "a")], "id long, v string")
    with pytest.raises(Exception, match="REST catalog") as e:
        df.write.format("paimon_py").mode("append").options(**opts).save(os.path.join(tmp_path, "wh", "db.db", "t"))
    assert isinstance(e.value, UnsupportedCatalogOptionError) or "UnsupportedCatalogOptionError" in str(e.value)
    assert not os.path.exists(tmp_path / "wh")  # nothing written

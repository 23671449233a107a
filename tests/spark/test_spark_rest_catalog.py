"""The ``paimon_py`` data source through a REST catalog server (``metastore`` = ``rest``): the
server creates the table and publishes every snapshot of a Spark write; Spark reads it back; a
refused token and a path the server does not name are typed errors before anything is written."""

from __future__ import annotations

import os

import pytest

import impl
from impl.errors import ConnectorError
from impl.rest import RESTCatalogServer

TOKEN = "spark-rest-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    wh = tmp_path_factory.mktemp("spark-rest-wh")
    with RESTCatalogServer(str(wh), token=TOKEN) as srv:
        yield srv, str(wh)


def _options(srv, token=TOKEN) -> dict[str, str]:
    return {"metastore": "rest", "uri": srv.uri, "token.provider": "bear", "token": token}


def test_spark_writes_and_reads_through_a_rest_catalog(spark, server):
    srv, wh = server
    path = os.path.join(wh, "db.db", "t")
    opts = _options(srv)
    df = spark.createDataFrame([(k, f"v{k}") for k in range(20)], "id long, v string")
    before = srv.service.commit_counts["published"]
    df.write.format("paimon_py").mode("append").options(**opts).option("primary-key", "id") \
        .option("bucket", "2").save(path)
    upserts = spark.createDataFrame([(k, f"new{k}") for k in range(0, 20, 5)], "id long, v string")
    upserts.write.format("paimon_py").mode("append").options(**opts).save(path)
    assert srv.service.commit_counts["published"] == before + 2  # both snapshots published by the server

    want = {k: (f"new{k}" if k % 5 == 0 else f"v{k}") for k in range(20)}
    got = {r.id: r.v for r in spark.read.format("paimon_py").options(**opts).load(path).collect()}
    assert got == want
    rest = impl.Catalog(None, options=opts)
    assert rest.list_tables("db") == ["t"] and rest.get_table("db.t").primary_keys == ["id"]

    # a refused token: the typed error, and nothing new in the table
    with pytest.raises(Exception, match="CatalogAuthError|refused"):
        upserts.write.format("paimon_py").mode("append").options(**_options(srv, "wrong")).save(path)
    # a path the server does not name for db.t
    other = os.path.join(os.path.dirname(wh), "elsewhere", "db.db", "t")
    with pytest.raises(Exception, match="REST catalog serves db.t at") as e:
        upserts.write.format("paimon_py").mode("append").options(**opts).save(other)
    # the job layer's TableRef refuses it (impl.jobs, shared with Ray): ConnectorError, the base of
    # SparkConnectorError
    assert isinstance(e.value, ConnectorError) or "ConnectorError" in str(e.value)
    assert not os.path.exists(other) and len(rest.get_table("db.t").snapshots()) == 2

"""The JDBC catalog on a real PostgreSQL server (127.0.0.1, from the pgserver wheel's binaries):
impl's catalog lifecycle and lock, Paimon Java reading impl's table through the PostgreSQL JDBC
driver, and a refused password or a closed port as typed errors within the connect timeout."""

from __future__ import annotations

import os
import socket
import time

import pyarrow as pa
import pytest
from paimon_java import JavaServer, harness_classpath, tools_missing
from postgres_server import PASSWORD, USER, PostgresUnavailable, RunningPostgres

import impl
from impl.errors import CatalogConnectionError


@pytest.fixture(scope="module")
def pg():
    pytest.importorskip("psycopg", reason="the postgresql extra (psycopg) is not installed")
    try:
        server = RunningPostgres()
        where = server.__enter__()
    except PostgresUnavailable as e:
        pytest.skip(f"no PostgreSQL server can start here: {e}")
    try:
        yield where
    finally:
        server.__exit__()


def options(uri, **extra):
    return {"metastore": "jdbc", "uri": uri, "jdbc.user": USER, "jdbc.password": PASSWORD, **extra}


@pytest.mark.paimon_java
def test_catalog_on_postgresql_seen_by_java(pg, tmp_path):
    wh = str(tmp_path / "wh")
    cat = impl.Catalog(wh, options=options(pg.jdbc_uri, **{"lock.enabled": "true"}))
    cat.create_database("db", properties={"k": "v"})
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("name", pa.string())]), primary_keys=["id"],
                         options={"bucket": "1"})
    builder = t.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(pa.table({"id": [1, 2], "name": ["a", None]}))
    builder.new_commit().commit(writer.prepare_commit())
    cat.create_table("db.gone", pa.schema([("x", pa.int64())]))
    cat.rename_table("db.gone", "db.gone2")
    cat.drop_table("db.gone2")
    # a second catalog (its own connection) sees the same rows
    other = impl.CatalogFactory.create({**options(pg.jdbc_uri), "warehouse": wh})
    assert other.list_databases() == ["db"] and other.list_tables("db") == ["t"]
    assert other.get_database("db").options["k"] == "v"
    assert sorted(other.get_table("db.t").to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "name": "a"}, {"id": 2, "name": None}]
    assert not os.path.exists(os.path.join(wh, "db.db", "gone2"))

    reason = tools_missing()
    if reason:
        pytest.skip(f"Paimon Java harness needs a JDK and Maven: {reason}")
    with JavaServer(harness_classpath()) as java:
        jdbc = dict(op="jdbc", uri=pg.jdbc_uri, warehouse=wh,
                    options={"jdbc.user": USER, "jdbc.password": PASSWORD})
        assert java.call(action="list", **jdbc) == {"db": ["t"]}
        assert sorted(java.call(action="read", table="db.t", **jdbc)) == [[1, "a"], [2, None]]


def test_refused_login_and_closed_port(pg, tmp_path):
    wh = str(tmp_path / "wh")
    with pytest.raises(CatalogConnectionError, match="password authentication failed") as refused:
        impl.Catalog(wh, options={**options(pg.jdbc_uri), "jdbc.password": "wrong"})
    assert "wrong" not in str(refused.value) and f"{pg.port}/postgres" in str(refused.value)
    with pytest.raises(CatalogConnectionError, match="password=\\*\\*\\*"):
        impl.Catalog(f"{pg.jdbc_uri}?user={USER}&password=wrong", warehouse=wh)
    with pytest.raises(CatalogConnectionError, match="bogus"):  # driver properties reach libpq, which names it
        impl.Catalog(wh, options={**options(pg.jdbc_uri), "jdbc.bogus": "1"})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(CatalogConnectionError, match=f"127.0.0.1:{closed}/postgres"):
        impl.Catalog(f"jdbc:postgresql://127.0.0.1:{closed}/postgres", warehouse=wh,
                     options={"jdbc.user": USER, "jdbc.password": PASSWORD, "jdbc.connectTimeout": "2"})
    assert time.monotonic() - start < 10
    assert not os.path.exists(wh)

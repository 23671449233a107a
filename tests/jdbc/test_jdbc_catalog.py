"""impl's JDBC catalog on SQLite: Paimon Java's rows in the database, the option spellings, bad
input refused by name, and the database and the warehouse kept consistent when one side fails
between the two writes."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

import impl
from impl import CatalogFactory, Environment
from impl.catalog.jdbc import JdbcCatalog
from impl.errors import (
    CatalogConnectionError,
    CatalogStoreError,
    CommitRefusedError,
    DatabaseNotEmptyError,
    TableAlreadyExistError,
    TableNotExistError,
    UnsupportedCatalogOptionError,
)

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
ROWS = pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": ["x", "y", "z"]})


def write(table, rows=ROWS):
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(rows)
    builder.new_commit().commit(writer.prepare_commit())


def rows_of(db_file, sql):
    with sqlite3.connect(db_file) as conn:
        return sorted(conn.execute(sql).fetchall())


@pytest.fixture
def paths(tmp_path):
    return f"jdbc:sqlite:{tmp_path / 'cat.db'}", str(tmp_path / "wh"), str(tmp_path / "cat.db")


def test_java_layout_and_lifecycle(paths):
    uri, wh, db_file = paths
    cat = impl.Catalog(uri, warehouse=wh)
    assert isinstance(cat, JdbcCatalog)
    cat.create_database("db", properties={"owner": "me"})
    assert not os.path.exists(os.path.join(wh, "db.db"))  # a database is rows until its first table
    t = cat.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"})
    write(t)
    assert rows_of(db_file, "SELECT * FROM paimon_tables") == [("jdbc", "db", "t")]
    assert rows_of(db_file, "SELECT * FROM paimon_database_properties") == [
        ("jdbc", "db", "exists", "true"), ("jdbc", "db", "location", os.path.join(wh, "db.db")),
        ("jdbc", "db", "owner", "me")]
    assert rows_of(db_file, "SELECT property_key, property_value FROM paimon_table_properties") == [
        ("bucket", "2"), ("bucket-key", "id"), ("partition", "dt"), ("primary-key", "dt,id")]
    assert cat.get_database("db").options == {"owner": "me", "location": os.path.join(wh, "db.db")}
    # the same rows through the other spellings
    for other in (impl.Catalog(wh, options={"metastore": "jdbc", "uri": uri}),
                  CatalogFactory.create({"metastore": "jdbc", "uri": uri, "warehouse": wh})):
        assert other.list_databases() == ["db"] and other.list_tables("db") == ["t"]
        assert other.get_table("db.t").to_arrow().sort_by("id").to_pylist() == ROWS.to_pylist()
    # another catalog key in the same database sees none of it
    assert impl.Catalog(uri, warehouse=wh, options={"catalog-key": "other"}).list_databases() == []
    cat.rename_table("db.t", "db.u")
    assert cat.list_tables("db") == ["u"] and not cat.table_exists("db.t")
    assert rows_of(db_file, "SELECT DISTINCT table_name FROM paimon_table_properties") == [("u",)]
    assert cat.get_table("db.u").to_arrow().num_rows == 3
    with pytest.raises(DatabaseNotEmptyError):
        cat.drop_database("db")
    cat.drop_database("db", cascade=True)
    assert cat.list_databases() == [] and not os.path.exists(os.path.join(wh, "db.db"))
    assert rows_of(db_file, "SELECT * FROM paimon_table_properties") == []


def test_bad_input_is_refused_by_name(paths, tmp_path):
    uri, wh, _ = paths
    with pytest.raises(UnsupportedCatalogOptionError, match="'oracle' database is not supported"):
        impl.Catalog("jdbc:oracle:thin:@h:1521/x", warehouse=wh)
    with pytest.raises(UnsupportedCatalogOptionError, match="'uri'.*is required"):
        impl.Catalog(wh, options={"metastore": "jdbc"})
    with pytest.raises(UnsupportedCatalogOptionError, match="'warehouse'.*is required"):
        impl.Catalog(uri)
    with pytest.raises(UnsupportedCatalogOptionError, match="'table-default.x'"):
        impl.Catalog(uri, warehouse=wh, options={"table-default.x": "1"})
    with pytest.raises(CatalogConnectionError, match="cannot open the SQLite database"):
        impl.Catalog(f"jdbc:sqlite:{tmp_path / 'missing' / 'cat.db'}", warehouse=wh)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database" * 100)
    with pytest.raises(CatalogConnectionError, match=r"garbage\.db.*catalog-key 'jdbc'"):
        impl.Catalog(f"jdbc:sqlite:{garbage}", warehouse=wh)
    assert not os.path.exists(wh)  # refused calls wrote nothing to the warehouse
    # a table whose files exist but which the database does not list does not exist here
    fs_cat = impl.Catalog(wh)
    fs_cat.create_database("db")
    fs_cat.create_table("db.orphan", SCHEMA)
    cat = impl.Catalog(uri, warehouse=wh)
    cat.create_database("db")
    with pytest.raises(TableNotExistError, match="db.orphan"):
        cat.get_table("db.orphan")
    with pytest.raises(TableAlreadyExistError):  # its files are not overwritten either
        cat.create_table("db.orphan", SCHEMA)
    # and a table the database lists whose files are gone says so
    cat.create_table("db.t", SCHEMA)
    shutil.rmtree(os.path.join(wh, "db.db", "t"))
    with pytest.raises(TableNotExistError, match=r"'db.t' is listed by catalog jdbc:sqlite:.*but has no schema"):
        cat.get_table("db.t")


class Boom(RuntimeError):
    pass


def test_one_side_failing_leaves_both_consistent(paths, monkeypatch):
    uri, wh, db_file = paths
    cat = impl.Catalog(uri, warehouse=wh)
    cat.create_database("db")
    # create: schema file written, then the row insert fails -> no directory, no row
    monkeypatch.setattr(cat.store, "insert_table", lambda *a, **k: (_ for _ in ()).throw(Boom("db down")))
    with pytest.raises(Boom):
        cat.create_table("db.t", SCHEMA)
    assert not os.path.exists(os.path.join(wh, "db.db", "t")) and cat.list_tables("db") == []
    monkeypatch.undo()
    write(cat.create_table("db.t", SCHEMA))
    # rename: directory moved, then the rows cannot move -> the directory is moved back
    monkeypatch.setattr(cat.store, "rename_table", lambda *a: (_ for _ in ()).throw(Boom("db down")))
    with pytest.raises(Boom):
        cat.rename_table("db.t", "db.u")
    monkeypatch.undo()
    assert cat.list_tables("db") == ["t"] and not os.path.exists(os.path.join(wh, "db.db", "u"))
    assert cat.get_table("db.t").to_arrow().num_rows == 3
    # the table row and its properties commit together: a clash in the properties rolls the row back
    with sqlite3.connect(db_file) as conn:
        conn.execute("INSERT INTO paimon_table_properties VALUES ('jdbc', 'db', 'y', 'a', '0')")
    with pytest.raises(sqlite3.IntegrityError):
        cat.store.insert_table("db", "y", {"a": "1"})
    assert cat.list_tables("db") == ["t"]
    # drop: the rows go first; files that cannot be removed stay unlisted, never the reverse
    monkeypatch.setattr(cat, "_remove_tree", lambda path: (_ for _ in ()).throw(Boom("disk")))
    with pytest.raises(Boom):
        cat.drop_table("db.t")
    assert cat.list_tables("db") == [] and os.path.exists(os.path.join(wh, "db.db", "t"))


def test_lock_rules(paths):
    uri, wh, db_file = paths
    env = Environment.seeded(1)  # simulated sleeps: the timeout passes without waiting
    cat = impl.Catalog(uri, warehouse=wh, options={"lock.enabled": "true", "lock-acquire-timeout": "10 s",
                                                   "lock-check-max-sleep": "1 s"}, env=env)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA)
    assert rows_of(db_file, "SELECT * FROM paimon_distributed_locks") == []  # released after use
    assert cat.store.try_acquire_lock("jdbc.db.u", 10)  # another process holds db.u's lock
    with pytest.raises(CatalogStoreError, match="lock 'jdbc.db.u'.*lock-acquire-timeout"):
        cat.create_table("db.u", SCHEMA)
    assert not os.path.exists(os.path.join(wh, "db.db", "u"))
    cat.store.release_lock("jdbc.db.u")
    cat.create_table("db.u", SCHEMA)
    assert cat.list_tables("db") == ["t", "u"]


def test_commits_hold_the_table_lock_when_locks_are_enabled(paths):
    """Java publishes snapshots under the catalog lock (RenamingSnapshotCommit with a lock): so
    does impl, or a Java writer on a store without conditional writes could publish the same id."""
    uri, wh, db_file = paths
    env = Environment.seeded(2)
    cat = impl.Catalog(uri, warehouse=wh, options={"lock.enabled": "true", "lock-acquire-timeout": "10 s",
                                                   "lock-check-max-sleep": "1 s"}, env=env)
    cat.create_database("db")
    write(cat.create_table("db.t", SCHEMA))
    t = cat.get_table("db.t")
    assert rows_of(db_file, "SELECT * FROM paimon_distributed_locks") == []
    assert cat.store.try_acquire_lock("jdbc.db.t", 10)  # another writer is publishing
    with pytest.raises(CommitRefusedError, match="lock 'jdbc.db.t'.*lock-acquire-timeout"):
        write(t)
    assert t.snapshot_manager().latest_snapshot_id() == 1
    cat.store.release_lock("jdbc.db.t")
    write(cat.get_table("db.t"))
    assert cat.get_table("db.t").snapshot_manager().latest_snapshot_id() == 2
    assert cat.get_table("db.t").to_arrow().num_rows == 2 * ROWS.num_rows
    # without locks (the default on a local warehouse) a held lock row does not matter
    plain = impl.Catalog(uri, warehouse=wh, env=env)
    assert plain.store.try_acquire_lock("jdbc.db.t", 10)
    write(plain.get_table("db.t"))
    assert plain.get_table("db.t").snapshot_manager().latest_snapshot_id() == 3


def test_main_job_catalog_flag():
    from simulation.spark_job import parse_args

    cfg = parse_args(["--catalog", "jdbc:postgresql://127.0.0.1/db?user=u&password=secret"])
    assert dict(cfg.catalog_options) == {"metastore": "jdbc",
                                         "uri": "jdbc:postgresql://127.0.0.1/db?user=u&password=secret"}
    assert "secret" not in str(cfg.redacted())
    with pytest.raises(SystemExit):
        parse_args(["--catalog", "thrift://metastore:9083"])


def test_racing_creators_make_one_table(paths):
    uri, wh, db_file = paths
    impl.Catalog(uri, warehouse=wh).create_database("db")
    catalogs = [impl.Catalog(uri, warehouse=wh) for _ in range(6)]
    barrier = threading.Barrier(len(catalogs))

    def create(cat):
        barrier.wait()
        try:
            cat.create_table("db.r", SCHEMA)
            return "created"
        except TableAlreadyExistError:
            return "exists"

    with ThreadPoolExecutor(len(catalogs)) as pool:
        outcomes = sorted(pool.map(create, catalogs))
    assert outcomes == ["created"] + ["exists"] * (len(catalogs) - 1)
    assert rows_of(db_file, "SELECT * FROM paimon_tables") == [("jdbc", "db", "r")]
    assert sorted(os.listdir(os.path.join(wh, "db.db", "r", "schema"))) == ["schema-0"]

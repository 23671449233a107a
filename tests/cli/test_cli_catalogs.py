"""Every ``paimon-py`` command on each of the three catalogs: a filesystem warehouse, a JDBC
(SQLite) catalog and a REST catalog server started on 127.0.0.1 by the test.

The commands are listed from the CLI's own parser, so a command added later runs here too (and
fails :func:`test_every_command_has_a_case` until it has a case below). Each case checks what the
command printed (``--json``) against what the catalog's Python API answers, and for the commands
that change the table, the change itself as the API sees it afterwards. Before the catalogs
shared one API, every command failed on a REST catalog (``'RESTCatalog' object has no attribute
'file_io'``, exit 3).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import posixpath
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa
import pytest

import impl
from impl.cli import EXIT_OK, main
from impl.cli.main import build_parser
from impl.rest import RESTCatalogServer

TOKEN = "cli-catalogs-token"
KINDS = ("filesystem", "jdbc", "rest")
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("day", pa.date32())])


def rows(dts, ids, names) -> pa.Table:
    return pa.table({"dt": dts, "id": pa.array(ids, pa.int64()), "name": names,
                     "day": pa.array([dt.date(2024, 1, i % 28 + 1) for i in ids], pa.date32())}, schema=SCHEMA)


def expected_json(table: pa.Table) -> list[dict]:
    """``table``'s rows as the JSON output documents them: dates and timestamps in ISO 8601, maps
    as objects."""
    out = []
    for row in table.to_pylist():
        for f in table.schema:
            v = row[f.name]
            if isinstance(v, (dt.date, dt.datetime)):
                row[f.name] = v.isoformat()
            elif pa.types.is_map(f.type) and v is not None:
                row[f.name] = dict(v)
        out.append(row)
    return out


@dataclass
class Setup:
    """A catalog holding db.t (three APPEND snapshots, tag v1 on snapshot 1, branch dev),
    db.empty and database other; and the CLI arguments that open the same catalog."""

    kind: str
    catalog: impl.Catalog
    argv: list[str]

    def table(self, name: str = "db.t"):
        return self.catalog.get_table(name)


def fill(cat: impl.Catalog) -> None:
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"})
    t.write_arrow(rows(["a", "a", "b"], [1, 2, 3], ["x", "y", None]))
    t.write_arrow(rows(["b", "b"], [4, 5], ["z", "x"]))
    t.write_arrow(rows(["a"], [1], ["x2"]))
    t.create_tag("v1", 1)
    t.create_branch("dev", tag="v1")
    cat.create_table("db.empty", pa.schema([("k", pa.int32())]))
    cat.create_database("other")


@pytest.fixture(params=KINDS)
def setup(request, tmp_path):
    kind = request.param
    warehouse = str(tmp_path / "wh")
    if kind == "filesystem":
        (tmp_path / "wh").mkdir()
        cat = impl.Catalog(warehouse)
        fill(cat)
        yield Setup(kind, cat, ["--warehouse", warehouse])
    elif kind == "jdbc":
        uri = f"jdbc:sqlite:{tmp_path / 'catalog.db'}"
        with impl.Catalog(uri, warehouse=warehouse) as cat:
            fill(cat)
            yield Setup(kind, cat, ["--warehouse", uri, "--option", f"warehouse={warehouse}"])
    else:
        with RESTCatalogServer(warehouse, token=TOKEN) as server:
            options = {"metastore": "rest", "uri": server.uri, "token.provider": "bear", "token": TOKEN}
            cat = impl.Catalog("wh", options=options)
            fill(cat)
            yield Setup(kind, cat, ["--warehouse", "wh", *[a for k, v in options.items() for a in ("-o", f"{k}={v}")]])


def cli(capsys, setup: Setup, *argv: str):
    """The JSON document a command prints (exit 0 asserted)."""
    code = main([*setup.argv, "--json", *argv])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    return json.loads(out)


# ---------------------------------------------------------------------------- the cases


Check = Callable[[Setup, object], None]


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    check: Check


def _databases(s: Setup, doc) -> None:
    assert doc["rows"] == [{"database": "db"}, {"database": "other"}] == [
        {"database": d} for d in s.catalog.list_databases()]


def _tables(s: Setup, doc) -> None:
    assert [(r["database"], r["table"]) for r in doc["rows"]] == [("db", "empty"), ("db", "t")]


def _describe(s: Setup, doc) -> None:
    t = s.table()
    assert doc["table"] == "db.t" and doc["path"] == t.path and doc["branch"] == "main"
    assert doc["primary_keys"] == ["dt", "id"] and doc["partition_keys"] == ["dt"] and doc["bucket"] == 1
    assert doc["latest_snapshot_id"] == 3 and doc["record_count"] == t.latest_snapshot().total_record_count
    assert [c["name"] for c in doc["columns"]] == SCHEMA.names


def _system(name: str, count: int | None) -> Check:
    def check(s: Setup, doc) -> None:
        expected = s.table(f"db.t${name}").to_arrow()
        assert doc["rows"] == expected_json(expected)
        assert expected.num_rows > 0 if count is None else expected.num_rows == count
    return check


def _read(s: Setup, doc) -> None:
    got = sorted((r["dt"], r["id"], r["name"]) for r in doc["rows"])
    assert got == [("a", 1, "x2"), ("a", 2, "y"), ("b", 3, None), ("b", 4, "z"), ("b", 5, "x")]


def _compact(s: Setup, doc) -> None:
    t = s.table()
    assert doc["files_before"] == 4 and doc["files_after"] == 2  # one file per partition (bucket 1)
    assert doc["snapshot_ids"] == [4] and t.latest_snapshot().id == 4
    assert t.latest_snapshot().commit_kind.value == "COMPACT"


def _expire(s: Setup, doc) -> None:
    assert doc["expired_snapshot_ids"] == [1, 2]
    assert [snap.id for snap in s.table().snapshots()] == [3]
    assert s.table().to_arrow().num_rows == 5


ORPHAN = "bucket-0/data-orphan-0.parquet"


def _plant_orphan(s: Setup) -> str:
    t = s.table()
    path = posixpath.join(t.path, "dt=a", ORPHAN)
    t.file_io.write_bytes(path, b"not referenced by any snapshot")
    return path


def _orphans(s: Setup, doc) -> None:
    assert doc["count"] == 1 and [posixpath.basename(r["path"]) for r in doc["files"]] == [posixpath.basename(ORPHAN)]
    t = s.table()
    assert not t.file_io.exists(posixpath.join(t.path, "dt=a", ORPHAN))
    assert t.to_arrow().num_rows == 5


def _rollback(s: Setup, doc) -> None:
    assert doc["latest_snapshot_id"] == 2 and s.table().latest_snapshot().id == 2
    assert s.table().to_arrow().num_rows == 5  # snapshot 2: ids 1..5, id 1 still "x"
    assert "x2" not in s.table().to_arrow().column("name").to_pylist()


def _create_tag(s: Setup, doc) -> None:
    assert doc["tag_name"] == "v2" and doc["snapshot_id"] == 2
    assert s.table("db.t$tags").to_arrow().column("tag_name").to_pylist() == ["v1", "v2"]


def _delete_tag(s: Setup, doc) -> None:
    assert doc["tag_name"] == "v1"
    assert s.table("db.t$tags").to_arrow().num_rows == 0


def _sql(s: Setup, doc) -> None:
    assert doc["rows"] == [{"n": 5, "names": 4}]


def _doctor(s: Setup, doc) -> None:
    assert doc["table"] == "db.t" and doc["healthy"] is True and doc["latest_snapshot_id"] == 3
    assert doc["damaged"] == []


def _repair(s: Setup, doc) -> None:
    assert doc["table"] == "db.t" and doc["set_aside"] == []
    assert s.table().latest_snapshot().id == 3


ICEBERG_SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])


def _iceberg_table(s: Setup) -> None:
    """db.ice keeps Iceberg metadata; its second commit went in with the option off for that
    write (as a crash between the Paimon commit and the Iceberg write leaves it): behind by one."""
    t = s.catalog.create_table("db.ice", ICEBERG_SCHEMA, partition_keys=["dt"],
                               options={"metadata.iceberg.storage": "table-location"})
    t.write_arrow(pa.table({"dt": ["a", "b"], "id": pa.array([1, 2], pa.int64())}))
    t.copy({"metadata.iceberg.storage": "disabled"}).write_arrow(pa.table({"dt": ["a"], "id": pa.array([3], pa.int64())}))


def _iceberg(s: Setup, doc) -> None:
    t = s.table("db.ice")
    assert doc["table"] == "db.ice" and doc["storage"] == "table-location"
    assert doc["synced"] is True and doc["behind"] is False
    assert doc["current_snapshot_id"] == doc["mirrors_paimon_snapshot_id"] == doc["latest_paimon_snapshot_id"] == 2
    assert doc["metadata_location"] == posixpath.join(t.file_io.uri(t.path), "metadata", "v2.metadata.json")
    assert [(f["field_id"], f["name"], f["type"]) for f in doc["schema"]] == [(0, "dt", "string"), (1, "id", "long")]
    assert doc["partition_spec"] == [{"field_id": 1000, "name": "dt", "source_id": 0, "transform": "identity"}]
    assert [(h["snapshot_id"], h["parent_id"], h["total_records"]) for h in doc["snapshots"]] == [(1, None, 2),
                                                                                                  (2, 1, 3)]


# command name -> (arguments after it, what its output must be); `before` prepares the table
CASES: dict[str, Case] = {
    "databases": Case((), _databases),
    "tables": Case((), _tables),
    "describe": Case(("db.t",), _describe),
    "snapshots": Case(("db.t",), _system("snapshots", 3)),
    "schemas": Case(("db.t",), _system("schemas", 1)),
    "options": Case(("db.t",), _system("options", None)),
    "manifests": Case(("db.t",), _system("manifests", None)),
    "files": Case(("db.t",), _system("files", 4)),
    "partitions": Case(("db.t",), _system("partitions", 2)),
    "buckets": Case(("db.t",), _system("buckets", 2)),
    "tags": Case(("db.t",), _system("tags", 1)),
    "branches": Case(("db.t",), _system("branches", 1)),
    "read": Case(("db.t",), _read),
    "compact": Case(("db.t", "--full"), _compact),
    "expire-snapshots": Case(("db.t", "--retain-max", "1", "--retain-min", "1", "--older-than", "0 s"), _expire),
    "remove-orphan-files": Case(("db.t", "--older-than", "2999-01-01 00:00:00"), _orphans),
    "rollback-to": Case(("db.t", "--snapshot", "2"), _rollback),
    "create-tag": Case(("db.t", "v2", "--snapshot", "2"), _create_tag),
    "delete-tag": Case(("db.t", "v1"), _delete_tag),
    "sql": Case(("select count(*) as n, count(distinct name) as names from db.t",), _sql),
    # commands of other branches: run once their parser has them
    "doctor": Case(("db.t",), _doctor),
    "repair": Case(("db.t",), _repair),
    "iceberg": Case(("db.ice", "--sync"), _iceberg),
}
BEFORE: dict[str, Callable[[Setup], object]] = {"remove-orphan-files": _plant_orphan, "iceberg": _iceberg_table}


def parser_commands() -> list[str]:
    """The command names of the CLI's parser (aliases left out)."""
    subs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [choice.dest for choice in subs._choices_actions]


COMMANDS = parser_commands()


def test_every_command_has_a_case():
    assert set(COMMANDS) - set(CASES) == set(), "add a case for each new command to CASES"
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("command", COMMANDS)
def test_command_on_every_catalog(capsys, setup, command):
    case = CASES.get(command)
    if case is None:
        pytest.fail(f"no case for command {command!r}: add one to CASES")
    if command in BEFORE:
        BEFORE[command](setup)
    case.check(setup, cli(capsys, setup, command, *case.argv))


def test_catalogs_share_one_api(setup):
    """``impl.Catalog(...)`` returns the implementation its arguments name, each an impl.Catalog."""
    assert isinstance(setup.catalog, impl.Catalog)
    assert type(setup.catalog).__name__ == {"filesystem": "FileSystemCatalog", "jdbc": "JdbcCatalog",
                                           "rest": "RESTCatalog"}[setup.kind]


def test_a_missing_warehouse_is_an_error_not_an_empty_listing(capsys, tmp_path):
    code = main(["--warehouse", str(tmp_path / "nope"), "databases"])
    assert code == 1 and "does not exist" in capsys.readouterr().err

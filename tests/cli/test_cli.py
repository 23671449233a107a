"""``paimon-py`` (impl.cli): every command through its real entry point ``main(argv)``, its text
and JSON output read back and compared with what the Python API answers, and the exit code of
each kind of error. One test runs ``python -m impl.cli`` in a subprocess.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import posixpath
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import impl
from impl.cli import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, EXIT_USER_ERROR, main
from impl.cli import commands as cli_commands
from impl.predicate.where import parse_where

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("day", pa.date32())])


def rows(dts, ids, names):
    return pa.table({"dt": dts, "id": pa.array(ids, pa.int64()), "name": names,
                     "day": pa.array([dt.date(2024, 1, i % 28 + 1) for i in ids], pa.date32())}, schema=SCHEMA)


def make_table(warehouse: Path) -> impl.FileStoreTable:
    """db.t: a partitioned primary-key table with three APPEND snapshots (the third updates id 1
    and deletes nothing), a tag v1 on snapshot 1 and a branch dev; and an empty table db.empty."""
    cat = impl.Catalog(str(warehouse))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"})
    t.write_arrow(rows(["a", "a", "b"], [1, 2, 3], ["x", "y", None]))
    t.write_arrow(rows(["b", "b"], [4, 5], ["z", "x"]))
    t.write_arrow(rows(["a"], [1], ["x2"]))
    t.create_tag("v1", 1)
    t.create_branch("dev", tag="v1")
    cat.create_table("db.empty", pa.schema([("k", pa.int32())]))
    cat.create_database("other")
    return t


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """A table the read-only commands share."""
    warehouse = tmp_path_factory.mktemp("cli_shared")
    make_table(warehouse)
    return warehouse


@pytest.fixture
def fresh(tmp_path):
    """A table of its own, for the commands that change it."""
    make_table(tmp_path)
    return tmp_path


def run(capsys, warehouse, *argv: str) -> tuple[int, str, str]:
    code = main(["--warehouse", str(warehouse), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, warehouse, *argv: str):
    code, out, err = run(capsys, warehouse, "--json", *argv)
    assert code == EXIT_OK, err
    return json.loads(out)


def run_text(capsys, warehouse, *argv: str) -> str:
    code, out, err = run(capsys, warehouse, "--style", "plain", *argv)
    assert code == EXIT_OK, err
    return out


def parse_text_table(text: str) -> list[dict[str, str]]:
    """The rows of a plain text table (header, dashes, rows, "(N rows)"), cut at the columns the
    dash rule marks."""
    lines = text.rstrip("\n").split("\n")
    rule = next(i for i, line in enumerate(lines) if line.strip() and set(line.strip()) <= {"-", " "})
    spans = [m.span() for m in re.finditer(r"-+", lines[rule])]
    spans = [(a, spans[i + 1][0] if i + 1 < len(spans) else None) for i, (a, _) in enumerate(spans)]
    names = [lines[rule - 1][a:b].strip() for a, b in spans]
    body = lines[rule + 1:]
    assert re.fullmatch(r"\s*\(\d+ rows?\)", body[-1]), body[-1]
    assert int(re.search(r"\d+", body[-1]).group()) == len(body) - 1
    return [{n: line[a:b].strip() for n, (a, b) in zip(names, spans, strict=True)} for line in body[:-1]]


def expected_json(table: pa.Table) -> list[dict]:
    """``table``'s rows as the JSON output documents them: timestamps and dates in ISO 8601, maps
    as objects, decimals as strings."""
    out = []
    for row in table.to_pylist():
        conv = {}
        for f in table.schema:
            v = row[f.name]
            if isinstance(v, (dt.date, dt.datetime)):
                v = v.isoformat()
            elif pa.types.is_map(f.type) and v is not None:
                v = dict(v)
            conv[f.name] = v
        out.append(conv)
    return out


def as_text(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ", timespec="milliseconds" if v.microsecond else "seconds")
    return str(v)


# ---------------------------------------------------------------------------- catalog


def test_databases_and_tables(capsys, shared):
    cat = impl.Catalog(str(shared))
    doc = run_json(capsys, shared, "databases")
    assert doc == {"columns": ["database"], "rows": [{"database": d} for d in cat.list_databases()]}
    assert [r["database"] for r in parse_text_table(run_text(capsys, shared, "databases"))] == ["db", "other"]
    doc = run_json(capsys, shared, "tables")
    assert [(r["database"], r["table"]) for r in doc["rows"]] == [("db", t) for t in cat.list_tables("db")]
    assert parse_text_table(run_text(capsys, shared, "tables", "db")) == [
        {"database": "db", "table": "empty"}, {"database": "db", "table": "t"}]
    assert run_json(capsys, shared, "tables", "other")["rows"] == []


def test_describe(capsys, shared):
    t = impl.Catalog(str(shared)).get_table("db.t")
    doc = run_json(capsys, shared, "describe", "db.t")
    assert doc["table"] == "db.t" and doc["branch"] == "main" and doc["path"] == t.path
    assert doc["primary_keys"] == ["dt", "id"] and doc["partition_keys"] == ["dt"]
    assert doc["bucket"] == 1 and doc["bucket_keys"] == list(t.bucket_keys)
    assert doc["schema_id"] == t.schema.id and doc["latest_snapshot_id"] == t.latest_snapshot().id
    assert doc["record_count"] == t.latest_snapshot().total_record_count
    assert [(c["name"], c["type"]) for c in doc["columns"]] == [(f.name, str(f.type)) for f in t.schema.fields]
    assert [c["key"] for c in doc["columns"]] == ["PRI", "PRI", "", ""]
    assert doc["options"] == dict(t.schema.options)
    text = run_text(capsys, shared, "describe", "db.t")
    assert "primary_keys:       dt, id" in text and "partition_keys:     dt" in text
    assert "  bucket  1" in text  # the options, under their heading
    # a branch is described with its own name
    assert run_json(capsys, shared, "describe", "db.t$branch_dev")["branch"] == "dev"


# ---------------------------------------------------------------------------- system tables


@pytest.mark.parametrize("name", sorted(cli_commands.SYSTEM_TABLE_COMMANDS))
def test_show_commands_print_the_system_tables(capsys, shared, name):
    system = impl.Catalog(str(shared)).get_table(f"db.t${name}")
    expected = system.to_arrow()
    doc = run_json(capsys, shared, name, "db.t")
    assert doc["columns"] == system.arrow_schema.names
    assert doc["rows"] == expected_json(expected)
    assert expected.num_rows > 0
    # the text table: every column, every row, each value as the API has it
    parsed = parse_text_table(run_text(capsys, shared, name, "db.t"))
    assert len(parsed) == expected.num_rows
    for got, want in zip(parsed, expected.to_pylist(), strict=True):
        for column, value in want.items():
            if not isinstance(value, (list, dict)) and not (isinstance(value, str) and "  " in value):
                assert got[column] == as_text(value), (column, got[column], value)


def test_show_commands_filter_project_and_limit(capsys, shared):
    t = impl.Catalog(str(shared)).get_table("db.t")
    doc = run_json(capsys, shared, "snapshots", "db.t", "--where", "snapshot_id >= 2", "--columns",
                   "snapshot_id,commit_kind,total_record_count")
    assert doc["columns"] == ["snapshot_id", "commit_kind", "total_record_count"]
    assert doc["rows"] == [{"snapshot_id": s.id, "commit_kind": s.commit_kind.value,
                            "total_record_count": s.total_record_count} for s in t.snapshots() if s.id >= 2]
    assert len(run_json(capsys, shared, "files", "db.t", "--limit", "1")["rows"]) == 1
    assert run_json(capsys, shared, "tags", "db.t", "--columns", "tag_name,snapshot_id")["rows"] == [
        {"tag_name": "v1", "snapshot_id": 1}]
    assert [r["branch_name"] for r in run_json(capsys, shared, "branches", "db.t")["rows"]] == ["dev"]
    # of a branch
    dev = run_json(capsys, shared, "snapshots", "db.t$branch_dev", "--columns", "snapshot_id")
    assert dev["rows"] == [{"snapshot_id": 1}]


# ---------------------------------------------------------------------------- read


def api_rows(t, predicate=None, projection=None):
    return t.to_arrow(predicate, projection).sort_by([(c, "ascending") for c in (projection or ["dt", "id"])])


def test_read_with_where_columns_and_limit(capsys, shared):
    t = impl.Catalog(str(shared)).get_table("db.t")
    pb = t.new_read_builder().new_predicate_builder()
    cases = {
        "id = 1 and name = 'x2'": pb.and_(pb.equal("id", 1), pb.equal("name", "x2")),
        "id in (2, 4) or name is null": pb.or_(pb.is_in("id", [2, 4]), pb.is_null("name")),
        "dt = 'b' and (id > 3 or id <= 3) and name is not null": pb.and_(
            pb.equal("dt", "b"), pb.or_(pb.greater_than("id", 3), pb.less_or_equal("id", 3)), pb.is_not_null("name")),
        "day >= '2024-01-04' and id not in (5)": pb.and_(pb.greater_or_equal("day", dt.date(2024, 1, 4)),
                                                         pb.is_not_in("id", [5])),
        "3 < id": pb.greater_than("id", 3),
        "id between 2 and 4": pb.between("id", 2, 4),
        '"name" <> \'x\'': pb.not_equal("name", "x"),
    }
    for where, predicate in cases.items():
        want = api_rows(t, predicate)
        assert want.num_rows > 0, where
        doc = run_json(capsys, shared, "read", "db.t", "--where", where)
        got = sorted(doc["rows"], key=lambda r: (r["dt"], r["id"]))
        assert got == expected_json(want), where
    doc = run_json(capsys, shared, "read", "db.t", "--columns", "name,id", "--where", "dt = 'a'")
    assert doc["columns"] == ["name", "id"]
    assert sorted(doc["rows"], key=lambda r: r["id"]) == expected_json(
        api_rows(t, pb.equal("dt", "a"), ["id", "name"]).select(["name", "id"]))
    assert len(run_json(capsys, shared, "read", "db.t", "--limit", "2")["rows"]) == 2
    assert len(run_json(capsys, shared, "read", "db.t", "--limit", "0")["rows"]) == t.to_arrow().num_rows
    # text: the merged rows (id 1 updated), NULL spelled out
    parsed = parse_text_table(run_text(capsys, shared, "read", "db.t", "--columns", "id,name"))
    assert sorted((int(r["id"]), r["name"]) for r in parsed) == [(1, "x2"), (2, "y"), (3, "NULL"), (4, "z"), (5, "x")]
    # time travel
    doc = run_json(capsys, shared, "read", "db.t", "--snapshot", "1", "--columns", "id,name", "--where", "id = 1")
    assert doc["rows"] == [{"id": 1, "name": "x"}]
    assert run_json(capsys, shared, "read", "db.t", "--tag", "v1", "--where", "id > 3")["rows"] == []
    # --version: scan.version (a tag, else a snapshot id)
    assert run_json(capsys, shared, "read", "db.t", "--version", "v1", "--where", "id > 3")["rows"] == []
    doc = run_json(capsys, shared, "read", "db.t", "--version", "1", "--columns", "id,name", "--where", "id = 1")
    assert doc["rows"] == [{"id": 1, "name": "x"}]


def test_where_parser_matches_the_builder(shared):
    t = impl.Catalog(str(shared)).get_table("db.t")
    pb = t.new_read_builder().new_predicate_builder()
    assert parse_where("ID = 1 OR id = 2 AND name = 'it''s'", pb, t.arrow_schema) == pb.or_(
        pb.equal("id", 1), pb.and_(pb.equal("id", 2), pb.equal("name", "it's")))


# ---------------------------------------------------------------------------- maintenance


def test_compact(capsys, fresh):
    t = impl.Catalog(str(fresh)).get_table("db.t")
    files_before = impl.Catalog(str(fresh)).get_table("db.t$files").to_arrow().num_rows
    doc = run_json(capsys, fresh, "compact", "db.t", "--full")
    latest = t.latest_snapshot()
    assert latest.commit_kind.value == "COMPACT" and doc["snapshot_ids"] == [latest.id]
    assert doc["files_before"] == files_before == 4
    assert doc["files_after"] == impl.Catalog(str(fresh)).get_table("db.t$files").to_arrow().num_rows == 2
    assert doc["engine"] == "local" and doc["full"] is True
    # nothing left to do: no snapshot
    text = run_text(capsys, fresh, "compact", "db.t", "--full")
    assert "snapshot_ids:" in text and t.latest_snapshot().id == latest.id


def test_expire_snapshots(capsys, fresh):
    t = impl.Catalog(str(fresh)).get_table("db.t")
    doc = run_json(capsys, fresh, "expire-snapshots", "db.t", "--retain-max", "1", "--retain-min", "1",
                   "--older-than", "2999-01-01 00:00:00")
    assert doc["expired_snapshot_ids"] == [1, 2]
    assert [s.id for s in t.snapshots()] == [3]
    assert doc["deleted_metadata_files"] > 0
    # Paimon's spelling of the option, and the table's own retention (nothing older than an hour)
    doc = run_json(capsys, fresh, "expire_snapshots", "db.t", "--retain_min", "1", "--older_than", "1 h")
    assert doc["expired_snapshot_ids"] == []


def test_remove_orphan_files(capsys, fresh):
    t = impl.Catalog(str(fresh)).get_table("db.t")
    bucket_dir = posixpath.dirname(impl.Catalog(str(fresh)).get_table("db.t$files").to_arrow()
                                   .column("file_path")[0].as_py())
    orphan = Path(bucket_dir) / "data-orphan-0.parquet"
    orphan.write_bytes(b"not referenced")
    old = time.time() - 3 * 86400
    os.utime(orphan, (old, old))
    doc = run_json(capsys, fresh, "remove-orphan-files", "db.t", "--dry-run")
    assert doc["dry_run"] is True and doc["count"] == 1
    assert [r["path"] for r in doc["files"]] == [str(orphan)] and orphan.exists()
    # not older than two days ago... then older than now
    assert run_json(capsys, fresh, "remove-orphan-files", "db.t", "--older-than", "4 d")["count"] == 0
    doc = run_json(capsys, fresh, "remove_orphan_files", "db.t")
    assert doc["count"] == 1 and not orphan.exists()
    assert t.to_arrow().num_rows == 5  # the table still reads


def test_rollback_to_snapshot_and_tag(capsys, fresh):
    t = impl.Catalog(str(fresh)).get_table("db.t")
    doc = run_json(capsys, fresh, "rollback-to", "db.t", "--snapshot", "2")
    assert doc["latest_snapshot_id"] == 2 == t.latest_snapshot().id and doc["target"] == 2
    assert doc["deleted_files"] > 0
    doc = run_json(capsys, fresh, "rollback_to", "db.t", "--tag", "v1")
    assert doc["latest_snapshot_id"] == 1 == t.latest_snapshot().id
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_create_and_delete_tags(capsys, fresh):
    t = impl.Catalog(str(fresh)).get_table("db.t")
    doc = run_json(capsys, fresh, "create-tag", "db.t", "v3")
    assert doc == {"table": "db.t", "tag_name": "v3", "snapshot_id": 3}
    doc = run_json(capsys, fresh, "create_tag", "db.t", "v2", "--snapshot", "2", "--time-retained", "7 d")
    assert doc["snapshot_id"] == 2
    assert {(tag.name, tag.snapshot.id) for tag in t.tags()} == {("v1", 1), ("v2", 2), ("v3", 3)}
    assert run_json(capsys, fresh, "tags", "db.t", "--where", "tag_name = 'v2'",
                    "--columns", "time_retained")["rows"] == [{"time_retained": "PT168H"}]
    doc = run_json(capsys, fresh, "delete-tag", "db.t", "v3")
    assert doc["tag_name"] == "v3" and {tag.name for tag in t.tags()} == {"v1", "v2"}
    code, _, err = run(capsys, fresh, "create-tag", "db.t", "v2")
    assert code == EXIT_USER_ERROR and "v2" in err and "Traceback" not in err


# ---------------------------------------------------------------------------- sql


def test_sql_over_tables_and_system_tables(capsys, shared):
    pytest.importorskip("duckdb")
    cat = impl.Catalog(str(shared))
    t = cat.get_table("db.t")
    doc = run_json(capsys, shared, "sql", "select dt, count(*) as n from db.t group by dt order by dt")
    want = t.to_arrow().group_by("dt").aggregate([("id", "count")]).sort_by("dt")
    assert doc == {"columns": ["dt", "n"],
                   "rows": [{"dt": d, "n": n} for d, n in zip(want["dt"].to_pylist(), want["id_count"].to_pylist(),
                                                              strict=True)]}
    doc = run_json(capsys, shared, "sql", 'select s.snapshot_id, count(t.id) as n from db."t$snapshots" s, '
                                          "DB.T t where t.id > s.snapshot_id group by 1 order by 1")
    assert [r["snapshot_id"] for r in doc["rows"]] == [s.id for s in t.snapshots()]
    assert [r["n"] for r in doc["rows"]] == [sum(i > s.id for i in t.to_arrow().column("id").to_pylist())
                                             for s in t.snapshots()]
    parsed = parse_text_table(run_text(capsys, shared, "sql", "select max(id) as m from db.t"))
    assert parsed == [{"m": "5"}]


# ---------------------------------------------------------------------------- options and errors


def test_options_after_the_command_and_warehouse_from_the_environment(capsys, shared, monkeypatch):
    code = main(["snapshots", "db.t", "--json", "--warehouse", str(shared), "--columns", "snapshot_id"])
    out, _ = capsys.readouterr()
    assert code == EXIT_OK and json.loads(out)["columns"] == ["snapshot_id"]
    monkeypatch.setenv("PAIMON_WAREHOUSE", str(shared))
    assert main(["--json", "databases"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["rows"][0] == {"database": "db"}


@pytest.mark.parametrize("argv, fragment", [
    (["read", "db.nope"], "table 'db.nope' does not exist"),
    (["read", "nodb.t"], "database 'nodb' does not exist"),
    (["read", "t"], "not 'database.table'"),
    (["snapshots", "db.nope"], "does not exist"),
    (["read", "db.t", "--columns", "nope"], "'nope' is not a column"),
    (["read", "db.t", "--where", "nope = 1"], "'nope' is not a column"),
    (["read", "db.t", "--where", "id = 'x'"], "does not fit the column type"),
    (["read", "db.t", "--where", "id = 1.5"], "literal 1.5 is not a value of the column type"),
    (["read", "db.t", "--where", "day = 'soon'"], "not a value of type date32"),
    (["read", "db.t", "--where", "name like 'x%'"], "LIKE is not supported"),
    (["read", "db.t", "--where", "not id = 1"], "NOT before a condition is not supported"),
    (["read", "db.t", "--where", "id = name"], "comparing two columns"),
    (["read", "db.t", "--where", "lower(name) = 'x'"], "function calls"),
    (["read", "db.t", "--where", "name = null"], "use IS NULL"),
    (["read", "db.t", "--where", "id = 1 and"], "expected a column or a literal"),
    (["read", "db.t", "--where", "id + 1 = 2"], "unexpected character '+'"),
    (["files", "db.t", "--where", "nope > 0"], "is not a column"),
    (["rollback-to", "db.t", "--snapshot", "99"], "snapshot 99"),
    (["rollback-to", "db.t", "--tag", "nope"], "tag 'nope'"),
    (["delete-tag", "db.t", "nope"], "tag 'nope'"),
    (["compact", "db.t$snapshots"], "is a system table"),
    (["remove-orphan-files", "db.t", "--older-than", "yesterday"], "neither a timestamp"),
    (["sql", "select * from db.nope"], "nope"),
    (["sql", "selec 1"], "syntax error"),
    (["--option", "uri=thrift://x", "databases"], "not an option of this filesystem catalog"),
    (["--warehouse", "/nonexistent/warehouse", "databases"], "warehouse '/nonexistent/warehouse' does not exist"),
])
def test_user_errors_exit_1_without_a_traceback(capsys, shared, argv, fragment):
    if argv[0] == "sql":
        pytest.importorskip("duckdb")
    code, out, err = run(capsys, shared, *argv)
    assert code == EXIT_USER_ERROR, (out, err)
    assert err.startswith("error: ") and fragment in err, err
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize("argv", [
    ["read"],  # no table
    ["nosuchcommand"],
    ["read", "db.t", "--limit", "-1"],
    ["--option", "no-equals-sign", "databases"],
    ["rollback-to", "db.t"],  # neither --snapshot nor --tag
    ["rollback-to", "db.t", "--snapshot", "1", "--tag", "v1"],
])
def test_usage_errors_exit_2(capsys, shared, argv):
    code, out, err = run(capsys, shared, *argv)
    assert code == EXIT_USAGE and "usage: paimon-py" in err and "Traceback" not in err


@pytest.mark.parametrize("argv, code, kind, fragment", [
    (["read", "db.nope"], EXIT_USER_ERROR, "TableNotExistError", "table 'db.nope' does not exist"),
    (["read", "db.t", "--where", "name like 'x%'"], EXIT_USER_ERROR, "FilterSyntaxError", "LIKE is not supported"),
    (["read"], EXIT_USAGE, "UsageError", "the following arguments are required: DB.TABLE"),
    (["nosuchcommand"], EXIT_USAGE, "UsageError", "invalid choice: 'nosuchcommand'"),
])
def test_json_errors_are_json(capsys, shared, argv, code, kind, fragment):
    """With --json (before or after the command) an error is one JSON document on stderr, as the
    output would have been on stdout: a script reading JSON gets JSON in failure too."""
    for args in (["--json", *argv], [*argv, "--json"]):
        got, out, err = run(capsys, shared, *args)
        assert got == code and out == ""
        error = json.loads(err)["error"]
        assert error["type"] == kind and fragment in error["message"] and error["exit_code"] == code


def test_json_internal_and_no_warehouse_errors_are_json(capsys, shared, monkeypatch):
    monkeypatch.setattr(cli_commands, "cmd_databases", lambda ctx, args: {}["boom"])
    code, _, err = run(capsys, shared, "--json", "databases")
    assert code == EXIT_INTERNAL and json.loads(err)["error"]["type"] == "InternalError"
    monkeypatch.delenv("PAIMON_WAREHOUSE", raising=False)
    assert main(["--json", "databases"]) == EXIT_USAGE
    assert "PAIMON_WAREHOUSE" in json.loads(capsys.readouterr().err)["error"]["message"]


def test_a_missing_sqlite_catalog_is_refused_not_created(capsys, shared, tmp_path, monkeypatch):
    """A mistyped uri=jdbc:sqlite:FILE made an empty catalog database and printed (0 rows)."""
    monkeypatch.chdir(tmp_path)
    for argv in (["-o", "metastore=jdbc", "-o", "uri=jdbc:sqlite:./nope.db", "databases"],
                 ["-o", "metastore=jdbc", "-o", f"uri=jdbc:sqlite:file:{tmp_path}/nope.db?cache=shared", "databases"]):
        code, out, err = run(capsys, shared, *argv)
        assert code == EXIT_USER_ERROR and out == ""
        assert "nope.db' does not exist" in err and "creates no catalog" in err
    assert list(tmp_path.iterdir()) == []  # nothing created
    jdbc = impl.Catalog("jdbc:sqlite:./cat.db", warehouse=str(shared))  # the Python API creates one
    jdbc.create_database("kept")
    code, out, _ = run(capsys, shared, "--json", "-o", "metastore=jdbc", "-o", "uri=jdbc:sqlite:./cat.db", "databases")
    assert code == EXIT_OK and json.loads(out)["rows"] == [{"database": "kept"}]


def test_a_dashed_table_name_unquoted_in_sql_says_how_to_quote_it(capsys, tmp_path):
    pytest.importorskip("duckdb")
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("demo")
    cat.create_table("demo.events-04992e", pa.schema([("id", pa.int64())])).write_arrow(pa.table({"id": [1, 2]}))
    code, _, err = run(capsys, tmp_path, "sql", "select count(*) from demo.events-04992e")
    assert code == EXIT_USER_ERROR
    assert 'a table name with a dash is quoted in SQL: write demo."events-04992e"; DuckDB says: Parser Error' in err
    assert run_json(capsys, tmp_path, "sql", 'select count(*) as n from demo."events-04992e"')["rows"] == [{"n": 2}]
    code, _, err = run(capsys, tmp_path, "sql", "select count(*) from demo.nope-1")  # not a table: DuckDB alone
    assert code == EXIT_USER_ERROR and "quoted" not in err


def test_errors_name_the_table_as_given_not_its_path(capsys, shared):
    for argv in (["read", "db.t", "--snapshot", "99"], ["rollback-to", "db.t", "--snapshot", "99"],
                 ["create-tag", "db.t", "x", "--snapshot", "99"], ["read", "db.t", "--tag", "nope"]):
        code, _, err = run(capsys, shared, *argv)
        assert code == EXIT_USER_ERROR and "of table db.t does not exist" in err, err
        assert str(shared) not in err


def test_no_warehouse_is_a_usage_error(capsys, monkeypatch):
    monkeypatch.delenv("PAIMON_WAREHOUSE", raising=False)
    assert main(["databases"]) == EXIT_USAGE
    assert "PAIMON_WAREHOUSE" in capsys.readouterr().err


def test_help_exits_0(capsys):
    assert main(["--help"]) == EXIT_OK
    out = capsys.readouterr().out
    for command in ["databases", "tables", "describe", "read", "compact", "expire-snapshots", "remove-orphan-files",
                    "rollback-to", "create-tag", "delete-tag", "sql", *cli_commands.SYSTEM_TABLE_COMMANDS]:
        assert command in out


def test_internal_errors_exit_3_with_the_traceback_only_under_debug(capsys, shared, monkeypatch):
    def broken(ctx, args):
        raise KeyError("boom")

    monkeypatch.setattr(cli_commands, "cmd_databases", broken)
    code, _, err = run(capsys, shared, "databases")
    assert code == EXIT_INTERNAL and "internal error: KeyError" in err and "Traceback" not in err
    assert "--debug" in err
    code, _, err = run(capsys, shared, "--debug", "databases")
    assert code == EXIT_INTERNAL and "Traceback" in err and "boom" in err


def test_rich_tables(capsys, shared):
    pytest.importorskip("rich")
    code, out, err = run(capsys, shared, "--style", "rich", "read", "db.t", "--columns", "id,name")
    assert code == EXIT_OK, err
    assert "x2" in out and "NULL" in out and "5 rows" in out
    code, out, err = run(capsys, shared, "--style", "rich", "describe", "db.t")
    assert code == EXIT_OK and "primary_keys" in out and "bucket" in out
    if importlib.util.find_spec("duckdb"):  # a value that looks like rich markup is printed as it is
        code, out, err = run(capsys, shared, "--style", "rich", "sql", "select '[bold]x' as s")
        assert code == EXIT_OK and "[bold]x" in out and re.search(r"^1 row\s*$", out, re.M)


def test_the_module_runs_as_a_process(shared):
    """(one process: every other test calls main(argv), which the console script and __main__ call)"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PAIMON_WAREHOUSE": str(shared)}
    proc = subprocess.run([sys.executable, "-m", "impl.cli", "--json", "tables", "db"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == EXIT_OK, proc.stderr
    assert json.loads(proc.stdout)["rows"] == [{"database": "db", "table": t}
                                               for t in impl.Catalog(str(shared)).list_tables("db")]


def test_the_console_script_is_declared():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'paimon-py = "impl.cli:main"' in text


def test_progress_on_a_terminal(capsys, monkeypatch):
    """The progress bar (rich) or its one-line fallback runs the body once and writes to stderr only."""
    from impl.cli import output

    ran = []
    with output.progress("compacting db.t", enabled=True):
        ran.append(1)
    with output.progress("compacting db.t", enabled=False):
        ran.append(2)

    def no_rich(module, purpose, extra=None):
        raise impl.MissingExtraError(module, "cli", purpose)

    monkeypatch.setattr(output, "require", no_rich)
    with output.progress("expiring db.t", enabled=True):
        ran.append(3)
    out, err = capsys.readouterr()
    assert ran == [1, 2, 3] and out == "" and "expiring db.t ..." in err


def test_an_object_store_warehouse_with_options(capsys, s3_server, s3_bucket):
    """--option KEY=VALUE reaches the catalog: the store is opened with them; a bucket that does
    not exist is a user error."""
    pytest.importorskip("s3fs")
    warehouse = f"s3://{s3_bucket}/wh"
    opts = s3_server.options()
    cat = impl.Catalog(warehouse, options=opts)
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64())}))
    argv = [a for k, v in opts.items() for a in ("-o", f"{k}={v}")]
    doc = run_json(capsys, warehouse, *argv, "snapshots", "db.t", "--columns", "snapshot_id,total_record_count")
    assert doc["rows"] == [{"snapshot_id": 1, "total_record_count": 2}]
    assert run_json(capsys, warehouse, *argv, "read", "db.t")["rows"] == [{"id": 1}, {"id": 2}]
    code, out, err = run(capsys, f"s3://{s3_bucket}-missing/wh", *argv, "databases")
    assert code == EXIT_USER_ERROR and err.startswith("error: ") and "Traceback" not in err
    assert f"{s3_bucket}-missing" in err

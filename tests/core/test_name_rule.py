"""The one name rule (impl.fs.names) and every entry point that names a database, table, branch
or tag: hostile names (separators, dots, ``..``, percent-encodings, NUL and other control
characters, Unicode look-alikes of ``/``, very long names) drawn by Hypothesis are refused with
the typed error of their kind, and nothing outside the target table's directory is created,
changed or deleted (the tree of a neighbour table, of the rest of the warehouse and of a second
warehouse next to it is compared before and after). REST cases: tests/rest/test_rest_names.py.
"""

from __future__ import annotations

import os
import pickle
import re
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_name_exploits import make_table, tree

import impl
from impl import (
    InvalidBranchNameError,
    InvalidIdentifierError,
    InvalidNameError,
    InvalidTagNameError,
    PaimonError,
    SchemaChange,
)
from impl.cli.main import EXIT_USER_ERROR
from impl.cli.main import main as cli_main
from impl.fs.names import (
    MAIN_BRANCH,
    MAX_NAME_BYTES,
    BranchName,
    TagName,
    check_branch,
    check_new_branch,
    check_tag,
    path_problem,
)
from impl.fs.paths import TablePaths, branch_root

SCHEMA = pa.schema([("id", pa.int64())])

# ---------------------------------------------------------------------------- hostile names

CONCRETE = [
    "b/../../../victim", "../victim", "..", ".", "./x", "a/b", "a\\b", "..\\..\\victim", "a\x00b", "\x00",
    "x\x01", "\x1f", "x\x7f", "x\x85", "x\u2028y", "x\u2029", "a\ud800b", "\u2215victim", "..\u2215..",
    "a\uff0fb", "a\u2044b", "a\uff3cb", "a\u29f8b", "", " ", "\t", " lead", "trail ", "\n", ".hidden",
    "b%2F..%2F..%2Fvictim", "%2e%2e", "%252F", "%00", "%5C", "x" * (MAX_NAME_BYTES + 1), "\u00e9" * 101,
    "\U0001f600" * 51, "b\n/../victim",
]
PIECES = ["/", "\\", "\x00", "\x01", "\x1b", "\x7f", "\u2028", "\u2215", "\uff0f", "\u2044", "\uff3c", ".", "..",
          "%2F", "%2f", "%2e%2e", "%252F", "%5C", "%00", " ", "\t", "\n", "b", "victim", "outside", "x", "$", "main"]

hostile_names = st.one_of(
    st.sampled_from(CONCRETE),
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join),
    st.text(alphabet=st.sampled_from("ab./\\%2F\x00 \u2215"), max_size=12),
    st.integers(MAX_NAME_BYTES - 3, MAX_NAME_BYTES + 60).map(lambda n: "n" * n),
    st.text(max_size=16),
)
PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,40}")  # names every rule accepts (but 'main' for a new branch)
EXAMPLES = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# ---------------------------------------------------------------------------- the rule itself


@given(hostile_names)
@EXAMPLES
def test_the_rule_refuses_what_is_no_path_component(name):
    problem = path_problem(name)
    unsafe = (not name.strip() or name in (".", "..") or name.startswith(".") or name != name.strip()
              or any(c in name for c in "/\\\x00\u2215\uff0f\u2044\uff3c\u29f8")
              or any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029" for c in name)
              or any(0xd800 <= ord(c) <= 0xdfff for c in name)
              or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES)
    assert (problem is not None) == unsafe, (name, problem)
    for check, error in ((check_branch, InvalidBranchNameError), (check_tag, InvalidTagNameError)):
        if unsafe:
            with pytest.raises(error) as e:
                check(name)
            assert e.value.name == name and e.value.kind in ("branch", "tag")
            assert len(str(e.value)) < 300  # the name is shown truncated
        else:
            assert check(name) == name


def test_percent_is_a_literal_character():
    """Paimon allows '%'; names are URL-decoded once at HTTP entry, so what is left is literal."""
    assert check_branch("a%2Fb") == "a%2Fb" and check_tag("50%") == "50%"
    paths = TablePaths("/wh/db.db/t", branch=check_branch("a%2F..%2Fb"))
    assert paths.snapshot_dir == "/wh/db.db/t/branch/branch-a%2F..%2Fb/snapshot"


def test_new_branch_names_follow_paimon():
    for name in ("main", "123", "\u0661\u0662", "a$b"):  # main, digits (any script, as Java's isDigit), '$'
        with pytest.raises(InvalidBranchNameError):
            check_new_branch(name)
        if name != "a$b":
            assert check_branch(name) == name  # such a branch may be opened
    assert check_new_branch("12a") == "12a" and check_new_branch("\u00b2") == "\u00b2"  # not decimal digits


def test_only_the_checkers_make_checked_names():
    with pytest.raises(TypeError):
        BranchName("b/../../victim")
    with pytest.raises(TypeError):
        TagName("x")
    name = check_branch("dev")
    assert isinstance(name, BranchName) and check_branch(name) is name
    assert pickle.loads(pickle.dumps(name)) == "dev" and isinstance(pickle.loads(pickle.dumps(name)), BranchName)
    assert isinstance(pickle.loads(pickle.dumps(MAIN_BRANCH)), BranchName)


def test_path_builders_take_only_checked_names():
    with pytest.raises(TypeError, match="BranchName"):
        TablePaths("/wh/db.db/t", branch="b/../../victim")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="BranchName"):
        branch_root("/wh/db.db/t", "dev")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="BranchName"):
        TablePaths("/wh/db.db/t").with_branch("dev")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="TagName"):
        TablePaths("/wh/db.db/t").tag_path("../../x")  # type: ignore[arg-type]
    assert TablePaths("/wh/db.db/t").tag_path(check_tag("v1")) == "/wh/db.db/t/tag/tag-v1"


def test_name_errors_share_one_base():
    for error in (InvalidBranchNameError, InvalidTagNameError, InvalidIdentifierError):
        assert issubclass(error, InvalidNameError) and issubclass(error, ValueError)


# ---------------------------------------------------------------------------- every entry point


@dataclass(frozen=True)
class Env:
    root: str
    catalog: impl.Catalog
    jdbc: impl.Catalog
    skip: tuple[str, ...]  # what the entry points may change (relative to root)

    def table(self):
        return self.catalog.get_table("db.t")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """``wh``: db.t (the target: branch b, tag t1, three snapshots), db.alt (target of option
    changes), db.victim (a neighbour with a tag and a branch), database ``made`` (tables made by
    the entry points); ``outside``: a second warehouse; ``jwh``: a JDBC catalog's warehouse."""
    root = tmp_path_factory.mktemp("names")
    cat = impl.Catalog(str(root / "wh"))
    t = make_table(cat, "db.t", [1])
    for i in (2, 3):
        t.write_arrow(pa.table({"id": pa.array([i], pa.int64())}))
    t.create_tag("t1", 1)
    t.create_branch("b")
    make_table(cat, "db.alt", [5])
    victim = make_table(cat, "db.victim", [7])
    victim.create_tag("vt")
    victim.create_branch("vb")
    cat.create_database("made")
    make_table(impl.Catalog(str(root / "outside")), "odb.v", [100])
    jdbc = impl.Catalog(f"jdbc:sqlite:{root / 'cat.sqlite'}", warehouse=str(root / "jwh"))
    make_table(jdbc, "db.t", [1]).create_branch("b")
    skip = ("wh/db.db/t", "wh/db.db/alt", "wh/made.db", "jwh/db.db/t", "dbs")
    return Env(str(root), cat, jdbc, skip)


def refused(name: str) -> bool:
    return path_problem(name) is not None


def _set_branch_option(env: Env, name: str) -> None:
    env.catalog.alter_table("db.alt", [SchemaChange.set_option("branch", name)])
    env.catalog.alter_table("db.alt", [SchemaChange.remove_option("branch")])  # accepted: undone


_made = iter(range(10**9))


def _cli(env: Env, *argv: str) -> None:
    code = cli_main(["--warehouse", os.path.join(env.root, "wh"), *argv])
    if code == EXIT_USER_ERROR:
        raise PaimonError(f"paimon-py {argv}: exit {code}")  # the message went to stderr (checked by capsys)


def _spark_table(env: Env, options: dict[str, str]):
    tables = pytest.importorskip("impl.jobs.tables")
    return tables.TableRef.from_path(env.table().path, dynamic_options=options).table()


@dataclass(frozen=True)
class Entry:
    call: Callable[[Env, str], object]
    error: type[Exception]
    must_refuse: Callable[[str], bool] = refused


ENTRIES: dict[str, Entry] = {
    "create_branch": Entry(lambda e, n: e.table().create_branch(n), InvalidBranchNameError),
    "create_branch_from_tag": Entry(lambda e, n: e.table().create_branch("from_tag", tag=n), InvalidTagNameError),
    "delete_branch": Entry(lambda e, n: e.table().delete_branch(n), InvalidBranchNameError),
    "fast_forward": Entry(lambda e, n: e.table().fast_forward(n), InvalidBranchNameError),
    # a blank branch option means main (Paimon's normalizeBranch)
    "copy_branch_option": Entry(lambda e, n: e.table().copy({"branch": n}).to_arrow(), InvalidBranchNameError,
                                lambda n: bool(n.strip()) and refused(n)),
    "get_table_branch": Entry(lambda e, n: e.catalog.get_table(f"db.t$branch_{n}").to_arrow(), InvalidNameError,
                              lambda n: refused(n.partition("$")[0])),
    "create_tag": Entry(lambda e, n: e.table().create_tag(n, 1), InvalidTagNameError),
    "delete_tag": Entry(lambda e, n: e.table().delete_tag(n), InvalidTagNameError),
    "rollback_to_tag": Entry(lambda e, n: e.table().rollback_to(n), InvalidTagNameError),
    "scan_tag_name_option": Entry(lambda e, n: e.table().copy({"scan.tag-name": n}).to_arrow(), InvalidTagNameError,
                                  lambda n: n != "" and refused(n)),
    "alter_table_branch_option": Entry(_set_branch_option, InvalidBranchNameError,
                                       lambda n: bool(n.strip()) and refused(n)),
    "create_table_branch_option": Entry(
        lambda e, n: e.catalog.create_table(f"made.c{next(_made)}", SCHEMA, options={"branch": n}),
        InvalidBranchNameError, lambda n: bool(n.strip()) and refused(n)),
    "create_database": Entry(lambda e, n: impl.Catalog(os.path.join(e.root, "dbs")).create_database(n),
                             InvalidIdentifierError),
    "create_table_name": Entry(lambda e, n: e.catalog.create_table(("made", n), SCHEMA), InvalidIdentifierError),
    "jdbc_get_table_branch": Entry(lambda e, n: e.jdbc.get_table(f"db.t$branch_{n}").to_arrow(), InvalidNameError,
                                   lambda n: refused(n.partition("$")[0])),
    "jdbc_branch_option": Entry(lambda e, n: e.jdbc.get_table("db.t").copy({"branch": n}).to_arrow(),
                                InvalidBranchNameError, lambda n: bool(n.strip()) and refused(n)),
    "spark_branch_option": Entry(lambda e, n: _spark_table(e, {"branch": n}).to_arrow(), InvalidBranchNameError,
                                 lambda n: bool(n.strip()) and refused(n)),
    "spark_tag_option": Entry(lambda e, n: _spark_table(e, {"scan.tag-name": n}).to_arrow(), InvalidTagNameError,
                              lambda n: n != "" and refused(n)),
}
CLI_ENTRIES: dict[str, Callable[[Env, str], None]] = {
    "cli_create_tag": lambda e, n: _cli(e, "create-tag", "db.t", "--", n),
    "cli_delete_tag": lambda e, n: _cli(e, "delete-tag", "db.t", "--", n),
    "cli_read_tag": lambda e, n: _cli(e, "read", "db.t", f"--tag={n}"),
    "cli_rollback_to_tag": lambda e, n: _cli(e, "rollback-to", "db.t", f"--tag={n}"),
}


def run_entry(env: Env, entry: Entry, name: str, *, typed: bool = True) -> None:
    """Run one entry point on ``name``: nothing outside ``env.skip`` changes; a name the rule
    refuses gets the entry's typed error (``typed=False``: the CLI, whose exit code and stderr
    the caller checks)."""
    before = tree(env.root, env.skip)
    try:
        entry.call(env, name)
        error = None
    except PaimonError as e:
        error = e
    assert tree(env.root, env.skip) == before, f"{name!r} changed something outside the table"
    if entry.must_refuse(name):
        assert isinstance(error, entry.error), (name, error)
        assert isinstance(error, InvalidNameError) or not typed
    elif PLAIN.fullmatch(name) and name != "main":
        assert not isinstance(error, InvalidNameError), (name, error)  # a plain name is never refused


@pytest.mark.parametrize("entry", sorted(ENTRIES))
@given(name=hostile_names)
@EXAMPLES
def test_entry_point_refuses_hostile_names_and_stays_in_the_table(env, entry, name):
    run_entry(env, ENTRIES[entry], name)


@pytest.mark.parametrize("entry", sorted(CLI_ENTRIES))
@given(name=hostile_names)
@settings(EXAMPLES, max_examples=25)  # a CLI run costs a catalog and a table opened each time
def test_cli_refuses_hostile_names_and_stays_in_the_table(env, capsys, entry, name):
    run_entry(env, Entry(CLI_ENTRIES[entry], PaimonError), name, typed=False)
    err = capsys.readouterr().err
    if refused(name):
        assert "tag name" in err, err


@pytest.mark.large
@given(entry=st.sampled_from(sorted(ENTRIES)), name=hostile_names)
@settings(max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))
def test_entry_points_long_run(env, entry, name):
    run_entry(env, ENTRIES[entry], name)


# ---------------------------------------------------------------------------- names read from storage


def test_a_hostile_branch_directory_is_refused_not_used(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    t = make_table(cat, "db.t", [1])
    t.create_branch("dev")
    assert [b.branch_name for b in t.branches()] == ["dev"]
    # a writer with storage access makes an entry no branch can have (a control character)
    os.makedirs(tmp_path / "wh" / "db.db" / "t" / "branch" / "branch-x\x1by" / "schema")
    with pytest.raises(InvalidBranchNameError, match="listed in"):
        t.branches()
    before = tree(str(tmp_path))
    with pytest.raises(InvalidBranchNameError):
        t.remove_orphan_files(older_than_millis=2**62)  # refused, rather than deleting what it keeps
    assert tree(str(tmp_path)) == before


def test_a_hostile_tag_file_is_refused_not_used(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    t = make_table(cat, "db.t", [1])
    t.create_tag("v1")
    tag_dir = tmp_path / "wh" / "db.db" / "t" / "tag"
    (tag_dir / "tag- v2").write_bytes((tag_dir / "tag-v1").read_bytes())  # leading whitespace
    with pytest.raises(InvalidTagNameError, match="listed in"):
        t.tags()


def test_the_longest_names_fit_the_files_they_become(tmp_path):
    """200 UTF-8 bytes: the tag file's atomic-write temp name (42 bytes more) still fits NAME_MAX."""
    t = make_table(impl.Catalog(str(tmp_path / "wh")), "db.t", [1])
    longest = "\u00e9" * (MAX_NAME_BYTES // 2)  # 2 bytes each
    t.create_tag(longest)
    t.create_branch(longest, tag=longest)
    assert [tag.name for tag in t.tags()] == [longest]
    assert t.copy({"branch": longest}).to_arrow()["id"].to_pylist() == [1]
    with pytest.raises(InvalidTagNameError, match="longer than 200"):
        t.create_tag(longest + "x")


def test_listed_tables_and_databases_follow_the_rule(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    make_table(cat, "db.t", [1])
    # entries no database or table can be named by, each looking like one (a schema file inside)
    for odd in ("db.db/ x", "db.db/x\x01", " odd.db/t", "\u2215x.db/t"):
        os.makedirs(tmp_path / "wh" / odd / "schema")
        (tmp_path / "wh" / odd / "schema" / "schema-0").write_bytes(b"{}")
    assert cat.list_tables("db") == ["t"] and cat.list_databases() == ["db"]

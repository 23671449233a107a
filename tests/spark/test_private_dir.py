"""The Spark connector's private state directory (issue 44, item 6): another local user who
creates its predictable name first in the shared temp directory (a file, a link, a directory
others can write) used to fail every read of this user; now the name is stepped around, and the
directory is always this user's with mode 0700. Tested on the directory-choosing functions and
the state functions reads use (no JVM needed)."""

from __future__ import annotations

import os
import stat
import tempfile

import pytest

from impl.jobs.tables import TableRef
from impl.predicate.predicate import LeafPredicate
from impl.spark.claims import (
    PRIVATE_DIR_CANDIDATES,
    ClaimLedger,
    choose_private_dir,
    private_dir_candidates,
    private_root,
    pushed_predicates,
    record_pushed,
)
from impl.spark.errors import SparkConnectorError


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    """A shared temp directory of the test's own: ``tempfile.gettempdir()`` and no runtime dir."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return shared


def predictable(tmp) -> str:
    return os.path.join(str(tmp), f"paimon_py_spark-{os.getuid()}")


@pytest.mark.parametrize("squat", ["file", "open directory"])
def test_a_squatted_name_is_stepped_around(tmp, squat):
    path = predictable(tmp)
    if squat == "file":
        with open(path, "w") as fh:
            fh.write("not yours")
    else:
        os.mkdir(path)
        os.chmod(path, 0o777)
    root = private_root()
    assert root == f"{path}.1"
    assert mode(root) == 0o700 and not os.path.islink(root)
    assert private_root() == root  # every process of the user finds the same one


def test_reads_still_work_with_a_squatted_name(tmp):
    """The state a read keeps (pushed filters per relation, the local claim ledger) lands in the
    stepped-around directory; before, each of these raised SparkConnectorError."""
    with open(predictable(tmp), "w") as fh:
        fh.write("squat")
    p = LeafPredicate("equal", "id", (3,))
    record_pushed("abc123", p)
    assert pushed_predicates("abc123") == [p]
    ref = TableRef(table_path=os.path.join(str(tmp), "db.db", "t"), warehouse=str(tmp), database="db", name="t")
    ledger = ClaimLedger.for_task("app-1", True, ref)
    assert ledger.root.startswith(f"{predictable(tmp)}.1{os.sep}")
    assert ledger.claim("plan", "exec-1") == "exec-1"
    assert ledger.claim("plan", "exec-2") == "exec-1"
    root = f"{predictable(tmp)}.1"
    for d in (root, os.path.join(root, "relations"), os.path.join(root, "relations", "abc123")):
        assert mode(d) == 0o700, d


def test_an_existing_private_directory_wins_over_a_freed_earlier_name(tmp):
    names = private_dir_candidates(str(tmp), None)
    os.mkdir(names[1], 0o700)  # made while names[0] was squatted, since freed
    assert choose_private_dir(names) == names[1]


def test_every_name_taken_is_a_typed_error(tmp):
    names = private_dir_candidates(str(tmp), None)
    assert len(names) == PRIVATE_DIR_CANDIDATES
    for n in names:
        open(n, "w").close()
    with pytest.raises(SparkConnectorError, match="no private directory"):
        choose_private_dir(names)


def test_a_private_runtime_dir_is_preferred(tmp, tmp_path, monkeypatch):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert private_root() == str(runtime / "paimon_py_spark")
    assert mode(runtime / "paimon_py_spark") == 0o700
    os.chmod(runtime, 0o755)  # not private: the temp directory's names instead
    assert private_dir_candidates(str(tmp), str(runtime))[0] == predictable(tmp)

"""``fast_forward`` and ``create_branch`` crashed at EVERY one of their storage operations.

The table (on fsspec memory, through the catalog): main has 5 snapshots and tags ``t2`` and
``t4``; branch ``dev`` was made from ``t2`` and has 2 commits of its own. The work:
``fast_forward("dev")`` (main's snapshots 2..5 and tag t4 go, dev's 2..4 and its tag come in),
and ``create_branch("b", tag="t4")``.

After each crash, through a healthy FileIO over the same storage:
- main's latest snapshot reads the rows of one of main's snapshots before the work or of one
  of dev's snapshots (never anything else, never an error), and every tag present reads what
  it read before;
- re-running the work completes it: main's snapshots and rows are dev's (fast-forward), or
  the branch exists and reads t4's rows (create_branch).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from fault_scenarios import record_summary

import impl
from fault_injection import FaultyFileSystem, crash_at, enumerate_crash_points, fresh_memory_storage, remove_storage
from impl.errors import BranchAlreadyExistError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": list(range(lo, hi)), "v": [f"v{i}" for i in range(lo, hi)]}, schema=SCHEMA)


def ids(table) -> tuple[int, ...]:
    return tuple(sorted(table.to_arrow().column("id").to_pylist()))


def table(fs, root):
    return impl.Catalog(root, filesystem=fs).get_table("db.t")


def setup(fs, root) -> None:
    cat = impl.Catalog(root, filesystem=fs)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA)
    for i in range(5):
        t.write_arrow(rows(i * 10, i * 10 + 3))
    t.create_tag("t2", 2)
    t.create_tag("t4", 4)
    t.create_branch("dev", tag="t2")
    dev = t.copy({"branch": "dev"})
    dev.write_arrow(rows(100, 102))
    dev.write_arrow(rows(200, 202))


def fast_forward(fs, root):
    table(fs, root).fast_forward("dev")


def create_branch(fs, root):
    try:
        table(fs, root).create_branch("b", tag="t4")
    except BranchAlreadyExistError:  # a re-run after a crash that got as far as the schemas
        pass


class Before:
    """Rows of every snapshot of main and dev, and of every tag, before the work."""

    def __init__(self):
        inner, root = fresh_memory_storage()
        try:
            setup(FaultyFileSystem(inner), root)
            t = table(FaultyFileSystem(inner), root)
            dev = t.copy({"branch": "dev"})
            self.main = {s.id: ids(t.copy({"scan.snapshot-id": str(s.id)})) for s in t.snapshots()}
            self.dev = {s.id: ids(dev.copy({"scan.snapshot-id": str(s.id)})) for s in dev.snapshots()}
            self.tags = {g.name: ids(t.copy({"scan.tag-name": g.name})) for g in t.tags()}
            self.tags.update({g.name: ids(dev.copy({"scan.tag-name": g.name})) for g in dev.tags()})
        finally:
            remove_storage(inner, root)


def _check(outcome, work, before: Before) -> None:
    where = f"{work.__name__} {outcome.describe()}"
    assert not outcome.diverged and not outcome.crash_swallowed, where
    t = table(FaultyFileSystem(outcome.inner_fs), outcome.root)
    got = ids(t)
    assert got in set(before.main.values()) | set(before.dev.values()), f"{where}: main reads {got}"
    for g in t.tags():
        assert ids(t.copy({"scan.tag-name": g.name})) == before.tags[g.name], f"{where}: tag {g.name}"
    work(FaultyFileSystem(outcome.inner_fs), outcome.root)
    t = table(FaultyFileSystem(outcome.inner_fs), outcome.root)
    if work is fast_forward:
        assert [s.id for s in t.snapshots()] == sorted({1, *before.dev}), where
        assert ids(t) == before.dev[max(before.dev)], where
        assert sorted(g.name for g in t.tags()) == ["t2"], where
    else:
        assert ids(t.copy({"branch": "b"})) == before.tags["t4"], where
        assert ids(t) == before.main[max(before.main)], where


@pytest.mark.parametrize("work", [fast_forward, create_branch])
def test_crash_at_every_op(work):
    before = Before()
    tried, failures = 0, []
    for outcome in enumerate_crash_points(work, setup=setup, fault_at=crash_at):
        tried += 1
        try:
            _check(outcome, work, before)
        except AssertionError as e:
            failures.append(str(e).split("\n")[0])
    assert tried > 5
    record_summary(f"{work.__name__}_crash_at_every_op", work.__name__, "Crash, memory", tried,
                   failing_points=len(failures))
    assert not failures, f"{len(failures)} of {tried} crash points fail:\n" + "\n".join(failures[:8])

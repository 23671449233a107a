"""Deterministic reproductions of defects the state machines found (one test per defect).

Each test states the behaviour the protocol promises; while the defect is open it fails.
"""

from __future__ import annotations

import uuid

import fsspec
import pytest

from impl.commit import FileStoreCommit, ManifestCommittable
from impl.errors import CommitConflictError
from impl.fs.file_io import FileIO
from model import FileFacts, Model
from model import errors as model_errors
from simulation.bridge import ModelFactsReader, sim_schema, to_committable

# Tiny manifests, so that the very next commit after the interesting one runs a full merge.
SMALL_MANIFESTS = {
    "manifest.target-file-size": "2048 b",
    "manifest.full-compaction-threshold-size": "4096 b",
    "manifest.merge-min-count": "3",
}


@pytest.fixture
def table():
    fs = fsspec.filesystem("memory")
    root = f"/regressions-{uuid.uuid4().hex}"
    yield FileIO(fs), f"{root}/db.db/t"
    try:
        fs.rm(root, recursive=True)
    except FileNotFoundError:
        pass


def test_commit_accepted_with_a_file_deleted_and_re_added_keeps_the_table_committable(table):
    """A change list that DELETEs a live file and ADDs the same identity again (same partition,
    bucket, level and name) passes the conflict check in model and impl. Once published, every
    later commit fails in the manifest merger: its full merge folds the delta part, meets the
    kept DELETE and then the ADD, and raises DuplicateFileError. One accepted commit must never
    make the table uncommittable: either refuse it (preferred, as bad input / FileAlreadyLiveError)
    or merge it. Found by TableMachine (an "upgrade" of a file already at the top level)."""
    io, path = table
    commit = FileStoreCommit(io, path, sim_schema(SMALL_MANIFESTS), commit_user="u")
    f = FileFacts(0, 0, 1, 1, "f", 0, 10, 5)
    commit.commit(to_committable(1, new_files=[f]))

    model = Model(primary_key=True)
    model.commit("u", 1, [f])
    # both refuse it, with the same class, and publish nothing
    with pytest.raises(model_errors.CommitConflictError) as model_error:
        model.commit("u", 2, compact_before=[f], compact_after=[f])
    with pytest.raises(CommitConflictError) as impl_error:
        commit.commit(to_committable(2, compact_before=[f], compact_after=[f]))
    assert type(impl_error.value).__name__ == type(model_error.value).__name__ == "FileAlreadyLiveError"
    assert commit.snapshot_manager.latest_snapshot_id() == 1
    for i in range(2, 5):
        g = FileFacts(1, 0, 1, 0, f"g{i}", 0, 10, 5)
        assert commit.commit(to_committable(i, new_files=[g])).snapshot_ids == [i], f"commit {i}"
    live = ModelFactsReader(io, path).live(commit.snapshot_manager.latest_snapshot())
    assert sorted(x.file_name for x in live.values()) == ["f", "g2", "g3", "g4"]


def test_filter_committed_keeps_an_empty_overwrite_that_was_never_committed(table):
    """An OVERWRITE with no new files truncates the partition: an empty committable is not a
    no-op. filter_committed drops every committable whose message list ends up empty, including
    one that was empty to begin with and never committed, so a job recovering with it silently
    loses the truncate."""
    io, path = table
    commit = FileStoreCommit(io, path, sim_schema({}), commit_user="u")
    commit.commit(to_committable(1, new_files=[FileFacts(0, 0, 1, 0, "a", 0, 1, 1)]))
    truncate = ManifestCommittable(2, ())

    assert commit.filter_committed([truncate]) == [truncate], "never committed, yet filtered out"
    assert commit.overwrite({"p": 0}, truncate).snapshot_ids == [2]
    assert commit.filter_committed([truncate]) == []  # committed now: filtered


def _half_published_overwrite(io, path):
    """Snapshot 1 adds a (p0) and b (p1). Committable 2 overwrites p0 with n and compacts b into
    b1; the process published its OVERWRITE snapshot (2), then died before the COMPACT one."""
    commit = FileStoreCommit(io, path, sim_schema({}), commit_user="u")
    a, b = FileFacts(0, 0, 1, 0, "a", 0, 10, 1), FileFacts(1, 0, 1, 0, "b", 0, 10, 1)
    commit.commit(to_committable(1, new_files=[a, b]))
    n, b1 = FileFacts(0, 0, 1, 0, "n", 0, 10, 1), FileFacts(1, 0, 1, 1, "b1", 0, 10, 1)
    full = to_committable(2, new_files=[n], compact_before=[b], compact_after=[b1])
    assert commit.overwrite({"p": 0}, to_committable(2, new_files=[n])).snapshot_ids == [2]
    return commit, full


def test_filter_committed_keeps_the_compact_part_of_an_overwrite(table):
    """An overwrite committable can carry compaction changes: impl publishes the OVERWRITE
    snapshot, then a COMPACT one. If the process dies between the two, recovery through
    filter_committed must return the COMPACT part. filter_committed treats a committable whose
    identifier has an OVERWRITE snapshot as done entirely, so the compaction is silently lost
    (its output files stay orphans, the compacted files stay live). Found with TableMachine
    (overwrite with a COMPACT part, then re-committed)."""
    io, path = table
    commit, full = _half_published_overwrite(io, path)

    todo = commit.filter_committed([full])
    compact_after = [f.file_name for c in todo for m in c.messages for f in m.compact_after]
    new_files = [f.file_name for c in todo for m in c.messages for f in m.new_files]
    assert compact_after == ["b1"], f"the COMPACT part was dropped: {todo}"
    assert new_files == [], "the OVERWRITE part was published already"


def test_recommitting_the_rest_of_an_overwrite_does_not_overwrite_again(table):
    """Recovery re-commits what filter_committed returns, through the same call as before. For an
    overwrite whose OVERWRITE snapshot landed but whose COMPACT part did not, filter_committed now
    returns the COMPACT part alone; passing that to overwrite() publishes a *second* OVERWRITE
    snapshot of the partition with no new files, deleting the files the first one wrote (and
    anything committed there since). The OVERWRITE part must be published once. Found by
    TableMachine.commit_again (model: skip_committed runs only the COMPACT part)."""
    io, path = table
    commit, full = _half_published_overwrite(io, path)

    for rest in commit.filter_committed([full]):
        commit.overwrite({"p": 0}, rest)
    reader = ModelFactsReader(io, path)
    kinds = [reader.snapshot(i).commit_kind.value for i in reader.snapshot_ids()]
    assert kinds == ["APPEND", "OVERWRITE", "COMPACT"], kinds
    live = reader.live(reader.snapshot(reader.snapshot_ids()[-1]))
    assert sorted(f.file_name for f in live.values()) == ["b1", "n"]

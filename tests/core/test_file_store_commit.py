"""FileStoreCommit on memory and local storage: APPEND / COMPACT / OVERWRITE snapshots, every
conflict class, lost races, unknown publish outcomes, recovery, manifest merging, changelog
and index manifests. Data files are plain DataFileMeta objects (no Parquet needed)."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from commit_helpers import (
    APPEND_SCHEMA,
    PK_SCHEMA,
    TableView,
    append_msg,
    dfile,
    index_file,
    msg,
    new_commit,
    part,
)
from core_helpers import HookedFileIO, InjectedIOError, SimulatedCrash, fail_on_write, memory_root

from impl.commit.messages import ManifestCommittable
from impl.commit.options import CommitOptions
from impl.errors import (
    BucketCountChangedError,
    CommitConflictError,
    CommitOutcomeUnknownError,
    CommitRetriesExhaustedError,
    FileAlreadyLiveError,
    FileNotLiveError,
    KeyRangeOverlapError,
    OverwritePartitionError,
)
from impl.fs.file_io import FileIO
from impl.manifest.manifest_file import IndexManifestFile, ManifestList
from impl.manifest.merger import ManifestMergeKind, MergeOptions
from impl.manifest.records import FileKind
from impl.snapshot.records import CommitKind


@pytest.fixture
def table(io_root):
    fio, root = io_root
    return fio, root + "/db.db/t"


def seed(fio, root, files_by_part=None, user="seed"):
    """Snapshot 1: p1/bucket 0: a (10 rows), b (5 rows); p2/bucket 1: c (7 rows)."""
    files_by_part = files_by_part or {("p1", 0): [dfile("data-a", 10, 1, 5), dfile("data-b", 5, 3, 9)],
                                      ("p2", 1): [dfile("data-c", 7, 1, 2)]}
    c = new_commit(fio, root, user=user)
    c.commit([msg(dt, b, new_files=fs) for (dt, b), fs in files_by_part.items()], 1)
    return c


# ----------------------------------------------------------------------------- basic snapshots


def test_append_snapshot(table):
    fio, root = table
    c = new_commit(fio, root)
    stats = c.commit([msg("p1", 0, new_files=[dfile("data-a", 10), dfile("data-b", 5)]),
                      msg("p2", 1, new_files=[dfile("data-c", 7)])], identifier=42)
    assert stats.snapshot_ids == [1] and stats.attempts == 1 and stats.lost_races == 0
    v = TableView(fio, root)
    s = v.latest()
    assert (s.id, s.commit_kind, s.commit_user, s.commit_identifier) == (1, CommitKind.APPEND, "writer", 42)
    assert (s.total_record_count, s.delta_record_count) == (22, 22)
    assert s.changelog_manifest_list is None and s.index_manifest is None
    assert fio.read_bytes(v.paths.hint_path("LATEST")) == b"1"
    assert v.live() == {(("p1",), 0, 0, "data-a"), (("p1",), 0, 0, "data-b"), (("p2",), 1, 0, "data-c")}
    assert ManifestList(fio, v.paths).read(s.base_manifest_list) == []
    assert s.base_manifest_list_size == fio.file_size(v.paths.manifest_path(s.base_manifest_list))
    assert s.delta_manifest_list_size == fio.file_size(v.paths.manifest_path(s.delta_manifest_list))
    v.check()


def test_append_and_compact_in_one_commit_make_two_snapshots(table):
    fio, root = table
    seed(fio, root)
    c = new_commit(fio, root)
    stats = c.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)],
                          compact_before=[dfile("data-a", 10, 1, 5), dfile("data-b", 5, 3, 9)],
                          compact_after=[dfile("ab", 15, 1, 9, level=1)])], identifier=7)
    assert stats.snapshot_ids == [2, 3]
    v = TableView(fio, root)
    s2, s3 = v.sm.snapshot(2), v.sm.snapshot(3)
    assert (s2.commit_kind, s2.total_record_count, s2.delta_record_count) == (CommitKind.APPEND, 25, 3)
    assert (s3.commit_kind, s3.total_record_count, s3.delta_record_count) == (CommitKind.COMPACT, 25, 0)
    assert s2.commit_identifier == s3.commit_identifier == 7
    assert {(e.kind, e.file_name) for e in v.delta_entries(s3)} == {
        (FileKind.DELETE, "data-a"), (FileKind.DELETE, "data-b"), (FileKind.ADD, "ab")}
    assert v.live() == {(("p1",), 0, 0, "n"), (("p1",), 0, 1, "ab"), (("p2",), 1, 0, "data-c")}
    v.check()


def test_compact_only_commit(table):
    fio, root = table
    seed(fio, root)
    stats = new_commit(fio, root).commit([msg("p2", 1, compact_before=[dfile("data-c", 7, 1, 2)],
                                              compact_after=[dfile("c1", 7, 1, 2, level=5)])], 2)
    assert stats.snapshot_ids == [2]
    v = TableView(fio, root)
    assert v.latest().commit_kind is CommitKind.COMPACT
    assert v.live_names() == {"data-a", "data-b", "c1"}
    v.check()


def test_empty_commit_publishes_nothing(table):
    fio, root = table
    assert new_commit(fio, root).commit([], 1).snapshot_ids == []
    assert TableView(fio, root).snapshot_ids() == []


# ----------------------------------------------------------------------------- conflicts


def _expect_conflict(fio, root, cls, messages, files, *, published=()):
    v = TableView(fio, root)
    before = v.state()
    latest_before = v.latest()
    with pytest.raises(cls) as ei:
        new_commit(fio, root, user="conflicting").commit(messages, 5)
    assert isinstance(ei.value, CommitConflictError)
    assert set(files) <= set(ei.value.files), ei.value.files
    for f in files:
        assert f in str(ei.value)
    assert ei.value.published_snapshot_ids == list(published)
    if not published:
        assert v.state() == before, "the failed commit left files or snapshots behind"
        assert v.latest() == latest_before
    v.check()
    return ei.value


def test_bucket_count_changed(table):
    fio, root = table
    seed(fio, root)
    err = _expect_conflict(fio, root, BucketCountChangedError,
                           [msg("p1", 3, total_buckets=4, new_files=[dfile("data-x", 1)])], ["data-x"])
    assert set(err.files) & {"data-a", "data-b"}  # names the live file holding the old count
    # another partition may use another count
    new_commit(fio, root).commit([msg("p3", 3, total_buckets=4, new_files=[dfile("y", 1)])], 9)
    TableView(fio, root).check()


def test_bucket_count_changed_within_one_commit(table):
    fio, root = table
    _expect_conflict(fio, root, BucketCountChangedError,
                     [msg("p1", 0, total_buckets=2, new_files=[dfile("x", 1)]),
                      msg("p1", 1, total_buckets=3, new_files=[dfile("y", 1)])], ["x", "y"])


def test_file_already_live(table):
    fio, root = table
    seed(fio, root)
    _expect_conflict(fio, root, FileAlreadyLiveError, [msg("p1", 0, new_files=[dfile("data-a", 10, 1, 5)])], ["data-a"])
    # the same name at another level is another file
    new_commit(fio, root).commit([msg("p1", 0, new_files=[dfile("data-a", 10, 50, 60, level=2)])], 2)


def test_file_added_twice_in_one_commit(table):
    fio, root = table
    _expect_conflict(fio, root, FileAlreadyLiveError,
                     [msg("p1", 0, new_files=[dfile("dup", 1)]), msg("p1", 0, new_files=[dfile("dup", 1)])], ["dup"])


def test_file_not_live(table):
    fio, root = table
    seed(fio, root)
    _expect_conflict(fio, root, FileNotLiveError, [msg("p1", 0, compact_before=[dfile("ghost", 1)],
                                                       compact_after=[dfile("g2", 1, level=1)])], ["ghost"])
    _expect_conflict(fio, root, FileNotLiveError, [msg("p1", 0, deleted_files=[dfile("ghost2", 1)])], ["ghost2"])
    # a live file of another bucket / partition is not the same file
    _expect_conflict(fio, root, FileNotLiveError, [msg("p2", 0, deleted_files=[dfile("data-a", 10, 1, 5)])], ["data-a"])


def test_file_deleted_twice_in_one_commit(table):
    fio, root = table
    seed(fio, root)
    _expect_conflict(fio, root, FileNotLiveError,
                     [msg("p1", 0, compact_before=[dfile("data-a", 10, 1, 5)], compact_after=[dfile("x", 10, 1, 5, 1)]),
                      msg("p1", 0, compact_before=[dfile("data-a", 10, 1, 5)])], ["data-a"])


def test_key_range_overlap_at_level_one_and_above(table):
    fio, root = table
    seed(fio, root)
    # two new level-1 files overlapping (inclusive bounds: 5 is in both)
    _expect_conflict(fio, root, KeyRangeOverlapError,
                     [msg("p1", 0, compact_before=[dfile("data-a", 10, 1, 5), dfile("data-b", 5, 3, 9)],
                          compact_after=[dfile("l1-x", 7, 1, 5, 1), dfile("l1-y", 8, 5, 9, 1)])], ["l1-x", "l1-y"])
    # a live level-3 file, then a new level-3 file overlapping it
    new_commit(fio, root).commit([msg("p1", 0, compact_before=[dfile("data-a", 10, 1, 5)],
                                      compact_after=[dfile("l3", 10, 1, 5, 3)])], 2)
    _expect_conflict(fio, root, KeyRangeOverlapError,
                     [msg("p1", 0, compact_before=[dfile("data-b", 5, 3, 9)],
                          compact_after=[dfile("l3-b", 5, 4, 9, 3)])], ["l3", "l3-b"])
    # same ranges on another level, bucket or partition are fine
    new_commit(fio, root).commit([msg("p1", 0, compact_before=[dfile("data-b", 5, 3, 9)],
                                      compact_after=[dfile("l4-b", 5, 3, 9, 4)])], 3)
    new_commit(fio, root).commit([msg("p1", 1, new_files=[dfile("l3-other-bucket", 5, 1, 5, 3)])], 4)
    TableView(fio, root).check()


def test_level_zero_overlap_is_allowed(table):
    fio, root = table
    seed(fio, root)  # a [1,5] and b [3,9] already overlap at level 0
    stats = new_commit(fio, root).commit([msg("p1", 0, new_files=[dfile("z", 3, 1, 9), dfile("w", 1, 5, 5)])], 2)
    assert stats.snapshot_ids == [2]
    assert TableView(fio, root).live_names() == {"data-a", "data-b", "data-c", "z", "w"}


def test_append_table_has_no_key_range_check(table):
    fio, root = table
    c = new_commit(fio, root, APPEND_SCHEMA)
    c.commit([append_msg(new_files=[dfile("f1", 1, 1, 5, 1), dfile("f2", 1, 1, 5, 1)])], 1)
    assert TableView(fio, root, APPEND_SCHEMA).live_names() == {"f1", "f2"}


def test_append_stays_when_only_the_compact_part_conflicts(table):
    fio, root = table
    seed(fio, root)
    err = _expect_conflict(fio, root, FileNotLiveError,
                           [msg("p1", 0, new_files=[dfile("n", 3, 20, 22)],
                                compact_before=[dfile("ghost", 1)], compact_after=[dfile("g", 1, level=1)])],
                           ["ghost"], published=[2])
    v = TableView(fio, root)
    assert v.latest().id == 2 and v.latest().commit_kind is CommitKind.APPEND
    assert v.live_names() == {"data-a", "data-b", "data-c", "n"}
    assert err.published_snapshot_ids == [2]


# ----------------------------------------------------------------------------- lost races


class Competitor:
    """Publishes a competing snapshot from another commit user right before our publish."""

    def __init__(self, fio, root, make_messages, when=lambda n: n == 0):
        self.commit = new_commit(FileIO(fio.fs), root, user="competitor")
        self.make_messages = make_messages
        self.when = when
        self.ids: list[int] = []

    def __call__(self, path, n):
        if self.when(n):
            self.ids += self.commit.commit(self.make_messages(len(self.ids)), 100 + len(self.ids)).snapshot_ids


def hooked(fio, **hooks):
    return HookedFileIO(fio.fs, **hooks)


def test_lost_race_lands_as_next_snapshot(table):
    fio, root = table
    seed(fio, root)
    comp = Competitor(fio, root, lambda i: [msg("p2", 1, new_files=[dfile(f"comp-{i}", 2, 30, 31)])])
    ours = new_commit(hooked(fio, before_publish=comp), root, user="ours")
    stats = ours.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)])], 2)
    assert comp.ids == [2]
    assert stats.snapshot_ids == [3] and stats.lost_races == 1 and stats.attempts == 2
    v = TableView(fio, root)
    assert v.sm.snapshot(3).commit_user == "ours"
    assert v.live_names() == {"data-a", "data-b", "data-c", "comp-0", "n"}
    v.check()  # the losing attempt's manifests were removed


@pytest.mark.parametrize("shape", ["compact", "append-delete"])
def test_lost_race_rechecks_conflicts_against_the_winner(table, shape):
    fio, root = table
    seed(fio, root)
    comp = Competitor(fio, root, lambda i: [msg("p1", 0, compact_before=[dfile("data-a", 10, 1, 5)],
                                                compact_after=[dfile("a-by-competitor", 10, 1, 5, 2)])])
    if shape == "compact":
        mine = [msg("p1", 0, compact_before=[dfile("data-a", 10, 1, 5)], compact_after=[dfile("a-by-us", 10, 1, 5, 1)])]
    else:
        mine = [msg("p1", 0, deleted_files=[dfile("data-a", 10, 1, 5)])]
    ours = new_commit(hooked(fio, before_publish=comp), root, user="ours")
    with pytest.raises(FileNotLiveError) as ei:
        ours.commit(mine, 2)
    assert "data-a" in ei.value.files
    assert ei.value.published_snapshot_ids == []
    v = TableView(fio, root)
    assert v.snapshot_ids() == [1, 2] and v.latest().commit_user == "competitor"
    assert v.live_names() == {"a-by-competitor", "data-b", "data-c"}
    v.check()


def test_lost_race_on_append_then_compact_rechecks_the_compact_part(table):
    """APPEND + COMPACT in one commit; the APPEND loses a race to a snapshot that compacts away the
    file our COMPACT part deletes. The APPEND still lands; the COMPACT must be re-checked against
    the table as it is after the competitor, and fail."""
    fio, root = table
    seed(fio, root)
    comp = Competitor(fio, root, lambda i: [msg("p1", 0, compact_before=[dfile("data-a", 10, 1, 5)],
                                                compact_after=[dfile("a-by-competitor", 10, 1, 5, 2)])])
    ours = new_commit(hooked(fio, before_publish=comp), root, user="ours")
    with pytest.raises(FileNotLiveError) as ei:
        ours.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)],
                         compact_before=[dfile("data-a", 10, 1, 5)], compact_after=[dfile("a-by-us", 10, 1, 5, 1)])], 2)
    assert ei.value.published_snapshot_ids == [3]
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_user for i in v.snapshot_ids()] == ["seed", "competitor", "ours"]
    assert v.live_names() == {"a-by-competitor", "data-b", "data-c", "n"}
    v.check()


def test_lost_race_on_append_then_compact_key_overlap_is_rechecked(table):
    fio, root = table
    seed(fio, root)
    # the competitor puts a level-1 file over keys [1, 4] into p1 / bucket 0
    comp = Competitor(fio, root, lambda i: [msg("p1", 0, compact_before=[dfile("data-a", 10, 1, 5)],
                                                compact_after=[dfile("l1-comp", 10, 1, 4, 1)])])
    ours = new_commit(hooked(fio, before_publish=comp), root, user="ours")
    with pytest.raises(KeyRangeOverlapError) as ei:
        ours.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)],
                         compact_before=[dfile("data-b", 5, 3, 9)], compact_after=[dfile("l1-ours", 5, 3, 9, 1)])], 2)
    assert set(ei.value.files) == {"l1-comp", "l1-ours"}
    assert ei.value.published_snapshot_ids == [3]
    v = TableView(fio, root)
    assert "l1-ours" not in v.live_names()
    v.check()


def test_retries_exhausted(table):
    fio, root = table
    seed(fio, root)
    comp = Competitor(fio, root, lambda i: [msg("p2", 1, new_files=[dfile(f"comp-{i}", 1, 40 + i, 40 + i)])],
                      when=lambda n: True)
    ours = new_commit(hooked(fio, before_publish=comp), root, user="ours",
                      options=CommitOptions(max_retries=3))
    with pytest.raises(CommitRetriesExhaustedError) as ei:
        ours.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)])], 2)
    assert ei.value.published_snapshot_ids == []
    assert len(comp.ids) == 4  # one lost race per attempt: 1 + max_retries
    v = TableView(fio, root)
    assert all(v.sm.snapshot(i).commit_user != "ours" for i in v.snapshot_ids())
    assert "n" not in v.live_names()
    v.check()  # every losing attempt cleaned up


def test_zero_retries_gives_up_after_one_lost_race(table):
    fio, root = table
    comp = Competitor(fio, root, lambda i: [msg("p2", 1, new_files=[dfile(f"comp-{i}", 1)])], when=lambda n: True)
    ours = new_commit(hooked(fio, before_publish=comp), root, user="ours", options=CommitOptions(max_retries=0))
    with pytest.raises(CommitRetriesExhaustedError):
        ours.commit([msg("p1", 0, new_files=[dfile("n", 3)])], 2)
    assert len(comp.ids) == 1


# ----------------------------------------------------------------------------- unknown outcome


def _raise_once(at: int, exc=lambda: OSError("connection reset while publishing (injected)")):
    def hook(path, n, *result):
        if n == at:
            raise exc()
    return hook


def test_publish_raises_after_landing_reports_success_once(table):
    fio, root = table
    seed(fio, root)
    ours = new_commit(hooked(fio, after_publish=_raise_once(0)), root, user="ours")
    stats = ours.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)])], 2)
    assert stats.snapshot_ids == [2] and stats.attempts == 2  # the raise was seen, then its snapshot found
    v = TableView(fio, root)
    assert v.snapshot_ids() == [1, 2]
    assert [s.commit_user for s in v.sm.snapshots()].count("ours") == 1
    assert v.live_names() == {"data-a", "data-b", "data-c", "n"}
    v.check()  # no referenced manifest deleted, nothing orphaned


def test_publish_raises_after_landing_then_compact_follows(table):
    fio, root = table
    seed(fio, root)
    ours = new_commit(hooked(fio, after_publish=_raise_once(0)), root, user="ours")
    stats = ours.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)], compact_before=[dfile("data-a", 10, 1, 5)],
                             compact_after=[dfile("a1", 10, 1, 5, 1)])], 2)
    assert stats.snapshot_ids == [2, 3]
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_kind for i in (2, 3)] == [CommitKind.APPEND, CommitKind.COMPACT]
    assert v.live_names() == {"a1", "data-b", "data-c", "n"}
    v.check()


def test_publish_raises_before_landing_is_retried_and_lands_once(table):
    fio, root = table
    seed(fio, root)
    ours = new_commit(hooked(fio, before_publish=_raise_once(0)), root, user="ours")
    stats = ours.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)])], 2)
    assert stats.snapshot_ids == [2] and stats.attempts == 2
    v = TableView(fio, root)
    assert v.snapshot_ids() == [1, 2]
    v.check()  # the first attempt's files were removed once it was known not to have landed


def test_unknown_outcome_with_a_competitor_in_between(table):
    fio, root = table
    seed(fio, root)
    comp = Competitor(fio, root, lambda i: [msg("p2", 1, new_files=[dfile("comp", 1, 50, 50)])])

    def before(path, n):
        comp(path, n)
        if n == 0:
            raise OSError("timeout (injected)")

    ours = new_commit(hooked(fio, before_publish=before), root, user="ours")
    stats = ours.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)])], 2)
    assert stats.snapshot_ids == [3]
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_user for i in v.snapshot_ids()] == ["seed", "competitor", "ours"]
    v.check()


def test_outcome_still_unknown_when_retries_run_out(table):
    fio, root = table
    seed(fio, root)
    def always_down(path, n):
        raise OSError("storage unreachable (injected)")

    ours = new_commit(hooked(fio, before_publish=always_down), root, user="ours", options=CommitOptions(max_retries=2))
    v = TableView(fio, root)
    with pytest.raises(CommitOutcomeUnknownError):
        ours.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)])], 2)
    assert v.snapshot_ids() == [1]
    leftovers = v.manifest_dir() - v.referenced()
    assert leftovers, "the last attempt's files stay while its outcome is unknown"
    # retrying the same commit (same user and identifier) on healthy storage lands it exactly once
    again = new_commit(fio, root, user="ours")
    assert again.filter_committed([ManifestCommittable(2, (msg("p1", 0, new_files=[dfile("n", 3, 20, 22)]),))])
    again.commit([msg("p1", 0, new_files=[dfile("n", 3, 20, 22)])], 2)
    assert v.snapshot_ids() == [1, 2] and v.live_names() == {"data-a", "data-b", "data-c", "n"}


# ----------------------------------------------------------------------------- recovery


def _ab_compaction():
    return ManifestCommittable(2, (msg("p1", 0, new_files=[dfile("n", 3, 20, 22)],
                                       compact_before=[dfile("data-a", 10, 1, 5), dfile("data-b", 5, 3, 9)],
                                       compact_after=[dfile("ab", 15, 1, 9, 1)]),))


def test_crash_between_append_and_compact_recommits_only_the_compact_part(table):
    fio, root = table
    seed(fio, root)
    crashing = new_commit(hooked(fio, before_publish=_raise_once(1, SimulatedCrash)), root, user="job")
    with pytest.raises(SimulatedCrash):
        crashing.commit(_ab_compaction())
    v = TableView(fio, root)
    assert v.snapshot_ids() == [1, 2] and v.latest().commit_kind is CommitKind.APPEND

    restarted = new_commit(fio, root, user="job")
    (remaining,) = restarted.filter_committed([_ab_compaction()])
    assert remaining.identifier == 2
    (m,) = remaining.messages
    assert not m.has_append_part() and m.has_compact_part()
    assert restarted.commit(remaining).snapshot_ids == [3]
    assert v.sm.snapshot(3).commit_kind is CommitKind.COMPACT
    assert v.live_names() == {"ab", "data-c", "n"}
    assert restarted.filter_committed([_ab_compaction()]) == []
    # the crashed attempt's files are orphans, but nothing referenced is missing
    assert v.referenced() <= v.manifest_dir()


def test_crash_after_compact_landed_leaves_nothing_to_recommit(table):
    fio, root = table
    seed(fio, root)
    crashing = new_commit(hooked(fio, after_publish=_raise_once(1, SimulatedCrash)), root, user="job")
    with pytest.raises(SimulatedCrash):
        crashing.commit(_ab_compaction())
    restarted = new_commit(fio, root, user="job")
    assert restarted.filter_committed([_ab_compaction()]) == []


def test_filter_committed_keeps_other_users_and_new_identifiers(table):
    fio, root = table
    seed(fio, root, user="job")  # identifier 1
    c = new_commit(fio, root, user="job")
    later = ManifestCommittable(5, (msg("p1", 0, new_files=[dfile("x", 1, 40, 40)]),))
    older = ManifestCommittable(0, (msg("p1", 0, new_files=[dfile("y", 1, 41, 41)]),))
    assert c.filter_committed([older, later]) == [later]  # identifiers below the newest are done
    other_user = new_commit(fio, root, user="someone-else")
    assert other_user.filter_committed([older, later]) == [older, later]


# ----------------------------------------------------------------------------- overwrite


def test_overwrite_partition_replaces_exactly_its_live_files(table):
    fio, root = table
    seed(fio, root)
    stats = new_commit(fio, root).overwrite({"dt": "p1"}, [msg("p1", 1, new_files=[dfile("n", 4, 1, 3)])], 2)
    assert stats.snapshot_ids == [2]
    v = TableView(fio, root)
    s = v.latest()
    assert s.commit_kind is CommitKind.OVERWRITE
    assert {(e.kind, e.file_name) for e in v.delta_entries(s)} == {
        (FileKind.DELETE, "data-a"), (FileKind.DELETE, "data-b"), (FileKind.ADD, "n")}
    assert v.live() == {(("p1",), 1, 0, "n"), (("p2",), 1, 0, "data-c")}
    assert (s.total_record_count, s.delta_record_count) == (11, -11)
    v.check()


def test_overwrite_whole_table(table):
    fio, root = table
    seed(fio, root)
    new_commit(fio, root).overwrite(None, [msg("p9", 0, new_files=[dfile("only", 2)])], 2)
    v = TableView(fio, root)
    assert {(e.kind, e.file_name) for e in v.delta_entries(v.latest())} == {
        (FileKind.DELETE, "data-a"), (FileKind.DELETE, "data-b"), (FileKind.DELETE, "data-c"), (FileKind.ADD, "only")}
    assert v.live_names() == {"only"}
    v.check()


def test_overwrite_may_change_the_bucket_count(table):
    fio, root = table
    seed(fio, root)
    new_commit(fio, root).overwrite({"dt": "p1"}, [msg("p1", 3, total_buckets=4, new_files=[dfile("n", 1)])], 2)
    v = TableView(fio, root)
    assert v.live() == {(("p1",), 3, 0, "n"), (("p2",), 1, 0, "data-c")}
    v.check()


def test_dynamic_overwrite_replaces_only_partitions_with_new_files(table):
    fio, root = table
    seed(fio, root)
    c = new_commit(fio, root)
    c.overwrite(None, [msg("p2", 0, new_files=[dfile("n2", 1)])], 2, dynamic=True)
    assert TableView(fio, root).live_names() == {"data-a", "data-b", "n2"}
    assert c.overwrite(None, [], 3, dynamic=True).snapshot_ids == []


def test_overwrite_after_a_lost_race_also_replaces_the_winners_files(table):
    fio, root = table
    seed(fio, root)
    comp = Competitor(fio, root, lambda i: [msg("p1", 1, new_files=[dfile("comp-in-p1", 2, 60, 61)])])
    ours = new_commit(hooked(fio, before_publish=comp), root, user="ours")
    stats = ours.overwrite({"dt": "p1"}, [msg("p1", 0, new_files=[dfile("fresh", 4, 1, 3)])], 2)
    assert comp.ids == [2] and stats.snapshot_ids == [3] and stats.lost_races == 1
    v = TableView(fio, root)
    assert {(e.kind, e.file_name) for e in v.delta_entries(v.latest())} == {
        (FileKind.DELETE, "data-a"), (FileKind.DELETE, "data-b"), (FileKind.DELETE, "comp-in-p1"),
        (FileKind.ADD, "fresh")}
    assert v.live_names() == {"fresh", "data-c"}
    v.check()


def test_overwrite_with_stray_files_is_refused(table):
    fio, root = table
    seed(fio, root)
    v = TableView(fio, root)
    before = v.state()
    with pytest.raises(OverwritePartitionError) as ei:
        new_commit(fio, root).overwrite({"dt": "p1"}, [msg("p1", 0, new_files=[dfile("ok", 1)]),
                                                       msg("p2", 0, new_files=[dfile("stray", 1)])], 2)
    assert "stray" in str(ei.value) and "ok" not in str(ei.value).replace("overwrite", "")
    with pytest.raises(OverwritePartitionError):
        new_commit(fio, root).overwrite({"nokey": "x"}, [msg("p1", 0, new_files=[dfile("z", 1)])], 2)
    assert v.state() == before


# ----------------------------------------------------------------------------- changelog and index


def test_changelog_files_produce_a_changelog_manifest_list(table):
    fio, root = table
    c = new_commit(fio, root)
    c.commit([msg("p1", 0, new_files=[dfile("d1", 3, 1, 3)],
                  changelog_files=[dfile("changelog-1", 3, 1, 3), dfile("changelog-2", 2, 4, 5)])], 1)
    v = TableView(fio, root)
    s = v.latest()
    assert s.changelog_manifest_list is not None and s.changelog_record_count == 5
    assert s.changelog_manifest_list_size == fio.file_size(v.paths.manifest_path(s.changelog_manifest_list))
    metas = v.ml().read(s.changelog_manifest_list)
    assert all("-changelog-" in m.file_name for m in metas)
    entries = v.mf().read_all(metas)
    assert {(e.kind, e.file_name) for e in entries} == {(FileKind.ADD, "changelog-1"), (FileKind.ADD, "changelog-2")}
    assert v.live_names() == {"d1"}  # changelog files are not data files
    # a commit without changelog has none
    c.commit([msg("p1", 0, new_files=[dfile("d2", 1, 9, 9)])], 2)
    assert v.latest().changelog_manifest_list is None and v.latest().changelog_record_count is None
    # compaction changelog goes with the COMPACT snapshot
    c.commit([msg("p1", 0, compact_before=[dfile("d1", 3, 1, 3)], compact_after=[dfile("d1c", 3, 1, 3, 1)],
                  compact_changelog=[dfile("changelog-3", 4)])], 3)
    s = v.latest()
    assert s.commit_kind is CommitKind.COMPACT and s.changelog_record_count == 4
    v.check()


def test_index_files_produce_an_index_manifest(table):
    fio, root = table
    c = new_commit(fio, root)
    c.commit([msg("p1", 0, new_files=[dfile("d1", 1)], new_index_files=[index_file("index-1")])], 1)
    v = TableView(fio, root)
    s1 = v.latest()
    assert s1.index_manifest is not None
    imf = IndexManifestFile(fio, v.paths)
    (e,) = imf.read(s1.index_manifest)
    assert (e.kind, e.partition, e.bucket, e.index_file.file_name) == (FileKind.ADD, part("p1"), 0, "index-1")
    # without index changes the snapshot keeps the index manifest
    c.commit([msg("p1", 0, new_files=[dfile("d2", 1, 5, 5)])], 2)
    assert v.latest().index_manifest == s1.index_manifest
    # replace it in a COMPACT, then delete it
    c.commit([msg("p1", 0, compact_new_index_files=[index_file("index-2")],
                  compact_deleted_index_files=[index_file("index-1")])], 3)
    assert [x.index_file.file_name for x in imf.read(v.latest().index_manifest)] == ["index-2"]
    c.commit([msg("p1", 0, deleted_index_files=[index_file("index-2")])], 4)
    assert v.latest().index_manifest is None
    v.check()


# ----------------------------------------------------------------------------- failures while writing


def _commit_once(fio, root):
    return new_commit(fio, root, options=CommitOptions(merge=MergeOptions(1, 1, 1))).commit(
        [msg("p1", 0, new_files=[dfile("n", 3, 20, 22)], changelog_files=[dfile("cl", 3)],
             new_index_files=[index_file("idx")], compact_before=[dfile("data-a", 10, 1, 5)],
             compact_after=[dfile("a1", 10, 1, 5, 1)])], 2)


def test_io_error_at_every_metadata_write_leaves_nothing(io_root):
    """Fail each manifest / manifest list / index manifest write of a commit (with manifest
    merging) in turn: the commit raises, and nothing it wrote stays behind."""
    fio, base = io_root
    probe_root = base + "/probe"
    seed(fio, probe_root)
    counter = HookedFileIO(fio.fs, write_prefix="")
    _commit_once(counter, probe_root)
    n_writes = len([p for p in counter.writes if "/manifest/" in p])
    assert n_writes >= 8
    for k in range(n_writes):
        root = f"{base}/k{k}"
        seed(fio, root)
        v = TableView(fio, root)
        before = v.state()
        failing = HookedFileIO(fio.fs, write_prefix="", on_write=lambda p, n, k=k: _fail_kth_manifest(p, k))
        _fail_kth_manifest.count = 0
        with pytest.raises(InjectedIOError):
            _commit_once(failing, root)
        after = v.state()
        new_snapshots = after[0][len(before[0]):]
        assert len(new_snapshots) <= 1  # at most the APPEND landed before the failure
        v.check()  # nothing orphaned: a failed attempt removes what it wrote


def _fail_kth_manifest(path, k):
    if "/manifest/" not in path:
        return
    n = _fail_kth_manifest.count
    _fail_kth_manifest.count += 1
    if n == k:
        raise InjectedIOError(f"injected failure writing {path}")


def test_failed_manifest_list_write_aborts_the_commit_without_retry(table):
    fio, root = table
    seed(fio, root)
    ours = new_commit(hooked(fio, write_prefix="manifest-list", on_write=fail_on_write(0)), root, user="ours")
    v = TableView(fio, root)
    before = v.state()
    with pytest.raises(InjectedIOError):
        ours.commit([msg("p1", 0, new_files=[dfile("n", 3)])], 2)
    assert v.state() == before
    assert ours.file_io.publishes == []  # failed before publication: no attempt to publish


def test_file_system_without_atomic_create_fails_fast_and_cleanly():
    """Publishing can never work there: no retries as if the outcome were unknown, the cause
    surfaces, and nothing is left behind."""
    from core_helpers import DictFS

    from impl.errors import UnsupportedFileSystemError

    fs, sleeps = DictFS(), []
    c = new_commit(FileIO(fs), "/t", sleep=sleeps.append)
    with pytest.raises(UnsupportedFileSystemError):
        c.commit([msg("p1", 0, new_files=[dfile("x", 1)])], 1)
    assert sleeps == []
    assert fs.files == {}


# ----------------------------------------------------------------------------- manifest merging over time


def _run_history(fio, root, options, n_commits=60):
    c = new_commit(fio, root, APPEND_SCHEMA, options=options)
    v = TableView(fio, root, APPEND_SCHEMA)
    expected, merges, sizes = set(), [], []
    for i in range(n_commits):
        new = [dfile(f"f{i}-{j}", 1 + j) for j in range(1 + i % 2)]
        deleted = sorted(expected)[:: 3][:1] if i % 4 == 3 else []
        stats = c.commit([append_msg(new_files=new, deleted_files=[dfile(n, int(n.split("-")[1]) + 1)
                                                                   for n in deleted])], i + 1)
        merges += stats.manifest_merges
        expected = (expected - set(deleted)) | {f.file_name for f in new}
        s = v.latest()
        assert v.live_names() == expected, f"commit {i}"
        sizes.append(len(v.ml().read(s.base_manifest_list)) + len(v.ml().read(s.delta_manifest_list)))
    return v, merges, sizes


def test_manifest_merging_keeps_the_base_list_bounded():
    # a one-entry manifest is ~2.3 KB: these thresholds make both minor and full merges fire
    fio, root = memory_root()
    opts = CommitOptions(merge=MergeOptions(target_file_size_bytes=6000, full_compaction_threshold_bytes=7000,
                                            merge_min_count=3))
    v, merges, sizes = _run_history(fio, root, opts)
    assert ManifestMergeKind.FULL in merges and ManifestMergeKind.MINOR in merges
    assert all(isinstance(m, ManifestMergeKind) for m in merges) and ManifestMergeKind.NONE not in merges
    assert max(sizes[10:]) <= 4, sizes
    v.check()
    # without merging the same history grows one manifest per commit
    fio2, root2 = memory_root()
    _, merges2, sizes2 = _run_history(fio2, root2, CommitOptions(merge=MergeOptions(1 << 40, 1 << 40, 1000)))
    assert merges2 == [] and sizes2[-1] == 60


# ----------------------------------------------------------------------------- concurrent writers


def test_concurrent_committers_in_os_processes(tmp_path):
    """Two spawned processes commit to one table on local disk: every commit lands exactly once,
    ids stay contiguous, no snapshot is published twice."""
    import multiprocessing

    from commit_helpers import process_committer

    root = str(tmp_path / "db.db" / "t")
    n_procs, per_proc = 2, 8
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=process_committer, args=(root, w, per_proc, queue)) for w in range(n_procs)]
    for p in procs:
        p.start()
    reports = dict(queue.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    fio = FileIO()
    v = TableView(fio, root, APPEND_SCHEMA)
    assert v.snapshot_ids() == list(range(1, n_procs * per_proc + 1))
    published = sorted(i for ids in reports.values() for i in ids)
    assert published == v.snapshot_ids()  # each id reported by exactly one process
    for w, ids in reports.items():
        assert all(v.sm.snapshot(i).commit_user == f"proc-{w}" for i in ids)
    assert v.live_names() == {f"proc-{w}-{i}" for w in range(n_procs) for i in range(per_proc)}
    v.check()


def test_concurrent_committers_in_threads(table):
    fio, root = table
    n_threads, per_thread = 4, 6
    errors = []

    def run(t):
        c = new_commit(fio, root, APPEND_SCHEMA, user=f"t{t}", options=CommitOptions(max_retries=200))
        try:
            for i in range(per_thread):
                c.commit([append_msg(bucket=t, new_files=[dfile(f"t{t}-{i}", 1)])], i + 1)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    v = TableView(fio, root, APPEND_SCHEMA)
    assert v.snapshot_ids() == list(range(1, n_threads * per_thread + 1))
    assert v.live_names() == {f"t{t}-{i}" for t in range(n_threads) for i in range(per_thread)}
    users = [v.sm.snapshot(i).commit_user for i in v.snapshot_ids()]
    assert sorted(users) == sorted(f"t{t}" for t in range(n_threads) for _ in range(per_thread))
    v.check()


# ----------------------------------------------------------------------------- cold commits


class _ReadLog(FileIO):
    """Records the base name of every file read."""

    def __init__(self, fs):
        super().__init__(fs)
        self.reads: list[str] = []

    def read_bytes(self, path: str) -> bytes:
        self.reads.append(path.rsplit("/", 1)[-1])
        return super().read_bytes(path)


def test_a_cold_commit_reads_only_the_manifests_of_the_partitions_it_touches(table):
    fio, root = table
    schema = replace(PK_SCHEMA, options={**PK_SCHEMA.options, "manifest.target-file-size": "2kb"})
    for i in range(5):  # one manifest per partition (each holds one entry, at least the target)
        new_commit(fio, root, schema, user=f"seed{i}").commit([msg(f"p{i}", 0, new_files=(dfile(f"data-{i}"),))], 1)
    view = TableView(fio, root)
    latest = view.latest()
    metas = [*view.ml().read(latest.base_manifest_list), *view.ml().read(latest.delta_manifest_list)]
    of_p2 = {m.file_name for m in metas if m.partition_stats.min_values == part("p2")}
    assert of_p2 and len(of_p2) < len(metas)

    log = _ReadLog(fio.fs)
    new_commit(log, root, schema, user="cold").commit([msg("p2", 0, new_files=(dfile("data-new"),))], 1)
    read_manifests = {n for n in log.reads if n.startswith("manifest-") and not n.startswith("manifest-list")}
    assert read_manifests == of_p2
    # as strong as before: a cold committer still sees p3's live file, and that it is gone
    _expect_conflict(fio, root, FileAlreadyLiveError, [msg("p3", 0, new_files=(dfile("data-3"),))], ["data-3"])


def test_a_small_table_is_read_whole_by_a_cold_commit(table):
    """Manifests smaller together than one settled manifest are read once, all of them: reading
    one partition's now and another's at the next commit would read them twice."""
    fio, root = table
    for i in range(5):
        new_commit(fio, root, user=f"seed{i}").commit([msg(f"p{i}", 0, new_files=(dfile(f"data-{i}"),))], 1)
    view = TableView(fio, root)
    latest = view.latest()
    metas = [*view.ml().read(latest.base_manifest_list), *view.ml().read(latest.delta_manifest_list)]
    log = _ReadLog(fio.fs)
    cold = new_commit(log, root, user="cold")
    cold.commit([msg("p2", 0, new_files=(dfile("data-new"),))], 1)
    first = [n for n in log.reads if n.startswith("manifest-") and not n.startswith("manifest-list")]
    assert set(first) >= {m.file_name for m in metas} and len(first) == len(set(first))
    log.reads.clear()
    cold.commit([msg("p3", 0, new_files=(dfile("data-new3"),))], 2)  # holds every partition already
    assert not [n for n in log.reads if n in {m.file_name for m in metas}]
    _expect_conflict(fio, root, FileAlreadyLiveError, [msg("p4", 0, new_files=(dfile("data-4"),))], ["data-4"])


def test_a_committer_holding_some_partitions_reads_the_others_at_the_snapshot_it_commits_on(table):
    fio, root = table
    seed(fio, root)
    # a target so small that every manifest is settled: the committers read by partition
    small = replace(PK_SCHEMA, options={**PK_SCHEMA.options, "manifest.target-file-size": "1b"})
    a = new_commit(fio, root, small, user="a")
    a.commit([msg("p1", 0, new_files=(dfile("data-d", 1, 20, 21),))], 1)  # a now holds p1 only
    assert a._live is not None and a._live.partitions == frozenset({part("p1")})
    b = new_commit(fio, root, small, user="b")
    b.commit([msg("p2", 1, deleted_files=(dfile("data-c", 7, 1, 2),))], 1)  # b deletes p2's file
    with pytest.raises(FileNotLiveError):  # a learns p2 from the latest snapshot, not its own
        a.commit([msg("p2", 1, deleted_files=(dfile("data-c", 7, 1, 2),))], 2)
    a.commit([msg("p2", 1, new_files=(dfile("data-c2", 1, 5, 6),))], 3)
    assert TableView(fio, root).live_names() == {"data-a", "data-b", "data-d", "data-c2"}

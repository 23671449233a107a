"""Unit tests of the commit path's smaller rules, each pinned to one observable behaviour:
option parsing, retry backoff and deadline, recovery of unknown publish outcomes (batch
identifiers, another committer in between, overwrites), filter_committed over several
committables, commit messages, abort, partition descriptions in errors, recorded list
sizes, index manifests and partition pruning of the full manifest merge.

All on the memory file system: these run once per mutant in mutation testing (docs/mutation.md).
"""

from __future__ import annotations

import dataclasses
import posixpath

import pytest
from commit_helpers import (
    PK_SCHEMA,
    TableView,
    dfile,
    index_file,
    msg,
    new_commit,
    part,
)
from core_helpers import HookedFileIO, memory_root

import impl.commit.file_store_commit as fsc
import impl.commit.metadata_writer as metadata_writer
from impl.commit.conflicts import check_conflicts
from impl.commit.live_files import LiveFiles
from impl.commit.messages import BATCH_COMMIT_IDENTIFIER, CommitMessage, ManifestCommittable, collect_changes
from impl.commit.options import CommitOptions
from impl.data.binary_row import encode_row
from impl.data.types import BIGINT, INT, STRING, DataField
from impl.errors import (
    BucketCountChangedError,
    CommitOutcomeUnknownError,
    CommitRetriesExhaustedError,
    CorruptMetadataError,
    FileAlreadyLiveError,
    FileIOError,
    FileNotLiveError,
    InvalidOptionError,
    KeyRangeOverlapError,
    OverwritePartitionError,
)
from impl.format import avro
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList, fold_index_entries
from impl.manifest.merger import ManifestFileMerger, ManifestMergeKind, MergeOptions
from impl.manifest.records import FileKind, IndexManifestEntry, ManifestEntry
from impl.schema.records import TableSchema
from impl.snapshot.records import CommitKind


@pytest.fixture
def table():
    fio, root = memory_root("units")
    yield fio, root + "/db.db/t"
    try:
        fio.fs.rm(root, recursive=True)
    except FileNotFoundError:
        pass


def seed(fio, root, user="seed"):
    """Snapshot 1: p1/bucket 0: a (10 rows), b (5 rows); p2/bucket 1: c (7 rows)."""
    c = new_commit(fio, root, user=user)
    c.commit([msg("p1", 0, new_files=[dfile("data-a", 10, 1, 5), dfile("data-b", 5, 3, 9)]),
              msg("p2", 1, new_files=[dfile("data-c", 7, 1, 2)])], 1)
    return c


def hooked(fio, **hooks):
    return HookedFileIO(fio.fs, **hooks)


def raise_at(*calls, exc=lambda: OSError("connection reset while publishing (injected)")):
    """A publish hook raising on the given 0-based publish calls."""
    def hook(path, n, *result):
        if n in calls:
            raise exc()
    return hook


class AlwaysWins:
    """Another commit user publishes a snapshot right before each of our publish calls."""

    def __init__(self, fio, root):
        self.commit = new_commit(FileIO(fio.fs), root, user="competitor")
        self.ids: list[int] = []

    def __call__(self, path, n):
        i = len(self.ids)
        self.ids += self.commit.commit([msg("p2", 1, new_files=[dfile(f"comp-{i}", 1, 40 + i, 40 + i)])],
                                       100 + i).snapshot_ids


# ============================================================================ options


def test_commit_options_default_to_paimons():
    o = CommitOptions.from_options({})
    assert (o.max_retries, o.min_retry_wait_ms, o.max_retry_wait_ms, o.timeout_ms) == (10, 10, 10_000, None)
    assert (o.merge.target_file_size_bytes, o.merge.full_compaction_threshold_bytes, o.merge.merge_min_count) == (
        8 * 1024 * 1024, 16 * 1024 * 1024, 30)
    assert o == CommitOptions()


def test_commit_options_parse_every_key():
    o = CommitOptions.from_options({
        "commit.max-retries": "3",
        "commit.min-retry-wait": "50 ms",
        "commit.max-retry-wait": "2 s",
        "commit.timeout": "1 min",
        "manifest.target-file-size": "2 mb",
        "manifest.full-compaction-threshold-size": "4 kb",
        "manifest.merge-min-count": "5",
        "unrelated.key": "ignored",
    })
    assert (o.max_retries, o.min_retry_wait_ms, o.max_retry_wait_ms, o.timeout_ms) == (3, 50, 2000, 60_000)
    assert (o.merge.target_file_size_bytes, o.merge.full_compaction_threshold_bytes, o.merge.merge_min_count) == (
        2 * 1024 * 1024, 4 * 1024, 5)


def test_boundary_values_are_valid_options():
    assert CommitOptions.from_options({"commit.max-retries": "0"}).max_retries == 0
    assert CommitOptions.from_options({"manifest.merge-min-count": "1"}).merge.merge_min_count == 1
    same = CommitOptions.from_options({"commit.min-retry-wait": "1 s", "commit.max-retry-wait": "1000 ms"})
    assert same.min_retry_wait_ms == same.max_retry_wait_ms == 1000


@pytest.mark.parametrize("key, value", [
    ("commit.max-retries", "-1"),
    ("commit.max-retries", "many"),
    ("commit.min-retry-wait", "soon"),
    ("commit.max-retry-wait", "10 parsecs"),
    ("commit.timeout", "-5 s"),
    ("manifest.target-file-size", "big"),
    ("manifest.full-compaction-threshold-size", "1 furlong"),
    ("manifest.merge-min-count", "0"),
])
def test_bad_commit_option_names_the_key(key, value):
    with pytest.raises(InvalidOptionError, match=key.replace(".", r"\.")):
        CommitOptions.from_options({key: value})


def test_min_retry_wait_above_max_is_refused():
    with pytest.raises(InvalidOptionError, match="commit.min-retry-wait"):
        CommitOptions.from_options({"commit.min-retry-wait": "5 s", "commit.max-retry-wait": "1 s"})


def test_committer_reads_its_options_from_the_table_schema(table):
    fio, root = table
    schema = TableSchema(0, PK_SCHEMA.fields, partition_keys=("dt",), primary_keys=("dt", "id"),
                         options={"bucket": "2", "commit.max-retries": "1", "manifest.merge-min-count": "7"})
    comp = AlwaysWins(fio, root)
    ours = fsc.FileStoreCommit(hooked(fio, before_publish=comp), root, schema, commit_user="ours",
                               sleep=lambda s: None)
    assert ours.options.max_retries == 1 and ours.options.merge.merge_min_count == 7
    with pytest.raises(CommitRetriesExhaustedError):
        ours.commit([msg("p1", 0, new_files=[dfile("n", 1)])], 1)
    assert len(comp.ids) == 2  # one try plus one retry


# ============================================================================ backoff and deadline


def _sleeps_over_lost_races(fio, root, monkeypatch, jitter, options):
    """The waits (seconds) between attempts while another writer always wins."""
    draws = []

    def uniform(lo, hi):
        draws.append((lo, hi))
        return jitter(lo, hi)

    monkeypatch.setattr(fsc.random, "uniform", uniform)
    sleeps: list[float] = []
    ours = new_commit(hooked(fio, before_publish=AlwaysWins(fio, root)), root, user="ours",
                      options=options, sleep=sleeps.append)
    with pytest.raises(CommitRetriesExhaustedError):
        ours.commit([msg("p1", 0, new_files=[dfile("n", 1)])], 1)
    return sleeps, draws


def test_backoff_doubles_from_the_minimum_up_to_the_maximum(table, monkeypatch):
    fio, root = table
    options = CommitOptions(max_retries=4, min_retry_wait_ms=10, max_retry_wait_ms=50)
    sleeps, draws = _sleeps_over_lost_races(fio, root, monkeypatch, lambda lo, hi: lo, options)
    assert sleeps == pytest.approx([0.010, 0.020, 0.040, 0.050])
    assert all(lo == 0 for lo, _ in draws)


def test_backoff_jitter_is_at_most_a_fifth_of_the_wait(table, monkeypatch):
    fio, root = table
    options = CommitOptions(max_retries=4, min_retry_wait_ms=10, max_retry_wait_ms=50)
    sleeps, draws = _sleeps_over_lost_races(fio, root, monkeypatch, lambda lo, hi: hi, options)
    assert [hi for _, hi in draws] == pytest.approx([2.0, 4.0, 8.0, 10.0])
    assert sleeps == pytest.approx([0.012, 0.024, 0.048, 0.060])


def test_backoff_jitter_spans_at_least_one_millisecond(table, monkeypatch):
    fio, root = table
    options = CommitOptions(max_retries=1, min_retry_wait_ms=1, max_retry_wait_ms=1)
    sleeps, draws = _sleeps_over_lost_races(fio, root, monkeypatch, lambda lo, hi: hi, options)
    assert draws == [(0, 1.0)]
    assert sleeps == pytest.approx([0.002])


def test_commit_timeout_stops_retrying_once_exceeded(table, monkeypatch):
    fio, root = table
    clock = {"ms": 0.0}
    monkeypatch.setattr(fsc.random, "uniform", lambda lo, hi: lo)

    def sleep(seconds):
        clock["ms"] += seconds * 1000.0

    comp = AlwaysWins(fio, root)
    ours = new_commit(hooked(fio, before_publish=comp), root, user="ours", sleep=sleep,
                      monotonic=lambda: clock["ms"] / 1000.0,
                      options=CommitOptions(max_retries=100, min_retry_wait_ms=30, max_retry_wait_ms=30,
                                            timeout_ms=90))
    with pytest.raises(CommitRetriesExhaustedError, match="after 4 retries in 120 ms"):
        ours.commit([msg("p1", 0, new_files=[dfile("n", 1)])], 1)
    # lost races at 0, 30, 60 and 90 ms keep trying (90 is not past the deadline); 120 ms gives up
    assert len(comp.ids) == 5


# ============================================================================ unknown outcomes


def test_unknown_outcome_of_a_batch_commit_is_not_mistaken_for_an_earlier_batch_commit(table):
    fio, root = table
    seed(fio, root, user="job")
    job = new_commit(hooked(fio, before_publish=raise_at(1)), root, user="job")
    assert job.commit([msg("p1", 0, new_files=[dfile("first", 1, 20, 20)])]).snapshot_ids == [2]
    # the second batch commit (same user, same identifier) fails before landing, then retries
    stats = job.commit([msg("p1", 0, new_files=[dfile("second", 1, 21, 21)])])
    assert stats.snapshot_ids == [3] and stats.attempts == 2
    v = TableView(fio, root)
    assert v.live_names() == {"data-a", "data-b", "data-c", "first", "second"}
    v.check()


def test_unknown_outcome_is_not_mistaken_for_another_users_commit_with_the_same_identifier(table):
    fio, root = table
    seed(fio, root)
    other = new_commit(FileIO(fio.fs), root, user="other")

    def before(path, n):
        if n == 0:
            other.commit([msg("p2", 1, new_files=[dfile("other", 1, 30, 30)])])  # batch identifier too
            raise OSError("timeout (injected)")

    ours = new_commit(hooked(fio, before_publish=before), root, user="ours")
    stats = ours.commit([msg("p1", 0, new_files=[dfile("n", 1, 20, 20)])])
    assert stats.snapshot_ids == [3]
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_user for i in v.snapshot_ids()] == ["seed", "other", "ours"]
    assert "n" in v.live_names()
    v.check()


def test_landed_unknown_outcome_found_below_a_newer_snapshot(table):
    fio, root = table
    seed(fio, root)
    comp = new_commit(FileIO(fio.fs), root, user="competitor")

    def after(path, n, result):
        if n == 0:
            comp.commit([msg("p2", 1, new_files=[dfile("comp", 1, 30, 30)])], 7)
            raise OSError("reply lost (injected)")

    ours = new_commit(hooked(fio, after_publish=after), root, user="ours")
    stats = ours.commit([msg("p1", 0, new_files=[dfile("n", 1, 20, 20)])], 2)
    assert stats.snapshot_ids == [2]  # ours landed as 2 even though 3 is the latest now
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_user for i in v.snapshot_ids()] == ["seed", "ours", "competitor"]
    v.check()  # nothing snapshot 2 references was deleted


def _append_and_compact(identifier=2):
    return ManifestCommittable(identifier, (msg("p1", 0, new_files=[dfile("n", 3, 20, 22)],
                                                compact_before=[dfile("data-a", 10, 1, 5)],
                                                compact_after=[dfile("a1", 10, 1, 5, 1)]),))


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "not-landed"])
def test_commit_again_after_unknown_compact_outcome_completes_it_once(table, landed):
    fio, root = table
    seed(fio, root)
    hook = {"after_publish" if landed else "before_publish": raise_at(1)}
    ours = new_commit(hooked(fio, **hook), root, user="ours", options=CommitOptions(max_retries=0))
    with pytest.raises(CommitOutcomeUnknownError) as ei:
        ours.commit(_append_and_compact())
    assert ei.value.published_snapshot_ids == [2]
    stats = ours.commit(_append_and_compact())
    assert stats.snapshot_ids == [2, 3]
    v = TableView(fio, root)
    assert v.snapshot_ids() == [1, 2, 3]
    assert [v.sm.snapshot(i).commit_kind for i in (2, 3)] == [CommitKind.APPEND, CommitKind.COMPACT]
    assert v.live_names() == {"a1", "data-b", "data-c", "n"}
    v.check()


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "not-landed"])
def test_overwrite_again_after_unknown_outcome_completes_it_once(table, landed):
    fio, root = table
    seed(fio, root)
    hook = {"after_publish" if landed else "before_publish": raise_at(0)}
    ours = new_commit(hooked(fio, **hook), root, user="ours", options=CommitOptions(max_retries=0))
    messages = [msg("p1", 0, new_files=[dfile("fresh", 2, 1, 2)])]
    with pytest.raises(CommitOutcomeUnknownError) as ei:
        ours.overwrite({"dt": "p1"}, messages, 2)
    assert ei.value.published_snapshot_ids == []
    stats = ours.overwrite({"dt": "p1"}, messages, 2)
    assert stats.snapshot_ids == [2]
    v = TableView(fio, root)
    assert v.snapshot_ids() == [1, 2] and v.latest().commit_kind is CommitKind.OVERWRITE
    assert v.live_names() == {"data-c", "fresh"}
    v.check()  # a not-landed attempt's files are removed once that is known


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "not-landed"])
def test_overwrite_again_after_unknown_compact_outcome_completes_it_once(table, landed):
    fio, root = table
    seed(fio, root)
    hook = {"after_publish" if landed else "before_publish": raise_at(1)}
    ours = new_commit(hooked(fio, **hook), root, user="ours", options=CommitOptions(max_retries=0))
    messages = [msg("p1", 0, new_files=[dfile("fresh", 2, 1, 2)],
                    compact_before=[dfile("fresh", 2, 1, 2)], compact_after=[dfile("fresh-1", 2, 1, 2, 1)],
                    compact_changelog=[dfile("changelog-c", 2)], compact_new_index_files=[index_file("index-c")])]
    with pytest.raises(CommitOutcomeUnknownError) as ei:
        ours.overwrite({"dt": "p1"}, messages, 2)
    assert ei.value.published_snapshot_ids == [2]
    stats = ours.overwrite({"dt": "p1"}, messages, 2)
    assert stats.snapshot_ids == [2, 3]
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_kind for i in v.snapshot_ids()] == [
        CommitKind.APPEND, CommitKind.OVERWRITE, CommitKind.COMPACT]
    assert v.live_names() == {"data-c", "fresh-1"}
    assert v.sm.snapshot(3).changelog_record_count == 2
    v.check()


def test_repeat_after_unknown_compact_outcome_reports_this_calls_append_snapshot(table):
    """With the batch identifier, an earlier batch commit of the same user has the same
    (user, identifier, APPEND): the repeat must report the APPEND snapshot of *this* call."""
    fio, root = table
    seed(fio, root, user="job")
    ours = new_commit(hooked(fio, before_publish=raise_at(2)), root, user="job", options=CommitOptions(max_retries=0))
    assert ours.commit([msg("p2", 1, new_files=[dfile("earlier", 1, 30, 30)])]).snapshot_ids == [2]
    batch = _append_and_compact(BATCH_COMMIT_IDENTIFIER)
    with pytest.raises(CommitOutcomeUnknownError) as ei:
        ours.commit(batch)
    assert ei.value.published_snapshot_ids == [3]
    assert ours.commit(batch).snapshot_ids == [3, 4]
    TableView(fio, root).check()


def test_rest_of_an_overwrite_is_recognised_past_other_users_snapshots(table):
    fio, root = table
    seed(fio, root)
    ours = new_commit(fio, root, user="ours")
    full = ManifestCommittable(5, (msg("p1", 0, new_files=[dfile("fresh", 2, 1, 2)]),
                                   msg("p2", 1, compact_before=[dfile("data-c", 7, 1, 2)],
                                       compact_after=[dfile("c1", 7, 1, 2, 1)])))
    assert ours.overwrite({"dt": "p1"}, [msg("p1", 0, new_files=[dfile("fresh", 2, 1, 2)])], 5).snapshot_ids == [2]
    new_commit(fio, root, user="other").commit([msg("p2", 1, new_files=[dfile("other", 1, 50, 50)])], 1)
    (rest,) = ours.filter_committed([full])
    assert ours.overwrite({"dt": "p1"}, rest).snapshot_ids == [4]
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_kind for i in v.snapshot_ids()] == [
        CommitKind.APPEND, CommitKind.OVERWRITE, CommitKind.APPEND, CommitKind.COMPACT]
    assert v.live_names() == {"fresh", "c1", "other"}


def test_first_overwrite_of_a_user_carrying_only_compaction_still_overwrites(table):
    fio, root = table
    seed(fio, root)
    ours = new_commit(fio, root, user="ours")
    stats = ours.overwrite({"dt": "p1"}, [msg("p2", 1, compact_before=[dfile("data-c", 7, 1, 2)],
                                              compact_after=[dfile("c1", 7, 1, 2, 1)])], 1)
    assert stats.snapshot_ids == [2, 3]
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_kind for i in (2, 3)] == [CommitKind.OVERWRITE, CommitKind.COMPACT]
    assert v.live_names() == {"c1"}  # p1 truncated, p2 compacted


def test_overwrite_publishes_changelog_and_index_files_of_both_parts(table):
    fio, root = table
    seed(fio, root)
    c = new_commit(fio, root, user="ours")
    stats = c.overwrite({"dt": "p1"}, [msg("p1", 0, new_files=[dfile("fresh", 2, 1, 2)],
                                           changelog_files=[dfile("changelog-o", 2)],
                                           new_index_files=[index_file("index-o")],
                                           compact_before=[dfile("fresh", 2, 1, 2)],
                                           compact_after=[dfile("fresh-1", 2, 1, 2, 1)],
                                           compact_changelog=[dfile("changelog-c", 2)],
                                           compact_new_index_files=[index_file("index-c")],
                                           compact_deleted_index_files=[index_file("index-o")])], 2)
    assert stats.snapshot_ids == [2, 3]
    v = TableView(fio, root)
    ml, mf = v.ml(), v.mf()
    imf = IndexManifestFile(fio, TablePaths(root))
    s2, s3 = v.sm.snapshot(2), v.sm.snapshot(3)
    assert [e.file.file_name for e in mf.read_all(ml.read_changelog_manifests(s2))] == ["changelog-o"]
    assert [e.file.file_name for e in mf.read_all(ml.read_changelog_manifests(s3))] == ["changelog-c"]
    assert {e.index_file.file_name for e in imf.read(s2.index_manifest)} == {"index-o"}
    # the COMPACT part replaced the bucket's HASH index
    assert {e.index_file.file_name for e in imf.read(s3.index_manifest)} == {"index-c"}
    v.check()


# ============================================================================ filter_committed


def test_filter_committed_over_several_committables_with_other_users_interleaved(table):
    fio, root = table
    seed(fio, root, user="job")  # job: identifier 1, APPEND
    other = new_commit(FileIO(fio.fs), root, user="other")
    crashing = new_commit(hooked(fio, before_publish=raise_at(1, exc=KeyboardInterrupt)), root, user="job")
    with pytest.raises(KeyboardInterrupt):  # dies between its APPEND and COMPACT snapshots
        crashing.commit(_append_and_compact(3))
    other.commit([msg("p2", 1, new_files=[dfile("other", 1, 50, 50)])], 9)  # the newest snapshot is not job's
    job = new_commit(fio, root, user="job")
    done_long_ago = ManifestCommittable(1, (msg("p1", 0, new_files=[dfile("data-a", 10, 1, 5)]),))
    never = ManifestCommittable(2, (msg("p1", 0, new_files=[dfile("x", 1, 60, 60)]),))
    half = _append_and_compact(3)
    future = ManifestCommittable(4, (msg("p1", 0, new_files=[dfile("y", 1, 61, 61)]),))
    out = job.filter_committed([done_long_ago, never, half, future])
    # identifiers below the user's newest (3) count as committed; 3 keeps only its COMPACT part
    assert [c.identifier for c in out] == [3, 4]
    (m,) = out[0].messages
    assert not m.has_append_part() and m.has_compact_part()
    assert out[1] == future
    assert [s.snapshot_ids for s in map(job.commit, out)] == [[4], [5]]
    assert job.filter_committed([done_long_ago, never, half, future]) == []


# ============================================================================ messages


_APPEND_FIELDS = {"new_files": dfile("f"), "deleted_files": dfile("f"), "changelog_files": dfile("f"),
                  "new_index_files": index_file("i"), "deleted_index_files": index_file("i")}
_COMPACT_FIELDS = {"compact_before": dfile("f"), "compact_after": dfile("f"), "compact_changelog": dfile("f"),
                   "compact_new_index_files": index_file("i"), "compact_deleted_index_files": index_file("i")}


@pytest.mark.parametrize("field", sorted(_APPEND_FIELDS))
def test_each_append_field_makes_an_append_part(field):
    m = msg(**{field: [_APPEND_FIELDS[field]]})
    assert m.has_append_part() and not m.has_compact_part() and not m.is_empty()
    stripped = m.without_append_part()
    assert stripped.is_empty() and getattr(stripped, field) == ()
    assert m.without_compact_part() == m


@pytest.mark.parametrize("field", sorted(_COMPACT_FIELDS))
def test_each_compact_field_makes_a_compact_part(field):
    m = msg(**{field: [_COMPACT_FIELDS[field]]})
    assert m.has_compact_part() and not m.has_append_part() and not m.is_empty()
    stripped = m.without_compact_part()
    assert stripped.is_empty() and getattr(stripped, field) == ()
    assert m.without_append_part() == m


def test_stripping_one_part_keeps_the_other_whole():
    m = msg(**{k: [v] for k, v in {**_APPEND_FIELDS, **_COMPACT_FIELDS}.items()})
    assert m.without_append_part() == msg(**{k: [v] for k, v in _COMPACT_FIELDS.items()})
    assert m.without_compact_part() == msg(**{k: [v] for k, v in _APPEND_FIELDS.items()})
    assert msg().is_empty()


def test_written_files_are_what_the_writer_created_not_upgraded_files():
    m = msg(new_files=[dfile("new")], changelog_files=[dfile("cl")],
            compact_before=[dfile("old"), dfile("moved")],
            compact_after=[dfile("merged", level=1), dfile("moved", level=2)], compact_changelog=[dfile("ccl")])
    assert [f.file_name for f in m.written_files()] == ["new", "cl", "merged", "ccl"]


def test_abort_deletes_exactly_the_written_files_at_their_paths(table):
    fio, root = table
    c = new_commit(fio, root)
    paths = TablePaths(root)
    names = ["new", "cl", "merged", "moved", "keep"]
    for name in names:
        fio.write_bytes(paths.data_file_path("dt=p1", 0, name), b"x")
    external = root + "/elsewhere/ext-file"
    fio.write_bytes(external, b"x")
    ext = dataclasses.replace(dfile("ext-file"), external_path=external)
    m = msg("p1", 0, new_files=[dfile("new"), ext], changelog_files=[dfile("cl")],
            compact_before=[dfile("moved")], compact_after=[dfile("merged", level=1), dfile("moved", level=2)])
    assert c.data_file_path(part("p1"), 0, dfile("new")) == paths.data_file_path("dt=p1", 0, "new")
    assert c.data_file_path(part("p1"), 0, ext) == external
    c.abort([m])
    remaining = {n for n in names if fio.exists(paths.data_file_path("dt=p1", 0, n))}
    assert remaining == {"moved", "keep"}
    assert not fio.exists(external)


# ============================================================================ errors name the partition


def test_conflicts_describe_the_partition_by_its_values(table):
    fio, root = table
    seed(fio, root)
    c = new_commit(fio, root, user="ours")
    assert c.describe_partition(part("p1")) == "{dt='p1'}"
    assert c.describe_partition(b"\x01") == "01"  # not a row of the partition type: shown as hex
    with pytest.raises(BucketCountChangedError, match=r"partition \{dt='p1'\} changed from 2"):
        c.commit([msg("p1", 0, total_buckets=4, new_files=[dfile("n", 1)])], 2)


def test_conflicts_of_an_unpartitioned_table_say_so(table):
    fio, root = table
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)), DataField(1, "v", STRING())),
                         primary_keys=("id",), options={"bucket": "2"})
    empty = encode_row([], [])
    c = new_commit(fio, root, schema)
    c.commit([CommitMessage(empty, 0, 2, new_files=[dfile("a", 1)])], 1)
    assert c.describe_partition(empty) == "<unpartitioned>"
    with pytest.raises(BucketCountChangedError, match="partition <unpartitioned> changed from 2"):
        c.commit([CommitMessage(empty, 0, 3, new_files=[dfile("b", 1)])], 2)


def test_two_key_partitions_are_described_key_by_key(table):
    fio, root = table
    schema = TableSchema(0, (DataField(0, "dt", STRING(False)), DataField(1, "hr", INT(False)),
                             DataField(2, "id", BIGINT(False))),
                         partition_keys=("dt", "hr"), primary_keys=("dt", "hr", "id"), options={"bucket": "1"})
    c = new_commit(fio, root, schema)
    assert c.describe_partition(encode_row(["d1", 7], [STRING(False), INT(False)])) == "{dt='d1', hr=7}"


def test_overwrite_errors_name_the_bad_keys_and_the_stray_files(table):
    fio, root = table
    seed(fio, root)
    c = new_commit(fio, root)
    with pytest.raises(OverwritePartitionError, match=r"no partition keys \['hr'\].*partition keys: \['dt'\]"):
        c.overwrite({"hr": "1"}, [msg("p1", 0, new_files=[dfile("n", 1)])], 2)
    with pytest.raises(OverwritePartitionError, match="other partitions: s1, s2$"):
        c.overwrite({"dt": "p1"}, [msg("p2", 0, new_files=[dfile("s1", 1), dfile("s2", 1)])], 2)
    assert TableView(fio, root).snapshot_ids() == [1]


# ============================================================================ live files, live entries


def test_live_entries_of_a_snapshot(table):
    fio, root = table
    c = seed(fio, root)
    assert c.read_live_entries(None) == []
    live = c.read_live_entries(c.snapshot_manager.latest_snapshot())
    assert sorted(e.file.file_name for e in live) == ["data-a", "data-b", "data-c"]
    assert all(e.kind is FileKind.ADD for e in live)


def test_live_files_of_plain_entries():
    a = ManifestEntry(FileKind.ADD, part("p1"), 0, 2, dfile("a", lo=1, hi=5, level=1))
    b = ManifestEntry(FileKind.ADD, part("p1"), 0, 2, dfile("b", lo=6, hi=9, level=1))
    live = LiveFiles.of([a, b])
    assert live.snapshot_id is None and len(live) == 2 and a.identity in live
    assert live.bucket_counts(part("p1")) == {2: {a.identity, b.identity}}
    assert not live.bucket_counts(part("p9"))
    assert live.group(part("p1"), 0, 1) == {a.identity, b.identity}
    # check_conflicts takes plain entries as well
    fold = check_conflicts([a, b], [b.with_kind(FileKind.DELETE)], CommitKind.COMPACT, None)
    assert fold.removed == {b.identity} and not fold.added


# ============================================================================ recorded list sizes


def _drop_last_list_entry(fio, paths, list_name):
    """Rewrite a manifest list as a valid list that lost its last entry (cut at a block boundary)."""
    ml = ManifestList(fio, paths)
    metas = ml.read(list_name)
    assert metas, f"{list_name} is empty: nothing to drop"
    fio.delete_quietly([paths.manifest_path(list_name)])
    ml.write(metas[:-1], name=list_name)


def _drop_last_manifest_entry(fio, paths, meta):
    """Rewrite the manifest ``meta`` names as a valid manifest that lost its last entry; returns
    the meta of what is on storage now."""
    mf = ManifestFile(fio, paths, [STRING(False)], cache_max_entries=0)
    entries = mf.read(meta.file_name)
    (short,) = mf.write(entries[:-1])
    fio.delete_quietly([paths.manifest_path(meta.file_name)])
    fio.fs.mv(paths.manifest_path(short.file_name), paths.manifest_path(meta.file_name))
    return dataclasses.replace(short, file_name=meta.file_name)


def test_delta_and_changelog_lists_are_checked_against_their_recorded_sizes(table):
    fio, root = table
    c = new_commit(fio, root)
    c.commit([msg("p1", 0, new_files=[dfile("a", 1, 1, 1)], changelog_files=[dfile("cl-a", 1)]),
              msg("p2", 0, new_files=[dfile("b", 1, 2, 2)], changelog_files=[dfile("cl-b", 1)])], 1)
    c2 = new_commit(fio, root, manifest_file=ManifestFile(fio, TablePaths(root), [STRING(False)],
                                                          target_file_size_bytes=1))
    c2.commit([msg("p1", 0, new_files=[dfile("c", 1, 3, 3)], changelog_files=[dfile("cl-c", 1)]),
               msg("p2", 0, new_files=[dfile("d", 1, 4, 4)], changelog_files=[dfile("cl-d", 1)])], 2)
    paths = TablePaths(root)
    ml = ManifestList(fio, paths)
    snap = c.snapshot_manager.snapshot(2)
    delta, changelog = ml.read_delta_manifests(snap), ml.read_changelog_manifests(snap)
    assert len(delta) == 2 and len(changelog) == 2  # one-byte target: one manifest per entry
    assert ml.read_changelog_manifests(c.snapshot_manager.snapshot(1)) != []
    _drop_last_list_entry(fio, paths, snap.delta_manifest_list)
    _drop_last_list_entry(fio, paths, snap.changelog_manifest_list)
    ml = ManifestList(fio, paths)  # a new reader: the first one keeps what it read by name
    with pytest.raises(CorruptMetadataError, match=snap.delta_manifest_list):
        ml.read_delta_manifests(snap)
    with pytest.raises(CorruptMetadataError, match=snap.changelog_manifest_list):
        ml.read_changelog_manifests(snap)


def test_a_snapshot_without_changelog_has_no_changelog_manifests(table):
    fio, root = table
    c = seed(fio, root)
    assert ManifestList(fio, TablePaths(root)).read_changelog_manifests(c.snapshot_manager.latest_snapshot()) == []


# ============================================================================ index manifests


def _index(kind, name, bucket=0, index_type="HASH"):
    return IndexManifestEntry(kind, part("p1"), bucket, dataclasses.replace(index_file(name), index_type=index_type))


def test_fold_index_entries():
    # a type with many files per bucket: added and removed by file name
    g = "GLOBAL"
    previous = [_index(FileKind.ADD, "i1", 0, g), _index(FileKind.ADD, "i2", 0, g), _index(FileKind.DELETE, "gone", 0, g)]
    folded = fold_index_entries(previous, [_index(FileKind.DELETE, "i1", 0, g), _index(FileKind.ADD, "i3", 0, g),
                                           _index(FileKind.DELETE, "never-added", 0, g),
                                           _index(FileKind.ADD, "i2", 1, g)])
    assert [(e.index_file.file_name, e.bucket) for e in folded] == [("i2", 0), ("i3", 0), ("i2", 1)]
    assert all(e.kind is FileKind.ADD for e in folded)


def test_fold_index_entries_replaces_a_buckets_hash_index():
    # HASH: one file per (partition, bucket); an ADD replaces it with or without the DELETE
    # (Java and pypaimon send only the ADD; this library sends both)
    previous = [_index(FileKind.ADD, "h0"), _index(FileKind.ADD, "h1", 1), _index(FileKind.ADD, "g", 0, "GLOBAL")]
    java_style = fold_index_entries(previous, [_index(FileKind.ADD, "h0b")])
    ours = fold_index_entries(previous, [_index(FileKind.DELETE, "h0"), _index(FileKind.ADD, "h0b")])
    for folded in (java_style, ours):
        assert sorted((e.index_file.file_name, e.bucket) for e in folded) == [("g", 0), ("h0b", 0), ("h1", 1)]


def test_index_manifest_written_by_java_record_names_is_read(table):
    fio, root = table
    paths = TablePaths(root)
    schema = {**avro.INDEX_MANIFEST_ENTRY_SCHEMA, "name": "org.apache.paimon.avro.generated.record"}
    fio.write_bytes(paths.manifest_path("index-manifest-java"),
                    avro.write_avro(schema, [_index(FileKind.ADD, "i1").to_avro()]))
    (e,) = IndexManifestFile(fio, paths).read("index-manifest-java")
    assert e == _index(FileKind.ADD, "i1")


def test_a_file_that_is_no_index_manifest_is_refused_by_name(table):
    fio, root = table
    c = seed(fio, root)
    snap = c.snapshot_manager.latest_snapshot()
    with pytest.raises(CorruptMetadataError, match=rf"{snap.delta_manifest_list}.*IndexManifestEntry.*_INDEX_TYPE"):
        IndexManifestFile(fio, TablePaths(root)).read(snap.delta_manifest_list)
    # a record with the right name whose fields are wrong also names the file
    paths = TablePaths(root)
    bad = {"type": "record", "name": "IndexManifestEntry", "fields": [{"name": "_KIND", "type": "string"}]}
    fio.write_bytes(paths.manifest_path("index-manifest-bad"), avro.write_avro(bad, [{"_KIND": "ADD"}]))
    with pytest.raises(CorruptMetadataError, match="index-manifest-bad"):
        IndexManifestFile(fio, paths).read("index-manifest-bad")


# ============================================================================ pruning of the full merge


class CountingManifestFile(ManifestFile):
    def __init__(self, *a, **kw):
        super().__init__(*a, cache_max_entries=0, **kw)
        self.reads: list[str] = []

    def read(self, file_name, *a, **kw):
        self.reads.append(file_name)
        return super().read(file_name, *a, **kw)


PT2 = [STRING(), INT()]


def _entry(kind, values, name, level=0):
    return ManifestEntry(kind, encode_row(values, PT2), 0, 1, dfile(name, level=level))


_BASE_MANIFESTS = {
    "m-p1x": [(["p1", 5], "f-p1x")],
    "m-p2": [(["p2", 1], "f-p2"), (["p2", 3], "f-p2b")],
    "m-null3": [([None, 3], "f-null3")],
    "m-p3": [(["p3", 1], "f-p3")],
    "m-null": [([None, 2], "f-null")],
    "m-p1": [(["p1", 1], "f-p1"), (["p1", None], "f-p1n")],
}


@pytest.mark.parametrize("victim_manifest, victim", [
    ("m-p3", "f-p3"),
    ("m-null", "f-null"),  # dt null: only manifests counting nulls of dt, with hr = 2 in range
    ("m-p1", "f-p1n"),  # hr null: m-p1x has dt = p1 but no null hr
])
def test_full_merge_reads_only_base_manifests_that_can_hold_a_deleted_file(table, victim_manifest, victim):
    """The manifests before the first one that can hold a deleted file are kept unread
    (later ones are rewritten anyway), so the victim's manifest goes last."""
    fio, root = table
    paths = TablePaths(root)
    mf = CountingManifestFile(fio, paths, PT2, target_file_size_bytes=10**9)

    def manifest(name, entries):
        (meta,) = mf.write(entries)
        fio.fs.mv(paths.manifest_path(meta.file_name), paths.manifest_path(name))
        return dataclasses.replace(meta, file_name=name)

    order = [n for n in _BASE_MANIFESTS if n != victim_manifest] + [victim_manifest]
    base = [manifest(n, [_entry(FileKind.ADD, values, f) for values, f in _BASE_MANIFESTS[n]]) for n in order]
    (victim_values,) = [values for values, f in _BASE_MANIFESTS[victim_manifest] if f == victim]
    delta = manifest("m-delta", [_entry(FileKind.DELETE, victim_values, victim),
                                 _entry(FileKind.ADD, victim_values, victim + "-new")])
    merger = ManifestFileMerger(mf, MergeOptions(target_file_size_bytes=1, full_compaction_threshold_bytes=1,
                                                 merge_min_count=1))
    mf.reads.clear()
    result = merger.merge([*base, delta])
    assert result.kind is ManifestMergeKind.FULL
    assert [r for r in mf.reads if r != "m-delta"] == [victim_manifest]
    live = {e.file.file_name for e in mf.read_all(result.manifests)}
    everything = {f for entries in _BASE_MANIFESTS.values() for _, f in entries}
    assert live == (everything - {victim}) | {victim + "-new"}


# ============================================================================ the optimistic path


def test_conflicts_are_checked_once_per_part_unless_someone_commits_in_between(table, monkeypatch):
    """Seed 003: the check made before writing the metadata is not repeated when the latest
    snapshot is still the one checked (the COMPACT part is checked against the APPEND
    snapshot it follows); a lost race re-checks against the winner."""
    fio, root = table
    seed(fio, root)
    calls = []

    def counting(*args, **kw):
        if kw["describe_partition"].__self__.commit_user != "competitor":
            calls.append(args[2])
        return check_conflicts(*args, **kw)

    monkeypatch.setattr(fsc, "check_conflicts", counting)
    quiet = new_commit(fio, root, user="quiet")
    assert quiet.commit(_append_and_compact(2)).snapshot_ids == [2, 3]
    assert calls == [CommitKind.APPEND, CommitKind.COMPACT], calls

    calls.clear()
    comp = new_commit(FileIO(fio.fs), root, user="competitor")

    def twice(path, n):
        if n < 2:
            comp.commit([msg("p2", 1, new_files=[dfile(f"comp-{n}", 1, 60 + n, 60 + n)])], 10 + n)

    racing = new_commit(hooked(fio, before_publish=twice), root, user="racing")
    stats = racing.commit([msg("p1", 0, new_files=[dfile("r", 1, 70, 70)])], 1)
    assert stats.snapshot_ids == [6] and stats.lost_races == 2 and stats.attempts == 3
    assert calls == [CommitKind.APPEND] * 3
    TableView(fio, root).check()  # each lost attempt removed what it wrote


# ============================================================================ truncated metadata on the commit path


@pytest.mark.parametrize("which", ["base list", "delta list", "manifest"])
def test_commit_refuses_a_table_whose_metadata_lost_entries(table, which):
    """A list or manifest cut at an Avro block boundary still parses; the sizes and counts the
    referencing file records are what reveals it. A commit must not read it as fewer live files."""
    fio, root = table
    paths = TablePaths(root)
    c = new_commit(fio, root)
    c.commit([msg("p1", 0, new_files=[dfile("a", 1, 1, 1), dfile("b", 1, 2, 2)])], 1)
    c.commit([msg("p1", 0, new_files=[dfile("c", 1, 3, 3)])], 2)
    snap = c.snapshot_manager.latest_snapshot()
    if which == "manifest":
        (meta,) = [m for m in ManifestList(fio, paths).read_data_manifests(snap) if m.num_added_files == 2]
        assert _drop_last_manifest_entry(fio, paths, meta).file_size != meta.file_size
    else:
        _drop_last_list_entry(fio, paths, snap.base_manifest_list if which == "base list" else snap.delta_manifest_list)
    fresh = new_commit(fio, root, user="fresh")
    with pytest.raises(CorruptMetadataError):
        fresh.commit([msg("p1", 0, new_files=[dfile("d", 1, 4, 4)])], 1)
    assert c.snapshot_manager.latest_snapshot().id == 2


# ============================================================================ the live-file index


def test_live_file_index_keeps_what_remains_of_a_partition_and_a_level():
    a, b, c = (ManifestEntry(FileKind.ADD, part("p1"), 0, 2, dfile(n, lo=lo, hi=lo + 1, level=1))
               for n, lo in (("a", 0), ("b", 10), ("c", 20)))
    unaware = ManifestEntry(FileKind.ADD, part("p1"), 0, -1, dfile("u"))
    live = LiveFiles(1, "list-1", [a, b, c, unaware])
    assert (live.snapshot_id, live.snapshot_tag, len(live)) == (1, "list-1", 4)
    assert live.bucket_counts(part("p1")) == {2: {a.identity, b.identity, c.identity}}  # -1: no fixed count
    live.advance(2, "list-2", [a.with_kind(FileKind.DELETE), unaware.with_kind(FileKind.DELETE)])
    assert (live.snapshot_id, live.snapshot_tag, len(live)) == (2, "list-2", 2)
    assert live.bucket_counts(part("p1")) == {2: {b.identity, c.identity}}
    assert live.group(part("p1"), 0, 1) == {b.identity, c.identity}
    live.advance(3, "list-3", [b.with_kind(FileKind.DELETE), c.with_kind(FileKind.DELETE)])
    assert len(live) == 0 and not live.bucket_counts(part("p1")) and not live.group(part("p1"), 0, 1)


def test_bucket_count_and_key_ranges_still_checked_after_a_compaction_shrank_the_partition(table):
    fio, root = table
    c = seed(fio, root)  # p1: data-a [1..5], data-b [3..9], both of 2 buckets
    c.commit([msg("p1", 0, compact_before=[dfile("data-a", 10, 1, 5)], compact_after=[dfile("a1", 10, 1, 5, 1)])], 2)
    with pytest.raises(BucketCountChangedError):
        c.commit([msg("p1", 0, total_buckets=4, new_files=[dfile("n", 1)])], 3)
    with pytest.raises(KeyRangeOverlapError):
        c.commit([msg("p1", 0, compact_before=[dfile("data-b", 5, 3, 9)],
                      compact_after=[dfile("b1", 5, 3, 9, 1)])], 3)


def test_another_batch_commit_after_an_unrepeated_unknown_outcome_is_not_skipped(table):
    """Batch commits share one identifier: the record of a failed call must not make a later,
    different batch commit look like its repeat (its APPEND part would be silently dropped)."""
    fio, root = table
    seed(fio, root, user="job")
    ours = new_commit(hooked(fio, before_publish=raise_at(1)), root, user="job", options=CommitOptions(max_retries=0))
    with pytest.raises(CommitOutcomeUnknownError) as ei:
        ours.commit(_append_and_compact(BATCH_COMMIT_IDENTIFIER))
    assert ei.value.published_snapshot_ids == [2]
    # the job gives up on that compaction and writes another batch
    other_batch = [msg("p2", 1, new_files=[dfile("next-batch", 1, 30, 30)])]
    assert ours.commit(other_batch).snapshot_ids == [3]
    v = TableView(fio, root)
    assert "next-batch" in v.live_names()
    assert v.referenced() <= v.manifest_dir()


# ============================================================================ the cached live-file index


def _roll_back_to(fio, root, snapshot_id):
    """What a rollback does to the snapshot directory: newer snapshot files go, LATEST moves."""
    from impl.fs.paths import LATEST_HINT
    from impl.snapshot.manager import SnapshotManager

    sm = SnapshotManager(fio, TablePaths(root))
    for sid in sm.snapshot_ids():
        if sid > snapshot_id:
            fio.delete_quietly([sm.snapshot_path(sid)])
    sm.commit_hint(LATEST_HINT, snapshot_id)


def test_cached_index_is_not_reused_for_a_different_snapshot_with_the_same_id(table):
    fio, root = table
    seed(fio, root)
    ours = new_commit(fio, root, user="ours")
    ours.commit([msg("p1", 0, new_files=[dfile("mine", 1, 20, 20)])], 2)  # ours knows snapshot 2
    _roll_back_to(fio, root, 1)
    new_commit(fio, root, user="other").commit([msg("p1", 0, new_files=[dfile("theirs", 1, 30, 30)])], 1)
    # snapshot 2 is now another one: "mine" is gone, "theirs" is live
    with pytest.raises(FileNotLiveError, match="mine"):
        ours.commit([msg("p1", 0, compact_before=[dfile("mine", 1, 20, 20)],
                         compact_after=[dfile("mine-1", 1, 20, 20, 1)])], 3)
    with pytest.raises(FileAlreadyLiveError, match="theirs"):
        ours.commit([msg("p1", 0, new_files=[dfile("theirs", 1, 30, 30)])], 3)
    # and across a newer id: a rollback to 1, two new snapshots, then our next commit
    _roll_back_to(fio, root, 1)
    other = new_commit(fio, root, user="other2")
    other.commit([msg("p1", 0, new_files=[dfile("x", 1, 40, 40)])], 1)
    other.commit([msg("p1", 0, new_files=[dfile("y", 1, 41, 41)])], 2)
    with pytest.raises(FileNotLiveError, match="theirs"):
        ours.commit([msg("p1", 0, deleted_files=[dfile("theirs", 1, 30, 30)])], 4)
    assert ours.commit([msg("p1", 0, deleted_files=[dfile("x", 1, 40, 40)])], 4).snapshot_ids == [4]
    assert TableView(fio, root).live_names() == {"data-a", "data-b", "data-c", "y"}


def test_cached_index_survives_expired_snapshots_in_between(table):
    from impl.snapshot.expire import ExpireConfig, SnapshotExpiration

    fio, root = table
    seed(fio, root)
    ours = new_commit(fio, root, user="ours")
    ours.commit([msg("p1", 0, new_files=[dfile("mine", 1, 20, 20)])], 2)  # ours knows snapshot 2
    other = new_commit(fio, root, user="other")
    for i in range(3):
        other.commit([msg("p2", 1, new_files=[dfile(f"o{i}", 1, 30 + i, 30 + i)])], i + 1)
    expiration = SnapshotExpiration(fio, TablePaths(root), ManifestFile(fio, TablePaths(root), [STRING(False)]),
                                    ours.partition_path)
    expiration.expire(ExpireConfig(retain_min=1, retain_max=1, older_than_millis=2**62, max_deletes=100))
    assert TableView(fio, root).snapshot_ids() == [5]
    with pytest.raises(FileAlreadyLiveError, match="o1"):
        ours.commit([msg("p2", 1, new_files=[dfile("o1", 1, 31, 31)])], 3)
    assert ours.commit([msg("p2", 1, deleted_files=[dfile("o2", 1, 32, 32)])], 3).snapshot_ids == [6]


# ============================================================================ snapshot fields


def test_watermark_only_moves_forward_and_properties_are_recorded(table):
    fio, root = table
    c = new_commit(fio, root)
    sm = c.snapshot_manager

    def commit(i, watermark=None, properties=None):
        committable = ManifestCommittable(i, (msg("p1", 0, new_files=[dfile(f"f{i}", 1, i, i)]),),
                                          watermark=watermark, properties=properties or {})
        (sid,) = c.commit(committable).snapshot_ids
        return sm.snapshot(sid)

    assert commit(1).watermark is None
    assert commit(2, watermark=100).watermark == 100
    assert commit(3).watermark == 100
    assert commit(4, watermark=50).watermark == 100
    assert commit(5, watermark=200).watermark == 200
    assert commit(6, properties={"job": "nightly"}).properties == {"job": "nightly"}
    assert commit(7).properties is None


def test_total_record_count_is_recomputed_when_the_latest_snapshot_lacks_it(table):
    """Snapshots of old writers may omit totalRecordCount: the next one counts the live rows."""
    import dataclasses as dc

    fio, root = table
    c = seed(fio, root)  # 22 rows
    sm = c.snapshot_manager
    old = dc.replace(sm.snapshot(1), total_record_count=None)
    fio.delete_quietly([sm.snapshot_path(1)])
    fio.write_bytes(sm.snapshot_path(1), old.to_json_bytes())
    fresh = new_commit(fio, root, user="fresh")
    (sid,) = fresh.commit([msg("p1", 0, new_files=[dfile("n", 4, 20, 20)])], 1).snapshot_ids
    assert sm.snapshot(sid).total_record_count == 26


# ============================================================================ conflict rules in detail


def test_every_file_that_is_not_live_is_named(table):
    fio, root = table
    seed(fio, root)
    with pytest.raises(FileNotLiveError, match="ghost-1, ghost-2") as ei:
        new_commit(fio, root).commit([msg("p1", 0, deleted_files=[dfile("ghost-1"), dfile("ghost-2")])], 2)
    assert ei.value.files == ("ghost-1", "ghost-2")


def test_a_single_bucket_partition_cannot_become_two_buckets(table):
    fio, root = table
    c = new_commit(fio, root)
    c.commit([msg("p1", 0, total_buckets=1, new_files=[dfile("one", 1)])], 1)
    with pytest.raises(BucketCountChangedError, match="from 1"):
        c.commit([msg("p1", 1, total_buckets=2, new_files=[dfile("two", 1)])], 2)


def test_bucket_counts_checked_past_entries_without_a_fixed_count(table):
    fio, root = table
    c = seed(fio, root)
    with pytest.raises(BucketCountChangedError, match=r"\{dt='p1'\} changed from 2"):
        c.commit([msg("p9", 0, total_buckets=-1, new_files=[dfile("unaware", 1)]),
                  msg("p1", 0, total_buckets=3, new_files=[dfile("three", 1)])], 2)


def test_a_partition_already_holding_two_bucket_counts_is_reported():
    """Only a foreign writer can leave this state; any further change to the partition names it."""
    two = ManifestEntry(FileKind.ADD, part("p1"), 0, 2, dfile("of-two"))
    four = ManifestEntry(FileKind.ADD, part("p1"), 0, 4, dfile("of-four"))
    change = ManifestEntry(FileKind.ADD, part("p1"), 1, 2, dfile("new"))
    with pytest.raises(BucketCountChangedError, match=r"partition P1 changed from 2 \(file of-two\) to 4 "
                                                      r"\(file of-four\)") as ei:
        check_conflicts([two, four], [change], CommitKind.APPEND, None, describe_partition=lambda p: "P1")
    assert ei.value.files == ("of-two", "of-four")


def test_overwrite_checks_key_ranges_of_its_new_files_and_names_the_partition(table):
    fio, root = table
    seed(fio, root)
    with pytest.raises(KeyRangeOverlapError, match=r"overlap in partition \{dt='p1'\}, bucket 0, level 1"):
        new_commit(fio, root).overwrite({"dt": "p1"}, [msg("p1", 0, new_files=[dfile("x", 1, 1, 5, 1),
                                                                                dfile("y", 1, 5, 9, 1)])], 2)


def test_conflict_found_on_the_recheck_after_a_lost_race_names_the_partition(table):
    fio, root = table
    seed(fio, root)
    comp = new_commit(FileIO(fio.fs), root, user="competitor")

    def before(path, n):
        if n == 0:
            comp.commit([msg("p1", 0, new_files=[dfile("theirs", 1, 20, 25, 1)])], 1)

    ours = new_commit(hooked(fio, before_publish=before), root, user="ours")
    with pytest.raises(KeyRangeOverlapError, match=r"\{dt='p1'\}"):
        ours.commit([msg("p1", 0, new_files=[dfile("mine", 1, 22, 30, 1)])], 1)
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_user for i in v.snapshot_ids()] == ["seed", "competitor"]
    v.check()  # the losing attempt's manifests are gone


# ============================================================================ manifest metadata


_MANIFEST_NAME = r"manifest-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+"
_CHANGELOG_MANIFEST_NAME = _MANIFEST_NAME[:-4] + r"-changelog-\d+"


def test_manifest_file_meta_summarises_its_entries(table):
    import re

    fio, root = table
    mf = ManifestFile(fio, TablePaths(root), [STRING()], schema_id=3)
    entries = [ManifestEntry(FileKind.ADD, encode_row([dt], [STRING()]), b, 4, dfile(f"f{i}", level=lvl))
               for i, (dt, b, lvl) in enumerate([("p2", 3, 0), ("p1", 1, 2), (None, 2, 1), (None, 0, 0)])]
    entries.append(entries[0].with_kind(FileKind.DELETE))
    (meta,) = mf.write(entries)
    assert re.fullmatch(_MANIFEST_NAME, meta.file_name), meta.file_name
    assert (meta.num_added_files, meta.num_deleted_files, meta.schema_id) == (4, 1, 3)
    assert (meta.min_bucket, meta.max_bucket, meta.min_level, meta.max_level) == (0, 3, 0, 2)
    assert meta.total_buckets == 4
    stats = meta.partition_stats
    assert (stats.min_values, stats.max_values) == (encode_row(["p1"], [STRING()]), encode_row(["p2"], [STRING()]))
    assert stats.null_counts[0] > 0
    from impl.manifest.manifest_file import compute_partition_stats
    two = [STRING(), INT()]
    rows = [encode_row(v, two) for v in (["x", 1], [None, 1], [None, 2], ["y", None])]
    s2 = compute_partition_stats(rows, two)
    assert s2.null_counts == (2, 1)
    assert (s2.min_values, s2.max_values) == (encode_row(["x", 1], two), encode_row(["y", 2], two))
    (mixed,) = mf.write([entries[0], ManifestEntry(FileKind.ADD, entries[1].partition, 0, 2, dfile("g"))])
    assert mixed.total_buckets is None  # bucket counts differ within the manifest
    (unaware,) = mf.write([ManifestEntry(FileKind.ADD, entries[1].partition, 0, -1, dfile("h"))])
    assert unaware.total_buckets is None


def test_unpartitioned_manifests_carry_empty_partition_stats_as_pypaimon_writes_them(table):
    fio, root = table
    mf = ManifestFile(fio, TablePaths(root), [])
    (meta,) = mf.write([ManifestEntry(FileKind.ADD, encode_row([], []), 0, -1, dfile("f"))])
    assert meta.partition_stats.null_counts == ()
    assert meta.to_avro()["_PARTITION_STATS"]["_NULL_COUNTS"] == []  # as in the pypaimon 2.1.0 dump


def test_rolled_manifests_keep_their_names(table):
    import re

    fio, root = table
    mf = ManifestFile(fio, TablePaths(root), [STRING()], target_file_size_bytes=1)
    entries = [ManifestEntry(FileKind.ADD, part("p1"), 0, 2, dfile(f"f{i}")) for i in range(3)]
    data, changelog = mf.write(entries), mf.write(entries, name_suffix="changelog")
    assert len(data) == len(changelog) == 3
    assert all(re.fullmatch(_MANIFEST_NAME, m.file_name) for m in data), [m.file_name for m in data]
    assert all(re.fullmatch(_CHANGELOG_MANIFEST_NAME, m.file_name) for m in changelog), [m.file_name for m in changelog]


def test_commit_writes_manifests_with_the_table_partition_type_and_schema_id(table):
    fio, root = table
    schema = TableSchema(7, PK_SCHEMA.fields, partition_keys=("dt",), primary_keys=("dt", "id"),
                         options={"bucket": "2"})
    c = fsc.FileStoreCommit(fio, root, schema, sleep=lambda s: None)
    c.commit([msg("p1", 0, new_files=[dfile("a")]), msg("p2", 1, new_files=[dfile("b")])], 1)
    (meta,) = ManifestList(fio, TablePaths(root)).read_delta_manifests(c.snapshot_manager.latest_snapshot())
    assert meta.schema_id == 7
    assert (meta.partition_stats.min_values, meta.partition_stats.max_values) == (part("p1"), part("p2"))
    assert c.commit_user and c.commit_user != fsc.FileStoreCommit(fio, root, schema).commit_user  # one per committer


def test_refusal_without_atomic_create_names_table_and_file_system(table):
    from impl.errors import UnsupportedFileSystemError

    fio, root = table

    class NoAtomicCreate(FileIO):
        def supports_atomic_create(self):
            return False

    c = new_commit(NoAtomicCreate(fio.fs), root)
    with pytest.raises(UnsupportedFileSystemError, match=rf"{root}: file system MemoryFileSystem has no atomic "
                                                          "create-if-absent"):
        c.commit([msg(new_files=[dfile("a")])], 1)


def test_messages_and_committables_hold_tuples():
    m = CommitMessage(part("p1"), 0, 2, new_files=[dfile("a")], compact_deleted_index_files=[index_file("i")])
    assert isinstance(m.new_files, tuple) and isinstance(m.compact_deleted_index_files, tuple)
    c = ManifestCommittable(1, [m])
    assert c.messages == (m,) and hash(c.messages)


def test_collected_index_changes_keep_their_kinds():
    from impl.commit.messages import collect_changes

    c = collect_changes([msg(new_index_files=[index_file("a")], deleted_index_files=[index_file("b")],
                             compact_new_index_files=[index_file("c")],
                             compact_deleted_index_files=[index_file("d")])])
    assert [(e.kind, e.index_file.file_name) for e in c.append_index] == [(FileKind.ADD, "a"), (FileKind.DELETE, "b")]
    assert [(e.kind, e.index_file.file_name) for e in c.compact_index] == [(FileKind.ADD, "c"), (FileKind.DELETE, "d")]


# ============================================================================ merge thresholds


def _small_manifests(fio, root, n):
    mf = ManifestFile(fio, TablePaths(root), [STRING(False)])
    return mf, [mf.write([ManifestEntry(FileKind.ADD, part("p1"), 0, 2, dfile(f"f{i}"))])[0] for i in range(n)]


def test_minor_merge_fires_when_the_gathered_size_reaches_the_target_exactly(table):
    fio, root = table
    mf, metas = _small_manifests(fio, root, 2)
    exact = metas[0].file_size + metas[1].file_size
    huge = 10**12
    reached = ManifestFileMerger(mf, MergeOptions(exact, huge, 100)).merge(metas)
    assert reached.kind is ManifestMergeKind.MINOR and len(reached.manifests) == 1
    short = ManifestFileMerger(mf, MergeOptions(exact + 1, huge, 100)).merge(metas)
    assert short.kind is ManifestMergeKind.NONE and short.manifests == metas


def test_full_merge_fires_when_the_delta_reaches_the_threshold_exactly(table):
    fio, root = table
    mf, metas = _small_manifests(fio, root, 3)
    total = sum(m.file_size for m in metas)
    assert ManifestFileMerger(mf, MergeOptions(10**12, total, 100)).merge(metas).kind is ManifestMergeKind.FULL
    assert ManifestFileMerger(mf, MergeOptions(10**12, total + 1, 100)).merge(metas).kind is ManifestMergeKind.NONE


def test_full_merge_refuses_a_truncated_base_manifest(table):
    fio, root = table
    paths = TablePaths(root)
    mf = ManifestFile(fio, paths, [STRING(False)])
    a, b = (ManifestEntry(FileKind.ADD, part("p1"), 0, 2, dfile(n)) for n in "ab")
    (base,) = mf.write([a, b])
    _drop_last_manifest_entry(fio, paths, base)
    (delta,) = mf.write([b.with_kind(FileKind.DELETE)])
    fresh = ManifestFile(fio, paths, [STRING(False)])  # no cached entries
    with pytest.raises(CorruptMetadataError, match=base.file_name):
        ManifestFileMerger(fresh, MergeOptions(1, 1, 1)).merge([base, delta])


def test_repeat_after_unknown_append_outcome_skips_all_of_the_append_part(table):
    """The APPEND part carries changelog and index files too: none of it is published twice."""
    fio, root = table
    seed(fio, root)
    ours = new_commit(hooked(fio, after_publish=raise_at(0)), root, user="ours", options=CommitOptions(max_retries=0))
    committable = ManifestCommittable(2, (msg("p1", 0, new_files=[dfile("n", 3, 20, 22)],
                                              changelog_files=[dfile("cl", 3)], new_index_files=[index_file("ix")],
                                              compact_before=[dfile("data-a", 10, 1, 5)],
                                              compact_after=[dfile("a1", 10, 1, 5, 1)]),))
    with pytest.raises(CommitOutcomeUnknownError):
        ours.commit(committable)
    assert ours.commit(committable).snapshot_ids == [2, 3]
    v = TableView(fio, root)
    assert [v.sm.snapshot(i).commit_kind for i in v.snapshot_ids()] == [
        CommitKind.APPEND, CommitKind.APPEND, CommitKind.COMPACT]
    assert v.live_names() == {"a1", "data-b", "data-c", "n"}
    v.check()


def test_manifest_list_reader_accepts_java_record_names_and_refuses_other_files(table):
    fio, root = table
    paths = TablePaths(root)
    c = seed(fio, root)
    snap = c.snapshot_manager.latest_snapshot()
    ml = ManifestList(fio, paths)
    metas = ml.read(snap.delta_manifest_list)
    java = {**avro.MANIFEST_FILE_META_SCHEMA, "name": "org.apache.paimon.avro.generated.record"}
    fio.write_bytes(paths.manifest_path("manifest-list-java"), avro.write_avro(java, [m.to_avro() for m in metas]))
    assert ml.read("manifest-list-java") == metas
    (manifest,) = metas
    with pytest.raises(CorruptMetadataError, match=rf"{manifest.file_name}.*ManifestFileMeta.*_FILE_SIZE"):
        ml.read(manifest.file_name)  # a manifest, not a manifest list
    bad = {"type": "record", "name": "ManifestFileMeta", "fields": [{"name": "_FILE_NAME", "type": "int"}]}
    fio.write_bytes(paths.manifest_path("manifest-list-bad"), avro.write_avro(bad, [{"_FILE_NAME": 1}]))
    with pytest.raises(CorruptMetadataError, match="manifest-list-bad"):
        ml.read("manifest-list-bad")


def test_reading_many_manifests_checks_each_against_its_meta(table):
    fio, root = table
    paths = TablePaths(root)
    mf = ManifestFile(fio, paths, [STRING(False)])
    a, b = (ManifestEntry(FileKind.ADD, part("p1"), 0, 2, dfile(n)) for n in "ab")
    (m1,) = mf.write([a, b])
    short = _drop_last_manifest_entry(fio, paths, m1)
    fresh = ManifestFile(fio, paths, [STRING(False)])
    with pytest.raises(CorruptMetadataError, match=m1.file_name):
        fresh.read_all([m1])
    same_size = dataclasses.replace(m1, file_size=short.file_size)  # size matches, the count does not
    with pytest.raises(CorruptMetadataError, match="holds 1 entries"):
        ManifestFile(fio, paths, [STRING(False)]).read_all([same_size])


def test_a_minor_merge_whose_entries_all_cancel_reports_a_merge(table):
    """Found by test_merger's Hypothesis test: the group merged into no manifest at all, and the
    merge said "none" although the list lost two manifests."""
    fio, root = table
    mf = ManifestFile(fio, TablePaths(root), [STRING(False)])
    a = ManifestEntry(FileKind.ADD, part("p1"), 0, 2, dfile("a"))
    (m1,), (m2,) = mf.write([a]), mf.write([a.with_kind(FileKind.DELETE)])
    result = ManifestFileMerger(mf, MergeOptions(m1.file_size + m2.file_size, 10**12, 1)).merge([m1, m2])
    assert result.manifests == [] and result.written == []
    assert result.kind is ManifestMergeKind.MINOR


# ----------------------------------------------------------------------------- record counts and watermark


def test_delta_record_count_adds_added_rows_and_subtracts_deleted_ones():
    add = [msg(new_files=[dfile("a", rows=5), dfile("b", rows=7)])]
    changes = collect_changes(add).append_table
    assert metadata_writer.delta_record_count(changes) == 12
    compact = collect_changes([msg(compact_before=[dfile("a", rows=5), dfile("b", rows=7)],
                                       compact_after=[dfile("c", rows=11)])]).compact_table
    assert metadata_writer.delta_record_count(compact) == -1
    assert metadata_writer.delta_record_count([]) == 0


@pytest.mark.parametrize("committed, previous, expected", [
    (None, None, None), (5, None, 5), (None, 7, 7), (5, 7, 7), (9, 7, 9), (7, 7, 7),
])
def test_next_watermark_never_goes_back(committed, previous, expected):
    assert metadata_writer.next_watermark(committed, previous) == expected


def test_snapshot_counts_and_watermark_follow_the_previous_snapshot(table):
    fio, root = table
    c = new_commit(fio, root)
    c.commit(ManifestCommittable(1, (msg(new_files=[dfile("a", rows=5)]),), watermark=100))
    c.commit(ManifestCommittable(2, (msg(new_files=[dfile("b", rows=3)], changelog_files=[dfile("cl", rows=2)]),),
                                 watermark=50))
    first, second = (TableView(fio, root).sm.snapshot(i) for i in (1, 2))
    assert (first.total_record_count, first.delta_record_count, first.watermark) == (5, 5, 100)
    assert first.changelog_record_count is None and first.changelog_manifest_list is None
    assert (second.total_record_count, second.delta_record_count, second.watermark) == (8, 3, 100)
    assert second.changelog_record_count == 2 and second.changelog_manifest_list is not None


class _FailingSnapshotRead(HookedFileIO):
    """Fails the next read of the file named ``fail_next_read_of`` (then reads normally)."""

    fail_next_read_of: str | None = None

    def read_bytes(self, path: str) -> bytes:
        if self.fail_next_read_of is not None and posixpath.basename(path) == self.fail_next_read_of:
            self.fail_next_read_of = None
            raise FileIOError(f"cannot read {path}: connection reset (injected)")
        return super().read_bytes(path)


def test_a_repeat_whose_lookup_fails_keeps_the_outcome_unknown(table):
    """Repeating a call after an unknown outcome must look for its own snapshot; if that lookup
    fails too, the outcome is still unknown and the next repeat must look again, not publish
    the part a second time (the record used to be dropped before the lookup)."""
    fio, root = table
    seed(fio, root)
    io = _FailingSnapshotRead(fio.fs, after_publish=raise_at(0))
    ours = new_commit(io, root, user="ours", options=CommitOptions(max_retries=0))
    messages = [msg("p1", 0, new_files=[dfile("n", 1, 20, 20)])]
    with pytest.raises(CommitOutcomeUnknownError):
        ours.commit(messages, 2)  # it landed as snapshot 2
    new_commit(FileIO(fio.fs), root, user="other").commit([msg("p2", 1, new_files=[dfile("o", 1, 30, 30)])], 7)
    io.fail_next_read_of = "snapshot-2"
    with pytest.raises(FileIOError):
        ours.commit(messages, 2)
    stats = ours.commit(messages, 2)
    assert stats.snapshot_ids == [2]
    v = TableView(fio, root)
    assert v.snapshot_ids() == [1, 2, 3]
    assert [(v.sm.snapshot(i).commit_user, v.sm.snapshot(i).commit_identifier) for i in (2, 3)] == [
        ("ours", 2), ("other", 7)]
    v.check()

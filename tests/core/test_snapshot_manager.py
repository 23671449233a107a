"""SnapshotManager: latest / earliest through hints, listing whenever a hint cannot be trusted,
temp files ignored, and publication that never replaces a snapshot."""

from __future__ import annotations

import math
import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from impl.errors import SnapshotNotExistError
from impl.fs.file_io import FileIO
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import CommitKind, Snapshot


def snap(i: int, user: str = "u", ident: int = 1, t: int | None = None) -> Snapshot:
    return Snapshot(i, 0, f"base-{i}", f"delta-{i}", user, ident, CommitKind.APPEND, t if t is not None else 1000 * i)


@pytest.fixture
def sm(io_root):
    fio, root = io_root
    return SnapshotManager(fio, root + "/db.db/t")


def publish(sm: SnapshotManager, *ids: int) -> None:
    for i in ids:
        assert sm.try_publish(snap(i))


def write_hint(sm: SnapshotManager, name: str, raw: bytes) -> None:
    sm.file_io.write_bytes(sm.paths.hint_path(name), raw)


def test_empty_table(sm):
    assert sm.latest_snapshot_id() is None and sm.earliest_snapshot_id() is None
    assert sm.latest_snapshot() is None and sm.earliest_snapshot() is None
    assert sm.snapshot_ids() == []
    assert sm.try_snapshot(1) is None
    with pytest.raises(SnapshotNotExistError) as ei:
        sm.snapshot(1)
    assert ei.value.snapshot_id == 1 and sm.table_path in str(ei.value)


def test_publish_creates_snapshot_and_latest_hint(sm):
    s = snap(1)
    assert sm.try_publish(s) is True
    assert sm.snapshot(1) == s
    assert sm.file_io.read_bytes(sm.paths.hint_path("LATEST")) == b"1"
    assert sm.try_publish(snap(2)) is True
    assert sm.file_io.read_bytes(sm.paths.hint_path("LATEST")) == b"2"
    assert sm.latest_snapshot() == snap(2)
    assert sm.earliest_snapshot() == snap(1)


def test_second_publish_of_an_id_loses_and_changes_nothing(sm):
    first = snap(1, user="first")
    assert sm.try_publish(first)
    raw = sm.file_io.read_bytes(sm.snapshot_path(1))
    assert sm.try_publish(snap(1, user="second")) is False
    assert sm.file_io.read_bytes(sm.snapshot_path(1)) == raw
    assert sm.snapshot(1).commit_user == "first"
    assert sorted(sm.file_io.list_names(sm.paths.snapshot_dir)) == ["LATEST", "snapshot-1"]


def test_latest_uses_a_good_hint(sm):
    publish(sm, 1, 2, 3)
    assert sm.latest_snapshot_id() == 3
    # the hint is used when it checks out; prove it by making listing return something else
    sm.snapshot_ids = lambda: pytest.fail("listed although the hint was right")  # type: ignore[method-assign]
    assert sm.latest_snapshot_id() == 3


@pytest.mark.parametrize("hint", [b"1", b"2", b"7", b"", b"  ", b"\x00\xff", b"abc", b"-1", b"0", b"3.0", None])
def test_latest_falls_back_to_listing_when_the_hint_cannot_be_trusted(sm, hint):
    """Stale (behind), ahead (names a missing snapshot), torn ('1' of '12'), empty, garbage, missing."""
    publish(sm, *range(1, 13))
    if hint is None:
        sm.file_io.delete(sm.paths.hint_path("LATEST"))
    else:
        write_hint(sm, "LATEST", hint)
    assert sm.latest_snapshot_id() == 12
    assert sm.latest_snapshot().id == 12


def test_torn_latest_hint(sm):
    publish(sm, *range(1, 13))
    write_hint(sm, "LATEST", b"1")  # the first byte of "12"
    assert sm.latest_snapshot_id() == 12


def test_earliest_through_hint_and_fallbacks(sm):
    publish(sm, 1, 2, 3, 4, 5)
    assert sm.earliest_snapshot_id() == 1  # no EARLIEST hint: listing
    write_hint(sm, "EARLIEST", b"1")
    assert sm.earliest_snapshot_id() == 1
    # expire 1 and 2; the hint is now stale (points to a missing snapshot)
    sm.file_io.delete(sm.snapshot_path(1))
    sm.file_io.delete(sm.snapshot_path(2))
    assert sm.earliest_snapshot_id() == 3
    write_hint(sm, "EARLIEST", b"4")  # ahead: snapshot 3 still exists
    assert sm.earliest_snapshot_id() == 3
    for bad in (b"", b"x", b"\xff", b"-3"):
        write_hint(sm, "EARLIEST", bad)
        assert sm.earliest_snapshot_id() == 3
    write_hint(sm, "EARLIEST", b"3")
    assert sm.earliest_snapshot().id == 3


def test_snapshot_ids_ignore_temp_and_foreign_files(sm):
    publish(sm, 1, 2)
    d = sm.paths.snapshot_dir
    for name in (".snapshot-3.abcdef.tmp", "snapshot-4.tmp", "snapshot-", "snapshot-x", "EARLIEST", "LATEST",
                 ".snapshot-5", "snapshot-05x"):
        sm.file_io.write_bytes(f"{d}/{name}", b"{}")
    assert sm.snapshot_ids() == [1, 2]
    assert sm.latest_snapshot_id() == 2
    assert [s.id for s in sm.snapshots()] == [1, 2]


@pytest.mark.parametrize("name", ["snapshot-\u00b2", "snapshot-\u0663", "snapshot-\uff13"],
                         ids=["superscript-two", "arabic-indic-three", "fullwidth-three"])
def test_snapshot_ids_ignore_names_with_non_ascii_digits(sm, name):
    """str.isdigit() accepts superscripts and other scripts' digits: 'snapshot-\u00b2' then breaks
    int(), and 'snapshot-\u0663' (Arabic-Indic 3) is taken for snapshot 3, which does not exist."""
    publish(sm, 1, 2)
    sm.file_io.write_bytes(f"{sm.paths.snapshot_dir}/{name}", b"{}")
    sm.file_io.delete(sm.paths.hint_path("LATEST"))
    assert sm.snapshot_ids() == [1, 2]
    assert sm.latest_snapshot().id == 2


def test_publication_leaves_no_temp_files(sm):
    publish(sm, 1, 2, 3)
    assert not sm.try_publish(snap(2))
    assert sorted(sm.file_io.list_names(sm.paths.snapshot_dir)) == ["LATEST", "snapshot-1", "snapshot-2",
                                                                   "snapshot-3"]


def test_failed_hint_write_does_not_fail_the_publication(io_root):
    fio, root = io_root

    class NoHints(type(fio)):
        def overwrite_hint(self, path, text):
            raise OSError("hint storage down")

    sm = SnapshotManager(NoHints(fio.fs), root + "/t")
    assert sm.try_publish(snap(1)) is True
    assert sm.latest_snapshot_id() == 1
    assert not sm.file_io.exists(sm.paths.hint_path("LATEST"))


def test_time_travel_and_user_lookup(sm):
    sm.try_publish(snap(1, user="a", t=100))
    sm.try_publish(snap(2, user="b", t=200))
    sm.try_publish(snap(3, user="a", t=300))
    assert sm.earlier_or_equal_time_millis(250).id == 2
    assert sm.earlier_or_equal_time_millis(300).id == 3
    assert sm.earlier_or_equal_time_millis(99) is None
    assert sm.latest_snapshot_of_user("a").id == 3
    assert sm.latest_snapshot_of_user("b").id == 2
    assert sm.latest_snapshot_of_user("c") is None


# ----------------------------------------------------------------------------- time travel by time


class CountingFileIO(FileIO):
    """Counts the snapshot files read (``snapshot-N``; hints and listings are not counted)."""

    snapshot_reads = 0

    def read_bytes(self, path: str) -> bytes:
        if posixpath.basename(path).startswith("snapshot-"):
            self.snapshot_reads += 1
        return super().read_bytes(path)


@pytest.fixture
def counting_sm(io_root):
    fio, root = io_root
    return SnapshotManager(CountingFileIO(fio.fs), root + "/db.db/t")


def linear_answer(times: dict[int, int], time_millis: int) -> int | None:
    """The newest id committed at or before ``time_millis``, by a scan over every snapshot."""
    at_or_before = [i for i, t in times.items() if t <= time_millis]
    return max(at_or_before) if at_or_before else None


def test_time_travel_before_first_after_last_equal_and_between(sm):
    times = {i: 1000 + 10 * i for i in range(1, 61)}
    for i, t in times.items():
        assert sm.try_publish(snap(i, t=t))
    assert sm.earlier_or_equal_time_millis(0) is None
    assert sm.earlier_or_equal_time_millis(1009) is None  # 1 ms before the first
    assert sm.earlier_or_equal_time_millis(1010).id == 1  # equal to the first
    assert sm.earlier_or_equal_time_millis(1600).id == 60  # equal to the last
    assert sm.earlier_or_equal_time_millis(10**12).id == 60  # after the last
    assert sm.earlier_or_equal_time_millis(1350).id == 35  # equal to one in the middle
    assert sm.earlier_or_equal_time_millis(1355).id == 35  # between two
    assert sm.earlier_or_equal_time_millis(1359).id == 35
    for t in range(990, 1620):
        assert getattr(sm.earlier_or_equal_time_millis(t), "id", None) == linear_answer(times, t), t


def test_time_travel_with_equal_times_picks_the_newest(sm):
    """Commit times only never decrease: several snapshots of one millisecond all match, and
    (as the scan over every snapshot did) the newest of them is the answer."""
    times = {1: 100, 2: 200, 3: 200, 4: 200, 5: 200, 6: 300, 7: 300, 8: 400}
    for i, t in times.items():
        assert sm.try_publish(snap(i, t=t))
    for t in (99, 100, 150, 200, 250, 300, 399, 400, 401):
        assert getattr(sm.earlier_or_equal_time_millis(t), "id", None) == linear_answer(times, t), t


def test_time_travel_on_an_empty_table(sm):
    assert sm.earlier_or_equal_time_millis(10**12) is None


@pytest.mark.parametrize("missing", [[1, 2, 3], [50], [20, 21, 22, 23, 24, 25], list(range(1, 40)), [100]],
                         ids=["expired-head", "one-middle", "middle-run", "most-expired", "latest-gone"])
def test_time_travel_skips_missing_snapshot_files(sm, missing):
    """Snapshots expired while the search runs (or any file gone from the range) are stepped
    over to the next existing id; the answer is the newest existing snapshot in time."""
    times = {i: 10 * i for i in range(1, 101)}
    for i, t in times.items():
        assert sm.try_publish(snap(i, t=t))
    write_hint(sm, "EARLIEST", b"1")  # stale once the head is gone: the search starts at 1 anyway
    real_latest = sm.latest_snapshot_id
    sm.latest_snapshot_id = lambda: 100  # type: ignore[method-assign]  # as read before 100 vanished
    for i in missing:
        sm.file_io.delete(sm.snapshot_path(i))
    present = {i: t for i, t in times.items() if i not in missing}
    for t in [0, 5, 10, 15, *range(95, 1010, 7), 1000, 10**9]:
        assert getattr(sm.earlier_or_equal_time_millis(t), "id", None) == linear_answer(present, t), t
    sm.latest_snapshot_id = real_latest  # type: ignore[method-assign]


@pytest.mark.parametrize("n", [200, 1000])
def test_time_travel_reads_logarithmically_many_snapshots(counting_sm, n):
    sm = counting_sm
    for i in range(1, n + 1):
        assert sm.try_publish(snap(i, t=1000 * i))
    write_hint(sm, "EARLIEST", b"1")
    bound = 2 * math.ceil(math.log2(n)) + 4  # the hints' checks read no snapshot file
    for t in (0, 999, 1000, 1500, 1000 * (n // 3), 1000 * (n // 3) + 1, 1000 * n, 10**12):
        sm.file_io.snapshot_reads = 0
        found = sm.earlier_or_equal_time_millis(t)
        assert getattr(found, "id", None) == (min(t // 1000, n) or None), t
        assert sm.file_io.snapshot_reads <= bound, (t, sm.file_io.snapshot_reads, bound)


# ----------------------------------------------------------------------------- one user's snapshots


def test_snapshots_of_user_newest_first_by_default(sm):
    for i, user in enumerate(["a", "b", "a", "c", "a", "b"], start=1):
        assert sm.try_publish(snap(i, user=user))
    assert [s.id for s in sm.snapshots_of_user("a")] == [5, 3, 1]
    assert [s.id for s in sm.snapshots_of_user("b")] == [6, 2]
    assert list(sm.snapshots_of_user("nobody")) == []
    sm.file_io.delete(sm.snapshot_path(3))  # expired: skipped
    assert [s.id for s in sm.snapshots_of_user("a")] == [5, 1]


def test_snapshots_of_user_over_given_ids_never_lists(counting_sm):
    sm = counting_sm
    for i, user in enumerate(["a", "b", "a", "c", "a", "b"], start=1):
        assert sm.try_publish(snap(i, user=user))
    sm.snapshot_ids = lambda: pytest.fail("listed although ids were given")  # type: ignore[method-assign]
    assert [s.id for s in sm.snapshots_of_user("a", range(2, 8))] == [3, 5]  # 7 does not exist: skipped
    assert [s.id for s in sm.snapshots_of_user("a", range(5, 0, -1))] == [5, 3, 1]
    latest = sm.snapshot(6)
    sm.file_io.snapshot_reads = 0
    assert [s.id for s in sm.snapshots_of_user("b", range(4, 7), known=latest)] == [6]
    assert sm.file_io.snapshot_reads == 2  # 4 and 5; the known 6 is not read again
    sm.file_io.snapshot_reads = 0
    scan = sm.snapshots_of_user("a", range(6, 0, -1))
    assert next(scan).id == 5
    assert sm.file_io.snapshot_reads == 2  # lazy: nothing below 5 read yet


@given(st.integers(1, 300), st.integers(0, 300), st.data())
def test_id_searches_find_the_bounds_of_the_contiguous_run(earliest, length, data):
    """The probes that replace a listing: from any present id, the last and first present ids;
    from an absent id below the run, its first present id."""
    from impl.snapshot.manager import first_present_below, first_present_between, last_present

    latest = earliest + length
    probed: list[int] = []

    def present(i: int) -> bool:
        probed.append(i)
        return earliest <= i <= latest

    start = data.draw(st.integers(earliest, latest))
    assert last_present(start, present) == latest
    assert first_present_below(start, present) == earliest
    below = data.draw(st.integers(0, earliest - 1))
    assert first_present_between(below, latest, present) == earliest
    # logarithmic: never a scan of the run
    assert len(probed) <= 3 * (2 * (length + earliest).bit_length() + 2)

"""SnapshotManager: latest / earliest through hints, listing whenever a hint cannot be trusted,
temp files ignored, and publication that never replaces a snapshot."""

from __future__ import annotations

import pytest

from impl.errors import SnapshotNotFoundError
from impl.format.json_records import CommitKind, Snapshot
from impl.snapshot.manager import SnapshotManager


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
    with pytest.raises(SnapshotNotFoundError) as ei:
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

"""Recovery (``filter_and_commit``) when the snapshots that published a part have expired: the
part's own files decide. Found by the deterministic explorer (a restarted committer whose
published APPEND expired was told "conflict" for a part that was published)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import impl


def _table(tmp_path, **options):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]), options=options)


def _rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64())})


def _ids(t):
    return sorted(t.to_arrow().column("id").to_pylist())


def _publish_then_lose_track(t):
    """Writer A publishes identifier 7 and 'crashes' (keeps its messages); writer B commits
    twice; expiration removes A's snapshot. Returns A's commit and its pending committable."""
    a = t.new_stream_write_builder()
    wa, ca = a.new_write(), a.new_commit()
    wa.write_arrow(_rows([1, 2]))
    messages = wa.prepare_commit()
    ca.commit(messages, commit_identifier=7)
    b = t.new_stream_write_builder()
    wb, cb = b.new_write(), b.new_commit()
    for identifier, ids in ((1, [3]), (2, [4])):
        wb.write_arrow(_rows(ids))
        cb.commit(wb.prepare_commit(), commit_identifier=identifier)
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert [s.id for s in t.snapshots()] == [3]  # A's snapshot (1) is gone
    wa.close()
    wb.close()
    cb.close()
    return a.new_commit(), messages


def test_a_part_whose_files_are_live_is_recognized_as_published(tmp_path):
    t = _table(tmp_path)
    commit, messages = _publish_then_lose_track(t)
    assert commit.filter_and_commit({7: messages}) == []
    assert _ids(t) == [1, 2, 3, 4]  # published once, not refused, not doubled
    assert [s.id for s in t.snapshots()] == [3]
    commit.close()


def test_a_part_whose_files_a_retained_compaction_deleted_is_recognized_as_published(tmp_path):
    t = _table(tmp_path)
    commit, messages = _publish_then_lose_track(t)
    t.compact(full=True)  # A's file is rewritten: deleted by a retained COMPACT snapshot
    live = {f.file_name for s in t.new_read_builder().new_scan().plan().splits() for f in s.files}
    assert not live & {f.file_name for m in messages for f in m.new_files}
    assert commit.filter_and_commit({7: messages}) == []
    assert _ids(t) == [1, 2, 3, 4]
    commit.close()


def test_an_unpublished_part_is_still_committed_after_expiration(tmp_path):
    t = _table(tmp_path)
    commit, _ = _publish_then_lose_track(t)
    w = t.new_stream_write_builder().new_write()
    w.write_arrow(_rows([5]))
    pending = w.prepare_commit()
    stats = commit.filter_and_commit({8: pending})
    assert len(stats) == 1
    assert _ids(t) == [1, 2, 3, 4, 5]
    w.close()
    commit.close()


def test_recovery_never_publishes_a_part_twice(tmp_path):
    """The same recovery run twice (a second crash after the first recovery) publishes nothing more."""
    t = _table(tmp_path)
    commit, messages = _publish_then_lose_track(t)
    assert commit.filter_and_commit({7: messages}) == []
    assert commit.filter_and_commit({7: messages}) == []
    assert _ids(t) == [1, 2, 3, 4]
    commit.close()


def test_a_part_re_adding_another_writers_live_file_is_not_taken_for_published(tmp_path):
    """One committable holds a caller's own new file and (a caller error) another writer's live
    file: the live file is named by the table, the caller's own is on storage but named by no
    snapshot, so the part was not published. Recovery must refuse it whole, as the first attempt
    was refused, never publish the caller's file alone (found by the commit state machine: the
    rule judged each message by itself and dropped the one holding only the foreign file)."""
    t = _table(tmp_path)
    commit, published_messages = _publish_then_lose_track(t)
    w = t.new_stream_write_builder().new_write()
    w.write_arrow(_rows([5]))
    own = w.prepare_commit()
    with pytest.raises(impl.FileAlreadyLiveError):
        commit.filter_and_commit({9: [*published_messages, *own]})
    assert _ids(t) == [1, 2, 3, 4]  # nothing of the refused committable published
    assert [s.id for s in t.snapshots()] == [3]
    w.close()
    commit.close()

"""Unit and property tests of the executable model itself (model/)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model import (
    ADD,
    APPEND,
    COMPACT,
    DELETE,
    OVERWRITE,
    BucketCountChangedError,
    CommitConflictError,
    DuplicateFileError,
    Entry,
    FileAlreadyLiveError,
    FileFacts,
    FileNotLiveError,
    InvalidTagNameError,
    KeyRangeOverlapError,
    Model,
    SnapshotNotExistError,
    TagAlreadyExistError,
    TagNotExistError,
    check_conflicts,
    check_extra_file_owners,
    identity,
    merge_entries,
    merge_rows,
)


def ff(name, part=("p",), bucket=0, level=0, lo=None, hi=None, rows=1, total=1):
    return FileFacts(part, bucket, total, level, name, lo, hi, rows)


def live_of(*files):
    return {identity(f): f for f in files}


def names(mapping):
    return sorted(f.file_name for f in mapping.values())


# ---------------------------------------------------------------------------- merge_entries


def test_add_then_delete_cancel():
    a, b = ff("a"), ff("b")
    merged = merge_entries([Entry(ADD, a), Entry(ADD, b), Entry(DELETE, a)])
    assert list(merged) == [identity(b)]
    assert merged[identity(b)].kind == ADD


def test_delete_of_older_add_is_kept():
    a = ff("a")
    merged = merge_entries([Entry(DELETE, a)])
    assert merged == {identity(a): Entry(DELETE, a)}


def test_duplicate_add_raises():
    a = ff("a")
    with pytest.raises(DuplicateFileError) as err:
        merge_entries([Entry(ADD, a), Entry(ADD, a)])
    assert err.value.files == ("a",)
    assert not isinstance(err.value, CommitConflictError)


def test_add_after_kept_delete_raises():
    a = ff("a")
    with pytest.raises(DuplicateFileError):
        merge_entries([Entry(DELETE, a), Entry(ADD, a)])


def test_second_delete_stays_one_kept_delete():
    a = ff("a")
    assert merge_entries([Entry(DELETE, a), Entry(DELETE, a)]) == {identity(a): Entry(DELETE, a)}


def test_identity_includes_level_partition_and_bucket():
    base = ff("a")
    variants = [ff("a", level=1), ff("a", part=("q",)), ff("a", bucket=1)]
    entries = [Entry(ADD, base)] + [Entry(ADD, v) for v in variants]
    assert len(merge_entries(entries)) == 4  # no DuplicateFileError: all identities differ


def test_entry_kind_validated():
    with pytest.raises(ValueError):
        Entry("UPSERT", ff("a"))


# ---------------------------------------------------------------------------- check_conflicts


def test_bucket_count_changed():
    live = live_of(ff("a", total=2))
    with pytest.raises(BucketCountChangedError) as err:
        check_conflicts(live, [Entry(ADD, ff("b", total=3))], APPEND, False)
    assert err.value.files == ("a", "b")
    assert isinstance(err.value, CommitConflictError)


def test_bucket_count_other_partition_and_dynamic_buckets_are_fine():
    live = live_of(ff("a", total=2))
    changes = [Entry(ADD, ff("b", part=("q",), total=3)), Entry(ADD, ff("c", total=-1))]
    assert names(check_conflicts(live, changes, APPEND, False)) == ["a", "b", "c"]


def test_bucket_count_change_allowed_on_overwrite():
    a = ff("a", total=2)
    new = check_conflicts(live_of(a), [Entry(DELETE, a), Entry(ADD, ff("b", total=3))], OVERWRITE, False)
    assert names(new) == ["b"]


def test_bucket_check_comes_before_duplicate_check():
    a = ff("a", total=2)
    with pytest.raises(BucketCountChangedError):
        check_conflicts(live_of(a), [Entry(ADD, a), Entry(ADD, ff("b", total=3))], APPEND, False)


def test_file_already_live():
    a = ff("a")
    with pytest.raises(FileAlreadyLiveError) as err:
        check_conflicts(live_of(a), [Entry(ADD, a)], APPEND, False)
    assert err.value.files == ("a",)


def test_file_not_live():
    a, b = ff("a"), ff("b")
    with pytest.raises(FileNotLiveError) as err:
        check_conflicts(live_of(a), [Entry(DELETE, b)], COMPACT, False)
    assert err.value.files == ("b",)


def test_deleting_a_live_file_twice_is_not_live():
    a = ff("a")
    with pytest.raises(FileNotLiveError):
        check_conflicts(live_of(a), [Entry(DELETE, a), Entry(DELETE, a)], COMPACT, False)


def test_level0_overlap_allowed():
    files = [ff("a", level=0, lo=1, hi=10), ff("b", level=0, lo=5, hi=20)]
    new = check_conflicts({}, [Entry(ADD, f) for f in files], APPEND, True)
    assert names(new) == ["a", "b"]


def test_level1_overlap_refused():
    a = ff("a", level=1, lo=1, hi=10)
    with pytest.raises(KeyRangeOverlapError) as err:
        check_conflicts(live_of(a), [Entry(ADD, ff("b", level=1, lo=5, hi=20))], COMPACT, True)
    assert set(err.value.files) == {"a", "b"}


def test_touching_ranges_refused():
    a = ff("a", level=2, lo=1, hi=10)
    with pytest.raises(KeyRangeOverlapError):
        check_conflicts(live_of(a), [Entry(ADD, ff("b", level=2, lo=10, hi=20))], COMPACT, True)


def test_overlap_found_beyond_neighbours_in_input_order():
    files = [ff("a", level=1, lo=0, hi=100), ff("b", level=1, lo=200, hi=300), ff("c", level=1, lo=50, hi=60)]
    with pytest.raises(KeyRangeOverlapError):
        check_conflicts({}, [Entry(ADD, f) for f in files], COMPACT, True)


def test_disjoint_or_separated_ranges_allowed():
    files = [
        ff("b", level=1, lo=11, hi=20),  # out of key order on purpose
        ff("a", level=1, lo=1, hi=10),
        ff("c", level=2, lo=5, hi=15),  # other level
        ff("d", level=1, bucket=1, lo=5, hi=15),  # other bucket
        ff("e", level=1, part=("q",), lo=5, hi=15),  # other partition
    ]
    assert len(check_conflicts({}, [Entry(ADD, f) for f in files], COMPACT, True)) == 5


def test_overlap_not_checked_on_append_tables():
    files = [ff("a", level=1, lo=1, hi=10), ff("b", level=1, lo=5, hi=20)]
    assert len(check_conflicts({}, [Entry(ADD, f) for f in files], COMPACT, False)) == 2


def test_compaction_replacing_overlap_is_fine():
    a, b = ff("a", level=1, lo=1, hi=10), ff("b", level=0, lo=5, hi=20)
    changes = [Entry(DELETE, a), Entry(DELETE, b), Entry(ADD, ff("c", level=1, lo=1, hi=20))]
    assert names(check_conflicts(live_of(a, b), changes, COMPACT, True)) == ["c"]


# ---------------------------------------------------------------------------- Model.commit


def test_append_and_compact_publish_two_snapshots():
    m = Model(primary_key=True)
    a = ff("a", lo=1, hi=5, rows=3)
    assert m.commit("u", 1, new_files=[a]) == [1]
    b = ff("b", lo=4, hi=9, rows=2)
    c = ff("c", level=1, lo=1, hi=9, rows=4)
    assert m.commit("u", 2, new_files=[b], compact_before=[a, b], compact_after=[c]) == [2, 3]
    assert [s.kind for s in m.snapshots] == [APPEND, APPEND, COMPACT]
    assert names(m.read(2)) == ["a", "b"] and names(m.read(3)) == ["c"]
    assert [s.total_record_count for s in m.snapshots] == [3, 5, 4]
    assert [s.delta_record_count for s in m.snapshots] == [3, 2, -1]


def test_append_stays_when_compact_conflicts():
    m = Model(primary_key=False)
    m.commit("u", 1, new_files=[ff("a")])
    with pytest.raises(FileNotLiveError):
        m.commit("u", 2, new_files=[ff("b")], compact_before=[ff("gone")], compact_after=[ff("c")])
    assert [s.kind for s in m.snapshots] == [APPEND, APPEND]
    assert names(m.read(2)) == ["a", "b"]


def test_conflict_publishes_nothing():
    m = Model(primary_key=False)
    m.commit("u", 1, new_files=[ff("a")])
    with pytest.raises(FileAlreadyLiveError):
        m.commit("u", 2, new_files=[ff("b"), ff("a")])
    assert len(m.snapshots) == 1 and names(m.live()) == ["a"]


def test_stale_committer_conflicts_against_latest():
    m = Model(primary_key=False)
    a = ff("a")
    m.commit("u1", 1, new_files=[a])
    m.commit("u1", 2, compact_before=[a], compact_after=[ff("a2")])  # someone compacted a away
    with pytest.raises(FileNotLiveError):  # u2 still believes a is live
        m.commit("u2", 1, compact_before=[a], compact_after=[ff("a3")])
    assert m.latest().id == 2


def test_empty_commit_publishes_nothing():
    m = Model(primary_key=False)
    assert m.commit("u", 1) == []
    assert m.latest() is None and m.live() == {}


def test_overwrite_one_partition_vs_whole_table():
    m = Model(primary_key=False)
    p, q = ("p",), ("q",)
    m.commit("u", 1, new_files=[ff("a", part=p), ff("b", part=q)])
    assert m.overwrite("u", 2, partitions={p}, new_files=[ff("c", part=p)]) == [2]
    assert names(m.live()) == ["b", "c"]
    assert m.latest().kind == OVERWRITE
    assert m.overwrite("u", 3, partitions=None, new_files=[ff("d", part=q)]) == [3]
    assert names(m.live()) == ["d"]
    assert m.latest().delta_record_count == -1


def test_overwrite_without_changes_still_publishes():
    m = Model(primary_key=False)
    assert m.overwrite("u", 1) == [1]
    assert m.latest().kind == OVERWRITE and m.latest().changes == ()


def test_overwrite_may_change_bucket_count():
    m = Model(primary_key=False)
    m.commit("u", 1, new_files=[ff("a", total=2)])
    m.overwrite("u", 2, partitions={("p",)}, new_files=[ff("b", total=4)])
    assert [f.total_buckets for f in m.live().values()] == [4]


def test_overwrite_refuses_files_outside_partitions():
    m = Model(primary_key=False)
    with pytest.raises(ValueError):
        m.overwrite("u", 1, partitions={("p",)}, new_files=[ff("a", part=("q",))])
    assert m.snapshots == []


# ---------------------------------------------------------------------------- idempotence


def test_rerun_publishes_nothing_new():
    m = Model(primary_key=False)
    a = ff("a")
    kwargs = dict(new_files=[ff("b")], compact_before=[a], compact_after=[ff("c")])
    m.commit("u", 1, new_files=[a])
    assert m.commit("u", 2, skip_committed=True, **kwargs) == [2, 3]
    assert m.committed_kinds("u", 2) == {APPEND, COMPACT}
    assert m.commit("u", 2, skip_committed=True, **kwargs) == []
    assert len(m.snapshots) == 3
    with pytest.raises(FileAlreadyLiveError):  # without the flag the re-run is a conflict
        m.commit("u", 2, **kwargs)


def test_rerun_completes_a_half_done_commit():
    m = Model(primary_key=False)
    a, b, c = ff("a"), ff("b"), ff("c")
    m.commit("u", 1, new_files=[a])
    m.commit("u", 2, new_files=[b])  # crashed after the APPEND part was published
    assert m.commit("u", 2, new_files=[b], compact_before=[a], compact_after=[c], skip_committed=True) == [3]
    assert m.latest().kind == COMPACT and names(m.live()) == ["b", "c"]


def test_committed_kinds_is_per_user_and_identifier():
    m = Model(primary_key=False)
    m.commit("u", 1, new_files=[ff("a")])
    assert m.committed_kinds("u", 1) == {APPEND}
    assert m.committed_kinds("v", 1) == set() and m.committed_kinds("u", 2) == set()
    assert m.commit("v", 1, new_files=[ff("b")], skip_committed=True) == [2]


def test_overwrite_rerun_skipped():
    m = Model(primary_key=False)
    assert m.overwrite("u", 1, new_files=[ff("a")], skip_committed=True) == [1]
    assert m.overwrite("u", 1, new_files=[ff("a")], skip_committed=True) == []
    assert len(m.snapshots) == 1


# ---------------------------------------------------------------------------- expire and read


def _model_with(n):
    m = Model(primary_key=False)
    for i in range(n):
        m.commit("u", i, new_files=[ff(f"f{i}")], deleted_files=[ff(f"f{i - 1}")] if i else ())
    return m


def test_expire_bounds_and_contiguity():
    m = _model_with(10)
    assert m.expire(retain_min=2, retain_max=4) == [1, 2, 3, 4, 5, 6]
    assert [s.id for s in m.snapshots] == [7, 8, 9, 10]
    assert m.expire(retain_min=2, retain_max=4) == []
    assert m.expire(retain_min=1, retain_max=1) == [7, 8, 9]
    assert [s.id for s in m.snapshots] == [10]
    m.commit("u", 99, new_files=[ff("z")])
    assert [s.id for s in m.snapshots] == [10, 11]


def test_expire_never_below_retain_min():
    m = _model_with(3)
    assert m.expire(retain_min=5, retain_max=8) == []
    assert len(m.snapshots) == 3


def test_expire_validates_arguments():
    m = _model_with(3)
    for lo, hi in [(0, 3), (3, 2)]:
        with pytest.raises(ValueError):
            m.expire(lo, hi)
    assert len(m.snapshots) == 3


def test_read_expired_or_unknown_raises():
    m = _model_with(5)
    m.expire(1, 2)
    assert names(m.read(5)) == ["f4"]
    for bad in (0, 1, 3, 6):
        with pytest.raises(SnapshotNotExistError) as err:
            m.read(bad)
        assert err.value.snapshot_id == bad
    with pytest.raises(SnapshotNotExistError):
        Model(primary_key=False).snapshot(1)


def test_files_needed_shrinks_with_expiry():
    m = _model_with(4)
    assert {key[3] for key in m.files_needed()} == {"f0", "f1", "f2", "f3"}
    m.expire(1, 2)
    assert {key[3] for key in m.files_needed()} == {"f2", "f3"}


def test_extra_files_live_and_die_with_their_data_file():
    """file_names_kept: each kept file's name and its extra files (its .index), tags included;
    a file moved to another level keeps its name and its own index file."""
    m = Model(primary_key=False)
    a = FileFacts(("p",), 0, 1, 0, "a", extra_files=("a.index",))
    a_up = FileFacts(("p",), 0, 1, 1, "a", extra_files=("a.index",))
    b = FileFacts(("p",), 0, 1, 1, "b", extra_files=("b.index",))
    m.commit("u", 1, new_files=[a])
    m.commit("u", 2, compact_before=[a], compact_after=[a_up])
    m.create_tag("t", 2)
    m.commit("u", 3, compact_before=[a_up], compact_after=[b])
    assert m.file_names_needed() == {"a", "a.index", "b", "b.index"}
    m.expire(1, 1)
    assert m.file_names_needed() == {"a", "a.index", "b", "b.index"}  # the tag keeps a
    m.delete_tag("t")
    assert m.file_names_needed() == {"b", "b.index"}
    assert m.files_needed() == {identity(b)}
    owners: dict[str, str] = {}
    check_extra_file_owners(owners, [a, a_up, b])
    with pytest.raises(AssertionError, match="already belongs to a"):
        check_extra_file_owners(owners, [FileFacts(("p",), 0, 1, 1, "c", extra_files=("a.index",))])


# ---------------------------------------------------------------------------- merge_rows


def test_merge_rows_deduplicate():
    rows = [
        (1, 0, 0, "a"), (1, 3, 2, "a3"), (1, 2, 0, "a2"),  # highest seq (+U) wins
        (2, 0, 0, "b"), (2, 1, 3, None),  # -D removes
        (3, 5, 1, None), (3, 4, 0, "c"),  # -U removes
        (4, 7, 0, "d"),
    ]
    assert merge_rows(rows) == {1: "a3", 4: "d"}


def test_merge_rows_tie_goes_to_the_later_row():
    assert merge_rows([(1, 4, 0, "old"), (1, 4, 2, "new")]) == {1: "new"}
    assert merge_rows([(1, 4, 0, "old"), (1, 4, 3, None)]) == {}


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.sampled_from("xyz")), max_size=30))
def test_merge_rows_order_independent(raw):
    rows = [(key, seq, kind, value) for seq, (key, kind, value) in enumerate(raw)]  # unique seqs
    shuffled = rows[:]
    random.Random(len(rows)).shuffle(shuffled)
    result = merge_rows(shuffled)
    assert result == merge_rows(rows)
    for key in {r[0] for r in rows}:
        last = max((r for r in rows if r[0] == key), key=lambda r: r[1])
        assert (key in result) == (last[2] in (0, 2))


# ---------------------------------------------------------------------------- properties


@st.composite
def histories(draw):
    """Run random operations on a fresh model, swallowing conflicts; return the model."""
    m = Model(primary_key=draw(st.booleans()))
    counter = itertools.count()

    def new_file(level):
        lo = draw(st.integers(0, 20))
        return FileFacts(
            draw(st.sampled_from([("p",), ("q",)])), draw(st.integers(0, 1)),
            draw(st.sampled_from([2, 2, 2, 3])), level, f"f{next(counter)}",
            lo, lo + draw(st.integers(0, 5)), draw(st.integers(0, 9)),
        )

    for step in range(draw(st.integers(1, 12))):
        live = list(m.live().values())
        some_live = draw(st.lists(st.sampled_from(live), unique=True, max_size=3)) if live else []
        op = draw(st.sampled_from(["append", "append", "compact", "overwrite"]))
        before = list(m.snapshots)
        try:
            if op == "append":
                new = [new_file(0) for _ in range(draw(st.integers(0, 3)))]
                m.commit("u", step, new_files=new, deleted_files=some_live[:1])
            elif op == "compact":
                after = [new_file(draw(st.integers(0, 2))) for _ in range(draw(st.integers(0, 2)))]
                m.commit("u", step, compact_before=some_live, compact_after=after)
            else:
                parts = draw(st.sampled_from([None, {("p",)}, {("q",)}]))
                new = [f for f in (new_file(1) for _ in range(2)) if parts is None or f.partition in parts]
                m.overwrite("u", step, partitions=parts, new_files=new)
        except CommitConflictError:
            assert m.snapshots[: len(before)] == before  # nothing already published changed
    return m


@settings(max_examples=200, deadline=None)
@given(histories())
def test_live_set_is_fold_of_published_entries(m):
    all_entries = []
    for expected_id, s in enumerate(m.snapshots, start=1):
        assert s.id == expected_id
        all_entries.extend(s.changes)
        folded = merge_entries(all_entries)
        assert all(e.kind == ADD for e in folded.values())
        assert {k: e.file for k, e in folded.items()} == dict(s.live)
        assert s.total_record_count == sum(f.row_count for f in s.live.values())
        adds = sum(e.file.row_count for e in s.changes if e.kind == ADD)
        deletes = sum(e.file.row_count for e in s.changes if e.kind == DELETE)
        assert s.delta_record_count == adds - deletes


@settings(max_examples=200, deadline=None)
@given(histories())
def test_primary_key_runs_never_overlap(m):
    if not m.primary_key:
        return
    for s in m.snapshots:
        runs = {}
        for f in s.live.values():
            if f.level >= 1:
                runs.setdefault((f.partition, f.bucket, f.level), []).append(f)
        for run in runs.values():
            for a, b in itertools.combinations(run, 2):
                assert a.max_key < b.min_key or b.max_key < a.min_key


@settings(max_examples=100, deadline=None)
@given(histories(), st.integers(1, 4), st.integers(0, 4))
def test_expire_keeps_reads_of_retained_snapshots(m, retain_min, extra):
    before = {s.id: dict(s.live) for s in m.snapshots}
    count = len(m.snapshots)
    removed = m.expire(retain_min, retain_min + extra)
    ids = [s.id for s in m.snapshots]
    assert ids == list(range(ids[0], ids[0] + len(ids))) if ids else count == 0
    assert removed == sorted(set(before) - set(ids))
    assert len(ids) == min(count, retain_min + extra)  # at most retain_max, at least retain_min
    if count:
        assert ids[-1] == max(before)
    for sid in ids:
        assert dict(m.read(sid)) == before[sid]
    assert m.files_needed() == {k for sid in ids for k in before[sid]}


# ---------------------------------------------------------------------------- tags


def test_tag_keeps_files_of_an_expired_snapshot_until_it_goes():
    m = Model(primary_key=False)
    a, b, c = ff("a"), ff("b"), ff("c")
    m.commit("u", 1, new_files=[a])
    m.commit("u", 2, new_files=[b], deleted_files=[a])
    m.commit("u", 3, new_files=[c], deleted_files=[b])
    m.create_tag("t1", 1)
    m.create_tag("t1-again", 1)
    m.expire(1, 1)
    assert [s.id for s in m.snapshots] == [3]
    assert names(m.read_tag("t1")) == ["a"]
    assert m.files_needed() == {identity(a), identity(c)}  # b was only in snapshot 2
    m.delete_tag("t1")
    assert identity(a) in m.files_needed()  # the other tag of snapshot 1 still keeps it
    m.delete_tag("t1-again")
    assert m.files_needed() == {identity(c)}


def test_tag_rules():
    m = Model(primary_key=False)
    with pytest.raises(SnapshotNotExistError):
        m.create_tag("x")  # no snapshot yet
    m.commit("u", 1, new_files=[ff("a")])
    m.commit("u", 2, new_files=[ff("b")])
    m.create_tag("x")
    assert m.tags["x"].id == 2
    with pytest.raises(TagAlreadyExistError):
        m.create_tag("x", 1)
    assert m.tags["x"].id == 2
    with pytest.raises(InvalidTagNameError):
        m.create_tag("  ")
    m.expire(1, 1)
    with pytest.raises(SnapshotNotExistError):
        m.create_tag("y", 1)  # expired and no tag keeps it
    with pytest.raises(TagNotExistError):
        m.delete_tag("nope")
    with pytest.raises(TagNotExistError):
        m.read_tag("nope")


def test_rollback_drops_newer_snapshots_and_tags_and_restores_a_tagged_one():
    m = Model(primary_key=False)
    for i in range(5):
        m.commit("u", i, new_files=[ff(f"f{i}")])
    m.create_tag("t2", 2)
    m.create_tag("t4", 4)
    m.rollback_to(3)
    assert [s.id for s in m.snapshots] == [1, 2, 3] and sorted(m.tags) == ["t2"]
    m.expire(1, 1)
    m.rollback_to(2)  # expired, kept by t2
    assert [s.id for s in m.snapshots] == [2] and names(m.live()) == ["f0", "f1"]
    assert m.commit("u", 9, new_files=[ff("g")]) == [3]
    with pytest.raises(SnapshotNotExistError):
        m.rollback_to(1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["commit", "tag", "untag", "expire"]), st.integers(0, 9)),
                max_size=25))
def test_files_needed_covers_every_retained_and_tagged_snapshot(ops):
    """Invariant: whatever the order of commits, tags and expirations, a tag reads what its
    snapshot read when it was tagged, and storage keeps every file a retained snapshot or a
    tag reads."""
    m = Model(primary_key=False)
    n = 0
    at_tagging: dict[str, dict] = {}
    for op, x in ops:
        if op == "commit":
            live = list(m.live().values())
            n += 1
            m.commit("u", n, new_files=[ff(f"f{n}")], deleted_files=live[:1] if x % 2 else [])
        elif op == "tag" and m.snapshots:
            sid = m.snapshots[x % len(m.snapshots)].id
            if f"t{sid}" not in m.tags:
                at_tagging[f"t{sid}"] = dict(m.read(sid))
                m.create_tag(f"t{sid}", sid)
        elif op == "untag" and m.tags:
            name = sorted(m.tags)[x % len(m.tags)]
            m.delete_tag(name)
            del at_tagging[name]
        elif op == "expire" and m.snapshots:
            m.expire(1, max(1, x % 4))
        needed = m.files_needed()
        for name, live in at_tagging.items():
            assert dict(m.read_tag(name)) == live
            assert set(live) <= needed
        for s in m.snapshots:
            assert set(s.live) <= needed

"""Tags and branches: creation rules, reads by tag and on branches, and that expiration,
orphan removal, rollback and tag deletion never delete what a tag or another branch needs."""

from __future__ import annotations

import datetime as dt
import json
import posixpath
import time

import pyarrow as pa
import pytest
from table_helpers import data_files, sort_rows, write
from test_table_maintenance import batch, build_history, live_data_names

from impl.errors import (
    BranchAlreadyExistError,
    BranchNotExistError,
    BranchStateError,
    InvalidBranchNameError,
    InvalidOptionError,
    InvalidTagNameError,
    NoSnapshotError,
    SnapshotNotExistError,
    TagAlreadyExistError,
    TagNotExistError,
    UnsupportedTableFeatureError,
)
from impl.maintenance.cleanup import table_used_names, tag_names_used
from impl.snapshot.expire import tags_to_skip

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
FUTURE = int(time.time() * 1000) + 3_600_000


def rows_of(t, **opts) -> list[dict]:
    return sort_rows((t.copy(opts) if opts else t).to_arrow())


def at(t, snapshot_id: int) -> list[dict]:
    return rows_of(t, **{"scan.snapshot-id": str(snapshot_id)})


def by_tag(t, name: str) -> list[dict]:
    return rows_of(t, **{"scan.tag-name": name})


def names_on_disk(t) -> set[str]:
    return {posixpath.basename(p) for p in data_files(t)}


def listing(t, directory: str) -> list[str]:
    return sorted(t.file_io.list_names(directory))


@pytest.fixture
def history(catalog):
    """A partitioned append table with 12 snapshots (appends, an overwrite, a full compaction)
    and the rows each snapshot reads."""
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    return t, build_history(t)


# ============================================================================ tags


def test_create_tag_latest_and_by_id_and_read_by_tag(history):
    t, rows = history
    latest = t.create_tag("latest")
    third = t.create_tag("third", 3)
    assert (latest.snapshot.id, third.snapshot.id) == (12, 3)
    assert listing(t, t.paths.tag_dir) == ["tag-latest", "tag-third"]
    # the tag file is the snapshot's JSON, byte for byte, when the tag has no retention
    assert t.file_io.read_bytes(t.tag_manager().tag_path("third")) == t.file_io.read_bytes(t.paths.snapshot_path(3))
    assert by_tag(t, "third") == rows[3]
    assert by_tag(t, "latest") == rows[12]
    infos = {i.tag_name: i for i in t.list_tags()}
    assert infos["third"].snapshot_id == 3 and infos["third"].schema_id == 0
    assert infos["third"].record_count == t.snapshot(3).total_record_count
    assert infos["third"].commit_time == dt.datetime.fromtimestamp(t.snapshot(3).time_millis / 1000)
    assert infos["third"].create_time is None and infos["third"].time_retained is None
    assert [g.name for g in t.tags()] == ["latest", "third"]
    assert t.tags() == t.list_tags()  # one API: list_tags is the alias, each row is the Tag
    assert [g.snapshot for g in t.tags()] == [latest.snapshot, third.snapshot]
    assert t.tag_manager().tag_exists("third") and not t.tag_manager().tag_exists("nope")


def test_tag_with_retention_writes_paimon_tag_fields(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA)
    write(t, batch(0, 3))
    before = dt.datetime.now().replace(microsecond=0)
    t.create_tag("kept", time_retained="2 d")
    obj = json.loads(t.file_io.read_bytes(t.tag_manager().tag_path("kept")))
    assert obj["tagTimeRetained"] == 172800.0
    assert isinstance(obj["tagCreateTime"], list) and 5 <= len(obj["tagCreateTime"]) <= 7
    info = t.list_tags()[0]
    assert info.time_retained == dt.timedelta(days=2)
    assert before <= info.create_time <= dt.datetime.now()
    tag = t.tag_manager().get("kept")
    assert not tag.is_expired(dt.datetime.now())
    assert tag.is_expired(dt.datetime.now() + dt.timedelta(days=3))
    t.create_tag("short", time_retained=dt.timedelta(minutes=5))
    assert t.tag_manager().get("short").time_retained == dt.timedelta(minutes=5)


def test_create_tag_bad_input_writes_nothing(history):
    t, _ = history
    t.create_tag("a", 2)
    original = t.file_io.read_bytes(t.tag_manager().tag_path("a"))
    with pytest.raises(TagAlreadyExistError, match="'a'.*already exists"):
        t.create_tag("a", 5)
    assert t.file_io.read_bytes(t.tag_manager().tag_path("a")) == original
    assert t.create_tag("a", 5, ignore_if_exists=True).snapshot.id == 2  # the existing tag
    with pytest.raises(SnapshotNotExistError, match="snapshot 99"):
        t.create_tag("b", 99)
    for bad in ("", "   ", "a/b", "..", ".hidden", "x\\y", None):
        with pytest.raises(InvalidTagNameError):
            t.create_tag(bad)
    with pytest.raises(InvalidOptionError, match="time_retained"):
        t.create_tag("c", time_retained="soon")
    with pytest.raises(InvalidOptionError, match="snapshot_id"):
        t.create_tag("c", "3")
    assert listing(t, t.paths.tag_dir) == ["tag-a"]


def test_create_tag_on_empty_table_and_of_expired_snapshot(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    with pytest.raises(NoSnapshotError, match="no snapshot yet"):
        t.create_tag("x")
    for i in range(4):
        write(t, batch(i, i + 1))
    t.create_tag("two", 2)
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert [s.id for s in t.snapshots()] == [4]
    with pytest.raises(SnapshotNotExistError):
        t.create_tag("one", 1)  # expired, no tag holds it
    assert t.create_tag("two-again", 2).snapshot == t.tag_manager().get("two").snapshot  # a tag holds it


def test_scan_tag_name_rules(history):
    t, _ = history
    t.create_tag("a", 4)
    with pytest.raises(TagNotExistError, match="'nope'"):
        t.copy({"scan.tag-name": "nope"}).to_arrow()
    with pytest.raises(InvalidOptionError, match="scan.snapshot-id.*scan.tag-name"):
        t.copy({"scan.tag-name": "a", "scan.snapshot-id": "3"})
    with pytest.raises(TagNotExistError):
        t.delete_tag("nope")


def test_scan_version_reads_a_tag_else_a_snapshot(history):
    """scan.version (Spark's VERSION AS OF) as Paimon's TimeTravelUtil: a tag of that name wins,
    else all digits are a snapshot id; anything else is a missing tag, by name."""
    t, rows = history
    t.create_tag("a", 4)
    t.create_tag("7", 2)  # a tag named like a snapshot id wins over snapshot 7
    assert rows_of(t, **{"scan.version": "a"}) == rows[4]
    assert rows_of(t, **{"scan.version": "3"}) == rows[3]
    assert rows_of(t, **{"scan.version": "7"}) == rows[2]
    with pytest.raises(TagNotExistError, match="'nope'"):
        t.copy({"scan.version": "nope"}).to_arrow()
    with pytest.raises(SnapshotNotExistError):
        t.copy({"scan.version": "999"}).to_arrow()
    with pytest.raises(UnsupportedTableFeatureError, match="watermark"):
        t.copy({"scan.version": "watermark-5"}).to_arrow()
    with pytest.raises(InvalidOptionError, match="scan.snapshot-id.*scan.version"):
        t.copy({"scan.version": "a", "scan.snapshot-id": "3"})
    # the read builder's plan (what Spark, Ray and the CLI read through) pins the version's snapshot
    assert t.copy({"scan.version": "a"}).new_read_builder().new_scan().plan().snapshot_id == 4


# ============================================================================ expiration and tags


def test_expire_keeps_tagged_files_and_delete_tag_frees_them(history):
    t, rows = history
    t.create_tag("t3", 3)
    t.create_tag("t7", 7)
    t.create_tag("t7b", 7)  # two tags of one snapshot
    res = t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert res.expired_snapshot_ids == tuple(range(1, 12))
    assert [s.id for s in t.snapshots()] == [12]
    # the snapshot files of tagged snapshots are gone, the tags still read what they read
    assert not t.snapshot_manager().snapshot_exists(3)
    assert by_tag(t, "t3") == rows[3] and by_tag(t, "t7") == rows[7]
    assert rows_of(t) == rows[12]
    tags = [t.tag_manager().get(n) for n in ("t3", "t7", "t7b")]
    keep = live_data_names(t, t.latest_snapshot()).union(*(live_data_names(t, g.snapshot) for g in tags))
    assert names_on_disk(t) == keep  # expiration deleted everything else
    only_t3 = live_data_names(t, tags[0].snapshot) - live_data_names(t, tags[1].snapshot) \
        - live_data_names(t, t.latest_snapshot())
    assert only_t3  # the history makes t3 hold files nobody else does

    deleted = t.delete_tag("t3")
    assert {posixpath.basename(p) for p in deleted if p.endswith(".parquet")} == only_t3
    assert names_on_disk(t) == keep - only_t3
    assert by_tag(t, "t7") == rows[7] and rows_of(t) == rows[12]
    # no metadata file any remaining snapshot or tag needs was deleted
    assert not {posixpath.basename(p) for p in deleted} & table_used_names(t.core)
    # deleting one of two tags of a snapshot frees nothing
    assert t.delete_tag("t7b") == []
    assert by_tag(t, "t7") == rows[7]
    t.delete_tag("t7")
    assert names_on_disk(t) == live_data_names(t, t.latest_snapshot())
    assert t.tags() == []


def test_tags_to_skip_rule():
    # the newest tag at or before begin, and every tag before end
    assert tags_to_skip([2, 5, 9, 12], begin=6, end=11) == [5, 9]
    assert tags_to_skip([2, 5, 9, 12], begin=5, end=6) == [5]
    assert tags_to_skip([7, 9], begin=3, end=8) == [7]
    assert tags_to_skip([], begin=3, end=8) == []
    assert tags_to_skip([12], begin=3, end=8) == []


def test_expire_one_snapshot_at_a_time_keeps_older_tags(history):
    """Tags older than the expired range still keep their files: the newest tag at or before
    the range protects every file an older tag shares with the range."""
    t, rows = history
    t.create_tag("t2", 2)
    t.create_tag("t5", 5)
    for _ in range(11):
        t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=1)
        assert by_tag(t, "t2") == rows[2] and by_tag(t, "t5") == rows[5]
    assert [s.id for s in t.snapshots()] == [12]
    tagged = [t.tag_manager().get(n).snapshot for n in ("t2", "t5")]
    assert names_on_disk(t) == live_data_names(t, t.latest_snapshot()).union(
        *(live_data_names(t, s) for s in tagged))


def test_delete_tag_of_present_snapshot_removes_only_the_tag(history):
    t, rows = history
    t.create_tag("t5", 5)
    before = names_on_disk(t)
    assert t.delete_tag("t5") == []
    assert names_on_disk(t) == before and at(t, 5) == rows[5]
    assert listing(t, t.paths.tag_dir) == []


def test_orphan_removal_keeps_tag_and_branch_files(history):
    t, rows = history
    t.create_tag("t2", 2)
    t.create_branch("b", tag="t2")
    b = t.copy({"branch": "b"})
    write(b, batch(500, 505, "z"))
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    needed = tag_names_used(t.core, t.tags())
    assert t.remove_orphan_files(older_than_millis=FUTURE) == []
    assert needed <= names_on_disk(t) | {posixpath.basename(p) for p in t.file_io.walk_files(t.paths.manifest_dir)
                                         for p in [p.path]}
    assert by_tag(t, "t2") == rows[2]
    assert rows_of(b) == sorted(rows[2] + sort_rows(batch(500, 505, "z")),
                                key=lambda r: tuple((r[k] is None, r[k]) for k in r))
    # once the branch is deleted its own files become orphans
    branch_only = live_data_names(b, b.latest_snapshot()) - live_data_names(t, t.tag_manager().get("t2").snapshot)
    t.delete_branch("b")
    removed = {posixpath.basename(p) for p in t.remove_orphan_files(older_than_millis=FUTURE)}
    assert branch_only and branch_only <= removed
    assert by_tag(t, "t2") == rows[2] and rows_of(t) == rows[12]


# ============================================================================ rollback


def test_rollback_to_tag_drops_newer_snapshots_and_tags(history):
    t, rows = history
    t.create_tag("t4", 4)
    t.create_tag("t9", 9)
    t.rollback_to("t4")
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
    assert [g.name for g in t.tags()] == ["t4"]  # the tag of a newer snapshot went too (Paimon)
    assert rows_of(t) == rows[4]
    assert names_on_disk(t) == set().union(*(live_data_names(t, t.snapshot(i)) for i in range(1, 5)))
    write(t, batch(900, 901, "q"))
    assert t.latest_snapshot().id == 5


def test_rollback_to_tag_of_expired_snapshot(history):
    t, rows = history
    t.create_tag("t3", 3)
    t.expire_snapshots(retain_min=2, time_retained_ms=0, max_deletes=100)
    assert [s.id for s in t.snapshots()] == [11, 12]
    t.rollback_to(3)  # an id only a tag still holds
    assert [s.id for s in t.snapshots()] == [3]
    assert t.snapshot_manager().earliest_snapshot_id() == 3
    assert rows_of(t) == rows[3] and by_tag(t, "t3") == rows[3]
    assert names_on_disk(t) == live_data_names(t, t.snapshot(3))
    write(t, batch(900, 901, "q"))
    assert [s.id for s in t.snapshots()] == [3, 4]
    with pytest.raises(SnapshotNotExistError):
        t.rollback_to(1)
    with pytest.raises(TagNotExistError):
        t.rollback_to("nope")
    with pytest.raises(InvalidOptionError):
        t.rollback_to(2.5)


# ============================================================================ branches


def test_branch_from_tag_is_independent_of_main(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    write(t, batch(0, 5))
    write(t, batch(5, 10))
    t.create_tag("v1", 1)
    t.create_branch("dev", tag="v1")
    assert [b.name for b in t.branches()] == ["dev"] and [i.branch_name for i in t.list_branches()] == ["dev"]
    assert t.branches() == t.list_branches()  # one API: list_branches is the alias
    root = posixpath.join(t.path, "branch", "branch-dev")
    assert listing(t, root) == ["schema", "snapshot", "tag"]
    assert "snapshot-1" in listing(t, posixpath.join(root, "snapshot"))
    assert listing(t, posixpath.join(root, "tag")) == ["tag-v1"]
    dev = catalog.get_table("db.t$branch_dev")
    assert dev.branch == "dev" and dev.latest_snapshot().id == 1
    assert rows_of(dev) == sort_rows(batch(0, 5))
    write(dev, batch(100, 103, "x"))
    assert dev.latest_snapshot().id == 2
    # the branch's snapshot went to its own directory; main did not move
    assert "snapshot-2" in listing(t, posixpath.join(root, "snapshot"))
    assert t.latest_snapshot().id == 2 and rows_of(t) == sort_rows(batch(0, 10))
    assert rows_of(dev) == sort_rows(pa.concat_tables([batch(0, 5), batch(100, 103, "x")]))
    assert rows_of(t.copy({"branch": "dev"})) == rows_of(dev)
    # tags of the branch are its own
    dev.create_tag("dev-tag")
    assert [g.name for g in dev.tags()] == ["dev-tag", "v1"] and [g.name for g in t.tags()] == ["v1"]
    assert t.list_tags()[0].branches == ("dev",)


def test_branch_without_tag_starts_empty(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA)
    write(t, batch(0, 5))
    t.create_branch("empty")
    e = t.copy({"branch": "empty"})
    assert e.latest_snapshot() is None and e.to_arrow().num_rows == 0
    assert e.schema == t.schema
    write(e, batch(50, 52))
    assert [s.id for s in e.snapshots()] == [1]
    assert rows_of(e) == sort_rows(batch(50, 52)) and rows_of(t) == sort_rows(batch(0, 5))


def test_branch_bad_input(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA)
    write(t, batch(0, 5))
    t.create_tag("v1")
    for bad in ("main", "", "  ", "123", "a/b", ".x", "a$b", None):
        with pytest.raises(InvalidBranchNameError):
            t.create_branch(bad)
    with pytest.raises(TagNotExistError, match="'nope'"):
        t.create_branch("b1", tag="nope")
    assert not t.file_io.exists(posixpath.join(t.path, "branch"))  # a refused call wrote nothing
    t.create_branch("b1")
    with pytest.raises(BranchAlreadyExistError, match="'b1'"):
        t.create_branch("b1", tag="v1")
    t.create_branch("b1", ignore_if_exists=True)
    with pytest.raises(BranchNotExistError, match="'zz'"):
        local_catalog.get_table("db.t$branch_zz")
    with pytest.raises(BranchNotExistError):
        t.copy({"branch": "zz"})
    with pytest.raises(BranchNotExistError):
        t.delete_branch("zz")
    with pytest.raises(InvalidBranchNameError):
        t.delete_branch("main")
    with pytest.raises(BranchStateError, match="no snapshot"):
        t.fast_forward("b1")
    with pytest.raises(InvalidBranchNameError):
        t.fast_forward("main")
    with pytest.raises(BranchStateError, match="itself"):
        t.copy({"branch": "b1"}).fast_forward("b1")
    t.delete_branch("b1")
    assert t.branches() == []


def test_fast_forward_replaces_main_history(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    for i in range(4):
        write(t, batch(10 * i, 10 * i + 5))
    t.create_tag("t2", 2)
    t.create_tag("t4", 4)
    t.create_branch("dev", tag="t2")
    dev = t.copy({"branch": "dev"})
    write(dev, batch(100, 105, "x"))
    t.compact(full=True)  # main: snapshot 5
    dev.compact(full=True)  # dev: 2 (from the tag), 3, 4
    dev.create_tag("dev4")
    expected = rows_of(dev)
    t.fast_forward("dev")
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
    assert rows_of(t) == expected
    assert at(t, 1) == sort_rows(batch(0, 5))
    assert sorted(g.name for g in t.tags()) == ["dev4", "t2"]  # t4 (>= dev's earliest) replaced
    write(t, batch(900, 901, "q"))
    assert t.latest_snapshot().id == 5
    # main's snapshots the fast-forward dropped left orphans only: nothing still used goes
    t.remove_orphan_files(older_than_millis=FUTURE)
    assert rows_of(dev) == expected
    assert rows_of(t) == sorted(expected + sort_rows(batch(900, 901, "q")),
                                key=lambda r: tuple((r[k] is None, r[k]) for k in r))


def test_expiring_one_branch_keeps_the_other_branchs_files(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    for i in range(3):
        write(t, batch(10 * i, 10 * i + 5))
    t.create_tag("base")
    t.create_branch("dev", tag="base")
    dev = t.copy({"branch": "dev"})
    main_rows = rows_of(t)
    # the branch compacts main's files away and expires: main's files must stay
    dev.compact(full=True)
    write(dev, batch(100, 101, "x"))
    dev.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert rows_of(t) == main_rows
    # main does the same after dropping its tag: the branch's snapshots still need the files
    dev_rows = rows_of(dev)
    t.delete_tag("base")
    t.compact(full=True)
    write(t, batch(200, 201, "y"))
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert rows_of(dev) == dev_rows
    t.remove_orphan_files(older_than_millis=FUTURE)
    assert rows_of(dev) == dev_rows
    assert rows_of(t) == sorted(main_rows + sort_rows(batch(200, 201, "y")),
                                key=lambda r: tuple((r[k] is None, r[k]) for k in r))


def test_corrupt_tag_file_is_reported(local_catalog):
    from impl.errors import CorruptMetadataError
    t = local_catalog.create_table("db.t", schema=SCHEMA)
    write(t, batch(0, 3))
    t.create_tag("ok")
    t.file_io.write_bytes(t.tag_manager().tag_path("bad"), b"{not json")
    with pytest.raises(CorruptMetadataError, match="tag-bad"):
        t.copy({"scan.tag-name": "bad"}).to_arrow()
    obj = json.loads(t.file_io.read_bytes(t.tag_manager().tag_path("ok")))
    t.file_io.write_bytes(t.tag_manager().tag_path("neg"), json.dumps({**obj, "tagTimeRetained": -1}).encode())
    with pytest.raises(CorruptMetadataError, match="tagTimeRetained"):
        t.tag_manager().get("neg")
    t.file_io.write_bytes(t.tag_manager().tag_path("when"), json.dumps({**obj, "tagTimeRetained": 5,
                                                                 "tagCreateTime": "yesterday"}).encode())
    with pytest.raises(CorruptMetadataError, match="tagCreateTime"):
        t.tag_manager().get("when")
    # expiration refuses to guess what a corrupt tag keeps: it deletes nothing
    write(t, batch(3, 6))
    with pytest.raises(CorruptMetadataError):
        t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert [s.id for s in t.snapshots()] == [1, 2]


def test_deleting_main_tag_of_expired_snapshot_keeps_the_branch_made_from_it(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    for i in range(3):
        write(t, batch(10 * i, 10 * i + 5))
    t.create_tag("base", 1)
    t.create_branch("dev", tag="base")
    dev = t.copy({"branch": "dev"})
    t.compact(full=True)  # main's later deltas delete snapshot 1's file
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    dev_rows = rows_of(dev)
    assert dev_rows == sort_rows(batch(0, 5))
    deleted = t.delete_tag("base")  # the branch's snapshot and its copy of the tag still need the files
    assert not any(p.endswith(".parquet") for p in deleted)
    assert rows_of(dev) == dev_rows
    # the branch's own maintenance: tag, write, expire, roll back on the branch view
    dev.create_tag("d1")
    write(dev, batch(300, 302, "z"))
    dev.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert [s.id for s in dev.snapshots()] == [2]
    dev.rollback_to("d1")
    assert rows_of(dev) == dev_rows and [s.id for s in dev.snapshots()] == [1]
    assert "snapshot-1" in listing(t, dev.paths.snapshot_dir)
    assert rows_of(t) == sort_rows(pa.concat_tables([batch(0, 5), batch(10, 15), batch(20, 25)]))


def test_tag_create_time_encoding_matches_jackson():
    from impl.tag.tag import decode_local_datetime, encode_local_datetime
    cases = {
        dt.datetime(2024, 1, 2, 3, 4): [2024, 1, 2, 3, 4],  # trailing zero seconds and nanos omitted
        dt.datetime(2024, 1, 2, 3, 4, 5): [2024, 1, 2, 3, 4, 5],
        dt.datetime(2024, 1, 2, 3, 4, 0, 7): [2024, 1, 2, 3, 4, 0, 7000],  # nanos need the seconds
    }
    for ts, arr in cases.items():
        assert encode_local_datetime(ts) == arr
        assert decode_local_datetime(arr, "p") == ts
    assert decode_local_datetime([2024, 1, 2, 3, 4, 5, 123456789], "p") == dt.datetime(2024, 1, 2, 3, 4, 5, 123456)


def test_cleanup_neighbours_rule():
    from impl.maintenance.cleanup import cleanup_neighbours
    assert cleanup_neighbours(5, [2, 4, 9], earliest_id=7) == (4, 7)  # earliest before the next tag
    assert cleanup_neighbours(5, [2, 6, 9], earliest_id=7) == (2, 6)
    assert cleanup_neighbours(5, [], earliest_id=7) == (None, 7)
    assert cleanup_neighbours(5, [8], earliest_id=None) == (None, 8)


def test_delete_tag_whose_id_holds_another_snapshot_checks_everything(history):
    """A tag whose id a different present snapshot holds (not one linear history): its files
    are checked against every snapshot and tag, so nothing still read is deleted."""
    t, rows = history
    snap = t.snapshot(3)
    forged = json.loads(t.file_io.read_bytes(t.paths.snapshot_path(3)))
    forged["commitIdentifier"] = 424242
    t.file_io.write_bytes(t.tag_manager().tag_path("odd"), json.dumps(forged).encode())
    assert t.tag_manager().get("odd").snapshot != snap
    deleted = t.delete_tag("odd")
    assert deleted == []  # snapshot 3 itself still uses every file the forged tag names
    for sid in range(1, 13):
        assert at(t, sid) == rows[sid]


def test_delete_newer_tag_keeps_files_an_older_tag_shares(history):
    """Deleting the newer of two tags of expired snapshots keeps what the older one still reads
    (its left neighbour), and frees only what neither the older tag nor the table needs."""
    t, rows = history
    t.create_tag("t3", 3)
    t.create_tag("t7", 7)
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    t3, t7 = (t.tag_manager().get(n).snapshot for n in ("t3", "t7"))
    shared = live_data_names(t, t3) & live_data_names(t, t7)
    assert shared  # the history keeps snapshot 1's file live up to the compaction
    deleted = {posixpath.basename(p) for p in t.delete_tag("t7")}
    assert not deleted & shared
    assert deleted == live_data_names(t, t7) - live_data_names(t, t3) - live_data_names(t, t.latest_snapshot()) \
        | (deleted - {n for n in deleted if n.endswith(".parquet")})
    assert by_tag(t, "t3") == rows[3] and rows_of(t) == rows[12]


def test_delete_tag_keeps_files_the_table_still_reads(local_catalog):
    """The tag's files that the earliest retained snapshot still reads (its right neighbour)
    stay; nothing the table reads is deleted."""
    t = local_catalog.create_table("db.t", schema=SCHEMA)
    for i in range(5):
        write(t, batch(i * 10, i * 10 + 2))
    t.create_tag("t2", 2)
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert [s.id for s in t.snapshots()] == [5]
    before = names_on_disk(t)
    assert live_data_names(t, t.tag_manager().get("t2").snapshot) <= live_data_names(t, t.latest_snapshot())
    deleted = t.delete_tag("t2")
    assert not any(p.endswith(".parquet") for p in deleted)
    assert names_on_disk(t) == before and rows_of(t) == sort_rows(pa.concat_tables([batch(i * 10, i * 10 + 2)
                                                                                    for i in range(5)]))


def test_system_tables_of_a_branch(catalog, history):
    """``db.t$branch_b$snapshots`` / ``$tags`` describe the branch, not main; a missing branch
    is refused by name."""
    t, rows = history
    t.create_tag("third", 3)
    t.create_branch("b", tag="third")
    branch = catalog.get_table("db.t$branch_b")
    branch.create_tag("on-branch")
    main_snapshots = catalog.get_table("db.t$snapshots").to_arrow()
    branch_snapshots = catalog.get_table("db.t$branch_b$snapshots").to_arrow()
    assert main_snapshots.column("snapshot_id").to_pylist() == list(range(1, 13))
    assert branch_snapshots.column("snapshot_id").to_pylist() == [3]
    assert catalog.get_table("db.t$tags").to_arrow().column("tag_name").to_pylist() == ["third"]
    assert sorted(catalog.get_table("db.t$branch_b$tags").to_arrow().column("tag_name").to_pylist()) == [
        "on-branch", "third"]
    with pytest.raises(BranchNotExistError, match="nope"):
        catalog.get_table("db.t$branch_nope$snapshots")


# ============================================================================ a tag creator that dies


class _Died(BaseException):
    """The creating process dying: nothing after this point of create_tag runs."""


def _die_before_publishing(monkeypatch):
    """create_tag dies once its pending tag is written, before confirming and publishing: the
    pending file stays (a dead process cleans nothing up)."""
    import impl.maintenance.tags as tags_module
    from impl.fs.file_io import FileIO

    def die(*_):
        raise _Died()

    monkeypatch.setattr(tags_module, "_still_held", die)
    original = FileIO.delete_quietly

    def keep_pending(self, paths):
        return original(self, [p for p in paths if "pending-tag-" not in posixpath.basename(p)])

    monkeypatch.setattr(FileIO, "delete_quietly", keep_pending)


def _snapshot_data_names(t, snapshot_id: int) -> set[str]:
    from impl.read.scan import SnapshotReader
    snap = t.core.snapshot_manager.snapshot(snapshot_id)
    return {e.file.file_name for e in SnapshotReader(t.core).live_entries(snap)}


def _pending(t) -> list[str]:
    return [n for n in listing(t, t.paths.tag_dir) if n.startswith("pending-tag-")]


def test_a_tag_creator_dying_before_publishing_leaves_no_tag_and_its_files_kept(history, monkeypatch):
    """A creator that dies after writing its pending tag: no tag is visible (none was
    acknowledged); an expiration of the snapshot meanwhile keeps its files (the pending tag
    protects them, the creator could still have published); orphan removal then deletes the
    stale pending tag and the files only it kept, and the table reads on."""
    t, rows = history
    third = _snapshot_data_names(t, 3)
    _die_before_publishing(monkeypatch)
    with pytest.raises(_Died):
        t.create_tag("three", 3)
    monkeypatch.undo()
    assert t.list_tags() == [] and len(_pending(t)) == 1
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert not t.core.snapshot_manager.snapshot_exists(3)
    assert third <= names_on_disk(t), "an expiration deleted files a pending tag keeps"
    latest = live_data_names(t, t.latest_snapshot())
    removed = {posixpath.basename(p) for p in t.remove_orphan_files(older_than_millis=FUTURE)}
    assert _pending(t) == [] and any(n.startswith("pending-tag-") for n in removed)
    assert names_on_disk(t) == latest and third - latest <= removed
    assert sort_rows(t.to_arrow()) == rows[12]


def test_a_tag_creator_dying_after_an_expiration_took_its_snapshot_leaves_no_tag(history, monkeypatch):
    """apache/paimon#9220 with a crash: the creator reads snapshot 3, an expiration deletes it
    and its files before the pending tag is written, and the creator dies before confirming.
    Before pending tags the tag itself was written first, and stayed pointing at deleted files;
    now nothing is tagged, later expirations read the pending tag without its files, and orphan
    removal deletes it."""
    import impl.maintenance.tags as tags_module
    t, rows = history
    original = tags_module.snapshot_to_tag

    def read_then_expire(core, snapshot_id):
        snap = original(core, snapshot_id)
        t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
        return snap

    monkeypatch.setattr(tags_module, "snapshot_to_tag", read_then_expire)
    _die_before_publishing(monkeypatch)
    with pytest.raises(_Died):
        t.create_tag("three", 3)
    monkeypatch.undo()
    assert t.list_tags() == [] and len(_pending(t)) == 1
    write(t, batch(900, 901))
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)  # reads the pending tag, skips what is gone
    removed = t.remove_orphan_files(older_than_millis=FUTURE)
    assert _pending(t) == [] and any("pending-tag-" in p for p in removed)
    assert len(t.to_arrow()) == len(rows[12]) + 1


def _publish_on_first_read(monkeypatch, t, pending: str, name: str) -> list[str]:
    """From now on, the first read of the pending tag file ``pending`` finds it published as
    tag ``name`` (tag written, pending file deleted) just before: the read fails as the file is
    gone. Returns the list that records that it happened."""
    from impl.fs.file_io import FileIO
    original = FileIO.read_bytes
    published: list[str] = []

    def publish_first(self, path):
        if path == pending and not published:
            published.append(path)
            self.write_bytes(t.tag_manager().tag_path(name), original(self, path))
            self.delete(path)
        return original(self, path)

    monkeypatch.setattr(FileIO, "read_bytes", publish_first)
    return published


def test_an_expiration_lists_the_tags_again_when_a_pending_tag_vanishes(history, monkeypatch):
    """A pending tag published (tag written, pending file deleted) between the expiration's
    listing and its read of the pending file: the tag directory is listed again, and the
    published tag is among the tags whose files are kept."""
    t, _ = history
    tags = t.core.tag_manager
    snap = t.core.snapshot_manager.snapshot(3)
    pending = t.paths.pending_tag_path("p1")
    t.file_io.write_bytes(pending, t.file_io.read_bytes(t.paths.snapshot_path(3)))
    published = _publish_on_first_read(monkeypatch, t, pending, "three")
    own, pend, listed = tags.protecting_tags()
    assert published and [x.name for x in own] == ["three"] and own[0].snapshot == snap and pend == []
    assert "tag-three" in listed


def test_an_expiration_gives_up_naming_the_cause_when_pending_tags_keep_vanishing(history, monkeypatch):
    """Every listing finds a pending tag that is gone when read: the protection reading raises
    TagsUnsettledError, and the expiration deletes nothing for it."""
    from impl.errors import TagsUnsettledError
    from impl.fs.file_io import FileIO
    t, rows = history
    t.file_io.write_bytes(t.paths.pending_tag_path("p1"), t.file_io.read_bytes(t.paths.snapshot_path(3)))
    original = FileIO.read_bytes

    def gone(self, path):
        if "pending-tag-" in posixpath.basename(path):
            raise FileNotFoundError(path)
        return original(self, path)

    monkeypatch.setattr(FileIO, "read_bytes", gone)
    before = names_on_disk(t)
    with pytest.raises(TagsUnsettledError, match="retry"):
        t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert names_on_disk(t) == before
    monkeypatch.undo()
    assert sort_rows(t.to_arrow()) == rows[12]


def test_orphan_removal_keeps_the_files_of_a_pending_tag_published_while_it_reads(history, monkeypatch):
    """A pending tag whose snapshot expired is published (tag written, pending file deleted)
    while orphan removal reads the tags: the tags and pending tags come from one reading, which
    lists again when a pending file vanishes, so the published tag's files stay."""
    t, rows = history
    third = _snapshot_data_names(t, 3)
    pending = t.paths.pending_tag_path("p1")
    t.file_io.write_bytes(pending, t.file_io.read_bytes(t.paths.snapshot_path(3)))
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert third <= names_on_disk(t)  # the pending tag kept them through the expiration
    published = _publish_on_first_read(monkeypatch, t, pending, "three")
    t.remove_orphan_files(older_than_millis=FUTURE)
    monkeypatch.undo()
    assert published and third <= names_on_disk(t)
    assert by_tag(t, "three") == rows[3]

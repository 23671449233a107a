"""Dynamic bucket mode (bucket = -1 on a primary-key table): HASH index files, the assigner,
index conflicts at commit, overwrite, compaction and expiration."""

from __future__ import annotations

import posixpath
import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from table_helpers import read, sort_rows, write

from impl.bucket.routing import row_hashes
from impl.errors import CorruptMetadataError, IndexFileConflictError
from impl.manifest.records import IndexType
from impl.read.scan import SnapshotReader
from impl.write.dynamic_bucket import (
    DynamicBucketError,
    PartitionIndex,
    decode_hash_index,
    encode_hash_index,
    hash_index_entries,
)

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    pa.field("v", pa.string())])


def rows(dt: str, ids, v: str = "x") -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids]},
                    schema=SCHEMA)


def make(catalog, target: int = 4, **options):
    opts = {"dynamic-bucket.target-row-num": str(target), **{k: str(v) for k, v in options.items()}}
    return catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options=opts)


def id_hash(ids) -> np.ndarray:
    """The key hash of ids: BinaryRow hash of the trimmed primary key (id)."""
    from impl.data.types import DataType
    return row_hashes([pa.array(list(ids), pa.int64())], [DataType("BIGINT", False)])


def bucket_of_keys(t) -> dict[tuple[str, int], set[int]]:
    """(dt, id) -> buckets whose live data files hold that key."""
    out: dict[tuple[str, int], set[int]] = {}
    for s in t.new_read_builder().new_scan().plan().splits():
        dt = t.partition_cache.path(s.partition).split("=")[1]
        part = t.new_read_builder().new_read().to_arrow([s])
        for i in part.column("id").to_pylist():
            out.setdefault((dt, i), set()).add(s.bucket)
    return out


def index_by_bucket(t, snapshot=None) -> dict[tuple[str, int], set[int]]:
    """(dt, bucket) -> key hashes of its live HASH index file."""
    from impl.write.dynamic_bucket import HashIndexFile
    snap = snapshot or t.latest_snapshot()
    files = HashIndexFile(t.file_io, t.paths)
    return {(t.partition_cache.path(e.partition).split("=")[1], e.bucket): set(files.read(e.index_file).tolist())
            for e in hash_index_entries(t.core, snap)}


def check_index_matches_data(t) -> None:
    """Every live key sits in exactly one bucket, and that bucket's HASH index holds its hash."""
    keys = bucket_of_keys(t)
    assert all(len(b) == 1 for b in keys.values()), {k: b for k, b in keys.items() if len(b) > 1}
    index = index_by_bucket(t)
    for (dt, i), (b,) in keys.items():
        assert int(id_hash([i])[0]) in index[(dt, b)]
    # and no hash is listed by two buckets of one partition
    per_part: dict[str, Counter] = {}
    for (dt, _), hashes in index.items():
        per_part.setdefault(dt, Counter()).update(hashes)
    assert all(c == 1 for counter in per_part.values() for c in counter.values())


# ============================================================================ the rule, in isolation


def test_partition_index_keeps_known_keys_and_fills_buckets_in_id_order():
    idx = PartitionIndex.of(np.array([10, 11, 12], np.int32), np.array([0, 0, 1], np.int32), target_row_num=3)
    # 11 known (bucket 0); 20, 21 new: bucket 0 has room for one, bucket 1 for two
    out = idx.assign(np.array([20, 11, 21, 20, 22, 23, 24], np.int32))
    assert out.tolist() == [0, 0, 1, 0, 1, 2, 2]  # 22 fills bucket 1, 23 and 24 open bucket 2
    assert idx.bucket_counts() == {0: 3, 1: 3, 2: 2}
    # a second call sees what the first assigned
    assert idx.assign(np.array([24, 25, 26], np.int32)).tolist() == [2, 2, 3]


def test_partition_index_opens_the_smallest_unused_bucket():
    idx = PartitionIndex.of(np.array([1, 2], np.int32), np.array([0, 2], np.int32), target_row_num=1)
    assert idx.assign(np.array([5, 6, 7], np.int32)).tolist() == [1, 3, 4]


def test_partition_index_past_max_buckets_picks_existing_buckets():
    idx = PartitionIndex.of(np.empty(0, np.int32), np.empty(0, np.int32), target_row_num=2, max_buckets=2,
                            rng=random.Random(7))
    out = idx.assign(np.arange(100, 110, dtype=np.int32))
    assert out[:4].tolist() == [0, 0, 1, 1]
    assert set(out[4:].tolist()) <= {0, 1}
    # the fallback is still sticky: known keys keep their bucket
    assert idx.assign(np.arange(100, 110, dtype=np.int32)).tolist() == out.tolist()


def test_partition_index_out_of_bucket_ids_is_a_typed_error():
    full = np.arange(32767, dtype=np.int32)
    idx = PartitionIndex.of(full, full, target_row_num=1)
    with pytest.raises(DynamicBucketError, match="target-row-num"):
        idx.assign(np.array([-5], np.int32))


def test_hash_index_bytes_are_big_endian_int32():
    data = encode_hash_index(np.array([3, -1, 256], np.int32))
    assert data == bytes.fromhex("ffffffff" "00000003" "00000100")
    assert decode_hash_index(data, "p").tolist() == [-1, 3, 256]
    with pytest.raises(CorruptMetadataError, match="whole number"):
        decode_hash_index(data[:-1], "index-x")


# ============================================================================ through the table


def test_default_primary_key_table_is_dynamic_and_round_trips(catalog):
    t = catalog.create_table("db.d", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"])
    assert t.options.bucket == -1 and t.bucket_mode().value == "HASH_DYNAMIC"
    write(t, rows("a", range(5)))
    write(t, rows("a", [2, 3], "y"))
    assert sort_rows(read(t), ["id"]) == sort_rows(pa.concat_tables([rows("a", [0, 1, 4]), rows("a", [2, 3], "y")]),
                                                   ["id"])
    (e,) = hash_index_entries(t.core, t.latest_snapshot())
    assert e.bucket == 0 and e.index_file.index_type == IndexType.HASH and e.index_file.row_count == 5
    name = e.index_file.file_name
    assert name.startswith("index-") and t.file_io.exists(posixpath.join(t.path, "index", name))
    live = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert {(x.bucket, x.total_buckets) for x in live} == {(0, -1)}


def test_keys_stay_in_their_bucket_and_new_keys_open_buckets(catalog):
    t = make(catalog, target=4)
    write(t, rows("a", range(6)))  # 0..3 -> bucket 0, 4, 5 -> bucket 1
    write(t, rows("b", range(3)))
    assert {k: b for k, b in index_by_bucket(t).items()} == {
        ("a", 0): set(id_hash(range(4)).tolist()), ("a", 1): set(id_hash([4, 5]).tolist()),
        ("b", 0): set(id_hash(range(3)).tolist())}
    # updates of old keys and new keys mixed, in an order that would send the old ones elsewhere
    write(t, rows("a", [9, 8, 0, 5, 7, 1, 6], "u"))
    keys = bucket_of_keys(t)
    assert keys[("a", 0)] == {0} and keys[("a", 1)] == {0} and keys[("a", 5)] == {1}
    assert [keys[("a", i)] for i in (9, 8)] == [{1}, {1}]  # bucket 1 had room for two
    assert [keys[("a", i)] for i in (7, 6)] == [{2}, {2}]
    check_index_matches_data(t)
    counts = Counter(b for (dt, _), (b,) in ((k, v) for k, v in keys.items()) if dt == "a")
    assert max(counts.values()) <= 4
    assert len(read(t)) == 10 + 3


def test_each_commit_replaces_the_changed_buckets_index_files(catalog):
    t = make(catalog, target=4)
    write(t, rows("a", range(6)))
    before = {e.bucket: e.index_file.file_name for e in hash_index_entries(t.core, t.latest_snapshot())}
    stats = write(t, rows("a", [0, 6]))  # 0 known (bucket 0: unchanged index), 6 new -> bucket 1
    after = {e.bucket: e.index_file.file_name for e in hash_index_entries(t.core, t.latest_snapshot())}
    assert after[0] == before[0] and after[1] != before[1]
    assert len(stats.snapshot_ids) == 1  # index changes ride in the APPEND snapshot with the data
    # writing only known keys changes no index file
    write(t, rows("a", [1, 2], "z"))
    assert {e.bucket: e.index_file.file_name for e in hash_index_entries(t.core, t.latest_snapshot())} == after


def test_streaming_write_commits_index_changes_per_commit(catalog):
    t = make(catalog, target=3)
    wb = t.new_stream_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(rows("a", range(4)))
        c.commit(w.prepare_commit(1), 1)
        w.write_arrow(rows("a", [4, 5, 0], "s"))
        c.commit(w.prepare_commit(2), 2)
    finally:
        w.close()
        c.close()
    assert {b: len(h) for (_, b), h in index_by_bucket(t).items()} == {0: 3, 1: 3}
    check_index_matches_data(t)


def test_two_writers_opening_the_same_bucket_conflict_and_the_loser_writes_nothing(catalog):
    t = make(catalog, target=4)
    write(t, rows("a", range(2)))
    w1b, w2b = t.new_batch_write_builder(), t.new_batch_write_builder()
    w1, w2 = w1b.new_write(), w2b.new_write()
    w1.write_arrow(rows("a", [10, 11]))  # both assign their new keys to bucket 0 of the same index
    w2.write_arrow(rows("a", [20, 21]))
    m1, m2 = w1.prepare_commit(), w2.prepare_commit()
    w1b.new_commit().commit(m1)
    latest = t.latest_snapshot().id
    manifests = set(t.file_io.list_names(t.paths.manifest_dir))
    with pytest.raises(IndexFileConflictError, match=r"index of partition \{dt='a'\} changed since this writer"):
        w2b.new_commit().commit(m2)
    assert t.latest_snapshot().id == latest
    assert set(t.file_io.list_names(t.paths.manifest_dir)) == manifests
    # the loser aborts: its data and index files go, the winner's stay
    index_names = set(t.file_io.list_names(t.paths.index_dir))
    w2b.new_commit().abort(m2)
    lost = {f.file_name for m in m2 for f in m.new_index_files}
    assert lost and set(t.file_io.list_names(t.paths.index_dir)) == index_names - lost
    check_index_matches_data(t)
    assert sorted(read(t).column("id").to_pylist()) == [0, 1, 10, 11]


def test_two_writers_creating_a_partitions_first_bucket_conflict(catalog):
    t = make(catalog, target=4)
    w1b, w2b = t.new_batch_write_builder(), t.new_batch_write_builder()
    w1, w2 = w1b.new_write(), w2b.new_write()
    w1.write_arrow(rows("a", [1]))
    w2.write_arrow(rows("a", [1, 2]))  # key 1 would end up in bucket 0 twice with different indexes
    m1, m2 = w1.prepare_commit(), w2.prepare_commit()
    w1b.new_commit().commit(m1)
    with pytest.raises(IndexFileConflictError, match=r"0 file\(s\) then, 1 now"):
        w2b.new_commit().commit(m2)
    check_index_matches_data(t)


def test_rows_routed_by_an_index_an_overwrite_replaced_conflict(catalog):
    # the writer's key 5 is known (bucket 1); an overwrite rebuilds the partition and puts key 5
    # into bucket 0: committing the writer's row into bucket 1 would keep key 5 twice
    t = make(catalog, target=2)
    write(t, rows("a", range(4)))
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(rows("a", [3], "late"))  # known key: no index change, only a view
    m = w.prepare_commit()
    assert not any(x.new_index_files for x in m) and all(x.hash_index_view for x in m)
    write(t, rows("a", [3, 9], "o"), overwrite={"dt": "a"})
    with pytest.raises(IndexFileConflictError, match="changed since"):
        wb.new_commit().commit(m)
    check_index_matches_data(t)


def test_index_rules_without_views_as_pypaimon_commits_them():
    # rules 5 and 6 alone (messages without hash_index_view, as another writer may send)
    from impl.commit.conflicts import check_index_conflicts
    from impl.manifest.records import FileKind, IndexFileMeta, IndexManifestEntry, IndexType

    def e(kind, name, bucket=0):
        return IndexManifestEntry(kind, b"p", bucket, IndexFileMeta(IndexType.HASH, name, 4, 1))

    live = [e(FileKind.ADD, "h0"), e(FileKind.ADD, "h1", 1)]
    check_index_conflicts(live, [e(FileKind.DELETE, "h0"), e(FileKind.ADD, "h0b"), e(FileKind.ADD, "h2", 2)])
    with pytest.raises(IndexFileConflictError, match="h9.*not live"):
        check_index_conflicts(live, [e(FileKind.DELETE, "h9"), e(FileKind.ADD, "h0b")])
    with pytest.raises(IndexFileConflictError, match="built without h0"):
        check_index_conflicts(live, [e(FileKind.ADD, "h0b")])
    with pytest.raises(IndexFileConflictError, match="in one commit"):
        check_index_conflicts(live, [e(FileKind.ADD, "x", 2), e(FileKind.ADD, "y", 2)])
    with pytest.raises(IndexFileConflictError, match="changed since"):
        check_index_conflicts(live, [], {b"p": frozenset({"h0"})})
    check_index_conflicts(live, [], {b"p": frozenset({"h0", "h1"}), b"q": frozenset()})


def test_writers_on_different_partitions_do_not_conflict(catalog):
    t = make(catalog, target=4)
    w1b, w2b = t.new_batch_write_builder(), t.new_batch_write_builder()
    w1, w2 = w1b.new_write(), w2b.new_write()
    w1.write_arrow(rows("a", [1, 2]))
    w2.write_arrow(rows("b", [1, 2]))
    m1, m2 = w1.prepare_commit(), w2.prepare_commit()
    w1b.new_commit().commit(m1)
    w2b.new_commit().commit(m2)
    check_index_matches_data(t)
    assert len(read(t)) == 4


def test_overwrite_drops_the_partitions_index(catalog):
    t = make(catalog, target=2)
    write(t, rows("a", range(5)))  # buckets 0, 1, 2
    write(t, rows("b", range(3)))
    write(t, rows("a", [7, 8, 9], "o"), overwrite={"dt": "a"})
    index = index_by_bucket(t)
    assert index[("a", 0)] == set(id_hash([7, 8]).tolist()) and index[("a", 1)] == set(id_hash([9]).tolist())
    assert ("a", 2) not in index  # bucket 2 lost its data and its index
    assert index[("b", 0)] == set(id_hash([0, 1]).tolist())
    check_index_matches_data(t)
    assert sorted(r["id"] for r in read(t).to_pylist() if r["dt"] == "a") == [7, 8, 9]
    # a later write of an old key of "a" treats it as new (its old row is gone)
    write(t, rows("a", [0]))
    check_index_matches_data(t)


def test_compaction_keeps_the_index(catalog):
    t = make(catalog, target=3)
    for i in range(4):
        write(t, rows("a", range(i, i + 5), f"r{i}"))
    index = index_by_bucket(t)
    before = sort_rows(read(t))
    assert t.compact(full=True) is not None
    assert index_by_bucket(t) == index
    assert sort_rows(read(t)) == before
    check_index_matches_data(t)


def test_expiration_deletes_only_unreferenced_index_files(catalog):
    t = make(catalog, target=3)
    for i in range(5):
        write(t, rows("a", range(2 * i, 2 * i + 2)))
    index_dir = posixpath.join(t.path, "index")
    written = set(t.file_io.list_names(index_dir))
    live = {e.index_file.file_name for e in hash_index_entries(t.core, t.latest_snapshot())}
    t.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)
    left = set(t.file_io.list_names(index_dir))
    assert left == live and written > live
    check_index_matches_data(t)
    write(t, rows("a", [0, 100]))
    check_index_matches_data(t)


def test_data_in_a_bucket_without_index_is_refused(catalog):
    t = make(catalog, target=3)
    write(t, rows("a", range(4)))
    # drop the HASH index of the partition from the metadata, as an old writer might have left it
    from impl.commit.file_store_commit import FileStoreCommit
    from impl.commit.messages import CommitMessage
    entries = hash_index_entries(t.core, t.latest_snapshot())
    commit = FileStoreCommit(t.file_io, t.path, t.schema)
    commit.commit([CommitMessage(e.partition, e.bucket, -1, deleted_index_files=(e.index_file,)) for e in entries])
    assert not hash_index_entries(t.core, t.latest_snapshot())
    w = t.new_batch_write_builder().new_write()
    with pytest.raises(DynamicBucketError, match=r"dt=a.*no HASH index.*overwrite"):
        w.write_arrow(rows("a", [1]))
    w.close()


def test_rollback_restores_the_index_of_the_snapshot(catalog):
    t = make(catalog, target=2)
    write(t, rows("a", range(3)))
    sid = t.latest_snapshot().id
    index = index_by_bucket(t)
    write(t, rows("a", range(3, 7)))
    write(t, rows("a", [0, 9]))
    t.rollback_to(sid)
    assert index_by_bucket(t) == index
    check_index_matches_data(t)
    # the files only later snapshots used are gone; later writes start from the restored index
    listed = {e.index_file.file_name for e in hash_index_entries(t.core, t.latest_snapshot())}
    assert set(t.file_io.list_names(t.paths.index_dir)) == listed
    write(t, rows("a", [1, 5]))
    check_index_matches_data(t)
    assert sorted(read(t).column("id").to_pylist()) == [0, 1, 2, 5]

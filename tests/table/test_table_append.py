"""Append tables: round trips, overwrite, predicates and projection, stats pruning, rolling, compaction."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from table_helpers import data_files, read, sort_rows, write

from impl.data.binary_row import decode_row
from impl.data.types import BIGINT, DOUBLE, STRING
from impl.read.scan import SnapshotReader
from impl.snapshot.records import CommitKind

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("k", pa.string()), ("v", pa.float64())])


def make_data(n: int, seed: int = 0, dts=("2024-01-01", "2024-01-02", "2024-01-03")) -> pa.Table:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=n)
    mask = rng.random(n) < 0.1
    return pa.table({
        "dt": pa.array([dts[i % len(dts)] for i in range(n)]),
        "id": pa.array(np.arange(n) + seed * 100_000, pa.int64()),
        "k": pa.array([f"key-{i % 37}" if i % 11 else None for i in range(n)]),
        "v": pa.array(v, mask=mask),
    })


def test_unpartitioned_round_trip(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    d1, d2 = make_data(100, 1), make_data(50, 2)
    write(t, d1)
    write(t, d2)
    got = catalog.get_table("db.t").to_arrow()
    assert got.schema == t.arrow_schema
    assert sort_rows(got) == sort_rows(pa.concat_tables([d1, d2]))
    # bucket-unaware layout, as pypaimon's append_t: bucket-0, total buckets -1
    entries = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert {(e.bucket, e.total_buckets) for e in entries} == {(0, -1)}
    assert all("/bucket-0/data-" in p for p in data_files(t))
    snap = t.latest_snapshot()
    assert snap.id == 2 and snap.total_record_count == 150 and snap.delta_record_count == 50


def test_partitioned_round_trip_and_layout(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    d = make_data(300)
    write(t, d)
    assert sort_rows(t.to_arrow()) == sort_rows(d)
    files = data_files(t)
    assert len(files) == 3
    assert {f.split("/")[-3] for f in files} == {"dt=2024-01-01", "dt=2024-01-02", "dt=2024-01-03"}
    entries = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    parts = {decode_row(e.partition, [STRING(False)]) for e in entries}
    assert parts == {("2024-01-01",), ("2024-01-02",), ("2024-01-03",)}


def test_fixed_bucket_round_trip(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"],
                             options={"bucket": "4", "bucket-key": "id"})
    d = make_data(400)
    write(t, d)
    assert sort_rows(t.to_arrow()) == sort_rows(d)
    entries = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert {e.total_buckets for e in entries} == {4}
    assert {e.bucket for e in entries} == {0, 1, 2, 3}
    # every row sits in the bucket its id hashes to
    from impl.bucket.routing import compute_buckets
    for e in entries:
        path = t.core.paths.data_file_path(t.core.partition_cache.path(e.partition), e.bucket, e.file.file_name)
        import pyarrow.parquet as pq
        rows = pq.read_table(pa.BufferReader(t.file_io.read_bytes(path)))
        assert set(compute_buckets([rows.column("id")], [BIGINT(False)], 4).tolist()) == {e.bucket}
    # equality on the bucket key reads one bucket
    pb = t.new_read_builder().new_predicate_builder()
    plan = t.new_read_builder().with_filter(pb.equal("id", 7)).new_scan().plan()
    assert len({s.bucket for s in plan.splits()}) == 1
    assert read(t, pb.equal("id", 7)).column("id").to_pylist() == [7]


def test_record_batch_and_column_order(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    d = make_data(20)
    shuffled = d.select(["v", "k", "id", "dt"])
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    for batch in shuffled.to_batches(max_chunksize=7):
        w.write_arrow(batch)
    c.commit(w.prepare_commit())
    w.close()
    assert sort_rows(t.to_arrow()) == sort_rows(d)


def test_overwrite_partition_and_whole_table(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    write(t, make_data(90, 0))
    new_day1 = make_data(5, 9, dts=("2024-01-01",))
    write(t, new_day1, overwrite={"dt": "2024-01-01"})
    assert t.latest_snapshot().commit_kind is CommitKind.OVERWRITE
    got = t.to_arrow()
    day1 = got.filter(pc.equal(got["dt"], "2024-01-01"))
    assert sort_rows(day1) == sort_rows(new_day1)
    assert got.num_rows == 60 + 5
    # static overwrite with no rows empties that partition
    write(t, SCHEMA.empty_table(), overwrite={"dt": "2024-01-02"})
    assert set(t.to_arrow().column("dt").to_pylist()) == {"2024-01-01", "2024-01-03"}
    # a whole-table overwrite of a partitioned table: dynamic (Paimon default) replaces only the
    # partitions that get rows...
    d4 = make_data(4, 4, dts=("2024-01-04",))
    write(t, d4, overwrite={})
    assert set(t.to_arrow().column("dt").to_pylist()) == {"2024-01-01", "2024-01-03", "2024-01-04"}
    # ... and with dynamic-partition-overwrite=false the whole table
    write(t.copy({"dynamic-partition-overwrite": "false"}), d4, overwrite={})
    assert sort_rows(t.to_arrow()) == sort_rows(d4)


def test_overwrite_unpartitioned(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    write(t, make_data(30))
    d = make_data(3, 5)
    write(t, d, overwrite={})
    assert sort_rows(t.to_arrow()) == sort_rows(d)
    write(t, SCHEMA.empty_table(), overwrite={})
    assert t.to_arrow().num_rows == 0


def test_overwrite_with_rows_of_other_partition_writes_nothing(catalog):
    from impl.errors import OverwritePartitionError
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    write(t, make_data(30))
    before = data_files(t)
    with pytest.raises(OverwritePartitionError):
        write(t, make_data(10, 3), overwrite={"dt": "2024-01-01"})
    assert data_files(t) == before
    assert t.latest_snapshot().id == 1


PREDICATES = [
    lambda pb: pb.equal("id", 17),
    lambda pb: pb.not_equal("k", "key-3"),
    lambda pb: pb.less_than("v", 0.0),
    lambda pb: pb.less_or_equal("id", 10),
    lambda pb: pb.greater_than("id", 250),
    lambda pb: pb.greater_or_equal("v", 1.0),
    lambda pb: pb.is_in("k", ["key-1", "key-2", "zzz"]),
    lambda pb: pb.is_not_in("k", ["key-1", "key-2"]),
    lambda pb: pb.is_null("v"),
    lambda pb: pb.is_not_null("k"),
    lambda pb: pb.between("id", 100, 120),
    lambda pb: pb.startswith("k", "key-1"),
    lambda pb: pb.and_(pb.equal("dt", "2024-01-02"), pb.greater_than("v", 0.5)),
    lambda pb: pb.or_(pb.equal("dt", "2024-01-03"), pb.less_than("id", 5)),
    lambda pb: pb.or_(pb.is_null("k"), pb.and_(pb.startswith("k", "key-2"), pb.between("v", -1.0, 1.0))),
]


@pytest.mark.parametrize("i", range(len(PREDICATES)))
def test_predicates_and_projection_match_pyarrow(catalog, i):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    d1, d2 = make_data(200, 0), make_data(100, 1)
    write(t, d1)
    write(t, d2)
    pb = t.new_read_builder().new_predicate_builder()
    pred = PREDICATES[i](pb)
    everything = pa.concat_tables([d1, d2])
    expected = everything.filter(pred.to_arrow()).select(["id", "v"])
    got = read(t, pred, ["id", "v"])
    assert got.column_names == ["id", "v"]
    assert sort_rows(got) == sort_rows(expected)
    assert expected.num_rows > 0 or i == 0


def test_stats_pruning_skips_files(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    for i in range(6):  # six files with disjoint id ranges
        d = pa.table({"dt": ["x"] * 10, "id": pa.array(range(i * 100, i * 100 + 10), pa.int64()),
                      "k": [f"s{i}"] * 10, "v": [float(i)] * 10})
        write(t, d)
    pb = t.new_read_builder().new_predicate_builder()
    for pred, files in [(pb.equal("id", 205), 1), (pb.between("id", 150, 350), 2), (pb.greater_than("v", 4.5), 1),
                        (pb.equal("k", "s3"), 1), (pb.is_null("v"), 0), (pb.less_than("id", 0), 0),
                        (pb.is_in("id", [1, 501]), 2), (pb.startswith("k", "s1"), 1),
                        (pb.or_(pb.equal("id", 1), pb.equal("k", "s5")), 2)]:
        rb = t.new_read_builder().with_filter(pred)
        scan = rb.new_scan()
        splits = scan.plan().splits()
        reader = rb.new_read()
        got = reader.to_arrow(splits)
        assert reader.files_read == files, pred
        assert scan.files_pruned_by_stats == 6 - files
        assert sort_rows(got) == sort_rows(t.to_arrow().filter(pred.to_arrow()))


def test_partition_pruning_reads_only_matching_partition(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    write(t, make_data(90))
    pb = t.new_read_builder().new_predicate_builder()
    rb = t.new_read_builder().with_filter(pb.equal("dt", "2024-01-02"))
    splits = rb.new_scan().plan().splits()
    assert {s.partition_path for s in splits} == {"dt=2024-01-02"}
    r = rb.new_read()
    assert set(r.to_arrow(splits).column("dt").to_pylist()) == {"2024-01-02"}
    assert r.files_read == 1


def test_rolling_files_at_target_size(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA, options={"target-file-size": "64 kb"})
    rng = np.random.default_rng(1)
    n = 60_000
    d = pa.table({"dt": ["x"] * n, "id": pa.array(np.arange(n), pa.int64()),
                  "k": pa.array([f"k{x}" for x in rng.integers(0, 10**9, n)]), "v": rng.normal(size=n)})
    write(t, d)
    files = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert len(files) > 3
    assert all(e.file.file_size < 64 * 1024 * 3 for e in files)
    assert sum(e.file.row_count for e in files) == n
    assert t.to_arrow().column("id").to_pylist() == list(range(n))  # order kept across files


def test_value_stats_in_manifest(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    write(t, pa.table({"dt": ["a", "b"], "id": pa.array([5, 3], pa.int64()),
                       "k": ["a" * 20, None], "v": [None, 2.5]}))
    (e,) = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    f = e.file
    assert f.value_stats_cols is None
    types = [STRING(), BIGINT(), STRING(), DOUBLE()]
    mins = decode_row(f.value_stats.min_values, types)
    maxs = decode_row(f.value_stats.max_values, types)
    assert mins == ("a", 3, "a" * 16, 2.5)
    assert maxs == ("b", 5, "a" * 15 + "b", 2.5)  # truncate(16): max rounded up
    assert f.value_stats.null_counts == (0, 0, 1, 1)
    assert f.row_count == 2 and f.level == 0 and f.file_name.startswith("data-") and f.file_name.endswith(".parquet")


def test_compaction_rewrites_small_files(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    parts = [make_data(30, s) for s in range(6)]
    for d in parts:
        write(t, d)
    before = t.to_arrow()
    old_files = data_files(t)
    assert len(old_files) == 18
    stats = t.compact()
    snap = t.latest_snapshot()
    assert snap.commit_kind is CommitKind.COMPACT and stats.snapshot_ids == [snap.id]
    assert sort_rows(t.to_arrow()) == sort_rows(before)
    live = SnapshotReader(t.core).live_entries(snap)
    assert len(live) == 3
    assert all(e.file.file_source.name == "COMPACT" for e in live)
    # the old snapshot still reads the old files
    assert sort_rows(t.copy({"scan.snapshot-id": str(snap.id - 1)}).to_arrow()) == sort_rows(before)
    # nothing more to do
    assert t.compact() is None
    assert t.latest_snapshot().id == snap.id


def test_compaction_needs_min_file_num(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, options={"compaction.min.file-num": "4"})
    for s in range(3):
        write(t, make_data(10, s))
    assert t.compact() is None
    assert t.compact(full=True) is not None
    assert len(SnapshotReader(t.core).live_entries(t.latest_snapshot())) == 1


def test_date_and_timestamp_columns(catalog):
    schema = pa.schema([("d", pa.date32()), ("ts", pa.timestamp("us")), ("n", pa.int32())])
    t = catalog.create_table("db.t", schema=schema, partition_keys=["d"])
    d = pa.table({"d": [datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)],
                  "ts": [datetime.datetime(2024, 1, 1, 5), datetime.datetime(2024, 1, 2, 6, 7, 8, 9)],
                  "n": pa.array([1, 2], pa.int32())})
    write(t, d)
    assert sort_rows(t.to_arrow()) == sort_rows(d)
    pb = t.new_read_builder().new_predicate_builder()
    assert read(t, pb.greater_than("ts", datetime.datetime(2024, 1, 1, 12))).column("n").to_pylist() == [2]
    assert read(t, pb.equal("d", datetime.date(2024, 1, 1))).column("n").to_pylist() == [1]


def test_limit_and_batch_reader(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    for s in range(3):
        write(t, make_data(10, s))
    rb = t.new_read_builder().with_limit(15)
    splits = rb.new_scan().plan().splits()
    assert rb.new_read().to_arrow(splits).num_rows == 15
    reader = t.new_read_builder().new_read().to_arrow_batch_reader(splits)
    assert reader.read_all().num_rows == 30


def test_empty_table_reads_empty(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA)
    got = t.to_arrow()
    assert got.num_rows == 0 and got.schema == t.arrow_schema
    assert read(t, projection=["v", "id"]).column_names == ["v", "id"]

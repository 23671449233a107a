"""Postpone bucket mode (bucket = -2 on a primary-key table): writes into bucket-postpone as
Paimon Java writes them, batch reads that skip them, and the compaction that assigns buckets."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from table_helpers import read, sort_rows, write

from impl.bucket.routing import POSTPONE_BUCKET, BucketMode, compute_buckets
from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta
from impl.errors import InvalidOptionError
from impl.read.scan import SnapshotReader
from impl.snapshot.records import CommitKind
from impl.store.schema import mergetree
from impl.write.postpone import fold_into_compaction, replay_order, write_id_of

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int32(), nullable=False),
                    pa.field("v", pa.int64())])
NAME = re.compile(r"^data--u-(?P<user>.+)-s-(?P<wid>\d+)-w-[0-9a-f-]{36}-\d+\.avro$")


def rows(dt: str, ids, base: int = 0) -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int32()), "v": [base + i for i in ids]},
                    schema=SCHEMA)


def make(catalog, **options):
    opts = {"bucket": "-2", **{k: str(v) for k, v in options.items()}}
    return catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options=opts)


def entries(table):
    return SnapshotReader(table.core).live_entries(table.core.snapshot_manager.latest_snapshot())


def test_writes_land_in_bucket_postpone_unmerged_and_unread(catalog):
    t = make(catalog)
    assert t.bucket_mode() is BucketMode.POSTPONE
    write(t, rows("a", [3, 1, 3], base=10))  # arrival order, a key twice: kept as written
    write(t, rows("b", [2]))
    es = entries(t)
    assert {(e.bucket, e.total_buckets) for e in es} == {(POSTPONE_BUCKET, POSTPONE_BUCKET)}
    for e in es:
        f = e.file
        m = NAME.match(f.file_name)
        assert m, f.file_name
        assert write_id_of(f.file_name) == int(m["wid"])
        assert (f.level, f.min_sequence_number, f.max_sequence_number, f.value_stats_cols) == (0, -1, -1, ())
        assert "/bucket-postpone/" in t.core.paths.data_file_path(t.core.partition_cache.path(e.partition), e.bucket,
                                                                   f.file_name)
    a = next(e.file for e in es if e.file.row_count == 3)
    codec = mergetree().KeyCodec([t.core.schema.field("id").type])
    # min / max key: the first and the last key as written (Paimon's writer does not sort them)
    assert (a.min_key, a.max_key) == (codec.encode([3]), codec.encode([3]))
    raw = mergetree().read_kv_files(t.core.file_io, t.core.paths, t.core.schema, "dt=a", POSTPONE_BUCKET, [a])
    assert raw.column("id").to_pylist() == [3, 1, 3] and set(raw.column("_SEQUENCE_NUMBER").to_pylist()) == {-1}
    # batch reads (latest, and incremental) show no postponed row, as Paimon's batch scan
    assert read(t).num_rows == 0
    assert t.copy({"incremental-between": "0,2"}).to_arrow().num_rows == 0


def test_compaction_assigns_buckets_in_one_compact_snapshot(catalog):
    t = make(catalog, **{"postpone.default-bucket-num": 3})
    write(t, rows("a", range(10)))
    write(t, rows("a", range(5, 12), base=100))
    write(t, rows("a", [0, 1]), row_kinds=pa.array([3, 0], pa.int8()))  # delete 0, rewrite 1
    write(t, rows("b", [7]))
    before = t.core.snapshot_manager.latest_snapshot().id
    stats = t.compact()
    assert stats.snapshot_kinds == [CommitKind.COMPACT]
    assert t.core.snapshot_manager.latest_snapshot().id == before + 1
    es = entries(t)
    assert all(e.bucket >= 0 and e.total_buckets == 3 for e in es)
    got = sort_rows(read(t), ["dt", "id"])
    want = [{"dt": "a", "id": 1, "v": 1}, *({"dt": "a", "id": i, "v": i} for i in range(2, 5)),
            *({"dt": "a", "id": i, "v": 100 + i} for i in range(5, 12)), {"dt": "b", "id": 7, "v": 7}]
    assert got == want
    # every row sits in Paimon's bucket of its key (the bucket key: id, the partition trimmed)
    mt = mergetree()
    id_type = t.core.schema.field("id").type
    for e in es:
        kv = mt.read_kv_files(t.core.file_io, t.core.paths, t.core.schema, t.core.partition_cache.path(e.partition),
                              e.bucket, [e.file])
        assert set(compute_buckets([kv.column("id")], [id_type], 3).tolist()) == {e.bucket}
    assert t.compact() is None  # nothing postponed: nothing to do


def test_partition_keeps_its_bucket_count_and_merges_with_real_buckets(catalog):
    t = make(catalog, **{"postpone.default-bucket-num": 2})
    write(t, rows("a", range(6)))
    t.compact()
    t = t.copy({"postpone.default-bucket-num": "5"})
    write(t, rows("a", [1, 2], base=50))
    write(t, rows("c", [9]))
    t.compact()
    totals = {(t.core.partition_cache.path(e.partition), e.total_buckets) for e in entries(t)}
    assert totals == {("dt=a", 2), ("dt=c", 5)}
    got = {(r["dt"], r["id"]): r["v"] for r in read(t).to_pylist()}
    assert got == {("a", 0): 0, ("a", 1): 51, ("a", 2): 52, ("a", 3): 3, ("a", 4): 4, ("a", 5): 5, ("c", 9): 9}


def test_append_table_and_bad_bucket_num_are_refused(catalog):
    with pytest.raises(InvalidOptionError, match="'bucket'.*primary-key"):
        catalog.create_table("db.append", schema=SCHEMA, options={"bucket": "-2"})
    with pytest.raises(InvalidOptionError, match="'postpone.default-bucket-num'"):
        make(catalog, **{"postpone.default-bucket-num": 0})


def _meta(name: str, created: int = 0, level: int = 0) -> DataFileMeta:
    return DataFileMeta(name, 1, 1, level=level, creation_time_millis=created)


def test_fold_into_compaction_as_paimons_bucket_files():
    a, b, old = _meta("a"), _meta("b"), _meta("old", level=5)
    up = _meta("b", level=5)
    m = CommitMessage(b"p", 0, 2, new_files=(a, b), compact_before=(old, a, b), compact_after=(up,))
    f = fold_into_compaction(m)
    # "a" was written and compacted away by the same writer: on neither side; "b" upgraded: after only
    assert [x.file_name for x in f.compact_before] == ["old"]
    assert [(x.file_name, x.level) for x in f.compact_after] == [("b", 5)]
    assert not f.has_append_part()
    assert [x.file_name for x in replay_order([_meta("x", 5), _meta("y", 3), _meta("z", 5)])] == ["y", "x", "z"]


def test_spark_streaming_reads_without_changelog_producer_are_refused(catalog):
    pytest.importorskip("pyspark")
    from impl.spark.errors import StreamStartError
    from impl.spark.stream_reader import check_streamable

    t = make(catalog)
    with pytest.raises(StreamStartError, match="postpone bucket table"):
        check_streamable(t)
    check_streamable(t.copy({"changelog-producer": "input"}))  # Paimon reads real buckets' changelog then


def test_known_bucket_counts_refuse_a_partition_of_two_counts():
    from impl.errors import BucketCountChangedError
    from impl.manifest.records import FileKind, ManifestEntry
    from impl.write.postpone import known_bucket_counts

    def entry(bucket: int, total: int, name: str) -> ManifestEntry:
        return ManifestEntry(FileKind.ADD, b"p", bucket, total, _meta(name))

    assert known_bucket_counts([entry(-2, -2, "x"), entry(1, 3, "y")]) == {b"p": 3}
    with pytest.raises(BucketCountChangedError, match="3 buckets .*y.* 4 .*z"):
        known_bucket_counts([entry(1, 3, "y"), entry(0, 4, "z")])


def test_postponed_files_keep_the_tables_format_when_avro_cannot_hold_a_type(catalog):
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("ts", pa.timestamp("ns"))])
    t = catalog.create_table("db.ns", schema=schema, primary_keys=["id"], options={"bucket": "-2"})
    write(t, pa.table({"id": pa.array([1, 2], pa.int32()), "ts": pa.array([1, 2], pa.timestamp("ns"))}))
    (e,) = entries(t)
    # TIMESTAMP(9): Paimon's AvroSchemaConverter refuses it, so its writer keeps parquet and the stats
    assert e.file.file_name.endswith(".parquet") and e.file.value_stats_cols == ("id",)  # TIMESTAMP(9): no stats
    t.compact()
    assert sorted(read(t).column("id").to_pylist()) == [1, 2]

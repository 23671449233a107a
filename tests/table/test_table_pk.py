"""Primary-key tables through the table API: upserts, deletes, merge engines, compaction, reads."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from table_helpers import data_files, read, sort_rows, write

from impl.bucket.routing import compute_buckets
from impl.data.binary_row import decode_row
from impl.data.types import BIGINT, DOUBLE, STRING
from impl.errors import PaimonError
from impl.read.scan import DataSplit, SnapshotReader, SplitKind
from impl.snapshot.records import CommitKind

pytest.importorskip("impl.mergetree")

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("amount", pa.float64())])


def rows(dt, ids, v=None, amount=None):
    n = len(ids)
    return pa.table({"dt": [dt] * n if isinstance(dt, str) else dt, "id": pa.array(ids, pa.int64()),
                     "v": v if v is not None else [f"v{i}" for i in ids],
                     "amount": amount if amount is not None else [float(i) for i in ids]})


def as_dict(t: pa.Table) -> dict:
    return {(r["dt"], r["id"]): r for r in t.to_pylist()}


@pytest.fixture
def pk(catalog):
    return catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "2"})


def test_upserts_round_trip(pk):
    model = {}
    rng = np.random.default_rng(5)
    for round_ in range(6):
        ids = sorted(set(rng.integers(0, 40, 25).tolist()))
        dt = ["2024-01-01" if i % 3 else "2024-01-02" for i in ids]
        batch = rows(dt, ids, v=[f"r{round_}-{i}" for i in ids])
        write(pk, batch)
        model.update(as_dict(batch))
        assert as_dict(pk.to_arrow()) == model
    assert pk.to_arrow().num_rows == len(model)
    # every key sits in the bucket Paimon's hash of the bucket key (id) gives it
    for e, file_rows in rows_by_file(pk):
        assert e.total_buckets == 2
        ids = file_rows.column("id")
        assert set(compute_buckets([ids], [BIGINT(False)], 2).tolist()) == {e.bucket}


def rows_by_file(table):
    """(live entry, the rows of that one file) for every live file of the latest snapshot."""
    reader = table.new_read_builder().new_read()
    for e in SnapshotReader(table.core).live_entries(table.latest_snapshot()):
        split = DataSplit(0, e.partition, e.bucket, e.total_buckets, table.partition_cache.path(e.partition), (e.file,))
        yield e, reader.to_arrow([split])


def test_reference_bucket_placement(pk):
    write(pk, rows("2024-01-01", [1, 2, 3, 4]))
    placement = {}
    for e, file_rows in rows_by_file(pk):
        for i in file_rows.column("id").to_pylist():
            placement[i] = e.bucket
    assert placement == {1: 0, 2: 0, 3: 1, 4: 0}  # as pypaimon 2.1.0 placed them in pk_t


def test_deletes_by_rowkind_field_and_row_kinds(catalog):
    schema = SCHEMA.append(pa.field("op", pa.string()))
    t = catalog.create_table("db.t", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2", "rowkind.field": "op"})
    base = rows("d", [1, 2, 3, 4]).append_column("op", pa.array(["+I"] * 4))
    write(t, base)
    change = rows("d", [1, 2, 5], v=["new1", None, "v5"]).append_column("op", pa.array(["+U", "-D", "+I"]))
    write(t, change)
    got = as_dict(t.to_arrow())
    assert sorted(k[1] for k in got) == [1, 3, 4, 5]
    assert got[("d", 1)]["v"] == "new1"
    # explicit row kinds win over nothing: delete 3 and 4
    plain = catalog.create_table("db.p", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "1"})
    write(plain, rows("d", [1, 2, 3, 4]))
    write(plain, rows("d", [3, 4]), row_kinds=pa.array([3, 3], pa.int8()))
    assert sorted(r["id"] for r in plain.to_arrow().to_pylist()) == [1, 2]
    with pytest.raises(PaimonError, match="'op'"):
        write(t, rows("d", [9]).append_column("op", pa.array(["?"])))


def test_partial_update(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "merge-engine": "partial-update"})
    write(t, rows("d", [1, 2], v=["a", None], amount=[None, 2.0]))
    write(t, rows("d", [1, 2], v=[None, "b"], amount=[1.5, None]))
    got = as_dict(t.to_arrow())
    assert (got[("d", 1)]["v"], got[("d", 1)]["amount"]) == ("a", 1.5)
    assert (got[("d", 2)]["v"], got[("d", 2)]["amount"]) == ("b", 2.0)
    t.compact(full=True)
    assert as_dict(t.to_arrow()) == got


def test_aggregation(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2", "merge-engine": "aggregation",
                                      "fields.amount.aggregate-function": "sum",
                                      "fields.v.aggregate-function": "max"})
    write(t, rows("d", [1, 2, 3], v=["a", "b", "c"], amount=[1.0, 2.0, 3.0]))
    write(t, rows("d", [1, 2], v=["z", "a"], amount=[10.0, 20.0]))
    write(t, rows("d", [1], v=["b"], amount=[100.0]))
    got = as_dict(t.to_arrow())
    assert {k[1]: (r["v"], r["amount"]) for k, r in got.items()} == {1: ("z", 111.0), 2: ("b", 22.0), 3: ("c", 3.0)}
    t.compact(full=True)
    assert as_dict(t.to_arrow()) == got
    # a retraction the sum aggregate cannot apply is rejected before anything is written
    before = (t.latest_snapshot().id, data_files(t))
    with pytest.raises(PaimonError):
        write(t, rows("d", [1, 7]), row_kinds=pa.array([0, 3], pa.int8()))
    assert (t.latest_snapshot().id, data_files(t)) == before


def test_first_row(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "merge-engine": "first-row"})
    write(t, rows("d", [1, 2], v=["first1", "first2"]))
    write(t, rows("d", [1, 3], v=["second1", "first3"]))
    got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert got == {1: "first1", 2: "first2", 3: "first3"}


def test_compaction_keeps_rows_and_levels(pk):
    model = {}
    for i in range(8):
        batch = rows("d", list(range(i * 5, i * 5 + 20)), v=[f"w{i}"] * 20)
        write(pk, batch)
        model.update(as_dict(batch))
    before_snapshot = pk.latest_snapshot().id
    stats = pk.compact(full=True)
    snap = pk.latest_snapshot()
    assert snap.commit_kind is CommitKind.COMPACT and stats.snapshot_ids == [snap.id]
    assert as_dict(pk.to_arrow()) == model
    live = SnapshotReader(pk.core).live_entries(snap)
    assert all(e.file.level > 0 for e in live)
    assert len(live) <= 2  # one sorted run per bucket
    # time travel to before the compaction still reads the same rows
    assert as_dict(pk.copy({"scan.snapshot-id": str(before_snapshot)}).to_arrow()) == model


def test_write_only_and_dedicated_compaction(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "write-only": "true", "num-sorted-run.compaction-trigger": "3"})
    model = {}
    for i in range(7):
        batch = rows("d", list(range(i, i + 10)), v=[f"x{i}"] * 10)
        write(t, batch)
        model.update(as_dict(batch))
    live = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert len(live) == 7 and all(e.file.level == 0 for e in live)  # writers never compacted
    assert all(s.commit_kind is CommitKind.APPEND for s in t.snapshots())
    assert t.compact() is not None  # universal compaction: enough sorted runs to trigger
    live_after = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert len(live_after) < 7
    assert as_dict(t.to_arrow()) == model


def test_predicates_and_projection_on_pk(pk):
    model = {}
    for i in range(3):
        batch = rows(["a", "b"] * 10, list(range(i * 7, i * 7 + 20)), v=[f"s{i}-{j}" for j in range(20)])
        write(pk, batch)
        model.update(as_dict(batch))
    expected_all = pa.Table.from_pylist(list(model.values()), schema=pk.arrow_schema)
    pb = pk.new_read_builder().new_predicate_builder()
    for pred in [pb.equal("id", 8), pb.greater_than("amount", 30.0), pb.startswith("v", "s2"),
                 pb.and_(pb.equal("dt", "a"), pb.less_than("id", 10)), pb.is_in("id", [1, 2, 39])]:
        got = read(pk, pred, ["v", "id"])
        assert got.column_names == ["v", "id"]
        assert sort_rows(got) == sort_rows(expected_all.filter(pred.to_arrow()).select(["v", "id"]))


def test_incremental_delta_and_changelog(catalog):
    for producer in ("none", "input"):
        t = catalog.create_table(f"db.t_{producer}", schema=SCHEMA, primary_keys=["dt", "id"],
                                 partition_keys=["dt"], options={"bucket": "1", "changelog-producer": producer})
        write(t, rows("d", [1, 2]))
        write(t, rows("d", [2, 3], v=["new2", "v3"]))
        write(t, rows("d", [1]), row_kinds=pa.array([3], pa.int8()))
        incremental = t.copy({"incremental-between": "1,3"})
        kind = SplitKind.CHANGELOG if producer == "input" else SplitKind.DELTA
        assert {s.kind for s in incremental.new_read_builder().new_scan().plan().splits()} == {kind}
        assert {s.kind for s in t.new_read_builder().new_scan().plan().splits()} == {SplitKind.DATA}
        got = incremental.to_arrow()
        assert got.column_names[-1] == "_VALUE_KIND"
        assert [(r["id"], r["_VALUE_KIND"]) for r in got.to_pylist()] == [(2, 0), (3, 0), (1, 3)]
        if producer == "input":
            assert all(s.changelog_manifest_list for s in t.snapshots())


def test_incremental_orders_changes_by_snapshot_then_sequence(catalog):
    """A writer restored after a full compaction dropped the newest delete numbers its rows
    below that delete: the delete still comes before the later re-insert."""
    for producer in ("none", "input"):
        t = catalog.create_table(f"db.seq_{producer}", schema=SCHEMA, primary_keys=["dt", "id"],
                                 options={"bucket": "1", "write-only": "true", "changelog-producer": producer})
        write(t, rows("d", [1, 2, 3]))
        write(t, rows("d", [3]), row_kinds=pa.array([3], pa.int8()))
        t.compact(full=True)
        write(t, rows("d", [3], v=["again"]))
        got = t.copy({"incremental-between": f"0,{t.latest_snapshot().id}"}).to_arrow()
        assert [(r["v"], r["_VALUE_KIND"]) for r in got.to_pylist() if r["id"] == 3] == [
            ("v3", 0), ("v3", 3), ("again", 0)]


def test_expire_and_rollback_on_pk(pk):
    states = {}
    for i in range(6):
        write(pk, rows("d", list(range(i, i + 5)), v=[f"e{i}"] * 5))
        if i == 3:
            pk.compact(full=True)
        states[pk.latest_snapshot().id] = as_dict(pk.to_arrow())
    res = pk.expire_snapshots(retain_min=3, time_retained_ms=0, max_deletes=100)
    assert res.expired_snapshot_ids
    for s in pk.snapshots():
        assert as_dict(pk.copy({"scan.snapshot-id": str(s.id)}).to_arrow()) == states[s.id]
    target = pk.snapshots()[0].id
    pk.rollback_to(target)
    assert as_dict(pk.to_arrow()) == states[target]
    write(pk, rows("d", [100]))
    assert ("d", 100) in as_dict(pk.to_arrow())


def test_stream_write_with_identifiers(pk):
    sb = pk.new_stream_write_builder()
    w, c = sb.new_write(), sb.new_commit()
    for ident in range(1, 4):
        w.write_arrow(rows("d", [ident, ident + 1], v=[f"s{ident}"] * 2))
        c.commit(w.prepare_commit(ident), ident)
    assert [s.commit_identifier for s in pk.snapshots() if s.commit_kind is CommitKind.APPEND] == [1, 2, 3]
    # recovery: re-committing identifiers already published does nothing
    w.write_arrow(rows("d", [50]))
    msgs = w.prepare_commit(4)
    c.filter_and_commit({3: [], 4: msgs})
    c.filter_and_commit({4: msgs})
    assert [s.commit_identifier for s in pk.snapshots() if s.commit_kind is CommitKind.APPEND] == [1, 2, 3, 4]
    w.close()
    got = {r["id"]: r["v"] for r in pk.to_arrow().to_pylist()}
    assert got == {1: "s1", 2: "s2", 3: "s3", 4: "s3", 50: "v50"}


def test_key_range_pruning(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "write-only": "true"})
    for i in range(5):  # five level-0 files with disjoint key ranges
        write(t, rows("d", list(range(i * 100, i * 100 + 10))))
    write(t, rows("d", [205], v=["updated"]))  # a sixth file overlapping the third
    pb = t.new_read_builder().new_predicate_builder()
    for pred, files, expected in [(pb.equal("id", 205), 2, ["updated"]), (pb.equal("id", 5), 1, ["v5"]),
                                  (pb.between("id", 150, 260), 2, ["v200", "v201", "v202", "v203", "v204",
                                                                   "updated", "v206", "v207", "v208", "v209"]),
                                  (pb.greater_than("amount", 400.0), 6, [f"v{i}" for i in range(401, 410)])]:
        rb = t.new_read_builder().with_filter(pred)
        splits = rb.new_scan().plan().splits()
        reader = rb.new_read()
        got = reader.to_arrow(splits)
        assert reader.files_read == files, pred
        assert sorted(got.column("v").to_pylist()) == sorted(expected)


def test_expire_keeps_upgraded_files(catalog):
    # one non-overlapping sorted run compacts by upgrade: the same file moves from level 0 to the
    # top level (DELETE + ADD of one file name in the COMPACT delta); expiring must keep it
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "target-file-size": "1 kb", "write-only": "true"})
    write(t, rows("d", list(range(100)), v=["x" * 20] * 100))
    level0 = {e.file.file_name for e in SnapshotReader(t.core).live_entries(t.latest_snapshot())}
    t.compact(full=True)
    live = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert {e.file.file_name for e in live} == level0 and all(e.file.level > 0 for e in live)
    write(t, rows("d", [500], v=["new"], amount=[1.0]))
    expected = as_dict(t.to_arrow())
    res = t.expire_snapshots(retain_min=1, time_retained_ms=0)
    assert res.expired_snapshot_ids == (1, 2)
    assert not res.deleted_data_files
    assert level0 <= {p.rsplit("/", 1)[-1] for p in data_files(t)}
    assert as_dict(t.to_arrow()) == expected


def test_expire_deletes_changelog_files(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "changelog-producer": "input", "write-only": "true"})
    for i in range(5):
        write(t, rows("d", [i, i + 1], v=[f"c{i}"] * 2))

    def changelog_files():
        return sorted(f.path.rsplit("/", 1)[-1] for f in t.file_io.walk_files(t.path)
                      if f.path.rsplit("/", 1)[-1].startswith("changelog-"))

    assert len(changelog_files()) == 5
    expected = as_dict(t.to_arrow())
    res = t.expire_snapshots(retain_min=2, time_retained_ms=0)
    assert res.expired_snapshot_ids == (1, 2, 3)
    assert len(res.deleted_changelog_files) == 3
    assert len(changelog_files()) == 2
    got = t.copy({"incremental-between": "3,5"}).to_arrow()
    assert [(r["id"], r["v"]) for r in got.to_pylist()] == [(3, "c3"), (4, "c3"), (4, "c4"), (5, "c4")]
    assert as_dict(t.to_arrow()) == expected


def test_overwrite_pk_partition(pk):
    write(pk, rows(["a", "a", "b"], [1, 2, 3]))
    write(pk, rows(["a", "a"], [2, 3], v=["n2", "n3"]))
    write(pk, rows(["a", "a"], [3, 4], v=["o3", "o4"]), overwrite={"dt": "a"})
    assert pk.latest_snapshot().commit_kind in (CommitKind.OVERWRITE, CommitKind.COMPACT)
    got = {(r["dt"], r["id"]): r["v"] for r in pk.to_arrow().to_pylist()}
    assert got == {("a", 3): "o3", ("a", 4): "o4", ("b", 3): "v3"}
    # every file of partition a is new: the old ones were replaced, not merged
    live = SnapshotReader(pk.core).live_entries(pk.latest_snapshot())
    assert sum(e.file.row_count for e in live if pk.partition_cache.path(e.partition) == "dt=a") == 2


def test_stream_writer_restores_from_latest_when_new_bucket_appears(catalog):
    pk = catalog.create_table("db.t1", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                              options={"bucket": "1"})
    sb = pk.new_stream_write_builder()
    w, c = sb.new_write(), sb.new_commit()
    w.write_arrow(rows("a", [1]))
    c.commit(w.prepare_commit(1), 1)
    # another job writes partition b meanwhile; key 7 gets sequence number 4 there
    write(pk, rows("b", [20, 21, 22, 23, 7], v=["other"] * 5))
    w.write_arrow(rows("b", [7], v=["stream"]))  # the stream's first writer of partition b
    c.commit(w.prepare_commit(2), 2)
    w.close()
    got = {(r["dt"], r["id"]): r["v"] for r in pk.to_arrow().to_pylist()}
    # restored from the latest snapshot, the stream writer continues after sequence number 4
    assert got[("b", 7)] == "stream" and got[("a", 1)] == "v1"


STATS_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
STATS_TYPES = [BIGINT(), STRING(), DOUBLE()]


@pytest.mark.parametrize("mode, mins, maxs, null_counts", [
    ("none", (), (), ()),  # the dense store covers no column (value_stats_cols == ()), as Java writes
    ("counts", (None, None, None), (None, None, None), (0, 0, 1)),
    ("full", (1, "abcdefgh", 1.5), (2, "abcdefgz", 1.5), (0, 0, 1)),
    ("truncate(4)", (1, "abcd", 1.5), (2, "abce", 1.5), (0, 0, 1)),
])
def test_pk_files_follow_metadata_stats_mode(catalog, mode, mins, maxs, null_counts):
    # value columns (the key's value copy too) follow the table's mode, in flushed and in
    # compacted files; the _KEY_ column keeps Paimon's truncate(128), i.e. here the full key
    t = catalog.create_table("db.stats", schema=STATS_SCHEMA, primary_keys=["name"],
                             options={"bucket": "1", "metadata.stats-mode": mode})
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["abcdefgh", "abcdefgz"], "score": [1.5, None]})
    write(t, data)
    (flushed,) = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    write(t, data)
    t.compact(full=True)
    (compacted,) = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert flushed.file.level == 0 and compacted.file.level > 0
    for f in (flushed.file, compacted.file):
        types = STATS_TYPES if mode != "none" else []
        assert f.value_stats_cols == (None if mode != "none" else ())
        assert decode_row(f.value_stats.min_values, types) == mins
        assert decode_row(f.value_stats.max_values, types) == maxs
        assert f.value_stats.null_counts == null_counts
        assert decode_row(f.key_stats.min_values, [STRING(False)]) == ("abcdefgh",)
        assert decode_row(f.key_stats.max_values, [STRING(False)]) == ("abcdefgz",)
        assert f.key_stats.null_counts == (0,)


def test_synchronous_compaction_mode_runs_on_the_writing_thread(local_catalog):
    """The compaction seam: with InlineExecutor the merge tree compacts on the calling thread
    (no background pool is started) and the table reads as with the default pool."""
    import threading

    from impl.mergetree.writer import InlineExecutor

    results = {}
    for mode in ("inline", "pool"):
        t = local_catalog.create_table(f"db.{mode}", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                       options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"})
        builder = t.new_stream_write_builder()
        compactor_threads: set[str] = set()
        write = builder.new_write(compaction_executor=InlineExecutor() if mode == "inline" else None)
        commit = builder.new_commit()
        for i in range(4):
            write.write_arrow(rows("d", list(range(i, i + 5)), v=[f"w{i}"] * 5))
            compactor_threads |= {th.name for th in threading.enumerate() if th.name.startswith("paimon-compact")}
            commit.commit(write.prepare_commit(i), i)
        write.close()
        if mode == "inline":
            # compaction ran, on this thread, before each prepare_commit returned
            assert CommitKind.COMPACT in {s.commit_kind for s in t.snapshot_manager().snapshots()}
            assert compactor_threads == set()
        results[mode] = as_dict(t.to_arrow())
    assert results["inline"] == results["pool"] and len(results["inline"]) == 8


def test_write_buffer_size_is_shared_by_the_buckets_of_one_write(local_catalog):
    """write-buffer-size bounds all buckets of a write together (Paimon's shared memory pool):
    with 4 buckets, a buffer per bucket would hold 4x the option before any flush."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64())])
    for spillable, name in (("false", "shared_buf"), (None, "shared_spill")):
        options = {"bucket": "4", "write-buffer-size": "64 kb", "write-only": "true"}
        if spillable is not None:
            options["write-buffer-spillable"] = spillable
        t = local_catalog.create_table(f"db.{name}", schema=schema, primary_keys=["id"], options=options)
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(spill_directory=str(local_catalog.warehouse) + "-spill"), wb.new_commit()
        n = 20_000
        for start in range(0, n, 2_000):
            ids = np.arange(start, start + 2_000, dtype=np.int64)
            w.write_arrow(pa.table({"id": ids, "v": ids.astype(np.float64)}))
            pool = w._write_buffer_pool()
            assert pool.used() <= 64 * 1024  # all buckets' buffered rows together fit one buffer
        c.commit(w.prepare_commit())
        w.close()
        if spillable == "false":
            assert len(data_files(t)) > 8  # the shared buffer flushed several times per bucket
        else:
            # a batch write spills by default (Paimon): one level-0 file per bucket at the commit
            assert len(data_files(t)) == 4
        out = read(t)
        assert out.num_rows == n and sorted(out.column("id").to_pylist()) == list(range(n))


def test_batch_reader_streams_merged_rows_equal_to_to_arrow(local_catalog, monkeypatch):
    """to_arrow_batch_reader merges each bucket chunk by chunk: same rows as to_arrow (composite
    key, deletes, overlapping runs, projection, limit), in several batches per bucket."""
    import impl.mergetree.read as mread
    monkeypatch.setattr(mread, "MERGE_BATCH_ROWS", 50)
    monkeypatch.setattr(mread.iter_merge_read, "__defaults__", (None, None, 50))
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("v", pa.float64())])
    t = local_catalog.create_table("db.stream", schema=schema, primary_keys=["id", "s"],
                                   options={"bucket": "2", "write-only": "true"})
    rng = np.random.default_rng(3)
    for _ in range(5):
        ids = rng.integers(0, 800, 600)
        kinds = np.where(rng.random(600) < 0.1, 3, 0).astype(np.int8)
        write(t, pa.table({"id": ids, "s": (ids % 7).astype(str), "v": rng.random(600)}), row_kinds=kinds)
    rb = t.new_read_builder().with_projection(["v", "id", "s"])
    splits = rb.new_scan().plan().splits()
    order = [("id", "ascending"), ("s", "ascending")]
    whole = rb.new_read().to_arrow(splits).sort_by(order)
    batches = list(rb.new_read().to_arrow_batch_reader(splits))
    assert len(batches) > 2 * len(splits)
    assert pa.Table.from_batches(batches).sort_by(order).equals(whole)
    limited = t.new_read_builder().with_limit(30).new_read().to_arrow_batch_reader(splits).read_all()
    assert limited.num_rows == 30

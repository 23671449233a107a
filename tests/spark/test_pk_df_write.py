"""Plain ``df.write`` into primary-key tables: several tasks may share a bucket unless they share a key.

The first part runs the check itself (no Spark session: the tasks are ``write_task`` calls in
this process); the second goes through Spark, with pypaimon 2.1.0 reading the result.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from spark_helpers import data_files, intents_left, orphans  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.errors import WriteRoutingError  # noqa: E402
from impl.jobs.keycheck import (  # noqa: E402
    KeySketchBuilder,
    check_shared_keys,
    keep_one_compaction_per_bucket,
    key_hashes,
    key_slots,
)
from impl.jobs.writer import commit_write, write_task  # noqa: E402
from impl.mergetree.kv import KVLayout  # noqa: E402
from impl.mergetree.read import read_kv_tables  # noqa: E402
from impl.spark.source import prepare_write  # noqa: E402
from impl.write.table_write import conform_input  # noqa: E402

ID_V = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("v", T.StringType())])


def _batch(ids, v="x") -> pa.RecordBatch:
    ids = list(ids)
    return pa.RecordBatch.from_pydict({"id": pa.array(ids, pa.int64()), "v": pa.array([v] * len(ids))})


def _job(path, buckets=1, options=None):
    return prepare_write(path, ID_V, {"primary-key": "id"}, {"bucket": str(buckets), **(options or {})})


def _rows(warehouse, name="db.t"):
    t = impl.Catalog(warehouse).get_table(name)
    return {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}


# ====================================================================== the check, without Spark


MIXED = T.StructType([
    T.StructField("dt", T.StringType(), False),
    T.StructField("k1", T.StringType(), False),
    T.StructField("k2", T.IntegerType(), False),
    T.StructField("k3", T.DateType(), False),
    T.StructField("k4", T.DecimalType(12, 3), False),
    T.StructField("k5", T.TimestampNTZType(), False),
    T.StructField("v", T.LongType()),
])


def _mixed_batch(rng, n, lo=0, hi=10**6) -> pa.RecordBatch:
    ks = rng.choice(np.arange(lo, hi), n, replace=False)
    return pa.RecordBatch.from_pydict({
        "dt": pa.array([f"d{k % 3}" for k in ks]),
        "k1": pa.array([f"key-{k}-" + "x" * int(k % 13) for k in ks]),
        "k2": pa.array((ks % 1000).astype(np.int32)),
        "k3": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=int(k % 400)) for k in ks]),
        "k4": pa.array([decimal.Decimal(int(k)) / 1000 for k in ks], pa.decimal128(12, 3)),
        "k5": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=int(k) * 7919) for k in ks],
                       pa.timestamp("us")),
        "v": pa.array(ks.astype(np.int64)),
    })


def _sketches(table, batches_per_task, **builder):
    """Sketches of these rows as a task builds them, with the builder's sizes overridden."""
    out = []
    for batches in batches_per_task:
        b = KeySketchBuilder(table, **builder)
        for batch in batches:
            b.add(conform_input(pa.Table.from_batches([batch]), table.core))
        out.append(b.finish())
    return out


BITMAPS = {"hash_list_max": 0}  # sketches as bitmaps from the first row on


@pytest.mark.parametrize("bucket_key", [None, "k1"])
def test_a_tasks_sketch_holds_every_key_its_files_hold(warehouse, bucket_key):
    """No false negatives: the hashes (or bits) a task sets from the rows it writes cover the keys
    the driver reads from its files, for every key type, partitioned, default or own bucket key."""
    opts = {"bucket": "3", **({"bucket-key": bucket_key} if bucket_key else {})}
    job = prepare_write(os.path.join(warehouse, "db.db", "m"), MIXED,
                        {"primary-key": "dt,k1,k2,k3,k4,k5", "partition": "dt"}, opts)
    rng = np.random.default_rng(5)
    batches = [_mixed_batch(rng, 700), _mixed_batch(rng, 500)]
    out = write_task(batches, job, "t0")
    table = job.ref.table()
    layout = KVLayout(table.schema)
    assert set(out.sketches) == {(m.partition, m.bucket) for m in out.messages}
    assert len(out.sketches) == 9  # 3 partitions x 3 buckets
    assert sum(s.rows for s in out.sketches.values()) == 1200
    (bitmaps,) = _sketches(table, [batches], **BITMAPS)
    for m in out.messages:
        keys = read_kv_tables(table.file_io, table.paths.bucket_dir(table.partition_cache.path(m.partition), m.bucket),
                              layout, m.new_files, list(layout.key_columns))
        hashes = key_hashes([keys.column(c) for c in layout.key_columns], layout.key_types)
        listed = out.sketches[(m.partition, m.bucket)]
        assert listed.lists_hashes and set(hashes.view(np.uint32).tolist()) == set(listed.hash_values().tolist())
        bitmap = bitmaps[(m.partition, m.bucket)]
        assert not bitmap.lists_hashes and bitmap.size <= 8 * 256  # about 8 bits per row, a power of two
        assert bitmap.bits_at(bitmap.size)[key_slots(hashes, bitmap.size)].all()

    # keys of every type compared exactly: other keys pass, one written again is named
    other = write_task([_mixed_batch(np.random.default_rng(6), 1200, 10**6, 2 * 10**6)], job, "t1")
    assert check_shared_keys(table, [out.messages, other.messages], [None, None]).confirmed > 0
    again = _mixed_batch(np.random.default_rng(5), 700).slice(3, 1)
    twice = write_task([_mixed_batch(np.random.default_rng(6), 1200, 10**6, 2 * 10**6), again], job, "t2")
    for sketches in ([out.sketches, twice.sketches], None):
        with pytest.raises(WriteRoutingError) as e:
            check_shared_keys(table, [out.messages, twice.messages], sketches)
        row = again.to_pylist()[0]
        assert e.value.key == {k: row[k] for k in ("k1", "k2", "k3", "k4", "k5")}
        assert e.value.partition == {"dt": row["dt"]}


def test_disjoint_key_ranges_pass_without_reading(warehouse):
    job = _job(os.path.join(warehouse, "db.db", "t"), 2)
    a = write_task([_batch(range(0, 1000))], job, "a")
    b = write_task([_batch(range(1000, 2000))], job, "b")
    stats = check_shared_keys(job.ref.table(), [a.messages, b.messages])  # no sketches needed
    assert (stats.shared_buckets, stats.overlapping, stats.files_read) == (2, 0, 0)


def test_sketches_clear_interleaved_keys_without_reading(warehouse):
    job = _job(os.path.join(warehouse, "db.db", "t"))
    evens, odds = [_batch(range(0, 1000, 2))], [_batch(range(1, 1000, 2))]
    a, b = write_task(evens, job, "a"), write_task(odds, job, "b")
    table = job.ref.table()
    # the tasks' own sketches list their 500 hashes: none in common
    assert all(s.lists_hashes for s in (*a.sketches.values(), *b.sketches.values()))
    stats = check_shared_keys(table, [a.messages, b.messages], [a.sketches, b.sketches])
    assert (stats.overlapping, stats.cleared_by_sketch, stats.confirmed, stats.files_read) == (1, 1, 0, 0)
    # bitmaps of 2^20 bits (2048 bits per key): no bit in common either (the hash is fixed)
    big = _sketches(table, [evens, odds], hash_list_max=0, max_bits=1 << 20, bits_per_key=2048)
    stats = check_shared_keys(table, [a.messages, b.messages], big)
    assert (stats.overlapping, stats.cleared_by_sketch, stats.confirmed, stats.files_read) == (1, 1, 0, 0)


def test_candidates_are_confirmed_exactly(warehouse):
    """Sketches forced down to 64-bit bitmaps: 500 keys per task set every bit, so every key is
    a candidate; the exact intersection finds none shared (accepted), then one (refused)."""
    job = _job(os.path.join(warehouse, "db.db", "t"))
    evens, odds = [_batch(range(0, 1000, 2))], [_batch(range(1, 1000, 2))]
    a, b = write_task(evens, job, "a"), write_task(odds, job, "b")
    table = job.ref.table()
    small = _sketches(table, [evens, odds], hash_list_max=0, max_bits=64)
    assert all(s.size == 64 for sk in small for s in sk.values())
    stats = check_shared_keys(table, [a.messages, b.messages], small)
    assert (stats.confirmed, stats.files_read, stats.rows_read, stats.candidate_rows) == (1, 2, 1000, 1000)

    # 8 bits per key: the driver keeps only the rows whose bit the other task set too
    stats = check_shared_keys(table, [a.messages, b.messages], _sketches(table, [evens, odds], **BITMAPS))
    assert stats.confirmed == 1 and 0 < stats.candidate_rows < 400
    # a task that sent no sketch may hold any key: all of the other task's rows are candidates,
    # of its own only those whose hash the other listed
    stats = check_shared_keys(table, [a.messages, b.messages], [a.sketches, None])
    assert (stats.confirmed, stats.candidate_rows) == (1, 500)

    odds_and_one = [_batch([*range(1, 1000, 2), 778])]
    c = write_task(odds_and_one, job, "c")
    for sketches in (None, [a.sketches, c.sketches], [a.sketches, None], small[:1] + [None],
                     _sketches(table, [evens, odds_and_one], **BITMAPS),
                     _sketches(table, [evens, odds_and_one], hash_list_max=0, max_bits=64)):
        with pytest.raises(WriteRoutingError, match=r"key \{'id': 778\} \(bucket 0\).*write_dataframe.*"
                                                    r"df\.repartition\('id'\)") as e:
            check_shared_keys(table, [a.messages, c.messages], sketches)
        assert e.value.key == {"id": 778} and e.value.bucket == 0


@pytest.mark.parametrize("tasks", [3, 7])  # pairwise semi-joins, or one grouping by key
def test_many_tasks_in_one_bucket(warehouse, tasks):
    job = _job(os.path.join(warehouse, "db.db", "t"))
    outs = [write_task([_batch(range(i, 700, tasks))], job, f"t{i}") for i in range(tasks)]
    table = job.ref.table()
    stats = check_shared_keys(table, [o.messages for o in outs])
    assert (stats.overlapping, stats.confirmed, stats.rows_read) == (1, 1, 700)
    again = write_task([_batch([650, 3, 651])], job, "again")  # 3 and 650, 651 belong to other tasks
    with pytest.raises(WriteRoutingError) as e:
        check_shared_keys(table, [o.messages for o in outs] + [again.messages])
    assert e.value.key == {"id": 3}


def test_refused_commit_leaves_no_snapshot_and_no_file(warehouse):
    path = os.path.join(warehouse, "db.db", "t")
    job = _job(path, 2)
    a = write_task([_batch(range(0, 50))], job, "a")
    b = write_task([_batch(range(40, 90))], job, "b")
    with pytest.raises(WriteRoutingError, match=r"key \{'id': 4\d\}"):
        commit_write(job, [a.messages, b.messages], sketches=[a.sketches, b.sketches])
    assert impl.Catalog(warehouse).get_table("db.t").snapshots() == []
    assert data_files(path) == set() and intents_left(warehouse) == []


def test_tasks_compacting_one_bucket_commit_one_compaction(warehouse):
    """Both tasks restore the same runs and compact them (trigger 2): committing both would
    delete those files twice. One compaction is committed, the other task's rows stay on level 0."""
    path = os.path.join(warehouse, "db.db", "t")
    for i in range(3):
        job = _job(path, 2, {"num-sorted-run.compaction-trigger": "2"})
        a = write_task([_batch(range(0, 100, 2), f"a{i}")], job, "a")
        b = write_task([_batch(range(1, 100, 2), f"b{i}")], job, "b")
        compacting = sum(m.has_compact_part() for m in a.messages + b.messages)
        _, dropped = keep_one_compaction_per_bucket([a.messages, b.messages])
        out = commit_write(job, [a.messages, b.messages], sketches=[a.sketches, b.sketches])
        assert out.compactions_dropped == dropped
        if i:
            assert compacting == 4 and dropped == 2  # both tasks compacted both buckets
        assert _rows(warehouse) == {k: f"{'a' if k % 2 == 0 else 'b'}{i}" for k in range(100)}
    kinds = [s.commit_kind.value for s in impl.Catalog(warehouse).get_table("db.t").snapshots()]
    assert kinds == ["APPEND", "APPEND", "COMPACT", "APPEND", "COMPACT"]
    assert orphans(path) == [] and intents_left(warehouse) == []


@pytest.fixture(scope="module")
def pypaimon_python():
    from pypaimon_env import pypaimon_python as build

    return build()


def test_files_with_the_same_sequence_numbers_merge_right_in_impl_and_pypaimon(warehouse, pypaimon_python):
    """Two tasks, one bucket, 50 keys each: their files hold the same sequence numbers (0..49).
    Every key's versions come from one task, so reads, a later write and a full compaction are
    defined -- in impl and in pypaimon 2.1.0 (Paimon's own level 0 orders such files by name)."""
    from pypaimon_env import READ_TABLE, run_pypaimon

    path = os.path.join(warehouse, "db.db", "t")
    job = _job(path)
    a = write_task([_batch(range(0, 100, 2), "a")], job, "a")
    b = write_task([_batch(range(1, 100, 2), "b")], job, "b")
    (fa,), (fb,) = a.messages[0].new_files, b.messages[0].new_files
    assert (fa.min_sequence_number, fa.max_sequence_number) == (fb.min_sequence_number, fb.max_sequence_number) == (0, 49)
    commit_write(job, [a.messages, b.messages], sketches=[a.sketches, b.sketches])
    expected = {k: "a" if k % 2 == 0 else "b" for k in range(100)}

    def pypaimon_rows():
        return {r["id"]: r["v"] for r in run_pypaimon(READ_TABLE, warehouse=warehouse, table="db.t", sort_by=["id"])}

    assert _rows(warehouse) == expected and pypaimon_rows() == expected
    job = _job(path)  # a later write (sequence numbers from 50 on) updates keys of both tasks
    commit_write(job, [write_task([_batch(range(0, 100, 5), "c")], job, "c").messages])
    expected.update({k: "c" for k in range(0, 100, 5)})
    assert _rows(warehouse) == expected and pypaimon_rows() == expected
    table = impl.Catalog(warehouse).get_table("db.t")
    table.compact(full=True)
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND", "APPEND", "COMPACT"]
    assert _rows(warehouse) == expected and pypaimon_rows() == expected
    assert orphans(path) == []


# ====================================================================== through Spark


def test_issue_example_spark_range_into_a_primary_key_table(spark, table_path, warehouse):
    (spark.range(100_000).selectExpr("id", "'a' as tag").write.format("paimon_py").mode("append")
     .option("primary-key", "id").option("bucket", "4").save(table_path))
    back = spark.read.format("paimon_py").load(table_path)
    assert back.count() == 100_000
    assert back.agg(F.sum("id")).first()[0] == sum(range(100_000))
    table = impl.Catalog(warehouse).get_table("db.t")
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND"]
    assert orphans(table_path) == [] and intents_left(warehouse) == []


def test_random_order_keys_from_several_tasks_then_update_and_compact(spark, table_path, warehouse,
                                                                       pypaimon_python):
    """Unique keys in random order over 3 tasks (key ranges overlap everywhere), written again
    with new values by 3 tasks into a table whose writers compact at 2 runs (every task compacts
    every bucket), then fully compacted: the rows are right at every step, for pypaimon too."""
    from pypaimon_env import READ_TABLE, run_pypaimon

    n = 6000
    first = spark.range(n).selectExpr("id", "concat('a', id) as v").repartition(3)
    (first.write.format("paimon_py").option("primary-key", "id").option("bucket", "2")
     .option("num-sorted-run.compaction-trigger", "2").mode("append").save(table_path))
    expected = {k: f"a{k}" for k in range(n)}
    assert _rows(warehouse) == expected

    second = spark.range(0, n, 3).selectExpr("id", "concat('b', id) as v").repartition(3)
    second.write.format("paimon_py").mode("append").save(table_path)
    expected.update({k: f"b{k}" for k in range(0, n, 3)})
    table = impl.Catalog(warehouse).get_table("db.t")
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND", "APPEND", "COMPACT"]
    assert {r.id: r.v for r in spark.read.format("paimon_py").load(table_path).collect()} == expected
    theirs = run_pypaimon(READ_TABLE, warehouse=warehouse, table="db.t", sort_by=["id"])
    assert {r["id"]: r["v"] for r in theirs} == expected and len(theirs) == n

    res = impl.spark.compact(spark, table_path, full=True)
    assert len(res.snapshot_ids) == 1
    assert _rows(warehouse) == expected
    theirs = run_pypaimon(READ_TABLE, warehouse=warehouse, table="db.t", sort_by=["id"])
    assert {r["id"]: r["v"] for r in theirs} == expected and len(theirs) == n
    assert orphans(table_path) == [] and intents_left(warehouse) == []


def test_key_written_by_two_tasks_is_refused_naming_it(spark, table_path, warehouse):
    # two tasks, 0..19 and 20..39, so ids 0..9 (= 30..39 % 30) come from both
    df = spark.range(0, 40, numPartitions=2).selectExpr("id % 30 as id", "'x' as v")
    with pytest.raises(Exception, match=r"WriteRoutingError.*key \{'id': \d\}.*write_dataframe.*"
                                        r"df\.repartition\('id'\)"):
        (df.write.format("paimon_py").option("primary-key", "id").option("bucket", "2").mode("append")
         .save(table_path))
    assert impl.Catalog(warehouse).get_table("db.t").snapshots() == []
    assert data_files(table_path) == set() and intents_left(warehouse) == []
    # the fixes the message names work
    df.repartition("id").write.format("paimon_py").mode("append").save(table_path)
    assert len(_rows(warehouse)) == 30


def test_results_print_a_short_summary(spark, table_path):
    df = spark.range(0, 5000).selectExpr("cast(id % 5 as string) as dt", "id", "id * 2 as v")
    res = impl.spark.write_dataframe(df, table_path, primary_keys=["dt", "id"], partition_keys=["dt"],
                                     options={"bucket": "4"})
    assert len(res.messages) == 20  # 5 partitions x 4 buckets
    assert res.outcome.key_check.shared_buckets == 0  # routed: one task per bucket, nothing to check
    text = repr(res)
    assert len(text) < 500 and str(res) == text
    assert f"snapshots={res.snapshot_ids}" in text and "5,000 rows" in text and "20 bucket(s)" in text
    assert len(repr(res.outcome)) < 500 and f"snapshots={res.snapshot_ids}" in repr(res.outcome)
    comp = impl.spark.compact(spark, table_path, full=True)
    assert len(repr(comp)) < 300 and f"snapshots={comp.snapshot_ids}" in repr(comp)
    uncommitted = impl.spark.write_dataframe(df, table_path, commit=False)
    assert "not committed" in repr(uncommitted) and len(repr(uncommitted)) < 500
    uncommitted.finish(False)
    # a printed job or table reference never shows the storage options (they may hold secrets)
    ref = impl.spark.TableRef.from_path("s3://b/wh/db.db/t", storage_options={"fs.s3.accessKeySecret": "hunter2"})
    assert "hunter2" not in repr(ref) and "hunter2" not in repr(res.job.__class__(ref, "w", "u", 0, ()))


def test_postpone_table_compacted_by_spark_and_spark_writes_refused(spark, table_path, warehouse):
    """A postpone-bucket table written by impl: Spark writes are refused by name; impl.spark.compact
    moves the postponed rows of every partition into real buckets in one COMPACT snapshot."""
    catalog = impl.Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        pa.field("v", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "-2", "postpone.default-bucket-num": "2"})
    ids = list(range(40))
    table.write_arrow(pa.table({"dt": [f"p{i % 3}" for i in ids], "id": ids, "v": ids}, schema=schema))
    table.write_arrow(pa.table({"dt": ["p0"], "id": [0], "v": [99]}, schema=schema))
    df = spark.range(3).selectExpr("'p0' as dt", "id", "id as v")
    with pytest.raises(Exception, match="postpone bucket table"):
        df.write.format("paimon_py").mode("append").save(table_path)
    assert spark.read.format("paimon_py").load(table_path).count() == 0  # postponed: unread
    res = impl.spark.compact(spark, table_path)
    assert len(res.snapshot_ids) == 1 and res.compacted_buckets == 3 + 3 * 2  # bucket -2 and 2 buckets each
    table = impl.Catalog(warehouse).get_table("db.t")
    assert [s.commit_kind.value for s in table.snapshots()][-1] == "COMPACT"
    got = {(r.dt, r.id): r.v for r in spark.read.format("paimon_py").load(table_path).collect()}
    assert got == {(f"p{i % 3}", i): (99 if i == 0 else i) for i in ids}
    assert orphans(table_path) == [] and intents_left(warehouse) == []

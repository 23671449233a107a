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
from impl.mergetree.kv import KVLayout  # noqa: E402
from impl.mergetree.read import read_kv_tables  # noqa: E402
from impl.spark.keycheck import (  # noqa: E402
    KeySketchBuilder,
    check_shared_keys,
    keep_one_compaction_per_bucket,
    key_hashes,
    key_slots,
)
from impl.spark.source import prepare_write  # noqa: E402
from impl.spark.writer import WriteRoutingError, commit_write, write_task  # noqa: E402
from impl.table.write import conform_input  # noqa: E402

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


def _mixed_batch(rng, n) -> pa.RecordBatch:
    ks = rng.integers(0, 10**6, n)
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


@pytest.mark.parametrize("bucket_key", [None, "k1"])
def test_a_tasks_sketch_holds_every_key_its_files_hold(warehouse, bucket_key):
    """No false negatives: the bits a task sets (from the rows it writes) cover the keys the
    driver reads from its files, for every key type, partitioned, default or own bucket key."""
    opts = {"bucket": "3", **({"bucket-key": bucket_key} if bucket_key else {})}
    job = prepare_write(os.path.join(warehouse, "db.db", "m"), MIXED,
                        {"primary-key": "dt,k1,k2,k3,k4,k5", "partition": "dt"}, opts)
    rng = np.random.default_rng(5)
    out = write_task([_mixed_batch(rng, 700), _mixed_batch(rng, 500)], job, "t0")
    table = job.ref.table()
    layout = KVLayout(table.schema)
    assert set(out.sketches) == {(m.partition, m.bucket) for m in out.messages}
    assert len(out.sketches) == 9  # 3 partitions x 3 buckets
    assert sum(s.rows for s in out.sketches.values()) == 1200
    for m in out.messages:
        sketch = out.sketches[(m.partition, m.bucket)]
        keys = read_kv_tables(table.file_io, table.paths.bucket_dir(table.partition_cache.path(m.partition), m.bucket),
                              layout, m.new_files, list(layout.key_columns))
        slots = key_slots(key_hashes([keys.column(c) for c in layout.key_columns], layout.key_types), sketch.size)
        assert sketch.bits_at(sketch.size)[slots].all()
        assert sketch.size <= 8 * 1024  # about 8 bits per row, a power of two


def test_disjoint_key_ranges_pass_without_reading(warehouse):
    job = _job(os.path.join(warehouse, "db.db", "t"), 2)
    a = write_task([_batch(range(0, 1000))], job, "a")
    b = write_task([_batch(range(1000, 2000))], job, "b")
    stats = check_shared_keys(job.ref.table(), [a.messages, b.messages])  # no sketches needed
    assert (stats.shared_buckets, stats.overlapping, stats.files_read) == (2, 0, 0)


def _sketches(table, batches_per_task, **builder):
    out = []
    for batches in batches_per_task:
        b = KeySketchBuilder(table, **builder)
        for batch in batches:
            b.add(conform_input(pa.Table.from_batches([batch]), table))
        out.append(b.finish())
    return out


def test_sketches_clear_interleaved_keys_without_reading(warehouse):
    job = _job(os.path.join(warehouse, "db.db", "t"))
    evens, odds = [_batch(range(0, 40, 2))], [_batch(range(1, 40, 2))]
    a, b = write_task(evens, job, "a"), write_task(odds, job, "b")
    table = job.ref.table()
    # 4096 bits per key: 20 keys each in 2^17 bits, no bit in common (the hash is fixed)
    sketches = _sketches(table, [evens, odds], bits_per_key=4096)
    stats = check_shared_keys(table, [a.messages, b.messages], sketches)
    assert (stats.overlapping, stats.cleared_by_sketch, stats.confirmed, stats.files_read) == (1, 1, 0, 0)


def test_candidate_bits_are_confirmed_exactly(warehouse):
    """Sketches forced down to 64 bits: 500 keys per task set every bit, so every key is a
    candidate; the exact intersection finds none shared (accepted), then one (refused)."""
    job = _job(os.path.join(warehouse, "db.db", "t"))
    evens, odds = [_batch(range(0, 1000, 2))], [_batch(range(1, 1000, 2))]
    a, b = write_task(evens, job, "a"), write_task(odds, job, "b")
    table = job.ref.table()
    small = _sketches(table, [evens, odds], max_bits=64)
    assert all(s.size == 64 for sk in small for s in sk.values())
    stats = check_shared_keys(table, [a.messages, b.messages], small)
    assert (stats.confirmed, stats.files_read, stats.rows_read, stats.candidate_rows) == (1, 2, 1000, 1000)

    # the default sketches let through only the keys whose bit the other task set too
    stats = check_shared_keys(table, [a.messages, b.messages], [a.sketches, b.sketches])
    assert stats.confirmed == 1 and 0 < stats.candidate_rows < 400

    odds_and_one = [_batch([*range(1, 1000, 2), 778])]
    c = write_task(odds_and_one, job, "c")
    for sketches in (None, [a.sketches, c.sketches], _sketches(table, [evens, odds_and_one], max_bits=64)):
        with pytest.raises(WriteRoutingError, match=r"key \{'id': 778\} \(bucket 0\).*write_dataframe.*"
                                                    r"df\.repartition\('id'\)") as e:
            check_shared_keys(table, [a.messages, c.messages], sketches)
        assert e.value.key == {"id": 778} and e.value.bucket == 0


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


# ====================================================================== through Spark


@pytest.fixture(scope="module")
def pypaimon_python():
    from pypaimon_env import pypaimon_python as build

    return build()


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

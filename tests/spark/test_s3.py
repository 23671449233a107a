"""The Spark connector and the main job on an S3 server (moto on 127.0.0.1, see tests/conftest.py).

Spark runs locally, so its Python workers share this machine, but nothing shares a disk with them:
the table, the write intents and the read claims live in the bucket, and every process opens the
store from the storage options it was given (the workers' environment has no AWS credentials).
"""

from __future__ import annotations

import sys

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from dataclasses import dataclass  # noqa: E402

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from spark_helpers import crash_first_attempt_s3_fs, explode_on_13, store_files, store_io  # noqa: E402

import impl  # noqa: E402
import impl.spark  # noqa: E402
from fault_injection.orphans import find_orphans  # noqa: E402
from impl.errors import InvalidWarehouseError  # noqa: E402
from impl.jobs.tables import TableRef  # noqa: E402
from impl.jobs.tracking import tracking_filesystem  # noqa: E402
from impl.spark.claims import ClaimLedger  # noqa: E402


@dataclass(frozen=True)
class S3Table:
    bucket: str
    options: dict[str, str]

    @property
    def warehouse(self) -> str:
        return f"s3://{self.bucket}/wh"

    @property
    def path(self) -> str:
        return f"{self.warehouse}/db.db/t"

    @property
    def root(self) -> str:  # the table as the store spells it
        return f"{self.bucket}/wh/db.db/t"

    def files(self) -> set[str]:
        return store_files(self.options, self.root)

    def intents(self) -> set[str]:
        """What is left of the write logs: intents and task attempts' start/end records."""
        return (store_files(self.options, f"{self.bucket}/wh/.paimon_py_spark/writes")
                | store_files(self.options, f"{self.bucket}/wh/.paimon_py_spark/attempts"))

    def intents_after_failed_job(self) -> set[str]:
        """:meth:`intents`, less the start records a killed attempt's last PUT may leave: Spark
        kills the running attempts of a failed job without waiting (impl/jobs/tracking.py), so
        an attempt killed just after it recorded its start can land that record after the
        driver's last sweep. Such an attempt wrote nothing (``begin`` records the start before
        any intent or file), which the caller checks: no intent, no file, no end record."""
        return {p for p in self.intents() if not p.endswith(".started")}

    def orphans(self) -> list[str]:
        return [s.path for s in find_orphans(store_io(self.options), self.root)]

    def table(self):
        return impl.Catalog(self.warehouse, options=self.options).get_table("db.t")


@pytest.fixture
def s3t(s3_server, s3_bucket) -> S3Table:
    return S3Table(s3_bucket, s3_server.options())


_explode_on_13 = F.udf(explode_on_13, T.LongType())


def _read(spark, s3t: S3Table, **extra) -> dict:
    rows = spark.read.format("paimon_py").options(**s3t.options, **extra).load(s3t.path).collect()
    return {r.id: r.v for r in rows}


def test_df_write_and_read_primary_key_table_on_s3(spark, s3t):
    df = spark.createDataFrame([(k, k * 2) for k in range(30)], "id long, v long").coalesce(1)
    (df.write.format("paimon_py").options(**s3t.options).option("primary-key", "id").option("bucket", "2")
       .mode("append").save(s3t.path))
    upsert = spark.createDataFrame([(k, -k) for k in range(20, 40)], "id long, v long").coalesce(1)
    upsert.write.format("paimon_py").options(**s3t.options).mode("append").save(s3t.path)

    assert _read(spark, s3t) == {**{k: k * 2 for k in range(20)}, **{k: -k for k in range(20, 40)}}
    assert _read(spark, s3t, **{"snapshot-id": "1"}) == {k: k * 2 for k in range(30)}
    table = s3t.table()
    assert table.primary_keys == ["id"] and table.options.bucket == 2
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND", "APPEND"]
    # the storage options reached the store, not the table: no endpoint, key or secret in its schema
    schema = store_io(s3t.options).read_bytes(f"{s3t.root}/schema/schema-0").decode()
    assert all(v not in schema for v in s3t.options.values()) and "fs.s3" not in schema
    assert s3t.orphans() == [] and s3t.intents() == set()
    # the read tasks agreed through claims in the bucket (write-once objects), not a local directory
    assert store_files(s3t.options, f"{s3t.bucket}/wh/.paimon_py_spark/claims")


def test_df_write_from_several_tasks_into_a_primary_key_table_on_s3(spark, s3t):
    """Tasks share buckets: accepted with distinct keys; a key written by two tasks is found by
    reading the key columns of their files from the store, and refused with nothing left behind."""
    df = spark.range(0, 300, numPartitions=3).selectExpr("id * 7 % 300 as id", "id as v")
    (df.write.format("paimon_py").options(**s3t.options).option("primary-key", "id").option("bucket", "2")
       .mode("append").save(s3t.path))
    assert _read(spark, s3t) == {k * 7 % 300: k for k in range(300)}
    before = s3t.files()
    shared = spark.range(0, 40, numPartitions=2).selectExpr("id % 30 as id", "-id as v")  # 0..9 from both tasks
    with pytest.raises(Exception, match=r"key \{'id': \d\}.*written by two Spark tasks"):
        shared.write.format("paimon_py").options(**s3t.options).mode("append").save(s3t.path)
    assert s3t.files() == before and s3t.intents() == set() and s3t.orphans() == []
    assert len(s3t.table().snapshots()) == 1


def test_write_dataframe_compact_and_read_on_s3(spark, s3t):
    schema = "dt string, id long, v long, op string"
    first = spark.createDataFrame([(f"d{k % 2}", k, k, "+I") for k in range(60)], schema)
    # no key is both updated and deleted: Spark does not order rows of one key that come from
    # different input partitions, so such a batch would have no defined result
    second = spark.createDataFrame([(f"d{k % 2}", k, 100 + k, "+U") for k in range(0, 60, 3)]
                                   + [(f"d{k % 2}", k, 0, "-D") for k in range(1, 60, 5) if k % 3], schema)
    opts = {"bucket": "2", "num-sorted-run.compaction-trigger": "10", **s3t.options}
    r1 = impl.spark.write_dataframe(first, s3t.path, primary_keys=["dt", "id"], partition_keys=["dt"],
                                    options=opts, row_kind_column="op")
    r2 = impl.spark.write_dataframe(second, s3t.path, options=s3t.options, row_kind_column="op")
    assert r1.snapshot_ids == [1] and r2.snapshot_ids == [2]

    res = impl.spark.compact(spark, s3t.path, full=True, options=s3t.options)
    assert len(res.snapshot_ids) == 1 and res.compacted_buckets == 4
    assert res.files_before == 8 and res.files_after == 4

    want = {k: (100 + k if k % 3 == 0 else k) for k in range(60) if k % 5 != 1 or k % 3 == 0}
    assert _read(spark, s3t) == want
    table = s3t.table()
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND", "APPEND", "COMPACT"]
    got = table.to_arrow()
    assert dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist(), strict=True)) == want
    # the compaction removed nothing a snapshot uses, and left nothing behind
    assert s3t.orphans() == [] and s3t.intents() == set()


def test_failing_df_write_on_s3_leaves_no_snapshot_and_no_file(spark, s3t):
    impl.spark.write_dataframe(spark.createDataFrame([(k, k) for k in range(10)], "id long, v long"), s3t.path,
                               options=s3t.options)
    before = s3t.files()
    # two partitions: the first writes its file and succeeds, the second fails every attempt
    df = spark.createDataFrame([(k, k) for k in range(20)], "id long, v long").repartition(2, "id") \
        .withColumn("v", _explode_on_13("v"))
    with pytest.raises(Exception, match="bad row 13"):
        df.write.format("paimon_py").options(**s3t.options).mode("append").save(s3t.path)
    assert s3t.files() == before
    assert len(s3t.table().snapshots()) == 1
    assert s3t.intents_after_failed_job() == set()


def test_failing_routed_write_on_s3_leaves_no_snapshot_and_no_file(spark, s3t):
    seed = spark.createDataFrame([(k, k) for k in range(10)], "id long, v long")
    impl.spark.write_dataframe(seed, s3t.path, primary_keys=["id"], options={"bucket": "4", **s3t.options})
    before = s3t.files()
    df = spark.createDataFrame([(k, k) for k in range(40)], "id long, v long").withColumn("v", _explode_on_13("v"))
    with pytest.raises(Exception, match="bad row 13"):
        impl.spark.write_dataframe(df, s3t.path, num_tasks=2, options=s3t.options)
    assert s3t.files() == before
    assert len(s3t.table().snapshots()) == 1
    assert s3t.intents_after_failed_job() == set()


def test_retried_task_attempt_on_s3_leaves_no_orphans(spark, s3t):
    """Attempt 0 of task 0 dies right after a data file landed in the bucket; attempt 1 redoes
    the work. The commit publishes attempt 1's files; the intent log in the bucket names the
    dead attempt's file, which is deleted."""
    seed = spark.createDataFrame([(k, k) for k in range(10)], "id long, v long")
    impl.spark.write_dataframe(seed, s3t.path, primary_keys=["id"], options={"bucket": "4", **s3t.options})
    df = spark.createDataFrame([(k, -k) for k in range(200)], "id long, v long")
    res = impl.spark.write_dataframe(df, s3t.path, num_tasks=2, fs_factory=crash_first_attempt_s3_fs(s3t.options))
    assert res.outcome is not None and res.outcome.leftovers_removed
    assert all(p.endswith(".parquet") for p in res.outcome.leftovers_removed)
    assert _read(spark, s3t) == {k: -k for k in range(200)}
    assert s3t.orphans() == [] and s3t.intents() == set()
    live = {f.file_name for s in s3t.table().new_read_builder().new_scan().plan().splits() for f in s.files}
    assert {f.rsplit("/", 1)[-1] for f in s3t.files() if f.endswith(".parquet")} == live


def test_missing_or_partial_storage_options_name_the_options(spark, s3t, monkeypatch):
    impl.spark.write_dataframe(spark.range(3).withColumn("v", F.col("id")), s3t.path, options=s3t.options)
    # no options at all, and no credentials anywhere: the error says which options to give
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(InvalidWarehouseError, match=r"fs\.s3\.endpoint.*fs\.s3\.accessKeyId"):
        TableRef.from_path(s3t.path).table()
    # through Spark: a key without its secret (the error is raised in the planning worker)
    partial = {k: v for k, v in s3t.options.items() if k != "fs.s3.accessKeySecret"}
    with pytest.raises(Exception, match=r"fs\.s3\.accessKeySecret"):
        spark.read.format("paimon_py").options(**partial).load(s3t.path).collect()
    # a storage option is never taken for a table option, and an unknown key is refused
    with pytest.raises(Exception, match="unknown option"):
        spark.read.format("paimon_py").options(**s3t.options).option("s3endpoint", "x").load(s3t.path).collect()
    with pytest.raises(impl.spark.SparkConnectorError, match="unknown option"):
        impl.spark.compact(spark, s3t.path, options={**s3t.options, "no-such-option": "1"})


def test_tracking_filesystem_logs_s3_writes_before_they_land(s3_server, s3_bucket):
    """The write log of a task works on s3fs, whose blocking methods live on the instance."""
    fs = store_io(s3_server.options()).fs
    logged: list[tuple[str, bool]] = []
    tracked = tracking_filesystem(fs, lambda p: logged.append((p, fs.exists(p))))
    tracked.pipe_file(f"{s3_bucket}/t/bucket-0/data-1.parquet", b"x")
    tracked.pipe_file(f"{s3_bucket}/t/bucket-0/", b"")  # a directory marker is no file of the table
    tracked.pipe_file(f"{s3_bucket}/t/snapshot/snapshot-1", b"1", mode="create")
    with pytest.raises(FileExistsError):  # the conditional PUT still reaches the store as one
        tracked.pipe_file(f"{s3_bucket}/t/snapshot/snapshot-1", b"2", mode="create")
    assert logged == [(f"{s3_bucket}/t/bucket-0/data-1.parquet", False), (f"{s3_bucket}/t/snapshot/snapshot-1", False)]
    assert fs.cat_file(f"{s3_bucket}/t/snapshot/snapshot-1") == b"1"


def test_claim_ledger_in_the_bucket_keeps_the_first_value(s3_server, s3_bucket):
    ref = TableRef.from_path(f"s3://{s3_bucket}/wh/db.db/t", storage_options=s3_server.options())
    ledger = ClaimLedger.for_task("app-1", True, ref)  # local mode, but the warehouse is the bucket's
    assert ledger.root.startswith(f"{s3_bucket}/wh/.paimon_py_spark/claims/")
    assert ledger.claim("plan/x", "first") == "first"
    assert ClaimLedger.for_task("app-1", False, ref).claim("plan/x", "second") == "first"
    assert ledger.claim("plan/y", "other") == "other"


# ---------------------------------------------------------------------- the main job on S3


def test_simulation_on_s3_with_faults(spark, s3_server, s3_bucket, tmp_path, capsys):
    from simulation import spark_job

    opts = s3_server.options()
    rc = spark_job.main(["--warehouse", f"s3://{s3_bucket}/sim", "--reports", str(tmp_path / "reports"),
                         "--s3-endpoint", opts["fs.s3.endpoint"], "--s3-access-key", opts["fs.s3.accessKeyId"],
                         "--s3-secret-key", opts["fs.s3.accessKeySecret"], "--s3-region", opts["fs.s3.region"],
                         "--writers", "2", "--commits", "3", "--keys", "400", "--batch-rows", "100",
                         "--partitions", "2", "--buckets", "2", "--compact-interval", "1.5",
                         "--expire-interval", "1.5", "--retain-min", "2", "--retain-max", "4",
                         "--faults", "--fault-rate", "0.5", "--seed", "5", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "VERIFICATION PASSED" in out
    (run,) = list((tmp_path / "reports").iterdir())
    report = (run / "report.md").read_text()
    assert "Verification: PASSED" in report and "| writer commits | 6 |" in report
    assert f"s3://{s3_bucket}/sim" in report and opts["fs.s3.accessKeySecret"] not in report
    # the table is in the bucket, and nothing of the write logs is left there
    table = impl.Catalog(f"s3://{s3_bucket}/sim", options=opts).get_table("sim.events")
    assert table.to_arrow().num_rows > 0
    assert store_files(opts, f"{s3_bucket}/sim/.paimon_py_spark/writes") == set()
    assert store_files(opts, f"{s3_bucket}/sim/.paimon_py_spark/attempts") == set()


def test_simulation_flags_for_object_stores(capsys):
    from simulation.spark_job import parse_args

    cfg = parse_args(["--warehouse", "s3://b/p", "--s3-endpoint", "http://127.0.0.1:9", "--s3-region", "r",
                      "--option", "s3.path-style-access=true"])
    assert dict(cfg.storage_options) == {"fs.s3.endpoint": "http://127.0.0.1:9", "fs.s3.region": "r",
                                         "s3.path-style-access": "true"}
    assert parse_args(["--embedded-s3"]).embedded_s3
    for bad, message in ((["--s3-endpoint", "http://x"], "need an object-store warehouse"),
                         (["--embedded-s3", "--warehouse", "s3://b/p"], "--embedded-s3 chooses"),
                         (["--warehouse", "s3://b/p", "--option", "endpoint"], "expected KEY=VALUE"),
                         (["--warehouse", "s3://b/p", "--option", "bucket=4"], "not a storage option")):
        with pytest.raises(SystemExit):
            parse_args(bad)
        assert message in capsys.readouterr().err
    # secrets never reach the report's configuration table
    secret = parse_args(["--warehouse", "s3://b/p", "--s3-secret-key", "sshh"]).redacted()
    assert secret["storage_options"] == {"fs.s3.accessKeySecret": "***"}


def test_embedded_s3_serves_a_bucket_and_names_the_extra_when_moto_is_missing(monkeypatch, capsys):
    from simulation import spark_job
    from simulation.embedded_s3 import EmbeddedS3

    server = EmbeddedS3()
    store = server.start()
    try:
        cat = impl.Catalog(store.warehouse, options=store.options())
        cat.create_database("db")
        t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
        t.write_arrow(pa.table({"id": [1, 2]}))
        assert cat.get_table("db.t").to_arrow().column("id").to_pylist() == [1, 2]
    finally:
        server.stop()
    monkeypatch.setitem(sys.modules, "moto.server", None)  # as if moto were not installed
    assert spark_job.main(["--embedded-s3", "--no-progress"]) == 2
    assert 'pip install -e ".[s3-server]"' in capsys.readouterr().err

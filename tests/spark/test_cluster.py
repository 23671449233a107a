"""The Spark connector on a real Spark standalone cluster: a master and two workers on 127.0.0.1.

The cluster (simulation/spark_cluster.py) runs its daemons through ``pyspark/bin/spark-class``;
each worker offers 1 core and 1g, so the application gets two executors, separate JVMs with
their own Python workers, started by different workers in different work directories, with none
of the driver's environment (PYTHONPATH in particular) unless the application ships it.

The application runs in a subprocess (tests/spark/cluster_job.py): a process holds one
SparkContext and this one may hold the local ``spark`` fixture's. It writes a partitioned
primary-key table, upserts with deletes, compacts and reads, once on a local warehouse (the
workers share this machine's disk) and once on an S3 server (moto on 127.0.0.1: nothing shared
but the store, the realistic cluster setup). The test checks the rows, the snapshots, that every
step ran tasks on both executors, that the executors imported the driver's ``impl``, and that
nothing is left behind (orphan files, write intents).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from spark_helpers import intents_left, orphans, store_files, store_io  # noqa: E402

import impl  # noqa: E402
from fault_injection.orphans import find_orphans  # noqa: E402
from simulation.spark_cluster import ClusterStartError, SparkCluster  # noqa: E402

JOB = os.path.join(os.path.dirname(__file__), "cluster_job.py")
KEYS = 60
WANT = {(f"d{k % 2}", k): (100 + k if k % 3 == 0 else k) for k in range(KEYS) if k % 5 != 1}
STEPS = ("write", "upsert", "compact", "read", "filtered_read")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = SparkCluster(workers=2, cores=1, memory="1g", root=str(tmp_path_factory.mktemp("spark-cluster")))
    c.start(timeout=90)
    yield c
    c.stop()  # raises if any process of the cluster survives
    assert processes_under(c.root) == []  # daemons, executors and their Python workers all gone


def run_job(cluster: SparkCluster, spec: dict, tmp_path) -> dict:
    spec_path, out_path = tmp_path / "spec.json", tmp_path / "out.json"
    spec_path.write_text(json.dumps({"master": cluster.master_url, "executors": 2, **spec}))
    try:
        proc = subprocess.run([sys.executable, JOB, str(spec_path), str(out_path)], capture_output=True, text=True,
                              timeout=300)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the cluster job did not finish in {e.timeout:.0f} s:\n{e.stderr!r:.6000}\n"
                    f"cluster logs:\n{cluster.logs()}")
    if proc.returncode != 0:
        pytest.fail(f"the cluster job failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}\n"
                    f"cluster logs:\n{cluster.logs()}")
    return json.loads(out_path.read_text())


def check_table_result(name: str, res: dict, executors: list[str]) -> None:
    rows = {(dt, k): v for dt, k, v in res["rows"]}
    assert rows == WANT and len(res["rows"]) == len(WANT), f"{name}: rows read through the cluster"
    assert res["d1_rows"] == sorted([dt, k, v] for (dt, k), v in WANT.items() if dt == "d1"), name
    assert (res["write_snapshots"], res["upsert_snapshots"], res["compact"]["snapshots"]) == ([1], [2], [3]), name
    # the append table: every row once, though one task's first attempt died halfway
    assert res["append_snapshots"] == [1], name
    assert res["append_rows"] == sorted([f"d{k % 2}", k, k] for k in range(KEYS)), f"{name}: append rows"
    # 2 partitions x 2 buckets, one file per bucket per write; full compaction leaves one per bucket
    assert res["compact"]["buckets"] == 4 and res["compact"]["files_before"] == 8, name
    assert res["compact"]["files_after"] == 4, name
    for step in STEPS:
        tasks = res["steps"][step]["tasks"]
        assert sorted(tasks) == executors and all(n > 0 for n in tasks.values()), \
            f"{name}: step {step} ran tasks {tasks}, not on both executors {executors}"


# slow: five JVMs start (master, workers, driver, executors): 47 s on this 2-core machine when
# quiet, up to 2 min under load. CI runs slow tests too (.ci/run deselects nothing).
@pytest.mark.slow
def test_write_upsert_compact_read_on_a_standalone_cluster(cluster, s3_server, s3_bucket, tmp_path):
    status = cluster.status()
    assert status["aliveworkers"] == 2 and status["cores"] == 2
    warehouse = str(tmp_path / "wh")
    local_path = os.path.join(warehouse, "db.db", "t")
    s3_options = s3_server.options()
    s3_warehouse = f"s3://{s3_bucket}/wh"
    out = run_job(cluster, {"tables": {
        "local": {"path": local_path, "append_writer": "spark"},
        "s3": {"path": f"{s3_warehouse}/db.db/t", "options": s3_options},
    }}, tmp_path)

    # the application ran on the cluster's master, with one executor per worker
    assert out["master"] == cluster.master_url
    executors = out["executors"]
    assert len(executors) == 2 and all(e.split("@")[1].startswith("127.0.0.1:") for e in executors)
    status = cluster.status()
    assert [a["name"] for a in status["completedapps"] + status["activeapps"]
            if a["id"] == out["app_id"]] == ["paimon-py-cluster-test"]

    # executors: own processes, in their workers' work directories, importing the driver's impl
    # with the venv's interpreter (the workers' environment has no PYTHONPATH: the session ships it)
    assert sorted(out["probe_tasks"]) == executors and all(n > 0 for n in out["probe_tasks"].values())
    pids = {pid for pid, _, _, _ in out["probe"]}
    assert out["driver_pid"] not in pids
    dirs = {os.path.dirname(os.path.dirname(cwd)) for _, cwd, _, _ in out["probe"]}  # <worker>/<app>/<executor>
    assert dirs == set(cluster.worker_dirs)
    assert {(f, exe) for _, _, f, exe in out["probe"]} == {(impl.__file__, sys.executable)}
    assert out["driver_impl"] == impl.__file__

    # local warehouse (shared disk)
    check_table_result("local", out["tables"]["local"], executors)
    table = impl.Catalog(warehouse).get_table("db.t")
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND", "APPEND", "COMPACT"]
    assert table.primary_keys == ["dt", "id"] and table.partition_keys == ["dt"] and table.options.bucket == 2
    assert orphans(local_path) == [] and intents_left(warehouse) == []
    # the native append write: its failed attempt's files are gone, its staging directory too
    assert orphans(local_path + "_append") == []
    assert [f for _, _, files in os.walk(os.path.join(warehouse, ".paimon_py_spark", "staging")) for f in files] == []
    # a cluster's read tasks agree through claims in the warehouse, not in a local temp directory
    assert os.listdir(os.path.join(warehouse, ".paimon_py_spark", "claims"))

    # S3 (nothing shared but the store)
    check_table_result("s3", out["tables"]["s3"], executors)
    s3_table = impl.Catalog(s3_warehouse, options=s3_options).get_table("db.t")
    assert [s.commit_kind.value for s in s3_table.snapshots()] == ["APPEND", "APPEND", "COMPACT"]
    assert [s.path for s in find_orphans(store_io(s3_options), f"{s3_bucket}/wh/db.db/t")] == []
    assert not (store_files(s3_options, f"{s3_bucket}/wh/.paimon_py_spark/writes")
                | store_files(s3_options, f"{s3_bucket}/wh/.paimon_py_spark/attempts"))
    assert store_files(s3_options, f"{s3_bucket}/wh/.paimon_py_spark/claims")


def processes_under(root) -> list[int]:
    """Live processes whose working directory is ``root`` or below (the daemons and executors)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd == str(root) or cwd.startswith(f"{root}/"):
            found.append(int(pid))
    return found


def test_a_cluster_that_cannot_start_names_the_daemon_shows_its_log_and_leaves_nothing(tmp_path):
    c = SparkCluster(workers=1, memory="lots", root=str(tmp_path))
    with pytest.raises(ClusterStartError, match="the Spark worker-0 exited with code 1") as e:
        c.start(timeout=90)
    assert "Amount of memory to use" in str(e.value)  # the worker's own complaint, from its log
    assert processes_under(tmp_path) == []  # the master it started too is gone

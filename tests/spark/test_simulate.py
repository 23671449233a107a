"""The simulation CLI (README command 1) runs with small settings, verifies, reports and exits 0."""

from __future__ import annotations

import os
import re

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


def test_simulation_cli_small_run_with_faults(spark, tmp_path, capsys):
    """With --catalog rest (the writers commit through impl's REST catalog server); the other
    test, and the main job .ci/run runs, use the filesystem catalog."""
    from simulation import spark_job

    rc = spark_job.main(["--warehouse", str(tmp_path / "wh"), "--reports", str(tmp_path / "reports"),
                        "--writers", "2", "--commits", "3", "--keys", "600", "--batch-rows", "150",
                        "--partitions", "2", "--buckets", "2", "--compact-interval", "1.5", "--compactors", "2",
                        "--expire-interval", "1.5", "--retain-min", "2", "--retain-max", "4",
                        "--faults", "--fault-rate", "0.5", "--seed", "11", "--no-progress", "--catalog", "rest"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "VERIFICATION PASSED" in out
    published = re.search(r"REST server commits published / lost races\W*(\d+) / (\d+)", out)
    assert published and int(published.group(1)) >= 1, out  # commits went through the server
    runs = os.listdir(tmp_path / "reports")
    assert len(runs) == 1
    files = set(os.listdir(tmp_path / "reports" / runs[0]))
    assert {"report.md", "snapshots_per_writer.png", "commit_latency.png", "files_per_level.png"} <= files
    report = (tmp_path / "reports" / runs[0] / "report.md").read_text()
    assert "Verification: PASSED" in report and "| writer commits | 6 |" in report
    assert spark.sparkContext._jsc is not None  # the shared session survived


def test_simulation_detects_a_wrong_table(spark, tmp_path):
    """The verification can fail: drop a committed row behind the simulation's back."""
    import pyarrow as pa

    from simulation.spark_job import SparkJob, SparkJobConfig

    cfg = SparkJobConfig(warehouse=str(tmp_path / "wh"), reports=str(tmp_path / "reports"), writers=1, commits=2,
                         keys=200, batch_rows=50, partitions=1, buckets=1, compact_interval_s=60,
                         expire_interval_s=60, progress=False)
    sim = SparkJob(cfg, spark=spark)
    sim.setup()
    sim._writer(0, None)
    # a rogue delete of one committed key, outside the change stream the driver recorded
    row = sim.table.to_arrow().slice(0, 1)
    wb = sim.table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(row, row_kinds=pa.array([3], pa.int8()))
    c.commit(w.prepare_commit())
    w.close()
    sim._stop.set()
    sim.replayer.catch_up()
    sim.elapsed_s = 1.0
    checks = sim.verify()
    failed = {name for name, ok, _ in checks if not ok}
    assert "rows read through Spark = rows recomputed from the change stream" in failed
    assert sim.finish(checks) == 1

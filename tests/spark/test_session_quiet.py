"""impl.spark.session() writes nothing to stdout and no Spark banner to stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

ROOT = Path(__file__).resolve().parents[2]


def test_opening_a_session_prints_nothing(tmp_path):
    code = ("import impl.spark\n"
            "s = impl.spark.session(app_name='quiet')\n"
            "n = s.range(3).count()\n"
            "s.stop()\n"
            "assert n == 3\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("PAIMON_PY_SPARK_MASTER", None)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == ""
    for banner in ("Setting default log level", "Setting Spark log level", "default log4j profile",
                   "NativeCodeLoader"):
        assert banner not in proc.stderr

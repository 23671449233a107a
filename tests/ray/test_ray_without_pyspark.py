"""Ray reads and writes tables with the ray extra alone (issue 47 item 2, issue 50 item 3): in
an interpreter where pyspark cannot be imported, by the driver or by any Ray worker, impl.ray
writes (write_dataset, a datasink) and reads (read_table with a filter, to_ray) a table.

Before the job layer (impl.jobs), ``import impl.ray`` raised MissingExtraError naming the spark
extra: the write protocol and the read-unit packing lived in impl.spark."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")
pytest.importorskip("ray.data", reason="ray[data] is not installed (pip install -e '.[ray]')")

import impl  # noqa: E402

ROOT = Path(impl.__file__).resolve().parents[1]

# First on every process's path (the driver's and, through PYTHONPATH, every Ray worker's): a
# pyspark package that records who imported it and fails as a missing one does.
SHADOW = '''
import os
with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "pyspark-imported"), "a") as f:
    f.write(f"{os.getpid()}\\n")
raise ImportError("No module named 'pyspark' (shadowed by the test)", name="pyspark")
'''

DRIVER = """
import logging, sys
import pyarrow as pa
import ray
import impl, impl.ray
from impl.predicate.predicate import PredicateBuilder

try:
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False,
             logging_level=logging.WARNING, object_store_memory=80 * 1024 * 1024)
except Exception as e:  # noqa: BLE001 - whatever keeps Ray from starting here
    print(f"ray cannot start: {type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(3)
ctx = ray.data.DataContext.get_current()
ctx.enable_progress_bars = False
ctx.print_on_execution_start = False
try:
    cat = impl.Catalog(sys.argv[1])
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    app = cat.create_table("db.app", schema=schema)
    pk = cat.create_table("db.pk", schema=schema, primary_keys=["id"], options={"bucket": "2"})
    rows = pa.table({"id": pa.array(range(40), pa.int64()), "v": [f"v{i}" for i in range(40)]})

    out = impl.ray.write_dataset(ray.data.from_arrow(rows).repartition(2), app.path)
    print("write", out.snapshot_ids, out.rows_written)
    pk_sink = impl.ray.PaimonDatasink(pk)
    ray.data.from_arrow(rows).write_datasink(pk_sink)
    print("datasink", pk_sink.outcome.snapshot_ids, pk_sink.outcome.rows_written)

    pred = PredicateBuilder(app.schema).less_than("id", 10)
    got = impl.ray.read_table(app.path, filter=pred, columns=["id"]).take_all()
    print("read", sorted(r["id"] for r in got))
    print("to_ray", pk.to_ray().count(), app.to_ray().count())
    print("pyspark", sorted(m for m in sys.modules if m.startswith(("pyspark", "impl.spark"))))
finally:
    ray.shutdown()
"""


def test_ray_writes_and_reads_without_pyspark(tmp_path):
    shadow = tmp_path / "shadow"
    (shadow / "pyspark").mkdir(parents=True)
    (shadow / "pyspark" / "__init__.py").write_text(SHADOW)
    paths = [str(shadow), str(ROOT), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    check = subprocess.run([sys.executable, "-c", "import pyspark"], env=env, capture_output=True, text=True,
                           timeout=60)
    assert "shadowed by the test" in check.stderr  # the shadow does hide pyspark
    (shadow / "pyspark-imported").unlink()

    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(DRIVER), str(tmp_path / "wh")], env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode == 3:
        pytest.skip(f"a local Ray runtime cannot start here: {proc.stderr[-500:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.splitlines() == [
        "write [1] 40",
        "datasink [1] 40",
        f"read {list(range(10))}",
        "to_ray 40 40",
        "pyspark []",
    ], proc.stderr[-4000:]
    # no process of the run, driver or Ray worker, even tried to import pyspark
    assert not (shadow / "pyspark-imported").exists()

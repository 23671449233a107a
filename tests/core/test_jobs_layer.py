"""The engine-neutral job layer (impl.jobs, issue 47 item 2): the write-job protocol, table
references, the key check and read-unit packing import no engine, and run without pyspark.

Before it, all of this lived in impl.spark: impl.ray imported impl.spark 3 times, and a Ray user
had to install pyspark (491 MB) to read or write a table."""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys
import textwrap
import tomllib

import impl

ROOT = pathlib.Path(impl.__file__).resolve().parent.parent
JOBS = ROOT / "impl" / "jobs"
# the modules the layer holds (moved out of impl.spark; see the mapping in the commit message)
MODULES = ("tables", "tracking", "writer", "keycheck", "units", "routing")
ENGINES = ("pyspark", "ray", "impl.spark", "impl.ray", "impl.duckdb", "impl.polars", "impl.cli")


def _imports(path: pathlib.Path) -> set[str]:
    """Every module ``path`` imports, at module level or inside functions."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def _engine_imports(paths) -> dict[str, set[str]]:
    found = {}
    for p in paths:
        bad = {n for n in _imports(p) if any(n == e or n.startswith(e + ".") for e in ENGINES)}
        if bad:
            found[str(p.relative_to(ROOT))] = bad
    return found


def test_the_job_layer_imports_no_engine():
    files = sorted(JOBS.glob("*.py"))
    assert {p.stem for p in files} >= set(MODULES), f"impl/jobs holds {[p.stem for p in files]}"
    assert _engine_imports(files) == {}


def test_impl_ray_imports_neither_pyspark_nor_impl_spark():
    files = sorted((ROOT / "impl" / "ray").glob("*.py"))
    bad = {f: {n for n in names if n.startswith(("pyspark", "impl.spark"))}
           for f, names in ((str(p.relative_to(ROOT)), _imports(p)) for p in files)}
    assert {f: n for f, n in bad.items() if n} == {}


def test_the_ray_extra_does_not_install_pyspark():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("ray") for d in extras["ray"])
    assert not [d for d in extras["ray"] if d.startswith("pyspark") or d.startswith("paimon-py-core[")]


# a finder first on sys.meta_path that refuses pyspark, as if it were not installed
BLOCK_PYSPARK = """
import sys
class _NoPyspark:
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError(f"No module named {name!r} (blocked by the test)", name=name)
        return None
sys.meta_path.insert(0, _NoPyspark())
"""


def _run_without_pyspark(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", BLOCK_PYSPARK + textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)


def test_a_parallel_write_job_runs_without_pyspark(tmp_path):
    """Two tasks' writes committed once by the driver (one snapshot, every row), a retried
    attempt's files removed, a write that shares a primary key refused (WriteRoutingError, an
    impl.errors class, nothing committed), and read units packed: all with pyspark unimportable."""
    proc = _run_without_pyspark(f"""
        import sys
        import pyarrow as pa
        import impl
        from impl.errors import ConnectorError, WriteRoutingError
        from impl.jobs.tables import TableRef
        from impl.jobs.units import pack_units, partition_count, read_units
        from impl.jobs.writer import WriteJob, commit_write, write_task

        cat = impl.Catalog({str(tmp_path / "wh")!r})
        cat.create_database("db")
        schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
        app = cat.create_table("db.app", schema=schema)
        pk = cat.create_table("db.pk", schema=schema, primary_keys=["id"], options={{"bucket": "2"}})

        def job(t):
            ref = TableRef.from_path(t.path)
            cols = tuple((f.name, f.name) for f in t.schema.fields)
            return WriteJob(ref, "w-" + t.name, "jobs-test-" + t.name, 0, cols)

        def rows(ids):
            return [pa.record_batch({{"id": pa.array(ids, pa.int64()), "v": [f"v{{i}}" for i in ids]}})]

        j = job(app)
        a = write_task(rows(range(0, 50)), j, "a")
        write_task(rows(range(50, 100)), j, "b-attempt-0")  # a failed attempt: never returned
        b = write_task(rows(range(50, 100)), j, "b-attempt-1")
        done = commit_write(j, [a.messages, b.messages], sketches=[a.sketches, b.sketches])
        print("snapshots", done.snapshot_ids, "leftovers", len(done.leftovers_removed))
        print("rows", sorted(app.to_arrow().column("id").to_pylist()) == list(range(100)))

        j = job(pk)
        a, b = write_task(rows(range(0, 10)), j, "a"), write_task(rows(range(9, 20)), j, "b")
        try:
            commit_write(j, [a.messages, b.messages], sketches=[a.sketches, b.sketches])
        except WriteRoutingError as e:
            print("refused", e.key, isinstance(e, ConnectorError), pk.snapshot_manager.latest_snapshot_id())
        try:
            TableRef.from_path("  ")
        except ConnectorError as e:
            print("path", type(e).__name__)

        units = read_units(app, app.new_read_builder().new_scan().plan().splits())
        n = partition_count(units, 2, 1 << 30)
        print("units", len(units), n, sorted(len(b) for b in pack_units(units, n)))
        print("pyspark", sorted(m for m in sys.modules if m.split(".")[0] == "pyspark"))
        """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [
        "snapshots [1] leftovers 1",
        "rows True",
        "refused {'id': 9} True None",
        "path ConnectorError",
        "units 2 2 [1, 1]",
        "pyspark []",
    ], proc.stderr[-3000:]


def test_impl_ray_imports_without_pyspark():
    """``import impl.ray`` with the ray extra alone: before, it failed with MissingExtraError
    naming the spark extra."""
    proc = _run_without_pyspark("""
        import importlib.util, sys
        if importlib.util.find_spec("ray") is None:
            print("no ray")
            raise SystemExit
        import impl.ray
        print("ok", sorted(m for m in sys.modules if m.startswith(("pyspark", "impl.spark"))))
        """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[:2] in (["ok", "[]"], ["no", "ray"]), proc.stderr[-3000:]

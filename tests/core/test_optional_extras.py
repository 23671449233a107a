"""Optional libraries fail with an ImportError naming the extra that installs them."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import tomllib

import pyarrow as pa
import pytest

import impl
from impl._optional import EXTRAS, require
from impl._version import package_version
from impl.errors import MissingExtraError


@pytest.fixture
def without(monkeypatch):
    """Make ``import <name>`` fail as if the library were not installed."""
    def block(*names: str) -> None:
        for name in names:
            for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                monkeypatch.delitem(sys.modules, loaded)
            monkeypatch.setitem(sys.modules, name, None)  # import of a None entry raises ImportError
    return block


@pytest.mark.parametrize("module, extra", sorted(EXTRAS.items()))
def test_require_names_the_extra(without, module, extra):
    without(module)
    with pytest.raises(ImportError, match=rf"install the '{extra}' extra: pip install 'paimon-py-core\[{extra}\]'") as e:
        require(module, "the test")
    assert isinstance(e.value, MissingExtraError) and e.value.extra == extra


def test_extras_are_declared_in_pyproject():
    root = pathlib.Path(impl.__file__).resolve().parent.parent
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for module, extra in EXTRAS.items():
        assert any(d.startswith(module) for d in declared[extra]), f"extra {extra!r} does not install {module}"


def test_to_pandas_without_pandas_names_the_pandas_extra(tmp_path, without):
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": [1]}))
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    without("pandas")
    with pytest.raises(MissingExtraError, match="to_pandas.*'pandas' extra"):
        rb.new_read().to_pandas(splits)
    system = cat.get_table("db.t$snapshots").new_read_builder()
    with pytest.raises(MissingExtraError, match="'pandas' extra"):
        system.new_read().to_pandas(system.new_scan().plan().splits())


def test_to_pandas_with_pandas(tmp_path):
    pytest.importorskip("pandas")
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": [1, 2]}))
    rb = t.new_read_builder()
    assert sorted(rb.new_read().to_pandas(rb.new_scan().plan().splits())["id"].tolist()) == [1, 2]


def run_without(modules: list[str], code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter where importing any of ``modules`` fails as if it were
    not installed (a ``None`` entry in sys.modules), from the checkout under test."""
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


ROOT = pathlib.Path(impl.__file__).resolve().parent.parent


def test_spark_connector_without_pyspark_names_the_spark_extra():
    proc = run_without(["pyspark"], textwrap.dedent("""
        from impl.errors import MissingExtraError
        try:
            import impl.spark
        except MissingExtraError as e:
            print("extra:", e.extra, "|", e)
        """))
    assert proc.returncode == 0, proc.stderr
    assert "extra: spark |" in proc.stdout and "pip install 'paimon-py-core[spark]'" in proc.stdout


def test_simulation_without_rich_names_the_sim_extra(tmp_path):
    proc = run_without(["rich"], f"from simulation.spark_job import main; sys.exit(main(['--warehouse', {str(tmp_path)!r}]))")
    assert proc.returncode == 2, proc.stderr
    assert "install the 'sim' extra: pip install 'paimon-py-core[sim]'" in proc.stderr


def test_to_duckdb_without_duckdb_names_the_duckdb_extra(tmp_path, without):
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": [1, 2]}))
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    duckdb = pytest.importorskip("duckdb")
    con = rb.new_read().to_duckdb(splits, "t")
    assert con.sql("select sum(id) from t").fetchall() == [(3,)]
    assert rb.new_read().to_duckdb(splits, "u", connection=con) is con
    without("duckdb")
    with pytest.raises(MissingExtraError, match="to_duckdb.*'duckdb' extra: pip install 'paimon-py-core\\[duckdb\\]'"):
        rb.new_read().to_duckdb(splits, "t")
    assert duckdb  # the real library answered above


def test_version_comes_from_metadata_or_pyproject(tmp_path):
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert impl.__version__ == declared
    # without an installed distribution: pyproject.toml's version; without either: a PEP 440 placeholder
    assert package_version("no-such-distribution-xyz") == declared
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "9.8.7"\n')
    assert package_version("no-such-distribution-xyz", tmp_path / "pyproject.toml") == "9.8.7"
    assert package_version("no-such-distribution-xyz", tmp_path / "missing.toml") == "0+unknown"

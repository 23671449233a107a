"""What ``import impl`` and ``paimon-py --help`` import: none of the heavy or optional libraries
that only some calls use (issue 50 item 8).

A test of what is imported, not of time (the machine's load makes times noisy; the timings are
in benchmarks/startup.py). Commands that build Arrow arrays from Python values still load pandas
when it is installed: pyarrow itself imports it on the first ``pa.array``/``pa.table`` of Python
objects (its pandas shim), which is outside impl. Each case runs in a fresh interpreter, so modules an earlier test
imported do not hide an import.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Imported on first use only: pandas (pulled in by pyarrow.dataset, 0.15-0.3 s), the Avro and
# ORC codecs a table may never need, the optional extras' libraries, and drivers of catalogs the
# caller may not use.
NOT_AT_STARTUP = (
    "pandas", "pyarrow.dataset", "pyarrow.orc", "polars", "fastavro",
    "duckdb", "pyspark", "ray", "cloudpickle", "sqlite3", "psycopg", "rich", "matplotlib",
    "s3fs", "moto", "boto3", "botocore",
)


def loaded_after(code: str) -> list[str]:
    """The modules of NOT_AT_STARTUP (and their submodules) loaded after ``code`` runs in a fresh
    interpreter on this checkout."""
    probe = code + textwrap.dedent(f"""
        import json as _json, sys as _sys
        _heavy = {list(NOT_AT_STARTUP)!r}
        print(_json.dumps(sorted(m for m in _sys.modules if _sys.modules[m] is not None
                                 and any(m == h or m.startswith(h + ".") for h in _heavy))))
        """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_impl_loads_no_heavy_library():
    assert loaded_after("import impl\n") == []


@pytest.mark.parametrize("argv", [["--help"], ["sql", "--help"], ["compact", "--help"]])
def test_paimon_py_help_loads_no_heavy_library(argv):
    # impl.cli:main is the paimon-py console script's entry point
    code = f"import contextlib, io\nfrom impl.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n" \
           f"    assert main({argv!r}) == 0\n"
    assert loaded_after(code) == []


def test_version_is_read_on_first_access():
    # impl.__version__ is computed on first access (module __getattr__), then cached in the module
    code = textwrap.dedent("""
        import impl
        assert "__version__" not in vars(impl)
        v = impl.__version__
        assert vars(impl)["__version__"] == v and v
        from impl import __version__
        assert __version__ == v
        """)
    assert loaded_after(code) == []


def test_facade_classes_are_imported_on_first_access():
    # import impl binds the errors only; the first facade name imports the facade as a whole
    # (the jdbc metastore in the catalog registry), and subpackages are attributes as before
    code = textwrap.dedent("""
        import sys
        import impl
        assert "impl.table" not in sys.modules and "impl.catalog" not in sys.modules
        assert issubclass(impl.CommitConflictError, impl.PaimonError)
        from impl import Catalog, FileStoreTable
        assert impl.Catalog is Catalog and impl.table.FileStoreTable is FileStoreTable
        from impl.catalog.base import METASTORES
        assert METASTORES["jdbc"].module == "impl.catalog.jdbc" and issubclass(impl.JdbcCatalog, impl.Catalog)
        try:
            impl.no_such_name
        except AttributeError as e:
            assert "no_such_name" in str(e)
        else:
            raise AssertionError("impl.no_such_name did not raise")
        missing = [n for n in impl.__all__ if not hasattr(impl, n)]
        assert not missing, missing
        """)
    assert loaded_after(code) == []


def test_catalog_module_registers_the_jdbc_metastore(tmp_path):
    # without the facade: Catalog(metastore="jdbc") works from impl.catalog alone, and a SQLite
    # catalog imports sqlite3 when it connects
    code = textwrap.dedent(f"""
        from impl.catalog import Catalog
        cat = Catalog("jdbc:sqlite:{tmp_path / 'c.db'}", options={{"warehouse": {str(tmp_path / 'wh')!r}}})
        assert type(cat).__name__ == "JdbcCatalog", type(cat)
        """)
    assert {m.split(".")[0] for m in loaded_after(code)} == {"sqlite3"}

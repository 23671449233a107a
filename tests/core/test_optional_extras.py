"""Optional libraries fail with an ImportError naming the extra that installs them."""

from __future__ import annotations

import sys

import pyarrow as pa
import pytest

import impl
from impl._optional import EXTRAS, require
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
    import pathlib
    import tomllib

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

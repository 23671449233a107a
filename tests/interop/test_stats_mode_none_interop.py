"""Tables impl wrote with ``metadata.stats-mode`` = none read by pypaimon 2.1.0 (with a filter
that could prune on stats) and by pypaimon-rust 0.4.0.

impl now writes such value stats as Paimon Java does (empty min / max rows, an empty null-count
array, ``_VALUE_STATS_COLS`` = []); the Python readers must keep every file (no stats, nothing
pruned) and give exactly the rows written.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pypaimon_env import run_pypaimon
from pypaimon_rust_env import Unavailable, pypaimon_rust_python, run_pypaimon_rust

import impl
from impl.read.scan import SnapshotReader

READ_FILTERED = """
from pypaimon import CatalogFactory
catalog = CatalogFactory.create({"warehouse": params["warehouse"]})
table = catalog.get_table(params["table"])
rb = table.new_read_builder()
rb = rb.with_filter(rb.new_predicate_builder().greater_than("id", 2))
result = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: (r["id"], r["v"]))
"""

READ_RUST = """
import pyarrow as pa
from pypaimon_rust.datafusion import PaimonCatalog
rb = PaimonCatalog({"warehouse": params["warehouse"]}).get_table(params["table"]).new_read_builder()
batches = rb.new_read().read(rb.new_scan().plan().splits())
result = sorted(pa.Table.from_batches(batches).to_pylist(), key=lambda r: (r["id"], r["v"]))
"""


def _write(wh, name: str, primary_keys) -> list[dict]:
    cat = impl.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(name, schema=pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=primary_keys,
                         options={"metadata.stats-mode": "none", **({"bucket": "1"} if primary_keys else {})})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", None, "c"]}))
    t.write_arrow(pa.table({"id": [3, 4], "v": ["x", "y"]}))
    entries = SnapshotReader(t.core).live_entries(t.latest_snapshot())
    assert entries and {e.file.value_stats_cols for e in entries} == {()}  # Java's shape: no column covered
    return sorted(t.to_arrow().to_pylist(), key=lambda r: (r["id"], r["v"] or ""))


@pytest.mark.parametrize("primary_keys", [None, ["id"]], ids=["append", "primary-key"])
def test_pypaimon_reads_stats_mode_none_tables_with_a_filter(pypaimon, tmp_path, primary_keys):
    rows = _write(tmp_path / "wh", "db.t", primary_keys)
    expected = [r for r in rows if r["id"] > 2]
    assert len(expected) == (3 if primary_keys is None else 2)
    assert run_pypaimon(READ_FILTERED, warehouse=str(tmp_path / "wh"), table="db.t") == expected


@pytest.mark.parametrize("primary_keys", [None, ["id"]], ids=["append", "primary-key"])
def test_pypaimon_rust_reads_stats_mode_none_tables(tmp_path, primary_keys):
    try:
        pypaimon_rust_python()
    except Unavailable as e:
        pytest.skip(f"pypaimon-rust 0.4.0 cannot be installed here: {e}")
    rows = _write(tmp_path / "wh", "db.t", primary_keys)
    assert run_pypaimon_rust(READ_RUST, warehouse=str(tmp_path / "wh"), table="db.t") == rows

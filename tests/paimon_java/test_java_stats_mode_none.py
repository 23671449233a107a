"""``metadata.stats-mode`` = none against Paimon Java 1.4.2: Java writes, impl writes on, Java
reads every row back (and impl reads the same rows).

impl used to write such stats with a null ``_NULL_COUNTS`` array, and Java then failed every
read of the table (NullPointerException in ``InternalArray.size()``, from
``SimpleStatsEvolution``). It now writes what Java writes: empty min / max rows, an empty
null-count array and ``_VALUE_STATS_COLS`` = [] (checked here on the manifests of both sides).
"""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"


def _value_stats(table_dir: Path) -> list[tuple]:
    """(_VALUE_STATS, _VALUE_STATS_COLS) of every manifest entry of the table."""
    out = []
    for f in sorted((table_dir / "manifest").glob("manifest-*")):
        if f.name.startswith(("manifest-list-", "index-manifest-")):
            continue
        for r in fastavro.reader(io.BytesIO(f.read_bytes())):
            out.append((r["_FILE"]["_VALUE_STATS"], r["_FILE"]["_VALUE_STATS_COLS"]))
    return out


@pytest.mark.parametrize("primary_keys", [[], ["id"]], ids=["append", "primary-key"])
def test_java_reads_what_impl_wrote_with_stats_mode_none(java, tmp_path, primary_keys):
    wh = tmp_path / "wh"
    options = {"metadata.stats-mode": "none", "bucket": "1" if primary_keys else "-1"}
    if not primary_keys:
        options.pop("bucket")
    java.call("create_table", warehouse=str(wh), table=TABLE,
              fields=[["id", "INT NOT NULL" if primary_keys else "INT"], ["name", "STRING"]],
              primary_keys=primary_keys, partition_keys=[], table_options=options)
    first = pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", None]})
    pq.write_table(first, tmp_path / "in.parquet")
    java.call("write", warehouse=str(wh), table=TABLE, parquet=str(tmp_path / "in.parquet"), commit_user="java",
              identifier=1)
    java_shape = _value_stats(wh / "db.db" / "t")

    t = impl.Catalog(str(wh)).get_table(TABLE)
    second = pa.table({"id": pa.array([3, 4], pa.int32()), "name": [None, "d"]})
    t.write_arrow(second)
    shapes = _value_stats(wh / "db.db" / "t")
    assert len(shapes) == 2 and java_shape[0] in shapes
    empty = ({"_MIN_VALUES": b"\0" * 12, "_MAX_VALUES": b"\0" * 12, "_NULL_COUNTS": []}, [])
    assert shapes == [empty, empty]  # impl's entry has exactly Java's shape

    out = tmp_path / "java-read.parquet"
    java.call("read", warehouse=str(wh), table=TABLE, out=str(out))
    expected = sorted(pa.concat_tables([first, second]).to_pylist(), key=lambda r: r["id"])
    assert sorted(pq.read_table(out).to_pylist(), key=lambda r: r["id"]) == expected
    assert sorted(impl.Catalog(str(wh)).get_table(TABLE).to_arrow().to_pylist(), key=lambda r: r["id"]) == expected

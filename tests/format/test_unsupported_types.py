"""Types Paimon Java 1.4 writes: VARIANT read as its two binary parts, and a type this library
cannot represent refused by name (``UnsupportedTypeError: column 'x' has type ...``) when the
table is opened, never read wrongly; nothing is written to a table with a VARIANT column."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import impl
from impl.data.types import VARIANT_ARROW, UnsupportedTypeError, parse_type

PARTS = pa.struct([pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), nullable=False)])


def _retype(table_dir, column, type_json):
    """Rewrite the column's type in schema-0, as a Java writer of that type would have stored it."""
    path = table_dir / "schema" / "schema-0"
    schema = json.loads(path.read_text())
    for f in schema["fields"]:
        if f["name"] == column:
            f["type"] = type_json
    path.write_text(json.dumps(schema))


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_variant_reads_as_value_and_metadata_and_refuses_writes(tmp_path, fmt):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                     "v": pa.array([{"value": b"\x0c\x01", "metadata": b"\x01\x00\x00"}, None,
                                    {"value": b"\x10abc", "metadata": b"\x01\x00\x00"}], PARTS)})
    cat.create_table("db.t", schema=rows.schema, options={"file.format": fmt})
    cat.get_table("db.t").write_arrow(rows)
    _retype(tmp_path / "wh" / "db.db" / "t", "v", "VARIANT")
    t = cat.get_table("db.t")
    assert t.schema.field("v").type == parse_type("VARIANT")
    got = t.to_arrow()
    assert got.schema.field("v").type == VARIANT_ARROW
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == rows.to_pylist()
    snapshot = t.latest_snapshot().id
    with pytest.raises(UnsupportedTypeError, match="column 'v' has type VARIANT"):
        t.write_arrow(rows)
    assert cat.get_table("db.t").latest_snapshot().id == snapshot
    data_files = [p for p in (tmp_path / "wh" / "db.db" / "t").rglob("data-*")]
    assert len(data_files) == 1, "a refused write left a file behind"


@pytest.mark.parametrize("type_json, match", [
    ("BLOB", r"column 'b' has type 'BLOB'.*Paimon 1\.3"),
    ("GEOMETRY", r"column 'b' has type 'GEOMETRY'"),
    ({"type": "ARRAY", "element": "BLOB"}, r"column 'b' has type .*BLOB"),
])
def test_unrepresentable_type_is_refused_when_opened(tmp_path, type_json, match):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("b", pa.binary())]))
    _retype(tmp_path / "wh" / "db.db" / "t", "b", type_json)
    with pytest.raises(UnsupportedTypeError, match=match):
        cat.get_table("db.t").to_arrow()

"""pypaimon 2.1.0's API names on impl's own classes (issue 29 item 5): what pypaimon code calls,
with pypaimon's argument order, beside this project's keyword forms."""

from __future__ import annotations

import pyarrow as pa

import impl


def _table(tmp_path):
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", None, "c"]}))
    return cat, t


def test_to_iterator_yields_rows_in_projection_order(tmp_path):
    _, t = _table(tmp_path)
    rb = t.new_read_builder().with_projection(["v", "id"]).with_limit(2)
    rows = list(rb.new_read().to_iterator(rb.new_scan().plan().splits()))
    assert rows == [("a", 1), (None, 2)]
    assert [r.get_field(1) for r in rows] == [1, 2]

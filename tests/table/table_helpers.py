"""Helpers shared by the table-layer tests."""

from __future__ import annotations

import pyarrow as pa


def write(table, data, *, overwrite=None, row_kinds=None):
    """One batch write + commit; returns the CommitStats."""
    wb = table.new_batch_write_builder()
    if overwrite is not None:
        wb.overwrite(overwrite or None)
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(data, row_kinds=row_kinds)
        return c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def read(table, predicate=None, projection=None):
    rb = table.new_read_builder().with_filter(predicate).with_projection(projection)
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def sort_rows(t: pa.Table, keys=None) -> list[dict]:
    keys = keys or t.column_names
    return sorted(t.to_pylist(), key=lambda r: tuple((r[k] is None, r[k]) for k in keys))


def data_files(table) -> list[str]:
    """Paths of every data file under the table directory."""
    return sorted(f.path for f in table.file_io.walk_files(table.path)
                  if f.path.endswith(".parquet") and "/data-" in f.path)

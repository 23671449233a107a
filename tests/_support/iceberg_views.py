"""The Iceberg tests' shared steps (tests/iceberg): one committed write, and the Iceberg view a
Hadoop-table reader finds (the metadata file the version hint names), read by pyiceberg."""

from __future__ import annotations

import os

import pyarrow as pa

TABLE_LOCATION = {"metadata.iceberg.storage": "table-location"}  # the Iceberg metadata in the table's directory


def write(table, data: pa.Table, overwrite: dict | None = None):
    """One batch commit of ``data`` (a static overwrite of ``overwrite``'s partition if given);
    the commit's stats.

        write(t, pa.table({"dt": ["a"], "id": [1]}), overwrite={"dt": "a"})
    """
    wb = table.new_batch_write_builder()
    if overwrite is not None:
        wb.overwrite(overwrite)
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(data)
        return c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def hinted_version(directory: str) -> int:
    """The metadata version ``<directory>/version-hint.text`` names."""
    with open(os.path.join(directory, "version-hint.text")) as f:
        return int(f.read())


def iceberg_at_hint(directory: str):
    """The pyiceberg table of ``<directory>/v<hint>.metadata.json``: what a Hadoop-table reader
    finds in the metadata directory ``directory``.

        ice = iceberg_at_hint(os.path.join(table.path, "metadata"))
    """
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(os.path.join(directory, f"v{hinted_version(directory)}.metadata.json"))

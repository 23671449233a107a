"""Paimon's Iceberg-compatible metadata, written by impl after each commit (issue 48).

With ``metadata.iceberg.storage`` = ``table-location`` or ``hadoop-catalog`` a commit also
writes Iceberg table metadata for the snapshot it published, so Iceberg readers (pyiceberg,
Trino, Spark's Iceberg catalog, ...) read the table without knowing Paimon. The option rules
(what is supported, what is refused by name) live in :mod:`impl.options.iceberg`; the builders
in :mod:`impl.iceberg.build`; the writer and the commit callback in :mod:`impl.iceberg.commit`;
the view an Iceberg reader finds (``paimon-py iceberg``) in :mod:`impl.iceberg.view`.
"""

from impl.iceberg.commit import metadata_dir, sync_after_commit, sync_iceberg
from impl.iceberg.view import IcebergView, iceberg_view

__all__ = ["IcebergView", "iceberg_view", "metadata_dir", "sync_after_commit", "sync_iceberg"]

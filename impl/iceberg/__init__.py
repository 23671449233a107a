"""Paimon's Iceberg-compatible metadata, written by impl after each commit (issue 48).

With ``metadata.iceberg.storage`` = ``table-location`` or ``hadoop-catalog`` a commit also
writes Iceberg table metadata for the snapshot it published, so Iceberg readers (pyiceberg,
Trino, Spark's Iceberg catalog, ...) read the table without knowing Paimon. The option rules
(what is supported, what is refused by name) live in :mod:`impl.options.iceberg`; the builders
in :mod:`impl.iceberg.build`; the writer and the commit callback in :mod:`impl.iceberg.commit`.
"""

from impl.iceberg.commit import metadata_dir, sync_after_commit, sync_iceberg

__all__ = ["metadata_dir", "sync_after_commit", "sync_iceberg"]

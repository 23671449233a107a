"""System tables: ``db.t$snapshots``, ``$schemas``, ``$options``, ``$manifests``, ``$files``,
``$partitions``, ``$buckets``, ``$tags``, ``$branches``, with Paimon Java 2.0's columns.

``tables`` defines each table's columns and row builder, ``render`` spells values as Java
does, ``refs`` reads tags and branches from their on-disk layout (the seam to a tag /
branch manager), ``table`` is the read-only table object and its read builder.
"""

from impl.system.table import (
    SYSTEM_TABLE_SPLITTER,
    SystemPlan,
    SystemReadBuilder,
    SystemSplit,
    SystemTable,
    SystemTableRead,
    SystemTableScan,
)
from impl.system.tables import SYSTEM_TABLES, SystemTableSpec

__all__ = ["SYSTEM_TABLE_SPLITTER", "SYSTEM_TABLES", "SystemPlan", "SystemReadBuilder", "SystemSplit", "SystemTable",
           "SystemTableRead", "SystemTableScan", "SystemTableSpec"]

"""Batch reads of system tables through the ``paimon_py`` source::

    spark.read.format("paimon_py").load(table_path + "$snapshots")    # $files, $partitions, ...

A system table is small metadata built in one piece, so it is read by one task; filters are
applied by Spark. Writes and streaming reads of a system table are refused.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from impl.jobs.tables import TableRef
from impl.spark.types import conform_to_spark, spark_arrow_schema


class SystemTableReader(DataSourceReader):
    """One partition holding every row of ``<table>$<name>``."""

    def __init__(self, ref: TableRef, schema) -> None:
        self.ref = ref
        self.schema = schema

    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        table = self.ref.table()
        target = spark_arrow_schema(self.schema)
        rows = table.new_read_builder().with_projection(target.names).new_read()
        reader = rows.to_arrow_batch_reader(table.new_read_builder().new_scan().plan().splits())
        for batch in reader:
            if batch.num_rows:
                yield from conform_to_spark(batch, target).to_batches()


__all__ = ["SystemTableReader"]

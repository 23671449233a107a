"""Ray Data over tables: a datasource that reads in parallel Ray tasks and a datasink whose tasks
write data files that the driver commits once.

>>> import impl.ray
>>> ds = impl.ray.read_table(table_path, filter=pred, columns=["id", "v"])   # a ray.data.Dataset
>>> ds = table.to_ray()                                    # the same from a table / read builder
>>> impl.ray.write_dataset(ds, table_path, mode="append")  # tasks write, the driver commits once
>>> ds.write_datasink(impl.ray.PaimonDatasink(table_path)) # the same through Ray's own API

Reads: splits are planned once on the driver with the filter and projection (partition, bucket,
statistics and index pruning by impl's scan), then packed into read tasks that each read their
splits with impl's split reader (merged rows for primary-key tables). A task carries the table's
path, options and the split descriptions, never an open file.

Writes: ``write_dataset`` routes rows to one writer task per (partition, bucket), each writing
files of the table's target size, so a primary-key table's keys each have one writer
(:mod:`impl.ray.routing`); Ray's own ``write_datasink`` bundles blocks into tasks unrouted.
Both use the engine-neutral write-job protocol the Spark connector uses too
(:mod:`impl.jobs.writer`, :mod:`impl.jobs.tracking`): every data file a task attempt creates is logged first, the driver
commits the CommitMessages the finished tasks returned in one snapshot, and removes the files of
failed or retried attempts; a failed write leaves no snapshot and none of its files.

``table_path`` is a table directory ``<warehouse>/<database>.db/<table>`` that every Ray worker
can reach. Requires ``pip install -e ".[ray]"`` only: impl.ray imports the job layer
(:mod:`impl.jobs`) and impl's core, never pyspark.
"""

from impl._optional import require

require("ray.data", "impl.ray (Ray Data reads and writes)")  # before anything below imports it

from impl.ray.errors import RayConnectorError  # noqa: E402
from impl.ray.sink import PaimonDatasink, RayWriteOutcome, write_dataset  # noqa: E402
from impl.ray.source import PaimonDatasource, read_table  # noqa: E402

__all__ = ["PaimonDatasource", "PaimonDatasink", "read_table", "write_dataset", "RayWriteOutcome",
           "RayConnectorError"]

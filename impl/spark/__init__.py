"""PySpark integration: the ``paimon_py`` Python data source and pipeline helpers.

>>> import impl.spark
>>> spark = impl.spark.session()                       # local[2], UI off, 127.0.0.1; registers the source
>>> impl.spark.register(spark)                          # for a session built elsewhere
>>> df.write.format("paimon_py").mode("append").save(table_path)
>>> df = impl.spark.read_table(spark, table_path)      # the first read: Spark's Parquet reader where no merge,
>>> df.where("dt = 'a'").count()                        # and every later partition filter prunes (any query shape)
>>> spark.read.format("paimon_py").load(table_path)   # every scan reads the whole snapshot; Spark filters
>>> spark.read.format("paimon_py").option("pushdown", "true").load(table_path)  # pruned: one scan per query
>>> impl.spark.write_dataframe(df, table_path)          # one task per (partition, bucket), one commit;
...                                                     # Spark's Parquet writer writes the files where it can
>>> impl.spark.write_stream(stream_df, table_path, checkpoint_location=ck)  # foreachBatch, exactly once
>>> impl.spark.compact(spark, table_path, full=False)   # dedicated compaction job, one COMPACT commit
>>> impl.spark.delete(spark, table_path, "id < 10")      # row-level DELETE / update / merge_into: impl.spark.dml

The ``paimon_py`` source prunes nothing by default: Spark 4.3 hands every scan of one loaded DataFrame or view the
same planned read, so a read pruned for one scan's filters could drop rows another scan needs
(see :mod:`impl.spark.claims`). ``pushdown`` = ``true`` prunes, for a DataFrame each query scans once.

``table_path`` is a table directory ``<warehouse>/<database>.db/<table>`` (local path or fsspec URL
that every Spark process can reach). Requires ``pip install -e ".[spark]"`` (pyspark 4.3).

On an object store (``s3://bucket/warehouse/db.db/t``) give the storage options (``fs.s3.endpoint``,
``fs.s3.accessKeyId``, ``fs.s3.accessKeySecret``, ``fs.s3.region``, ...) as data source options
(``.options(**opts)``) or in ``options=`` of ``write_dataframe`` / ``compact``: each Spark process
opens the store from them, and they are never stored in the table. ``read_table`` and Spark's
own writer reach S3 when the session has Hadoop's s3a (``session(conf=s3a_conf())``,
:mod:`impl.spark.s3a`); otherwise impl's readers and writers serve.
"""

from impl._optional import require

require("pyspark", "impl.spark (the Spark connector)")  # before anything below imports it

from impl.jobs.tables import TableRef  # noqa: E402
from impl.spark.compaction import CompactResult, compact  # noqa: E402
from impl.spark.dml import RowLevelResult, delete, merge_into, update  # noqa: E402
from impl.spark.errors import (  # noqa: E402
    MergeCardinalityError,
    NativeWriteUnsupportedError,
    PlanPinError,
    RowLevelChangeError,
    SharedPlanError,
    SparkConnectorError,
    StreamSinkError,
    StreamSnapshotExpiredError,
    StreamStartError,
    WriteClosedError,
    WriteRoutingError,
)
from impl.spark.fast_read import read_table  # noqa: E402
from impl.spark.routing import WriteResult, write_dataframe  # noqa: E402
from impl.spark.s3a import s3a_conf  # noqa: E402
from impl.spark.session import get_or_create_session, session  # noqa: E402
from impl.spark.source import FORMAT_NAME, PaimonDataSource, register  # noqa: E402
from impl.spark.stream_batches import write_stream  # noqa: E402

__all__ = [
    "FORMAT_NAME", "PaimonDataSource", "register", "session", "get_or_create_session", "write_dataframe",
    "WriteResult", "compact", "CompactResult", "TableRef", "SparkConnectorError", "WriteRoutingError",
    "PlanPinError", "SharedPlanError", "WriteClosedError", "read_table", "StreamStartError", "StreamSnapshotExpiredError", "StreamSinkError",
    "delete", "update", "merge_into", "RowLevelResult", "RowLevelChangeError", "MergeCardinalityError",
    "NativeWriteUnsupportedError", "write_stream", "s3a_conf",
]

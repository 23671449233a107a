"""The ``paimon_py`` Python data source and its registration.

Reading::

    spark.read.format("paimon_py").load(table_path)
    spark.read.format("paimon_py").option("snapshot-id", "3").load(table_path)      # time travel
    spark.read.format("paimon_py").option("timestamp-millis", "...").load(table_path)
    CREATE TEMPORARY VIEW v USING paimon_py OPTIONS (path '<table_path>')
    spark.read.format("paimon_py").load(table_path + "$snapshots")   # system tables, see impl.spark.system

Streaming reads (append and primary-key tables; see :mod:`impl.spark.stream_reader`)::

    spark.readStream.format("paimon_py").load(table_path)     # latest-full: the latest snapshot, then changes
    spark.readStream.format("paimon_py").option("scan.mode", "latest").load(table_path)   # changes only
    spark.readStream.format("paimon_py").option("scan.snapshot-id", "5").load(table_path) # changes from 5 on
    spark.readStream.format("paimon_py").option("read.changelog", "true").load(table_path)

A stream emits each snapshot's changes: the changelog files with ``changelog-producer=input``,
else the data files each APPEND snapshot added; COMPACT and OVERWRITE snapshots add nothing.
Offsets are snapshot ids; a query resumes from its checkpoint, and fails (naming the snapshot)
if a snapshot it still has to read has expired. ``scan.mode`` is Paimon's: ``latest-full``
(default), ``latest``, ``from-snapshot`` (default with ``scan.snapshot-id`` / ``snapshot-id``),
``from-snapshot-full``, ``from-timestamp`` (default with ``scan.timestamp-millis``). As in
Paimon's Spark connector, a row's kind (+I/-U/+U/-D) is not shown unless ``read.changelog`` is
``true``: then a first column ``rowkind`` (string) holds it; batch reads with that option return
``+I`` for every (merged) row. Rows of one bucket of a micro-batch are read by one task in
sequence order; Spark keeps no order across tasks.

Writing (save modes ``append`` and ``overwrite``; Spark itself rejects ``error`` / ``ignore``
for Python data sources with UNSUPPORTED_DATA_SOURCE_SAVE_MODE)::

    df.write.format("paimon_py").mode("append").save(table_path)     # creates an append table if missing
    df.write.format("paimon_py").option("primary-key", "id").option("bucket", "4")
        .option("partition", "dt").mode("append").save(table_path)   # creates a primary-key table
    df.write.format("paimon_py").mode("overwrite").save(table_path)  # OVERWRITE snapshot

Streaming writes (a Structured Streaming sink; the same options as ``df.write``; each micro-batch
is committed exactly once, with the batch id as commit identifier, under a commit user named after the
query id Spark keeps in the checkpoint, whose location is required; see :mod:`impl.spark.stream_writer`)::

    df.writeStream.format("paimon_py").option("checkpointLocation", checkpoint_dir)
        .option("primary-key", "id").option("bucket", "4").start(table_path)
    df.repartition("id").writeStream...   # primary-key tables: one task per key in each micro-batch

Object stores (``s3://bucket/warehouse/db.db/table``): the storage options go to the connector as
data source options, with Paimon's names (pypaimon's ``fs.s3.endpoint``, ``fs.s3.accessKeyId``,
``fs.s3.accessKeySecret``, ``fs.s3.region``, or Java's ``s3.endpoint``, ``s3.access-key``,
``s3.secret-key``; any key under ``fs.``, ``s3.``, ``s3a.``). Every Spark process opens the store
from them itself; they are never stored in the table::

    spark.read.format("paimon_py").option("fs.s3.endpoint", "http://127.0.0.1:9000")
        .option("fs.s3.accessKeyId", key).option("fs.s3.accessKeySecret", secret).load("s3://b/wh/db.db/t")

Other options: any Paimon table option (``write-only``, ``file.compression``, ``bucket-key``,
``merge-engine``, ...): used as table options when the write creates the table, as dynamic
options otherwise; ``row-kind-column`` names a column of +I/-U/+U/-D (or 0..3) row kinds that is
not stored; ``read.parallelism`` sets the minimum number of read partitions; ``pushdown`` =
``true`` prunes partitions, buckets and files with the query's filters (off by default, see
below). An unknown option is an error (a typo would otherwise silently do nothing).

Threads: the JVM keeps Spark's active session per thread, and Spark looks Python data sources
up in the active session; call ``impl.spark.register(spark)`` at the start of every thread that
uses ``paimon_py`` (``write_dataframe`` and ``compact`` do it themselves).

The rule for reads: every scan reads the whole snapshot and Spark applies the query's filters,
because Spark 4.3 hands every scan of one loaded DataFrame or view the same planned read, so
pruning it for one scan's filters would drop rows another scan needs (``df.union(df.filter(...))``,
self-joins, subqueries over a view). ``.option("pushdown", "true")`` prunes with the pushed
filters, for a DataFrame each query scans once; see :mod:`impl.spark.claims`.
"""

from __future__ import annotations

import threading
import uuid

from pyspark.sql.datasource import DataSource

from impl.errors import SchemaMismatchError
from impl.jobs.tables import TableRef
from impl.spark.claims import prune_local_ledgers
from impl.spark.errors import SparkConnectorError
from impl.spark.only_files import decode_only_files
from impl.spark.options import (
    FORMAT_NAME,
    ONLY_FILES_KEY,
    PUSHDOWN,
    READ_CHANGELOG,
    READ_PARALLELISM,
    READ_SPLIT_SIZE,
    parse_options,
    prepare_write,
    refuse_system_table_write,
)
from impl.spark.reader import ROW_KIND_COLUMN, PaimonPushdownReader, PaimonReader
from impl.spark.stream_reader import PaimonStreamReader, check_streamable, stream_start
from impl.spark.stream_writer import PaimonStreamWriter, make_stream_sink
from impl.spark.system import SystemTableReader
from impl.spark.types import check_read_schema, spark_schema
from impl.spark.writer import PaimonWriter
from impl.system import SystemTable


def _read_ref(options) -> tuple[TableRef, dict[str, str]]:
    parsed = parse_options(options)
    if "incremental-between" in parsed.table:
        raise SparkConnectorError(f"{FORMAT_NAME}: incremental reads are not supported by the Spark source")
    ref = TableRef.from_path(parsed.path, dynamic_options=parsed.table, storage_options=parsed.storage)
    return ref, parsed.connector


def _row_kind(connector: dict[str, str]) -> bool:
    """``read.changelog``: add Paimon's ``rowkind`` column."""

    return READ_CHANGELOG.get(connector)


def _pushdown(connector: dict[str, str]) -> bool:
    """``pushdown`` (default false): prune the planned read with the pushed filters. Off by
    default because Spark 4.3 shares one planned read among all scans of a loaded relation."""

    return PUSHDOWN.get(connector)


def read_schema(table, row_kind: bool):
    """The Spark schema a read returns: the table's columns, after ``rowkind`` with ``read.changelog``."""
    from pyspark.sql.types import StringType, StructField, StructType


    schema = spark_schema(table.schema)
    if not row_kind:
        return schema
    if any(f.name.lower() == ROW_KIND_COLUMN for f in schema.fields):
        raise SparkConnectorError(f"{FORMAT_NAME}: table {table.identifier} has a column named {ROW_KIND_COLUMN!r}, "
                                  f"which read.changelog=true would add; read without read.changelog")
    return StructType([StructField(ROW_KIND_COLUMN, StringType(), True), *schema.fields])


def _check_schema(requested, table, row_kind: bool) -> None:
    """A user-specified read schema must be the one the read returns."""

    if row_kind:
        expected = read_schema(table, True)
        head = requested.fields[:1]
        if not head or head[0].name != expected.fields[0].name or head[0].dataType != expected.fields[0].dataType:
            raise SchemaMismatchError(f"read schema {requested.simpleString()} does not match table "
                                      f"{table.identifier} with read.changelog=true ({expected.simpleString()}); "
                                      f"omit .schema(...) to use the table's")
        requested = type(requested)(requested.fields[1:])
    check_read_schema(requested, table.schema, table.identifier)


class PaimonDataSource(DataSource):
    """Apache Paimon tables through impl, as a Spark Python data source named ``paimon_py``."""

    def __init__(self, options) -> None:
        super().__init__(options)
        # Spark creates the data source once per load() and pickles that instance into every
        # planning worker: the id names one loaded DataFrame / view (see PaimonReader).
        self.relation_id = uuid.uuid4().hex

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self):
        ref, connector = _read_ref(self.options)
        return read_schema(ref.table(), _row_kind(connector))

    def reader(self, schema):
        ref, connector = _read_ref(self.options)
        table = ref.table()  # fails early, naming the table, if it does not exist
        row_kind = _row_kind(connector)
        if isinstance(table, SystemTable):
            if row_kind:
                raise SparkConnectorError(f"{FORMAT_NAME}: system table {table.identifier} has no row kinds; "
                                          "read it without read.changelog")
            _check_schema(schema, table, False)
            return SystemTableReader(ref, schema)
        _check_schema(schema, table, row_kind)
        slots = READ_PARALLELISM.get(connector)
        target = READ_SPLIT_SIZE.get(connector)
        reader_class = PaimonPushdownReader if _pushdown(connector) else PaimonReader
        only = decode_only_files(connector[ONLY_FILES_KEY]) if ONLY_FILES_KEY in connector else None
        return reader_class(ref, schema, slots=slots, target_bytes=target,
                            relation_id=getattr(self, "relation_id", None), row_kind=row_kind, only_files=only)

    def streamReader(self, schema):
        ref, connector = _read_ref(self.options)
        table = ref.table()
        if "$" in ref.name:
            raise SparkConnectorError(f"{FORMAT_NAME}: system table {table.identifier} cannot be read as a stream; "
                                      "read it as a batch")
        row_kind = _row_kind(connector)
        _check_schema(schema, table, row_kind)
        check_streamable(table)
        start = stream_start(table.options.parsed)  # scan.snapshot-id / timestamp-millis: where the stream starts
        return PaimonStreamReader(ref, schema, start, row_kind=row_kind, slots=READ_PARALLELISM.get(connector),
                                  target_bytes=READ_SPLIT_SIZE.get(connector))

    def streamWriter(self, schema, overwrite: bool):
        """The Structured Streaming sink (see :mod:`impl.spark.stream_writer`)."""

        return PaimonStreamWriter(make_stream_sink(self.options, schema, overwrite))

    def writer(self, schema, overwrite: bool):
        parsed = parse_options(self.options)
        refuse_system_table_write(parsed.path, "a write")
        job = prepare_write(parsed.path, schema, parsed.connector, parsed.table, storage_options=parsed.storage)
        return PaimonWriter(job, overwrite)


_registered: set[int] = set()
_reg_lock = threading.Lock()


def activate(spark) -> None:
    """Make ``spark`` the JVM's active session in the calling thread.

    Spark looks Python data sources up in the *active* session, which the JVM keeps per thread:
    a Python thread other than the one that built the session would otherwise get
    DATA_SOURCE_NOT_FOUND for ``paimon_py``. ``register`` and ``session`` call this.
    """
    try:
        jvm = spark._jvm
        jss = getattr(spark, "_jsparkSession", None)
        if jvm is not None and jss is not None:
            jvm.org.apache.spark.sql.SparkSession.setActiveSession(jss)
    except Exception:  # noqa: BLE001 - Spark Connect sessions have no JVM here
        pass


def register(spark) -> None:
    """Register the ``paimon_py`` data source with ``spark`` (idempotent), enable the Python
    filter pushdown it needs, and make ``spark`` active in the calling thread (call it at the
    start of every thread that reads or writes ``paimon_py``)."""
    activate(spark)
    with _reg_lock:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        key = id(spark)
        if key in _registered:
            return
        spark.dataSource.register(PaimonDataSource)
        _registered.add(key)
    try:

        prune_local_ledgers()
    except Exception:  # noqa: BLE001 - housekeeping only
        pass


__all__ = ["PaimonDataSource", "register", "activate", "FORMAT_NAME", "parse_options", "prepare_write"]

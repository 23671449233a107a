"""Writes through Spark's own Parquet writer: the JVM writes the bytes, impl decides the metadata and commits.

:func:`impl.spark.write_dataframe` takes this path (``writer="spark"``; ``"auto"``, the default,
takes it for append tables that allow it, see :func:`native_write_reason` and :func:`use_native`):

1. on the driver, before any task: the DataFrame is checked against the table schema
   (:func:`impl.spark.options.prepare_write`) and its columns renamed to the table's;
2. Spark writes Parquet (the table's ``file.compression``, zstd at Paimon's level) into a staging
   directory of the write, ``<warehouse>/.paimon_py_spark/staging/<db>.<table>/<write-id>``,
   partitioned by copies of the partition columns and the bucket (the real columns stay in the
   files, as Paimon keeps them), with Spark's own output committer: a failed or killed task's
   files stay in Spark's ``_temporary`` directory, which the job commit or abort removes.
   Primary-key tables: the ``_KEY_`` columns and ``_VALUE_KIND`` are Spark expressions; rows
   are routed by Paimon's bucket function (the vectorized UDF of :mod:`impl.spark.routing`,
   over the bucket-key columns only), sorted by key within each bucket, the last row of each
   key in the input's order kept (as impl's writers keep the last written), and numbered in
   key order after the table's highest sequence number (by position in the task: one task
   writes a whole bucket): each file one level-0 sorted run;
3. the driver reads the footers of the files the job committed (in threads: row count,
   column statistics folded as :class:`impl.datafile.stats.StatsCollector` folds them, the
   partition values from the first row; primary-key files: first and last key, sequence
   range, -U / -D count), logs each file's final path in the write intent
   (:mod:`impl.jobs.tracking`), renames it into its bucket directory as
   ``data-<uuid>-<n>.parquet`` and commits once with :func:`impl.jobs.writer.commit_write`
   (the old path's commit user, identifier and leftover removal). The staging directory is
   removed whatever happens; one left by a crashed driver is removed by the next native write
   to the table once that write's closed marker exists.

Not served here (``writer="auto"`` falls back to the Python writers, ``writer="spark"`` refuses
by name): formats other than Parquet, file indexes, row tracking, types whose Parquet form
Spark writes differently from Paimon (timestamps other than TIMESTAMP(6), nested types), tables
not on a local file system or an S3 store (S3 needs Hadoop's ``s3a`` in the session, see
:mod:`impl.spark.s3a`: the rename into the table is then a copy), postpone and dynamic buckets, primary-key tables with another merge
engine, a changelog producer, deletion vectors, sequence.field / rowkind.field / ignore-delete,
or keys Spark may order differently (floating point, binary, boolean, timestamps). Files roll
at about ``target-file-size`` (Spark's writer rolls by rows: :func:`estimated_rows_per_file`),
and the write never compacts (as ``write-only``).
"""

from __future__ import annotations

import logging
import posixpath
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from impl.bucket.routing import BucketMode, encode_partition
from impl.commit.messages import CommitMessage
from impl.data.types import to_arrow
from impl.datafile.meta import DataFileMeta, KeyFacts, written_file_meta
from impl.datafile.stats import KEY_STATS_MODE, StatsCollector
from impl.format.formats import named_for
from impl.jobs.tracking import INTENT_ROOT
from impl.jobs.writer import WriteJob
from impl.manifest.records import FileKind
from impl.mergetree.kv import SEQUENCE_NUMBER, VALUE_KIND, KeyCodec, KVLayout
from impl.options.values import BucketFunctionType, ChangelogProducer, MergeEngine
from impl.read.scan import SnapshotReader
from impl.spark.errors import NativeWriteUnsupportedError, SparkConnectorError
from impl.spark.s3a import s3a_reason, spark_store

log = logging.getLogger(__name__)

# Paimon file.compression -> Spark's Parquet codec name
_SPARK_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "none": "none"}
_FLAT_TYPES = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL",
                         "CHAR", "VARCHAR", "BINARY", "VARBINARY", "DATE", "TIMESTAMP"})
# key types whose Spark sort order is Paimon's (strings: both compare UTF-8 bytes)
_SPARK_ORDERED_KEY_TYPES = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL", "CHAR", "VARCHAR", "DATE"})
_PART_PREFIX = "__paimon_part_"
_ORDER_COLUMN = "__paimon_input_order"
_ROW_NUMBER = "__paimon_row_number"
_BUCKET_DIR_COLUMN = "__paimon_bucket"
_RENAME_THREADS = 8
_DRIVER_TASK = "driver-native"


def native_write_reason(table, *, reachable: bool, store_reason: str | None = None) -> str | None:
    """Why Spark's own Parquet writer cannot write ``table``'s files, or None when it can.
    ``store_reason``: why Spark cannot reach the table's object store (None: it can, or the
    table is not on one)."""
    if store_reason is not None:
        return f"{table.identifier} is on an object store: {store_reason}"
    if not reachable:
        return f"{table.identifier} is not on a local file system or S3 store Spark and impl share"
    if table.bucket_mode() not in (BucketMode.BUCKET_UNAWARE, BucketMode.HASH_FIXED):
        return f"{table.identifier} has bucket mode {table.bucket_mode().name}"
    opts = table.options
    fmt, wopts = opts.write_formats.for_level(0)
    if fmt.name != "parquet":
        return f"{table.identifier} writes file.format {fmt.name!r}"
    if wopts.compression not in _SPARK_CODECS:
        return f"{table.identifier} writes file.compression {wopts.compression!r}"
    if wopts.format_options:
        return f"{table.identifier} sets format options {sorted(wopts.format_options)}"
    if not opts.file_index.empty:
        return f"{table.identifier} has file indexes (file-index.*)"
    if opts.row_tracking:
        return f"{table.identifier} has row tracking"
    for f in table.schema.fields:
        t = f.type
        if t.root not in _FLAT_TYPES or (t.root == "TIMESTAMP" and (t.precision if t.precision is not None else 6) != 6):
            return f"column {f.name!r} of {table.identifier} is {t}"
    return _merge_tree_reason(table) if table.is_primary_key_table else None


def _merge_tree_reason(table) -> str | None:
    """Why a primary-key table's level-0 files cannot come from Spark (deduplicated by a window,
    sorted by Spark's order), or None."""
    opts = table.options
    mt = table.core.merge_tree_options
    name = table.identifier
    if opts.merge_engine is not MergeEngine.DEDUPLICATE:
        return f"{name} has merge-engine {opts.merge_engine.value!r}"
    if opts.changelog_producer is not ChangelogProducer.NONE:
        return f"{name} has changelog-producer {opts.changelog_producer.value!r}"
    if opts.deletion_vectors:
        return f"{name} has deletion vectors"
    if mt.sequence_fields or opts.rowkind_field or mt.ignore_delete:
        return f"{name} sets sequence.field, rowkind.field or ignore-delete"
    for k in table.schema.trimmed_primary_keys:
        t = table.schema.field(k).type
        if t.root not in _SPARK_ORDERED_KEY_TYPES:
            return f"primary-key column {k!r} of {name} is {t} (Spark's order may differ from Paimon's)"
    return None


def staging_dir(table, write_id: str) -> str:
    """Where Spark writes one native write's files before they are renamed into the table."""
    return posixpath.join(_staging_root(table), write_id)


def _staging_root(table) -> str:
    warehouse = posixpath.dirname(posixpath.dirname(table.path.rstrip("/")))
    return posixpath.join(warehouse, INTENT_ROOT, "staging", table.identifier)


def prune_closed_staging(table) -> list[str]:
    """Remove staging directories of this table's writes that are closed (committed or aborted),
    e.g. left by a driver that died before removing them. Returns the removed directories."""
    root = _staging_root(table)
    closed = posixpath.join(posixpath.dirname(posixpath.dirname(root)), "closed", table.identifier)
    fio = table.file_io
    done = set(fio.list_names(closed))
    doomed = [posixpath.join(root, n) for n in fio.list_names(root) if n in done]
    for d in doomed:
        _remove_tree(fio, d)
    return doomed


def _remove_tree(fio, directory: str) -> None:
    try:
        fio.fs.rm(directory, recursive=True)
    except FileNotFoundError:
        pass


# ====================================================================== Spark side


def spark_frame(df, table, job: WriteJob, bucket_column: str | None, *, row_kind_column: str | None = None,
                carry: Sequence[str] = ()):
    """``df`` as the rows Spark writes: the table's columns in table order, under the table's
    names (a primary-key table's ``_KEY_`` columns, the input order, where the KV files have
    ``_SEQUENCE_NUMBER``, and ``_VALUE_KIND`` first); copies of the partition columns and the bucket (``df``'s column
    ``bucket_column``, for bucketed tables) to partition the staging output by; NOT NULL
    columns checked row by row (the task fails naming the column). Returns the frame, the
    columns to partition by, and for primary-key tables the ``_KEY_`` columns. The columns
    ``carry`` of ``df`` come last, as they are (to order by; not written)."""
    from pyspark.sql import functions as F  # pyspark: only where Spark runs (require()d by impl.spark)

    nullable = {f.name: f.nullable for f in df.schema.fields}
    src_of = dict(job.column_map)
    values = []
    for f, (dst, src) in zip(table.schema.fields, job.column_map, strict=True):
        c = F.col(src)
        if not f.type.nullable and nullable.get(src, True):
            c = F.when(c.isNull(), F.raise_error(F.lit(
                f"write to {table.identifier}: NOT NULL column {dst!r} holds a null value"))).otherwise(c)
        values.append(c.alias(dst))
    by = [F.col(src).alias(f"{_PART_PREFIX}{i}") for i, (dst, src) in enumerate(job.column_map)
          if dst in table.partition_keys]
    if bucket_column is not None:
        by.append(F.col(bucket_column).alias(_BUCKET_DIR_COLUMN))
    system: list = []
    keys: list[str] = []
    if table.is_primary_key_table:
        layout = KVLayout(table.schema)
        if thin_files(table):  # the key is in its value columns only: order by those
            keys = list(layout.key_names)
        else:
            keys = list(layout.key_columns)
            system = [F.col(src_of[k]).alias(kc) for k, kc in zip(layout.key_names, keys, strict=True)]
        # of several rows of one key, the last of the input wins (impl's writers: the last written)
        system.append(F.monotonically_increasing_id().alias(_ORDER_COLUMN))
        system.append(_kind_expr(row_kind_column).alias(VALUE_KIND))
    out = df.select(*system, *values, *by, *carry)
    return out, out.columns[len(system) + len(values):len(system) + len(values) + len(by)], keys


def thin_files(table) -> bool:
    """Whether the table's primary-key files are written without the ``_KEY_`` copies
    (``data-file.thin-mode``, as impl's own writers do; see impl.mergetree.file_writer)."""
    return table.is_primary_key_table and table.core.merge_tree_options.data_file_thin_mode


def _kind_expr(row_kind_column: str | None):
    """``_VALUE_KIND`` (0 +I, 1 -U, 2 +U, 3 -D) from the row-kind column, as impl's writers read it."""
    from pyspark.sql import functions as F  # pyspark: only where Spark runs (require()d by impl.spark)

    if row_kind_column is None:
        return F.lit(0).cast("tinyint")
    c = F.col(row_kind_column)
    kinds = F.when(c.cast("string") == "+I", 0).when(c.cast("string") == "-U", 1) \
        .when(c.cast("string") == "+U", 2).when(c.cast("string") == "-D", 3)
    numeric = F.when(c.cast("int").between(0, 3), c.cast("int"))
    kind = F.coalesce(kinds, numeric)
    bad = F.raise_error(F.concat(F.lit(f"row kind column {row_kind_column!r} holds "), c.cast("string"),
                                 F.lit(", not one of +I, -U, +U, -D, 0..3")))
    return F.when(kind.isNull(), bad).otherwise(kind).cast("tinyint")


def spark_write(df, table, job: WriteJob, target: str, num_tasks: int | None, bucket_column: str | None, *,
                row_kind_column: str | None = None, sequence_base: int = 0, order_by: Sequence[str] = (),
                max_records_per_file: int | None = None) -> None:
    """Spark writes the rows into ``target`` (a staging directory) with its Parquet writer;
    with ``bucket_column``, one task per (partition, bucket). Primary-key tables: each bucket's
    rows sorted by key, the last row of each key kept (one sorted run per file). Append tables:
    each bucket's rows in the order of ``df``'s columns ``order_by`` (not written).
    ``max_records_per_file``: a task starts a new file after that many rows (a file rolls)."""
    from pyspark.sql import Window  # pyspark: only where Spark runs (require()d by impl.spark)
    from pyspark.sql import functions as F  # pyspark: only where Spark runs (require()d by impl.spark)

    out, partition_by, keys = spark_frame(df, table, job, bucket_column, row_kind_column=row_kind_column,
                                          carry=order_by)
    if bucket_column is not None:
        n = num_tasks or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
        out = out.repartition(n, *partition_by)
    if order_by:
        out = out.sortWithinPartitions(*partition_by, *order_by).drop(*order_by)
    if keys:
        # One sort serves the window and the writer's grouping, and the window's partitions
        # (bucket, partition, key) lie within one task: no other shuffle. The window keeps the
        # last row of each key; then each task numbers its rows in their (key) order after the
        # table's highest sequence number, so a bucket's new rows (all in one task) come after
        # every row it holds, in key order, with no gaps but the other buckets of the task.
        columns = out.columns
        out = out.sortWithinPartitions(*partition_by, *keys, F.col(_ORDER_COLUMN).desc())
        latest = Window.partitionBy(*partition_by, *keys).orderBy(F.col(_ORDER_COLUMN).desc())
        out = out.withColumn(_ROW_NUMBER, F.row_number().over(latest)).where(F.col(_ROW_NUMBER) == 1)
        # the low 33 bits of monotonically_increasing_id: the row's position in its task
        in_task = F.monotonically_increasing_id().bitwiseAND(F.lit((1 << 33) - 1))
        seq = (F.lit(sequence_base).cast("bigint") + in_task).alias(SEQUENCE_NUMBER)
        out = out.select(*[seq if c == _ORDER_COLUMN else F.col(c) for c in columns])
    _, wopts = table.options.write_formats.for_level(0)
    w = out.write.mode("errorifexists").option("compression", _SPARK_CODECS[wopts.compression])
    if wopts.compression == "zstd" and wopts.zstd_level is not None:
        w = w.option("parquet.compression.codec.zstd.level", str(wopts.zstd_level))
    if max_records_per_file:
        w = w.option("maxRecordsPerFile", str(max_records_per_file))
    if partition_by:
        w = w.partitionBy(*partition_by)
    store = spark_store(job.ref)
    w.options(**store.hadoop).parquet(store.uri(target))


# bytes per row of a variable-width column when no file tells: a guess, so that a table's first
# native write rolls its files too (at worst early: a guess of uncompressed widths over-estimates)
_GUESSED_VAR_WIDTH_BYTES = 32


def rows_per_file(files: Sequence[DataFileMeta], target_file_size: int) -> int | None:
    """Rows per new file for files of about ``target_file_size`` bytes, from the bytes per row of
    ``files`` (written with the same format and codec); None when they hold no rows."""
    rows = sum(f.row_count for f in files)
    if rows <= 0:
        return None
    size = sum(f.file_size for f in files)
    return max(1, int(target_file_size * rows / max(size, 1)))


def estimated_rows_per_file(table) -> int:
    """Spark's ``maxRecordsPerFile`` for files of about ``target-file-size``: Spark's writer
    rolls by rows, not bytes. The bytes per row of the files the latest snapshot added (one
    manifest list and its delta manifests read), else the schema's uncompressed width."""
    core = table.core
    target = table.options.target_file_size_for(table.is_primary_key_table)
    latest = core.snapshot_manager.latest_snapshot()
    if latest is not None:
        entries = core.manifest_file.read_all(core.manifest_list.read_delta_manifests(latest))
        known = rows_per_file([e.file for e in entries if e.kind is FileKind.ADD], target)
        if known is not None:
            return known
    types = list(KVLayout(table.schema).arrow_schema.types) if table.is_primary_key_table else \
        [to_arrow(f.type) for f in table.schema.fields]
    width = 0
    for at in types:
        fixed = pa.types.is_primitive(at) and at.bit_width >= 8
        width += at.bit_width // 8 if fixed else _GUESSED_VAR_WIDTH_BYTES
    return max(1, target // max(width, 1))


def next_sequence_number(table) -> int:
    """One more than the highest sequence number of the table's live files: the new files' rows
    come after every row a bucket holds (impl's writers continue each bucket's own counter; any
    larger start keeps the order)."""
    core = table.core
    entries = SnapshotReader(core).live_entries(core.snapshot_manager.latest_snapshot())
    return max((e.file.max_sequence_number for e in entries), default=-1) + 1


# ====================================================================== driver side


@dataclass(frozen=True)
class _StagedFile:
    path: str
    bucket: int


@dataclass(frozen=True)
class _FileFacts:
    staged: _StagedFile
    size_bytes: int
    rows: int
    partition: tuple
    bounds: dict[str, tuple[Any, Any, int | None]]
    first_key: tuple = ()  # primary-key tables: the file's first and last key, its -U / -D rows
    last_key: tuple = ()
    retracts: int = 0


def staged_files(fio, directory: str) -> list[_StagedFile]:
    """The Parquet files a finished Spark job left in ``directory`` (Spark's bookkeeping skipped)."""
    out = []
    for st in fio.walk_files(directory):
        rel = posixpath.relpath(st.path, directory)
        parts = rel.split("/")
        if "_temporary" in parts or parts[-1].startswith(("_", ".")) or not parts[-1].endswith(".parquet"):
            continue
        bucket = 0
        for p in parts[:-1]:
            if p.startswith(_BUCKET_DIR_COLUMN + "="):
                bucket = int(p.split("=", 1)[1])
        out.append(_StagedFile(st.path, bucket))
    return sorted(out, key=lambda s: s.path)


def _column_bounds(md, names: Sequence[str]) -> dict[str, tuple[Any, Any, int | None]]:
    """(min, max, null count) per top-level column over every row group of a Parquet footer;
    min / max None as soon as one row group with values has none."""
    index = {md.schema.column(i).path: i for i in range(md.num_columns)}
    out: dict[str, tuple[Any, Any, int | None]] = {}
    for name in names:
        i = index.get(name)
        if i is None:
            out[name] = (None, None, None)
            continue
        lo = hi = None
        nulls: int | None = 0
        known = True
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            st = rg.column(i).statistics
            if st is None:
                known, nulls = False, None
                continue
            n = st.null_count if st.has_null_count else None
            nulls = None if nulls is None or n is None else nulls + n
            if n is not None and n == rg.num_rows:
                continue  # only nulls: no bounds, none needed
            if not st.has_min_max:
                known = False
                continue
            lo = st.min if lo is None or st.min < lo else lo
            hi = st.max if hi is None or st.max > hi else hi
        out[name] = (lo, hi, nulls) if known else (None, None, nulls)
    return out


def _file_facts(staged: _StagedFile, fio, table) -> _FileFacts:
    with fio.fs.open(staged.path, "rb") as f:
        pf = pq.ParquetFile(f)
        md = pf.metadata
        pk = table.is_primary_key_table
        layout = KVLayout(table.schema) if pk else None
        names = list(layout.all_columns) if layout is not None else table.schema.field_names
        partition: tuple = ()
        if table.partition_keys and md.num_rows:
            first = pf.read_row_group(0, columns=list(table.partition_keys)).slice(0, 1)
            partition = tuple(first.column(k)[0].as_py() for k in table.partition_keys)
        size = fio.file_size(staged.path)
        bounds = _column_bounds(md, names)
        thin = thin_files(table)
        if layout is not None and thin:  # the key statistics are those of the value columns holding the key
            bounds.update({kc: bounds[k] for k, kc in zip(layout.key_names, layout.key_columns, strict=True)})
        facts = _FileFacts(staged, size, md.num_rows, partition, bounds)
        if layout is None or not md.num_rows:
            return facts
        # the file is sorted by key: its first and last rows hold its key range
        keys = list(layout.key_names if thin else layout.key_columns)
        head = pf.read_row_group(0, columns=keys).slice(0, 1)
        last = md.num_row_groups - 1
        tail = pf.read_row_group(last, columns=keys)
        tail = tail.slice(tail.num_rows - 1, 1)
        kinds = pf.read(columns=[VALUE_KIND]).column(VALUE_KIND)
        retracts = int(pc.sum(pc.is_in(kinds, value_set=pa.array([1, 3], kinds.type))).as_py() or 0)
        return replace(facts, first_key=tuple(head.column(k)[0].as_py() for k in keys),
                       last_key=tuple(tail.column(k)[0].as_py() for k in keys), retracts=retracts)


def _meta(facts: _FileFacts, name: str, table, clock_millis: int) -> DataFileMeta:
    if not table.is_primary_key_table:
        stats = StatsCollector.of_fields(table.schema.fields, table.options.stats_mode)
        stats.update_bounds(facts.bounds)
        value_stats, cols = stats.result()
        return written_file_meta(name, facts.size_bytes, facts.rows, schema_id=table.schema.id,
                                 creation_time_millis=clock_millis, value_stats=value_stats, value_stats_cols=cols)
    layout = KVLayout(table.schema)
    keys = StatsCollector(layout.key_columns, layout.key_types, KEY_STATS_MODE, dense=False)
    keys.update_bounds(facts.bounds)
    values = StatsCollector(layout.value_names, layout.value_types, table.options.stats_mode)
    values.update_bounds(facts.bounds)
    key_stats, _ = keys.result()
    value_stats, cols = values.result()
    seq_lo, seq_hi, _ = facts.bounds[SEQUENCE_NUMBER]
    codec = KeyCodec(layout.key_types)
    key_facts = KeyFacts(codec.encode(facts.first_key), codec.encode(facts.last_key), key_stats, int(seq_lo),
                         int(seq_hi), facts.retracts)
    return written_file_meta(name, facts.size_bytes, facts.rows, schema_id=table.schema.id,
                             creation_time_millis=clock_millis, value_stats=value_stats, value_stats_cols=cols,
                             keys=key_facts)


def place_files(table, job: WriteJob, directory: str) -> list[CommitMessage]:
    """Read the footers of the staged files, log and rename them into their bucket directories,
    and return one CommitMessage per (partition, bucket)."""
    fio = table.file_io
    staged = staged_files(fio, directory)
    with ThreadPoolExecutor(max_workers=_RENAME_THREADS, thread_name_prefix="paimon-footers") as pool:
        facts = [f for f in pool.map(lambda s: _file_facts(s, fio, table), staged) if f.rows > 0]
    core = table.core
    namer = core.paths.layout.namer(core.env.new_id)
    fmt, _ = table.options.write_formats.for_level(0)
    part_types = [table.schema.field(k).type for k in table.partition_keys]
    now = core.env.clock_millis()
    grouped: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    moves: list[tuple[str, str]] = []
    bucket_dirs: set[str] = set()
    for f in facts:
        partition = encode_partition(f.partition, part_types)
        bucket_dir = core.paths.bucket_dir(core.partition_cache.path(partition), f.staged.bucket)
        name = named_for(namer.data_file(), fmt)
        bucket_dirs.add(bucket_dir)
        moves.append((f.staged.path, posixpath.join(bucket_dir, name)))
        grouped.setdefault((partition, f.staged.bucket), []).append(_meta(f, name, table, now))
    intent = job.intent(table)
    for d in bucket_dirs:
        fio.mkdirs(d)

    def move(src: str, dst: str) -> None:
        intent.mark(_DRIVER_TASK, dst)  # logged before it exists, as a task's file is: an abort removes it
        fio.fs.mv(src, dst)

    with ThreadPoolExecutor(max_workers=_RENAME_THREADS, thread_name_prefix="paimon-rename") as pool:
        list(pool.map(lambda m: move(*m), moves))
    total = table.options.bucket
    return [CommitMessage(p, b, total, new_files=tuple(files)) for (p, b), files in grouped.items()]


def use_native(job: WriteJob, table, writer: str, row_kind_column: str | None) -> bool:
    """Whether this write goes through Spark's Parquet writer: ``writer`` ``spark`` (refused by
    name when the table needs the Python writers), ``python``, or ``auto`` (Spark's for the
    append tables it can write)."""
    if writer not in ("auto", "spark", "python"):
        raise SparkConnectorError(f"writer {writer!r} is not one of 'auto', 'spark', 'python'")
    if writer == "python":
        return False
    ref = job.ref
    store_reason = None
    if ref.on_object_store:
        from pyspark.sql import SparkSession  # pyspark: only where Spark runs (require()d by impl.spark)

        store_reason = s3a_reason(SparkSession.getActiveSession())
    reachable = ref.fs_factory is None and (ref.on_object_store or _is_local(ref.filesystem()))
    reason = native_write_reason(table, reachable=reachable, store_reason=store_reason)
    if reason is None and row_kind_column and not table.is_primary_key_table:
        reason = f"row kinds are given (column {row_kind_column!r}) for an append table"
    if reason is not None and writer == "spark":
        raise NativeWriteUnsupportedError(f"writer='spark' cannot write this table: {reason}; use writer='python'")
    # primary-key tables only when asked: at 5M rows (benchmarks/spark_io.py) Spark's sort and
    # dedupe window still cost more than impl's writers in the Python tasks
    return reason is None and (writer == "spark" or not table.is_primary_key_table)


def _is_local(fs) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def write_native(df, job: WriteJob, num_tasks: int | None, bucket_column: str | None, *,
                 row_kind_column: str | None = None) -> list[CommitMessage]:
    """Spark writes ``df``'s rows, the driver places the files; the messages to commit (the
    caller commits, or on failure aborts, the job as for the Python writers). ``bucket_column``:
    the column of ``df`` holding each row's bucket (bucketed tables; None for bucket-unaware)."""
    table = job.ref.table()
    with staging(table, job) as directory:
        base = next_sequence_number(table) if table.is_primary_key_table else 0
        spark_write(df, table, job, directory, num_tasks, bucket_column, row_kind_column=row_kind_column,
                    sequence_base=base, max_records_per_file=estimated_rows_per_file(table))
        return place_files(table, job, directory)


@contextmanager
def staging(table, job: WriteJob) -> Iterator[str]:
    """The staging directory of ``job``'s native write, removed on exit whatever happens; the
    closed writes' directories that crashed drivers left are removed first."""
    try:
        prune_closed_staging(table)
    except Exception as e:  # noqa: BLE001 - housekeeping of earlier writes; this write goes on
        log.warning("cannot prune old staging directories of %s: %s", table.identifier, e)
    directory = staging_dir(table, job.write_id)
    try:
        yield directory
    finally:
        _remove_tree(table.file_io, directory)


__all__ = ["native_write_reason", "use_native", "with_bucket_expression", "write_native", "NativeWriteUnsupportedError", "staging_dir",
           "prune_closed_staging", "place_files", "spark_frame", "spark_write", "staging",
           "rows_per_file", "estimated_rows_per_file"]


_MASK32 = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593
_SEED = 42  # Paimon's BinaryRow hash (MurmurHashUtils.hashBytesByWords)


def _py_mix(h: int, k: int) -> int:
    """Murmur3_32's step for one 32-bit word ``k`` (Python ints; for the constant header words)."""
    k = (k * _C1) & _MASK32
    k = ((k << 15) | (k >> 17)) & _MASK32
    k = (k * _C2) & _MASK32
    h ^= k
    h = ((h << 13) | (h >> 19)) & _MASK32
    return (h * 5 + 0xE6546B64) & _MASK32


def _mul32(x, c: int):
    """``x * c mod 2**32`` for a column ``x`` in [0, 2**32) and a constant ``c``, in bigint
    arithmetic that never overflows (Spark's ANSI mode raises on overflow)."""
    from pyspark.sql import functions as F  # pyspark: only where Spark runs (require()d by impl.spark)

    low = x * F.lit(c & 0xFFFF)
    high = F.shiftleft((x * F.lit(c >> 16)).bitwiseAND(F.lit(0xFFFF)), 16)
    return (low + high).bitwiseAND(F.lit(_MASK32))


def _rotl32(x, r: int):
    from pyspark.sql import functions as F  # pyspark: only where Spark runs (require()d by impl.spark)

    return F.shiftleft(x, r).bitwiseOR(F.shiftright(x, 32 - r)).bitwiseAND(F.lit(_MASK32))


def with_bucket_expression(df, table, column_map: Sequence[tuple[str, str]], name: str):
    """``df`` plus column ``name`` holding Paimon's bucket of each row, computed by Spark
    expressions, or None where only the Python UDF of :mod:`impl.spark.routing` computes it
    exactly.

    A one-field INT or BIGINT bucket key: Paimon hashes the key's BinaryRow (8 header bytes,
    all zero for a non-null field, then the value in an 8-byte little-endian slot) with
    Murmur3_32 (seed 42) word by word and takes ``abs(hash % buckets)``. The two header words
    are constants (folded here); the value's two words are mixed by bigint arithmetic kept
    below 2**63 (32-bit multiplications split in 16-bit halves), all in the JVM: no column
    crosses into Python. Each step is its own column: one expression would repeat every
    operand at every level (a tree exponential in the steps, too large to compile)."""
    from pyspark.sql import functions as F  # pyspark: only where Spark runs (require()d by impl.spark)

    keys = list(table.bucket_keys)
    if len(keys) != 1 or table.options.bucket < 1 or table.options.bucket_function is not BucketFunctionType.DEFAULT:
        return None  # other bucket functions: the UDF (impl.bucket.routing.compute_buckets)
    t = table.schema.field(keys[0]).type
    if t.root not in ("INT", "BIGINT"):
        return None
    tmp = [f"__paimon_h{i}" for i in range(12)]
    steps = iter(tmp)
    out = df

    def step(expr) -> Any:
        nonlocal out
        col = next(steps)
        out = out.withColumn(col, expr)
        return F.col(col)

    def mix(h, k):
        k = step(_mul32(k, _C1))
        k = step(_mul32(_rotl32(k, 15), _C2))
        x = step(h.bitwiseXOR(k))
        return step((_rotl32(x, 13) * F.lit(5) + F.lit(0xE6546B64)).bitwiseAND(F.lit(_MASK32)))

    v = F.col(dict(column_map)[keys[0]]).cast("bigint")
    low = step(v.bitwiseAND(F.lit(_MASK32)))
    # an INT's slot holds its 4 bytes and 4 zero bytes; a BIGINT's upper word, unsigned
    high = F.lit(0).cast("bigint") if t.root == "INT" else F.shiftrightunsigned(v, 32)
    h = mix(mix(F.lit(_py_mix(_py_mix(_SEED, 0), 0)).cast("bigint"), low), high)
    h = h.bitwiseXOR(F.lit(16))  # fmix with the row's 16 bytes
    out = out.withColumn(name, h)
    h = F.col(name)
    out = out.withColumn(name, _mul32(h.bitwiseXOR(F.shiftright(h, 16)), 0x85EBCA6B))
    out = out.withColumn(name, _mul32(h.bitwiseXOR(F.shiftright(h, 13)), 0xC2B2AE35))
    out = out.withColumn(name, h.bitwiseXOR(F.shiftright(h, 16)))
    signed = F.when(h >= F.lit(1 << 31), h - F.lit(1 << 32)).otherwise(h)
    out = out.withColumn(name, F.abs(signed % F.lit(table.options.bucket)).cast("int"))
    return out.drop(*tmp)

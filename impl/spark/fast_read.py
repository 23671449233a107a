"""The fast batch read: Spark's own vectorized Parquet reader wherever a split needs no merge.

    df = impl.spark.read_table(spark, table_path)                                # whole table
    df = impl.spark.read_table(spark, table_path, columns=["id", "v"], filter="dt = 'a' and id > 5")
    df = impl.spark.read_table(spark, table_path, options={"snapshot-id": "3"})   # time travel

The Python data source API cannot hand Spark a native scan, so this is a function returning a
DataFrame. The driver plans the read with impl's scan (snapshot and time travel as the
``paimon_py`` source has them; partitions, buckets and file statistics pruned with ``filter``)
and splits the plan:

- files that need no merge are read by ``spark.read.parquet``: every file of an append table;
  the level >= 1 files of a deletion-vector table, minus the positions their vectors delete
  (a bitmap filter on Spark's ``_metadata.file_name`` / ``_metadata.row_index`` in the scan's
  own tasks, :mod:`impl.spark.dv_filter`), minus retract rows when a file may hold any; and a
  primary-key bucket whose files are one sorted run without retract rows (Paimon's
  ``rawConvertible``: every file at one level >= 1 with a known delete-row count of 0; only for
  the ``deduplicate`` and ``first-row`` merge engines, whose merge of a single row is the row);
- everything else (other formats, buckets that need a merge, files whose older schema Spark
  would read differently from impl, tables on object stores when Spark has no ``s3a``, data-evolution tables) is read by
  the ``paimon_py`` source restricted to exactly those files, at the same snapshot.

The two are unioned. Files written under an older schema are read by the names that schema had
(matched by field id) and renamed; columns added since are null; types widened since are cast
where Spark's cast equals impl's (:func:`impl.schema.evolution.is_safe_cast` widenings of types
Spark reads natively). ``filter`` (a SQL string or a Column) is applied to the DataFrame, so
Spark pushes it into the Parquet scan, and ``columns`` select before anything is read.

The DataFrame is a union of one branch per partition (:func:`partition_branches`), each with
its partition columns as literal columns (``F.lit(value).cast(type)``): the native groups and the
slow splits of that partition. Spark's optimizer pushes any filter a query applies to the
DataFrame later through the union into every branch, folds ``'d0' = 'd3'`` to false and drops
that branch, in every plan shape (``.where``, SQL over a view, self-joins, unions, scalar
subqueries), because the pruning is in the plan rather than in a scan callback (plan sharing
between scans, see :mod:`impl.spark.claims`, cannot drop rows another use needs: each use reads
every branch it did not exclude). Only filters known before the query runs prune (not an
``IN (SELECT ...)`` or a join key); one branch instead when the table is unpartitioned, has more
than ``max_branches`` partitions (Spark plans a union of thousands of branches slowly; see
``benchmarks/spark_pruning.py``), or no partition column of a literal type
(:func:`literal_partition_type`: no timestamps or floats, whose literal spelling could round).

The DataFrame reads the snapshot planned at the call (re-running it reads the same files).
Object-store tables (``s3://``) take the same split when the session has Hadoop's ``s3a`` file
system (built with :func:`impl.spark.s3a_conf`, see :mod:`impl.spark.s3a`), and otherwise the
slow path whole (still one branch per partition).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

from impl.data.types import DataType
from impl.datafile.meta import DataFileMeta
from impl.jobs.tables import TableRef
from impl.mergetree.deletion_vectors import read_deletion_vectors
from impl.options.values import MergeEngine
from impl.read.scan import DataSplit
from impl.schema.evolution import is_safe_cast
from impl.schema.records import TableSchema
from impl.spark import dv_filter
from impl.spark.catalyst_filters import spark_filter_predicate
from impl.spark.errors import SparkConnectorError
from impl.spark.only_files import decode_only_files, encode_only_files
from impl.spark.options import FORMAT_NAME, ONLY_FILES_KEY, parse_options
from impl.spark.s3a import LOCAL_STORE, SparkStore, s3a_reason, spark_store
from impl.spark.source import register
from impl.spark.types import spark_schema, spark_type

log = logging.getLogger(__name__)

VALUE_KIND = "_VALUE_KIND"
# -U and -D (Paimon's RowKind bytes): rows a merge-free read of primary-key files must drop
_RETRACT_KINDS = (1, 3)
_NATIVE_ROOTS = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL",
                           "CHAR", "VARCHAR", "BINARY", "VARBINARY", "DATE", "TIMESTAMP", "TIMESTAMP_LTZ",
                           "ARRAY", "MAP", "ROW"})
# Spark's file sources glob a path holding any of these: such files go to the slow path
_GLOB_CHARS = frozenset("*?[]{}\\")
# Spark's micro-second timestamps hold TIMESTAMP(p) exactly up to p = 6
_MAX_NATIVE_TIMESTAMP_PRECISION = 6
# partition column types that read_table turns into literal columns (see literal_partition_type)
_LITERAL_ROOTS = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "CHAR", "VARCHAR", "DATE", "DECIMAL"})
# the most partitions read_table gives a branch each: building a union costs the driver ~0.1 s a
# branch at 10 and ~0.2 s a branch at 100 (benchmarks/spark_pruning.py part 1b, load 16)
MAX_PARTITION_BRANCHES = 32
FILE_NAME_COLUMN = "__paimon_file_name"
ROW_INDEX_COLUMN = "__paimon_row_index"


# ---------------------------------------------------------------------------- planning (pure)

@dataclass(frozen=True)
class FileGroup:
    """Files read together by one ``spark.read.parquet``: one schema id, one file kind."""

    schema_id: int
    drop_retracts: bool  # some file may hold -U / -D rows
    paths: tuple[str, ...]
    deletions: Mapping[str, np.ndarray] = field(default_factory=dict)  # file name -> deleted positions


@dataclass(frozen=True)
class SplitPlan:
    """What each reader reads: native file groups and the splits left to the Python reader."""

    snapshot_id: int | None
    native: tuple[FileGroup, ...]
    slow: tuple[DataSplit, ...]

    @property
    def native_files(self) -> int:
        return sum(len(g.paths) for g in self.native)


def natively_readable(t: DataType) -> bool:
    """Spark's Parquet reader reads a column of this type exactly as impl does."""
    if t.root not in _NATIVE_ROOTS:
        return False
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) > _MAX_NATIVE_TIMESTAMP_PRECISION:
        return False
    if t.root in ("ARRAY", "MAP"):
        return all(natively_readable(c) for c in t.children)
    if t.root == "ROW":
        return all(natively_readable(c.type) for c in t.children)
    return True


def column_mapping(file_schema: TableSchema, table_schema: TableSchema) -> list[tuple[str, str | None]] | None:
    """(current name, name in files of ``file_schema`` or None when they lack it) per current
    column, or None when Spark would read some column differently from impl (a type change that is
    no safe widening, a nested type that changed, a type Spark does not read natively)."""
    by_id = {f.id: f for f in file_schema.fields}
    out: list[tuple[str, str | None]] = []
    for f in table_schema.fields:
        if not natively_readable(f.type):
            return None
        old = by_id.get(f.id)
        if old is None:
            out.append((f.name, None))
            continue
        if not natively_readable(old.type) or not is_safe_cast(old.type, f.type):
            return None
        if old.type.root in ("ARRAY", "MAP", "ROW") and old.type.copy(True) != f.type.copy(True):
            return None
        out.append((f.name, old.name))
    return out


def _no_merge_bucket(files: Sequence[DataFileMeta], merge_engine: MergeEngine) -> bool:
    """Paimon's ``rawConvertible`` for a primary-key bucket without deletion vectors: every file at
    one level >= 1 (one sorted run: levels >= 1 do not overlap) with no retract row (a known delete
    count of 0; files of old writers without the count are merged), and a merge engine whose merge
    of one row is that row."""
    if merge_engine not in (MergeEngine.DEDUPLICATE, MergeEngine.FIRST_ROW):
        return False
    levels = {f.level for f in files}
    return len(levels) == 1 and min(levels) >= 1 and all(f.delete_row_count == 0 for f in files)


def plan_native(table, splits: Sequence[DataSplit], snapshot_id: int | None,
                deletion_vectors=None, *, object_store: bool = False) -> SplitPlan:
    """Cut ``splits`` (a DATA plan of ``table``) into native file groups and slow splits.

    ``deletion_vectors(split)`` returns a split's vectors by file name (default: read from its
    index files). ``object_store``: the table is on S3 (its paths are ``bucket/key``, which
    Spark reads through s3a); otherwise only absolute local paths are native."""
    if deletion_vectors is None:
        def deletion_vectors(s: DataSplit):
            return read_deletion_vectors(table.file_io, table.core.paths, s.index_files) if s.index_files else {}

    if table.options.data_evolution:
        return SplitPlan(snapshot_id, (), tuple(splits))
    pk = table.is_primary_key_table
    dv_table = pk and table.options.deletion_vectors
    mappings: dict[int, bool] = {}

    def mappable(schema_id: int) -> bool:
        if schema_id not in mappings:
            mappings[schema_id] = column_mapping(table.schema_manager.schema(schema_id), table.schema) is not None
        return mappings[schema_id]

    def native_file(s: DataSplit, f: DataFileMeta) -> bool:
        path = table.core.paths.data_file_path(s.partition_path, s.bucket, f.file_name, f.external_path)
        # an external path on another file system (a URI) goes to the slow path
        rooted = "://" not in path if object_store else path.startswith("/")
        return (f.file_name.endswith(".parquet") and not (_GLOB_CHARS & set(path)) and rooted
                and mappable(f.schema_id))

    # (schema id, may hold retracts, has a vector): files with vectors are joined, the others not
    groups: dict[tuple[int, bool, bool], list[tuple[str, DataFileMeta, np.ndarray | None]]] = {}
    slow: list[DataSplit] = []
    for s in splits:
        if s.fallback:  # the scan.fallback-branch's files: that branch's schemas, read by its view
            slow.append(s)
            continue
        if pk and not dv_table:
            if s.bucket < 0 or not _no_merge_bucket(s.files, table.options.merge_engine) \
                    or not all(native_file(s, f) for f in s.files):
                slow.append(s)
                continue
            native_files, slow_files = list(s.files), []
        else:
            native_files = [f for f in s.files if native_file(s, f)]
            slow_files = [f for f in s.files if not native_file(s, f)]
        if slow_files:
            slow.append(replace(s, files=tuple(slow_files)))
        vectors = deletion_vectors(s) if s.index_files else {}
        for f in native_files:
            path = table.core.paths.data_file_path(s.partition_path, s.bucket, f.file_name, f.external_path)
            retracts = pk and (f.delete_row_count is None or f.delete_row_count > 0)
            deleted = vectors.get(f.file_name)
            has_vector = deleted is not None and len(deleted) > 0
            groups.setdefault((f.schema_id, retracts, has_vector), []).append((path, f, deleted))
    native = []
    for (schema_id, retracts, _), members in sorted(groups.items(), key=lambda kv: kv[0]):
        deletions = {f.file_name: d for _, f, d in members if d is not None and len(d)}
        names = [f.file_name for _, f, _ in members]
        if deletions and len(set(names)) != len(names):
            # the vectors are joined by file name: names must be unique among the group's files
            slow.extend(_splits_of(splits, {f.file_name for _, f, _ in members}))
            continue
        native.append(FileGroup(schema_id, retracts, tuple(p for p, _, _ in members), deletions))
    return SplitPlan(snapshot_id, tuple(native), tuple(slow))


def _splits_of(splits: Sequence[DataSplit], names: set[str]) -> list[DataSplit]:
    out = []
    for s in splits:
        files = tuple(f for f in s.files if f.file_name in names)
        if files:
            out.append(replace(s, files=files))
    return out


# ---------------------------------------------------------------------------- Spark

def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def group_frame(spark, table, group: FileGroup, *, positions: bool = False, store: SparkStore = LOCAL_STORE):
    """One native file group as a DataFrame of the table's current columns; with ``positions``,
    then each row's file name and position in its file (columns :data:`FILE_NAME_COLUMN`,
    :data:`ROW_INDEX_COLUMN`). ``store``: how Spark reaches the files (local disk or S3A)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as st

    file_schema = table.schema_manager.schema(group.schema_id)
    mapping = column_mapping(file_schema, table.schema)
    assert mapping is not None  # plan_native sent unmappable schemas to the slow path
    old_types = {f.name: f.type for f in file_schema.fields}
    read_fields = [st.StructField(old, spark_type(old_types[old]), True) for _, old in mapping if old is not None]
    if group.drop_retracts:
        read_fields.append(st.StructField(VALUE_KIND, st.ByteType(), True))
    df = spark.read.schema(st.StructType(read_fields)).options(**store.hadoop) \
        .parquet(*(store.uri(p) for p in group.paths))
    tagged = bool(group.deletions) or positions
    if tagged:
        df = df.select("*", F.col("_metadata.file_name").alias(FILE_NAME_COLUMN),
                       F.col("_metadata.row_index").alias(ROW_INDEX_COLUMN))
    if group.deletions:
        df = _drop_deleted(spark, df, group.deletions)
    if group.drop_retracts:
        # null: the row was written before row kinds were stored, an insert
        kind = F.col(VALUE_KIND)
        df = df.filter(kind.isNull() | ~kind.isin(*_RETRACT_KINDS))
    current = {f.name: f.type for f in table.schema.fields}
    cols = []
    for name, old in mapping:
        target = spark_type(current[name])
        if old is None:
            cols.append(F.lit(None).cast(target).alias(name))
        elif spark_type(old_types[old]) != target:
            cols.append(F.col(_quoted(old)).cast(target).alias(name))
        else:
            cols.append(F.col(_quoted(old)).alias(name))
    if positions:
        cols += [F.col(FILE_NAME_COLUMN), F.col(ROW_INDEX_COLUMN)]
    return df.select(*cols)


def _drop_deleted(spark, df, deletions: Mapping[str, np.ndarray]):
    """``df`` (one file group, its rows tagged with ``_metadata.file_name`` and
    ``_metadata.row_index``) without the rows the vectors delete: a bitmap filter in the scan's
    own tasks (:mod:`impl.spark.dv_filter`, measured faster than a join); without a JVM to build
    its literal (Spark Connect), a broadcast left-anti join on the two. File names, not paths: no URI
    spelling to match, and ``plan_native`` made them unique within the group. (A key of one long
    per row through a map from file name to number measured slower: Spark looks map keys up
    one by one.)"""
    from pyspark.sql import functions as F

    kept = dv_filter.drop_deleted(spark, df, deletions, file_name_column=FILE_NAME_COLUMN, row_index_column=ROW_INDEX_COLUMN)
    if kept is not None:
        return kept
    names = sorted(deletions)
    counts = np.fromiter((len(deletions[n]) for n in names), dtype=np.int64, count=len(names))
    deleted = pa.table({
        FILE_NAME_COLUMN: pa.array(names, pa.string()).take(pa.array(np.repeat(np.arange(len(names)), counts))),
        ROW_INDEX_COLUMN: pa.array(np.concatenate([np.asarray(deletions[n], dtype=np.int64) for n in names])),
    })
    vectors = F.broadcast(arrow_frame(spark, deleted))
    return df.join(vectors, on=[FILE_NAME_COLUMN, ROW_INDEX_COLUMN], how="left_anti")


def arrow_frame(spark, table: pa.Table):
    """``table`` as a DataFrame through Arrow (without Arrow enabled, Spark converts row by row in
    Python: seconds for a few ten thousand rows)."""
    key = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(key, "false")
    if before.lower() == "true":
        return spark.createDataFrame(table)
    spark.conf.set(key, "true")
    try:
        return spark.createDataFrame(table)
    finally:
        spark.conf.set(key, before)


def literal_partition_type(t: DataType) -> bool:
    """A partition column of this type becomes a literal column in :func:`read_table`'s branches:
    its value has one exact Spark spelling (no time zone, no float rounding)."""
    return t.root in _LITERAL_ROOTS


@dataclass(frozen=True)
class PartitionBranch:
    """One branch of :func:`read_table`'s union: a partition's files and its literal values.

    ``values`` maps each literal partition column to its value (None: null, Paimon's
    ``partition.default-name`` directory); an empty mapping is the one branch of a read that is
    not cut by partition."""

    values: Mapping[str, Any]
    plan: SplitPlan


def partition_branches(table, splits: Sequence[DataSplit], snapshot_id: int | None, *,
                       max_branches: int = MAX_PARTITION_BRANCHES, object_store: bool = False,
                       native: bool = True) -> list[PartitionBranch]:
    """``splits`` cut into one :class:`PartitionBranch` per partition, each split into native
    groups and slow splits (:func:`plan_native`; ``native=False``: all slow).

    One branch (no literal columns) when the table is unpartitioned, no partition column has a
    literal type (:func:`literal_partition_type`), or there are more than ``max_branches``
    partitions (a union of thousands of branches takes Spark seconds to plan; see
    ``benchmarks/spark_pruning.py``)."""
    cache = table.core.partition_cache
    literal = [(i, n) for i, (n, t) in enumerate(zip(cache.names, cache.types, strict=True))
               if literal_partition_type(t)]

    def cut(part: Sequence[DataSplit]) -> SplitPlan:
        if not native:
            return SplitPlan(snapshot_id, (), tuple(part))
        return plan_native(table, part, snapshot_id, object_store=object_store)

    by_partition: dict[tuple, list[DataSplit]] = {}
    for s in splits:
        values = cache.values(s.partition)
        by_partition.setdefault(tuple(values[i] for i, _ in literal), []).append(s)
    if not literal or len(by_partition) > max_branches:
        return [PartitionBranch({}, cut(splits))]
    return [PartitionBranch({n: v for (_, n), v in zip(literal, key, strict=True)}, cut(part))
            for key, part in by_partition.items()]


def _literal(value: Any, t: DataType):
    """``value`` of a partition column of type ``t`` as a Spark literal column of its Spark type."""
    from pyspark.sql import functions as F

    if value is None or t.root in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "CHAR", "VARCHAR"):
        return F.lit(value).cast(spark_type(t))
    return F.lit(str(value)).cast(spark_type(t))  # DATE (ISO) and DECIMAL: a string cast is exact


def read_table(spark, table_path: str, *, options: Mapping[str, Any] | None = None,
               columns: Sequence[str] | None = None, filter=None,
               max_branches: int = MAX_PARTITION_BRANCHES):
    """A DataFrame of the table at ``table_path``, read by Spark's Parquet reader wherever no merge
    is needed, pruned by the partition filters of every query over it (see the module docstring).

    ``options``: the ``paimon_py`` read options (``snapshot-id``, ``timestamp-millis``,
    ``scan.tag-name``, storage options, ...); ``columns``: the columns to return (default all);
    ``filter``: a SQL string or a Column over the table's columns, evaluated by Spark and used by
    impl to prune partitions, buckets and files (translated from Spark's own parse of it: see
    :mod:`impl.spark.catalyst_filters`); ``max_branches``: the most partitions that get a branch
    of their own (above it, one branch: correct, pruned only by ``filter`` and Parquet statistics).

    >>> df = read_table(spark, path)                          # plans the latest snapshot now
    >>> df.createOrReplaceTempView("events")
    >>> spark.sql("SELECT count(*) FROM events WHERE dt = '2024-01-02'").collect()  # one partition's files
    """
    opts = {str(k): str(v) for k, v in (options or {}).items() if v is not None}
    parsed = parse_options({**opts, "path": table_path})
    if "$" in table_path.rstrip("/").rsplit("/", 1)[-1] or parsed.connector.get("read.changelog") \
            or "incremental-between" in parsed.table or ONLY_FILES_KEY in parsed.connector:
        raise SparkConnectorError(f"read_table reads a table's snapshot; use spark.read.format({FORMAT_NAME!r}) "
                                  f"for system tables, read.changelog and incremental reads")
    ref = TableRef.from_path(parsed.path, dynamic_options=parsed.table, storage_options=parsed.storage)
    table = ref.table()
    schema = spark_schema(table.schema)
    if columns is not None:
        unknown = [c for c in columns if c not in schema.fieldNames()]
        if unknown:
            raise SparkConnectorError(f"read_table: table {table.identifier} has no column(s) {unknown}; "
                                      f"its columns are {schema.fieldNames()}")
    predicate = None if filter is None else spark_filter_predicate(spark, table.schema, filter)
    plan = table.new_read_builder().with_filter(predicate).new_scan().plan()
    native = True
    if ref.on_object_store and (why := s3a_reason(spark)) is not None:
        log.info("read_table of %s reads through paimon_py: %s", table.identifier, why)
        native = False
    branches = partition_branches(table, plan.splits(), plan.snapshot_id, max_branches=max_branches,
                                  object_store=ref.on_object_store, native=native)
    store = spark_store(ref)
    types = {f.name: f.type for f in table.schema.fields}
    frames: list[Any] = []
    for branch in branches:
        parts = [group_frame(spark, table, g, store=store) for g in branch.plan.native]
        if branch.plan.slow:
            parts.append(_slow_frame(spark, ref.table_path, opts, parsed.table, branch.plan))
        # the partition columns as literals: Spark folds a filter on them to true or false in each
        # branch and drops the false ones, in every plan a query makes of the union (the select
        # also puts every part's columns in one order for the union)
        cols = [_literal(branch.values[n], types[n]).alias(n) if n in branch.values else _col(n)
                for n in schema.fieldNames()]
        frames.extend(p.select(*cols) for p in parts)
    df = _union_all(frames) if frames else spark.createDataFrame([], schema)
    if filter is not None:
        df = df.filter(filter)
    if columns is not None:
        df = df.select(*[_quoted(c) for c in columns])
    return df


def _col(name: str):
    from pyspark.sql import functions as F

    return F.col(_quoted(name))


def scanned_files(df, *, native: bool = True) -> set[str]:
    """Names of the data files the query of ``df`` reads, from Spark's optimized plan (and its
    subqueries'): the Parquet relations' input files and the files its ``paimon_py`` relations
    are restricted to. Branches of :func:`read_table` that Spark removed are in neither; a
    ``paimon_py`` relation that reads a whole table raises (its files are not in the plan).
    ``native=False``: only the files the ``paimon_py`` relations read (the ones needing a merge).

    >>> len(scanned_files(read_table(spark, path).where("dt = 'a'")))   # files of partition a
    """

    def seq(s) -> list:
        return [s.apply(i) for i in range(s.size())]

    top = df._jdf.queryExecution().optimizedPlan()
    names: set[str] = set()
    for plan in [top, *seq(top.subqueriesAll())]:
        for leaf in seq(plan.collectLeaves()):
            kind = leaf.getClass().getSimpleName()
            if kind == "LogicalRelation":
                if native:
                    names.update(p.rstrip("/").rsplit("/", 1)[-1]
                                 for p in leaf.relation().location().inputFiles())
                continue
            if kind == "DataSourceV2ScanRelation":
                leaf = leaf.relation()
            elif kind != "DataSourceV2Relation":
                continue
            only = leaf.options().get(ONLY_FILES_KEY)
            if only is None:
                raise SparkConnectorError(f"scanned_files: a {FORMAT_NAME} relation reads a whole table "
                                          f"(its files are planned when the query runs)")
            names.update(n for files in decode_only_files(only).values() for n in files)
    return names


def _slow_frame(spark, table_path: str, opts: Mapping[str, str], table_opts: Mapping[str, str], plan: SplitPlan):
    """The ``paimon_py`` source restricted to ``plan``'s slow splits, at its snapshot."""
    register(spark)
    slow_opts = dict(opts)
    # (no snapshot: an empty branch whose rows all come from its scan.fallback-branch)
    if plan.snapshot_id is not None and not any(
            k in table_opts for k in ("scan.snapshot-id", "scan.timestamp-millis", "scan.tag-name", "scan.version")):
        slow_opts["snapshot-id"] = str(plan.snapshot_id)  # both halves read one snapshot
    slow_opts[ONLY_FILES_KEY] = encode_only_files(plan.slow)
    return spark.read.format(FORMAT_NAME).options(**slow_opts).load(table_path)


def _union_all(frames: list):
    """The union of ``frames`` (same columns, same order), built as a balanced tree: each
    DataFrame Spark builds analyses its whole plan, so a left-deep chain of n unions costs n^2."""
    while len(frames) > 1:
        frames = [frames[i].union(frames[i + 1]) if i + 1 < len(frames) else frames[i]
                  for i in range(0, len(frames), 2)]
    return frames[0]


__all__ = ["read_table", "plan_native", "group_frame", "arrow_frame", "FILE_NAME_COLUMN", "ROW_INDEX_COLUMN", "SplitPlan", "PartitionBranch", "partition_branches", "scanned_files", "literal_partition_type", "MAX_PARTITION_BRANCHES", "FileGroup", "column_mapping", "natively_readable"]

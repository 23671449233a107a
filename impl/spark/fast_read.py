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

The DataFrame reads the snapshot planned at the call (re-running it reads the same files), and
prunes only with ``filter``: plan sharing between scans (see :mod:`impl.spark.claims`) cannot
drop rows another use needs. Object-store tables (``s3://``) take the same split when the session
has Hadoop's ``s3a`` file system (built with :func:`impl.spark.s3a_conf`, see
:mod:`impl.spark.s3a`), and otherwise the slow path whole.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from functools import reduce
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
from impl.spark.only_files import encode_only_files
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


def read_table(spark, table_path: str, *, options: Mapping[str, Any] | None = None,
               columns: Sequence[str] | None = None, filter=None):
    """A DataFrame of the table at ``table_path``, read by Spark's Parquet reader wherever no merge
    is needed (see the module docstring).

    ``options``: the ``paimon_py`` read options (``snapshot-id``, ``timestamp-millis``,
    ``scan.tag-name``, storage options, ...); ``columns``: the columns to return (default all);
    ``filter``: a SQL string or a Column over the table's columns, evaluated by Spark and used by
    impl to prune partitions, buckets and files (translated from Spark's own parse of it: see
    :mod:`impl.spark.catalyst_filters`).
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
    splits = plan.splits()
    if ref.on_object_store and (why := s3a_reason(spark)) is not None:
        log.info("read_table of %s reads through paimon_py: %s", table.identifier, why)
        split_plan = SplitPlan(plan.snapshot_id, (), tuple(splits))
    else:
        split_plan = plan_native(table, splits, plan.snapshot_id, object_store=ref.on_object_store)
    store = spark_store(ref)
    frames = [group_frame(spark, table, g, store=store) for g in split_plan.native]
    if split_plan.slow:
        register(spark)
        slow_opts = dict(opts)
        # (no snapshot: an empty branch whose rows all come from its scan.fallback-branch)
        if split_plan.snapshot_id is not None and not any(
                k in parsed.table for k in ("scan.snapshot-id", "scan.timestamp-millis", "scan.tag-name",
                                            "scan.version")):
            slow_opts["snapshot-id"] = str(split_plan.snapshot_id)  # both halves read one snapshot
        slow_opts[ONLY_FILES_KEY] = encode_only_files(split_plan.slow)
        frames.append(spark.read.format(FORMAT_NAME).options(**slow_opts).load(ref.table_path))
    if not frames:
        df = spark.createDataFrame([], schema)
    else:
        df = reduce(lambda a, b: a.unionByName(b), frames)
    if filter is not None:
        df = df.filter(filter)
    if columns is not None:
        df = df.select(*[_quoted(c) for c in columns])
    return df


__all__ = ["read_table", "plan_native", "group_frame", "arrow_frame", "FILE_NAME_COLUMN", "ROW_INDEX_COLUMN", "SplitPlan", "FileGroup", "column_mapping", "natively_readable"]

"""Row-level changes from Spark: DELETE, UPDATE and MERGE INTO, each one commit.

>>> impl.spark.delete(spark, path, "dt = '2024-03-01' AND id < 10")
>>> impl.spark.update(spark, path, "id = 7", set={"name": "upper(name)", "score": "score + 1"})
>>> impl.spark.merge_into(spark, path, changes_df, on="t.id = s.id",
...                       when_matched_delete="s.op = 'D'", when_matched_update="*",
...                       when_not_matched_insert="*")
RowLevelResult(db.t, snapshots=[4], deleted=1, updated=2, inserted=1)

Conditions and expressions are Spark SQL. In ``merge_into`` the target is aliased ``t`` and the
source ``s`` (``target_alias`` / ``source_alias``), as in delta-spark's
``DeltaTable.alias("t").merge(source.alias("s"), "t.id = s.id")``. A matched target row is
deleted when ``when_matched_delete`` holds (``True``: always), else updated when
``when_matched_update`` is given (a mapping column -> expression, or ``"*"``: every column from
the source column of the same name); a source row matching no target row is inserted when
``when_not_matched_insert`` is given (a mapping, columns left out are null, or ``"*"``). A target
row matched by several source rows is refused (:class:`MergeCardinalityError`, as Delta and
Iceberg refuse it) before anything is written.

How the change is written (as Paimon's Spark commands write it):

- primary-key tables (merge engine ``deduplicate``): the changed rows go through
  :func:`impl.spark.write_dataframe` with a row-kind column: ``-D`` for a deleted row, ``+U``
  for an updated one, ``+I`` for an inserted one. Key and partition columns cannot be assigned.
  As in Paimon, an update written over a key another commit changed meanwhile wins (upserts
  are not conflict-checked); a delete is never lost (its ``-D`` row is newer).
- append tables: the rows to delete are found in Spark tasks that read the snapshot's data
  files with impl's reader, each row tagged with its file and position (rows the table's
  vectors already delete are left out); the driver hands the positions to the table's DELETE
  operation (:func:`impl.write.delete.deletion_messages`, the one Python's
  ``new_update().delete_by_predicate`` uses): with ``deletion-vectors.enabled`` they are folded
  into each bucket's deletion vectors, written as a new index file replacing the bucket's old
  ones; without, each touched file is rewritten without them (copy-on-write). An UPDATE deletes
  the old rows that way and appends the new ones, in the same commit. Another commit that
  replaced those vectors or compacted, overwrote or deleted those files meanwhile makes the
  commit fail (:class:`impl.errors.IndexFileConflictError` / :class:`impl.errors.FileNotLiveError`)
  with nothing written: run the change again.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from impl.commit.messages import CommitMessage
from impl.datafile.meta import DataFileMeta
from impl.errors import CommitOutcomeUnknownError, UnsupportedTableFeatureError
from impl.jobs.tables import TableRef, split_storage_options
from impl.jobs.writer import commit_write, unsupported_write_reason
from impl.mergetree.deletion_vectors import keep_mask, read_deletion_vectors
from impl.options import core_options as co
from impl.options.values import MergeEngine
from impl.read.scan import SnapshotReader
from impl.read.table_read import read_data_file
from impl.schema.evolution import column_sources
from impl.spark.errors import MergeCardinalityError, RowLevelChangeError
from impl.spark.routing import write_dataframe
from impl.spark.source import FORMAT_NAME, activate
from impl.spark.types import conform_to_spark, spark_arrow_schema, spark_schema
from impl.store.core import bucket_index_files
from impl.write.delete import Deletions, FileDeletions, check_deletable, deletion_messages

log = logging.getLogger(__name__)

FILE_COLUMN = "__paimon_file"
POS_COLUMN = "__paimon_pos"
KIND_COLUMN = "__paimon_row_kind"
MATCHED_COLUMN = "__paimon_matched"
_DELETE, _UPDATE, _INSERT = "-D", "+U", "+I"


@dataclass(frozen=True)
class RowLevelResult:
    """What a row-level change did: the snapshots it committed (none when no row changed) and
    the rows it deleted, updated and inserted."""

    table: str
    snapshot_ids: tuple[int, ...]
    deleted_rows: int
    updated_rows: int
    inserted_rows: int

    def __repr__(self) -> str:
        return (f"RowLevelResult({self.table}, snapshots={list(self.snapshot_ids)}, deleted={self.deleted_rows}, "
                f"updated={self.updated_rows}, inserted={self.inserted_rows})")


@dataclass
class _Target:
    """The table a change applies to, read at one snapshot: ``frame`` holds its rows (append
    tables: each with its data file and position)."""

    op: str
    ref: TableRef
    table: Any
    snapshot_id: int | None
    frame: Any
    storage: dict[str, str]
    files: dict[str, tuple[bytes, int, int, DataFileMeta]]  # append tables: name -> (partition, bucket, total, file)

    @property
    def identifier(self) -> str:
        return self.ref.identifier

    @property
    def columns(self) -> list[str]:
        return list(self.table.schema.field_names)

    @property
    def is_pk(self) -> bool:
        return bool(self.table.is_primary_key_table)


# ====================================================================== public API


def delete(spark, table_path: str, condition: str | None = None, *, options: Mapping[str, str] | None = None,
           fs_factory=None) -> RowLevelResult:
    """``DELETE FROM <table> WHERE <condition>`` (a Spark SQL condition over the table's columns;
    None deletes every row), in one commit."""
    target = _open(spark, "DELETE", table_path, options, fs_factory)
    rows = _where(target, target.frame, condition)
    return _apply(target, rows.withColumn(KIND_COLUMN, _lit(_DELETE)), kind=_DELETE)


def update(spark, table_path: str, condition: str | None = None, *, set: Mapping[str, str],  # noqa: A002
           options: Mapping[str, str] | None = None, fs_factory=None) -> RowLevelResult:
    """``UPDATE <table> SET col = expr, ... WHERE <condition>`` (Spark SQL expressions over the
    table's columns, cast to the column's type), in one commit."""
    from pyspark.sql import functions as F

    target = _open(spark, "UPDATE", table_path, options, fs_factory)
    assignments = _assignments(target, set, "set")
    if not assignments:
        raise RowLevelChangeError(f"UPDATE of {target.identifier}: no column to set")
    rows = _where(target, target.frame, condition)
    types = {f.name: f.dataType for f in spark_schema(target.table.schema).fields}
    cols = [_expr(target, "set", assignments[c]).cast(types[c]).alias(c) if c in assignments else F.col(c)
            for c in target.columns]
    extra = [F.col(FILE_COLUMN), F.col(POS_COLUMN)] if not target.is_pk else []
    changed = _analyzed(target, "set", lambda: rows.select(*cols, *extra))
    return _apply(target, changed.withColumn(KIND_COLUMN, _lit(_UPDATE)), kind=_UPDATE)


def merge_into(spark, target_path: str, source, on: str, *,
               when_matched_update: Mapping[str, str] | str | None = None,
               when_matched_delete: bool | str | None = None,
               when_not_matched_insert: Mapping[str, str] | str | None = None,
               target_alias: str = "t", source_alias: str = "s",
               options: Mapping[str, str] | None = None, fs_factory=None) -> RowLevelResult:
    """``MERGE INTO <target> t USING <source> s ON <on>`` with the clauses given (see the module
    docstring), in one commit. ``source``: a DataFrame of the same Spark session."""
    from pyspark.sql import functions as F

    if when_matched_update is None and not when_matched_delete and when_not_matched_insert is None:
        raise RowLevelChangeError("MERGE INTO: give at least one of when_matched_update, when_matched_delete, "
                                  "when_not_matched_insert")
    target = _open(spark, "MERGE INTO", target_path, options, fs_factory)
    t, s = target_alias, source_alias
    if when_matched_update == "*":
        keys = set(_fixed_columns(target))
        when_matched_update = {c: f"{s}.`{c}`" for c in target.columns if c not in keys}
        _check_source_has(target, source, when_matched_update, "when_matched_update='*'")
    if when_not_matched_insert == "*":
        when_not_matched_insert = {c: f"{s}.`{c}`" for c in target.columns}
        _check_source_has(target, source, when_not_matched_insert, "when_not_matched_insert='*'")
    upd = _assignments(target, when_matched_update or {}, "when_matched_update")
    ins = _assignments(target, when_not_matched_insert or {}, "when_not_matched_insert", insert=True)
    types = {f.name: f.dataType for f in spark_schema(target.table.schema).fields}

    tframe = target.frame.withColumn(MATCHED_COLUMN, F.lit(True)).alias(t)
    joined = _analyzed(target, "on", lambda: source.alias(s).join(tframe, on=F.expr(on), how="left"))
    matched = F.col(f"{t}.{MATCHED_COLUMN}").isNotNull()
    if when_matched_delete is True:
        deleted = matched
    elif when_matched_delete:
        deleted = matched & _expr(target, "when_matched_delete", str(when_matched_delete))
    else:
        deleted = F.lit(False)
    kind = F.when(deleted, _lit(_DELETE))
    if when_matched_update is not None:
        kind = kind.when(matched, _lit(_UPDATE))
    if when_not_matched_insert is not None:
        kind = kind.when(~matched, _lit(_INSERT))
    null = F.lit(None)
    cols = []
    for c in target.columns:
        old = F.col(f"{t}.`{c}`")
        new = _expr(target, "when_matched_update", upd[c]) if c in upd else old
        fresh = _expr(target, "when_not_matched_insert", ins[c]) if c in ins else null
        cols.append(F.when(kind == _INSERT, fresh.cast(types[c]))
                    .when(kind == _UPDATE, new.cast(types[c])).otherwise(old).alias(c))
    extra = [] if target.is_pk else [F.col(f"{t}.{FILE_COLUMN}").alias(FILE_COLUMN),
                                     F.col(f"{t}.{POS_COLUMN}").alias(POS_COLUMN)]
    identity = ([F.col(f"{t}.`{k}`").alias(k) for k in target.table.primary_keys]
                if target.is_pk else extra)
    staged = _analyzed(target, "clauses", lambda: joined.select(
        kind.alias(KIND_COLUMN), matched.alias(MATCHED_COLUMN), *cols,
        *[i.alias(f"__id{n}") for n, i in enumerate(identity)], *([] if target.is_pk else extra)))
    staged = staged.filter(F.col(KIND_COLUMN).isNotNull() | F.col(MATCHED_COLUMN)).persist()
    try:
        if when_matched_update is not None or when_matched_delete:
            _check_cardinality(target, staged, [f"__id{n}" for n in range(len(identity))])
        changes = staged.filter(F.col(KIND_COLUMN).isNotNull()).drop(
            MATCHED_COLUMN, *[f"__id{n}" for n in range(len(identity))])
        counts = {r[0]: int(r[1]) for r in changes.groupBy(KIND_COLUMN).count().collect()}
        return _apply(target, changes, counts=counts)
    finally:
        staged.unpersist()


# ====================================================================== the target


def _open(spark, op: str, table_path: str, options, fs_factory) -> _Target:
    activate(spark)
    storage, dynamic = split_storage_options(options)
    if dynamic:
        raise RowLevelChangeError(f"{op}: {sorted(dynamic)} are not storage options (fs.*, s3.*, s3a.*)")
    ref = TableRef.from_path(table_path, fs_factory=fs_factory, storage_options=storage)
    table = ref.table()  # TableNotExistError naming the table
    core = table.core
    o = table.options
    if table.is_primary_key_table:
        if o.merge_engine is not MergeEngine.DEDUPLICATE:
            raise UnsupportedTableFeatureError(
                f"{op} of {ref.identifier}: merge-engine {o.merge_engine.value!r} is not supported for row-level "
                f"changes (deduplicate only)")
        if o.parsed[co.IGNORE_DELETE]:
            # the -D rows of a DELETE would be dropped: the change would silently do nothing
            raise UnsupportedTableFeatureError(f"{op} of {ref.identifier}: the table has 'ignore-delete' = true")
    else:
        check_deletable(core, op)
    reason = unsupported_write_reason(table, "Spark")
    if reason:
        raise UnsupportedTableFeatureError(f"{op}: {reason}")
    snapshot = core.snapshot_manager.latest_snapshot()
    files: dict[str, tuple[bytes, int, int, DataFileMeta]] = {}
    if table.is_primary_key_table:
        if snapshot is None:
            frame = spark.createDataFrame([], spark_schema(table.schema))
        else:
            frame = (spark.read.format(FORMAT_NAME).options(**storage)
                     .option("scan.snapshot-id", str(snapshot.id)).load(ref.table_path))
            if snapshot.schema_id != table.schema.id:
                # read pinned, the snapshot comes in its own schema (time travel): the change
                # is written under the table's, so its columns are matched by field id
                frame = _in_schema(frame, core.schema_manager.schema(snapshot.schema_id), table.schema)
    else:
        frame, files = _append_frame(spark, ref, table, snapshot)
    return _Target(op, ref, table, snapshot.id if snapshot else None, frame, storage, files)


def _in_schema(frame, old, current):
    """``frame`` (rows in schema ``old``) in the columns of schema ``current``, matched by field
    id: renamed columns keep their values, added ones are null, types widened are cast."""
    from pyspark.sql import functions as F

    sources = column_sources(old, current)
    target = spark_schema(current)
    cols = []
    for f in current.fields:
        src = sources[f.name]
        col = F.lit(None) if src is None else F.col("`" + src.replace("`", "``") + "`")
        cols.append(col.cast(target[f.name].dataType).alias(f.name))
    return frame.select(*cols)


def _append_frame(spark, ref: TableRef, table, snapshot):
    """The rows of an append table's snapshot, each with its data file and position, read by
    Spark tasks (one data file at a time) with impl's reader; rows its deletion vectors delete
    are left out."""
    from pyspark.sql import types as st

    core = table.core
    schema = st.StructType([*spark_schema(table.schema).fields, st.StructField(FILE_COLUMN, st.StringType(), False),
                            st.StructField(POS_COLUMN, st.LongType(), False)])
    arrow = spark_arrow_schema(schema)
    units = []
    files: dict[str, tuple[bytes, int, int, DataFileMeta]] = {}
    if snapshot is not None:
        index = bucket_index_files(core, snapshot)
        for e in SnapshotReader(core).live_entries(snapshot):
            files[e.file.file_name] = (e.partition, e.bucket, e.total_buckets, e.file)
            units.append((core.partition_cache.path(e.partition), e.bucket, e.file,
                          tuple(index.get((e.partition, e.bucket), ()))))
    if not units:
        return spark.createDataFrame([], schema), files
    n = max(1, min(len(units), int(spark.sparkContext.defaultParallelism)))
    return spark.range(len(units), numPartitions=n).mapInArrow(_read_units(ref, units, arrow), schema), files


def _read_units(ref: TableRef, units: Sequence, arrow: pa.Schema):
    units = list(units)

    def run(batches):
        core = ref.table().core
        columns = list(core.schema.field_names)
        vectors: dict[tuple[str, int], Mapping[str, np.ndarray]] = {}
        for b in batches:
            for i in b.column(0).to_pylist():
                partition_path, bucket, f, index_files = units[i]
                path = core.paths.data_file_path(partition_path, bucket, f.file_name, f.external_path)
                with core.file_io.open_input(path) as source:
                    t = read_data_file(core, source, path, f, columns)
                if (partition_path, bucket) not in vectors:
                    vectors[(partition_path, bucket)] = read_deletion_vectors(core.file_io, core.paths, index_files)
                t = t.append_column(FILE_COLUMN, pa.repeat(pa.scalar(f.file_name), t.num_rows)) \
                    .append_column(POS_COLUMN, pa.array(np.arange(t.num_rows, dtype=np.int64)))
                keep = keep_mask(vectors[(partition_path, bucket)].get(f.file_name), 0, t.num_rows)
                if keep is not None:
                    t = t.filter(pa.array(keep))
                yield from conform_to_spark(t, arrow).to_batches()

    return run


# ====================================================================== expressions


def _lit(kind: str):
    from pyspark.sql import functions as F

    return F.lit(kind)


def _analyzed(target: _Target, what: str, build):
    """``build()``, with Spark's parse and analysis errors raised as RowLevelChangeError."""
    from pyspark.errors import AnalysisException

    try:
        return build()
    except AnalysisException as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RowLevelChangeError(f"{target.op} of {target.identifier}: {what}: {first}") from e


def _expr(target: _Target, what: str, text: str):
    from pyspark.sql import functions as F

    return _analyzed(target, f"{what} {text!r}", lambda: F.expr(text))


def _where(target: _Target, frame, condition: str | None):
    if condition is None:
        return frame
    cond = _expr(target, "condition", condition)
    return _analyzed(target, f"condition {condition!r}", lambda: frame.filter(cond))


def _fixed_columns(target: _Target) -> list[str]:
    """Columns a row-level change may not assign: the key and partition columns of primary-key
    tables (the row would move to another key)."""
    if not target.is_pk:
        return []
    t = target.table
    return list(dict.fromkeys([*t.primary_keys, *t.partition_keys]))


def _assignments(target: _Target, assignments: Mapping[str, str] | str, what: str, *,
                 insert: bool = False) -> dict[str, str]:
    if isinstance(assignments, str):
        raise RowLevelChangeError(f"{target.op} of {target.identifier}: {what} is a mapping column -> expression "
                                  f"or '*', not {assignments!r}")
    out = {}
    by_lower = {c.lower(): c for c in target.columns}
    fixed = set(_fixed_columns(target))
    for name, value in assignments.items():
        col = by_lower.get(str(name).lower())
        if col is None:
            raise RowLevelChangeError(f"{target.op} of {target.identifier}: {what}: {name!r} is not a column "
                                      f"(columns: {target.columns})")
        if col in fixed and not insert:
            raise RowLevelChangeError(f"{target.op} of {target.identifier}: {what}: {col!r} is a primary-key or "
                                      f"partition column, which an update cannot change")
        out[col] = str(value)
    return out


def _check_source_has(target: _Target, source, assignments: Mapping[str, str], what: str) -> None:
    have = {c.lower() for c in source.columns}
    missing = [c for c in assignments if c.lower() not in have]
    if missing:
        raise RowLevelChangeError(f"{target.op} of {target.identifier}: {what}: the source lacks columns {missing} "
                                  f"(source columns: {source.columns})")


def _check_cardinality(target: _Target, staged, identity: Sequence[str]) -> None:
    from pyspark.sql import functions as F

    dup = (staged.filter(F.col(MATCHED_COLUMN)).groupBy(*identity).count()
           .filter(F.col("count") > 1).limit(1).collect())
    if dup:
        row = dup[0].asDict()
        names = list(target.table.primary_keys) if target.is_pk else [FILE_COLUMN, POS_COLUMN]
        which = {n: row[f"__id{i}"] for i, n in enumerate(names)}
        raise MergeCardinalityError(
            f"MERGE INTO {target.identifier}: the target row {which} is matched by {row['count']} source rows; "
            f"a target row may match at most one (make the ON condition unique per target row)", target_row=which)


# ====================================================================== writing


def _apply(target: _Target, changes, *, kind: str | None = None,
           counts: Mapping[str, int] | None = None) -> RowLevelResult:
    """Write ``changes`` (the table's columns, ``KIND_COLUMN``, for append tables the file and
    position of the changed row) as one commit. ``kind``: the one kind every change has (its
    count is then taken from what was written: no Spark job counts them); else ``counts`` by kind."""
    from pyspark.sql import functions as F

    if counts is not None and not any(counts.values()):
        return _result(target, (), counts)
    if target.is_pk:
        out = write_dataframe(changes.select(*target.columns, KIND_COLUMN), target.ref.table_path,
                              options=target.storage or None, row_kind_column=KIND_COLUMN,
                              fs_factory=target.ref.fs_factory)
        if counts is None:  # each change is one row of the new files (its key is unique among them)
            counts = {str(kind): sum(f.row_count for m in out.messages for f in m.new_files)}
        return _result(target, tuple(out.snapshot_ids), counts)
    inserts = kind == _UPDATE or bool(counts and counts.get(_INSERT))
    if inserts:
        changes = changes.persist()  # read once for the vectors and once for the new rows
    try:
        gone = (changes.filter(F.col(KIND_COLUMN).isin(_DELETE, _UPDATE))
                .select(KIND_COLUMN, FILE_COLUMN, POS_COLUMN).toArrow())
        kinds = gone.column(KIND_COLUMN)
        counts = {_DELETE: pc.sum(pc.equal(kinds, _DELETE)).as_py() or 0,
                  _UPDATE: pc.sum(pc.equal(kinds, _UPDATE)).as_py() or 0,
                  _INSERT: (counts or {}).get(_INSERT, 0)}
        if not any(counts.values()):
            return _result(target, (), counts)
        delete_messages = _delete_messages(target, gone)
        try:
            if counts[_UPDATE] + counts[_INSERT]:
                rows = changes.filter(F.col(KIND_COLUMN).isin(_UPDATE, _INSERT)).select(*target.columns)
                res = write_dataframe(rows, target.ref.table_path, options=target.storage or None, commit=False,
                                      fs_factory=target.ref.fs_factory)
                outcome = commit_write(res.job, [*res.per_task, delete_messages])
                snapshots = tuple(outcome.snapshot_ids)
            else:
                wb = target.table.new_batch_write_builder()
                wb.commit_user = f"spark-dml-{uuid.uuid4().hex}"
                c = wb.new_commit()
                try:
                    snapshots = tuple(c.commit(delete_messages).snapshot_ids)
                finally:
                    c.close()
        except BaseException as e:
            # the rows' messages are cleaned up by their commit; these are the delete's own (kept
            # when the snapshot may have landed: it would name them)
            if not isinstance(e, CommitOutcomeUnknownError):
                target.table.new_batch_write_builder().new_commit().abort(delete_messages)
            raise
        return _result(target, snapshots, counts)
    finally:
        if inserts:
            changes.unpersist()


def _result(target: _Target, snapshots: tuple[int, ...], counts: Mapping[str, int]) -> RowLevelResult:
    return RowLevelResult(target.identifier, snapshots, counts.get(_DELETE, 0), counts.get(_UPDATE, 0),
                          counts.get(_INSERT, 0))


def _delete_messages(target: _Target, gone: pa.Table) -> list[CommitMessage]:
    """The table's DELETE of the rows ``gone`` names by file and position (read at the target's
    snapshot): deletion vectors, or the touched files rewritten (:mod:`impl.write.delete`)."""
    if not gone.num_rows:
        return []
    per_file = gone.group_by(FILE_COLUMN).aggregate([(POS_COLUMN, "list")])
    names = per_file.column(FILE_COLUMN).to_pylist()
    lists = per_file.column(f"{POS_COLUMN}_list").combine_chunks()
    offsets = lists.offsets.to_numpy()
    values = lists.values.to_numpy()
    files = []
    for i, name in enumerate(names):
        partition, bucket, total, meta = target.files[name]
        files.append(FileDeletions(partition, bucket, total, meta, np.unique(values[offsets[i]:offsets[i + 1]])))
    messages = deletion_messages(target.table.core, Deletions(target.snapshot_id, tuple(files)))
    log.info("%s of %s: %d row(s) deleted in %d file(s)", target.op, target.identifier, gone.num_rows, len(names))
    return messages


__all__ = ["delete", "update", "merge_into", "RowLevelResult", "RowLevelChangeError", "MergeCardinalityError"]

"""Batch reads: ``spark.read.format("paimon_py").load(table_path)``.

Planning (``partitions()``, in a Python worker on the driver) resolves the snapshot (latest, or
``snapshot-id`` / ``timestamp-millis`` time travel), plans splits with the pushed filters
(partition, bucket and statistics pruning by impl's scan), cuts them into units (one bucket for
primary-key tables, which are merged on read; one data file for append tables) and packs the
units into input partitions of similar size.

``read()`` runs in the tasks and yields Arrow batches cast exactly to the Spark schema. With
``read.changelog=true`` the schema starts with Paimon's ``rowkind`` column; a batch read returns
the merged rows of a snapshot, so every row is ``+I`` (Paimon, whose merged read keeps the kind
of each key's last change, could say ``+U`` where a key was last written as an update).

Correctness under Spark 4.3's plan sharing (see :mod:`impl.spark.claims`): Spark hands every scan
of one loaded DataFrame / view the same planned read, so :class:`PaimonReader` (the default,
``pushdown`` = ``false``) prunes nothing and Spark applies every filter: each scan reads the whole
snapshot, whatever other scans of the relation asked for. :class:`PaimonPushdownReader`
(``pushdown`` = ``true``) prunes partitions, buckets and files with the pushed filters, for a
DataFrame each query scans once. A plan is read as planned only by the first SQL execution that
runs it; any other execution re-plans the whole table in its tasks, at one snapshot they agree on
(the snapshot time travel pins, for every query of a DataFrame loaded with it: PlanPinError when
its options name another snapshot by now). Jobs of RDD actions (``df.rdd``: no SQL execution id)
read the plan's own snapshot, so every job of one action reads the same splits. Rows are read
under the DataFrame's columns: a plan made before a rename reads its snapshot's schema, and a
snapshot written under other columns fails with PlanPinError.
Every filter is always handed back to Spark, which evaluates it on the rows. Nothing is kept on
the reader object between queries: what a plan needs travels in its input partitions.
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceReader, InputPartition

from impl.jobs.tables import TableRef
from impl.jobs.units import DEFAULT_TARGET_BYTES, pack_units, partition_count, read_units
from impl.predicate.predicate import CompoundPredicate
from impl.spark.claims import ClaimLedger, pushed_predicates, record_pushed
from impl.spark.errors import PlanPinError, SharedPlanError
from impl.spark.filters import translate_filters
from impl.spark.only_files import restrict_splits
from impl.spark.types import _strip_nullability, conform_to_spark, spark_arrow_schema, spark_schema

log = logging.getLogger(__name__)

BATCH_ROWS = 65536
TIME_TRAVEL_KEYS = ("scan.snapshot-id", "scan.timestamp-millis", "scan.tag-name", "scan.version")
# what _execution answers for a task of a job outside any SQL execution (an RDD action's)
_RDD_JOB = "rdd"
# Paimon's audit-log column (``read.changelog=true``): the row kind as a string, first column
ROW_KIND_COLUMN = "rowkind"
_ROW_KIND_NAMES = pa.array(["+I", "-U", "+U", "-D"])


def with_row_kind(t: pa.Table, kinds: pa.ChunkedArray | pa.Array | None) -> pa.Table:
    """``t`` with Paimon's ``rowkind`` column first: the names of ``kinds`` (int8 0..3; null or
    None: +I)."""
    if kinds is None:
        names = pa.repeat(_ROW_KIND_NAMES[0], t.num_rows)
    else:
        names = _ROW_KIND_NAMES.take(pc.fill_null(kinds, 0))
    return t.add_column(0, ROW_KIND_COLUMN, names)


class PaimonInputPartition(InputPartition):
    """One read task: its slot (``index`` of ``count``), the plan it belongs to, and its splits."""

    def __init__(self, index: int, count: int, plan_id: str, snapshot_id: int | None, splits: list,
                 predicate=None, pushes: int = 0):
        super().__init__(index)
        self.index = index
        self.count = count
        self.plan_id = plan_id
        self.snapshot_id = snapshot_id
        self.splits = splits
        self.predicate = predicate  # what the splits were pruned with (None: not pruned)
        self.pushes = pushes  # distinct filter sets the relation's scans pushed when planned

    def __repr__(self) -> str:
        return (f"PaimonInputPartition({self.index}/{self.count}, plan={self.plan_id[:8]}, "
                f"snapshot={self.snapshot_id}, splits={len(self.splits)})")


class PaimonReader(DataSourceReader):
    """Batch reads of one table (see the module docstring). Implements no ``pushFilters``: Spark
    evaluates every filter, and every scan reads the whole snapshot."""

    def __init__(self, ref: TableRef, schema, slots: int | None = None, target_bytes: int = DEFAULT_TARGET_BYTES,
                 relation_id: str | None = None, row_kind: bool = False, only_files=None):
        self.ref = ref
        # read_table's slow half: only these files, by (partition, bucket) (None: every file)
        self.only_files = only_files
        self.schema = schema
        self.row_kind = row_kind  # read.changelog: a first column rowkind, +I on every merged row
        self.slots = slots
        self.target_bytes = target_bytes
        self.relation_id = relation_id  # the loaded DataFrame / view this reader plans for

    # ------------------------------------------------------------------ planning (driver)

    def _planning_predicate(self):
        """(predicate to prune the plan with, number of distinct pushes): none here."""
        return None, 0

    def _slots(self) -> int:
        return self.slots or max(2, os.cpu_count() or 2)

    def partitions(self):
        table = self.ref.table()
        predicate, pushes = self._planning_predicate()
        rb = table.new_read_builder().with_filter(predicate)
        plan = rb.new_scan().plan()
        units = read_units(table, restrict_splits(plan.splits(), self.only_files))
        count = partition_count(units, self._slots(), self.target_bytes)
        plan_id = uuid.uuid4().hex
        return [PaimonInputPartition(i, count, plan_id, plan.snapshot_id, b, predicate, pushes)
                for i, b in enumerate(pack_units(units, count))]

    # ------------------------------------------------------------------ reading (tasks)

    def _execution(self):
        """(key of the running SQL execution, key of this scan's task, ledger), or Nones
        outside a Spark task."""
        try:
            from pyspark import TaskContext
        except ImportError:  # pragma: no cover
            return None, None, None
        tc = TaskContext.get()
        if tc is None:
            return None, None, None
        app = tc.getLocalProperty("spark.app.id") or "app"
        execution = tc.getLocalProperty("spark.sql.execution.id")
        if execution is None:
            # A job of an RDD action (df.rdd...): no SQL execution id, and nothing else that tells
            # one action's jobs (zipWithIndex, take) from another's. See _splits_for.
            return _RDD_JOB, None, None
        key = f"{app}/sql-{execution}"
        master = tc.getLocalProperty("spark.master") or ""

        ledger = ClaimLedger.for_task(app, master.startswith("local"), self.ref)
        return key, (f"stage-{tc.stageId()}", str(tc.partitionId())), ledger

    def _splits_for(self, partition: PaimonInputPartition, table):
        """(splits, predicate, snapshot id) this task reads: the plan's own, or a fresh full
        plan's share."""
        key, scan, ledger = self._execution()
        if key is None:
            return partition.splits, partition.predicate, partition.snapshot_id
        if key == _RDD_JOB:
            # Every job of an RDD action must read the same splits (zipWithIndex numbers rows by
            # the counts of a first job; take() scans more partitions job after job), and no
            # property of a task says which action it serves. So an RDD job always reads the
            # plan's snapshot: the plan as planned when it prunes nothing, else (a pruned plan
            # may be another query's) the whole table at that snapshot, packed the same way.
            if partition.predicate is None:
                return partition.splits, None, partition.snapshot_id
            return self._replan(table, partition, partition.snapshot_id), None, partition.snapshot_id
        assert scan is not None and ledger is not None
        if ledger.claim(f"plan/{partition.plan_id}", key) == key:
            if partition.predicate is not None and partition.pushes == 1:
                # Two scans of this plan in one stage, and only one filter set was pushed: the
                # other scan pushed none (a union of one DataFrame with a filtered copy of
                # itself) and needs rows the plan pruned. Refuse rather than answer wrongly.
                # (Filtered scans are covered by the OR of their pushes; a scan read again by
                # another stage of the query, e.g. the sampling job of a sort, is the same scan.)
                stage, task_partition = scan
                holder = ledger.claim(f"scan/{partition.plan_id}/{stage}/{partition.index}", task_partition)
                if holder != task_partition:
                    raise SharedPlanError(
                        f"{self.ref.identifier}: this query reads one loaded DataFrame/view of the table in two "
                        f"places, and with pushdown=true Spark 4.3 gives every such place the same planned "
                        f"read (pruned for one of them), which can return wrong rows. Read without the "
                        f"pushdown option (the default reads the whole snapshot and is right in every query "
                        f"shape), or load the table once per use (spark.read.format('paimon_py').load(path) "
                        f"for each side).")
            return partition.splits, partition.predicate, partition.snapshot_id
        # Someone else's plan (Spark reused a cached read): re-plan the whole table, at the
        # snapshot time travel pins (every query of the DataFrame reads it), else at one snapshot
        # this execution's tasks agree on.
        if self._pinned():
            snapshot_id = partition.snapshot_id
        else:
            latest = table.snapshot_manager().latest_snapshot_id()
            snapshot_id = int(ledger.claim(f"snapshot/{partition.plan_id}/{key}", str(latest or 0))) or None
        return self._replan(table, partition, snapshot_id), None, snapshot_id

    def _pinned(self) -> bool:
        """Time travel options pin this DataFrame to one snapshot for every query."""
        return any(k in dict(self.ref.dynamic_options) for k in TIME_TRAVEL_KEYS)

    def _replan(self, table, partition: PaimonInputPartition, snapshot_id: int | None) -> list:
        """This task's share of the whole table at ``snapshot_id``, packed into the plan's
        partition count (deterministic: every task and job of one snapshot agree)."""
        if snapshot_id is None:
            return []
        if self._pinned():
            # the view's own options (a tag keeps its snapshot readable after it expired); they
            # must still name the snapshot planned, never another one
            view = table
        else:
            base = {k: v for k, v in self.ref.dynamic_options if k not in TIME_TRAVEL_KEYS}
            base["scan.snapshot-id"] = str(snapshot_id)
            view = self.ref.catalog().get_table(self.ref.identifier).copy(base)
        plan = view.new_read_builder().new_scan().plan()
        if plan.snapshot_id != snapshot_id:
            raise PlanPinError(
                f"{self.ref.identifier}: this DataFrame was planned at snapshot {snapshot_id} and its time travel "
                f"options {dict(self.ref.dynamic_options)} now name snapshot {plan.snapshot_id} (a tag replaced, "
                f"snapshots expired); nothing was read from another snapshot: load the DataFrame again")
        units = read_units(view, restrict_splits(plan.splits(), self.only_files))
        bins = pack_units(units, partition.count)
        return bins[partition.index] if partition.index < len(bins) else []

    def _schema_view(self, table, snapshot_id: int | None):
        """A view of the table whose columns are this DataFrame's: ``table`` (the latest schema, or
        the travelled snapshot's) when they match, else the one of ``snapshot_id`` (a plan made
        before a column rename reads its snapshot's names). PlanPinError when neither has them."""
        fields = self.schema.fields[1:] if self.row_kind else self.schema.fields
        wanted = [(f.name, _strip_nullability(f.dataType)) for f in fields]

        def columns(view) -> list:
            return [(f.name, _strip_nullability(f.dataType)) for f in spark_schema(view.schema).fields]

        if columns(table) == wanted:
            return table
        if snapshot_id is not None and not self._pinned():
            view = self.ref.table(extra_options={"scan.snapshot-id": str(snapshot_id)})
            if columns(view) == wanted:
                return view
        raise PlanPinError(
            f"{self.ref.identifier}: the table's columns changed since this DataFrame was loaded (loaded with "
            f"{[n for n, _ in wanted]}, snapshot {snapshot_id} has {[n for n, _ in columns(table)]}); nothing was "
            f"read under another schema: load the DataFrame again")

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        table = self.ref.table()
        splits, predicate, snapshot_id = self._splits_for(partition, table)
        if not splits:
            return
        table = self._schema_view(table, snapshot_id)
        target = spark_arrow_schema(self.schema)
        read = table.new_read_builder().with_filter(predicate).new_read()
        reader = read.to_arrow_batch_reader(splits)
        for batch in reader:
            if batch.num_rows == 0:
                continue
            t = with_row_kind(pa.Table.from_batches([batch]), None) if self.row_kind else batch
            for b in conform_to_spark(t, target).to_batches(max_chunksize=BATCH_ROWS):
                yield b


class PaimonPushdownReader(PaimonReader):
    """``pushdown`` = ``true``: the plan is pruned with the pushed filters (partitions, buckets,
    file statistics). Spark 4.3 gives every scan of the loaded relation the plan of the last
    push, so the plan is pruned with the OR of every push recorded on the relation: right for
    each filtered scan, wrong for a scan of the same relation that pushes nothing (see
    :mod:`impl.spark.claims`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.predicate = None  # impl Predicate of the translatable pushed filters (pruning only)

    def pushFilters(self, filters):
        filters = list(filters)
        table = self.ref.table()
        self.predicate = translate_filters(filters, table.schema)
        if self.relation_id is not None:

            record_pushed(self.relation_id, self.predicate)
        # Spark evaluates every filter itself: a cached plan can be reused by another query.
        return filters

    def _planning_predicate(self):
        """(predicate to prune with, number of distinct pushes). Every scan of one loaded
        relation in a query reads the plan of the last push (Spark 4.3), so the plan is pruned
        with the OR of all the relation's pushes: right for each of those scans."""
        if self.predicate is None or self.relation_id is None:
            return self.predicate, int(self.predicate is not None)

        pushed = pushed_predicates(self.relation_id)
        if pushed is None:
            return None, 0
        if self.predicate not in pushed:
            pushed.append(self.predicate)
        if len(pushed) == 1:
            return pushed[0], 1
        return CompoundPredicate("or", tuple(pushed)), len(pushed)


__all__ = ["PaimonReader", "PaimonPushdownReader", "PaimonInputPartition", "with_row_kind", "ROW_KIND_COLUMN"]

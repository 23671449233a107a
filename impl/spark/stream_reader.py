"""Streaming reads: ``spark.readStream.format("paimon_py").load(table_path)``.

The stream emits a table's changes snapshot by snapshot, as Paimon's streaming source does:

- the start is Paimon's ``scan.mode``: ``latest-full`` (the default; also ``default`` without
  ``scan.snapshot-id`` / ``scan.timestamp-millis``) emits the whole latest snapshot first, then
  the changes of every later snapshot; ``latest`` only the changes committed after the query
  started; ``from-snapshot`` (the default when ``scan.snapshot-id`` is given) the changes of
  snapshot ``scan.snapshot-id`` and of every later one (an id below the earliest snapshot starts
  at the earliest, as in Paimon); ``from-snapshot-full`` the whole snapshot ``scan.snapshot-id``,
  then the changes after it; ``from-timestamp`` (the default when ``scan.timestamp-millis`` is
  given) the changes of the snapshots committed at or after that time. Other modes are refused.
- the changes of a snapshot: on a primary-key table with ``changelog-producer=input``, the
  changelog files of every snapshot that has them (the rows as written: +I, -U, +U, -D); without
  a changelog producer, the data files each APPEND snapshot added (the rows as the writer's
  buffer merged them, retractions included); on an append table, the files each APPEND
  snapshot added. COMPACT snapshots change no row and are skipped. OVERWRITE snapshots are
  skipped (their changelog files are read with ``changelog-producer=input``), as Paimon does
  without ``streaming-read-overwrite`` / ``streaming-read-append-overwrite``; setting those to
  true is refused (not implemented). With ``changelog-producer`` ``lookup`` /
  ``full-compaction`` the changelog is written by compaction, into COMPACT snapshots, and read
  from there (-U old / +U new per update, -D old per delete).
- row kinds: as in Paimon's Spark connector, the rows carry no row kind by default (a -U or -D
  row appears as a plain row holding the retracted values); ``read.changelog=true`` adds a
  first column ``rowkind`` (string ``+I`` / ``-U`` / ``+U`` / ``-D``; rows of a whole-snapshot
  read are ``+I``).
- order: the rows of one bucket in one micro-batch are read by one task, snapshot by snapshot
  and in sequence-number order within a snapshot (a whole-snapshot read of the bucket first), so a consumer that keeps the order within
  a Spark partition sees the changes of each key in the order they were written. Spark orders
  nothing across partitions.

Offsets are ``{"snapshot": N}``: every change up to snapshot N has been emitted. The first
micro-batch's end offset also records how the start was resolved (``"full": X``: snapshot X read
whole; ``"from": F``: changes from snapshot F), so a query restarted from its checkpoint reads
exactly what it planned; nothing else is kept between calls. A restart whose next snapshot has
expired meanwhile fails with :class:`StreamSnapshotExpiredError` (naming the snapshot and how to
start again) instead of skipping changes. ``Trigger.AvailableNow`` reads up to the snapshot that
was the latest when the query started.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Iterator, Mapping

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from impl.bucket.routing import BucketMode
from impl.errors import SnapshotNotExistError
from impl.jobs.tables import TableRef
from impl.jobs.units import DEFAULT_TARGET_BYTES, pack_units, partition_count, read_units
from impl.options import core_options as co
from impl.options.parsed import ParsedOptions
from impl.options.values import StartupMode
from impl.read.scan import DataSplit
from impl.read.table_read import VALUE_KIND
from impl.spark.errors import StreamSnapshotExpiredError, StreamStartError
from impl.spark.reader import BATCH_ROWS, TIME_TRAVEL_KEYS, PaimonInputPartition, with_row_kind
from impl.spark.types import conform_to_spark, spark_arrow_schema

log = logging.getLogger(__name__)

STREAM_MODES = (StartupMode.LATEST_FULL, StartupMode.LATEST, StartupMode.FROM_SNAPSHOT,
                StartupMode.FROM_SNAPSHOT_FULL, StartupMode.FROM_TIMESTAMP)
# the start option each mode needs (the other one must not be set)
_MODE_NEEDS = {StartupMode.FROM_SNAPSHOT: "scan.snapshot-id", StartupMode.FROM_SNAPSHOT_FULL: "scan.snapshot-id",
               StartupMode.FROM_TIMESTAMP: "scan.timestamp-millis"}


# ====================================================================== start options (pure)


@dataclass(frozen=True)
class StreamStart:
    """Where a new streaming query starts: one of :data:`STREAM_MODES` and its argument."""

    mode: StartupMode
    snapshot_id: int | None = None
    timestamp_millis: int | None = None


def stream_start(options: ParsedOptions | Mapping[str, str]) -> StreamStart:
    """The start of a stream from the table's options (schema options merged with dynamic ones),
    resolved and checked as Paimon does (``default`` picks the mode from the options given)."""
    parsed = ParsedOptions.of(options)
    for key in ("scan.tag-name", "scan.version"):
        # (Paimon can start a stream at a tag; this reader does not, and must not start elsewhere)
        if parsed.raw.get(key):
            raise StreamStartError(f"option {key!r} is not supported by streaming reads; start the stream with "
                                   f"scan.snapshot-id or scan.timestamp-millis")
    mode = parsed[co.SCAN_MODE]
    snapshot_id = parsed[co.SCAN_SNAPSHOT_ID]
    timestamp = parsed[co.SCAN_TIMESTAMP_MILLIS]
    if mode is StartupMode.DEFAULT:
        mode = (StartupMode.FROM_TIMESTAMP if timestamp is not None else
                StartupMode.FROM_SNAPSHOT if snapshot_id is not None else StartupMode.LATEST_FULL)
    elif mode is StartupMode.FULL:
        mode = StartupMode.LATEST_FULL
    if mode not in STREAM_MODES:
        raise StreamStartError(f"scan.mode={mode.value} is not supported by streaming reads; use one of "
                               f"{', '.join(m.value for m in STREAM_MODES)}")
    needed = _MODE_NEEDS.get(mode)
    for key, value in (("scan.snapshot-id", snapshot_id), ("scan.timestamp-millis", timestamp)):
        if key == needed and value is None:
            raise StreamStartError(f"scan.mode={mode.value} needs option {key!r}")
        if key != needed and value is not None:
            raise StreamStartError(f"option {key!r} does not apply to scan.mode={mode.value}"
                                   + (f" (it needs {needed!r})" if needed else ""))
    return StreamStart(mode, snapshot_id, timestamp)


def check_streamable(table) -> None:
    """Refuse what the stream cannot read faithfully (the changes of OVERWRITE snapshots)."""
    parsed = table.options.parsed
    if table.bucket_mode() is BucketMode.POSTPONE and table.options.changelog_producer == "none":
        # Paimon's stream scan of such a table reads bucket-postpone too (unmerged rows, before
        # any compaction); this reader plans through the batch scan, which skips it
        raise StreamStartError(f"streaming reads of postpone bucket table {table.identifier} without a changelog "
                               f"producer are not supported; set 'changelog-producer', or compact and read in batch")
    if table.options.data_evolution:
        raise StreamStartError(f"option 'data-evolution.enabled' = true: streaming reads of data-evolution tables "
                               f"are not supported ({table.identifier}); a snapshot's files may update older rows")
    if table.is_primary_key_table:
        if parsed[co.STREAMING_READ_OVERWRITE]:
            raise StreamStartError(f"streaming-read-overwrite=true is not supported ({table.identifier}); "
                                   f"OVERWRITE snapshots are skipped by streaming reads")
    elif parsed[co.STREAMING_READ_APPEND_OVERWRITE]:
        raise StreamStartError(f"streaming-read-append-overwrite=true is not supported ({table.identifier}); "
                               f"OVERWRITE snapshots are skipped by streaming reads")


# ====================================================================== offsets (pure)


@dataclass(frozen=True)
class StreamOffset:
    """Every change up to ``snapshot`` has been emitted (-1: the start is not resolved yet).

    Only the first micro-batch's end offset sets ``full`` (the snapshot it reads whole) or
    ``first`` (the first snapshot whose changes it reads); an end offset of a first batch with
    neither (written by earlier versions) reads ``snapshot`` whole.
    """

    snapshot: int
    full: int | None = None
    first: int | None = None

    @staticmethod
    def of(d: Mapping) -> "StreamOffset":
        def opt(key: str) -> int | None:
            return int(d[key]) if d.get(key) is not None else None
        return StreamOffset(int(d["snapshot"]), opt("full"), opt("from"))

    def to_dict(self) -> dict:
        d = {"snapshot": self.snapshot}
        if self.full is not None:
            d["full"] = self.full
        if self.first is not None:
            d["from"] = self.first
        return d


INITIAL = StreamOffset(-1)


@dataclass(frozen=True)
class BatchPlan:
    """What one micro-batch reads: snapshot ``full`` whole (or none), then the changes of
    snapshots ``changes_after + 1 .. changes_upto`` (none when ``changes_upto <= changes_after``)."""

    full: int | None
    changes_after: int
    changes_upto: int

    @property
    def has_changes(self) -> bool:
        return self.changes_upto > self.changes_after


def batch_plan(start: StreamOffset, end: StreamOffset) -> BatchPlan | None:
    """The reads of the micro-batch (start, end], or None when it reads nothing."""
    if end.snapshot < 0:
        return None
    if start.snapshot >= 0:
        return BatchPlan(None, start.snapshot, end.snapshot) if end.snapshot > start.snapshot else None
    if end.first is not None:
        return BatchPlan(None, end.first - 1, end.snapshot) if end.first <= end.snapshot else None
    full = end.full if end.full is not None else end.snapshot
    return BatchPlan(full, full, end.snapshot)


def first_offset(start: StreamStart, snapshots, latest: int | None, table_name: str) -> StreamOffset | None:
    """The end offset of a new query's first micro-batch, given the latest snapshot it may read
    (``snapshots`` is the table's snapshot manager); None while the table has no snapshot to
    start from (the query waits)."""
    mode = start.mode
    if mode is StartupMode.LATEST:
        # Paimon: with no snapshot yet, the first snapshot is read as changes
        return StreamOffset(latest or 0, first=(latest or 0) + 1)
    if latest is None:
        if mode is StartupMode.FROM_SNAPSHOT_FULL:
            raise StreamStartError(f"scan.mode=from-snapshot-full: table {table_name} has no snapshot "
                                   f"(scan.snapshot-id={start.snapshot_id})")
        return None
    if mode is StartupMode.LATEST_FULL:
        return StreamOffset(latest, full=latest)
    earliest = snapshots.earliest_snapshot_id() or latest
    if mode is StartupMode.FROM_SNAPSHOT_FULL:
        sid = start.snapshot_id
        assert sid is not None
        if not earliest <= sid <= latest:
            raise StreamStartError(f"scan.snapshot-id={sid} of table {table_name} is out of the available "
                                   f"snapshots [{earliest}, {latest}] (scan.mode=from-snapshot-full)")
        return StreamOffset(latest, full=sid)
    if mode is StartupMode.FROM_SNAPSHOT:
        sid = start.snapshot_id
        assert sid is not None
        if sid > latest + 1:
            raise StreamStartError(f"scan.snapshot-id={sid} of table {table_name} is beyond the next snapshot "
                                   f"(the latest is {latest})")
        if sid < earliest:
            # Paimon starts at the earliest snapshot still there
            log.warning("%s: scan.snapshot-id=%d has expired; the stream starts at the earliest snapshot %d",
                        table_name, sid, earliest)
        return StreamOffset(latest, first=max(sid, earliest))
    # FROM_TIMESTAMP: the changes of the snapshots committed at or after the time
    ts = start.timestamp_millis
    assert ts is not None
    before = snapshots.earlier_or_equal_time_millis(ts - 1)
    return StreamOffset(latest, first=before.id + 1 if before is not None else earliest)


# ====================================================================== planning


@dataclass(frozen=True)
class ReadUnit:
    """Splits one task reads in this order: a whole bucket of a primary-key table (its
    whole-snapshot split, then its change split), or one append file."""

    splits: tuple[DataSplit, ...]

    @property
    def file_size(self) -> int:
        return sum(s.file_size for s in self.splits)


def stream_units(table, full_splits: list[DataSplit], change_splits: list[DataSplit]) -> list[ReadUnit]:
    """The micro-batch's splits as units that stay in one input partition."""
    if not table.is_primary_key_table:
        return [ReadUnit((s,)) for s in (*read_units(table, full_splits), *read_units(table, change_splits))]
    buckets: dict[tuple[bytes, int], list[DataSplit]] = {}
    for s in (*full_splits, *change_splits):
        buckets.setdefault((s.partition, s.bucket), []).append(s)
    return [ReadUnit(tuple(splits)) for splits in buckets.values()]


def _expired(table_name: str, snapshot_id: int, earliest: int | None, what: str) -> StreamSnapshotExpiredError:
    resume = (f"scan.mode=from-snapshot and scan.snapshot-id={earliest} (the earliest snapshot left) or "
              if earliest is not None else "")
    return StreamSnapshotExpiredError(
        f"{table_name}: snapshot {snapshot_id}, {what}, has expired (earliest snapshot: {earliest}); its changes "
        f"can no longer be read. Start a new query (a new checkpointLocation) with {resume}scan.mode=latest-full, "
        f"and keep snapshots longer (snapshot.num-retained.min, snapshot.time-retained) than a query may stay "
        f"stopped.")


class PaimonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("paimon_py")`` (see the module docstring)."""

    def __init__(self, ref: TableRef, schema, start: StreamStart, *, row_kind: bool = False,
                 slots: int | None = None, target_bytes: int = DEFAULT_TARGET_BYTES):
        # the start options only choose the first offset: the reads themselves use plain views
        self.ref = dataclasses.replace(
            ref, dynamic_options=tuple((k, v) for k, v in ref.dynamic_options if k not in TIME_TRAVEL_KEYS))
        self.schema = schema
        self.start = start
        self.row_kind = row_kind
        self.slots = slots
        self.target_bytes = target_bytes
        self.available_now: int | None = None  # latest snapshot when a Trigger.AvailableNow run began
        self.available_now_set = False

    # ------------------------------------------------------------------ offsets (driver)

    def initialOffset(self) -> dict:
        return INITIAL.to_dict()

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = self.ref.table().snapshot_manager().latest_snapshot_id()
        self.available_now_set = True

    def _readable_latest(self, latest: int | None) -> int | None:
        if not self.available_now_set:
            return latest
        if latest is None or self.available_now is None:
            return None
        return min(latest, self.available_now)

    def latestOffset(self, start: dict, limit=None) -> dict:
        table = self.ref.table()
        sm = table.snapshot_manager()
        latest = sm.latest_snapshot_id()
        begin = StreamOffset.of(start)
        if begin.snapshot < 0:
            first = first_offset(self.start, sm, self._readable_latest(latest), table.identifier)
            return start if first is None else first.to_dict()
        self._check_resumable(sm, begin.snapshot, latest, table.identifier)
        readable = self._readable_latest(latest)
        if readable is None or readable <= begin.snapshot:
            return start
        return StreamOffset(readable).to_dict()

    @staticmethod
    def _check_resumable(sm, done: int, latest: int | None, table_name: str) -> None:
        """The next snapshot after ``done`` must not have expired, nor ``done`` be past the latest."""
        if done > (latest or 0):
            raise StreamStartError(
                f"{table_name}: the stream's checkpoint has read up to snapshot {done}, but the table's latest "
                f"snapshot is {latest} (was the table dropped and created again?); start a new query with a new "
                f"checkpointLocation")
        earliest = sm.earliest_snapshot_id()
        if earliest is not None and done + 1 < earliest:
            raise _expired(table_name, done + 1, earliest, "the next one this stream must read")

    # ------------------------------------------------------------------ planning (driver)

    def partitions(self, start: dict, end: dict):
        plan = batch_plan(StreamOffset.of(start), StreamOffset.of(end))
        if plan is None:
            return []
        table = self.ref.table()
        units = self._units(table, plan)
        if not units:
            return []
        slots = self.slots or max(2, os.cpu_count() or 2)
        count = partition_count(units, slots, self.target_bytes)
        bins = pack_units(units, count)
        snapshot = int(end["snapshot"])
        return [PaimonInputPartition(i, count, "stream", snapshot, [s for u in b for s in u.splits])
                for i, b in enumerate(bins) if b]

    def _units(self, table, plan: BatchPlan) -> list[ReadUnit]:
        sm = table.snapshot_manager()
        first_needed = plan.full if plan.full is not None else plan.changes_after + 1
        earliest = sm.earliest_snapshot_id()
        what = ("which this micro-batch reads whole" if plan.full is not None
                else "the first one this micro-batch reads")
        if earliest is not None and first_needed < earliest:
            raise _expired(table.identifier, first_needed, earliest, what)
        try:
            full: list[DataSplit] = []
            if plan.full is not None:
                # a stream reads its own branch only (Paimon's stream scans ignore scan.fallback-branch)
                view = table.copy({"scan.snapshot-id": str(plan.full), "scan.fallback-branch": ""})
                full = view.new_read_builder().new_scan().plan().splits()
            changes: list[DataSplit] = []
            if plan.has_changes:
                view = table.copy({"incremental-between": f"{plan.changes_after},{plan.changes_upto}"})
                changes = view.new_read_builder().new_scan().plan().splits()
        except SnapshotNotExistError as e:
            # expired while we planned (a snapshot above the latest is impossible: offsets never pass it)
            raise _expired(table.identifier, e.snapshot_id, sm.earliest_snapshot_id(),
                           "which this micro-batch reads") from e
        return stream_units(table, full, changes)

    # ------------------------------------------------------------------ reading (tasks)

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        table = self.ref.table()
        target = spark_arrow_schema(self.schema)
        reader = table.new_read_builder().new_read().to_arrow_batch_reader(partition.splits)
        for batch in reader:
            if batch.num_rows:
                t = pa.Table.from_batches([batch])
                kinds = None
                if VALUE_KIND in t.column_names:
                    kinds = t.column(VALUE_KIND)  # null on the rows of a whole-snapshot split: +I
                    t = t.drop_columns([VALUE_KIND])
                if self.row_kind:
                    t = with_row_kind(t, kinds)
                yield from conform_to_spark(t, target).to_batches(max_chunksize=BATCH_ROWS)

    def commit(self, end: dict) -> None:
        pass


__all__ = ["PaimonStreamReader", "StreamStart", "StreamOffset", "BatchPlan", "stream_start", "check_streamable",
           "first_offset", "batch_plan", "stream_units", "StreamStartError", "StreamSnapshotExpiredError",
           "STREAM_MODES"]

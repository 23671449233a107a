"""Streaming reads of primary-key tables (and the start options, for append tables too).

Writes go through the impl API between micro-batches; the streams run on local Spark with
``processAllAvailable`` or ``Trigger.AvailableNow`` and collect each micro-batch in order.
"""

from __future__ import annotations

import os
import threading
import time

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import impl  # noqa: E402
from impl.errors import InvalidOptionError  # noqa: E402
from impl.options.values import StartupMode  # noqa: E402
from impl.spark.reader import with_row_kind  # noqa: E402
from impl.spark.stream_reader import (  # noqa: E402
    INITIAL,
    BatchPlan,
    StreamOffset,
    StreamStart,
    StreamStartError,
    batch_plan,
    check_streamable,
    stream_start,
)

KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def make_table(warehouse: str, name: str = "t", **options: str):
    cat = impl.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    opts = {"bucket": "2", "write-only": "true", **options}  # write-only: COMPACT snapshots only when asked
    cat.create_table(f"db.{name}", schema=SCHEMA, primary_keys=["id"], options=opts)
    return os.path.join(warehouse, "db.db", name)


def write(path: str, rows: list[tuple[str, int, str]]) -> int:
    """Commit rows given as (kind, id, v) in one APPEND snapshot; its id."""
    table = impl.Catalog(os.path.dirname(os.path.dirname(path))).get_table(f"db.{os.path.basename(path)}")
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(pa.table({"id": [r[1] for r in rows], "v": [r[2] for r in rows]}, schema=SCHEMA),
                      row_kinds=[KINDS[r[0]] for r in rows])
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()
    return table.snapshot_manager().latest_snapshot_id()


def table_of(path: str):
    return impl.Catalog(os.path.dirname(os.path.dirname(path))).get_table(f"db.{os.path.basename(path)}")


class Stream:
    """A running stream of one table; ``batches`` holds each micro-batch's rows in read order."""

    def __init__(self, spark, path: str, checkpoint: str, available_now: bool = False, **options: str):
        self.batches: list[list[tuple]] = []
        self._taken = 0
        self._lock = threading.Lock()
        reader = spark.readStream.format("paimon_py")
        for k, v in options.items():
            reader = reader.option(k, v)

        def collect(df, _batch_id):
            rows = [tuple(r) for r in df.collect()]
            with self._lock:
                self.batches.append(rows)

        writer = reader.load(path).writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
        if available_now:
            writer = writer.trigger(availableNow=True)
        self.query = writer.start()

    def drain(self) -> list[tuple]:
        """Process what is available; the rows of the micro-batches not drained before, in order."""
        self.query.processAllAvailable()
        with self._lock:
            new, self._taken = self.batches[self._taken:], len(self.batches)
        return [r for b in new for r in b]

    def stop(self) -> None:
        self.query.stop()


# ====================================================================== rules (no Spark job)


def test_start_modes_follow_paimons_defaults_and_checks():
    assert stream_start({}) == StreamStart(StartupMode.LATEST_FULL)
    assert stream_start({"scan.mode": "full"}).mode is StartupMode.LATEST_FULL
    assert stream_start({"scan.snapshot-id": "3"}) == StreamStart(StartupMode.FROM_SNAPSHOT, 3)
    assert stream_start({"scan.timestamp-millis": "7"}) == StreamStart(StartupMode.FROM_TIMESTAMP, None, 7)
    assert stream_start({"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"}).snapshot_id == 2
    with pytest.raises(StreamStartError, match="needs option 'scan.snapshot-id'"):
        stream_start({"scan.mode": "from-snapshot"})
    with pytest.raises(StreamStartError, match="'scan.snapshot-id' does not apply to scan.mode=latest"):
        stream_start({"scan.mode": "latest", "scan.snapshot-id": "1"})
    with pytest.raises(StreamStartError, match="compacted-full is not supported"):
        stream_start({"scan.mode": "compacted-full"})
    with pytest.raises(InvalidOptionError, match="scan.mode"):
        stream_start({"scan.mode": "newest"})
    # a tag is refused by name, not ignored (the stream's views drop every time travel key)
    with pytest.raises(StreamStartError, match="'scan.tag-name' is not supported by streaming"):
        stream_start({"scan.tag-name": "t1"})


def test_offsets_pin_the_first_batch():
    # the first batch reads what its end offset recorded, whatever the options say on a restart
    assert batch_plan(INITIAL, StreamOffset(5, full=5)) == BatchPlan(5, 5, 5)
    assert batch_plan(INITIAL, StreamOffset(5, full=2)) == BatchPlan(2, 2, 5)
    assert batch_plan(INITIAL, StreamOffset(5, first=3)) == BatchPlan(None, 2, 5)
    assert batch_plan(INITIAL, StreamOffset(5, first=6)) is None  # scan.mode=latest: nothing yet
    assert batch_plan(INITIAL, StreamOffset(4)) == BatchPlan(4, 4, 4)  # offsets of the append-only stream
    assert batch_plan(StreamOffset(5, first=6), StreamOffset(8)) == BatchPlan(None, 5, 8)
    assert batch_plan(StreamOffset(8), StreamOffset(8)) is None
    assert StreamOffset.of(StreamOffset(5, first=3).to_dict()) == StreamOffset(5, first=3)


def test_row_kind_column_names_the_kinds():
    t = with_row_kind(pa.table({"id": [1, 2, 3]}), pa.array([3, None, 1], pa.int8()))
    assert t.column_names == ["rowkind", "id"]
    assert t.column("rowkind").to_pylist() == ["-D", "+I", "-U"]
    assert with_row_kind(pa.table({"id": [1]}), None).column("rowkind").to_pylist() == ["+I"]


def test_what_the_stream_cannot_read_is_refused(warehouse):
    path = make_table(warehouse)
    with pytest.raises(StreamStartError, match="streaming-read-overwrite=true is not supported"):
        check_streamable(table_of(path).copy({"streaming-read-overwrite": "true"}))
    check_streamable(table_of(path).copy({"streaming-read-append-overwrite": "true"}))  # append tables only


# ====================================================================== streams


def test_changes_stream_snapshot_by_snapshot_compactions_and_overwrites_add_nothing(spark, warehouse, tmp_path):
    path = make_table(warehouse)
    write(path, [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")])
    kinds = Stream(spark, path, str(tmp_path / "k"), **{"read.changelog": "true"})
    plain = Stream(spark, path, str(tmp_path / "p"))
    try:
        # latest-full: the whole latest snapshot first
        assert sorted(kinds.drain()) == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")]
        assert sorted(plain.drain()) == [(1, "a"), (2, "b"), (3, "c")]

        write(path, [("+I", 1, "a2"), ("-D", 2, "b")])  # an upsert and a delete
        table_of(path).compact(full=True)  # COMPACT: no row
        write(path, [("+I", 4, "d")])
        table_of(path).write_arrow(pa.table({"id": [9], "v": ["z"]}, schema=SCHEMA), overwrite=True)  # OVERWRITE
        kinds_of = {c.commit_kind.value for c in table_of(path).snapshots()}
        assert {"COMPACT", "OVERWRITE"} <= kinds_of
        assert sorted(kinds.drain()) == [("+I", 1, "a2"), ("+I", 4, "d"), ("-D", 2, "b")]
        # without read.changelog the kinds are not shown (Paimon's Spark connector): a delete
        # is a plain row of the deleted values
        assert sorted(plain.drain()) == [(1, "a2"), (2, "b"), (4, "d")]

        write(path, [("+I", 5, "e")])
        assert kinds.drain() == [("+I", 5, "e")]
    finally:
        kinds.stop()
        plain.stop()


def test_input_changelog_streams_every_written_row_in_sequence_order(spark, warehouse, tmp_path):
    with_log = make_table(warehouse, "log", **{"changelog-producer": "input"})
    without = make_table(warehouse, "nolog")
    for p in (with_log, without):
        write(p, [("+I", 1, "a"), ("+I", 2, "b")])
    a = Stream(spark, with_log, str(tmp_path / "a"), **{"read.changelog": "true", "scan.mode": "latest"})
    b = Stream(spark, without, str(tmp_path / "b"), **{"read.changelog": "true", "scan.mode": "latest"})
    try:
        assert a.drain() == [] and b.drain() == []  # latest: nothing of what was there
        change = [("-U", 1, "a"), ("+U", 1, "a1"), ("+I", 1, "a2"), ("-D", 2, "b"), ("+I", 7, "x")]
        for p in (with_log, without):
            write(p, change)
            table_of(p).compact(full=True)
        rows = a.drain()
        assert sorted(rows) == sorted(change)  # the changelog: every row as written
        assert [r for r in rows if r[1] == 1] == change[:3]  # one key's rows in the order written
        # without a changelog producer: the data files, merged in the writer's buffer
        assert sorted(b.drain()) == [("+I", 1, "a2"), ("+I", 7, "x"), ("-D", 2, "b")]
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_compaction_changelog_streams_retract_pairs(spark, warehouse, tmp_path, producer):
    path = make_table(warehouse, producer.replace("-", "_"), **{"changelog-producer": producer, "write-only": "false"})
    write(path, [("+I", 1, "a"), ("+I", 2, "b")])
    s = Stream(spark, path, str(tmp_path / producer), **{"read.changelog": "true", "scan.mode": "from-snapshot",
                                                         "scan.snapshot-id": "1"})
    try:
        assert sorted(s.drain()) == [("+I", 1, "a"), ("+I", 2, "b")]
        write(path, [("+I", 1, "a2"), ("-D", 2, "b"), ("+I", 3, "c")])
        rows = s.drain()
        assert sorted(rows) == sorted([("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b"), ("+I", 3, "c")])
        assert [r for r in rows if r[1] == 1] == [("-U", 1, "a"), ("+U", 1, "a2")]  # in order
    finally:
        s.stop()


def test_each_scan_mode_starts_where_paimon_does(spark, warehouse, tmp_path):
    path = make_table(warehouse)
    write(path, [("+I", 1, "a"), ("+I", 2, "b")])
    time.sleep(0.01)  # snapshot 2 is committed after snapshot 1's millisecond
    s2 = write(path, [("+I", 3, "c")])
    write(path, [("-D", 1, "a")])
    t2 = table_of(path).snapshot(s2).time_millis
    modes = {
        "latest-full": {},
        "latest": {"scan.mode": "latest"},
        "from-snapshot": {"scan.snapshot-id": str(s2)},
        "from-snapshot-full": {"scan.mode": "from-snapshot-full", "scan.snapshot-id": str(s2)},
        "from-timestamp": {"timestamp-millis": str(t2)},
    }
    streams = {m: Stream(spark, path, str(tmp_path / m), **{"read.changelog": "true", **o})
               for m, o in modes.items()}
    try:
        first = {m: s.drain() for m, s in streams.items()}
        # a bucket's whole-snapshot rows come before its changes (one task reads both)
        assert [r for r in first["from-snapshot-full"] if r[1] == 1] == [("+I", 1, "a"), ("-D", 1, "a")]
        assert {m: sorted(rows) for m, rows in first.items()} == {
            "latest-full": [("+I", 2, "b"), ("+I", 3, "c")],
            "latest": [],
            "from-snapshot": [("+I", 3, "c"), ("-D", 1, "a")],
            "from-snapshot-full": [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c"), ("-D", 1, "a")],
            "from-timestamp": [("+I", 3, "c"), ("-D", 1, "a")],
        }
        write(path, [("+U", 2, "b2")])
        assert {m: s.drain() for m, s in streams.items()} == {m: [("+U", 2, "b2")] for m in modes}
    finally:
        for s in streams.values():
            s.stop()


def test_restarts_resume_without_duplicates_or_gaps(spark, warehouse, tmp_path):
    """Every run restarts from the checkpoint. The first run fails in its first micro-batch:
    the restart reads that batch again as it was planned (scan.mode=latest resolved once), so
    the snapshot written in between is not skipped."""
    path = make_table(warehouse)
    write(path, [("+I", 1, "a")])
    ck = str(tmp_path / "ck")
    batches: list[list[tuple]] = []

    def collect(df, batch_id):
        if batch_id == 0 and not os.path.exists(tmp_path / "failed"):
            (tmp_path / "failed").write_text("")
            raise RuntimeError("first batch fails")
        batches.append([tuple(r) for r in df.collect()])

    def run() -> list[tuple]:
        seen = len(batches)
        (spark.readStream.format("paimon_py").option("scan.mode", "latest").option("read.changelog", "true")
         .load(path).writeStream.foreachBatch(collect).option("checkpointLocation", ck)
         .trigger(availableNow=True).start().awaitTermination())
        return [r for b in batches[seen:] for r in b]

    with pytest.raises(Exception, match="first batch fails"):
        run()
    write(path, [("+I", 2, "b")])  # after the failed batch's offsets were logged
    assert run() == [("+I", 2, "b")]
    write(path, [("+I", 3, "c")])
    write(path, [("+I", 1, "a1")])
    assert sorted(run()) == [("+I", 1, "a1"), ("+I", 3, "c")]
    table_of(path).compact(full=True)
    write(path, [("-D", 2, "b")])
    assert run() == [("-D", 2, "b")]
    assert run() == []


def test_a_resumed_stream_whose_next_snapshot_expired_fails_naming_it(spark, warehouse, tmp_path):
    path = make_table(warehouse)
    write(path, [("+I", 1, "a")])
    ck = str(tmp_path / "ck")

    def run():
        return Stream(spark, path, ck, available_now=True).query

    run().awaitTermination()  # read up to snapshot 1
    for i in range(2, 6):
        write(path, [("+I", i, "x")])
    table_of(path).expire_snapshots(retain_min=2, retain_max=2, time_retained_ms=0)
    assert table_of(path).snapshot_manager().earliest_snapshot_id() == 4
    with pytest.raises(Exception, match=r"snapshot 2, the next one this stream must read, has expired .*"
                                        r"scan\.snapshot-id=4"):
        run().awaitTermination()


def test_batch_reads_with_read_changelog_add_rowkind(spark, warehouse):
    path = make_table(warehouse)
    write(path, [("+I", 1, "a"), ("+I", 2, "b")])
    write(path, [("+U", 1, "a1"), ("-D", 2, "b")])
    df = spark.read.format("paimon_py").option("read.changelog", "true").load(path)
    assert df.columns == ["rowkind", "id", "v"]
    assert [tuple(r) for r in df.collect()] == [("+I", 1, "a1")]

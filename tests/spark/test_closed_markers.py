"""The Spark write bookkeeping under <warehouse>/.paimon_py_spark/closed/ is pruned once settled.

A closed marker turns away task attempts of a write that start after its close and makes
stragglers delete their own files; it must stay while an attempt of the write may still run, and
goes once its write closed CLOSED_MARKER_RETENTION_SECONDS before a newer close of the table.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import impl  # noqa: E402
from impl.jobs.tracking import CLOSED_MARKER_RETENTION_SECONDS, WriteClosedError, WriteIntent  # noqa: E402


@pytest.fixture
def table(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]))


def close(table, write_id: str) -> WriteIntent:
    intent = WriteIntent.for_table(table, write_id)
    intent.delete_unreferenced(set(), grace_seconds=0.0, settle_seconds=0.0)
    return intent


def age(marker: str, seconds: float) -> None:
    """Make ``marker`` look as if its write closed ``seconds`` ago."""
    st = os.stat(marker)
    os.utime(marker, (st.st_atime - seconds, st.st_mtime - seconds))


def test_a_close_prunes_settled_markers_and_keeps_recent_ones(table):
    old, recent = close(table, "w-old"), close(table, "w-recent")
    age(old.closed_marker, CLOSED_MARKER_RETENTION_SECONDS + 60)
    age(recent.closed_marker, CLOSED_MARKER_RETENTION_SECONDS - 60)

    new = close(table, "w-new")

    assert not os.path.exists(old.closed_marker)
    assert os.path.exists(recent.closed_marker)  # an attempt of it could in principle still run
    assert os.path.exists(new.closed_marker)
    assert sorted(os.listdir(os.path.dirname(new.closed_marker))) == ["w-new", "w-recent"]


def test_many_writes_leave_a_bounded_number_of_markers(table):
    markers_dir = os.path.dirname(WriteIntent.for_table(table, "_").closed_marker)
    for i in range(20):
        close(table, f"w{i}")
        # every earlier write is long settled by the time the next one closes
        for name in os.listdir(markers_dir):
            age(os.path.join(markers_dir, name), CLOSED_MARKER_RETENTION_SECONDS + 1)
    assert os.listdir(markers_dir) == ["w19"]


def test_a_recent_marker_still_turns_away_a_late_attempt(table):
    closed = close(table, "w1")
    close(table, "w2")  # pruning on the next close must not take a marker within its retention
    with pytest.raises(WriteClosedError):
        with closed.task_attempt("p0-a1-t9", table.file_io.fs):
            raise AssertionError("the attempt must not start")


def test_pruning_touches_only_this_tables_markers(tmp_path, table):
    cat = impl.Catalog(str(tmp_path / "wh"))
    other = cat.create_table("db.u", schema=pa.schema([("id", pa.int64())]))
    foreign = close(other, "w-other")
    age(foreign.closed_marker, CLOSED_MARKER_RETENTION_SECONDS * 10)
    close(table, "w-mine")
    assert os.path.exists(foreign.closed_marker)

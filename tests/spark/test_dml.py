"""Row-level DELETE / UPDATE / MERGE INTO from Spark (impl.spark.dml) on a primary-key table and a
deletion-vector append table: impl's read is the oracle; pypaimon and Paimon Java read the same rows."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import impl  # noqa: E402
import impl.spark  # noqa: E402
from impl.errors import (  # noqa: E402
    IndexFileConflictError,  # noqa: E402
    TableNotExistError,
    UnsupportedTableFeatureError,
)
from impl.manifest.records import IndexType  # noqa: E402
from impl.spark import dml  # noqa: E402
from impl.store.core import bucket_index_files  # noqa: E402

SCHEMA = "id long, name string, score double, dt string"
TABLES = {"pk": {"primary_keys": ["dt", "id"], "options": {"bucket": "2"}},
          "dv": {"options": {"deletion-vectors.enabled": "true"}}}


def _rows(n=120):
    return [(i, f"n{i}", float(i), f"d{i % 3}") for i in range(n)]


def _create(spark, warehouse, name, rows=None):
    path = os.path.join(warehouse, "db.db", name)
    kind = TABLES["pk" if name.startswith("pk") else "dv"]
    impl.spark.write_dataframe(spark.createDataFrame(rows or _rows(), SCHEMA), path, partition_keys=["dt"], **kind)
    return path


def _table(warehouse, name):
    return impl.Catalog(warehouse).get_table(f"db.{name}")


def _read(table) -> list[tuple]:
    return sorted((r["id"], r["name"], r["score"], r["dt"]) for r in table.to_arrow().to_pylist())


def _expected() -> list[tuple]:
    rows = {(r[3], r[0]): r for r in _rows()}
    for k in [k for k in rows if k[1] < 10]:  # delete
        del rows[k]
    for k in [k for k in rows if k[1] >= 110]:  # update
        i, name, score, dt = rows[k]
        rows[k] = (i, name.upper(), score + 100, dt)
    for i, name, score, dt in _source():  # merge: a match named 'x' is deleted, other matches updated,
        if (dt, i) in rows and name == "x":  # every source row without a match inserted
            del rows[(dt, i)]
        else:
            rows[(dt, i)] = (i, name, score, dt)
    return sorted(rows.values())


def _source():
    return [(20, "m20", -1.0, "d2"), (21, "m21", -2.0, "d0"), (22, "x", 0.0, "d1"),
            (500, "new", 5.0, "d2"), (501, "x", 0.0, "d0")]


@pytest.fixture(scope="module")
def changed(spark, tmp_path_factory):
    """Both tables after one DELETE, one UPDATE and one MERGE INTO; their results by table name."""
    warehouse = str(tmp_path_factory.mktemp("dml") / "wh")
    results = {}
    for name in ("pk", "dv"):
        path = _create(spark, warehouse, name)
        src = spark.createDataFrame(_source(), SCHEMA)
        results[name] = (
            impl.spark.delete(spark, path, "id < 10"),
            impl.spark.update(spark, path, "id >= 110", set={"name": "upper(name)", "score": "score + 100"}),
            impl.spark.merge_into(spark, path, src, on="t.id = s.id AND t.dt = s.dt", when_matched_update="*",
                                  when_matched_delete="s.name = 'x'", when_not_matched_insert="*"),
        )
    return warehouse, results


def test_delete_update_and_merge_give_the_same_rows_on_both_table_kinds(changed):
    warehouse, results = changed
    expected = _expected()
    for name in ("pk", "dv"):
        t = _table(warehouse, name)
        assert _read(t) == expected, name
        deleted, updated, merged = results[name]
        assert (deleted.deleted_rows, updated.updated_rows) == (10, 10), name
        assert (merged.deleted_rows, merged.updated_rows, merged.inserted_rows) == (1, 2, 2), name
        # one commit each, on top of the table's first snapshot
        assert [r.snapshot_ids for r in results[name]] == [(2,), (3,), (4,)], name
    dv = _table(warehouse, "dv")
    # the append table's DELETE wrote deletion vectors only: no data file
    assert dv.snapshot_manager().snapshot(2).delta_record_count == 0
    vectors = [f for fs in bucket_index_files(dv.core, dv.latest_snapshot()).values() for f in fs]
    assert vectors and all(f.index_type == IndexType.DELETION_VECTORS for f in vectors)
    assert sum(r.cardinality for f in vectors for r in f.deletion_vector_ranges) == 10 + 10 + 3


def test_fast_read_path_reads_the_changed_tables(spark, changed):
    """impl.spark.read_table (Spark's own Parquet reader, vectors applied in the JVM) gives the rows
    impl reads: on the append table every file is read natively, minus what its vectors delete."""
    warehouse, _ = changed
    for name in ("pk", "dv"):
        path = os.path.join(warehouse, "db.db", name)
        rows = impl.spark.read_table(spark, path).collect()
        assert sorted((r["id"], r["name"], r["score"], r["dt"]) for r in rows) == _read(_table(warehouse, name)), name


def test_pypaimon_reads_the_changed_tables(changed):
    from pypaimon_env import read_with_pypaimon

    warehouse, _ = changed
    for name in ("pk", "dv"):
        theirs = read_with_pypaimon(warehouse, f"db.{name}", sort_by=["dt", "id"])
        assert sorted((r["id"], r["name"], r["score"], r["dt"]) for r in theirs) == _read(_table(warehouse, name))


@pytest.mark.paimon_java
def test_paimon_java_reads_the_changed_tables(changed, tmp_path):
    from paimon_java import JavaServer, harness_classpath, tools_missing

    reason = tools_missing()
    if reason:
        pytest.skip(f"Paimon Java harness needs a JDK and Maven: {reason}")
    warehouse, _ = changed
    with JavaServer(harness_classpath()) as java:
        for name in ("pk", "dv"):
            out = tmp_path / f"{name}.parquet"
            java.call("read", warehouse=warehouse, table=f"db.{name}", out=str(out))
            theirs = pq.read_table(out).select(["id", "name", "score", "dt"]).to_pylist()
            assert sorted(tuple(r.values()) for r in theirs) == _read(_table(warehouse, name)), name


def test_compaction_applies_and_drops_the_deletion_vectors(spark, warehouse):
    path = _create(spark, warehouse, "dv_compact", _rows(60))
    impl.spark.write_dataframe(spark.createDataFrame(_rows(60), SCHEMA).filter("id < 30"), path)
    impl.spark.delete(spark, path, "id % 4 = 0")
    t = _table(warehouse, "dv_compact")
    before = _read(t)
    assert len(before) == 90 - 23 and bucket_index_files(t.core, t.latest_snapshot())
    impl.spark.compact(spark, path, full=True)
    t = _table(warehouse, "dv_compact")
    assert _read(t) == before
    assert not any(bucket_index_files(t.core, t.latest_snapshot()).values())  # every vector went with its file


def test_a_delete_racing_a_compaction_fails_and_writes_nothing(spark, warehouse, monkeypatch):
    path = _create(spark, warehouse, "dv_race", _rows(60))
    impl.spark.write_dataframe(spark.createDataFrame(_rows(60), SCHEMA), path)  # two files per partition
    t = _table(warehouse, "dv_race")
    real = dml._deletion_vector_messages

    def compact_meanwhile(target, gone):
        messages = real(target, gone)
        _table(warehouse, "dv_race").compact(full=True)  # another job rewrites the files the delete read
        return messages

    monkeypatch.setattr(dml, "_deletion_vector_messages", compact_meanwhile)
    with pytest.raises(IndexFileConflictError):
        impl.spark.delete(spark, path, "id < 20")
    monkeypatch.undo()
    t = _table(warehouse, "dv_race")
    assert len(_read(t)) == 120 and t.latest_snapshot().commit_kind.name == "COMPACT"
    assert not os.path.exists(t.core.paths.index_dir) or os.listdir(t.core.paths.index_dir) == []  # removed
    assert impl.spark.delete(spark, path, "id < 20").deleted_rows == 40  # run again: applies
    assert len(_read(_table(warehouse, "dv_race"))) == 80


def test_bad_input_is_refused_by_name_before_anything_is_written(spark, warehouse):
    pk = _create(spark, warehouse, "pk_bad", _rows(12))
    dv = _create(spark, warehouse, "dv_bad", _rows(12))
    plain = os.path.join(warehouse, "db.db", "plain")
    impl.spark.write_dataframe(spark.createDataFrame(_rows(12), SCHEMA), plain)
    cat = impl.Catalog(warehouse)
    cat.create_table("db.pk_ignore", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                     options={"bucket": "1", "ignore-delete": "true"})
    twice = spark.createDataFrame([(1, "a", 0.0, "d1"), (1, "b", 0.0, "d1")], SCHEMA)
    cases = [
        (lambda: impl.spark.delete(spark, pk, "nope > 1"), dml.RowLevelChangeError, "nope"),
        (lambda: impl.spark.delete(spark, dv, "id >>> 1"), dml.RowLevelChangeError, "condition"),
        (lambda: impl.spark.update(spark, dv, "id = 1", set={"nope": "1"}), dml.RowLevelChangeError, "'nope'"),
        (lambda: impl.spark.update(spark, dv, "id = 1", set={"name": "nope + 1"}), dml.RowLevelChangeError, "nope"),
        (lambda: impl.spark.update(spark, pk, "id = 1", set={"id": "2"}), dml.RowLevelChangeError, "primary-key"),
        (lambda: impl.spark.delete(spark, os.path.join(warehouse, "db.db", "missing"), "id = 1"),
         TableNotExistError, "db.missing"),
        (lambda: impl.spark.delete(spark, plain, "id = 1"), UnsupportedTableFeatureError, "deletion-vectors.enabled"),
        (lambda: impl.spark.delete(spark, os.path.join(warehouse, "db.db", "pk_ignore"), "id = 1"),
         UnsupportedTableFeatureError, "ignore-delete"),
        (lambda: impl.spark.merge_into(spark, dv, twice, on="t.id = s.id", when_matched_update="*"),
         dml.MergeCardinalityError, "2 source rows"),
        (lambda: impl.spark.merge_into(spark, pk, twice, on="t.id = s.id", when_matched_delete=True),
         dml.MergeCardinalityError, "2 source rows"),
    ]
    tables = [_table(warehouse, n) for n in ("pk_bad", "dv_bad", "plain")]
    snapshots = [t.latest_snapshot().id for t in tables]
    for call, error, words in cases:
        with pytest.raises(error, match=words):
            call()
    assert [_table(warehouse, n).latest_snapshot().id for n in ("pk_bad", "dv_bad", "plain")] == snapshots
    for t in tables:
        assert len(_read(t)) == 12
    assert cat.get_table("db.pk_ignore").latest_snapshot() is None


def test_update_after_an_alter_without_a_commit_writes_under_the_current_schema(spark, warehouse):
    """The change reads the latest snapshot pinned, which comes in its own (older) schema as
    time travel does: its columns are matched to the current schema by field id."""
    from impl.schema import SchemaChange as SC

    path = _create(spark, warehouse, "pk_alter", _rows(12))
    impl.Catalog(warehouse).alter_table("db.pk_alter", [SC.rename_column("name", "label"),
                                                         SC.add_column("extra", pa.int32())])
    result = impl.spark.update(spark, path, "id < 3", set={"label": "upper(label)", "extra": "7"})
    assert result.updated_rows == 3
    rows = sorted(_table(warehouse, "pk_alter").to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["label"], r["extra"]) for r in rows[:4]] == [(0, "N0", 7), (1, "N1", 7), (2, "N2", 7),
                                                                      (3, "n3", None)]

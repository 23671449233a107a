"""pypaimon 2.1.0 (the official Python client, in its own venv) reads tables Spark wrote here."""

from __future__ import annotations

import datetime as dt
import os

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


from pypaimon_env import READ_TABLE, run_pypaimon  # noqa: E402

import impl.spark  # noqa: E402


@pytest.fixture(scope="module")
def pypaimon_python():
    from pypaimon_env import pypaimon_python as build

    return build()  # built once per machine (cached, file-locked)


def test_pypaimon_reads_append_and_primary_key_tables_written_by_spark(spark, warehouse, pypaimon_python):
    rows = [(k, f"name-{k}", k * 0.5, dt.date(2024, 3, 1) + dt.timedelta(days=k % 5), f"d{k % 3}")
            for k in range(60)]
    df = spark.createDataFrame(rows, "id long, name string, score double, day date, dt string")
    append_path = os.path.join(warehouse, "db.db", "events")
    df.write.format("paimon_py").option("partition", "dt").mode("append").save(append_path)

    pk_path = os.path.join(warehouse, "db.db", "users")
    impl.spark.write_dataframe(df, pk_path, primary_keys=["dt", "id"], partition_keys=["dt"],
                               options={"bucket": "3"})
    upd = spark.createDataFrame([(k, f"new-{k}", -1.0, dt.date(2025, 1, 1), f"d{k % 3}", "+U") for k in range(0, 60, 4)]
                                + [(k, None, None, None, f"d{k % 3}", "-D") for k in range(1, 60, 10)],
                                "id long, name string, score double, day date, dt string, op string")
    impl.spark.write_dataframe(upd, pk_path, row_kind_column="op")
    impl.spark.compact(spark, pk_path, full=True)

    for name, path in (("db.events", append_path), ("db.users", pk_path)):
        ours = sorted(spark.read.format("paimon_py").load(path).collect(), key=lambda r: (r.dt, r.id))
        theirs = run_pypaimon(READ_TABLE, warehouse=warehouse, table=name, sort_by=["dt", "id"])
        theirs.sort(key=lambda r: (r["dt"], r["id"]))
        assert len(theirs) == len(ours) > 0, name
        for a, b in zip(ours, theirs, strict=True):
            assert (a.dt, a.id, a.name, a.score, str(a.day) if a.day else None) == \
                (b["dt"], b["id"], b["name"], b["score"], str(b["day"]) if b["day"] is not None else None), name
    users = {r.id: r.name for r in spark.read.format("paimon_py").load(pk_path).collect()}
    assert users[4] == "new-4" and 11 not in users and users[5] == "name-5"

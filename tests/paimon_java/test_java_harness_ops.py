"""The harness ops that the interop matrix does not use yet, so that cells for schema evolution,
tags and deletion vectors can be added once impl supports them: each op is checked through what
Paimon Java itself then reports (metadata, reads), on the Java side only."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from paimon_java import JavaHarnessError

pytestmark = pytest.mark.paimon_java


def write_parquet(path, rows, schema) -> str:
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return str(path)


def test_alter_tag_and_time_travel(java, tmp_path):
    wh, t = str(tmp_path / "wh"), "db.t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    java.call("create_table", warehouse=wh, table=t, fields=[["id", "BIGINT"], ["v", "STRING"]],
              primary_keys=["id"], table_options={"bucket": "1"})
    java.call("write", warehouse=wh, table=t, parquet=write_parquet(tmp_path / "a.parquet", [{"id": 1, "v": "a"}], schema),
              commit_user="u", identifier=1)
    java.call("create_tag", warehouse=wh, table=t, name="t1", snapshot_id=1)
    java.call("alter", warehouse=wh, table=t, changes=[{"op": "add_column", "name": "w", "type": "INT"},
                                                      {"op": "set_option", "key": "snapshot.num-retained.min", "value": "5"},
                                                      {"op": "rename_column", "name": "v", "new_name": "v2"}])
    schema2 = pa.schema([("id", pa.int64()), ("v2", pa.string()), ("w", pa.int32())])
    java.call("write", warehouse=wh, table=t,
              parquet=write_parquet(tmp_path / "b.parquet", [{"id": 2, "v2": "b", "w": 7}], schema2),
              commit_user="u", identifier=2)
    meta = java.call("metadata", warehouse=wh, table=t)
    assert meta["tags"] == ["t1"] and meta["schema_id"] == 1
    assert [(s["id"], s["schema_id"]) for s in meta["snapshots"]] == [(1, 0), (2, 1)]

    out = tmp_path / "latest.parquet"
    java.call("read", warehouse=wh, table=t, out=str(out))
    assert sorted(pq.read_table(out).to_pylist(), key=lambda r: r["id"]) == \
        [{"id": 1, "v2": "a", "w": None}, {"id": 2, "v2": "b", "w": 7}]
    # Time travel reads with the schema the tagged snapshot was written with (Paimon's rule).
    java.call("read", warehouse=wh, table=t, out=str(out), tag="t1")
    assert pq.read_table(out).to_pylist() == [{"id": 1, "v": "a"}]

    with pytest.raises(JavaHarnessError) as e:
        java.call("alter", warehouse=wh, table=t, changes=[{"op": "no_such_change"}])
    assert e.value.error_class == "java.lang.IllegalArgumentException" and "no_such_change" in e.value.message


def test_deletion_vector_table_compacts_level0_away(java, tmp_path):
    """A deletion-vector table: each write waits for Paimon's lookup compaction (so nothing stays
    on level 0, which its batch scans skip), deletes land as deletion vectors, reads merge them."""
    wh, t = str(tmp_path / "wh"), "db.dv"
    schema = pa.schema([("id", pa.int64()), ("op", pa.string()), ("v", pa.string())])
    java.call("create_table", warehouse=wh, table=t, fields=[["id", "BIGINT"], ["op", "STRING"], ["v", "STRING"]],
              primary_keys=["id"], table_options={"bucket": "1", "deletion-vectors.enabled": "true",
                                                  "rowkind.field": "op"})
    java.call("write", warehouse=wh, table=t, commit_user="u", identifier=1,
              parquet=write_parquet(tmp_path / "a.parquet", [{"id": i, "op": "+I", "v": f"a{i}"} for i in range(5)],
                                    schema))
    java.call("write", warehouse=wh, table=t, commit_user="u", identifier=2,
              parquet=write_parquet(tmp_path / "b.parquet", [{"id": 1, "op": "-D", "v": None},
                                                             {"id": 2, "op": "+I", "v": "b2"}], schema))
    meta = java.call("metadata", warehouse=wh, table=t)
    latest = str(meta["snapshots"][-1]["id"])
    assert meta["snapshots"][-1]["kind"] == "COMPACT"
    assert all(f["level"] > 0 for f in meta["files"][latest])
    out = tmp_path / "dv.parquet"
    java.call("read", warehouse=wh, table=t, out=str(out))
    assert sorted((r["id"], r["v"]) for r in pq.read_table(out).to_pylist()) == \
        [(0, "a0"), (2, "b2"), (3, "a3"), (4, "a4")]


def test_batch_write_overwrite_and_one_shot_cli(java, tmp_path):
    """BatchWriteBuilder writes (identifier Long.MAX_VALUE, as Paimon's batch commits use) and a
    static-partition overwrite; and the one-shot command line answers the same protocol line."""
    import json
    import subprocess

    from paimon_java import MAIN_CLASS, harness_classpath

    wh, t = str(tmp_path / "wh"), "db.b"
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    java.call("create_table", warehouse=wh, table=t, fields=[["dt", "STRING"], ["id", "BIGINT"]],
              partition_keys=["dt"], table_options={"bucket": "-1"})
    rows = [{"dt": "a", "id": 1}, {"dt": "b", "id": 2}]
    java.call("write", warehouse=wh, table=t, batch=True, parquet=write_parquet(tmp_path / "a.parquet", rows, schema))
    java.call("write", warehouse=wh, table=t, batch=True, overwrite={"dt": "a"},
              parquet=write_parquet(tmp_path / "o.parquet", [{"dt": "a", "id": 9}], schema))
    meta = java.call("metadata", warehouse=wh, table=t)
    assert [(s["kind"], s["commit_identifier"]) for s in meta["snapshots"]] == \
        [("APPEND", 2**63 - 1), ("OVERWRITE", 2**63 - 1)]
    assert sorted((r["dt"], r["id"]) for r in java.call("read_rows", warehouse=wh, table=t)) == [("a", 9), ("b", 2)]

    proc = subprocess.run(["java", "-cp", harness_classpath(), MAIN_CLASS, "snapshot_ids",
                           json.dumps({"warehouse": wh, "table": t})], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == {"id": 0, "ok": True, "result": [1, 2]}

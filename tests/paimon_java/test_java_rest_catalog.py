"""Paimon Java's REST catalog (RESTCatalog, RESTSnapshotCommit; harness op ``rest``) against
impl's REST catalog server, beside impl's own REST client: each creates a table, writes and
commits through the server, and reads what the other wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from impl import CatalogFactory
from impl.rest import RESTCatalogServer

pytestmark = pytest.mark.paimon_java

TOKEN = "java-rest-token"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_java_and_impl_share_a_rest_catalog(java, tmp_path):
    with RESTCatalogServer(str(tmp_path / "wh"), token=TOKEN) as server:
        catalog = CatalogFactory.create({"metastore": "rest", "uri": server.uri, "warehouse": "wh", "token": TOKEN})
        catalog.create_database("db")
        catalog.create_table("db.from_impl", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "2"}).write_arrow(
            pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
        args = {"uri": server.uri, "warehouse": "wh", "token": TOKEN}
        before = server.service.commit_counts["published"]

        # Java writes to impl's table (an upsert and an insert) and reads it back
        out = java.call("rest", **args, table="db.from_impl", rows=[{"id": 3, "v": "J"}, {"id": 9, "v": "j"}],
                        read=True)
        expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "J"}, {"id": 9, "v": "j"}]
        assert sorted(out["rows"], key=lambda r: r["id"]) == expected
        assert sorted(out["snapshot_ids"]) == [1, 2]
        assert catalog.get_table("db.from_impl").to_arrow().sort_by("id").to_pylist() == expected

        # Java creates a table through the server; impl appends to it; Java reads both commits
        java.call("rest", **args, table="db.from_java", rows=[{"id": 1, "n": 10, "s": "x"}], create={
            "fields": [["id", "BIGINT"], ["n", "INT"], ["s", "STRING"]], "primary_keys": ["id"],
            "options": {"bucket": "1"}})
        catalog.get_table("db.from_java").write_arrow(
            pa.table({"id": pa.array([2], pa.int64()), "n": pa.array([20], pa.int32()), "s": ["y"]}))
        out = java.call("rest", **args, table="db.from_java", read=True)
        assert sorted(out["rows"], key=lambda r: r["id"]) == [{"id": 1, "n": 10, "s": "x"},
                                                             {"id": 2, "n": 20, "s": "y"}]
        assert sorted(out["snapshot_ids"]) == [1, 2]
        # every commit of both writers was published by the server
        assert server.service.commit_counts["published"] == before + 3


RACER = """
import json, sys
import pyarrow as pa
from impl import CatalogFactory
p = json.loads(sys.argv[1])
table = CatalogFactory.create(p["options"]).get_table("db.race")
for i in range(p["commits"]):
    table.write_arrow(pa.table({"id": pa.array([p["writer"] * 100 + i], pa.int64()), "v": ["impl"]}))
"""


def test_java_races_impl_processes_through_the_server(java, tmp_path):
    """Paimon Java commits 4 times while 2 impl processes commit 4 times each, all through the
    server, to one append table: 12 rows, 12 contiguous snapshots."""
    commits = 4
    with RESTCatalogServer(str(tmp_path / "wh"), token=TOKEN) as server:
        options = {"metastore": "rest", "uri": server.uri, "warehouse": "wh", "token": TOKEN}
        catalog = CatalogFactory.create(options)
        catalog.create_database("db")
        catalog.create_table("db.race", pa.schema([("id", pa.int64()), ("v", pa.string())]))
        racers = [subprocess.Popen([sys.executable, "-c", RACER, json.dumps(
            {"options": options, "writer": w + 1, "commits": commits})], cwd=ROOT, stderr=subprocess.PIPE, text=True)
            for w in range(2)]
        for i in range(commits):
            java.call("rest", uri=server.uri, warehouse="wh", token=TOKEN, table="db.race",
                      rows=[{"id": i, "v": "java"}])
        for p in racers:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-3000:]
        table = catalog.get_table("db.race")
        ids = sorted(table.to_arrow().column("id").to_pylist())
        assert ids == sorted([i for i in range(commits)] + [w * 100 + i for w in (1, 2) for i in range(commits)])
        assert [s.id for s in table.snapshots()] == list(range(1, 3 * commits + 1))

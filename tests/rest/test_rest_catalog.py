"""impl's REST catalog server and client (impl.rest), and pypaimon 2.1.0's REST catalog against
the same server: catalog operations, typed errors, commits published by the server, and racing
commits from several processes that lose nothing. One server for the module."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pyarrow as pa
import pytest
from pypaimon_env import PYPAIMON_VERSION, PeerUnavailable, run_pypaimon
from pypaimon_rust_env import Unavailable, run_pypaimon_rust

import impl
from impl import CatalogFactory, SchemaChange
from impl.errors import (
    CatalogAuthError,
    CatalogUnavailableError,
    DatabaseAlreadyExistError,
    DatabaseNotEmptyError,
    DatabaseNotExistError,
    TableAlreadyExistError,
    TableNotExistError,
    UnsupportedCatalogOptionError,
)
from impl.rest import RESTCatalog, RESTCatalogServer

TOKEN = "rest-test-token"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with RESTCatalogServer(str(tmp_path_factory.mktemp("rest-wh")), token=TOKEN) as srv:
        yield srv


def options(server, **extra) -> dict[str, str]:
    return {"metastore": "rest", "uri": server.uri, "warehouse": "wh", "token.provider": "bear", "token": TOKEN,
            **extra}


@pytest.fixture(scope="module")
def catalog(server):
    return CatalogFactory.create(options(server))


def test_catalog_operations_and_paging(server, catalog):
    assert isinstance(catalog, RESTCatalog)
    assert isinstance(impl.Catalog("wh", options={k: v for k, v in options(server).items() if k != "warehouse"}),
                      RESTCatalog)  # impl.Catalog(name, options) chooses the metastore too
    catalog.create_database("ops")
    with pytest.raises(DatabaseAlreadyExistError):
        catalog.create_database("ops")
    catalog.create_database("ops", ignore_if_exists=True)
    for name in ("c", "a", "b"):
        catalog.create_table(f"ops.{name}", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(TableAlreadyExistError):
        catalog.create_table("ops.a", SCHEMA)
    assert catalog.list_tables("ops") == ["a", "b", "c"]
    first, token = catalog.list_tables_paged("ops", max_results=2)
    rest, last = catalog.list_tables_paged("ops", max_results=2, page_token=token)
    assert (first, rest, last) == (["a", "b"], ["c"], None)
    one, token = catalog.list_databases_paged(max_results=1)
    assert len(one) == 1 and (token == one[0]) == (len(catalog.list_databases()) > 1)
    # the server's filesystem warehouse is what impl's own catalog sees
    local = impl.Catalog(server.service.warehouse_url)
    assert local.list_tables("ops") == ["a", "b", "c"]

    catalog.alter_table("ops.a", [SchemaChange.add_column("w", pa.int32()), SchemaChange.set_option("snapshot.num-retained.max", "50")])
    table = catalog.get_table("ops.a")
    assert table.schema.id == 1 and table.schema.field_names == ["id", "v", "w"]
    assert table.schema.options["snapshot.num-retained.max"] == "50"
    catalog.rename_table("ops.b", "ops.b2")
    catalog.drop_table("ops.c")
    assert catalog.list_tables("ops") == ["a", "b2"]
    with pytest.raises(DatabaseNotEmptyError):
        catalog.drop_database("ops")
    catalog.drop_database("ops", cascade=True)
    assert "ops" not in catalog.list_databases()


def test_typed_errors(server, catalog, tmp_path):
    catalog.create_database("errs", ignore_if_exists=True)
    with pytest.raises(TableNotExistError, match="errs.nope"):
        catalog.get_table("errs.nope")
    with pytest.raises(DatabaseNotExistError, match="nodb"):
        catalog.list_tables("nodb")
    with pytest.raises(DatabaseNotExistError):
        catalog.create_table("nodb.t", SCHEMA)
    with pytest.raises(CatalogAuthError, match=server.uri):
        CatalogFactory.create(options(server, token="wrong"))
    with pytest.raises(UnsupportedCatalogOptionError, match="token.provider"):
        CatalogFactory.create(options(server, **{"token.provider": "dlf"}))
    # a server that is down: a typed error naming the URI, within the timeout
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(CatalogUnavailableError, match=down):
        RESTCatalog(options(server, uri=down), timeout_seconds=2)
    # a server that answers garbage, and one that never answers
    with _fake_server(b"<html>not paimon</html>") as garbage, _fake_server(None) as silent:
        with pytest.raises(CatalogUnavailableError, match="not JSON"):
            RESTCatalog(options(server, uri=garbage), timeout_seconds=2)
        with pytest.raises(CatalogUnavailableError, match="within 0.5 s"):
            RESTCatalog(options(server, uri=silent), timeout_seconds=0.5)


class _fake_server:
    """An HTTP server on 127.0.0.1 answering every GET with ``body`` (None: never answering)."""

    def __init__(self, body: bytes | None):
        release = threading.Event()
        self.release = release

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                if body is None:
                    release.wait(10)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.http = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.http.shutdown()
        self.http.server_close()


def test_commits_are_published_by_the_server(server, catalog):
    catalog.create_database("pub", ignore_if_exists=True)
    table = catalog.create_table("pub.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    before = server.service.commit_counts["published"]
    table.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    table.write_arrow(pa.table({"id": [3, 4], "v": ["C", "d"]}))
    assert server.service.commit_counts["published"] == before + 2
    rows = catalog.get_table("pub.t").to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "C"}, {"id": 4, "v": "d"}]
    assert catalog.get_table("pub.t$snapshots").to_arrow().num_rows == 2
    # a commit naming another table id (a table of that name dropped and re-created since) is refused
    snapshot = json.loads(catalog.get_table("pub.t").latest_snapshot().to_json_bytes())
    body = {"tableId": "not-this-table", "snapshot": {**snapshot, "id": snapshot["id"] + 1}, "statistics": []}
    _, error = catalog.client.call("POST", catalog.paths.commit("pub", "t"), "commit", body)
    assert error is not None and error.code == 404
    assert catalog.get_table("pub.t").latest_snapshot().id == snapshot["id"]


PYPAIMON_ROUND_TRIP = """
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
cat = CatalogFactory.create(params["options"])
cat.create_database("pp", True)
schema = Schema.from_pyarrow_schema(pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                                    options={"bucket": "1"})
cat.create_table("pp.from_pypaimon", schema, False)
t = cat.get_table("pp.from_pypaimon")
wb = t.new_batch_write_builder(); w = wb.new_write(); c = wb.new_commit()
w.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["x", "y"]}))
c.commit(w.prepare_commit()); w.close(); c.close()
t = cat.get_table("pp.from_impl")
rb = t.new_read_builder()
result = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: r["id"])
"""


def test_pypaimon_rest_catalog_round_trip(server, catalog):
    catalog.create_database("pp", ignore_if_exists=True)
    catalog.create_table("pp.from_impl", SCHEMA, primary_keys=["id"], options={"bucket": "2"}).write_arrow(
        pa.table({"id": [5, 6], "v": ["e", "f"]}))
    before = server.service.commit_counts["published"]
    try:
        read_by_pypaimon = run_pypaimon(PYPAIMON_ROUND_TRIP, options=options(server))
    except PeerUnavailable as e:
        pytest.skip(f"pypaimon {PYPAIMON_VERSION} cannot be installed here: {e}")
    assert read_by_pypaimon == [{"id": 5, "v": "e"}, {"id": 6, "v": "f"}]
    assert server.service.commit_counts["published"] == before + 1  # pypaimon's commit went through the server
    assert catalog.get_table("pp.from_pypaimon").to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "v": "x"}, {"id": 2, "v": "y"}]


RACER = """
import json, sys
import pyarrow as pa
from impl import CatalogFactory
p = json.loads(sys.argv[1])
table = CatalogFactory.create(p["options"]).get_table("race.t")
for i in range(p["commits"]):
    table.write_arrow(pa.table({"writer": pa.array([p["writer"]] * 3, pa.int32()), "seq": pa.array([i] * 3, pa.int32())}))
"""

PYPAIMON_RACER = """
import pyarrow as pa
from pypaimon import CatalogFactory
t = CatalogFactory.create(params["options"]).get_table("race.t")
for i in range(params["commits"]):
    wb = t.new_batch_write_builder(); w = wb.new_write(); c = wb.new_commit()
    w.write_arrow(pa.table({"writer": pa.array([params["writer"]] * 3, pa.int32()), "seq": pa.array([i] * 3, pa.int32())}))
    c.commit(w.prepare_commit()); w.close(); c.close()
result = True
"""


def test_racing_commits_through_the_server_lose_nothing(server, catalog):
    """3 impl processes and 1 pypaimon process commit 3 times each to one append table, at once:
    every commit lands as its own snapshot and every row is there."""
    processes, commits = 3, 3
    catalog.create_database("race", ignore_if_exists=True)
    catalog.create_table("race.t", pa.schema([("writer", pa.int32()), ("seq", pa.int32())]))
    racers = [subprocess.Popen([sys.executable, "-c", RACER, json.dumps(
        {"options": options(server), "writer": w, "commits": commits})], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        for w in range(processes)]
    pypaimon_writer = processes
    try:
        run_pypaimon(PYPAIMON_RACER, options=options(server), writer=pypaimon_writer, commits=commits)
        writers = processes + 1
    except PeerUnavailable:
        writers = processes
    for p in racers:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    table = catalog.get_table("race.t")
    rows = table.to_arrow()
    assert rows.num_rows == writers * commits * 3
    seen = {(r["writer"], r["seq"]) for r in rows.to_pylist()}
    assert seen == {(w, i) for w in range(writers) for i in range(commits)}
    assert [s.id for s in table.snapshots()] == list(range(1, writers * commits + 1))


PYPAIMON_READ = """
from pypaimon import CatalogFactory
t = CatalogFactory.create(params["options"]).get_table("s3db.t")
rb = t.new_read_builder()
result = sorted(r["id"] for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())
"""


def test_s3_warehouse_clients_bring_their_own_credentials(s3_server, s3_bucket):
    """A server over an S3 warehouse hands out none of its own storage keys (data tokens are off
    and empty unless credential vending is configured: tests/rest/test_server_hardening.py):
    clients reach the store with their own storage options."""
    with RESTCatalogServer(f"s3://{s3_bucket}/wh", options=s3_server.options(), token=TOKEN) as server:
        assert "data-token.enabled" not in CatalogFactory.create(options(server)).options
        catalog = CatalogFactory.create(options(server, **s3_server.options()))
        catalog.create_database("s3db")
        catalog.create_table("s3db.t", pa.schema([("id", pa.int64())])).write_arrow(pa.table({"id": [1, 2]}))
        table = catalog.get_table("s3db.t")
        assert table.file_io.is_object_store and table.to_arrow().column("id").to_pylist() == [1, 2]
        assert server.service.commit_counts["published"] == 1
        try:
            assert run_pypaimon(PYPAIMON_READ, options=options(server, **s3_server.options())) == [1, 2]
        except PeerUnavailable as e:
            pytest.skip(f"pypaimon {PYPAIMON_VERSION} cannot be installed here: {e}")


def test_commit_refused_by_the_server_is_not_retried(server, catalog):
    """A writer whose token the server stops accepting: its commit is refused (401), it gets
    CommitRefusedError at once (no retries), and no snapshot was published."""
    catalog.create_database("refused", ignore_if_exists=True)
    table = catalog.create_table("refused.t", SCHEMA)
    server.service.token = "rotated"
    try:
        with pytest.raises(impl.CommitRefusedError, match="HTTP 401"):
            table.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    finally:
        server.service.token = TOKEN
    assert catalog.get_table("refused.t").latest_snapshot() is None


PYPAIMON_RUST_ROUND_TRIP = """
import pyarrow as pa
from pypaimon_rust.datafusion import PaimonCatalog
t = PaimonCatalog(params["options"]).get_table("rust.t")
rb = t.new_read_builder()
before = sorted(r["id"] for r in pa.Table.from_batches(rb.new_read().read(rb.new_scan().plan().splits())).to_pylist())
wb = t.new_batch_write_builder()
w = wb.new_write()
w.write_arrow(pa.record_batch({"id": pa.array([7], pa.int64()), "v": pa.array(["r"])}))
wb.new_commit().commit(w.prepare_commit())
result = before
"""


def test_pypaimon_rust_rest_catalog_round_trip(server, catalog):
    catalog.create_database("rust", ignore_if_exists=True)
    catalog.create_table("rust.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"}).write_arrow(
        pa.table({"id": [1, 2], "v": ["a", "b"]}))
    before = server.service.commit_counts["published"]
    try:
        assert run_pypaimon_rust(PYPAIMON_RUST_ROUND_TRIP, options=options(server)) == [1, 2]
    except Unavailable as e:
        pytest.skip(f"pypaimon-rust cannot be installed here: {e}")
    assert server.service.commit_counts["published"] == before + 1  # its commit went through the server
    assert catalog.get_table("rust.t").to_arrow().sort_by("id").column("id").to_pylist() == [1, 2, 7]


def test_command_line_server(tmp_path):
    """``python -m impl.rest --warehouse PATH --port 0 --token T`` serves until stopped (with a
    warning that the token is visible in the process's command line)."""
    proc = subprocess.Popen([sys.executable, "-m", "impl.rest", "--warehouse", str(tmp_path / "wh"), "--port", "0",
                             "--token", TOKEN], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        uri = proc.stdout.readline().rsplit(" ", 1)[-1].strip()
        catalog = CatalogFactory.create({"metastore": "rest", "uri": uri, "warehouse": "wh", "token": TOKEN})
        catalog.create_database("cli")
        assert catalog.list_databases() == ["cli"]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert "--token on the command line is visible to every local user" in err


def test_create_keeps_the_exact_paimon_types(server, catalog):
    """A client's VARCHAR(10) / CHAR(3) / DECIMAL(12, 2) columns are created as asked (arrow,
    impl's own schema language, has no string lengths), keys NOT NULL."""
    catalog.create_database("types", ignore_if_exists=True)
    fields = [{"id": 0, "name": "k", "type": "CHAR(3)"}, {"id": 1, "name": "s", "type": "VARCHAR(10)"},
              {"id": 2, "name": "d", "type": "DECIMAL(12, 2)"}, {"id": 3, "name": "n", "type": "BIGINT"}]
    body = {"identifier": {"database": "types", "object": "t"},
            "schema": {"fields": fields, "primaryKeys": ["k"], "partitionKeys": [], "options": {"bucket": "1"}}}
    answer, error = catalog.client.call("POST", catalog.paths.tables("types"), "create", body)
    assert error is None
    schema = catalog.get_table("types.t").schema
    assert [str(f.type) for f in schema.fields] == ["CHAR(3) NOT NULL", "VARCHAR(10)", "DECIMAL(12, 2)", "BIGINT"]

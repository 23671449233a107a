"""Commit latency through impl's REST catalog server (``impl.rest``) against a direct impl commit
on the same store, and racing commits through the server.

Each side makes N sequential one-row APPEND commits (``table.write_arrow``) to its own table on
the same store: the direct side publishes with an atomic create on the file system, the REST
side posts the snapshot to a server in this process (``POST .../commit``: the server checks
the snapshot and creates it). p50 / p99 / mean ms of each, and the ratio. ``--s3`` runs both
on an S3 API server (moto on 127.0.0.1) too. The race: P processes x M commits to one table
through the server at once; rows and snapshots counted, and the server's answers (published /
lost, each lost race a client retry).

    python benchmarks/rest_commit.py [--commits 200] [--s3] [--race-processes 4] [--race-commits 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from impl import Catalog, CatalogFactory  # noqa: E402 - after the path set-up, for a checkout run
from impl.rest import RESTCatalogServer  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def timed_commits(table, commits: int) -> list[float]:
    out = []
    for i in range(commits):
        data = pa.table({"id": [i], "v": [f"r{i}"]})
        start = time.perf_counter()
        table.write_arrow(data)
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(ms: list[float]) -> str:
    ordered = sorted(ms)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ms):7.2f}  p99 {p99:7.2f}  mean {statistics.fmean(ms):7.2f}"


def compare(label: str, warehouse: str, options: dict[str, str], commits: int) -> None:
    direct = Catalog(f"{warehouse}/direct", options=options)
    direct.create_database("db")
    direct_ms = timed_commits(direct.create_table("db.t", SCHEMA), commits)
    with RESTCatalogServer(f"{warehouse}/rest", options=options, no_auth=True) as server:
        # the server hands out no storage keys of its own: the client brings the store's options
        rest = CatalogFactory.create({"metastore": "rest", "uri": server.uri, "warehouse": "wh", **options})
        rest.create_database("db")
        rest_ms = timed_commits(rest.create_table("db.t", SCHEMA), commits)
        assert rest.get_table("db.t").to_arrow().num_rows == commits
        assert server.service.commit_counts["published"] == commits
    print(f"{label}: {commits} sequential one-row commits, ms")
    print(f"  direct impl commit   {summary(direct_ms)}")
    print(f"  through REST server  {summary(rest_ms)}")
    print(f"  ratio (p50)          {statistics.median(rest_ms) / statistics.median(direct_ms):.2f}x")


RACER = """
import json, sys
import pyarrow as pa
from impl import CatalogFactory
p = json.loads(sys.argv[1])
table = CatalogFactory.create({"metastore": "rest", "uri": p["uri"], "warehouse": "wh"}).get_table("db.race")
for i in range(p["commits"]):
    table.write_arrow(pa.table({"writer": pa.array([p["writer"]], pa.int32()), "seq": pa.array([i], pa.int32())}))
"""


def race(warehouse: str, processes: int, commits: int) -> None:
    with RESTCatalogServer(f"{warehouse}/race", no_auth=True) as server:
        catalog = CatalogFactory.create({"metastore": "rest", "uri": server.uri, "warehouse": "wh"})
        catalog.create_database("db")
        catalog.create_table("db.race", pa.schema([("writer", pa.int32()), ("seq", pa.int32())]))
        start = time.perf_counter()
        racers = [subprocess.Popen([sys.executable, "-c", RACER, json.dumps(
            {"uri": server.uri, "writer": w, "commits": commits})], cwd=ROOT) for w in range(processes)]
        codes = [p.wait() for p in racers]
        wall_s = time.perf_counter() - start
        table = catalog.get_table("db.race")
        rows = table.to_arrow()
        pairs = {(r["writer"], r["seq"]) for r in rows.to_pylist()}
        ids = [s.id for s in table.snapshots()]
        counts = server.service.commit_counts
    expected = processes * commits
    ok = (codes == [0] * processes and rows.num_rows == expected and len(pairs) == expected
          and ids == list(range(1, expected + 1)))
    print(f"race: {processes} processes x {commits} commits through the server, {wall_s:.1f} s wall "
          f"(process start-up included)")
    print(f"  rows {rows.num_rows} / {expected}, distinct (writer, seq) {len(pairs)}, snapshots {len(ids)} "
          f"(contiguous: {ids == list(range(1, len(ids) + 1))})")
    print(f"  server answers: published {counts['published']}, lost races {counts['lost']} (each retried by "
          f"its client)  -> {'ok: nothing lost' if ok else 'LOST COMMITS'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--s3", action="store_true", help="also on an S3 API server (moto on 127.0.0.1)")
    parser.add_argument("--race-processes", type=int, default=4)
    parser.add_argument("--race-commits", type=int, default=10)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        compare("local disk", tmp, {}, args.commits)
        if args.s3:
            from simulation.embedded_s3 import EmbeddedS3  # optional: only with --s3

            s3 = EmbeddedS3()
            store = s3.start()
            try:
                compare("S3 (moto on 127.0.0.1)", f"s3://{store.bucket}", store.options(), max(10, args.commits // 4))
            finally:
                s3.stop()
        race(tmp, args.race_processes, args.race_commits)


if __name__ == "__main__":
    main()

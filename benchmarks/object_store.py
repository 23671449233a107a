"""Commits on an S3 API server against local disk: requests per commit and commit latency.

One writer makes N sequential APPEND commits (two rows each, write-only primary-key table, so
no COMPACT snapshot) into a table on an S3 server (moto's, on 127.0.0.1) and, as the baseline
in the same run, into a table on local disk. For commits 10-20 and N-10..N it prints:

- requests per commit by kind (GET, HEAD, PUT, LIST, DELETE), counted on the wire by an HTTP
  proxy in front of the server (retries included), and by impl's own FileIO counters;
- p50 commit latency on the S3 server and on local disk.

The claim checked: a warm committer's APPEND commit costs a constant number of requests,
whatever the history length (early == late), and makes no LIST. Its last line is
``requests per commit (median): early E, late L (constant), LIST 0`` (or names what differs).

    python benchmarks/object_store.py [--commits 500] [--endpoint http://host:port --bucket B]

Without ``--endpoint`` it starts moto's server itself (needs ``pip install -e ".[test]"``).
Latency on moto is dominated by the server's own Python request handling; a real store adds
network round trips instead, so compare request counts across stores, latencies within a run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter

import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "_support"))
sys.path.insert(0, os.path.join(HERE, ".."))

import impl  # noqa: E402
from fault_injection.s3_proxy import S3FaultProxy  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def run_commits(catalog: impl.Catalog, commits: int, proxy: S3FaultProxy | None) -> dict:
    table = catalog.create_table("db.bench", schema=SCHEMA, primary_keys=["id"],
                                 options={"bucket": "1", "write-only": "true"})
    latencies_ms: list[float] = []
    wire: list[Counter] = []
    client: list[dict[str, int]] = []
    # one streaming writer and committer for the whole run: a warm committer, as a job is
    builder = table.new_stream_write_builder().with_commit_user("bench")
    write, commit = builder.new_write(), builder.new_commit()
    for i in range(commits):
        write.write_arrow(pa.table({"id": [i, i + 1_000_000], "v": ["a", "b"]}, schema=SCHEMA))
        messages = write.prepare_commit(i)
        if proxy is not None:
            proxy.reset_counts()
        before = table.file_io.requests.snapshot()
        t0 = time.perf_counter()
        commit.commit(messages, i)
        latencies_ms.append((time.perf_counter() - t0) * 1000)
        client.append(table.file_io.requests.since(before))
        wire.append(Counter(proxy.counts()) if proxy is not None else Counter())
    write.close()
    commit.close()
    return {"latencies_ms": latencies_ms, "wire": wire, "client": client}


def window(values: list, start: int, end: int) -> list:
    return values[start:end]


def mean_counts(rows: list) -> dict[str, float]:
    total: Counter = Counter()
    for r in rows:
        total.update(r)
    return {k: round(v / max(1, len(rows)), 2) for k, v in sorted(total.items())}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=500)
    p.add_argument("--endpoint", help="an S3 endpoint to use instead of starting moto's server")
    p.add_argument("--bucket", help="an existing bucket on --endpoint")
    p.add_argument("--dir", help="local warehouse directory for the baseline (default: a temp dir)")
    args = p.parse_args()
    n = args.commits
    if n < 40:
        p.error("--commits must be >= 40 (windows 10-20 and the last 10)")

    server = None
    if args.endpoint:
        endpoint, bucket = args.endpoint, args.bucket
        if not bucket:
            p.error("--endpoint needs --bucket")
        from s3_server import S3Endpoint

        s3 = S3Endpoint(endpoint)
    else:
        from s3_server import S3Server

        server = S3Server()
        s3 = server.start()
        bucket = s3.new_bucket("bench")
    proxy = S3FaultProxy(s3.endpoint).start()
    try:
        s3_catalog = impl.Catalog(f"s3://{bucket}/warehouse", options=s3.options(proxy.endpoint))
        s3_catalog.create_database("db", ignore_if_exists=True)
        s3_result = run_commits(s3_catalog, n, proxy)
    finally:
        proxy.stop()
        if server is not None:
            server.stop()
    with tempfile.TemporaryDirectory(dir=args.dir) as local_dir:
        local_catalog = impl.Catalog(local_dir)
        local_catalog.create_database("db")
        local_result = run_commits(local_catalog, n, None)

    early, late = (10, 20), (n - 10, n)
    print(f"load average: {os.getloadavg()[0]:.2f}  commits: {n}")
    print(f"{'window':<14}{'store':<8}{'p50 ms':>9}  requests per commit (wire)        client-side counts")
    for name, (a, b) in (("commits 10-20", early), (f"commits {n - 10}-{n}", late)):
        for store, res in (("s3", s3_result), ("local", local_result)):
            p50 = statistics.median(window(res["latencies_ms"], a, b))
            wire = mean_counts(window(res["wire"], a, b)) if store == "s3" else {}
            client = mean_counts(window(res["client"], a, b))
            print(f"{name:<14}{store:<8}{p50:>9.1f}  {str(wire):<34}{client}")
    s3_early = statistics.median(window(s3_result["latencies_ms"], *early))
    local_early = statistics.median(window(local_result["latencies_ms"], *early))
    print(f"p50 commit latency, commits 10-20: s3 server {s3_early:.1f} ms, local disk {local_early:.1f} ms "
          f"({s3_early / local_early:.1f}x)")
    # medians: an occasional minor manifest merge adds a PUT to one commit in many
    early_total = statistics.median(sum(c.values()) for c in window(s3_result["wire"], *early))
    late_total = statistics.median(sum(c.values()) for c in window(s3_result["wire"], *late))
    lists = sum(c.get("LIST", 0) for c in s3_result["wire"][10:])
    verdict = "constant" if early_total == late_total else "GROWS" if late_total > early_total else "shrinks"
    print(f"requests per commit (median): early {early_total:g}, late {late_total:g} ({verdict}), LIST {lists}")
    return 0 if late_total <= early_total and lists == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

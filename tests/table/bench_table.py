"""Write / read throughput of append and primary-key tables (a script, not a test).

    python tests/table/bench_table.py [rows]

1M rows of (id int64, k string, v double, ts int64) by default, on local disk.
"""

from __future__ import annotations

import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

import impl


def make(n: int) -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table({
        "id": pa.array(rng.permutation(n), pa.int64()),
        "k": pa.array([f"key-{i:08d}" for i in rng.integers(0, n, n)]),
        "v": rng.normal(size=n),
        "ts": pa.array(rng.integers(1_700_000_000_000, 1_800_000_000_000, n), pa.int64()),
    })


def timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    print(f"{label:<48} {dt:7.3f} s")
    return out, dt


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    data = make(n)
    with tempfile.TemporaryDirectory() as wh:
        cat = impl.Catalog(wh)
        cat.create_database("db")
        for name, kw in [("append", {}), ("pk", {"primary_keys": ["id"], "options": {"bucket": "4"}})]:
            t = cat.create_table(f"db.{name}", schema=data.schema, **kw)
            timed(f"{name}: write + commit {n:,} rows", lambda t=t: t.write_arrow(data))
            out, _ = timed(f"{name}: read all", lambda t=t: t.to_arrow())
            assert out.num_rows == n
            pb = t.new_read_builder().new_predicate_builder()
            out, _ = timed(f"{name}: read id < 1000 (filter)", lambda t=t, pb=pb: t.to_arrow(pb.less_than("id", 1000)))
            assert out.num_rows == 1000
            if name == "pk":
                timed(f"{name}: upsert 10% again", lambda t=t: t.write_arrow(data.slice(0, n // 10)))
                out, _ = timed(f"{name}: merge-on-read (2 runs per bucket)", lambda t=t: t.to_arrow())
                assert out.num_rows == n
                timed(f"{name}: full compaction", lambda t=t: t.compact(full=True))
                out, _ = timed(f"{name}: read after compaction", lambda t=t: t.to_arrow())
                assert out.num_rows == n


if __name__ == "__main__":
    main()

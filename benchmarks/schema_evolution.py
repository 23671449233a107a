"""Cost of reading files written under an older schema (field-id mapping, renames, casts).

Two identical tables (append, and primary key with 4 buckets) get the same rows in a few
commits. One is then altered (a column renamed, an INT widened to BIGINT, a column dropped, a
column added), so every one of its files is read through the field-id mapping and a cast; the
other is read as written (the baseline). Prints the median wall time of a full read of each and
the ratio, and the same after a full compaction of the altered table (old files rewritten under
the current schema).

    python benchmarks/schema_evolution.py [--rows 1000000] [--commits 5] [--repeat 5] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import impl
from impl import SchemaChange as SC


def data(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(rng.permutation(rows * 4)[:rows], pa.int64()),
        "a": pa.array(rng.integers(-2 ** 31, 2 ** 31 - 1, rows), pa.int32()),
        "v": pa.array(rng.random(rows)),
        "s": pa.array([f"s{i % 1000}" for i in range(rows)]),
        "gone": pa.array(rng.integers(0, 100, rows), pa.int64()),
    })


def timed_read(table, repeat: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = table.to_arrow().num_rows
        times.append(time.perf_counter() - t0)
    return statistics.median(times), n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="schema-bench-")
    cat = impl.Catalog(os.path.join(root, "wh"))
    cat.create_database("db", ignore_if_exists=True)
    schema = data(1, 0).schema
    per_commit = args.rows // args.commits
    print(f"load average {os.getloadavg()}; {args.rows} rows in {args.commits} commits per table")
    for kind, kw in (("append", {}), ("primary-key", {"primary_keys": ["id"], "options": {"bucket": "4"}})):
        names = [f"db.{kind.replace('-', '_')}_{x}" for x in ("base", "evolved")]
        for name in names:
            t = cat.create_table(name, schema, **kw)
            for c in range(args.commits):
                t.write_arrow(data(per_commit, c))
        cat.alter_table(names[1], [SC.rename_column("s", "label"), SC.update_column_type("a", pa.int64()),
                                   SC.drop_column("gone"), SC.add_column("n", pa.int32())])
        base, nb = timed_read(cat.get_table(names[0]), args.repeat)
        evolved_table = cat.get_table(names[1])
        evolved, ne = timed_read(evolved_table, args.repeat)
        assert nb == ne
        evolved_table.compact(full=True)
        compacted, nc = timed_read(cat.get_table(names[1]), args.repeat)
        assert nc == nb
        print(f"{kind:12s} read as written {base * 1000:8.1f} ms | old files through schema 1 "
              f"{evolved * 1000:8.1f} ms ({evolved / base:.2f}x) | after compaction {compacted * 1000:8.1f} ms "
              f"({compacted / base:.2f}x)")


if __name__ == "__main__":
    main()

"""A selective query through DuckDB, Polars and Ray with pushdown, against reading everything first.

    PYTHONPATH=. python benchmarks/pushdown.py [--rows-per-file 20000] [--repeat 5] [--no-pypaimon] [--no-ray]
                                               [--dir /tmp/x]

Two tables of 100 data files, ``dt`` partitions, ``id``, a string and a double column: an
append table (10 partitions x 10 commits, ``id`` contiguous per file, so file statistics rule
files out) and a primary-key table on (dt, id) (10 partitions x 10 buckets, one file each; a
key equality picks the bucket). The query: ``select id, v, x from t where dt = 'd3' and id =
<an id of one file>``. The same query through:

- DuckDB on ``table.to_duckdb(con, "t")`` (pushdown) and on ``pa.table(table)`` (every row read
  first, then DuckDB over the Arrow table);
- Polars on ``table.to_polars()`` (pushdown) and on ``pl.DataFrame(pa.table(table))``;
- Ray Data on ``impl.ray.PaimonDatasource(table, filter=...)`` (pushdown) and on every file with
  Ray filtering the rows (``ds.filter(expr=...)``), and pypaimon 2.1.0's ``to_ray`` with the
  filter in its read builder: ``ray_read.py``'s sides, each in its own process with its own
  local Ray runtime (2 CPUs), all columns collected with ``to_arrow_refs`` (``--no-ray``: skip);
- pypaimon 2.1.0's ``to_duckdb`` (subprocess in its own venv, built once with duckdb): the
  splits of an unfiltered read builder (as its docs use it), and with the filter given to its
  read builder by hand.

Files read: data files opened (impl's ``TableRead.files_read``; impl.ray: the files of its
read tasks; pypaimon: the files of the splits it planned, all of which ``to_duckdb`` and
``to_ray`` read). Time: median wall ms of ``--repeat`` runs
after a warm-up, each on a freshly opened table (manifests read again), imports excluded.
Rows are checked equal across all sides.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

PARTITIONS = 10
COMMITS = 10


def build_tables(warehouse: str, rows_per_file: int) -> int:
    """The two 100-file tables; returns the id the query looks for (in partition d3, one file)."""
    import numpy as np
    import pyarrow as pa

    import impl

    cat = impl.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])
    t = cat.create_table("db.app", schema=schema, partition_keys=["dt"])
    next_id = 0
    for _ in range(COMMITS):  # each commit: one file per partition
        parts = []
        for p in range(PARTITIONS):
            ids = np.arange(next_id, next_id + rows_per_file, dtype=np.int64)
            next_id += rows_per_file
            parts.append(pa.table({"dt": pa.array([f"d{p}"] * len(ids)), "id": ids,
                                   "v": pa.array(ids.astype(str)), "x": ids * 0.5}, schema=schema))
        t.write_arrow(pa.concat_tables(parts))
    pk = cat.create_table("db.pk", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "10", "write-only": "true"})
    for p in range(PARTITIONS):  # the append table's rows, one commit per partition: one file a bucket
        ids = np.concatenate([np.arange(c * PARTITIONS * rows_per_file + p * rows_per_file,
                                        c * PARTITIONS * rows_per_file + (p + 1) * rows_per_file, dtype=np.int64)
                              for c in range(COMMITS)])
        pk.write_arrow(pa.table({"dt": pa.array([f"d{p}"] * len(ids)), "id": ids,
                                 "v": pa.array(ids.astype(str)), "x": ids * 0.5}, schema=schema))
    # partition d3 of the 6th commit (append); in partition d3 of the primary-key table too
    return 5 * PARTITIONS * rows_per_file + 3 * rows_per_file + rows_per_file // 2


def timed(fn, repeat: int) -> tuple[float, object]:
    fn()  # warm-up
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), out


PYPAIMON_SCRIPT = """
import time, statistics
import duckdb
from pypaimon import CatalogFactory
def run(pushed):
    catalog = CatalogFactory.create({"warehouse": params["warehouse"]})
    table = catalog.get_table(params["table"])
    rb = table.new_read_builder()
    if pushed:
        pb = rb.new_predicate_builder()
        rb = rb.with_filter(pb.and_predicates([pb.equal("dt", "d3"), pb.equal("id", params["id"])]))
    splits = rb.new_scan().plan().splits()
    con = rb.new_read().to_duckdb(splits, "t")
    rows = con.execute(params["sql"]).fetchall()
    return rows, sum(len(s.files) for s in splits)
result = {}
for pushed in (False, True):
    run(pushed)
    times = []
    for _ in range(params["repeat"]):
        start = time.perf_counter()
        rows, files = run(pushed)
        times.append((time.perf_counter() - start) * 1000)
    result["pushed" if pushed else "plain"] = [statistics.median(times), files, [list(r) for r in rows]]
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows-per-file", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-pypaimon", action="store_true")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--dir")
    args = ap.parse_args()
    warehouse = os.path.join(args.dir or tempfile.mkdtemp(prefix="pushdown-"), "wh")
    key = build_tables(warehouse, args.rows_per_file)
    links = None
    if not args.no_ray and not args.no_pypaimon:
        from ray_read import pypaimon_path

        links = pypaimon_path(Path(warehouse).parent / "pypaimon-links")
    print(f"tables: 100 data files each, {PARTITIONS} partitions, {args.rows_per_file} rows a file; "
          f"load {os.getloadavg()[0]:.1f}; median of {args.repeat}")
    for kind, name in (("append", "db.app"), ("primary key", "db.pk")):
        measure(kind, name, warehouse, key, args, links)


def ray_results(name: str, warehouse: str, key: int, args, links: str | None) -> dict:
    """``ray_read.py``'s sides on table ``name`` and this query: impl.ray with pushdown and
    reading every file, and pypaimon's ``to_ray`` (when ``links`` is its path), by label."""
    from ray_read import run_side

    query = {"q": [("dt", "=", "d3"), ("id", "=", key)]}
    out: dict = {}
    sides = [("impl", None, {"q": "Ray, pushdown (impl.ray)",
                             "q, no pushdown": "Ray over every file (impl.ray, Ray filters)"})]
    if links is not None:
        sides.append(("pypaimon", links, {"q": "pypaimon to_ray (filter in its read builder)"}))
    for side, path, labels in sides:
        try:
            got = run_side(side, warehouse, name, query, args.repeat, path, baseline="q" if side == "impl" else None)
        except Exception as e:  # noqa: BLE001 - report and go on with the other sides' figures
            print(f"{side} Ray side not run: {str(e)[-500:]}")
            continue
        for part, label in labels.items():
            r = got[part]
            if "sorted" not in r:
                raise AssertionError(f"{label}: {r['rows']} rows, expected a handful")
            idx = [r["columns"].index(c) for c in ("id", "v", "x")]
            out[label] = (r["ms"], r["files"], [tuple(row[i] for i in idx) for row in r["sorted"]])
    return out


def measure(kind: str, name: str, warehouse: str, key: int, args, links: str | None) -> None:
    import duckdb
    import polars as pl
    import pyarrow as pa

    import impl
    from impl.duckdb import TableDataset
    from impl.polars import PolarsSource

    sql = f"select id, v, x from t where dt = 'd3' and id = {key}"
    expr = (pl.col("dt") == "d3") & (pl.col("id") == key)
    cat = impl.Catalog(warehouse)
    files_read: dict[str, int] = {}

    def fresh():
        return cat.get_table(name)

    def duckdb_pushdown():
        d = TableDataset(fresh())
        con = duckdb.connect()
        con.register("t", d)
        rows = con.sql(sql).fetchall()
        files_read["duckdb"] = sum(s.files_read for s in d.scans)
        return rows

    def duckdb_everything():
        con = duckdb.connect()
        con.register("t", pa.table(fresh()))
        return con.sql(sql).fetchall()

    def polars_pushdown():
        src = PolarsSource(fresh())
        rows = src.lazy().filter(expr).select("id", "v", "x").collect().rows()
        files_read["polars"] = sum(s.files_read for s in src.scans)
        return rows

    def polars_everything():
        return pl.DataFrame(pa.table(fresh())).filter(expr).select("id", "v", "x").rows()

    total_files = sum(len(s.files) for s in fresh().new_read_builder().new_scan().plan().splits())
    print(f"\n{kind} table ({total_files} files): {sql}")
    results = {}
    for label, fn, files in (("DuckDB, pushdown (to_duckdb)", duckdb_pushdown, "duckdb"),
                             ("DuckDB over pa.table(t)", duckdb_everything, None),
                             ("Polars, pushdown (to_polars)", polars_pushdown, "polars"),
                             ("Polars over pa.table(t)", polars_everything, None)):
        ms, rows = timed(fn, args.repeat)
        results[label] = (ms, files_read[files] if files else total_files, [tuple(r) for r in rows])
    if not args.no_pypaimon:
        from fault_injection.conformance.pypaimon_env import PYPAIMON_VERSION, peer_python, run_in_python

        python = peer_python("pypaimon-duckdb", PYPAIMON_VERSION, [f"pypaimon=={PYPAIMON_VERSION}", "duckdb"])
        out = run_in_python(python, "pypaimon", PYPAIMON_SCRIPT, warehouse=warehouse, table=name, id=key, sql=sql,
                            repeat=args.repeat)
        assert isinstance(out, dict)
        for part, label in (("plain", "pypaimon to_duckdb (unfiltered splits)"),
                            ("pushed", "pypaimon to_duckdb (filter in its read builder)")):
            ms, files, rows = out[part]
            results[label] = (ms, files, [tuple(r) for r in rows])
    if not args.no_ray:
        results.update(ray_results(name, warehouse, key, args, links))
    want = results["DuckDB over pa.table(t)"][2]
    assert len(want) == 1, want
    base = {"DuckDB": results["DuckDB over pa.table(t)"][0], "Polars": results["Polars over pa.table(t)"][0],
            "Ray": results.get("Ray over every file (impl.ray, Ray filters)", (None,))[0]}
    print(f"{'side':50} {'files read':>10} {'ms':>9} {'vs read-all':>12}")
    for label, (ms, files, rows) in results.items():
        assert sorted(rows) == sorted(want), (label, rows, want)
        ref = base["Polars" if label.startswith("Polars") else "Ray" if "to_ray" in label or
                   label.startswith("Ray") else "DuckDB"]
        vs = f"{ref / ms:>11.1f}x" if ref else f"{'-':>12}"
        print(f"{label:50} {files:>10} {ms:>9.1f} {vs}")
    print("rows equal on every side")


if __name__ == "__main__":
    main()

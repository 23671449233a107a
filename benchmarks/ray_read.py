"""A selective query over Ray Data: impl.ray against pypaimon 2.1.0's ``to_ray`` on the same table.

    PYTHONPATH=. python benchmarks/ray_read.py [--rows-per-file 20000] [--repeat 5] [--no-pypaimon]

The table: ``spark_pruning.py``'s append table partitioned by ``dt``, 10 partitions x 10
commits = 100 data files, each commit a contiguous id range. Queries (each a plan on the driver, then a Ray read of the
planned splits, rows collected with ``to_arrow_refs``):

- ``dt = 'd3'`` (partition pruning: 10 of 100 files);
- ``id BETWEEN x AND x + 99`` (file statistics prune all but one file);
- the baseline: impl.ray reading every file, with the partition filter applied by Ray on the
  rows (``ds.filter(expr=...)``, vectorized), which is what reading without pushdown costs.

Files read: the data files of the planned splits. Time: the median wall time of ``--repeat``
runs after one warm-up run that starts the Ray workers, each run on a freshly opened table.
The sides take their queries as data (lists of (column, op, value) conjunctions), so
``pushdown.py`` runs them on its own tables and query. Each side runs in its own process with
its own local Ray runtime (``num_cpus=2``). pypaimon runs from the project's interpreter with
its venv's packages after the project's (its venv has no Ray): a link farm of the pypaimon
package and the libraries the project's venv lacks; rows are checked equal across sides.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "_support"))
sys.path.insert(0, str(ROOT / "benchmarks"))

TABLE = "db.app"


def build_table(warehouse: str, rows_per_file: int) -> int:
    """The 100-file append table of ``spark_pruning.py`` (``db.app``: 10 partitions x 10 commits,
    each commit a contiguous id range per partition); returns the first id of the key query."""
    from spark_pruning import build_tables

    build_tables(warehouse, rows_per_file)
    return 100 * rows_per_file // 2 + 7


def _ray_init():
    import logging

    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             logging_level=logging.ERROR)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    return ray


def collect(ray, ds):
    """Every row of ``ds`` as one Arrow table (blocks a Ray filter emptied have no columns)."""
    import pyarrow as pa

    return pa.concat_tables([b for b in ray.get(ds.to_arrow_refs()) if b.num_columns])


def _timed(run, repeat: int) -> tuple[float, object]:
    run()  # warm-up: starts the workers
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, out


# A query is data: a list of (column, op, value) conjunctions, op "=" (value a literal) or
# "between" (value [low, high], both included), so both sides (and pushdown.py) build it alike.
Query = list


def predicate(pb, query: Query):
    """``query``'s conjunctions as a predicate of ``pb`` (impl's and pypaimon's builders alike)."""
    preds = [pb.equal(c, v) if op == "=" else pb.between(c, v[0], v[1]) for c, op, v in query]
    return preds[0] if len(preds) == 1 else pb.and_predicates(preds)


def ray_expr(query: Query) -> str:
    """``query`` as a Ray Data filter expression (applied vectorized by Ray on the rows)."""
    return " and ".join(f"({c} == {v!r})" if op == "=" else f"({c} >= {v[0]!r}) and ({c} <= {v[1]!r})"
                        for c, op, v in query)


# rows up to this many travel back whole (sorted) to be compared; more, by count and id sum
ROWS_SHOWN = 1000


def summary(ms: float, files: int, rows) -> dict:
    out = {"ms": ms, "files": files, "rows": rows.num_rows, "ids": sum(rows.column("id").to_pylist()),
           "columns": rows.column_names}
    if rows.num_rows <= ROWS_SHOWN:
        out["sorted"] = sorted(map(list, zip(*(rows.column(c).to_pylist() for c in rows.column_names), strict=True)))
    return out


def side_impl(warehouse: str, table_name: str, queries: dict[str, Query], repeat: int,
              baseline: str | None = None) -> dict:
    """impl.ray: each named query pushed into the read; ``baseline``: also that query's rows from
    every file, filtered by Ray (reading without pushdown), as ``"<name>, no pushdown"``."""
    import impl
    import impl.ray

    ray = _ray_init()
    pb = impl.Catalog(warehouse).get_table(table_name).new_read_builder().new_predicate_builder()
    out = {}
    for name, query in queries.items():
        pred = predicate(pb, query)

        def run(pred=pred):
            table = impl.Catalog(warehouse).get_table(table_name)  # fresh: its manifests read again
            source = impl.ray.PaimonDatasource(table, filter=pred)
            ds = ray.data.read_datasource(source)
            return source.files_planned, collect(ray, ds)

        ms, (files, rows) = _timed(run, repeat)
        out[name] = summary(ms, files, rows)
    if baseline is not None:
        expr = ray_expr(queries[baseline])

        def run_all(expr=expr):
            source = impl.ray.PaimonDatasource(impl.Catalog(warehouse).get_table(table_name))
            ds = ray.data.read_datasource(source).filter(expr=expr)  # vectorized, by Ray
            return source.files_planned, collect(ray, ds)

        ms, (files, rows) = _timed(run_all, repeat)
        out[f"{baseline}, no pushdown"] = summary(ms, files, rows)
    ray.shutdown()
    return out


def side_pypaimon(warehouse: str, table_name: str, queries: dict[str, Query], repeat: int) -> dict:
    """pypaimon's ``to_ray``: each named query given to its read builder, plan and read timed."""
    from pypaimon import CatalogFactory

    ray = _ray_init()
    out = {}
    for name, query in queries.items():
        def run(query=query):
            table = CatalogFactory.create({"warehouse": warehouse}).get_table(table_name)  # fresh
            rb = table.new_read_builder()
            rb = rb.with_filter(predicate(rb.new_predicate_builder(), query))
            splits = rb.new_scan().plan().splits()
            ds = rb.new_read().to_ray(splits)
            return sum(len(s.files) for s in splits), collect(ray, ds)

        ms, (files, rows) = _timed(run, repeat)
        out[name] = summary(ms, files, rows)
    ray.shutdown()
    return out


def pypaimon_path(links: Path) -> str:
    """A directory of links to pypaimon 2.1.0 and the libraries of its venv that the project's
    interpreter cannot import, to put after the project's own packages."""
    from pypaimon_env import pypaimon_python

    python = pypaimon_python()
    site = subprocess.run([str(python), "-c", "import pypaimon, os; print(os.path.dirname(os.path.dirname(pypaimon.__file__)))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    links.mkdir(parents=True, exist_ok=True)
    for entry in Path(site).iterdir():
        name = entry.name
        if name.endswith((".dist-info", ".pth")) or name.startswith("_") or name in ("pip", "setuptools", "pkg_resources"):
            continue
        module = name.split(".", 1)[0]
        missing = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode != 0
        if (module == "pypaimon" or missing) and not (links / name).is_symlink():  # a --dir run again
            (links / name).symlink_to(entry)
    return str(links)


def run_side(side: str, warehouse: str, table_name: str, queries: dict[str, Query], repeat: int,
             extra_path: str | None = None, baseline: str | None = None) -> dict:
    """Run one side (``impl`` or ``pypaimon``) in its own process with its own Ray runtime;
    ``extra_path``: put after the project's packages (pypaimon's link farm)."""
    env = dict(os.environ)
    paths = [str(ROOT), *([extra_path] if extra_path else []), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    args = ["--side", side, "--warehouse", warehouse, "--table", table_name, "--queries", json.dumps(queries),
            "--repeat", str(repeat), *(["--baseline", baseline] if baseline else [])]
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{side} side failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def same_rows(a: dict, b: dict) -> bool:
    """Two sides' summaries of one query agree (whole rows when both carried them)."""
    if "sorted" in a and "sorted" in b:
        return a["sorted"] == b["sorted"]
    return (a["rows"], a["ids"]) == (b["rows"], b["ids"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows-per-file", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-pypaimon", action="store_true")
    ap.add_argument("--side", choices=["impl", "pypaimon"], help=argparse.SUPPRESS)
    ap.add_argument("--warehouse", help=argparse.SUPPRESS)
    ap.add_argument("--table", default=TABLE, help=argparse.SUPPRESS)
    ap.add_argument("--queries", help=argparse.SUPPRESS)
    ap.add_argument("--baseline", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.side:
        queries = json.loads(a.queries)
        if a.side == "impl":
            print(json.dumps(side_impl(a.warehouse, a.table, queries, a.repeat, a.baseline)))
        else:
            print(json.dumps(side_pypaimon(a.warehouse, a.table, queries, a.repeat)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        warehouse = os.path.join(tmp, "wh")
        key_from = build_table(warehouse, a.rows_per_file)
        queries = {"dt = 'd3'": [("dt", "=", "d3")], "id BETWEEN": [("id", "between", [key_from, key_from + 99])]}
        ours = run_side("impl", warehouse, TABLE, queries, a.repeat, baseline="dt = 'd3'")
        theirs: dict = {}
        if not a.no_pypaimon:
            try:
                theirs = run_side("pypaimon", warehouse, TABLE, queries, a.repeat, pypaimon_path(Path(tmp) / "pypaimon"))
            except Exception as e:  # noqa: BLE001 - report and go on with impl's figures
                print(f"pypaimon side not run: {str(e)[-500:]}")
    print(f"100-file append table, {a.rows_per_file:,} rows a file; load {os.getloadavg()[0]:.1f}; "
          f"median of {a.repeat} (ms)")
    print(f"{'query':<26}{'impl.ray ms':>12}{'files':>7}{'pypaimon ms':>13}{'files':>7}{'rows':>9}")
    for name, r in ours.items():
        p = theirs.get(name)
        same = "" if p is None or same_rows(p, r) else "  ROWS DIFFER"
        pp = f"{p['ms']:>13.0f}{p['files']:>7}" if p else f"{'-':>13}{'-':>7}"
        print(f"{name:<26}{r['ms']:>12.0f}{r['files']:>7}{pp}{r['rows']:>9,}{same}")


if __name__ == "__main__":
    main()

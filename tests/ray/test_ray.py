"""Ray Data over tables (impl.ray) on a local Ray runtime with two worker CPUs: reads equal impl's
own, filters and projections prune the plan, writes commit once (also when a task is retried),
failed writes leave nothing, and pypaimon 2.1.0 and Paimon Java read what Ray wrote."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")
pytest.importorskip("ray.data", reason="ray[data] is not installed (pip install -e '.[ray]')")

import impl  # noqa: E402
import impl.ray  # noqa: E402
from impl.errors import (  # noqa: E402
    InvalidPredicateError,
    SchemaMismatchError,  # noqa: E402
    TableNotExistError,
    UnsupportedTableFeatureError,
)
from impl.jobs.tracking import INTENT_ROOT  # noqa: E402
from impl.predicate.predicate import PredicateBuilder  # noqa: E402

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.fixture(scope="module", autouse=True)
def ray_runtime():
    """One local Ray runtime for the module; its workers import this checkout's ``impl`` (the
    raylet, started here, passes PYTHONPATH on to them)."""
    root = str(Path(impl.__file__).resolve().parents[1])
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *([old] if old else [])])
    # the failing sinks below are pickled by value: workers cannot import this test module
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 logging_level=logging.WARNING, object_store_memory=96 * 1024 * 1024)
    except Exception as e:  # noqa: BLE001 - whatever keeps Ray from starting here
        pytest.skip(f"a local Ray runtime cannot start here: {type(e).__name__}: {e}")
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    try:
        yield
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture
def catalog(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def batch(ids, dt="a", v="x") -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [dt if isinstance(dt, str) else dt(i) for i in ids], "id": ids,
                     "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*(t.column(n).to_pylist() for n in t.column_names), strict=True))


def collect(ds) -> pa.Table:
    return pa.concat_tables(ray.get(ds.to_arrow_refs()))


def data_files(table) -> set[str]:
    """Data files on disk under the table directory (every bucket of every partition)."""
    root = Path(table.path)
    return {p.name for p in root.rglob("data-*") if p.is_file()}


def intent_dir(table, sink) -> Path:
    """Where the write's task attempts logged their files (removed once the write is settled)."""
    return Path(table.path).parents[1] / INTENT_ROOT / "writes" / table.identifier / sink.job.write_id


def live_files(table) -> set[str]:
    rb = table.new_read_builder()
    return {f.file_name for s in rb.new_scan().plan().splits() for f in s.files}


def make_tables(catalog):
    """An append table, a partitioned append table and a primary-key table with updates and
    deletes, each of several commits."""
    app = catalog.create_table("db.app", schema=SCHEMA)
    part = catalog.create_table("db.part", schema=SCHEMA, partition_keys=["dt"])
    pk = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                              options={"bucket": "2"})
    for k in range(3):
        app.write_arrow(batch(range(k * 50, k * 50 + 50)))
        part.write_arrow(batch(range(k * 60, k * 60 + 60), dt=lambda i: f"d{i % 4}"))
        pk.write_arrow(batch(range(0, 90), dt=lambda i: f"d{i % 3}", v=f"w{k}-"))
    w = pk.new_batch_write_builder()
    wr, c = w.new_write(), w.new_commit()
    wr.write_arrow(batch(range(0, 90, 7), dt=lambda i: f"d{i % 3}"), row_kinds=pa.array([3] * 13, pa.int8()))
    c.commit(wr.prepare_commit())
    wr.close()
    return app, part, pk


def test_reads_equal_impl_reads_for_append_partitioned_and_primary_key_tables(catalog):
    for table in make_tables(catalog):
        source = impl.ray.PaimonDatasource(table.path)
        assert len(source.get_read_tasks(200)) == 2, table.identifier  # one read task per CPU
        assert len(impl.ray.PaimonDatasource(table.path, parallelism=3).get_read_tasks(200)) == 3
        got = collect(impl.ray.read_table(table.path, parallelism=2))
        assert got.schema == table.arrow_schema
        assert rows(got) == rows(table.to_arrow()), table.identifier
    pk = catalog.get_table("db.pk")
    merged = rows(collect(pk.to_ray()))
    assert len(merged) == 90 - 13 and ("d0", 0, "x0") not in merged and ("d1", 1, "w2-1") in merged


def test_filter_and_projection_are_pushed_to_the_plan(catalog):
    _, part, pk = make_tables(catalog)
    pb = PredicateBuilder(part.schema)
    pred = pb.and_(pb.equal("dt", "d1"), pb.less_than("id", 100))
    full = impl.ray.PaimonDatasource(part.path)
    pruned = impl.ray.PaimonDatasource(part.path, filter=pred, columns=["id", "v"])
    # the partition d1 (3 of 12 files), less the file whose ids are all >= 100 (statistics)
    assert (full.files_planned, pruned.files_planned) == (12, 2)
    ds = impl.ray.read_table(part.path, filter=pred, columns=["id", "v"])
    got = ds.to_pandas()
    assert list(got.columns) == ["id", "v"]
    assert sorted(got["id"]) == sorted(part.to_arrow(pred, ["id", "v"]).column("id").to_pylist())
    assert sorted(got["id"]) == [i for i in range(100) if i % 4 == 1]
    # pypaimon's shapes: a read builder, and TableRead.to_ray over splits planned by the caller
    rb = pk.new_read_builder().with_filter(PredicateBuilder(pk.schema).equal("dt", "d2")).with_projection(["id"])
    assert sorted(rb.to_ray().to_pandas()["id"]) == sorted(i for i in range(2, 90, 3) if i % 7)
    splits = rb.new_scan().plan().splits()
    assert sorted(rb.new_read().to_ray(splits).to_pandas()["id"]) == sorted(i for i in range(2, 90, 3) if i % 7)
    assert rb.with_limit(5).to_ray().count() == 5


def test_write_then_read_back_one_snapshot_append_and_overwrite(catalog):
    part = catalog.create_table("db.w", schema=SCHEMA, partition_keys=["dt"])
    ds = ray.data.from_arrow(batch(range(400), dt=lambda i: f"d{i % 2}")).repartition(4)
    out = impl.ray.write_dataset(ds, part.path)
    # routed: one file per partition (4 blocks used to make 4 files per partition they held)
    assert out.snapshot_ids == [1] and out.rows_written == 400 and out.files_written == 2
    assert rows(part.to_arrow()) == rows(batch(range(400), dt=lambda i: f"d{i % 2}"))
    assert data_files(part) == live_files(part)
    # overwrite the partitions receiving rows (dynamic partition overwrite)
    sink = impl.ray.PaimonDatasink(part.path, "overwrite")
    ray.data.from_arrow(batch(range(1000, 1010), dt="d0")).write_datasink(sink)
    assert sink.outcome is not None and sink.outcome.snapshot_ids == [2]
    got = rows(part.to_arrow())
    assert [r for r in got if r[0] == "d0"] == rows(batch(range(1000, 1010), dt="d0"))
    assert len([r for r in got if r[0] == "d1"]) == 200
    # a primary-key table: blocks with distinct keys, merged with what was there
    pk = catalog.create_table("db.wpk", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    pk.write_arrow(batch(range(10), v="old"))
    impl.ray.write_dataset(ray.data.from_arrow(batch(range(5, 25), v="new")).repartition(3), pk)
    assert rows(pk.to_arrow()) == rows(pa.concat_tables([batch(range(5), v="old"), batch(range(5, 25), v="new")]))


class FailOnceSink(impl.ray.PaimonDatasink):
    """The first attempt of write task 0 fails after writing its files (a marker file says
    that it already failed once); its retry succeeds."""

    def __init__(self, path, marker):
        super().__init__(path)
        self.marker = marker

    def write(self, blocks, ctx):
        out = super().write(blocks, ctx)
        if ctx.task_idx == 0 and not os.path.exists(self.marker):
            Path(self.marker).write_text("failed once")
            raise RuntimeError("injected failure after the task wrote its files")
        return out


class FailingSink(impl.ray.PaimonDatasink):
    """Write task 0 always fails after writing its files, whose names it leaves in ``record``."""

    def __init__(self, path, record):
        super().__init__(path)
        self.record = record

    def write(self, blocks, ctx):
        out = super().write(blocks, ctx)
        if ctx.task_idx == 0:
            Path(self.record).write_text("\n".join(f.file_name for m in out.messages for f in m.new_files))
            raise RuntimeError("injected failure after the task wrote its files")
        return out


def test_a_retried_write_task_commits_each_row_exactly_once(catalog, tmp_path):
    t = catalog.create_table("db.retry", schema=SCHEMA)
    sink = FailOnceSink(t.path, str(tmp_path / "failed-once"))
    ray.data.from_arrow(batch(range(300))).repartition(3).write_datasink(
        sink, ray_remote_args={"max_retries": 2, "retry_exceptions": True})
    assert (tmp_path / "failed-once").exists()  # the failure did happen
    ids = t.to_arrow().column("id").to_pylist()
    assert sorted(ids) == list(range(300))  # every row once
    assert [s.id for s in t.snapshot_manager().snapshots()] == [1]
    assert sink.outcome is not None and sink.outcome.leftovers_removed >= 1  # the failed attempt's file
    assert data_files(t) == live_files(t)
    assert not intent_dir(t, sink).exists()


def test_a_failed_write_leaves_no_snapshot_and_no_files(catalog, tmp_path):
    t = catalog.create_table("db.fail", schema=SCHEMA)
    sink = FailingSink(t.path, str(tmp_path / "written"))
    with pytest.raises(Exception, match="injected failure"):
        ray.data.from_arrow(batch(range(300))).repartition(3).write_datasink(sink)
    written = (tmp_path / "written").read_text().split()
    assert written and all(n.startswith("data-") for n in written)  # the failed task did write files
    assert t.snapshot_manager().latest_snapshot_id() is None
    assert data_files(t) == set()  # ... and they, and the other tasks' files, are gone
    assert not intent_dir(t, sink).exists()


def test_bad_input_gets_impl_typed_errors_on_the_driver(catalog, tmp_path):
    t = catalog.create_table("db.bad", schema=SCHEMA)
    missing = str(tmp_path / "wh" / "db.db" / "nope")
    with pytest.raises(TableNotExistError, match="db.nope"):
        impl.ray.read_table(missing)
    with pytest.raises(InvalidPredicateError, match="'w' is not a column"):
        impl.ray.read_table(t.path, columns=["id", "w"])
    ds = ray.data.from_arrow(batch(range(3)))
    with pytest.raises(TableNotExistError, match="db.nope"):
        impl.ray.write_dataset(ds, missing)
    with pytest.raises(SchemaMismatchError, match=r"unknown columns \['extra'\]"):
        impl.ray.write_dataset(ray.data.from_arrow(batch(range(3)).append_column("extra", pa.array([1, 2, 3]))), t)
    with pytest.raises(SchemaMismatchError, match="'id' has type string"):
        impl.ray.write_dataset(ray.data.from_arrow(batch(range(3)).set_column(1, "id", pa.array(["a", "b", "c"]))), t)
    with pytest.raises(SchemaMismatchError, match=r"missing columns \['v'\]"):  # Ray's own entry point
        ray.data.from_arrow(batch(range(3)).drop_columns(["v"])).write_datasink(impl.ray.PaimonDatasink(t.path))
    with pytest.raises(impl.ray.RayConnectorError, match="'upsert'"):
        impl.ray.write_dataset(ds, t, mode="upsert")
    dynamic = catalog.create_table("db.dyn", schema=SCHEMA, primary_keys=["id"])  # bucket -1
    with pytest.raises(UnsupportedTableFeatureError, match="dynamic bucket"):
        impl.ray.write_dataset(ds, dynamic)
    postpone = catalog.create_table("db.post", schema=SCHEMA, primary_keys=["id"], options={"bucket": "-2"})
    with pytest.raises(UnsupportedTableFeatureError, match="postpone bucket"):
        impl.ray.write_dataset(ds, postpone)
    in_memory = impl.Catalog(f"memory://{tmp_path.name}")
    in_memory.create_database("db")
    with pytest.raises(impl.ray.RayConnectorError, match="'memory' file system"):
        in_memory.create_table("db.m", schema=SCHEMA).to_ray()
    assert t.snapshot_manager().latest_snapshot_id() is None and data_files(t) == set()


def _ray_written_tables(catalog) -> tuple:
    pk = catalog.create_table("db.peer_pk", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                              options={"bucket": "2"})
    impl.ray.write_dataset(ray.data.from_arrow(batch(range(60), dt=lambda i: f"d{i % 2}")).repartition(2), pk)
    impl.ray.write_dataset(ray.data.from_arrow(batch(range(0, 60, 5), dt=lambda i: f"d{i % 2}", v="u")), pk)
    app = catalog.create_table("db.peer_app", schema=SCHEMA, partition_keys=["dt"])
    impl.ray.write_dataset(ray.data.from_arrow(batch(range(40), dt=lambda i: f"d{i % 3}")).repartition(2), app)
    return pk, app


def test_pypaimon_reads_what_ray_wrote(catalog):
    from pypaimon_env import read_with_pypaimon

    pk, app = _ray_written_tables(catalog)
    for t in (pk, app):
        theirs = read_with_pypaimon(catalog.warehouse, t.identifier, sort_by=["dt", "id"])
        assert sorted((r["dt"], r["id"], r["v"]) for r in theirs) == rows(t.to_arrow()), t.identifier


@pytest.mark.paimon_java
def test_paimon_java_reads_what_ray_wrote(catalog, tmp_path):
    from paimon_java import JavaServer, harness_classpath, tools_missing

    reason = tools_missing()
    if reason:
        pytest.skip(f"Paimon Java harness needs a JDK and Maven: {reason}")
    pk, _ = _ray_written_tables(catalog)
    out = tmp_path / "java.parquet"
    with JavaServer(harness_classpath()) as java:
        java.call("read", warehouse=catalog.warehouse, table=pk.identifier, out=str(out))
    assert rows(pq.read_table(out).select(["dt", "id", "v"])) == rows(pk.to_arrow())
    assert ("d0", 10, "u10") in rows(pk.to_arrow())


def test_without_ray_the_error_names_the_ray_extra(tmp_path):
    """(Without pyspark impl.ray works: tests/ray/test_ray_without_pyspark.py.)"""
    code = textwrap.dedent(f"""
        import sys
        sys.modules[sys.argv[1]] = None  # as if not installed
        import pyarrow as pa
        import impl
        from impl.errors import MissingExtraError
        try:
            import impl.ray
        except MissingExtraError as e:
            print("import:", e.extra)
        cat = impl.Catalog({str(tmp_path / "wh")!r})
        cat.create_database("db", ignore_if_exists=True)
        t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]), ignore_if_exists=True)
        try:
            t.to_ray()
        except MissingExtraError as e:
            print("to_ray:", e.extra)
        """)
    root = str(Path(impl.__file__).resolve().parents[1])
    for blocked, extra in (("ray", "ray"),):
        proc = subprocess.run([sys.executable, "-c", code, blocked], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": root})
        assert proc.stdout.split() == ["import:", extra, "to_ray:", extra], proc.stderr[-2000:]


# ---------------------------------------------------------------------- routed writes (issue 50)


def files_per_bucket(table) -> dict[tuple[str, int], int]:
    """Data files of the latest snapshot per (partition path, bucket)."""
    out: dict[tuple[str, int], int] = {}
    for s in table.new_read_builder().new_scan().plan().splits():
        key = (s.partition_path, s.bucket)
        out[key] = out.get(key, 0) + len(s.files)
    return out


def test_the_readme_figure_100_rows_make_one_file_per_bucket(catalog):
    """Issue 50: the README's Ray example (100 one-row blocks) committed 100 files."""
    users = catalog.create_table("db.users", schema=pa.schema([("id", pa.int64()), ("name", pa.string())]),
                                 primary_keys=["id"], options={"bucket": "2"})
    ds = ray.data.from_items([{"id": i, "name": f"u{i}"} for i in range(100)])
    out = impl.ray.write_dataset(ds, users)
    assert (out.snapshot_ids, out.files_written, out.rows_written) == ([1], 2, 100)
    assert sorted(files_per_bucket(users).values()) == [1, 1]
    assert users.to_arrow().num_rows == 100
    # an append table, bucket-unaware and partitioned: one writer (the data fills no target-size
    # file), so one file per partition
    app = catalog.create_table("db.events", schema=SCHEMA, partition_keys=["dt"])
    out = impl.ray.write_dataset(ray.data.from_items(batch(range(100), dt=lambda i: f"d{i % 3}").to_pylist()), app)
    assert out.files_written == 3 and sorted(files_per_bucket(app).values()) == [1, 1, 1]
    assert rows(app.to_arrow()) == rows(batch(range(100), dt=lambda i: f"d{i % 3}"))


def test_ray_datasink_bundles_tiny_blocks_into_one_write_task(catalog):
    """Through Ray's own write_datasink (no routing) Ray still hands the sink bundles of at least
    batch_rows rows, not one task per one-row block."""
    app = catalog.create_table("db.sinkapp", schema=SCHEMA)
    sink = impl.ray.PaimonDatasink(app.path)
    ray.data.from_items(batch(range(100)).to_pylist()).write_datasink(sink)
    assert sink.outcome is not None and sink.outcome.files_written == 1
    assert sorted(app.to_arrow().column("id").to_pylist()) == list(range(100))


def test_primary_key_rows_routed_one_writer_per_bucket_last_duplicate_wins(catalog):
    """Keys repeating across blocks (updates in later blocks) merge as one impl TableWrite of
    the rows in the dataset's order would: impl's own write is the oracle."""
    def blocks(k):
        return [batch(range(0, 120), dt=lambda i: f"d{i % 2}", v="a"),
                batch(range(50, 90), dt=lambda i: f"d{i % 2}", v="b"),   # updates keys of block 0
                batch(range(80, 200), dt=lambda i: f"d{i % 2}", v="c"),  # and of both earlier blocks
                batch(range(10, 20), dt=lambda i: f"d{i % 2}", v="d")][k]

    kw = dict(schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "3"})
    ray_t, oracle = catalog.create_table("db.rpk", **kw), catalog.create_table("db.opk", **kw)
    ray_t.write_arrow(batch(range(300, 310), dt="d0", v="old"))
    oracle.write_arrow(batch(range(300, 310), dt="d0", v="old"))
    ds = ray.data.from_arrow([blocks(k) for k in range(4)])  # four blocks, in this order
    out = impl.ray.write_dataset(ds, ray_t, concurrency=2)
    oracle.write_arrow(pa.concat_tables([blocks(k) for k in range(4)]))
    assert rows(ray_t.to_arrow()) == rows(oracle.to_arrow())
    got = {(r[0], r[1]): r[2] for r in rows(ray_t.to_arrow())}
    assert (got[("d1", 51)], got[("d1", 85)], got[("d0", 12)], got[("d0", 300)]) == ("b51", "c85", "d12", "old300")
    # one writer per (partition, bucket): the write added exactly one file to each, holding its
    # keys once (the writer merged the duplicates, as one TableWrite does: 200 keys of 290 rows)
    assert (out.files_written, out.rows_written) == (6, 200)
    per_bucket = files_per_bucket(ray_t)  # d0's buckets also hold the file of the first commit
    assert per_bucket == {**{("dt=d0", b): 2 for b in range(3)}, **{("dt=d1", b): 1 for b in range(3)}}


def test_fixed_bucket_append_table_gets_one_file_per_bucket(catalog):
    t = catalog.create_table("db.bapp", schema=SCHEMA, options={"bucket": "4", "bucket-key": "id"})
    ds = ray.data.from_arrow(batch(range(1000))).repartition(50)
    out = impl.ray.write_dataset(ds, t, concurrency=3)
    assert out.files_written == 4 and sorted(files_per_bucket(t).values()) == [1, 1, 1, 1]
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(1000))
    # impl's own bucket of each row: the routing put every row where impl's reader looks for it
    pb = PredicateBuilder(t.schema)
    assert t.to_arrow(pb.equal("id", 123)).column("id").to_pylist() == [123]


def test_routing_rules_are_pure_and_vectorized():
    from impl.ray.routing import cut_by_writer, deal_contiguous, writers_for_unaware

    data = pa.table({"x": list(range(10))})
    pieces, counts = cut_by_writer(data, np.array([2, 0, 2, 1, 0, 2, 2, 1, 0, 0]), 4)
    assert [p.column("x").to_pylist() for p in pieces] == [[1, 4, 8, 9], [3, 7], [0, 2, 5, 6], []]
    assert counts.tolist() == [4, 2, 4, 0]
    assert deal_contiguous([10, 10, 10, 10], 2) == [0, 0, 1, 1]
    assert deal_contiguous([30, 1, 1, 8], 2) == [0, 1, 1, 1]
    assert deal_contiguous([0, 0, 0], 2) == [0, 0, 1]
    assert writers_for_unaware(10, 100, 8) == 1 and writers_for_unaware(1000, 100, 8) == 8
    assert writers_for_unaware(250, 100, 8) == 3 and writers_for_unaware(0, 100, 8) == 1


def test_writer_of_rows_is_a_function_of_partition_and_bucket(catalog):
    from impl.bucket.routing import compute_buckets
    from impl.ray.routing import writer_of_rows

    t = catalog.create_table("db.route", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "5"})
    data = batch(range(500), dt=lambda i: f"d{i % 7}")
    w = writer_of_rows(data, t, 3)
    b = compute_buckets([data.column("id")], [t.schema.field("id").type], 5)
    pairs = {}
    for dt, bucket, writer in zip(data.column("dt").to_pylist(), b.tolist(), w.tolist(), strict=True):
        assert pairs.setdefault((dt, bucket), writer) == writer
    assert set(w.tolist()) == {0, 1, 2}
    plain = catalog.create_table("db.route2", schema=SCHEMA, primary_keys=["id"], options={"bucket": "5"})
    w2 = writer_of_rows(data, plain, 3)
    assert w2.tolist() == (compute_buckets([data.column("id")], [plain.schema.field("id").type], 5) % 3).tolist()


def test_a_failed_routed_write_leaves_no_snapshot_and_no_files(catalog):
    """A writer task fails (a null in a NOT NULL column of its block) after the others wrote
    their files: no snapshot, and none of the write's files stay."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    # a target file of 1 kb: the bucket-unaware write is dealt to all four writers
    t = catalog.create_table("db.nn", schema=schema, options={"target-file-size": "1 kb"})
    good = pa.table({"id": list(range(100)), "v": ["x"] * 100})
    bad = pa.table({"id": pa.array([1, None], pa.int64()), "v": ["y", "z"]})
    ds = ray.data.from_arrow([good, good, good, bad])
    with pytest.raises(Exception, match="id"):
        impl.ray.write_dataset(ds, t, concurrency=4)
    assert t.snapshot_manager().latest_snapshot_id() is None
    assert data_files(t) == set()

"""Two-way interop matrix of the table layer against pypaimon 2.1.0.

Every case compares exact rows (sorted lists of dicts) against rows computed independently
from the change stream that was written, never only "both sides agree":

1. pypaimon writes a partitioned append table and a partitioned primary-key table (bucket 2,
   several commits of inserts / updates / deletes through ``rowkind.field``); impl reads them.
2. impl writes the same two tables; pypaimon reads them, then again after impl's full
   compaction and after impl's snapshot expiration (and pypaimon time-travelling to an
   expired snapshot id fails with "doesn't exist").
3. pypaimon commits into impl-created tables; both read; impl commits on top; both read.
4. Every key impl writes lands in the bucket pypaimon chooses for it (INT, BIGINT, STRING,
   multi-column keys beside a partition field, an append table with an explicit
   ``bucket-key``, and SMALLINT, DOUBLE, DATE, DECIMAL(10,2), DECIMAL(38,4), TIMESTAMP(6),
   BYTES), by the bucket directories of the data files on both sides.
5. A primary-key table written by pypaimon, then impl (with its own compactions), then
   pypaimon: both merge-on-read the same rows, also after impl's full compaction.

Each pypaimon call is a subprocess (~1 s); the work is batched into few scripts.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import random
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon_env import run_pypaimon

import impl

# ============================================================================ shared specs

# (name, arrow type name); the same spec builds the Arrow schema on both sides
APPEND_COLS = [["dt", "string"], ["id", "int64"], ["name", "string"], ["score", "float64"]]
PK_COLS = [["dt", "string"], ["id", "int64"], ["op", "string"], ["v", "string"], ["amount", "float64"]]
PK_KEYS = ["dt", "id"]
PK_OPTIONS = {"bucket": "2", "rowkind.field": "op"}
DATES = ["2024-01-01", "2024-01-02", "2024-01-03"]

_ARROW = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "float64": pa.float64()}


def arrow_schema(cols) -> pa.Schema:
    return pa.schema([(n, _ARROW[t]) for n, t in cols])


def to_arrow(cols, rows) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=arrow_schema(cols))


def row_sort_key(r: dict):
    return json.dumps(r, sort_keys=True, default=str)


def sort_rows(rows) -> list[dict]:
    return sorted((dict(r) for r in rows), key=row_sort_key)


def impl_rows(table, **options) -> list[dict]:
    if options:
        table = table.copy({k: str(v) for k, v in options.items()})
    return sort_rows(table.to_arrow().to_pylist())


# ============================================================================ change streams


def append_stream(seed: int, commits: int, rows_per_commit: int, first_id: int = 0) -> list[list[dict]]:
    rng = random.Random(seed)
    out, next_id = [], first_id
    for _ in range(commits):
        batch = []
        for _ in range(rows_per_commit):
            batch.append({"dt": rng.choice(DATES), "id": next_id,
                          "name": rng.choice([None, "", "a", "ü-name-longer-than-7", f"n{next_id}"]),
                          "score": rng.choice([None, round(rng.uniform(-1e6, 1e6), 3), 0.0])})
            next_id += 1
        out.append(batch)
    return out


def pk_stream(seed: int, commits: int, rows_per_commit: int, state: dict, key_space: int = 60) -> list[list[dict]]:
    """Commits of change rows (op in +I, +U, -U, -D) against ``state`` (key -> row), which is
    only read here: the expected result is computed by :func:`apply_changes`. A key present is
    updated, deleted, or retracted-and-re-added (-U then +U in one commit); a key absent is
    inserted, or deleted (a no-op); keys repeat within a commit."""
    rng = random.Random(seed)
    live = dict(state)
    out = []
    tag = 0
    for _ in range(commits):
        batch = []
        for _ in range(rows_per_commit):
            key = (rng.choice(DATES), rng.randrange(key_space))
            tag += 1
            value = {"v": rng.choice([None, f"s{seed}-{tag}", "x" * rng.randrange(0, 20)]),
                     "amount": rng.choice([None, float(tag), -tag / 7])}
            row = {"dt": key[0], "id": key[1], **value}
            if key in live:
                r = rng.random()
                if r < 0.5:
                    batch.append({**row, "op": "+U"})
                    live[key] = row
                elif r < 0.8:
                    batch.append({**live[key], "op": "-D"})
                    del live[key]
                elif r < 0.9:  # retract only: -U removes the key
                    batch.append({**live[key], "op": "-U"})
                    del live[key]
                else:
                    batch.append({**live[key], "op": "-U"})
                    batch.append({**row, "op": "+U"})
                    live[key] = row
            else:
                if rng.random() < 0.85:
                    batch.append({**row, "op": "+I"})
                    live[key] = row
                else:  # deleting a key that does not exist changes nothing
                    batch.append({**row, "op": "-D"})
        out.append(batch)
    return out


def apply_changes(state: dict, commits) -> dict:
    """Deduplicate semantics: the last change of a key wins; -U / -D remove the key."""
    state = dict(state)
    for batch in commits:
        for r in batch:
            key = (r["dt"], r["id"])
            if r["op"] in ("+I", "+U"):
                state[key] = dict(r)
            else:
                state.pop(key, None)
    return state


def pk_expected(state: dict) -> list[dict]:
    return sort_rows(state.values())


def flat(commits) -> list[dict]:
    return [r for batch in commits for r in batch]


# ============================================================================ pypaimon scripts

PP_PRELUDE = """
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
_T = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "float64": pa.float64()}
def arrow_schema(cols):
    return pa.schema([(n, _T[t]) for n, t in cols])
_catalogs = {}
def catalog(warehouse=None):
    warehouse = warehouse or params["warehouse"]
    if warehouse not in _catalogs:
        _catalogs[warehouse] = CatalogFactory.create({"warehouse": warehouse})
    return _catalogs[warehouse]
def create(name, cols, partition_keys=(), primary_keys=(), options=None):
    c = catalog()
    c.create_database(name.split(".")[0], True)
    c.create_table(name, Schema.from_pyarrow_schema(arrow_schema(cols), partition_keys=list(partition_keys),
                   primary_keys=list(primary_keys), options=dict(options or {})), False)
def write(name, cols, commits):
    for rows in commits:
        table = catalog().get_table(name)
        wb = table.new_batch_write_builder()
        w = wb.new_write(); c = wb.new_commit()
        w.write_arrow(pa.Table.from_pylist(rows, schema=arrow_schema(cols)))
        c.commit(w.prepare_commit()); w.close(); c.close()
def read(name, warehouse=None, snapshot_id=None):
    table = catalog(warehouse).get_table(name)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    rb = table.new_read_builder()
    arrow = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return arrow.to_pylist() if arrow is not None else []
def try_read(name, warehouse=None, snapshot_id=None):
    try:
        return {"rows": read(name, warehouse, snapshot_id)}
    except Exception as e:
        return {"error": type(e).__name__, "message": str(e)}
"""


def pp_run(script: str, **params):
    return run_pypaimon(PP_PRELUDE + script, **params)


# ============================================================================ impl helpers


def impl_create(cat: impl.Catalog, name: str, cols, partition_keys=(), primary_keys=(), options=None):
    cat.create_database(name.split(".")[0], ignore_if_exists=True)
    return cat.create_table(name, schema=arrow_schema(cols), partition_keys=list(partition_keys) or None,
                            primary_keys=list(primary_keys) or None, options=dict(options or {}))


def impl_write(table, cols, commits) -> None:
    for rows in commits:
        table.write_arrow(to_arrow(cols, rows))


def live_files(table):
    """(partition dir, bucket, DataFileMeta) of every live file of the latest snapshot."""
    plan = table.new_read_builder().new_scan().plan()
    return [(s.partition_path, s.bucket, f) for s in plan.splits() for f in s.files]


# ============================================================================ 1. impl reads pypaimon


def test_impl_reads_pypaimon_append_and_pk_tables(tmp_path, pypaimon):
    wh = str(tmp_path)
    app_commits = append_stream(1, commits=3, rows_per_commit=25)
    pk_commits = pk_stream(2, commits=5, rows_per_commit=40, state={})
    got_pp = pp_run("""
create("db.app", params["app_cols"], partition_keys=["dt"])
write("db.app", params["app_cols"], params["app_commits"])
create("db.pk", params["pk_cols"], partition_keys=["dt"], primary_keys=params["pk_keys"], options=params["pk_options"])
write("db.pk", params["pk_cols"], params["pk_commits"])
result = {"app": read("db.app"), "pk": read("db.pk")}
""", warehouse=wh, app_cols=APPEND_COLS, app_commits=app_commits, pk_cols=PK_COLS, pk_keys=PK_KEYS,
        pk_options=PK_OPTIONS, pk_commits=pk_commits)

    want_app = sort_rows(flat(app_commits))
    want_pk = pk_expected(apply_changes({}, pk_commits))
    assert sort_rows(got_pp["app"]) == want_app  # sanity: pypaimon itself agrees with the model
    assert sort_rows(got_pp["pk"]) == want_pk

    cat = impl.Catalog(wh)
    app, pk = cat.get_table("db.app"), cat.get_table("db.pk")
    assert impl_rows(app) == want_app
    assert impl_rows(pk) == want_pk
    assert len(pk.snapshots()) == len(pk_commits)
    # time travel into pypaimon's history: state after the 2nd commit
    assert impl_rows(pk, **{"scan.snapshot-id": 2}) == pk_expected(apply_changes({}, pk_commits[:2]))
    assert {b for _, b, _ in live_files(pk)} == {0, 1}


# ============================================================================ 2. pypaimon reads impl


def test_pypaimon_reads_impl_tables_after_compaction_and_expiration(tmp_path, pypaimon):
    wh = tmp_path / "wh"
    cat = impl.Catalog(str(wh))
    app = impl_create(cat, "db.app", APPEND_COLS, partition_keys=["dt"])
    pk = impl_create(cat, "db.pk", PK_COLS, partition_keys=["dt"], primary_keys=PK_KEYS,
                     options={**PK_OPTIONS, "write-only": "true"})  # keep every sorted run for the read
    app_commits = append_stream(3, commits=4, rows_per_commit=20)
    pk_commits = pk_stream(4, commits=6, rows_per_commit=40, state={})
    impl_write(app, APPEND_COLS, app_commits)
    impl_write(pk, PK_COLS, pk_commits)
    want_app = sort_rows(flat(app_commits))
    want_pk = pk_expected(apply_changes({}, pk_commits))
    assert impl_rows(app) == want_app and impl_rows(pk) == want_pk
    pk_files_before = live_files(pk)
    assert max(sum(1 for _, b2, _ in pk_files_before if b2 == b) for b in (0, 1)) >= len(pk_commits) - 1
    stages = {"written": str(tmp_path / "written")}
    shutil.copytree(wh, stages["written"])

    # full compaction: one sorted run per bucket, one file per append bucket
    for t in (app, pk):
        stats = t.compact(full=True)
        assert stats is not None
        assert t.latest_snapshot().commit_kind.name == "COMPACT"
    per_bucket: dict = {}
    for part, b, f in live_files(pk):
        per_bucket.setdefault((part, b), []).append(f)
    assert all(len(fs) == 1 for fs in per_bucket.values()), per_bucket
    assert all(len([1 for p2, b2, _ in live_files(app) if (p2, b2) == (p, b)]) == 1
               for p, b, _ in live_files(app))
    assert impl_rows(app) == want_app and impl_rows(pk) == want_pk
    stages["compacted"] = str(tmp_path / "compacted")
    shutil.copytree(wh, stages["compacted"])

    # expiration keeping only the latest (compacted) snapshot
    expired_ids = {}
    for name, t in (("app", app), ("pk", pk)):
        latest = t.latest_snapshot().id
        res = t.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0, max_deletes=1000)
        expired_ids[name] = list(res.expired_snapshot_ids)
        assert expired_ids[name] == list(range(1, latest)), (name, res)
        assert [s.id for s in t.snapshots()] == [latest]
        assert res.deleted_data_files  # the pre-compaction files are gone
    stages["expired"] = str(wh)

    reads = []
    for stage, stage_wh in stages.items():
        reads += [[stage, stage_wh, "db.app", None], [stage, stage_wh, "db.pk", None]]
    reads += [["expired-sid-1", str(wh), "db.pk", 1], ["expired-sid-1-app", str(wh), "db.app", 1],
              ["latest-by-id", str(wh), "db.pk", pk.latest_snapshot().id],
              ["written-sid-2", stages["written"], "db.pk", 2]]
    got = pp_run("""
result = {}
for label, warehouse, name, sid in params["reads"]:
    result[label + "|" + name] = try_read(name, warehouse, sid)
""", reads=reads)

    for stage in stages:
        assert sort_rows(got[f"{stage}|db.app"]["rows"]) == want_app, stage
        assert sort_rows(got[f"{stage}|db.pk"]["rows"]) == want_pk, stage
    assert sort_rows(got["latest-by-id|db.pk"]["rows"]) == want_pk
    assert sort_rows(got["written-sid-2|db.pk"]["rows"]) == pk_expected(apply_changes({}, pk_commits[:2]))
    for label in ("expired-sid-1|db.pk", "expired-sid-1-app|db.app"):
        assert got[label].get("error") == "ValueError", got[label]
        assert "Snapshot id '1' doesn't exist" in got[label]["message"]
    # impl agrees: the expired snapshot is gone for it too
    with pytest.raises(impl.SnapshotNotExistError):
        impl_rows(pk, **{"scan.snapshot-id": 1})


# ============================================================================ 3. pypaimon commits into impl tables


def test_pypaimon_commits_into_impl_tables_then_impl_on_top(tmp_path, pypaimon):
    wh = str(tmp_path)
    cat = impl.Catalog(wh)
    app = impl_create(cat, "db.app", APPEND_COLS, partition_keys=["dt"])
    pk = impl_create(cat, "db.pk", PK_COLS, partition_keys=["dt"], primary_keys=PK_KEYS, options=PK_OPTIONS)
    app_1 = append_stream(5, commits=2, rows_per_commit=15)
    pk_1 = pk_stream(6, commits=2, rows_per_commit=40, state={})
    impl_write(app, APPEND_COLS, app_1)
    impl_write(pk, PK_COLS, pk_1)
    state = apply_changes({}, pk_1)

    app_2 = append_stream(7, commits=2, rows_per_commit=15, first_id=1000)
    pk_2 = pk_stream(8, commits=3, rows_per_commit=40, state=state)
    got_pp = pp_run("""
write("db.app", params["app_cols"], params["app_commits"])
write("db.pk", params["pk_cols"], params["pk_commits"])
result = {"app": read("db.app"), "pk": read("db.pk")}
""", warehouse=wh, app_cols=APPEND_COLS, app_commits=app_2, pk_cols=PK_COLS, pk_commits=pk_2)
    state = apply_changes(state, pk_2)
    want_app = sort_rows(flat(app_1 + app_2))
    assert sort_rows(got_pp["app"]) == want_app
    assert sort_rows(got_pp["pk"]) == pk_expected(state)
    app, pk = cat.get_table("db.app"), cat.get_table("db.pk")
    assert impl_rows(app) == want_app
    assert impl_rows(pk) == pk_expected(state)
    assert [s.id for s in pk.snapshots()] == list(range(1, len(pk_1) + len(pk_2) + 1))

    # impl commits on top (updates of keys pypaimon wrote), then a full compaction
    app_3 = append_stream(9, commits=1, rows_per_commit=15, first_id=2000)
    pk_3 = pk_stream(10, commits=3, rows_per_commit=40, state=state)
    impl_write(app, APPEND_COLS, app_3)
    impl_write(pk, PK_COLS, pk_3)
    state = apply_changes(state, pk_3)
    want_app = sort_rows(flat(app_1 + app_2 + app_3))
    assert impl_rows(app) == want_app
    assert impl_rows(pk) == pk_expected(state)
    before_compaction = pk.latest_snapshot().id
    pk.compact(full=True)
    got_pp = pp_run("""
result = {"app": read("db.app"), "pk": read("db.pk"), "pk_before": read("db.pk", snapshot_id=params["sid"])}
""", warehouse=wh, sid=before_compaction)
    assert sort_rows(got_pp["app"]) == want_app
    assert sort_rows(got_pp["pk"]) == pk_expected(state)
    assert sort_rows(got_pp["pk_before"]) == pk_expected(state)
    assert impl_rows(pk) == pk_expected(state)


# ============================================================================ 4. bucket assignment


def _bucket_input(name: str, n: int = 400) -> tuple[pa.Table, list[str], list[str], dict]:
    """(rows with distinct keys, partition keys, primary keys, options) of one bucket case."""
    rng = random.Random(name)
    ints = [0, 1, -1, 2**31 - 1, -2**31] + [rng.randrange(-2**31, 2**31) for _ in range(n)]
    bigs = [0, 1, -1, 2**63 - 1, -2**63, 2**31, -2**31 - 1] + [rng.randrange(-2**63, 2**63) for _ in range(n)]
    alphabet = "abcxyz019 ü€😀"
    strs = ["", "a", "1234567", "12345678", "ü", "😀" * 3] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 24))) for _ in range(n)]
    parts, keys, options = [], ["k"], {"bucket": "5"}
    if name == "k_int":
        cols = {"k": pa.array(list(dict.fromkeys(ints)), pa.int32())}
    elif name == "k_bigint":
        cols, options = {"k": pa.array(list(dict.fromkeys(bigs)), pa.int64())}, {"bucket": "7"}
    elif name == "k_string":
        cols, options = {"k": pa.array(list(dict.fromkeys(strs)), pa.string())}, {"bucket": "4"}
    elif name == "k_multi":  # partition field excluded from the bucket key (a, b, c)
        rows = list({(rng.choice(DATES[:2]), rng.choice(ints), rng.choice(strs), rng.choice(bigs)): None
                     for _ in range(n)})
        cols = {"dt": pa.array([r[0] for r in rows]), "a": pa.array([r[1] for r in rows], pa.int32()),
                "b": pa.array([r[2] for r in rows]), "c": pa.array([r[3] for r in rows], pa.int64())}
        parts, keys, options = ["dt"], ["dt", "a", "b", "c"], {"bucket": "6"}
    elif name == "app_bucket_key":  # append table, bucket-key in non-schema order
        rows = list({(rng.choice(ints), rng.choice(strs)): None for _ in range(n)})
        cols = {"a": pa.array([r[0] for r in rows], pa.int32()), "b": pa.array([r[1] for r in rows])}
        keys, options = [], {"bucket": "3", "bucket-key": "b,a"}
    else:  # one more key type each
        uniq = lambda gen: list(dict.fromkeys(gen() for _ in range(n)))  # noqa: E731
        cols = {"k": {
            "k_smallint": lambda: pa.array(uniq(lambda: rng.randrange(-2**15, 2**15)), pa.int16()),
            "k_double": lambda: pa.array(uniq(lambda: rng.uniform(-1e9, 1e9)), pa.float64()),
            "k_date": lambda: pa.array(uniq(lambda: datetime.date(1970, 1, 1) + datetime.timedelta(
                days=rng.randrange(-30000, 30000))), pa.date32()),
            "k_decimal": lambda: pa.array(uniq(lambda: decimal.Decimal(rng.randrange(-10**9, 10**9)).scaleb(-2)),
                                          pa.decimal128(10, 2)),
            "k_decimal38": lambda: pa.array(uniq(lambda: decimal.Decimal(rng.randrange(-10**30, 10**30)).scaleb(-4)),
                                            pa.decimal128(38, 4)),
            "k_timestamp6": lambda: pa.array(uniq(lambda: rng.randrange(-10**15, 2 * 10**15)), pa.timestamp("us")),
            "k_bytes": lambda: pa.array(uniq(lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(0, 20)))),
                                        pa.binary()),
        }[name]()}
    num = len(next(iter(cols.values())))
    cols["v"] = pa.array([f"v{i}" for i in range(num)])
    return pa.table(cols), parts, keys, options


BUCKET_CASES = ["k_int", "k_bigint", "k_string", "k_multi", "app_bucket_key", "k_smallint", "k_double", "k_date",
                "k_decimal", "k_decimal38", "k_timestamp6", "k_bytes"]


def _key_buckets(table_dir: str, key_cols: list[str]) -> dict:
    """key tuple (partition dir + key columns) -> set of bucket directories holding it."""
    out: dict = {}
    for root, _, files in os.walk(table_dir):
        bucket_dir = os.path.basename(root)
        if not bucket_dir.startswith("bucket-"):
            continue
        part = os.path.relpath(os.path.dirname(root), table_dir)
        for f in files:
            if f.endswith(".parquet"):
                for r in pq.read_table(os.path.join(root, f), columns=key_cols).to_pylist():
                    key = (part, *(r[c] for c in key_cols))
                    out.setdefault(key, set()).add(int(bucket_dir[len("bucket-"):]))
    return out


def test_bucket_of_every_key_matches_pypaimon(tmp_path, pypaimon):
    """impl and pypaimon write the same rows into twin tables; every key is in the same bucket."""
    wh = str(tmp_path / "wh")
    cat = impl.Catalog(wh)
    cases = []
    for name in BUCKET_CASES:
        data, parts, keys, options = _bucket_input(name)
        cat.create_database("db", ignore_if_exists=True)
        t = cat.create_table(f"db.{name}", schema=data.schema, partition_keys=parts or None,
                             primary_keys=keys or None, options=options)
        t.write_arrow(data)
        path = str(tmp_path / f"{name}.arrow")  # the very same Arrow data goes to pypaimon
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, data.schema) as w:
            w.write_table(data)
        cases.append([name, path, parts, keys, options])
    pp_run("""
for name, path, parts, keys, options in params["cases"]:
    with pa.OSFile(path, "rb") as f:
        data = pa.ipc.open_file(f).read_all()
    catalog().create_database("db", True)
    catalog().create_table("db.pp_" + name, Schema.from_pyarrow_schema(
        data.schema, partition_keys=parts, primary_keys=keys, options=options), False)
    table = catalog().get_table("db.pp_" + name)
    wb = table.new_batch_write_builder()
    w = wb.new_write(); c = wb.new_commit()
    w.write_arrow(data)
    c.commit(w.prepare_commit()); w.close(); c.close()
result = True
""", warehouse=wh, cases=cases)

    for name, _, parts, _keys, options in cases:
        data = _bucket_input(name)[0]
        key_cols = [c for c in data.column_names if c != "v" and c not in parts]
        ours = _key_buckets(os.path.join(wh, "db.db", name), key_cols)
        theirs = _key_buckets(os.path.join(wh, "db.db", f"pp_{name}"), key_cols)
        assert len(theirs) == data.num_rows, name  # keys are distinct: one row each
        assert all(len(b) == 1 for b in theirs.values()), name
        assert len({next(iter(b)) for b in theirs.values()}) == int(options["bucket"]), name  # every bucket used
        mismatched = {k: (ours.get(k), theirs[k]) for k in theirs if ours.get(k) != theirs[k]}
        assert not mismatched, f"{name}: {len(mismatched)} keys in other buckets, e.g. {list(mismatched.items())[:5]}"
        assert set(ours) == set(theirs), name


# ============================================================================ 5. mixed writers, merge-on-read


def test_mixed_writers_merge_on_read_agrees(tmp_path, pypaimon):
    wh = str(tmp_path)
    p1 = pk_stream(11, commits=3, rows_per_commit=50, state={})
    pp_run("""
create("db.pk", params["pk_cols"], partition_keys=["dt"], primary_keys=params["pk_keys"], options=params["pk_options"])
write("db.pk", params["pk_cols"], params["commits"])
result = True
""", warehouse=wh, pk_cols=PK_COLS, pk_keys=PK_KEYS, pk_options=PK_OPTIONS, commits=p1)
    state = apply_changes({}, p1)

    # impl: enough commits that its writer compacts by itself (num-sorted-run.compaction-trigger 5)
    pk = impl.Catalog(wh).get_table("db.pk")
    i1 = pk_stream(12, commits=6, rows_per_commit=50, state=state)
    impl_write(pk, PK_COLS, i1)
    state = apply_changes(state, i1)
    assert impl_rows(pk) == pk_expected(state)
    kinds = [s.commit_kind.name for s in pk.snapshots()]
    assert "COMPACT" in kinds, kinds  # impl compacted over pypaimon's files
    impl_max_seq = {(p, b): max(f.max_sequence_number for p2, b2, f in live_files(pk) if (p2, b2) == (p, b))
                    for p, b, _ in live_files(pk)}

    p2 = pk_stream(13, commits=3, rows_per_commit=50, state=state)
    got = pp_run("""
write("db.pk", params["pk_cols"], params["commits"])
result = read("db.pk")
""", warehouse=wh, pk_cols=PK_COLS, commits=p2)
    state = apply_changes(state, p2)
    assert sort_rows(got) == pk_expected(state)
    pk = impl.Catalog(wh).get_table("db.pk")
    assert impl_rows(pk) == pk_expected(state)
    # pypaimon continued each bucket's sequence numbers above impl's
    new_files = [(p, b, f) for p, b, f in live_files(pk) if f.min_sequence_number > impl_max_seq.get((p, b), -1)]
    assert new_files
    for p, b, f in live_files(pk):
        if (p, b) in impl_max_seq and f.max_sequence_number > impl_max_seq[(p, b)]:
            assert f.min_sequence_number > impl_max_seq[(p, b)], (p, b, f.file_name)

    # impl full compaction of the mix; pypaimon reads the result and the snapshot before it
    before = pk.latest_snapshot().id
    pk.compact(full=True)
    got = pp_run("""
result = {"latest": read("db.pk"), "before": read("db.pk", snapshot_id=params["sid"])}
""", warehouse=wh, sid=before)
    assert sort_rows(got["latest"]) == pk_expected(state)
    assert sort_rows(got["before"]) == pk_expected(state)
    assert impl_rows(pk) == pk_expected(state)

"""Two-way interop against pypaimon-rust 0.4.0 (Apache Paimon's Rust core with Python bindings).

pypaimon-rust writes its manifests and manifest lists as Avro files whose writer schema is a
top-level ``["null", record]`` union, declares the stats records nullable, and writes primary-key
data files in thin mode (no ``_KEY_`` columns: the key is read from the value columns, as
Paimon Java's ``FormatReaderMapping`` does for every file). impl could not open such a table at
all before, and once the manifests read it read null keys from the thin files.

Every case compares exact rows against a reference computed here from the change stream that
was written, and against the other side's own read:

1. pypaimon-rust writes a partitioned append table and a partitioned primary-key table
   (bucket 2, inserts / updates / deletes through ``rowkind.field``); impl reads them, and the
   polars column path is asserted to have decoded every manifest of them.
2. impl writes the same tables; pypaimon-rust reads them; pypaimon-rust commits on top; impl
   reads, commits and fully compacts on top; both read again.
3. impl writes on and compacts pypaimon-rust's tables (merging its thin files); pypaimon-rust
   reads the result.

pypaimon-rust runs in its own venv (tests/_support/pypaimon_rust_env.py), one subprocess per
batch of work; the tests skip, naming the reason, when that venv cannot be built.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from pypaimon_rust_env import Unavailable, pypaimon_rust_python, run_pypaimon_rust

import impl
from impl.format import avro
from impl.manifest import columnar_entries
from impl.manifest.records import ManifestEntry
from impl.table import PredicateBuilder

APPEND = "db.ap"
PK = "db.pk"
APPEND_COLS = [("dt", "STRING", pa.string()), ("id", "BIGINT", pa.int64()), ("name", "STRING", pa.string()),
               ("score", "DOUBLE", pa.float64())]
PK_COLS = [("dt", "STRING", pa.string()), ("id", "BIGINT", pa.int64()), ("op", "STRING", pa.string()),
           ("v", "STRING", pa.string()), ("amount", "DOUBLE", pa.float64())]
PK_KEYS = ["dt", "id"]
PK_OPTIONS = {"bucket": "2", "rowkind.field": "op"}


@pytest.fixture(scope="module")
def pypaimon_rust():
    try:
        return pypaimon_rust_python()
    except Unavailable as e:
        pytest.skip(f"pypaimon-rust 0.4.0 cannot be installed here: {e}")


# ---------------------------------------------------------------------------- the pypaimon-rust side

_RUST_PRELUDE = """
import pyarrow as pa
from pypaimon_rust.datafusion import PaimonCatalog, SQLContext

TYPES = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64()}

def arrow(cols, rows):
    return pa.Table.from_pylist(rows, schema=pa.schema([(n, TYPES[t]) for n, t in cols]))

def read_rows(catalog, name):
    rb = catalog.get_table(name).new_read_builder()
    batches = rb.new_read().read(rb.new_scan().plan().splits())
    return pa.Table.from_batches(batches).to_pylist() if batches else []
"""

RUST_WRITE = _RUST_PRELUDE + """
wh = params["warehouse"]
if params.get("ddl"):
    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": wh})
    for statement in params["ddl"]:
        ctx.sql(statement)
catalog = PaimonCatalog({"warehouse": wh})
for name, cols, commits in params["writes"]:
    table = catalog.get_table(name)
    for rows in commits:
        builder = table.new_batch_write_builder()
        write = builder.new_write()
        for batch in arrow(cols, rows).to_batches():
            write.write_arrow(batch)
        builder.new_commit().commit(write.prepare_commit())
        write.close()
result = {name: read_rows(catalog, name) for name in params["read"]}
"""

RUST_READ = _RUST_PRELUDE + """
catalog = PaimonCatalog({"warehouse": params["warehouse"]})
result = {name: read_rows(catalog, name) for name in params["read"]}
"""

_ARROW_NAME = {pa.string(): "string", pa.int64(): "int64", pa.float64(): "float64"}


def _cols(spec) -> list[list[str]]:
    return [[n, _ARROW_NAME[a]] for n, _, a in spec]


def _ddl() -> list[str]:
    def columns(spec):
        return ", ".join(f"{n} {t}" for n, t, _ in spec)
    options = ", ".join(f"'{k}'='{v}'" for k, v in PK_OPTIONS.items())
    return ["CREATE SCHEMA paimon.db",
            f"CREATE TABLE paimon.{APPEND} ({columns(APPEND_COLS)}) PARTITIONED BY (dt)",
            f"CREATE TABLE paimon.{PK} ({columns(PK_COLS)}, PRIMARY KEY ({', '.join(PK_KEYS)})) "
            f"PARTITIONED BY (dt) WITH ({options})"]


def rust_write(wh: Path, writes: list, *, create: bool = False) -> dict:
    return run_pypaimon_rust(RUST_WRITE, warehouse=str(wh), ddl=_ddl() if create else None,
                             writes=[[name, _cols(APPEND_COLS if name == APPEND else PK_COLS), commits]
                                     for name, commits in writes],
                             read=[APPEND, PK])


def rust_read(wh: Path) -> dict:
    return run_pypaimon_rust(RUST_READ, warehouse=str(wh), read=[APPEND, PK])


# ---------------------------------------------------------------------------- the impl side


def impl_create(wh: Path) -> None:
    cat = impl.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table(APPEND, schema=pa.schema([(n, a) for n, _, a in APPEND_COLS]), partition_keys=["dt"])
    cat.create_table(PK, schema=pa.schema([(n, a) for n, _, a in PK_COLS]), primary_keys=PK_KEYS,
                     partition_keys=["dt"], options=dict(PK_OPTIONS))


def impl_write(wh: Path, writes: list) -> None:
    cat = impl.Catalog(str(wh))
    for name, commits in writes:
        spec = APPEND_COLS if name == APPEND else PK_COLS
        for rows in commits:
            cat.get_table(name).write_arrow(pa.Table.from_pylist(rows, schema=pa.schema([(n, a) for n, _, a in spec])))


def impl_read(wh: Path) -> dict:
    cat = impl.Catalog(str(wh))
    return {name: cat.get_table(name).to_arrow().to_pylist() for name in (APPEND, PK)}


# ---------------------------------------------------------------------------- data and reference


def append_commits(first_id: int, n: int = 3) -> list[list[dict]]:
    return [[{"dt": f"2024-01-0{1 + (i % 2)}", "id": first_id + c * 10 + i, "name": f"n{c}-{i}" if i % 3 else None,
              "score": i * 1.5 if i % 4 else None} for i in range(5)] for c in range(n)]


def pk_commits(seed: int) -> list[list[dict]]:
    """Inserts, then updates and deletes of some of those keys, then re-inserts."""
    keys = [(f"2024-01-0{1 + (i % 2)}", i) for i in range(8)]
    first = [{"dt": d, "id": i, "op": "+I", "v": f"v{seed}-{i}", "amount": float(i)} for d, i in keys]
    second = [{"dt": d, "id": i, "op": "+U", "v": f"u{seed}-{i}", "amount": None} for d, i in keys[::2]]
    second += [{"dt": d, "id": i, "op": "-D", "v": None, "amount": None} for d, i in keys[1:4:2]]
    third = [{"dt": keys[1][0], "id": keys[1][1], "op": "+I", "v": f"back{seed}", "amount": 9.5},
             {"dt": "2024-01-03", "id": 100 + seed, "op": "+I", "v": "new", "amount": 1.0}]
    return [first, second, third]


class Reference:
    """The rows both tables must hold: every appended row; the last +I / +U of each key, none
    after a -D."""

    def __init__(self):
        self.appended: list[dict] = []
        self.live: dict[tuple, dict] = {}

    def apply(self, writes: list) -> None:
        for name, commits in writes:
            for rows in commits:
                for r in rows:
                    if name == APPEND:
                        self.appended.append(r)
                    elif r["op"] == "-D":
                        self.live.pop((r["dt"], r["id"]), None)
                    else:
                        self.live[(r["dt"], r["id"])] = r

    def rows(self) -> dict:
        return {APPEND: sort_rows(self.appended), PK: sort_rows(self.live.values())}


def sort_rows(rows) -> list[dict]:
    return sorted((dict(r) for r in rows), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def sorted_tables(tables: dict) -> dict:
    return {name: sort_rows(rows) for name, rows in tables.items()}


def assert_manifests_decoded_by_every_path(wh: Path, expect_union: bool) -> int:
    """Every manifest of both tables: the column path decodes it (not a fallback) to what
    fastavro decodes; returns how many had pypaimon-rust's top-level union."""
    unions = 0
    for name in ("ap", "pk"):
        for f in sorted((wh / "db.db" / name / "manifest").glob("manifest-*")):
            data = f.read_bytes()
            schema = fastavro.reader(io.BytesIO(data)).writer_schema
            is_union = isinstance(schema, list)
            unions += is_union
            if f.name.startswith("manifest-list-"):
                continue
            by_fastavro = [ManifestEntry.from_avro(r, str(f))
                           for r in avro.read_avro(data, str(f), "ManifestEntry", ("_KIND", "_FILE"))]
            by_columns = columnar_entries.manifest_entries(data)
            assert by_columns is not None, f"the column path fell back on {f}"
            assert by_columns == by_fastavro
    if expect_union:
        assert unions > 0, "pypaimon-rust no longer writes [null, record] manifests: this test tests nothing new"
    return unions


# ---------------------------------------------------------------------------- tests


def test_impl_reads_what_pypaimon_rust_wrote(pypaimon_rust, tmp_path):
    wh = tmp_path / "wh"
    writes = [(APPEND, append_commits(0)), (PK, pk_commits(1))]
    ref = Reference()
    ref.apply(writes)
    rust_rows = sorted_tables(rust_write(wh, writes, create=True))
    assert rust_rows == ref.rows()
    assert_manifests_decoded_by_every_path(wh, expect_union=True)
    assert sorted_tables(impl_read(wh)) == ref.rows()
    # a partition-filtered plan (the partition-filtered manifest readers) and a projection
    pk = impl.Catalog(str(wh)).get_table(PK)
    day = [r for r in ref.rows()[PK] if r["dt"] == "2024-01-02"]
    got = pk.to_arrow(predicate=PredicateBuilder(pk.schema).equal("dt", "2024-01-02")).to_pylist()
    assert sort_rows(got) == day and day


def test_pypaimon_rust_reads_what_impl_wrote_and_both_write_on(pypaimon_rust, tmp_path):
    wh = tmp_path / "wh"
    impl_create(wh)
    ref = Reference()
    writes = [(APPEND, append_commits(0)), (PK, pk_commits(1))]
    impl_write(wh, writes)
    ref.apply(writes)
    assert sorted_tables(rust_read(wh)) == ref.rows()
    more = [(APPEND, append_commits(100, 1)), (PK, pk_commits(2))]
    ref.apply(more)
    assert sorted_tables(rust_write(wh, more)) == ref.rows()
    assert sorted_tables(impl_read(wh)) == ref.rows()
    last = [(APPEND, append_commits(200, 1)), (PK, pk_commits(3)[1:])]
    impl_write(wh, last)
    ref.apply(last)
    for name in (APPEND, PK):
        impl.Catalog(str(wh)).get_table(name).compact(full=True)
    assert sorted_tables(impl_read(wh)) == ref.rows()
    assert sorted_tables(rust_read(wh)) == ref.rows()


def test_impl_writes_on_and_compacts_pypaimon_rust_tables(pypaimon_rust, tmp_path):
    """impl's merges read pypaimon-rust's thin primary-key files (no _KEY_ columns) by their
    value columns, in the merge read and in compaction's bounded merge."""
    wh = tmp_path / "wh"
    ref = Reference()
    writes = [(APPEND, append_commits(0)), (PK, pk_commits(1))]
    ref.apply(writes)
    rust_write(wh, writes, create=True)
    more = [(APPEND, append_commits(100, 1)), (PK, pk_commits(2))]
    impl_write(wh, more)
    ref.apply(more)
    assert sorted_tables(impl_read(wh)) == ref.rows()
    pk = impl.Catalog(str(wh)).get_table(PK)
    pk.compact(full=True)
    assert sorted_tables(impl_read(wh)) == ref.rows()
    assert sorted_tables(rust_read(wh)) == ref.rows()
    later = [(PK, pk_commits(4))]
    ref.apply(later)
    assert sorted_tables(rust_write(wh, later)) == ref.rows()
    assert sorted_tables(impl_read(wh)) == ref.rows()


def test_pypaimon_and_pypaimon_rust_read_impls_thin_files(pypaimon_rust, tmp_path):
    """impl's ``data-file.thin-mode`` files (no ``_KEY_`` copies, the shape pypaimon-rust
    itself writes) over three commits with updates: both Python peers read exactly the rows."""
    from pypaimon_env import read_with_pypaimon

    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.thin", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                         options={"bucket": "2", "data-file.thin-mode": "true"})
    expected: dict[int, str] = {}
    for commit in range(3):
        ids = list(range(commit * 4, commit * 4 + 10))
        t.write_arrow(pa.table({"id": ids, "v": [f"c{commit}-{i}" for i in ids]}))
        expected.update({i: f"c{commit}-{i}" for i in ids})
    want = [{"id": i, "v": v} for i, v in sorted(expected.items())]
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == want
    assert sorted(read_with_pypaimon(str(tmp_path), "db.thin", sort_by=["id"]), key=lambda r: r["id"]) == want
    got = run_pypaimon_rust(RUST_READ, warehouse=str(tmp_path), read=["db.thin"])
    assert sorted(got["db.thin"], key=lambda r: r["id"]) == want

"""ORC and Avro data files against Paimon Java 1.4.2, both ways.

Matrix: writer (Java first / impl first) x format (orc, avro) x table kind (append, primary key,
primary key with deletion vectors). Each cell: the first writer creates the table and writes;
the other reads it equal to the first writer's read, writes a batch and compacts; the first
reads it back equal to the expected rows, compacts and writes; both read the same rows again.
Statistics: the same rows written by Java and by impl into tables of the same format give
equal min / max / null counts per column, file for file (Java collects Avro stats from rows
and reads ORC stats from the file footer).
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.datafile.stats import FileStats

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"
FIELDS = [["id", "INT NOT NULL"], ["name", "STRING"], ["big", "BIGINT"], ["d", "DOUBLE"], ["f", "FLOAT"],
          ["flag", "BOOLEAN"], ["t8", "TINYINT"], ["t16", "SMALLINT"], ["day", "DATE"], ["ts", "TIMESTAMP(6)"],
          ["tms", "TIMESTAMP(3)"], ["dec", "DECIMAL(10, 2)"], ["bin", "BYTES"], ["lt", "TIMESTAMP_LTZ(6)"],
          ["tm", "TIME(3)"]]
ARROW = pa.schema([("id", pa.int32(), False), ("name", pa.string()), ("big", pa.int64()), ("d", pa.float64()),
                   ("f", pa.float32()), ("flag", pa.bool_()), ("t8", pa.int8()), ("t16", pa.int16()),
                   ("day", pa.date32()), ("ts", pa.timestamp("us")), ("tms", pa.timestamp("ms")),
                   ("dec", pa.decimal128(10, 2)), ("bin", pa.binary()), ("lt", pa.timestamp("us", tz="UTC")),
                   ("tm", pa.time32("ms"))])
KINDS = {"append": ([], {}), "primary-key": (["id"], {"bucket": "1"}),
         "deletion-vectors": (["id"], {"bucket": "1", "deletion-vectors.enabled": "true"})}


def _batch(ids, tag):
    n = len(ids)

    def nth(i, v):
        return None if (i + len(tag)) % 4 == 3 else v

    return pa.Table.from_pylist([{
        "id": int(k), "name": nth(i, f"{tag}-{k}" + "é" * (k % 3)), "big": nth(i, k * 10 ** 12 - 7),
        "d": nth(i, k / 3 - 5), "f": nth(i, float(k) * 0.5 - 1), "flag": nth(i, k % 2 == 0),
        "t8": nth(i, (k * 7) % 250 - 125), "t16": nth(i, k * 301 - 9000),
        "day": nth(i, dt.date(2024, 1, 1) + dt.timedelta(days=k)),
        "ts": nth(i, dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=k * 1_000_003)),
        "tms": nth(i, dt.datetime(2023, 6, 1) + dt.timedelta(milliseconds=k * 1_013)),
        "dec": nth(i, decimal.Decimal(k * 137 - 2000).scaleb(-2)), "bin": nth(i, bytes([k % 256, 1, 2])),
        "lt": nth(i, dt.datetime(2022, 3, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=k * 7_777_777)),
        "tm": nth(i, dt.time(k % 24, k % 60, (k * 7) % 60, (k * 1000) % 1_000_000 // 1000 * 1000)),
    } for i, k in enumerate(ids)], schema=ARROW) if n else ARROW.empty_table()


def _sorted(rows):
    return sorted(rows, key=lambda r: r["id"])


class _Sides:
    def __init__(self, java, tmp: Path):
        self.java, self.tmp, self.n = java, tmp, 0
        self.wh = tmp / "wh"

    def java_write(self, table, data):
        self.n += 1
        path = self.tmp / f"in-{self.n}.parquet"
        pq.write_table(data, path)
        self.java.call("write", warehouse=str(self.wh), table=table, parquet=str(path), commit_user="java",
                       identifier=self.n)

    def java_read(self, table):
        out = self.tmp / "java-read.parquet"
        self.java.call("read", warehouse=str(self.wh), table=table, out=str(out))
        return _sorted(pq.read_table(out).cast(ARROW).to_pylist())

    def impl_read(self, table):
        return _sorted(impl.Catalog(str(self.wh)).get_table(table).to_arrow().to_pylist())


def _create(sides, who, table, fmt, kind):
    pks, options = KINDS[kind]
    options = {**options, "file.format": fmt}
    if who == "java":
        sides.java.call("create_table", warehouse=str(sides.wh), table=table, fields=FIELDS, primary_keys=pks,
                        partition_keys=[], table_options=options)
    else:
        cat = impl.Catalog(str(sides.wh))
        if "db" not in cat.list_databases():
            cat.create_database("db")
        cat.create_table(table, schema=ARROW, primary_keys=pks, options=options)


def _write(sides, who, table, data):
    if who == "java":
        sides.java_write(table, data)
    else:
        impl.Catalog(str(sides.wh)).get_table(table).write_arrow(data)


def _compact(sides, who, table):
    if who == "java":
        sides.java.call("compact", warehouse=str(sides.wh), table=table, full=True, commit_user="java-compact",
                        identifier=sides.n)
    else:
        impl.Catalog(str(sides.wh)).get_table(table).compact(full=True)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("fmt", ["orc", "avro"])
@pytest.mark.parametrize("first", ["java", "impl"])
def test_data_format_both_ways(java, tmp_path, first, fmt, kind):
    other = "impl" if first == "java" else "java"
    sides = _Sides(java, tmp_path)
    pk = bool(KINDS[kind][0])
    _create(sides, first, TABLE, fmt, kind)
    expected: dict = {}
    appended: list = []

    def apply(batch):
        for r in batch.to_pylist():
            expected[r["id"]] = r
            appended.append(r)
        return _sorted(list(expected.values()) if pk else appended)

    want = apply(_batch(range(0, 40), "a"))
    _write(sides, first, TABLE, _batch(range(0, 40), "a"))
    assert sides.impl_read(TABLE) == sides.java_read(TABLE) == want

    want = apply(_batch(range(30, 60), "b"))
    _write(sides, other, TABLE, _batch(range(30, 60), "b"))
    _compact(sides, other, TABLE)
    assert sides.java_read(TABLE) == sides.impl_read(TABLE) == want

    want = apply(_batch(range(55, 70), "c"))
    _write(sides, first, TABLE, _batch(range(55, 70), "c"))
    _compact(sides, first, TABLE)
    assert sides.impl_read(TABLE) == sides.java_read(TABLE) == want
    files = [p for p in (sides.wh / "db.db" / "t").rglob("data-*")]
    assert files and all(p.suffix == "." + fmt for p in files)


@pytest.mark.parametrize("kind", ["append", "primary-key"])
@pytest.mark.parametrize("fmt", ["orc", "avro", "parquet"])
def test_statistics_equal_java(java, tmp_path, fmt, kind):
    sides = _Sides(java, tmp_path)
    data = _batch(range(0, 50), "s")
    _create(sides, "java", "db.j", fmt, kind)
    sides.java_write("db.j", data)
    _create(sides, "impl", "db.i", fmt, kind)
    impl.Catalog(str(sides.wh)).get_table("db.i").write_arrow(data)
    stats = {}
    for name in ("db.j", "db.i"):
        t = impl.Catalog(str(sides.wh)).get_table(name)
        by_name = {f.name: f for f in t.schema.fields}
        (split,) = t.new_read_builder().new_scan().plan().splits()
        (meta,) = split.files
        fs = FileStats.of_values(meta, by_name, t.schema.field_names)
        stats[name] = {n: fs.get(n) for n in t.schema.field_names}
        stats[name + "-rows"] = (meta.row_count, meta.delete_row_count, meta.min_key, meta.max_key)
    assert stats["db.i"] == stats["db.j"]
    assert stats["db.i-rows"] == stats["db.j-rows"]


@pytest.mark.parametrize("kind", ["append", "primary-key"])
def test_format_changed_by_alter_both_ways(java, tmp_path, kind):
    """parquet (Java) -> orc (ALTER and write by impl) -> avro (ALTER and write by Java): both
    read every file in its own format; compaction by either rewrites into the current one."""
    sides = _Sides(java, tmp_path)
    pk = kind != "append"
    _create(sides, "java", TABLE, "parquet", kind)
    expected: dict = {}
    appended: list = []

    def apply(batch):
        for r in batch.to_pylist():
            expected[r["id"]] = r
            appended.append(r)
        return _sorted(list(expected.values()) if pk else appended)

    sides.java_write(TABLE, _batch(range(0, 20), "p"))
    want = apply(_batch(range(0, 20), "p"))
    cat = impl.Catalog(str(sides.wh))
    cat.alter_table(TABLE, [impl.SchemaChange.set_option("file.format", "orc")])
    cat.get_table(TABLE).write_arrow(_batch(range(10, 30), "o"))
    want = apply(_batch(range(10, 30), "o"))
    assert sides.java_read(TABLE) == sides.impl_read(TABLE) == want
    java.call("alter", warehouse=str(sides.wh), table=TABLE,
              changes=[{"op": "set_option", "key": "file.format", "value": "avro"}])
    sides.java_write(TABLE, _batch(range(25, 40), "a"))
    want = apply(_batch(range(25, 40), "a"))
    table_dir = sides.wh / "db.db" / "t"
    assert {p.suffix for p in table_dir.rglob("data-*")} == {".parquet", ".orc", ".avro"}
    assert sides.impl_read(TABLE) == sides.java_read(TABLE) == want
    impl.Catalog(str(sides.wh)).get_table(TABLE).compact(full=True)
    assert sides.java_read(TABLE) == sides.impl_read(TABLE) == want
    live = {f.file_name.rsplit(".", 1)[1] for s in impl.Catalog(str(sides.wh)).get_table(TABLE)
            .new_read_builder().new_scan().plan().splits() for f in s.files}
    assert live == {"avro"}


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_renamed_columns_of_impl_files_read_by_java(java, tmp_path, fmt):
    """impl writes under schema 0, renames and adds a column, writes again: Java reads both files
    by field id (ORC files carry paimon.id; Avro files are matched through their schema id)."""
    sides = _Sides(java, tmp_path)
    _create(sides, "impl", TABLE, fmt, "primary-key")
    cat = impl.Catalog(str(sides.wh))
    cat.get_table(TABLE).write_arrow(_batch(range(0, 10), "x"))
    cat.alter_table(TABLE, [impl.SchemaChange.rename_column("name", "label"),
                            impl.SchemaChange.add_column("extra", pa.int64())])
    t = cat.get_table(TABLE)
    more = _batch(range(5, 15), "y").rename_columns(
        ["label" if n == "name" else n for n in ARROW.names]).append_column("extra", pa.array(range(10), pa.int64()))
    t.write_arrow(more)
    out = tmp_path / "java-read.parquet"
    java.call("read", warehouse=str(sides.wh), table=TABLE, out=str(out))
    java_rows = _sorted(pq.read_table(out).to_pylist())
    impl_rows = _sorted(cat.get_table(TABLE).to_arrow().to_pylist())
    assert [(r["id"], r["label"], r["extra"]) for r in java_rows] == \
        [(r["id"], r["label"], r["extra"]) for r in impl_rows]
    assert impl_rows[0]["label"] == "x-0" and impl_rows[0]["extra"] is None


@pytest.mark.parametrize("fmt", ["orc", "avro"])
@pytest.mark.parametrize("writer", ["java", "impl"])
def test_changelog_files_both_ways(java, tmp_path, fmt, writer):
    """changelog-producer = input: the changelog files of one snapshot, written by one side in
    ORC / Avro, read by the other as the batch written (row kinds +I)."""
    sides = _Sides(java, tmp_path)
    pks, options = KINDS["primary-key"]
    options = {**options, "file.format": fmt, "changelog-producer": "input"}
    cat = impl.Catalog(str(sides.wh))
    if writer == "java":
        java.call("create_table", warehouse=str(sides.wh), table=TABLE, fields=FIELDS, primary_keys=pks,
                  partition_keys=[], table_options=options)
    else:
        cat.create_database("db")
        cat.create_table(TABLE, schema=ARROW, primary_keys=pks, options=options)
    batch = _batch(range(0, 25), "c")
    _write(sides, writer, TABLE, batch)
    snapshot = impl.Catalog(str(sides.wh)).get_table(TABLE).latest_snapshot().id
    assert any(p.name.startswith("changelog-") and p.suffix == "." + fmt
               for p in (sides.wh / "db.db" / "t").rglob("*"))
    out = tmp_path / "java-changelog.parquet"
    java.call("read", warehouse=str(sides.wh), table=TABLE, out=str(out), changelog_of=snapshot)
    java_rows = _sorted(pq.read_table(out).select(ARROW.names).cast(ARROW).to_pylist())
    t = impl.Catalog(str(sides.wh)).get_table(TABLE).copy({"incremental-between": f"{snapshot - 1},{snapshot}"})
    got = t.to_arrow()
    assert set(got.column("_VALUE_KIND").to_pylist()) == {0}
    impl_rows = _sorted(got.drop_columns(["_VALUE_KIND"]).cast(ARROW).to_pylist())
    want = _sorted(batch.to_pylist())
    assert impl_rows == want == java_rows

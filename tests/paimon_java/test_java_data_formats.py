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
from impl.format.stats import FileStats

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"
FIELDS = [["id", "INT NOT NULL"], ["name", "STRING"], ["big", "BIGINT"], ["d", "DOUBLE"], ["f", "FLOAT"],
          ["flag", "BOOLEAN"], ["t8", "TINYINT"], ["t16", "SMALLINT"], ["day", "DATE"], ["ts", "TIMESTAMP(6)"],
          ["tms", "TIMESTAMP(3)"], ["dec", "DECIMAL(10, 2)"], ["bin", "BYTES"]]
ARROW = pa.schema([("id", pa.int32(), False), ("name", pa.string()), ("big", pa.int64()), ("d", pa.float64()),
                   ("f", pa.float32()), ("flag", pa.bool_()), ("t8", pa.int8()), ("t16", pa.int16()),
                   ("day", pa.date32()), ("ts", pa.timestamp("us")), ("tms", pa.timestamp("ms")),
                   ("dec", pa.decimal128(10, 2)), ("bin", pa.binary())])
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

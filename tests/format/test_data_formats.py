"""ORC and Avro data files (``impl.format.file_format``) against Parquet, the long-tested path.

Every table kind is written with the same batches in each format: reads, incremental
(changelog) reads and the statistics of each file must come out equal to the Parquet table's,
and every data file must be in the table's format (its extension, and readable by the format's
own library). Also: a format changed by ALTER TABLE (older files keep theirs), schema
evolution over ORC / Avro files, per-level formats, corrupt files and refused options.
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest

import impl
from impl.errors import DataFileError, InvalidOptionError
from impl.schema.changes import SchemaChange

SCHEMA = pa.schema([
    ("id", pa.int64()), ("k", pa.int32()), ("s", pa.string()), ("b", pa.binary()), ("t8", pa.int8()),
    ("t16", pa.int16()), ("f", pa.float32()), ("d", pa.float64()), ("flag", pa.bool_()), ("day", pa.date32()),
    ("ts", pa.timestamp("us")), ("tms", pa.timestamp("ms")), ("dec", pa.decimal128(12, 3)),
    ("arr", pa.list_(pa.int32())), ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ("m", pa.map_(pa.string(), pa.int64())),
])

KINDS = {
    "append": ([], {}),
    "append-bucketed": ([], {"bucket": "2", "bucket-key": "id"}),
    "deduplicate": (["id"], {"bucket": "2"}),
    "partial-update": (["id"], {"bucket": "2", "merge-engine": "partial-update"}),
    "aggregation": (["id"], {"bucket": "2", "merge-engine": "aggregation", "fields.k.aggregate-function": "sum"}),
    "first-row": (["id"], {"bucket": "2", "merge-engine": "first-row"}),
    "deletion-vectors": (["id"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "changelog-input": (["id"], {"bucket": "1", "changelog-producer": "input"}),
    "changelog-lookup": (["id"], {"bucket": "1", "changelog-producer": "lookup"}),
}


def _batch(rng, n, tag, nulls=True):
    ids = rng.integers(0, 40, n)

    def maybe(values):
        return [None if nulls and rng.random() < 0.15 else v for v in values]

    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "k": pa.array(maybe(rng.integers(-100, 100, n).tolist()), pa.int32()),
        "s": pa.array(maybe([f"{tag}-{i}-" + "x" * int(rng.integers(0, 30)) for i in range(n)])),
        "b": pa.array(maybe([bytes([i % 256, 7]) for i in range(n)]), pa.binary()),
        "t8": pa.array(maybe(rng.integers(-128, 127, n).tolist()), pa.int8()),
        "t16": pa.array(maybe(rng.integers(-3000, 3000, n).tolist()), pa.int16()),
        "f": pa.array(maybe(rng.normal(size=n).astype(np.float32).tolist()), pa.float32()),
        "d": pa.array(maybe(rng.normal(size=n).tolist()), pa.float64()),
        "flag": pa.array(maybe((rng.random(n) < 0.5).tolist()), pa.bool_()),
        "day": pa.array(maybe([dt.date(2020, 1, 1) + dt.timedelta(days=int(x)) for x in rng.integers(0, 900, n)]),
                        pa.date32()),
        "ts": pa.array(maybe(rng.integers(0, 2 ** 50, n).tolist()), pa.timestamp("us")),
        "tms": pa.array(maybe(rng.integers(0, 2 ** 40, n).tolist()), pa.timestamp("ms")),
        "dec": pa.array(maybe([decimal.Decimal(int(x)).scaleb(-3) for x in rng.integers(-10 ** 8, 10 ** 8, n)]),
                        pa.decimal128(12, 3)),
        "arr": pa.array(maybe([list(range(int(x))) for x in rng.integers(0, 4, n)]), pa.list_(pa.int32())),
        "st": pa.array(maybe([{"x": i, "y": f"y{i}"} for i in range(n)]),
                       pa.struct([("x", pa.int32()), ("y", pa.string())])),
        "m": pa.array(maybe([{"a": i, "b": -i} for i in range(n)]), pa.map_(pa.string(), pa.int64())),
    })


def _write(t, data, kinds=None):
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(data, row_kinds=kinds)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def _rows(t):
    return sorted(t.to_arrow().to_pylist(), key=repr)


def _data_files(root: Path):
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.startswith(("data-", "changelog-")))


def _run(catalog, name, fmt, kind, extra=None):
    pks, options = KINDS[kind]
    # the lookup changelog producer joins on keys, which Arrow refuses for nested value columns
    # (a limit of impl.mergetree.changelog whatever the format)
    schema = pa.schema([f for f in SCHEMA if not pa.types.is_nested(f.type)]) if kind == "changelog-lookup" else SCHEMA
    t = catalog.create_table(f"db.{name}", schema=schema, primary_keys=pks,
                             options={**options, "file.format": fmt, **(extra or {})})
    rng = np.random.default_rng(7)
    changes = []
    for rnd in range(4):
        data = _batch(rng, 60, f"r{rnd}").select(t.schema.field_names)
        kinds = None
        if kind in ("deduplicate", "deletion-vectors", "changelog-input", "changelog-lookup") and rnd >= 2:
            kinds = pa.array(np.where(rng.random(60) < 0.2, 3, 0).astype(np.int8))
        _write(t, data, kinds)
        if rnd == 2:
            t.compact(full=True)
    if kind.startswith("changelog"):
        latest = t.latest_snapshot().id
        changes = sorted(t.copy({"incremental-between": f"0,{latest}"}).to_arrow().to_pylist(), key=repr)
    return t, _rows(t), changes


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_format_reads_and_writes_like_parquet(tmp_path, fmt, kind):
    catalog = impl.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    _, want, want_changes = _run(catalog, "p", "parquet", kind)
    t, got, got_changes = _run(catalog, "x", fmt, kind)
    assert got == want
    assert got_changes == want_changes
    files = _data_files(tmp_path / "wh" / "db.db" / "x")
    assert files and all(f.suffix == "." + fmt for f in files)
    for f in files:  # each file is a valid file of its format, as the format's own library reads it
        if fmt == "orc":
            assert po.ORCFile(str(f)).nrows >= 1
        else:
            import fastavro
            with open(f, "rb") as fh:
                assert sum(1 for _ in fastavro.reader(fh)) >= 1
    # statistics of the files: equal to the Parquet table's file for file (same rows, same writer order)
    want_stats = _value_stats(catalog.get_table("db.p"))
    assert _value_stats(t) == want_stats


def _value_stats(t):
    out = []
    for split in t.new_read_builder().new_scan().plan().splits():
        for f in split.files:
            out.append((f.row_count, f.value_stats, f.key_stats, f.min_key, f.max_key, f.level, f.value_stats_cols))
    return sorted(out, key=repr)


def test_format_changed_by_alter_reads_every_file(tmp_path):
    catalog = impl.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    for pks in ([], ["id"]):
        name = f"db.t{len(pks)}"
        t = catalog.create_table(name, schema=SCHEMA, primary_keys=pks, options={"bucket": "1"} if pks else {})
        rng = np.random.default_rng(1)
        expected = {}
        rows = []
        for fmt in ("parquet", "orc", "avro"):
            if fmt != "parquet":
                catalog.alter_table(name, [SchemaChange.set_option("file.format", fmt)])
            t = catalog.get_table(name)
            data = _batch(rng, 30, fmt)
            _write(t, data)
            for r in data.to_pylist():
                expected[r["id"]] = r
                rows.append(r)
        t = catalog.get_table(name)
        want = sorted(expected.values() if pks else rows, key=repr)
        exts = {f.suffix for f in _data_files(tmp_path / "wh" / "db.db" / name.split(".")[1])}
        assert exts == {".parquet", ".orc", ".avro"}
        files_table = catalog.get_table(name + "$files").to_arrow()
        assert set(files_table.column("file_format").to_pylist()) == {"parquet", "orc", "avro"}
        assert _rows(t) == want
        t.compact(full=True)  # compaction writes the table's current format
        assert _rows(t) == want
        live = {f.file_name.rsplit(".", 1)[1] for s in t.new_read_builder().new_scan().plan().splits()
                for f in s.files}
        assert live == {"avro"}


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_schema_evolution_by_field_id(tmp_path, fmt):
    catalog = impl.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.string()), ("c", pa.int32())])
    for pks in ([], ["id"]):
        name = f"db.e{len(pks)}"
        catalog.create_table(name, schema=schema, primary_keys=pks,
                             options={"file.format": fmt, **({"bucket": "1"} if pks else {})})
        _write(catalog.get_table(name), pa.table({"id": pa.array([1, 2], pa.int64()), "a": pa.array([10, 20], pa.int32()),
                                                  "b": ["x", "y"], "c": pa.array([7, None], pa.int32())}))
        catalog.alter_table(name, [SchemaChange.rename_column("b", "bb"), SchemaChange.drop_column("a"),
                                   SchemaChange.add_column("a", "BIGINT"),
                                   SchemaChange.update_column_type("c", "BIGINT")])
        t = catalog.get_table(name)
        _write(t, pa.table({"id": pa.array([3], pa.int64()), "bb": ["z"], "c": pa.array([2 ** 40], pa.int64()),
                            "a": pa.array([5], pa.int64())}))
        got = sorted(catalog.get_table(name).to_arrow().to_pylist(), key=lambda r: r["id"])
        assert got == [{"id": 1, "bb": "x", "c": 7, "a": None}, {"id": 2, "bb": "y", "c": None, "a": None},
                       {"id": 3, "bb": "z", "c": 2 ** 40, "a": 5}]
        catalog.get_table(name).compact(full=True)
        assert sorted(catalog.get_table(name).to_arrow().to_pylist(), key=lambda r: r["id"]) == got


def test_per_level_formats_and_compressions(tmp_path):
    catalog = impl.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.l", schema=SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "file.format": "parquet", "file.format.per.level": "0:avro,5:orc",
        "file.compression.per.level": "5:lz4", "num-levels": "6"})
    rng = np.random.default_rng(3)
    expected = {}
    for rnd in range(2):
        data = _batch(rng, 40, f"r{rnd}")
        _write(t, data)
        expected.update({r["id"]: r for r in data.to_pylist()})
    level0 = {f.name.rsplit(".", 1)[1] for f in _data_files(tmp_path / "wh" / "db.db" / "l")}
    assert level0 == {"avro"}
    t.compact(full=True)
    files = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert {(f.level, f.file_name.rsplit(".", 1)[1]) for f in files} == {(5, "orc")}
    path = next(p for p in _data_files(tmp_path / "wh" / "db.db" / "l") if p.name == files[0].file_name)
    assert po.ORCFile(str(path)).compression == "LZ4"
    assert _rows(t) == sorted(expected.values(), key=repr)


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_corrupt_file_is_reported_naming_it(tmp_path, fmt):
    catalog = impl.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.c", schema=SCHEMA, options={"file.format": fmt})
    _write(t, _batch(np.random.default_rng(0), 20, "a"))
    (path,) = _data_files(tmp_path / "wh" / "db.db" / "c")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFileError, match=path.name):
        catalog.get_table("db.c").to_arrow()


@pytest.mark.parametrize("options, match", [
    ({"file.format": "orc", "file.compression": "brotli"}, "file.compression"),
    ({"file.format": "avro", "file.compression": "lz4"}, "file.compression"),
    ({"file.format": "avro", "avro.codec": "bzip2"}, "avro.codec"),
    ({"file.format": "orc", "orc.compress": "LZO"}, "orc.compress"),
    ({"file.format": "orc", "orc.no-such-option": "1"}, "orc.no-such-option"),
    ({"file.format": "lance"}, "lance.*Paimon 1.3"),
    ({"file.format.per.level": "0:lance"}, "lance"),
    ({"file.format.per.level": "zero:orc"}, "file.format.per.level"),
])
def test_unsupported_options_are_refused_by_name(tmp_path, options, match):
    catalog = impl.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    with pytest.raises(InvalidOptionError, match=match):
        catalog.create_table("db.o", schema=SCHEMA, options=options)


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_format_options_are_written(tmp_path, fmt):
    catalog = impl.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    options = {"file.format": fmt, "file.compression": "none"}
    if fmt == "avro":
        options["avro.codec"] = "deflate"
    else:
        options.update({"orc.compress": "ZLIB", "orc.row.index.stride": "1000"})
    t = catalog.create_table("db.o", schema=SCHEMA, options=options)
    data = _batch(np.random.default_rng(0), 50, "a")
    _write(t, data)
    (path,) = _data_files(tmp_path / "wh" / "db.db" / "o")
    if fmt == "orc":
        f = po.ORCFile(str(path))
        assert f.compression == "ZLIB" and f.row_index_stride == 1000
        ids = [f.schema.field(i).metadata[b"paimon.id"] for i in range(len(f.schema))]
        assert ids == [str(fd.id).encode() for fd in t.schema.fields]
    else:
        import fastavro
        with open(path, "rb") as fh:
            assert fastavro.reader(fh).codec == "deflate"
    assert sorted(t.to_arrow().to_pylist(), key=repr) == sorted(data.to_pylist(), key=repr)


def test_avro_codecs_read_or_refused_by_name(tmp_path):
    """Java writes Avro data files with avro.codec snappy (read through polars) or bzip2 / xz
    (refused by name, never reported as corrupt)."""
    import polars as pl

    from impl.format.file_format import UnsupportedFileFormatError
    from impl.format.formats import open_reader
    df = pl.DataFrame({"id": [1, 2, 3], "s": ["a", None, "c"]})
    path = tmp_path / "data-x-0.avro"
    df.write_avro(path, compression="snappy")
    got = open_reader(path.read_bytes(), str(path)).read(["s", "id"])
    assert got.to_pylist() == [{"s": "a", "id": 1}, {"s": None, "id": 2}, {"s": "c", "id": 3}]
    data = path.read_bytes().replace(b"\x0csnappy", b"\x0abzip2", 1)
    with pytest.raises(UnsupportedFileFormatError, match="codec 'bzip2'"):
        open_reader(data, str(path)).read()


def test_parquet_reader_reads_asked_columns_in_asked_order(tmp_path):
    """impl's Parquet reader selects top-level columns by their leaf columns (a struct, list or
    map has several): every mix of flat and nested columns, in the order asked, equals pyarrow's
    own read; columns the file lacks are left out; a filtered read agrees with the whole one."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from impl.format.formats import open_reader
    data = _batch(np.random.default_rng(3), 500, "p")
    data = data.append_column("a.b", data.column("k"))  # a dotted name is one flat column, not a path
    path = tmp_path / "data-x-0.parquet"
    pq.write_table(data, path, row_group_size=128)
    raw = path.read_bytes()
    for columns in (["m", "id"], ["st", "arr", "s"], ["tms", "st", "m", "arr", "k"], ["arr"], ["a.b", "st"], None):
        got = open_reader(raw, str(path)).read(columns)
        assert got.equals(pq.read_table(path, columns=columns)), columns
    assert open_reader(raw, str(path)).read(["nope", "k", "id"]).column_names == ["k", "id"]
    where = open_reader(raw, str(path)).read_where(["id", "st"], pc.field("id") < 10)
    assert where.equals(data.select(["id", "st"]).filter(pc.field("id") < 10))


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_nested_temporal_values_and_sliced_writes_round_trip(tmp_path, monkeypatch, fmt):
    """Timestamps inside structs, lists and maps keep their value whatever the local time zone
    (Avro: written as the integers Avro stores, never as naive datetimes), and rows written from
    a slice of a batch are those rows (pyarrow's ORC writer drops the offset of a sliced struct)."""
    import time
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        sch = pa.schema([("id", pa.int64()), ("st", pa.struct([("t", pa.timestamp("us")), ("d", pa.date32())])),
                         ("l", pa.list_(pa.timestamp("ms"))), ("m", pa.map_(pa.string(), pa.timestamp("us"))),
                         ("t0", pa.timestamp("s"))])
        data = pa.table({
            "id": [1, 2, 3],
            "st": [{"t": dt.datetime(2020, 1, 1, 5, 6, 7, 8), "d": dt.date(2020, 2, 3)}, None, {"t": None, "d": None}],
            "l": [[dt.datetime(2021, 1, 1, 0, 0, 0, 1000)], None, [None]],
            "m": [{"a": dt.datetime(2022, 1, 1, 1, 1, 1, 1)}, None, {"b": None}],
            "t0": [dt.datetime(2020, 1, 1, 1, 1, 1), None, None]}, schema=sch)
        cat = impl.Catalog(str(tmp_path / "wh"))
        cat.create_database("db")
        t = cat.create_table("db.n", schema=sch, options={"file.format": fmt})
        t.write_arrow(data.slice(1))
        t.write_arrow(data)
        got = sorted(cat.get_table("db.n").to_arrow().to_pylist(), key=lambda r: r["id"])
        assert got == sorted(data.slice(1).to_pylist() + data.to_pylist(), key=lambda r: r["id"])
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()

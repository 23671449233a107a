"""Manifests and manifest lists in every Avro shape other writers produce, on every reading path.

Paimon Java reads a manifest by field name (``FieldReaderFactory.RowReader``): record names and
namespaces do not matter, fields it does not know are skipped, fields the file lacks read as
null. A top-level ``["null", record]`` union (pypaimon-rust 0.4.0's manifests and manifest
lists) reads its record branch (``AvroRowDatumReader``), and a null row is an error. impl's
three manifest readers -- fastavro record by record, the partition-filtered fastavro reader and
the polars column decoder -- must each give the entries of such files, equal to what they give
for impl's own shape; the column path is asserted to have run (a silent fallback would hide a
slow path).
"""

from __future__ import annotations

import copy
import io

import fastavro
import pytest
from core_helpers import memory_root
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_avro import _entries, _entry

from impl.data.binary_row import encode_row
from impl.data.types import BIGINT, STRING
from impl.datafile.meta import SimpleStats
from impl.errors import CorruptMetadataError
from impl.format import avro, avro_columns
from impl.fs.paths import TablePaths
from impl.manifest import columnar_entries
from impl.manifest.manifest_file import COLUMNAR_MIN_ENTRIES, ManifestFile, ManifestList
from impl.manifest.records import FileKind, ManifestEntry, ManifestFileMeta


def _renamed(schema: dict, namespace: str) -> dict:
    """``schema`` with every record name moved into ``namespace`` (as Java names them)."""
    out = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "record":
                node["name"] = f"{namespace}.{node['name']}_{id(node)}"
                for f in node["fields"]:
                    f["type"] = walk(f["type"])
            elif node.get("type") == "array":
                node["items"] = walk(node["items"])
            return node
        if isinstance(node, list):
            return [walk(b) for b in node]
        return node

    return walk(out)


_EXTRA_FIELDS = [{"name": "_FROM_A_NEWER_WRITER", "type": ["null", "string"], "default": None},
                 {"name": "_SOME_INT", "type": "int", "default": 7},
                 {"name": "_SOME_RECORD", "type": {"type": "record", "name": "Extra", "fields": [
                     {"name": "x", "type": {"type": "array", "items": "long"}}]}, "default": {"x": [1, 2]}}]


def _with_extra_fields(schema: dict) -> dict:
    """``schema`` with fields impl does not know, at the top and inside ``_FILE``, interleaved."""
    out = copy.deepcopy(schema)
    fields = out["fields"]
    out["fields"] = [fields[0], _EXTRA_FIELDS[0], *fields[1:3], _EXTRA_FIELDS[1], *fields[3:], _EXTRA_FIELDS[2]]
    for f in out["fields"]:
        if f["name"] == "_FILE":
            inner = copy.deepcopy(f["type"])
            inner["fields"] = [*inner["fields"][:4], dict(_EXTRA_FIELDS[1], name="_FILE_EXTRA"), *inner["fields"][4:]]
            f["type"] = inner
    return out


def _nullable_stats(schema: dict) -> dict:
    """``schema`` with its stats records declared ``["null", record]``, as pypaimon-rust does."""
    out = copy.deepcopy(schema)
    for record in [out] + [f["type"] for f in out["fields"] if f["name"] == "_FILE"]:
        for f in record["fields"]:
            if f["name"] in ("_KEY_STATS", "_VALUE_STATS", "_PARTITION_STATS"):
                f["type"], f["default"] = ["null", f["type"]], None
    return out


def _container(schema, records: list, sync_interval: int = 16000) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="zstandard", sync_interval=sync_interval)
    return buf.getvalue()


def _rust_shape(schema: dict) -> list:
    """pypaimon-rust 0.4.0's shape: ``["null", record]`` at the top, nullable stats records,
    Java's generated record names."""
    return ["null", _renamed(_nullable_stats(schema), "org.apache.paimon.avro.generated")]


SHAPES = {
    "impl": lambda s: s,
    "union-null-first": lambda s: ["null", s],
    "union-null-last": lambda s: [s, "null"],
    "renamed": lambda s: _renamed(s, "org.apache.paimon.avro.generated"),
    "extra-fields": _with_extra_fields,
    "pypaimon-rust": _rust_shape,
    "everything": lambda s: ["null", _with_extra_fields(_rust_shape(s)[1])],
}


def _fastavro_path(data: bytes) -> list[ManifestEntry]:
    return [ManifestEntry.from_avro(r, "m") for r in avro.read_avro(data, "m", "ManifestEntry", ("_KIND", "_FILE"))]


@pytest.mark.parametrize("shape", SHAPES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(_entries, min_size=1, max_size=8), sync_interval=st.sampled_from([1, 200, 16000]),
       data=st.data())
def test_every_reader_reads_every_shape(shape, entries, sync_interval, data):
    raw = _container(SHAPES[shape](avro.MANIFEST_ENTRY_SCHEMA), [e.to_avro() for e in entries], sync_interval)
    assert _fastavro_path(raw) == entries
    columnar = columnar_entries.manifest_entries(raw)
    assert columnar is not None, "the column path fell back"
    assert columnar == entries
    keep = data.draw(st.sets(st.sampled_from([e.partition for e in entries])))
    expected = [(i, e) for i, e in enumerate(entries) if e.partition in keep]
    kept, parts, total = avro.read_manifest_entry_records(raw, "m", keep.__contains__)
    assert [(i, ManifestEntry.from_avro(r, "m")) for i, r in kept] == expected
    assert parts == {e.partition for e in entries} and total == len(entries)
    filtered = columnar_entries.partition_entries(raw, keep.__contains__)
    assert filtered is not None, "the partition-filtered column path fell back"
    assert filtered[0] == expected and filtered[1] == parts and filtered[2] == total


def test_the_union_shape_takes_the_fast_partition_reader(monkeypatch):
    """The partition-filtered fastavro reader skips the _FILE of other partitions in a union
    file too (it does not fall back to decoding every record)."""
    calls = []
    monkeypatch.setattr(avro, "read_avro", lambda *a, **k: calls.append(a) or [])
    p1, p2 = encode_row([1], [BIGINT()]), encode_row([2], [BIGINT()])
    entries = [_entry("a", partition=p1), _entry("b", partition=p2)]
    raw = _container(_rust_shape(avro.MANIFEST_ENTRY_SCHEMA), [e.to_avro() for e in entries])
    kept, parts, total = avro.read_manifest_entry_records(raw, "m", {p2}.__contains__)
    assert not calls and [ManifestEntry.from_avro(r, "m") for _, r in kept] == entries[1:] and total == 2


def test_manifest_file_reads_each_shape_through_its_public_reader():
    fio, root = memory_root()
    paths = TablePaths(root)
    entries = [_entry(f"data-{i}.parquet", bucket=i, partition=encode_row([i % 2], [BIGINT()])) for i in range(6)]
    expected_metas = []
    for n, shape in enumerate(SHAPES):
        name = f"manifest-{n}"
        raw = _container(SHAPES[shape](avro.MANIFEST_ENTRY_SCHEMA), [e.to_avro() for e in entries])
        fio.write_bytes(paths.manifest_path(name), raw)
        expected_metas.append(ManifestFileMeta(name, len(raw), len(entries), 0, schema_id=n))
    odd = encode_row([1], [BIGINT()])
    for meta in expected_metas:
        assert ManifestFile(fio, paths).read_manifest(meta) == entries
        assert ManifestFile(fio, paths).read_manifest(meta, odd.__eq__) == entries[1::2]
    # manifest lists in every shape
    for n, shape in enumerate(SHAPES):
        list_schema = SHAPES[shape](avro.MANIFEST_FILE_META_SCHEMA)
        name = f"manifest-list-{n}"
        fio.write_bytes(paths.manifest_path(name), _container(list_schema, [m.to_avro() for m in expected_metas]))
        assert ManifestList(fio, paths).read(name) == expected_metas


@pytest.mark.parametrize("count", [COLUMNAR_MIN_ENTRIES - 1, COLUMNAR_MIN_ENTRIES, 3 * COLUMNAR_MIN_ENTRIES])
def test_manifest_file_decodes_small_manifests_with_fastavro_and_others_column_wise(monkeypatch, count):
    """The column path costs about a millisecond whatever the size, so ManifestFile leaves
    manifests of fewer than COLUMNAR_MIN_ENTRIES entries to fastavro: both give the same
    entries, whole and partition-filtered, and the column path runs exactly from the threshold."""
    ran: list[str] = []
    for name in ("manifest_entries", "partition_entries"):
        original = getattr(columnar_entries, name)
        monkeypatch.setattr(columnar_entries, name,
                            lambda *a, _o=original, _n=name: ran.append(_n) or _o(*a))
    fio, root = memory_root()
    paths = TablePaths(root)
    entries = [_entry(f"data-{i}.parquet", bucket=i % 4, partition=encode_row([i % 3], [BIGINT()]))
               for i in range(count)]
    raw = _container(avro.MANIFEST_ENTRY_SCHEMA, [e.to_avro() for e in entries])
    fio.write_bytes(paths.manifest_path("m"), raw)
    meta = ManifestFileMeta("m", len(raw), count, 0, schema_id=0)
    wanted = encode_row([1], [BIGINT()])
    assert ManifestFile(fio, paths).read_manifest(meta, wanted.__eq__) == entries[1::3]
    assert ManifestFile(fio, paths).read_manifest(meta) == entries
    column_wise = count >= COLUMNAR_MIN_ENTRIES
    assert ran == (["partition_entries", "manifest_entries"] if column_wise else [])


def test_missing_optional_fields_read_as_java_defaults_them():
    """Fields a writer schema lacks read as null, as Java's RowReader gives them: the nullable
    fields of a manifest list (buckets, levels, row ids, total buckets, extra files) and the
    null counts of stats; a manifest list of Paimon 0.x shape (no _MIN_BUCKET ...) reads."""
    optional = {"_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL", "_MIN_ROW_ID", "_MAX_ROW_ID",
                "_TOTAL_BUCKETS", "_EXTRA_FILES"}
    schema = copy.deepcopy(avro.MANIFEST_FILE_META_SCHEMA)
    schema["fields"] = [f for f in schema["fields"] if f["name"] not in optional]
    stats = schema["fields"][5]["type"]
    stats["fields"] = [f for f in stats["fields"] if f["name"] != "_NULL_COUNTS"]
    meta = ManifestFileMeta("manifest-a", 10, 2, 1, SimpleStats(b"x", b"y", None), 3, min_bucket=None)
    record = {k: v for k, v in meta.to_avro().items() if k not in optional}
    fio, root = memory_root()
    paths = TablePaths(root)
    for shape in ("impl", "pypaimon-rust"):
        s = schema if shape == "impl" else ["null", _renamed(schema, "x.y")]
        fio.write_bytes(paths.manifest_path(f"list-{shape}"), _container(s, [record]))
        assert ManifestList(fio, paths).read(f"list-{shape}") == [meta]


@pytest.mark.parametrize("shape", ["union-null-first", "union-null-last"])
def test_a_null_row_is_a_corrupt_file_named_on_every_path(shape):
    """A null row in a union-shaped manifest: Java fails ("Cannot read a null row"); every path
    here reports the file as corrupt (the column path declines, fastavro names the file)."""
    entries = [_entry("a"), _entry("b")]
    schema = SHAPES[shape](avro.MANIFEST_ENTRY_SCHEMA)
    raw = _container(schema, [entries[0].to_avro(), None, entries[1].to_avro()])
    assert columnar_entries.manifest_entries(raw) is None
    assert columnar_entries.partition_entries(raw, lambda p: True) is None
    fio, root = memory_root()
    paths = TablePaths(root)
    fio.write_bytes(paths.manifest_path("manifest-n"), raw)
    with pytest.raises(CorruptMetadataError, match="manifest-n.*null ManifestEntry record"):
        ManifestFile(fio, paths).read("manifest-n")
    with pytest.raises(CorruptMetadataError, match="manifest-n.*null ManifestEntry record"):
        ManifestFile(fio, paths).read_manifest(ManifestFileMeta("manifest-n", len(raw), 3, 0), lambda p: True)
    fio.write_bytes(paths.manifest_path("list-n"), _container(SHAPES[shape](avro.MANIFEST_FILE_META_SCHEMA), [None]))
    with pytest.raises(CorruptMetadataError, match="list-n.*null ManifestFileMeta record"):
        ManifestList(fio, paths).read("list-n")


def test_a_union_of_other_branches_is_still_refused():
    """Only a union of null and a record is a manifest: other unions are corrupt, as before."""
    schema = ["null", "string"]
    raw = _container(schema, ["x"])
    assert columnar_entries.manifest_entries(raw) is None
    with pytest.raises(CorruptMetadataError, match="expected ManifestEntry records"):
        _fastavro_path(raw)


def test_stats_records_declared_nullable_but_null_are_corrupt():
    """pypaimon-rust declares the stats records nullable; a null one is not readable by Java
    (SimpleStats.fromRow of null) and is a corrupt entry here on both paths."""
    schema = _rust_shape(avro.MANIFEST_ENTRY_SCHEMA)
    r = _entry("a").to_avro()
    r["_FILE"]["_VALUE_STATS"] = None
    raw = _container(schema, [r])
    assert columnar_entries.manifest_entries(raw) is None
    with pytest.raises(CorruptMetadataError, match="bad manifest entry"):
        _fastavro_path(raw)


def test_kinds_and_strings_survive_the_branch_column():
    """The synthetic branch column never leaks into entries (a DELETE entry with string stats)."""
    e = ManifestEntry(FileKind.DELETE, encode_row(["p"], [STRING()]), 3, 4,
                      _entry("x", value_stats=SimpleStats(encode_row(["a"], [STRING()]),
                                                          encode_row(["z"], [STRING()]), (0,))).file)
    raw = _container(["null", avro.MANIFEST_ENTRY_SCHEMA], [e.to_avro()])
    decoded = avro_columns.decode_blocks(raw)
    table = avro_columns.read_columns(decoded)
    assert "_VERSION" in table.column_names and not any(c.startswith("__") for c in table.column_names)
    assert columnar_entries.manifest_entries(raw) == [e]

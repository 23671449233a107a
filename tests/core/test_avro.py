"""Avro manifests, manifest lists and index manifests: schemas equal pypaimon 2.1.0's, codec
zstandard, lossless round trips, and pypaimon's own records read through our readers."""

from __future__ import annotations

import datetime as dt
import io
import json
import re

import fastavro
import pytest
from core_helpers import memory_root
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impl.data.binary_row import encode_row
from impl.data.types import BIGINT, STRING
from impl.datafile.meta import DataFileMeta, FileSource, SimpleStats
from impl.errors import CorruptMetadataError
from impl.format import avro, avro_columns, avro_encode, partition_blocks
from impl.fs.paths import TablePaths
from impl.manifest import columnar_entries
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList
from impl.manifest.records import (
    DeletionVectorMeta,
    FileKind,
    GlobalIndexMeta,
    IndexFileMeta,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
)

OUR_SCHEMAS = {
    "ManifestEntry": avro.MANIFEST_ENTRY_SCHEMA,
    "ManifestFileMeta": avro.MANIFEST_FILE_META_SCHEMA,
}


def _as_json(schema: dict):
    return json.loads(json.dumps(schema))


def _file_header(data: bytes) -> tuple[str, dict]:
    r = fastavro.reader(io.BytesIO(data))
    return r.metadata["avro.codec"], json.loads(r.metadata["avro.schema"])


def _tree_sizes(dump) -> dict[str, int]:
    sizes = {}
    for line in dump.tree_lines:
        m = re.match(r"^\s*(\S+)\s+\((\d+) B\)$", line)
        if m:
            sizes[m.group(1)] = int(m.group(2))
    return sizes


# ----------------------------------------------------------------------------- schemas


def test_schemas_equal_pypaimon_schemas(reference_dump):
    checked = set()
    for sec in reference_dump.avro:
        name = sec.schema["name"]
        assert sec.codec == "zstandard"
        assert _as_json(OUR_SCHEMAS[name]) == sec.schema, f"{name} schema differs from {sec.path}"
        checked.add(name)
    assert checked == {"ManifestEntry", "ManifestFileMeta"}


def test_index_manifest_schema_matches_format_md():
    """The dump holds no index manifest schema; FORMAT.md's field list (and Java's order) is the reference."""
    fields = avro.INDEX_MANIFEST_ENTRY_SCHEMA["fields"]
    assert avro.INDEX_MANIFEST_ENTRY_SCHEMA["name"] == "IndexManifestEntry"
    required = [(f["name"], f["type"]) for f in fields[:8]]
    assert required == [
        ("_VERSION", "int"), ("_KIND", "int"), ("_PARTITION", "bytes"), ("_BUCKET", "int"),
        ("_INDEX_TYPE", "string"), ("_FILE_NAME", "string"), ("_FILE_SIZE", "long"), ("_ROW_COUNT", "long"),
    ]
    optional = fields[8:]
    assert [f["name"] for f in optional] == ["_DELETIONS_VECTORS_RANGES", "_EXTERNAL_PATH", "_GLOBAL_INDEX"]
    for f in optional:
        assert f["type"][0] == "null" and f["default"] is None
    assert optional[1]["type"] == ["null", "string"]
    dv = optional[0]["type"][1]
    assert dv["type"] == "array"
    assert [x["name"] for x in dv["items"]["fields"]] == ["f0", "f1", "f2", "_CARDINALITY"]


def test_written_files_carry_zstandard_and_the_reference_schema(reference_dump):
    fio, root = memory_root()
    paths = TablePaths(root)
    mf = ManifestFile(fio, paths, [STRING(False)])
    metas = mf.write([_entry("f-1", partition=encode_row(["2024-01-01"], [STRING(False)]))])
    ml = ManifestList(fio, paths)
    list_name, list_size = ml.write(metas)
    index_name = IndexManifestFile(fio, paths).write([_index_entry("idx-1")])

    ref = {s.schema["name"]: s.schema for s in reference_dump.avro}
    codec, schema = _file_header(fio.read_bytes(paths.manifest_path(metas[0].file_name)))
    assert codec == "zstandard" and schema == ref["ManifestEntry"]
    codec, schema = _file_header(fio.read_bytes(paths.manifest_path(list_name)))
    assert codec == "zstandard" and schema == ref["ManifestFileMeta"]
    assert list_size == fio.file_size(paths.manifest_path(list_name))
    assert metas[0].file_size == fio.file_size(paths.manifest_path(metas[0].file_name))
    codec, schema = _file_header(fio.read_bytes(paths.manifest_path(index_name)))
    assert codec == "zstandard" and schema["name"] == "IndexManifestEntry"


def test_empty_manifest_list_has_pypaimons_size(reference_dump):
    """pypaimon's first base manifest list (no records) is 1234 bytes; ours must be the same file."""
    snap = json.loads(reference_dump.json_files["db.db/append_t/snapshot/snapshot-1"])
    fio, root = memory_root()
    _, size = ManifestList(fio, TablePaths(root)).write([])
    assert size == snap["baseManifestListSize"] == 1234


def test_reencoding_pypaimon_records_gives_pypaimon_file_sizes(reference_dump):
    """Same schema, codec and record encoding: the files we write for pypaimon's records have
    exactly the sizes pypaimon's files have (only the random sync marker may differ)."""
    sizes = _tree_sizes(reference_dump)
    checked = 0
    for sec in reference_dump.avro:
        if not sec.records:
            continue
        if sec.schema["name"] == "ManifestEntry":
            recs = [ManifestEntry.from_avro(r, sec.path).to_avro() for r in sec.records]
            data = avro.write_avro(avro.MANIFEST_ENTRY_SCHEMA, recs)
        else:
            recs = [ManifestFileMeta.from_avro(r, sec.path).to_avro() for r in sec.records]
            data = avro.write_avro(avro.MANIFEST_FILE_META_SCHEMA, recs)
        assert len(data) == sizes[sec.file_name], sec.path
        checked += 1
    assert checked >= 8


def test_manifest_file_meta_of_pypaimons_entries_matches_pypaimons(reference_dump):
    """Writing the entries of each manifest pypaimon wrote gives the very ManifestFileMeta its
    manifest list holds (counts, partition stats, bucket / level range, total buckets, size
    apart from the partition index impl keeps in the header)."""
    from impl.data.types import parse_type

    manifests = {s.file_name: s for s in reference_dump.avro_with_record("ManifestEntry")}
    checked = 0
    for sec in reference_dump.avro_with_record("ManifestFileMeta"):
        for rec in sec.records:
            schema = reference_dump.schema_of(sec.table)
            by_name = {f["name"]: f["type"] for f in schema["fields"]}
            ptype = [parse_type(by_name[k]) for k in schema["partitionKeys"]]
            fio, root = memory_root()
            entries = [ManifestEntry.from_avro(r, "x") for r in manifests[rec["_FILE_NAME"]].records]
            (meta,) = ManifestFile(fio, TablePaths(root), ptype).write(entries)
            ours = meta.to_avro()
            # the size without the partition index impl adds to the header (see partition_blocks)
            data = fio.read_bytes(TablePaths(root).manifest_path(meta.file_name))
            head = avro_encode.read_header(data)
            assert ours["_FILE_SIZE"] == len(data) and (partition_blocks.KEY in head.metadata) == bool(ptype)
            if ptype:
                ours["_FILE_SIZE"] -= len(avro_encode.avro_bytes(partition_blocks.KEY.encode())
                                          + avro_encode.avro_bytes(head.metadata[partition_blocks.KEY]))
            assert ours.pop("_FILE_NAME").startswith("manifest-")
            assert ours == {k: v for k, v in rec.items() if k != "_FILE_NAME"}, sec.path
            checked += 1
    assert checked == 4


# ----------------------------------------------------------------------------- pypaimon's records


def _normalize(record: dict) -> dict:
    """The dump prints timestamp-millis as an aware datetime; our dicts carry epoch millis."""
    out = {}
    for k, v in record.items():
        if isinstance(v, dict):
            out[k] = _normalize(v)
        elif isinstance(v, dt.datetime):
            out[k] = int((v - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) / dt.timedelta(milliseconds=1))
        else:
            out[k] = v
    return out


def test_pypaimon_manifest_entries_convert_both_ways(reference_dump):
    secs = reference_dump.avro_with_record("ManifestEntry")
    n = 0
    for sec in secs:
        for rec in sec.records:
            e = ManifestEntry.from_avro(rec, sec.path)
            assert e.kind is FileKind.ADD
            assert e.file.file_name == rec["_FILE"]["_FILE_NAME"] and e.file.file_name.endswith(".parquet")
            assert e.total_buckets == rec["_TOTAL_BUCKETS"]
            assert e.file.file_source is FileSource.APPEND
            assert e.file.creation_time_millis == int(rec["_FILE"]["_CREATION_TIME"].timestamp() * 1000)
            assert e.to_avro() == _normalize(rec)
            n += 1
    assert n == 8


def test_pypaimon_manifest_file_metas_convert_both_ways(reference_dump):
    n = 0
    for sec in reference_dump.avro_with_record("ManifestFileMeta"):
        for rec in sec.records:
            m = ManifestFileMeta.from_avro(rec, sec.path)
            assert m.file_name.startswith("manifest-")
            assert m.to_avro() == rec
            n += 1
    assert n == 4


def test_pypaimon_files_read_through_our_readers(reference_dump):
    """Re-create pypaimon's files from the dump (its schema, its records) and read them with ours."""
    fio, root = memory_root()
    paths = TablePaths(root)
    mf = ManifestFile(fio, paths, [STRING(False)])
    ml = ManifestList(fio, paths)
    for sec in reference_dump.avro:
        buf = io.BytesIO()
        fastavro.writer(buf, fastavro.parse_schema(sec.schema), sec.records, codec="zstandard")
        fio.write_bytes(paths.manifest_path(sec.file_name), buf.getvalue())
    for sec in reference_dump.avro:
        if sec.schema["name"] == "ManifestEntry":
            got = mf.read(sec.file_name)
            assert [e.to_avro() for e in got] == [_normalize(r) for r in sec.records]
        else:
            got = ml.read(sec.file_name)
            assert [m.to_avro() for m in got] == sec.records
    # pk_t's delta list names a manifest holding its three entries
    (meta,) = ml.read("manifest-list-745609f5-3ea6-487c-a5f9-d16db4696da8-1")
    entries = mf.read(meta.file_name)
    assert meta.num_added_files == len(entries) == 3
    assert {e.bucket for e in entries} == {meta.min_bucket, meta.max_bucket} == {0, 1}


def test_java_style_record_names_are_accepted():
    """Java Paimon names its records org.apache.paimon.avro.generated.record; fields decide."""
    fio, root = memory_root()
    paths = TablePaths(root)
    schema = dict(avro.MANIFEST_FILE_META_SCHEMA, name="org.apache.paimon.avro.generated.record")
    buf = io.BytesIO()
    meta = ManifestFileMeta("manifest-x-0", 10, 1, 0, min_bucket=0, max_bucket=0)
    fastavro.writer(buf, fastavro.parse_schema(schema), [meta.to_avro()], codec="null")
    fio.write_bytes(paths.manifest_path("manifest-list-java"), buf.getvalue())
    assert ManifestList(fio, paths).read("manifest-list-java") == [meta]


def test_file_of_another_record_kind_is_corrupt():
    fio, root = memory_root()
    paths = TablePaths(root)
    name, _ = ManifestList(fio, paths).write([ManifestFileMeta("m", 1, 1, 0)])
    with pytest.raises(CorruptMetadataError) as ei:
        ManifestFile(fio, paths).read(name)  # a manifest list is not a manifest
    assert ei.value.path == paths.manifest_path(name)


# ----------------------------------------------------------------------------- round trips


def _stats(draw_ints):
    return SimpleStats(encode_row(draw_ints, [BIGINT()] * len(draw_ints)),
                       encode_row(draw_ints, [BIGINT()] * len(draw_ints)),
                       tuple(0 for _ in draw_ints))


EMPTY_PARTITION = encode_row([], [])


def _entry(name: str, *, kind=FileKind.ADD, partition=EMPTY_PARTITION, bucket=0, total_buckets=1, **file_kw):
    f = DataFileMeta(file_name=name, file_size=100, row_count=3, **file_kw)
    return ManifestEntry(kind, partition, bucket, total_buckets, f)


def _index_entry(name: str, **kw):
    return IndexManifestEntry(FileKind.ADD, encode_row([], []), 0, IndexFileMeta("HASH", name, 16, 4, **kw))


_opt_strs = st.none() | st.lists(st.text(max_size=8), max_size=3).map(tuple)
_i64 = st.integers(-(2**63), 2**63 - 1)
_i32 = st.integers(-(2**31), 2**31 - 1)

_data_files = st.builds(
    DataFileMeta,
    file_name=st.text(min_size=1, max_size=20),
    file_size=st.integers(0, 2**40),
    row_count=st.integers(0, 2**40),
    min_key=st.lists(_i64, max_size=2).map(lambda v: encode_row(v, [BIGINT()] * len(v))),
    max_key=st.lists(_i64, max_size=2).map(lambda v: encode_row(v, [BIGINT()] * len(v))),
    key_stats=st.builds(SimpleStats, st.binary(max_size=20), st.binary(max_size=20),
                        st.none() | st.lists(st.none() | _i64, max_size=3).map(tuple)),
    value_stats=st.lists(_i64, max_size=3).map(_stats),
    min_sequence_number=_i64,
    max_sequence_number=_i64,
    schema_id=st.integers(0, 100),
    level=st.integers(0, 9),
    extra_files=st.lists(st.text(max_size=8), max_size=2).map(tuple),
    creation_time_millis=st.none() | st.integers(0, 2**42),
    delete_row_count=st.none() | st.integers(0, 2**40),
    embedded_file_index=st.none() | st.binary(max_size=16),
    file_source=st.none() | st.sampled_from(list(FileSource)),
    value_stats_cols=_opt_strs,
    external_path=st.none() | st.text(max_size=20),
    first_row_id=st.none() | _i64,
    write_cols=_opt_strs,
    write_cols_sequences=st.none() | st.lists(_i64, max_size=3).map(tuple),
)

_entries = st.builds(
    ManifestEntry,
    kind=st.sampled_from(list(FileKind)),
    partition=st.lists(st.text(max_size=10), min_size=1, max_size=1).map(lambda v: encode_row(v, [STRING()])),
    bucket=st.integers(0, 1000),
    total_buckets=st.integers(-1, 1000),
    file=_data_files,
)

_metas = st.builds(
    ManifestFileMeta,
    file_name=st.text(min_size=1, max_size=30),
    file_size=st.integers(0, 2**40),
    num_added_files=st.integers(0, 2**40),
    num_deleted_files=st.integers(0, 2**40),
    partition_stats=st.lists(_i64, max_size=2).map(_stats),
    schema_id=st.integers(0, 100),
    min_bucket=st.none() | _i32, max_bucket=st.none() | _i32,
    min_level=st.none() | _i32, max_level=st.none() | _i32,
    min_row_id=st.none() | _i64, max_row_id=st.none() | _i64,
    total_buckets=st.none() | _i32,
    extra_files=_opt_strs,
)

_index_files = st.builds(
    IndexFileMeta,
    index_type=st.sampled_from(["HASH", "DELETION_VECTORS"]),
    file_name=st.text(min_size=1, max_size=20),
    file_size=st.integers(0, 2**40),
    row_count=st.integers(0, 2**40),
    deletion_vector_ranges=st.none() | st.lists(
        st.builds(DeletionVectorMeta, st.text(max_size=10), _i32, _i32, st.none() | _i64), max_size=3).map(tuple),
    external_path=st.none() | st.text(max_size=10),
    global_index=st.none() | st.builds(GlobalIndexMeta, _i64, _i64, _i32,
                                       st.none() | st.lists(_i32, max_size=3).map(tuple),
                                       st.none() | st.binary(max_size=8), st.none() | st.binary(max_size=8)),
)

_index_entries = st.builds(IndexManifestEntry, st.sampled_from(list(FileKind)),
                           st.just(encode_row([], [])), st.integers(0, 100), _index_files)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_entries, min_size=1, max_size=6))
def test_manifest_round_trip(entries):
    fio, root = memory_root()
    paths = TablePaths(root)
    metas = ManifestFile(fio, paths, [STRING()]).write(entries)
    fresh = ManifestFile(fio, paths, [STRING()])  # no cache: really read the file
    assert fresh.read_all(metas) == entries
    assert sum(m.num_added_files for m in metas) == sum(e.kind is FileKind.ADD for e in entries)
    assert sum(m.num_deleted_files for m in metas) == sum(e.kind is FileKind.DELETE for e in entries)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_metas, max_size=6))
def test_manifest_list_round_trip(metas):
    fio, root = memory_root()
    ml = ManifestList(fio, TablePaths(root))
    name, size = ml.write(metas)
    assert ml.read(name) == metas
    assert size == fio.file_size(TablePaths(root).manifest_path(name))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_index_entries, max_size=5))
def test_index_manifest_round_trip(entries):
    fio, root = memory_root()
    imf = IndexManifestFile(fio, TablePaths(root))
    assert imf.read(imf.write(entries)) == entries


def test_all_optional_fields_set_and_unset_round_trip():
    full = DataFileMeta(
        "data-full.parquet", 1234, 10, encode_row([1], [BIGINT()]), encode_row([9], [BIGINT()]),
        _stats([1]), _stats([5, 6]), 3, 7, 2, 4, ("extra-1",), 1_700_000_000_123, 2, b"\x01idx",
        FileSource.COMPACT, ("a", "b"), "s3://bucket/ext/data-full.parquet", 100, ("a", "b"), (1, 2))
    bare = DataFileMeta("data-bare.parquet", 1, 1, creation_time_millis=None, delete_row_count=None,
                        file_source=None, value_stats_cols=None, key_stats=SimpleStats(null_counts=None))
    entries = [ManifestEntry(FileKind.ADD, encode_row([], []), 3, 8, full),
               ManifestEntry(FileKind.DELETE, encode_row([], []), 0, -1, bare)]
    fio, root = memory_root()
    paths = TablePaths(root)
    metas = ManifestFile(fio, paths).write(entries)
    raw = list(fastavro.reader(io.BytesIO(fio.read_bytes(paths.manifest_path(metas[0].file_name)))))
    assert raw[0]["_FILE"]["_CREATION_TIME"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.timezone.utc)
    assert raw[1]["_FILE"]["_CREATION_TIME"] is None and raw[1]["_FILE"]["_VALUE_STATS_COLS"] is None
    assert raw[0]["_FILE"]["_FILE_SOURCE"] == 1
    assert ManifestFile(fio, paths).read_all(metas) == entries


def test_rolling_manifest_writes_split_at_target_size():
    fio, root = memory_root()
    paths = TablePaths(root)
    mf = ManifestFile(fio, paths, target_file_size_bytes=1)  # every entry closes a file
    entries = [_entry(f"data-{i}.parquet") for i in range(5)]
    metas = mf.write(entries)
    assert len(metas) == 5
    assert ManifestFile(fio, paths).read_all(metas) == entries
    assert len({m.file_name for m in metas}) == 5


# ----------------------------------------------------------------------------- columnar decoding
# impl.format.avro_columns decodes manifests column-wise (polars); it must give exactly what
# fastavro + from_avro give, and it must really run (a silent fallback would hide a slow path).


def _fastavro_entries(data: bytes) -> list[ManifestEntry]:
    return [ManifestEntry.from_avro(r, "m") for r in fastavro.reader(io.BytesIO(data))]


def _manifest_bytes(schema: dict, records: list[dict], sync_interval: int = 16000) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="zstandard", sync_interval=sync_interval)
    return buf.getvalue()


def test_columnar_decoder_is_available():
    assert avro_columns.available(), "polars is a dependency: without it planning falls back to fastavro"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_entries, min_size=1, max_size=8), st.sampled_from([1, 200, 16000]))
def test_columnar_entries_equal_fastavro(entries, sync_interval):
    data = _manifest_bytes(avro.MANIFEST_ENTRY_SCHEMA, [e.to_avro() for e in entries], sync_interval)
    got = columnar_entries.manifest_entries(data)
    assert got is not None  # the columnar path ran
    assert got == _fastavro_entries(data) == entries


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_entries, min_size=1, max_size=12), st.sampled_from([1, 300, 16000]), st.data())
def test_partition_filtered_records_equal_filtering_every_record(entries, sync_interval, data):
    raw = _manifest_bytes(avro.MANIFEST_ENTRY_SCHEMA, [e.to_avro() for e in entries], sync_interval)
    keep_set = data.draw(st.sets(st.sampled_from([e.partition for e in entries])))
    kept, partitions, total = avro.read_manifest_entry_records(raw, "m", keep_set.__contains__)
    every = list(fastavro.reader(io.BytesIO(raw)))
    assert total == len(entries)
    assert partitions == {e.partition for e in entries}
    assert [(i, ManifestEntry.from_avro(r, "m")) for i, r in kept] == [
        (i, ManifestEntry.from_avro(r, "m")) for i, r in enumerate(every) if r["_PARTITION"] in keep_set]
    columnar = columnar_entries.partition_entries(raw, keep_set.__contains__)
    assert columnar is not None  # the columnar path ran
    got, parts, n = columnar
    assert got == [(i, ManifestEntry.from_avro(r, "m")) for i, r in kept]
    assert set(parts) == partitions and n == total


def test_columnar_reads_pypaimons_manifests(reference_dump):
    n = 0
    for sec in reference_dump.avro_with_record("ManifestEntry"):
        data = _manifest_bytes(sec.schema, sec.records)
        got = columnar_entries.manifest_entries(data)
        assert got is not None and got == _fastavro_entries(data)
        assert [e.to_avro() for e in got] == [_normalize(r) for r in sec.records]
        n += len(got)
    assert n == 8


def test_columnar_reads_a_writer_schema_without_the_newer_fields():
    """Java Paimon's older manifests lack the nullable tail fields: they read as None, as with
    fastavro (from_avro's dict.get), and a Java-style record name is accepted."""
    old_fields = {"_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE",
                  "_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS", "_WRITE_COLS_SEQUENCES"}
    file_schema = dict(avro.DATA_FILE_META_SCHEMA, fields=[
        f for f in avro.DATA_FILE_META_SCHEMA["fields"] if f["name"] not in old_fields])
    schema = dict(avro.MANIFEST_ENTRY_SCHEMA, name="org.apache.paimon.avro.generated.record", fields=[
        dict(f, type=file_schema) if f["name"] == "_FILE" else f for f in avro.MANIFEST_ENTRY_SCHEMA["fields"]])
    records = []
    for i in range(3):
        r = _entry(f"data-{i}.parquet", extra_files=("x",) * i, bucket=i).to_avro()
        r["_FILE"] = {k: v for k, v in r["_FILE"].items() if k not in old_fields}
        records.append(r)
    data = _manifest_bytes(schema, records)
    got = columnar_entries.manifest_entries(data)
    assert got is not None and got == _fastavro_entries(data)
    assert got[2].file.extra_files == ("x", "x") and got[0].file.delete_row_count is None
    assert got[0].file.file_source is None and got[0].file.creation_time_millis is None


def test_columnar_declines_what_it_cannot_read():
    """None (fastavro decodes, and reports corruption with the path) for garbage, a cut file and
    a file of another record kind."""
    data = _manifest_bytes(avro.MANIFEST_ENTRY_SCHEMA, [_entry(f"d-{i}").to_avro() for i in range(50)], 200)
    for bad in (b"not avro", data[: len(data) // 2], data[:-3]):
        assert columnar_entries.manifest_entries(bad) is None
        assert columnar_entries.partition_entries(bad, lambda p: True) is None
    other = _manifest_bytes(avro.MANIFEST_FILE_META_SCHEMA, [ManifestFileMeta("m", 1, 1, 0).to_avro()])
    assert columnar_entries.manifest_entries(other) is None


def test_columnar_decoding_in_chunks_equals_one_piece(monkeypatch):
    """A large manifest is decoded chunk by chunk (a worker decodes the next chunk while the
    entries of the last are built): the same entries, in file order."""
    entries = [_entry(f"data-{i}.parquet", bucket=i % 3, level=i % 2) for i in range(40)]
    data = _manifest_bytes(avro.MANIFEST_ENTRY_SCHEMA, [e.to_avro() for e in entries], sync_interval=200)
    decoded = avro_columns.decode_blocks(data)
    assert decoded.codec == "zstandard" and len(decoded.bodies) > 5
    chunks = columnar_entries._chunks(decoded, 7)
    assert len(chunks) > 3 and sum(c.total for c in chunks) == 40 and all(c.total >= 7 for c in chunks[:-1])
    monkeypatch.setattr(columnar_entries, "_CHUNK_RECORDS", 7)
    assert columnar_entries.manifest_entries(data) == entries

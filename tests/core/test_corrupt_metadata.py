"""Corrupt metadata is reported, never skipped: snapshots, schemas, manifests, manifest lists and
index manifests that are truncated, empty, garbage, of a wrong version or with wrong keys raise
CorruptMetadataError (or UnsupportedVersionError) whose message and ``.path`` name the file."""

from __future__ import annotations

import io
import json

import fastavro
import pytest
from core_helpers import memory_root

from impl.commit.file_store_commit import FileStoreCommit
from impl.commit.messages import CommitMessage
from impl.data.binary_row import encode_row
from impl.data.types import BIGINT, DataField
from impl.datafile.meta import DataFileMeta
from impl.errors import CorruptMetadataError, UnsupportedVersionError
from impl.format import avro
from impl.fs.paths import TablePaths
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList
from impl.manifest.records import FileKind, IndexFileMeta, IndexManifestEntry, ManifestEntry
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import CommitKind, Snapshot

SNAP = {"version": 3, "id": 1, "schemaId": 0, "baseManifestList": "manifest-list-a-0",
        "deltaManifestList": "manifest-list-a-1", "commitUser": "u", "commitIdentifier": 5,
        "commitKind": "APPEND", "timeMillis": 1000, "totalRecordCount": 3, "deltaRecordCount": 3}
SCHEMA = {"version": 3, "id": 0, "fields": [{"id": 0, "name": "id", "type": "BIGINT NOT NULL"}],
          "highestFieldId": 0, "partitionKeys": [], "primaryKeys": ["id"], "options": {"bucket": "1"},
          "comment": None, "timeMillis": 1}
PATH = "/wh/db.db/t/snapshot/snapshot-1"

GARBAGE = [b"", b"   ", b"\x00\xff\xfe\x80garbage", b"not json at all", b"\xef\xbb\xbf\xff", b"[1, 2, 3]",
           b'"a string"', b"null", b"42", b"{"]


def _raises_naming(fn, path: str, cls=CorruptMetadataError):
    with pytest.raises(cls) as ei:
        fn()
    assert isinstance(ei.value, CorruptMetadataError)
    assert ei.value.path == path
    assert path in str(ei.value)
    return ei.value


# ----------------------------------------------------------------------------- snapshot JSON


@pytest.mark.parametrize("key", sorted(k for k in SNAP if k not in ("totalRecordCount", "deltaRecordCount")))
def test_snapshot_missing_required_key(key):
    o = {k: v for k, v in SNAP.items() if k != key}
    err = _raises_naming(lambda: Snapshot.from_json_bytes(json.dumps(o).encode(), PATH), PATH)
    assert key in str(err)


@pytest.mark.parametrize("key", ["id", "schemaId", "baseManifestList", "commitUser", "commitKind", "timeMillis"])
def test_snapshot_required_key_null(key):
    o = dict(SNAP, **{key: None})
    _raises_naming(lambda: Snapshot.from_json_bytes(json.dumps(o).encode(), PATH), PATH)


@pytest.mark.parametrize("version", [1, 2, 4, "3", None])
def test_snapshot_wrong_version(version):
    o = dict(SNAP, version=version)
    _raises_naming(lambda: Snapshot.from_json_bytes(json.dumps(o).encode(), PATH), PATH, UnsupportedVersionError)


@pytest.mark.parametrize("key, value", [
    ("id", "1"), ("id", 1.5), ("id", True), ("id", [1]), ("schemaId", "0"), ("commitIdentifier", "5"),
    ("commitIdentifier", 5.0), ("timeMillis", {}), ("baseManifestList", 7), ("deltaManifestList", ["x"]),
    ("commitUser", 1), ("commitKind", "FOO"), ("commitKind", 1), ("totalRecordCount", "3"),
    ("deltaRecordCount", False), ("changelogManifestList", 5), ("watermark", "w"), ("properties", [1]),
    ("baseManifestListSize", "1234"), ("indexManifest", 3), ("statistics", 3),
])
def test_snapshot_wrong_type(key, value):
    o = dict(SNAP, **{key: value})
    err = _raises_naming(lambda: Snapshot.from_json_bytes(json.dumps(o).encode(), PATH), PATH)
    assert key in str(err) or repr(value) in str(err)


@pytest.mark.parametrize("raw", GARBAGE)
def test_snapshot_garbage_and_empty(raw):
    _raises_naming(lambda: Snapshot.from_json_bytes(raw, PATH), PATH)


def test_snapshot_truncated_at_every_length():
    raw = Snapshot.from_json_bytes(json.dumps(SNAP).encode(), PATH).to_json_bytes()
    for n in range(len(raw)):
        _raises_naming(lambda n=n: Snapshot.from_json_bytes(raw[:n], PATH), PATH)
    assert Snapshot.from_json_bytes(raw, PATH).id == 1


# ----------------------------------------------------------------------------- schema JSON


@pytest.mark.parametrize("mutation", [
    {"version": 2}, {"version": 4},
])
def test_schema_wrong_version(mutation):
    o = dict(SCHEMA, **mutation)
    _raises_naming(lambda: TableSchema.from_json_bytes(json.dumps(o).encode(), PATH), PATH, UnsupportedVersionError)


@pytest.mark.parametrize("o", [
    {k: v for k, v in SCHEMA.items() if k != "id"},
    {k: v for k, v in SCHEMA.items() if k != "fields"},
    {k: v for k, v in SCHEMA.items() if k != "version"},
    dict(SCHEMA, fields="id BIGINT"),
    dict(SCHEMA, fields=[{"id": 0, "name": "id"}]),
    dict(SCHEMA, fields=[{"id": 0, "type": "INT"}]),
    dict(SCHEMA, fields=[{"id": "x", "name": "id", "type": "INT"}]),
    dict(SCHEMA, fields=[5]),
    dict(SCHEMA, id="0"),
    dict(SCHEMA, options=["bucket", "1"]),
    dict(SCHEMA, partitionKeys="dt"),
    dict(SCHEMA, highestFieldId="0"),
    dict(SCHEMA, timeMillis="now"),
])
def test_schema_bad_content(o):
    _raises_naming(lambda: TableSchema.from_json_bytes(json.dumps(o).encode(), PATH), PATH)


@pytest.mark.parametrize("type_json", ["NOT_A_TYPE", {"type": "SOMETHING"}])
def test_schema_with_a_type_impl_cannot_represent_is_refused_not_corrupt(type_json):
    """A type name this library does not know may be a newer Paimon type: refused by name
    (UnsupportedTypeError naming the column), never reported as corruption."""
    from impl.data.types import UnsupportedTypeError
    o = dict(SCHEMA, fields=[{"id": 0, "name": "id", "type": type_json}])
    with pytest.raises(UnsupportedTypeError, match="column 'id' has type"):
        TableSchema.from_json_bytes(json.dumps(o).encode(), PATH)


@pytest.mark.parametrize("o", [
    dict(SCHEMA, primaryKeys=[5]),  # a key name of the wrong type
    dict(SCHEMA, partitionKeys=["missing"]),  # names no field
    dict(SCHEMA, primaryKeys=["id", "missing"]),
    dict(SCHEMA, fields=[{"id": 0, "name": "id", "type": "BIGINT NOT NULL"},
                         {"id": 1, "name": "id", "type": "INT"}]),  # two fields named 'id'
    dict(SCHEMA, options={"bucket": None}),  # option values are strings
], ids=["key-not-a-string", "partition-key-names-no-field", "primary-key-names-no-field", "duplicate-field-name",
        "null-option-value"])
def test_schema_with_inconsistent_keys_is_corrupt(o):
    """Such a schema parses today and fails later with a bare KeyError (or a 'None' option)."""
    _raises_naming(lambda: TableSchema.from_json_bytes(json.dumps(o).encode(), PATH), PATH)


@pytest.mark.parametrize("raw", GARBAGE)
def test_schema_garbage_and_empty(raw):
    _raises_naming(lambda: TableSchema.from_json_bytes(raw, PATH), PATH)


def test_schema_truncated_at_every_length():
    raw = TableSchema.from_json_bytes(json.dumps(SCHEMA).encode(), PATH).to_json_bytes()
    for n in range(len(raw)):
        _raises_naming(lambda n=n: TableSchema.from_json_bytes(raw[:n], PATH), PATH)


# ----------------------------------------------------------------------------- SnapshotManager


@pytest.mark.parametrize("raw", [b"", b"{\"version\": 3, \"id\": 1", b"\x00\x01garbage", json.dumps(
    dict(SNAP, version=9)).encode(), json.dumps({k: v for k, v in SNAP.items() if k != "commitKind"}).encode()])
def test_snapshot_manager_reports_corrupt_snapshot_file(io_root, raw):
    fio, root = io_root
    sm = SnapshotManager(fio, root)
    path = sm.snapshot_path(1)
    fio.write_bytes(path, raw)
    _raises_naming(lambda: sm.snapshot(1), path)
    _raises_naming(lambda: sm.latest_snapshot(), path)  # never skipped in favour of "no snapshot"
    assert fio.list_names(sm.paths.snapshot_dir) == ["snapshot-1"]  # reading wrote nothing


def test_snapshot_file_holding_another_id_is_corrupt(io_root):
    fio, root = io_root
    sm = SnapshotManager(fio, root)
    fio.write_bytes(sm.snapshot_path(2), json.dumps(SNAP).encode())  # id 1 inside snapshot-2
    err = _raises_naming(lambda: sm.snapshot(2), sm.snapshot_path(2))
    assert "1" in err.reason


# ----------------------------------------------------------------------------- Avro files


def _manifest_setup():
    fio, root = memory_root()
    paths = TablePaths(root)
    entries = [ManifestEntry(FileKind.ADD, encode_row([], []), 0, 1, DataFileMeta(f"data-{i}.parquet", 10, 2))
               for i in range(3)]
    metas = ManifestFile(fio, paths).write(entries)
    list_name, _ = ManifestList(fio, paths).write(metas)
    index_name = IndexManifestFile(fio, paths).write(
        [IndexManifestEntry(FileKind.ADD, encode_row([], []), 0, IndexFileMeta("HASH", "index-1", 8, 2))])
    return fio, paths, metas, list_name, index_name


def _readers(fio, paths):
    return {
        "manifest": lambda name: ManifestFile(fio, paths).read(name),
        "list": lambda name: ManifestList(fio, paths).read(name),
        "index": lambda name: IndexManifestFile(fio, paths).read(name),
    }


def _header_end(data: bytes) -> int:
    r = fastavro.reader(io.BytesIO(data))
    sync = r._header["sync"]
    return data.index(sync) + 16


@pytest.mark.parametrize("kind", ["manifest", "list", "index"])
@pytest.mark.parametrize("raw", [b"", b"\x00", b"Obj", b"Obj\x01garbage", b"random garbage bytes" * 10,
                                 json.dumps(SNAP).encode()])
def test_avro_garbage_and_empty(kind, raw):
    fio, paths, *_ = _manifest_setup()
    fio.write_bytes(paths.manifest_path("bad"), raw)
    _raises_naming(lambda: _readers(fio, paths)[kind]("bad"), paths.manifest_path("bad"))


@pytest.mark.parametrize("kind", ["manifest", "list", "index"])
def test_avro_truncated_at_every_length(kind):
    """Every prefix raises, except the one ending exactly after the header, which is a
    well-formed file with no records (covered by the size tests below)."""
    fio, paths, metas, list_name, index_name = _manifest_setup()
    name = {"manifest": metas[0].file_name, "list": list_name, "index": index_name}[kind]
    data = fio.read_bytes(paths.manifest_path(name))
    read = _readers(fio, paths)[kind]
    header_end = _header_end(data)
    for n in range(len(data)):
        if n == header_end:
            continue
        fio.write_bytes(paths.manifest_path("cut"), data[:n])
        _raises_naming(lambda: read("cut"), paths.manifest_path("cut"))


def _avro_bytes(schema, records) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="zstandard")
    return buf.getvalue()


def test_manifest_records_with_bad_values_are_corrupt():
    fio, paths, metas, *_ = _manifest_setup()
    good = ManifestEntry(FileKind.ADD, encode_row([], []), 0, 1, DataFileMeta("d", 1, 1)).to_avro()
    fio.write_bytes(paths.manifest_path("bad-kind"), _avro_bytes(avro.MANIFEST_ENTRY_SCHEMA, [dict(good, _KIND=7)]))
    _raises_naming(lambda: ManifestFile(fio, paths).read("bad-kind"), paths.manifest_path("bad-kind"))
    fio.write_bytes(paths.manifest_path("bad-source"), _avro_bytes(
        avro.MANIFEST_ENTRY_SCHEMA, [dict(good, _FILE=dict(good["_FILE"], _FILE_SOURCE=9))]))
    _raises_naming(lambda: ManifestFile(fio, paths).read("bad-source"), paths.manifest_path("bad-source"))
    # a record type that lacks the required fields
    other = {"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]}
    fio.write_bytes(paths.manifest_path("other"), _avro_bytes(other, [{"x": 1}]))
    for kind in ("manifest", "list", "index"):
        _raises_naming(lambda kind=kind: _readers(fio, paths)[kind]("other"), paths.manifest_path("other"))


# ----------------------------------------------------------------------------- truncation the size reveals


def test_manifest_truncated_at_a_block_boundary_is_detected():
    """A manifest cut exactly after a complete Avro block (or after its header) is a well-formed
    container with fewer records. ManifestFileMeta records the file's exact size, so a reader
    given the meta can and must notice; otherwise files silently drop out of the table."""
    fio, root = memory_root()
    paths = TablePaths(root)
    entries = [ManifestEntry(FileKind.ADD, encode_row([], []), 0, 1,
                             DataFileMeta(f"data-{i:05d}-{'x' * 30}.parquet", 10, 2)) for i in range(400)]
    (meta,) = ManifestFile(fio, paths).write(entries)
    path = paths.manifest_path(meta.file_name)
    data = fio.read_bytes(path)
    sync = fastavro.reader(io.BytesIO(data))._header["sync"]
    boundaries = [i + 16 for i in range(len(data) - 15) if data[i:i + 16] == sync][:-1]
    assert len(boundaries) >= 2  # header end and at least one block end
    for cut in boundaries:
        fio.write_bytes(path, data[:cut])
        with pytest.raises(CorruptMetadataError) as ei:
            got = ManifestFile(fio, paths).read_all([meta])
            raise AssertionError(f"cut at {cut} of {len(data)} bytes read {len(got)} of {len(entries)} entries")
        assert ei.value.path == path


def test_snapshot_with_truncated_delta_manifest_list_is_detected(io_root):
    """The snapshot records its manifest lists' sizes; a delta list cut to its header must not read
    as 'no changes'."""
    fio, root = io_root
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)),), (), ("id",), {"bucket": "1"})
    commit = FileStoreCommit(fio, root, schema, commit_user="u")
    f = DataFileMeta("data-1.parquet", 10, 2, encode_row([1], [BIGINT(False)]), encode_row([2], [BIGINT(False)]))
    commit.commit([CommitMessage(encode_row([], []), 0, 1, new_files=(f,))], 1)
    snap = commit.snapshot_manager.latest_snapshot()
    assert snap.commit_kind is CommitKind.APPEND and snap.delta_manifest_list_size is not None
    path = commit.paths.manifest_path(snap.delta_manifest_list)
    data = fio.read_bytes(path)
    fio.write_bytes(path, data[:_header_end(data)])
    fresh = FileStoreCommit(fio, root, schema, commit_user="v")
    with pytest.raises(CorruptMetadataError) as ei:
        live = fresh.read_live_entries(snap)
        raise AssertionError(f"truncated delta list read as {len(live)} live files")
    assert ei.value.path == path

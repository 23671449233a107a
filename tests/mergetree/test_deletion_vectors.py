"""Deletion vectors: the bitmap and index-file codecs (Paimon's bytes), row masks, the lookup
structure, and the commit rules on deletion-vector index files (impl beside the model)."""

from __future__ import annotations

import struct
import zlib

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mergetree_helpers import Table, make_schema

import model.deletion_vectors as mdv
from impl.commit.conflicts import check_deletion_vector_conflicts
from impl.errors import CorruptMetadataError, IndexFileConflictError
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.manifest.records import DeletionVectorMeta, FileKind, IndexFileMeta, IndexManifestEntry, IndexType
from impl.mergetree.changelog import changelog_rows
from impl.mergetree.deletion_vectors import (
    BITMAP64_MAGIC,
    BITMAP_MAGIC,
    DeletionVectorsMaintainer,
    as_positions,
    decode_index_file,
    deserialize_roaring32,
    deserialize_roaring64,
    encode_index_file,
    keep_mask,
    serialize_roaring32,
    serialize_roaring64,
)
from impl.mergetree.kv import KeyCodec, KVLayout
from impl.mergetree.lookup import LookupLevels
from model.errors import IndexFileConflictError as ModelIndexFileConflictError


@pytest.mark.parametrize("values", [[], [0], [5, 7, 65535, 65536, 70000, 2**31 - 1],
                                    list(range(0, 200000, 3)), list(range(10000))])
def test_roaring_round_trip(values):
    pos = as_positions(values)
    data = serialize_roaring32(pos)
    assert deserialize_roaring32(data).tolist() == sorted(set(values))


def test_roaring_bytes_follow_the_portable_format():
    data = serialize_roaring32(as_positions([1, 2, 65536 + 9]))
    cookie, n = struct.unpack_from("<II", data, 0)
    assert (cookie, n) == (12346, 2)
    # descriptive header: (key, cardinality - 1) per container, then one offset per container
    assert struct.unpack_from("<4H", data, 8) == (0, 1, 1, 0)
    assert struct.unpack_from("<2I", data, 16) == (24, 28)
    assert struct.unpack_from("<3H", data, 24) == (1, 2, 9)
    # a bitmap container (more than 4096 values) is 1024 little-endian 64-bit words
    dense = serialize_roaring32(as_positions(range(0, 10000, 2)))
    assert len(dense) == 8 + 4 + 4 + 8192 and dense[16] == 0b01010101


def test_roaring_reads_run_containers():
    # cookie 12347 with one container, run flag set, key 0, cardinality 10: one run 5..14
    data = struct.pack("<I", 12347) + bytes([1]) + struct.pack("<HH", 0, 9) + struct.pack("<HHH", 1, 5, 9)
    assert deserialize_roaring32(data).tolist() == list(range(5, 15))
    with pytest.raises(CorruptMetadataError):
        deserialize_roaring32(struct.pack("<I", 999))


def test_positions_out_of_range_are_refused():
    with pytest.raises(ValueError, match="positions"):
        as_positions([-1])
    with pytest.raises(ValueError, match="positions"):
        as_positions([2**31])


def test_index_file_bytes_and_ranges():
    data, ranges = encode_index_file({"a.parquet": as_positions([1, 3]), "b.parquet": as_positions([0])})
    assert data[0] == 1
    first = ranges[0]
    assert (first.data_file_name, first.offset, first.cardinality) == ("a.parquet", 1, 2)
    size, magic = struct.unpack_from(">ii", data, 1)
    assert size == first.length and magic == BITMAP_MAGIC
    body = data[5:5 + size]
    assert struct.unpack_from(">I", data, 5 + size)[0] == zlib.crc32(body)
    assert ranges[1].offset == 1 + 4 + size + 4
    out = decode_index_file(data, ranges, "idx")
    assert {k: v.tolist() for k, v in out.items()} == {"a.parquet": [1, 3], "b.parquet": [0]}


@pytest.mark.parametrize("damage", ["crc", "magic", "length", "version"])
def test_corrupt_index_file_is_reported(damage):
    data, ranges = encode_index_file({"a.parquet": as_positions([1, 3])})
    buf = bytearray(data)
    if damage == "crc":
        buf[-1] ^= 0xFF
    elif damage == "magic":
        buf[5] ^= 0xFF
    elif damage == "version":
        buf[0] = 2
    else:
        ranges = (DeletionVectorMeta("a.parquet", 1, ranges[0].length + 1, 2),)
    with pytest.raises(CorruptMetadataError):
        decode_index_file(bytes(buf), ranges, "idx")


@pytest.mark.parametrize("values", [[], [0], [1, 5, 70000, 2**31 - 1], list(range(0, 200000, 3))])
def test_roaring64_is_pyroaring_bitmap64_portable_format(values):
    """Paimon's OptimizedRoaringBitmap64 portable format is CRoaring's 64-bit portable one."""
    pyroaring = pytest.importorskip("pyroaring")
    theirs = pyroaring.BitMap64(values).serialize()
    assert deserialize_roaring64(theirs).tolist() == sorted(values)
    assert deserialize_roaring64(serialize_roaring64(as_positions(values))).tolist() == sorted(values)
    if values:
        assert serialize_roaring64(as_positions(values)) == theirs


def test_roaring64_reads_java_empty_leading_bitmaps_and_refuses_high_keys():
    # Java writes a bitmap for every key from 0 up: key 0 empty, key 1 holding position 2^32 + 3
    empty, one = serialize_roaring32(as_positions([])), serialize_roaring32(as_positions([3]))
    assert deserialize_roaring64(struct.pack("<qi", 1, 0) + empty).tolist() == []
    with pytest.raises(CorruptMetadataError, match="beyond"):
        deserialize_roaring64(struct.pack("<qi", 2, 0) + empty + struct.pack("<i", 1) + one)
    with pytest.raises(CorruptMetadataError, match="after"):  # keys must ascend
        deserialize_roaring64(struct.pack("<qi", 2, 0) + empty + struct.pack("<i", 0) + empty)
    with pytest.raises(CorruptMetadataError, match="bitmaps in"):  # bounded: a huge count is refused at once
        deserialize_roaring64(struct.pack("<q", 2**40) + empty)


def test_bitmap64_index_file_layout_and_mixed_files():
    """Bitmap64DeletionVector: size (big-endian), magic little-endian, 64-bit bitmap, crc; the
    range's length counts the whole entry. One file may mix both kinds (read by magic)."""
    data, ranges = encode_index_file({"a.parquet": as_positions([1, 3])}, bitmap64=True)
    size = struct.unpack_from(">i", data, 1)[0]
    assert struct.unpack_from("<i", data, 5)[0] == BITMAP64_MAGIC
    assert ranges[0].length == size + 8 and len(data) == 1 + size + 8
    assert data[9:5 + size] == serialize_roaring64(as_positions([1, 3]))
    assert struct.unpack_from(">I", data, 5 + size)[0] == zlib.crc32(data[5:5 + size])
    small, small_ranges = encode_index_file({"b.parquet": as_positions([7])})
    mixed = data + small[1:]
    b = small_ranges[0]
    mixed_ranges = (ranges[0], DeletionVectorMeta(b.data_file_name, b.offset + len(data) - 1, b.length, 1))
    out = decode_index_file(mixed, mixed_ranges, "idx")
    assert {k: v.tolist() for k, v in out.items()} == {"a.parquet": [1, 3], "b.parquet": [7]}
    with pytest.raises(CorruptMetadataError, match="length"):  # a 32-bit style length for a 64-bit entry
        decode_index_file(data, (DeletionVectorMeta("a.parquet", 1, size, 2),), "idx")
    bad = bytearray(data)
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptMetadataError, match="checksum"):
        decode_index_file(bytes(bad), ranges, "idx")


def test_keep_mask_by_batch():
    pos = as_positions([0, 5, 9, 10])
    assert keep_mask(pos, 0, 5).tolist() == [False, True, True, True, True]
    assert keep_mask(pos, 5, 5).tolist() == [False, True, True, True, False]
    assert keep_mask(pos, 11, 4) is None
    assert keep_mask(None, 0, 3) is None


def test_maintainer_writes_one_index_file_replacing_the_previous(tmp_path):
    io, paths = FileIO(), TablePaths(str(tmp_path))
    m = DeletionVectorsMaintainer(io, paths)
    assert m.write().added == ()  # nothing changed: nothing written
    m.apply([], {"f1": as_positions([2]), "f2": as_positions([0, 1])})
    first = m.write()
    assert len(first.added) == 1 and first.removed == ()
    restored = DeletionVectorsMaintainer(io, paths, first.added)
    assert {k: v.tolist() for k, v in restored.vectors.items()} == {"f1": [2], "f2": [0, 1]}
    restored.apply(["f2"], {"f1": as_positions([2])})  # f2 compacted away; f1 unchanged
    second = restored.write()
    assert second.removed == first.added
    assert [r.data_file_name for r in second.added[0].deletion_vector_ranges] == ["f1"]
    restored.apply(["f1"], {})
    assert restored.write().added == ()  # no vector left: no new index file


def test_lookup_finds_positions_and_reuses_its_structures(tmp_path):
    t = Table(tmp_path, make_schema(), {"write-only": "true"})
    w = t.writer()
    w.write(pa.table({"id": pa.array([10, 20, 30, 40], pa.int64()), "k": ["a"] * 4, "v": [1.0] * 4,
                      "ts": pa.array([1] * 4, pa.int64())}))
    msg = w.prepare_commit(True)
    w.close()
    (f,) = msg.new_files
    layout = KVLayout(t.schema)
    lk = LookupLevels(t.io, t.bucket_dir(), layout, KeyCodec(layout.key_types))
    keys = pa.table({"_KEY_id": pa.array([30, 10, 99], pa.int64())})
    assert lk.lookup(keys, [f])[f.file_name].tolist() == [0, 2]
    assert lk.files_loaded == 1  # the second query reused the cached structure
    assert lk.lookup(pa.table({"_KEY_id": pa.array([1000], pa.int64())}), [f]) == {}
    assert lk.files_loaded == 1  # out of the file's key range: not opened


def _entry(kind, name, ranges, bucket=0):
    f = IndexFileMeta(IndexType.DELETION_VECTORS, name, 10, len(ranges),
                      tuple(DeletionVectorMeta(d, 1, 4, 1) for d in ranges))
    return IndexManifestEntry(kind, b"p", bucket, f)


def _model_entry(e: IndexManifestEntry):
    return ("ADD" if e.kind is FileKind.ADD else "DELETE", e.partition, e.bucket, e.index_file.file_name,
            {r.data_file_name: r.cardinality for r in e.index_file.deletion_vector_ranges})


@pytest.mark.parametrize("case,conflict", [
    ("replace", False), ("delete-not-live", True), ("dangling", True), ("duplicate", True),
    ("add-live", True), ("data-removed", True),
])
def test_deletion_vector_commit_rules_match_the_model(case, conflict):
    live_data = {"d1", "d2"}
    previous = [_entry(FileKind.ADD, "i0", ["d1"])]
    removed: set = set()
    if case == "replace":
        changes = [_entry(FileKind.DELETE, "i0", ["d1"]), _entry(FileKind.ADD, "i1", ["d1", "d2"])]
    elif case == "delete-not-live":
        changes = [_entry(FileKind.DELETE, "i9", ["d1"]), _entry(FileKind.ADD, "i1", ["d2"])]
    elif case == "dangling":
        changes = [_entry(FileKind.DELETE, "i0", ["d1"]), _entry(FileKind.ADD, "i1", ["d3"])]
    elif case == "duplicate":
        changes = [_entry(FileKind.ADD, "i1", ["d1"])]
    elif case == "add-live":
        changes = [_entry(FileKind.ADD, "i0", ["d1"])]
    else:  # the commit removes d1 but keeps its vector
        changes, removed, live_data = [], {(b"p", 0)}, {"d2"}
    names = lambda p, b: set(live_data)  # noqa: E731
    impl_error = model_error = None
    try:
        check_deletion_vector_conflicts(previous, changes, removed, names)
    except IndexFileConflictError as e:
        impl_error = e
    try:
        mdv.check_deletion_vectors([_model_entry(e) for e in previous], [_model_entry(e) for e in changes],
                                   removed, names)
    except ModelIndexFileConflictError as e:
        model_error = e
    assert (impl_error is not None) == conflict == (model_error is not None)


_kind = st.sampled_from([0, 1, 2, 3])


@settings(max_examples=60, deadline=None)
@given(old=st.dictionaries(st.integers(0, 30), st.text(max_size=3), max_size=20),
       new=st.dictionaries(st.integers(0, 30), st.tuples(_kind, st.text(max_size=3)), max_size=20))
def test_changelog_rows_match_the_model(old, new):
    layout = KVLayout(make_schema())

    def kv(rows):  # rows: [(id, seq, kind, k)] in key order
        n = len(rows)
        return pa.table({"_KEY_id": pa.array([r[0] for r in rows], pa.int64()),
                         "_SEQUENCE_NUMBER": pa.array([r[1] for r in rows], pa.int64()),
                         "_VALUE_KIND": pa.array([r[2] for r in rows], pa.int8()),
                         "id": pa.array([r[0] for r in rows], pa.int64()), "k": [r[3] for r in rows],
                         "v": pa.nulls(n, pa.float64()), "ts": pa.nulls(n, pa.int64())}).cast(layout.arrow_schema)
    old_t = kv([(key, 1, 0, v) for key, v in sorted(old.items())])
    new_t = kv([(key, 100 + key, kind, v) for key, (kind, v) in sorted(new.items())])
    got = changelog_rows(old_t, new_t, layout)
    assert [(r["id"], r["_VALUE_KIND"], r["k"]) for r in got.to_pylist()] == mdv.changelog(old, new)
    # every row of a key carries the new version's sequence number (the read orders by it)
    assert all(r["_SEQUENCE_NUMBER"] == 100 + r["id"] for r in got.to_pylist())

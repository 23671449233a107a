"""Manifests, manifest lists and index manifests in ORC and Parquet (``manifest.format``).

Written in the table's format (Paimon Java reads a table's metadata files in the format its
option names), read by content; equal to the Avro round trip; the entries are built column-wise
and equal the row-by-row conversion; a corrupt file is reported naming it; a format Paimon has
no manifests in is refused by name before anything is written.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from core_helpers import memory_root
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_avro import _entries, _entry, _index_entry

import impl
from impl.data.binary_row import encode_row
from impl.data.types import BIGINT
from impl.datafile.meta import SimpleStats
from impl.errors import CorruptMetadataError, InvalidOptionError
from impl.format import avro, avro_columns, columnar_manifest
from impl.fs.paths import TablePaths
from impl.manifest import columnar_entries
from impl.manifest import manifest_file as mf
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList
from impl.manifest.records import DeletionVectorMeta, ManifestEntry, ManifestFileMeta

FORMATS = ["orc", "parquet"]


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(_entries, min_size=1, max_size=8))
def test_manifest_round_trip_equals_avro(fmt, entries):
    fio, root = memory_root()
    paths = TablePaths(root)
    metas = ManifestFile(fio, paths, manifest_format=fmt).write(entries)
    data = fio.read_bytes(paths.manifest_path(metas[0].file_name))
    assert columnar_manifest.format_of(data) == fmt
    assert ManifestFile(fio, paths).read_all(metas) == entries  # a reader of any format: by content
    # column-wise build == row-by-row conversion of the same rows
    table = columnar_manifest.read_table(data, "m")
    assert [ManifestEntry.from_avro(r, "m") for r in columnar_manifest.records(table)] == entries
    avro_metas = ManifestFile(fio, paths).write(entries)
    assert ManifestFile(fio, paths).read_all(avro_metas) == entries


@pytest.mark.parametrize("fmt", FORMATS)
def test_lists_index_manifests_and_partition_filtered_reads(fmt):
    fio, root = memory_root()
    paths = TablePaths(root)
    parts = [encode_row([i % 3], [BIGINT()]) for i in range(9)]
    entries = [_entry(f"data-{i}.parquet", partition=p, bucket=i) for i, p in enumerate(parts)]
    metas = ManifestFile(fio, paths, manifest_format=fmt, target_file_size_bytes=1).write(entries)
    assert len(metas) == 9
    metas[0] = ManifestFileMeta(metas[0].file_name, metas[0].file_size, 1, 0, SimpleStats(b"a", b"b", (None, 1)),
                                min_bucket=0, max_bucket=0, total_buckets=1, extra_files=("x",))
    name, size = ManifestList(fio, paths, manifest_format=fmt).write(metas)
    assert columnar_manifest.format_of(fio.read_bytes(paths.manifest_path(name))) == fmt
    assert ManifestList(fio, paths).read(name, size) == metas
    keep = parts[1]
    got = [e for m in metas for e in ManifestFile(fio, paths).read_manifest(m, lambda p: p == keep)]
    assert got == [e for e in entries if e.partition == keep]
    index = [_index_entry("hash-1"),
             _index_entry("dv-1", deletion_vector_ranges=(DeletionVectorMeta("data-1.parquet", 1, 2, 3),))]
    iname = IndexManifestFile(fio, paths, manifest_format=fmt).write(index)
    assert columnar_manifest.format_of(fio.read_bytes(paths.manifest_path(iname))) == fmt
    assert IndexManifestFile(fio, paths).read(iname) == index


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_corrupt_file_is_reported_naming_it(fmt):
    fio, root = memory_root()
    paths = TablePaths(root)
    metas = ManifestFile(fio, paths, manifest_format=fmt).write([_entry("a"), _entry("b")])
    path = paths.manifest_path(metas[0].file_name)
    data = fio.read_bytes(path)
    cut = data[:3] + b"\xff" * (len(data) - 7) + data[-4:]  # the magic kept, the rest garbage
    fio.write_bytes(path, cut)
    with pytest.raises(CorruptMetadataError, match=metas[0].file_name):
        ManifestFile(fio, paths).read_manifest(metas[0])
    # rows of the wrong kind (a manifest list where a manifest is expected)
    name, _ = ManifestList(fio, paths, manifest_format=fmt).write(metas)
    with pytest.raises(CorruptMetadataError, match=f"{name}.*ManifestEntry"):
        ManifestFile(fio, paths).read(name)


def test_an_unknown_manifest_format_is_refused_before_writing():
    fio, root = memory_root()
    paths = TablePaths(root)
    with pytest.raises(InvalidOptionError, match="manifest.format.*'csv'"):
        ManifestFile(fio, paths, manifest_format="csv").write([_entry("a")])
    with pytest.raises(InvalidOptionError, match="manifest.format"):
        ManifestList(fio, paths, manifest_format="json").write([])
    assert not fio.exists(paths.manifest_dir) or fio.list_names(paths.manifest_dir) == []
    assert mf.checked_format(" ORC ") == "orc"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_table_writes_its_metadata_in_its_format(tmp_path, fmt):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                         options={"bucket": "1", "manifest.format": fmt})
    for i in range(3):
        t.write_arrow(pa.table({"id": [i, i + 1], "v": [f"v{i}", None]}))
    t.compact(full=True)
    manifest_dir = tmp_path / "wh" / "db.db" / "t" / "manifest"
    assert {columnar_manifest.format_of(f.read_bytes()) for f in manifest_dir.iterdir()} == {fmt}
    assert sorted(cat.get_table("db.t").to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 0, "v": "v0"}, {"id": 1, "v": "v1"}, {"id": 2, "v": "v2"}, {"id": 3, "v": None}]


def test_a_table_with_an_unknown_manifest_format_refuses_writes_and_writes_nothing(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]), options={"manifest.format": "csv"})
    with pytest.raises(InvalidOptionError, match="manifest.format.*'csv'"):
        t.write_arrow(pa.table({"id": [1]}))
    table_dir = tmp_path / "wh" / "db.db" / "t"
    assert sorted(p.name for p in table_dir.iterdir()) == ["schema"]


# ------------------------------------------------------------------ Avro codecs (manifest.compression)

CODECS = ["zstd", "null", "deflate", "snappy", "bzip2", "xz", "zstandard"]


def _avro_codec(data: bytes) -> str:
    return avro_columns.decode_blocks(data).codec


@pytest.mark.parametrize("name", CODECS)
def test_every_avro_codec_paimon_writes_is_written_and_read(name):
    """Each codec of Paimon's manifest.compression: written so, read back by the columnar
    decoder (the planning path) and by fastavro record by record, all three kinds of file."""
    fio, root = memory_root()
    paths = TablePaths(root)
    codec = mf.manifest_avro_codec({"manifest.compression": name})
    parts = [encode_row([i % 3], [BIGINT()]) for i in range(9)]
    entries = [_entry(f"data-{i}.parquet", partition=p, bucket=i) for i, p in enumerate(parts)]
    metas = ManifestFile(fio, paths, partition_type=[BIGINT()], codec=codec).write(entries)
    data = fio.read_bytes(paths.manifest_path(metas[0].file_name))
    assert _avro_codec(data) == ("zstandard" if name == "zstd" else name)
    assert columnar_entries.manifest_entries(data) == entries  # None if the columnar path could not
    assert ManifestFile(fio, paths).read_all(metas) == entries
    assert [ManifestEntry.from_avro(r, "m") for r in avro.read_avro(data, "m", "ManifestEntry")] == entries
    keep = parts[1]
    assert ManifestFile(fio, paths).read_manifest(metas[0], lambda p: p == keep) == \
        [e for e in entries if e.partition == keep]
    name_, size = ManifestList(fio, paths, codec=codec).write(metas)
    assert _avro_codec(fio.read_bytes(paths.manifest_path(name_))) == _avro_codec(data)
    assert ManifestList(fio, paths).read(name_, size) == metas
    index = [_index_entry("hash-1")]
    iname = IndexManifestFile(fio, paths, codec=codec).write(index)
    assert _avro_codec(fio.read_bytes(paths.manifest_path(iname))) == _avro_codec(data)
    assert IndexManifestFile(fio, paths).read(iname) == index


def test_avro_codec_follows_java_avro_file_format():
    """avro.codec wins over manifest.compression; zstd (any case) is zstandard at the table's
    zstd level; other names exactly as Avro's CodecFactory knows them, else refused by name."""
    assert mf.manifest_avro_codec({}).checked() == "zstandard"
    assert mf.manifest_avro_codec({"file.compression.zstd-level": "7"}).level == 7
    assert mf.manifest_avro_codec({"manifest.compression": "ZSTD"}).checked() == "zstandard"
    assert mf.manifest_avro_codec({"manifest.compression": "zstd", "avro.codec": "snappy"}).checked() == "snappy"
    for bad, key in [({"manifest.compression": "lz4"}, "manifest.compression"),
                     ({"manifest.compression": "SNAPPY"}, "manifest.compression"),
                     ({"avro.codec": "zstd"}, "avro.codec")]:
        with pytest.raises(InvalidOptionError, match=key):
            mf.manifest_avro_codec(bad).checked()


def test_a_table_writes_its_manifests_in_its_codec_and_refuses_an_unknown_one(tmp_path):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]), options={"manifest.compression": "snappy"})
    t.write_arrow(pa.table({"id": [1, 2]}))
    manifest_dir = tmp_path / "wh" / "db.db" / "t" / "manifest"
    assert {_avro_codec(f.read_bytes()) for f in manifest_dir.iterdir()} == {"snappy"}
    assert sorted(cat.get_table("db.t").to_arrow().column("id").to_pylist()) == [1, 2]
    bad = cat.create_table("db.bad", schema=pa.schema([("id", pa.int64())]), options={"manifest.compression": "lz4"})
    with pytest.raises(InvalidOptionError, match="manifest.compression.*'lz4'"):
        bad.write_arrow(pa.table({"id": [1]}))
    assert sorted(p.name for p in (tmp_path / "wh" / "db.db" / "bad").iterdir()) == ["schema"]

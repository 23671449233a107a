"""Data-file indexes (``file-index.bloom-filter.columns``, ``file-index.bitmap.columns``) against
Paimon Java 1.4.2, both ways, in one JVM:

- Java writes; impl's blob for the rows of each Java data file is byte for byte Java's (embedded
  in the manifest entry, or the ``.index`` file), and impl's filtered scans skip the files the
  index rules out and return the rows the filter asks for.
- impl writes; Paimon Java's ``FileIndexPredicate`` on impl's index bytes keeps only the file
  holding the value (``index_filter`` op: embedded indexes already prune Java's scan plan, the
  ``.index`` files are what its reader evaluates before opening a file), and Java's filtered
  read returns the matching rows.
"""

from __future__ import annotations

import posixpath

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.fileindex.options import FileIndexSpec
from impl.fileindex.writer import FileIndexCollector

pytestmark = pytest.mark.paimon_java

FIELDS = [["id", "INT"], ["s", "STRING"], ["k", "INT"]]
SCHEMA = pa.schema([("id", pa.int32()), ("s", pa.string()), ("k", pa.int32())])
# embedded: a small bloom filter and a bitmap stay under the 500-byte threshold;
# separate: the default-sized bloom filter (1M items) goes to a .index file with the bitmap
TABLES = {
    "embedded": {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": "64",
                 "file-index.bitmap.columns": "k"},
    "separate": {"file-index.bloom-filter.columns": "s", "file-index.bitmap.columns": "k,s"},
    # bitmap format version 1 (Paimon 1.4 writes 2 unless told), in .index files
    "bitmap-v1": {"file-index.bitmap.columns": "k,s", "file-index.bitmap.k.version": "1",
                  "file-index.bitmap.s.version": "1", "file-index.in-manifest-threshold": "1 b"},
}
COMMITS = 4


def _batch(i: int) -> pa.Table:
    ids = list(range(i * 20, i * 20 + 20))
    k = [i * 10 + j % 3 for j in range(20)]
    k[5] = None
    if i % 2:
        k[7] = None  # two null rows: a stored null bitmap; one null row: an inline offset
    k[19] = 1000 + i  # a value in one row only
    return pa.table({"id": pa.array(ids, pa.int32()), "s": [f"s-{v}" for v in ids],
                     "k": pa.array(k, pa.int32())}, schema=SCHEMA)


def _files(t):
    core = t.core if hasattr(t, "core") else t._core
    splits = t.new_read_builder().new_scan().plan().splits()
    return [(s, f) for s in splits for f in s.files], core


def _filtered(t, pred):
    rb = t.new_read_builder().with_filter(pred)
    scan = rb.new_scan()
    splits = scan.plan().splits()
    rows = rb.new_read().to_arrow(splits)
    return sum(len(s.files) for s in splits), rows


@pytest.mark.parametrize("kind", list(TABLES))
def test_impl_reads_and_rewrites_java_indexes(java, tmp_path, kind):
    wh = tmp_path / "wh"
    java.call("create_table", warehouse=str(wh), table="db.t", fields=FIELDS, primary_keys=[], partition_keys=[],
              table_options=TABLES[kind])
    for i in range(COMMITS):
        pq.write_table(_batch(i), tmp_path / "in.parquet")
        java.call("write", warehouse=str(wh), table="db.t", parquet=str(tmp_path / "in.parquet"),
                  commit_user="java", identifier=i + 1)
    t = impl.Catalog(str(wh)).get_table("db.t")
    files, core = _files(t)
    assert len(files) == COMMITS
    spec = FileIndexSpec.from_options(TABLES[kind])
    for split, f in files:
        path = posixpath.join(split.partition_path and f"{core.path}/{split.partition_path}" or core.path,
                              f"bucket-{split.bucket}")
        if kind == "embedded":
            assert f.embedded_file_index is not None and f.extra_files == ()
            java_blob = bytes(f.embedded_file_index)
        else:
            assert f.embedded_file_index is None and f.extra_files == (f.file_name + ".index",)
            java_blob = (wh / "db.db" / "t" / f"bucket-{split.bucket}" / f.extra_files[0]).read_bytes()
        collector = FileIndexCollector(spec, core.schema.fields)
        collector.update(pq.read_table(f"{path}/{f.file_name}"))
        assert collector.blob() == java_blob, f"{kind}: impl's index bytes differ from Java's for {f.file_name}"

    pb = t.new_read_builder().new_predicate_builder()
    everything = pa.concat_tables(_batch(i) for i in range(COMMITS)).to_pylist()
    cases = [(pb.equal("k", 21), 1), (pb.equal("k", 1002), 1), (pb.is_in("k", [1, 31]), 2),
             (pb.equal("k", 999), 0), (pb.is_null("k"), COMMITS)]
    cases.append((pb.equal("id", 45), 1) if kind == "embedded" else (pb.equal("s", "s-45"), 1))
    for pred, expected_files in cases:
        n, rows = _filtered(t, pred)
        assert n == expected_files, (kind, pred, n)
        want = [r for r in everything if _matches(pred, r)]
        assert sorted(rows.to_pylist(), key=lambda r: r["id"]) == want, (kind, pred)
    unfiltered_reads = impl.Catalog(str(wh)).get_table("db.t").copy({"file-index.read.enabled": "false"})
    # k = 500 lies inside every file's min / max: only the index rules the files out
    assert _filtered(t, pb.equal("k", 500))[0] == 0
    assert _filtered(unfiltered_reads, pb.equal("k", 500))[0] == COMMITS  # the index switched off: every file


def _matches(pred, row) -> bool:
    v = row[pred.field]
    if pred.method == "is_null":
        return v is None
    return v is not None and v in pred.literals


@pytest.mark.parametrize("kind", list(TABLES))
def test_java_uses_indexes_impl_wrote(java, tmp_path, kind):
    wh = tmp_path / "wh"
    cat = impl.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", schema=SCHEMA, options=TABLES[kind])
    for i in range(COMMITS):
        t.write_arrow(_batch(i))
    files, _ = _files(t)
    assert all((f.embedded_file_index is not None) == (kind == "embedded") for _, f in files)
    for field, value, rows in (("k", 21, 6), ("k", 1002, 1), ("k", 500, 0), ("id", 45, 1), ("s", "s-45", 1),
                              ("k", None, 6)):
        got = java.call("index_filter", warehouse=str(wh), table="db.t", field=field, value=value)
        indexed = field in TABLES[kind].get("file-index.bloom-filter.columns", "").split(",") + \
            TABLES[kind]["file-index.bitmap.columns"].split(",")
        assert got["matching_rows"] == rows, (kind, field, value, got)
        if not indexed:
            assert got["index_kept_files"] == got["planned_files"]  # no index: nothing more ruled out
            continue
        expected = COMMITS if value is None else min(rows, 1)
        assert got["index_kept_files"] == expected, (kind, field, value, got)
        # Java's scan prunes by embedded indexes itself; .index files are left to its reader
        # (k = 500 lies inside every file's min / max: statistics rule nothing out)
        if kind == "embedded":
            assert got["planned_files"] == expected, (kind, field, value, got)
        elif value == 500:
            assert got["planned_files"] == COMMITS, (kind, field, value, got)


def test_impl_index_bytes_equal_javas_for_many_values_of_many_types(java, tmp_path):
    """Bitmaps over hundreds of values (Java's HashMap resized several times), every key type
    the harness writes, bloom filters over longs and doubles (-0.0 and NaN included)."""
    fields = [["id", "INT"], ["s", "STRING"], ["v", "BIGINT"], ["d", "DOUBLE"], ["b", "BOOLEAN"]]
    options = {"file-index.bitmap.columns": "id,s,v,d,b", "file-index.bloom-filter.columns": "v,d,s",
               "file-index.bloom-filter.v.items": "500", "file-index.bloom-filter.d.items": "300",
               "file-index.bitmap.s.index-block-size": "2kb"}
    wh = tmp_path / "wh"
    java.call("create_table", warehouse=str(wh), table="db.t", fields=fields, primary_keys=[], partition_keys=[],
              table_options=options)
    schema = pa.schema([("id", pa.int32()), ("s", pa.string()), ("v", pa.int64()), ("d", pa.float64()),
                        ("b", pa.bool_())])
    for c in range(2):
        n = 700
        d = [((i * 37) % 101) / 7 - 5 for i in range(n)]
        d[3], d[4], d[5] = -0.0, 0.0, float("nan")
        rows = pa.table({"id": pa.array([c * n + i for i in range(n)], pa.int32()),
                         "s": [None if i % 50 == 0 else f"é{(i * 7919) % 311}" for i in range(n)],
                         "v": pa.array([(-1) ** i * (i * 2654435761) % 10**15 for i in range(n)], pa.int64()),
                         "d": d, "b": [None if i % 9 == 0 else i % 3 == 0 for i in range(n)]}, schema=schema)
        pq.write_table(rows, tmp_path / "in.parquet")
        java.call("write", warehouse=str(wh), table="db.t", parquet=str(tmp_path / "in.parquet"),
                  commit_user="java", identifier=c + 1)
    t = impl.Catalog(str(wh)).get_table("db.t")
    files, core = _files(t)
    spec = FileIndexSpec.from_options(options)
    for split, f in files:
        bucket = wh / "db.db" / "t" / f"bucket-{split.bucket}"
        collector = FileIndexCollector(spec, core.schema.fields)
        collector.update(pq.read_table(bucket / f.file_name))
        assert collector.blob() == (bucket / f.extra_files[0]).read_bytes(), f.file_name
    pb = t.new_read_builder().new_predicate_builder()
    assert _filtered(t, pb.equal("id", 705))[0] == 1
    assert _filtered(t, pb.equal("s", "é5"))[0] == 2

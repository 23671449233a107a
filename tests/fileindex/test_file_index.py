"""Data-file indexes in impl alone: skipping, bad input, primary-key rules, index files through
compaction, expiration and orphan removal. (Bytes against Paimon Java:
tests/paimon_java/test_java_file_index.py.)"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

import impl
from impl.data.types import INT, STRING
from impl.fileindex import CorruptFileIndexError, FileIndexLiteralError, UnsupportedFileIndexError
from impl.fileindex.bloom import BloomFilterBuilder, BloomFilterIndex, sizing
from impl.fileindex.evaluate import parse_file_index
from impl.fileindex.format import MAGIC, decode_header, encode_file_index
from impl.fileindex.keys import column_keys
from impl.fileindex.reader import FileIndexFilter
from impl.maintenance.compact import compact_bucket
from impl.predicate.predicate import LeafPredicate
from impl.read.scan import SnapshotReader
from impl.read.table_read import TableRead

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("k", pa.int32())])
BLOOM_AND_BITMAP = {"file-index.bloom-filter.columns": "s", "file-index.bloom-filter.s.items": "200",
                    "file-index.bitmap.columns": "k"}


def _table(tmp_path: Path, options: dict, primary_keys=None, name="db.t"):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(name, schema=SCHEMA, primary_keys=primary_keys, options=options)


def _batch(i: int, n: int = 20) -> pa.Table:
    ids = list(range(i * n, i * n + n))
    return pa.table({"id": ids, "s": [f"s{v}" for v in ids],
                     "k": pa.array([i] * (n // 2) + [i + 10] * (n // 2 - 1) + [None], pa.int32())}, schema=SCHEMA)


def _planned(t, pred) -> tuple[int, int, object]:
    rb = t.new_read_builder().with_filter(pred)
    scan = rb.new_scan()
    splits = scan.plan().splits()
    return sum(len(s.files) for s in splits), rb.new_read().to_arrow(splits).num_rows, scan


def _index_files(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*.index")}


def test_filters_skip_files_by_their_index(tmp_path):
    t = _table(tmp_path, {**BLOOM_AND_BITMAP, "file-index.in-manifest-threshold": "1 b"})  # every index a .index file
    for i in range(4):
        t.write_arrow(_batch(i))
    pb = t.new_read_builder().new_predicate_builder()
    assert _planned(t, pb.equal("s", "s45"))[:2] == (1, 1)
    assert _planned(t, pb.equal("k", 2))[:2] == (1, 10)
    assert _planned(t, pb.equal("k", 5))[:2] == (0, 0)  # inside files' min / max, in no file
    assert _planned(t, pb.is_in("k", [0, 3]))[:2] == (2, 20)
    assert _planned(t, pb.and_(pb.equal("k", 1), pb.equal("s", "s45")))[:2] == (0, 0)  # per file: no row has both
    assert _planned(t, pb.or_(pb.equal("k", 1), pb.equal("s", "s45")))[:2] == (2, 11)
    assert _planned(t, pb.is_null("k"))[:2] == (4, 4)
    assert _planned(t, pb.is_not_null("k"))[:2] == (4, 76)
    files, rows, scan = _planned(t, pb.equal("s", "s45x"))
    assert (files, rows, scan.files_pruned_by_stats + scan.files_pruned_by_index) == (0, 0, 4)
    assert scan.files_pruned_by_index >= 1
    off = t.copy({"file-index.read.enabled": "false"})
    assert _planned(off, pb.equal("s", "s45"))[:2] == (2, 1)  # statistics alone keep s0..s9 and s40..s59


def test_wrong_type_literal_on_indexed_column_is_refused_by_name(tmp_path):
    t = _table(tmp_path, BLOOM_AND_BITMAP)
    t.write_arrow(_batch(0))
    for pred in (LeafPredicate("equal", "k", ("3",)), LeafPredicate("is_in", "s", ("s1", 7)),
                 LeafPredicate("equal", "k", (True,)), LeafPredicate("equal", "k", (1 << 40,))):
        with pytest.raises(FileIndexLiteralError, match=f"'{pred.field}'"):
            t.new_read_builder().with_filter(pred).new_scan().plan()
    # the same literal on a column without an index is the statistics' business, not refused here
    t.new_read_builder().with_filter(LeafPredicate("equal", "id", (3,))).new_scan().plan()


def _corruptions(blob: bytes) -> dict[str, bytes]:
    return {
        "bad magic": struct.pack(">q", MAGIC + 1) + blob[8:],
        "bad version": blob[:8] + struct.pack(">i", 2) + blob[12:],
        "truncated": blob[: len(blob) // 2],
        "unknown type": encode_file_index({"k": {"made-up": b"xyz"}}),
    }


def test_an_index_failing_its_checks_is_not_trusted_and_is_reported(tmp_path, caplog):
    t = _table(tmp_path, {**BLOOM_AND_BITMAP, "file-index.in-manifest-threshold": "1 b"})
    t.write_arrow(_batch(0))
    (index_path,) = (tmp_path / "wh").rglob("*.index")
    blob = index_path.read_bytes()
    pb = t.new_read_builder().new_predicate_builder()
    assert _planned(t, pb.equal("k", 7))[0] == 0
    for what, bad in _corruptions(blob).items():
        index_path.write_bytes(bad)
        with caplog.at_level(logging.WARNING, logger="impl.fileindex.reader"):
            caplog.clear()
            files, rows, scan = _planned(t, pb.equal("k", 7))
        assert (files, scan.file_index_failures) == (1, 1), what  # the file is read, the failure counted
        assert "not used" in caplog.text, what
        with pytest.raises(CorruptFileIndexError):
            parse_file_index(bad, {"k": INT(), "s": STRING()}, what)
    index_path.unlink()  # a missing index file: the data file is read too
    files, _, scan = _planned(t, pb.equal("k", 7))
    assert (files, scan.file_index_failures) == (1, 1)


def test_a_corrupt_embedded_index_is_not_trusted(tmp_path):
    t = _table(tmp_path, BLOOM_AND_BITMAP)
    t.write_arrow(_batch(0))
    (split,) = t.new_read_builder().new_scan().plan().splits()
    (f,) = split.files
    assert f.embedded_file_index is not None and f.extra_files == ()
    pred = LeafPredicate("equal", "k", (7,))
    types = {"id": impl.data.types.BIGINT(), "s": STRING(), "k": INT()}
    good = FileIndexFilter(t.file_io, pred, lambda _: types)
    assert not good.may_match(f, "unused")
    for what, bad in _corruptions(bytes(f.embedded_file_index)).items():
        flt = FileIndexFilter(t.file_io, pred, lambda _: types)
        assert flt.may_match(replace(f, embedded_file_index=bad), "unused"), what
        assert flt.index_failures == 1, what


def test_bloom_filter_sizing_and_membership_follow_paimon():
    assert sizing(1_000_000, 0.1) == (4792536, 3)  # BloomFilter64(1M, 0.1): 599,067 bytes, 3 functions
    b = BloomFilterBuilder(100, 0.01)
    b.add(column_keys(pa.array([1, 2, 3, None], pa.int32()), INT()))
    ix = BloomFilterIndex(b.payload(), "test")
    assert ix.may_contain(column_keys(pa.array([1, 2, 3], pa.int32()), INT())).all()
    assert decode_header(encode_file_index({"k": {"bloom-filter": b.payload(), "bitmap": None}}), "t")["k"][
        "bitmap"].start == -1


def test_index_types_paimon_refuses_are_refused_by_name(tmp_path):
    t = _table(tmp_path, {"file-index.bitmap.columns": "nope"})
    with pytest.raises(UnsupportedFileIndexError, match="'nope'"):
        t.write_arrow(_batch(0))


def test_primary_key_buckets_stand_or_fall_together(tmp_path):
    """A newer file replaces the value an older file's index matches: the bucket's files are
    kept together (Paimon's whole-bucket rule), so the old value is not returned."""
    t = _table(tmp_path, {"file-index.bitmap.columns": "k", "bucket": "1", "write-only": "true"}, primary_keys=["id"])
    t.write_arrow(pa.table({"id": [1, 2], "s": ["a", "b"], "k": pa.array([10, 20], pa.int32())}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [1], "s": ["a2"], "k": pa.array([11], pa.int32())}, schema=SCHEMA))
    pb = t.new_read_builder().new_predicate_builder()
    files, rows, _ = _planned(t, pb.equal("k", 10))
    assert files == 2  # the second file alone could not match k = 10, yet it hides the old row
    out = t.new_read_builder().with_filter(pb.equal("k", 10))
    assert out.new_read().to_arrow(out.new_scan().plan().splits()).filter(pa.compute.field("k") == 10).num_rows == 0
    assert _planned(t, pb.equal("k", 99))[0] == 0  # no file may match: the whole bucket goes
    t.compact(full=True)  # one file on one level: tested alone
    assert _planned(t, pb.equal("k", 10))[0] == 0
    assert _planned(t, pb.equal("k", 11))[:2] == (1, 1)


def test_index_files_follow_data_files_through_compaction_expiration_and_orphan_removal(tmp_path):
    t = _table(tmp_path, {**BLOOM_AND_BITMAP, "file-index.in-manifest-threshold": "1 b"})
    for i in range(3):
        t.write_arrow(_batch(i))
    root = tmp_path / "wh"
    before = _index_files(root)
    assert len(before) == 3
    t.compact(full=True)
    after = _index_files(root) - before
    (compacted,) = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert compacted.extra_files == (compacted.file_name + ".index",) and after == set(compacted.extra_files)
    pb = t.new_read_builder().new_predicate_builder()
    assert _planned(t, pb.equal("k", 1))[:2] == (1, 10) and _planned(t, pb.equal("k", 9))[0] == 0
    orphan = root / "db.db" / "t" / "bucket-0" / "data-orphan.parquet.index"
    orphan.write_bytes(b"x")
    os.utime(orphan, (0, 0))
    removed = t.remove_orphan_files(older_than_millis=10**13)
    assert [Path(p).name for p in removed if p.endswith(".index")] == [orphan.name]
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert _index_files(root) == after  # the compacted-away files' indexes went with them


def test_an_aborted_commit_deletes_the_index_files_of_its_data_files(tmp_path):
    """A write given up (TableCommit.abort), and a compaction whose commit lost to another
    compaction of the same files, delete their data files' .index files with them."""
    t = _table(tmp_path, {**BLOOM_AND_BITMAP, "file-index.in-manifest-threshold": "1 b", "bucket": "1",
                          "bucket-key": "id"})
    root = tmp_path / "wh"
    builder = t.new_batch_write_builder()
    w = builder.new_write()
    w.write_arrow(_batch(0))
    messages = w.prepare_commit()
    w.close()
    (written,) = [f for m in messages for f in m.new_files]
    assert _index_files(root) == set(written.extra_files) == {written.file_name + ".index"}
    builder.new_commit().abort(messages)
    assert _index_files(root) == set()
    assert not list(root.rglob("data-*"))

    for i in range(2):
        t.write_arrow(_batch(i))
    kept = _index_files(root)
    core = t.core
    live = SnapshotReader(core).live_entries(core.snapshot_manager.latest_snapshot())
    rivals = [compact_bucket(core, live[0].partition, 0, 1, [e.file for e in live], True) for _ in range(2)]
    first, second = ({f.extra_files[0] for f in m.compact_after} for m in rivals)
    assert _index_files(root) == kept | first | second
    t.new_batch_write_builder().new_commit().commit([rivals[0]])
    with pytest.raises(impl.errors.CommitConflictError):
        t.new_batch_write_builder().new_commit().commit([rivals[1]])
    assert _index_files(root) == kept | first  # the loser's index files went with its data files


def test_a_failed_data_evolution_compaction_deletes_the_index_files_it_wrote(tmp_path, monkeypatch):
    """The compaction of a data-evolution table writes one file per row-id group; when a later
    group fails, the files already written go with their .index files."""
    t = _table(tmp_path, {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": "100",
                          "file-index.in-manifest-threshold": "1 b", "row-tracking.enabled": "true",
                          "data-evolution.enabled": "true"})
    root = tmp_path / "wh"
    for i in range(2):
        t.write_arrow(_batch(i, 4))
    for row_id in (0, 4):  # one column update in each of the two row-id groups
        update = t.new_batch_write_builder().new_update().with_update_type(["s"])
        t.new_batch_write_builder().new_commit().commit(update.update_by_arrow_with_row_id(
            pa.table({"_ROW_ID": pa.array([row_id], pa.int64()), "s": ["u"]})))
    before = _index_files(root)
    assert len(before) == 2  # the two full files (an update file holds no indexed column)
    calls = []
    real = TableRead.read_row_id_group

    def fail_second(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("storage down (simulated)")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TableRead, "read_row_id_group", fail_second)
    with pytest.raises(OSError, match="simulated"):
        t.compact()
    assert len(calls) == 2  # the first group's file was written before the failure
    assert _index_files(root) == before


def test_a_changelog_copy_of_a_data_file_owns_its_own_index_file(tmp_path):
    t = _table(tmp_path, {"file-index.bitmap.columns": "k", "file-index.in-manifest-threshold": "1 b",
                          "bucket": "1", "changelog-producer": "input", "write-only": "true"}, primary_keys=["id"])
    t.write_arrow(_batch(0))
    names = _index_files(tmp_path / "wh")
    (data,) = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert len(names) == 2 and data.extra_files[0] in names  # the data file's and the changelog file's
    (changelog_index,) = names - set(data.extra_files)
    assert changelog_index.startswith("changelog-")
    assert (next((tmp_path / "wh").rglob(changelog_index)).read_bytes()
            == next((tmp_path / "wh").rglob(data.extra_files[0])).read_bytes())


def test_primary_key_engines_follow_paimons_rules(tmp_path):
    rows = [pa.table({"id": [1, 2], "s": ["a", "b"], "k": pa.array([10, 20], pa.int32())}, schema=SCHEMA),
            pa.table({"id": [3], "s": ["c"], "k": pa.array([30], pa.int32())}, schema=SCHEMA)]
    partial = _table(tmp_path, {"file-index.bitmap.columns": "k", "bucket": "1", "write-only": "true",
                                "merge-engine": "partial-update"}, primary_keys=["id"], name="db.partial")
    dv = _table(tmp_path, {"file-index.bitmap.columns": "k", "bucket": "1", "deletion-vectors.enabled": "true"},
                primary_keys=["id"], name="db.dv")
    for t in (partial, dv):
        for r in rows:
            t.write_arrow(r)
    pb = partial.new_read_builder().new_predicate_builder()
    # partial-update merges values no single file holds: its buckets are never pruned by indexes
    assert _planned(partial, pb.equal("k", 99))[0] == 2
    # deletion vectors: level >= 1 files, read without merging, each tested alone
    files = [f for s in dv.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert files and all(f.level >= 1 for f in files)
    assert _planned(dv, pb.equal("k", 30))[:2] == (1, 1)
    assert _planned(dv, pb.equal("k", 99))[0] == 0

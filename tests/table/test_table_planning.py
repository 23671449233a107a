"""Partition-filtered planning: manifests pruned by their partition statistics, and the
entries of other partitions in a read manifest never built (``ManifestFile.read_manifest``
with a partition filter).

The speed of planning is measured by ``benchmarks/planning.py``; these tests pin what it
relies on: which manifests a filtered plan reads, and that it plans the same files as an
unfiltered plan filtered afterwards.
"""

from __future__ import annotations

import copy
import io

import fastavro
import pyarrow as pa
import pytest
from table_helpers import write

from impl.data.binary_row import encode_row
from impl.data.types import parse_type
from impl.datafile.meta import DataFileMeta
from impl.errors import CorruptMetadataError
from impl.format import avro
from impl.manifest.records import FileKind, ManifestEntry

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])
DAYS = ["d1", "d2", "d3", "d4"]


def _table(catalog, **options):
    # every commit writes one partition, so each delta manifest covers exactly one partition
    t = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"],
                             options={"bucket": "2", "bucket-key": "id", **options})
    for i, dt in enumerate(DAYS * 2):
        write(t, pa.table({"dt": [dt] * 4, "id": list(range(4 * i, 4 * i + 4))}, schema=SCHEMA))
    return t


def _files(splits) -> set[tuple]:
    return {(s.partition_path, s.bucket, f.file_name) for s in splits for f in s.files}


def test_one_partition_filter_reads_only_its_manifests(catalog):
    _table(catalog)
    full_table = catalog.get_table("db.t")  # fresh tables: nothing in the manifest cache
    before = full_table.file_io.requests.snapshot()
    full_scan = full_table.new_read_builder().new_scan()
    full = full_scan.plan().splits()
    full_gets = full_table.file_io.requests.since(before).get("GET", 0)

    one_table = catalog.get_table("db.t")
    rb = one_table.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("dt", "d3"))
    before = one_table.file_io.requests.snapshot()
    one_scan = rb.new_scan()
    one = one_scan.plan().splits()
    one_gets = one_table.file_io.requests.since(before).get("GET", 0)

    manifests = full_scan.reader.manifests_read
    assert manifests == len(DAYS) * 2 and full_scan.reader.manifests_pruned == 0
    # the two commits into d3 wrote the only manifests whose partition statistics cover d3
    assert one_scan.reader.manifests_read == 2
    assert one_scan.reader.manifests_pruned == manifests - 2
    # the skipped manifests were never fetched from storage
    assert full_gets - one_gets == manifests - 2
    assert _files(one) == {f for f in _files(full) if f[0] == "dt=d3"}
    assert len(_files(one)) == 4  # two commits x two buckets
    # planned again on the same table: the partition's entries come from the manifest cache, so
    # it makes the requests of a plan that reads no manifest (a partition no manifest holds)
    none_rb = one_table.new_read_builder()
    none_scan = none_rb.with_filter(none_rb.new_predicate_builder().equal("dt", "d9")).new_scan()
    before = one_table.file_io.requests.snapshot()
    assert none_scan.plan().splits() == [] and none_scan.reader.manifests_read == 0
    no_manifest_gets = one_table.file_io.requests.since(before).get("GET", 0)
    before = one_table.file_io.requests.snapshot()
    again = rb.new_scan().plan().splits()
    assert one_table.file_io.requests.since(before).get("GET", 0) == no_manifest_gets
    assert _files(again) == _files(one) and [s.partition_path for s in again] == [s.partition_path for s in one]
    assert sorted(one_table.to_arrow().filter(pa.compute.equal(pa.compute.field("dt"), "d3"))["id"].to_pylist()) \
        == sorted(rb.new_read().to_arrow(one)["id"].to_pylist())


def test_filter_inside_a_manifest_keeps_only_matching_entries(local_catalog):
    """Manifests merged after every second commit span several partitions: they are read, and
    the partition filter inside each keeps only the matching partitions' files."""
    _table(local_catalog, **{"manifest.merge-min-count": "2"})
    fresh = local_catalog.get_table("db.t")
    metas = fresh.core.manifest_list.read_data_manifests(fresh.latest_snapshot())
    assert any(m.partition_stats.min_values != m.partition_stats.max_values for m in metas)
    rb = fresh.new_read_builder()
    full = rb.new_scan().plan().splits()
    pred = rb.new_predicate_builder().is_in("dt", ["d1", "d4"])
    rb = rb.with_filter(pred)
    cold = local_catalog.get_table("db.t").new_read_builder().with_filter(pred).new_scan()
    one = cold.plan().splits()
    assert cold.reader.manifests_read >= 1
    assert cold.reader.manifests_read + cold.reader.manifests_pruned == len(metas)
    assert _files(one) == {f for f in _files(full) if f[0] in ("dt=d1", "dt=d4")}
    assert {f[0] for f in _files(one)} == {"dt=d1", "dt=d4"} and len(_files(one)) >= 4  # >= 1 file per commit
    # planned on the warm table (manifests in its cache): the same files
    assert _files(rb.new_scan().plan().splits()) == _files(one)
    # filtered reads on one table object, each decoding some partitions of the merged manifests
    # (d1, then d1 + d4 which needs d4 decoded, then d4 alone from what is cached)
    t = local_catalog.get_table("db.t")
    for days in (["d1"], ["d1", "d4"], ["d4"], ["d1", "d4"]):
        b = t.new_read_builder()
        got = b.with_filter(b.new_predicate_builder().is_in("dt", days)).new_scan().plan().splits()
        assert _files(got) == {f for f in _files(full) if f[0] in {f"dt={d}" for d in days}}
        order = [s.partition_path for s in full if s.partition_path in {f"dt={d}" for d in days}]
        assert [s.partition_path for s in got] == order  # file order, not the order decoded


def _manifest_with(local_catalog, records):
    """Avro bytes of ManifestEntry records whose _PARTITION may also be null (a broken writer)."""
    t = local_catalog.create_table("db.m", schema=SCHEMA, partition_keys=["dt"])
    schema = copy.deepcopy(avro.MANIFEST_ENTRY_SCHEMA)
    for f in schema["fields"]:
        if f["name"] == "_PARTITION":
            f["type"] = ["null", "bytes"]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="zstandard")
    return t, buf.getvalue()


def test_filtered_read_of_a_bad_manifest_raises_corrupt_metadata(local_catalog):
    types = [parse_type("STRING")]
    good = ManifestEntry(FileKind.ADD, encode_row(["d1"], types), 0, 1, DataFileMeta("f", 1, 1))
    t, data = _manifest_with(local_catalog, [good.to_avro(), good.to_avro() | {"_PARTITION": None}])
    t.file_io.write_bytes(t.core.manifest_file.paths.manifest_path("bad"), data)
    (meta,) = t.core.manifest_file.write([good])
    bad_meta = meta.__class__(**{**meta.__dict__, "file_name": "bad", "file_size": len(data),
                                 "num_added_files": 2})
    with pytest.raises(CorruptMetadataError, match="_PARTITION"):
        t.core.manifest_file.read_manifest(bad_meta, lambda p: True)
    # an entry count that disagrees with the manifest list (a file cut at a block boundary)
    short = meta.__class__(**{**meta.__dict__, "num_added_files": 3})
    for keep in (lambda p: True, lambda p: False):
        with pytest.raises(CorruptMetadataError, match="manifest list says 3"):
            # a fresh table: the writer's own cache holds the manifest it wrote
            local_catalog.get_table("db.m").core.manifest_file.read_manifest(short, keep)
    # garbage in place of the manifest
    t.file_io.write_bytes(t.core.manifest_file.paths.manifest_path("bad"), b"x" * len(data))
    with pytest.raises(CorruptMetadataError, match="not a readable Avro file"):
        t.core.manifest_file.read_manifest(bad_meta, lambda p: True)


def test_planning_leaves_the_garbage_collector_as_it_found_it(local_catalog):
    """Planning pauses the cyclic collector (impl.gcpause) and restores it: on when it was on,
    off when the caller had turned it off, also when planning fails."""
    import gc

    from impl.gcpause import paused_gc
    t = _table(local_catalog)
    assert gc.isenabled()
    assert t.new_read_builder().new_scan().plan().splits()
    assert gc.isenabled()
    gc.disable()
    try:
        t.new_read_builder().new_scan().plan()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(RuntimeError):
        with paused_gc():
            assert not gc.isenabled()
            with paused_gc():
                pass
            assert not gc.isenabled()  # the inner block did not turn it back on
            raise RuntimeError("planning failed")
    assert gc.isenabled()


def test_overlapping_pauses_from_two_threads_restore_the_collector_once_both_left():
    """Two plans in two threads whose pauses overlap out of order (A enters, B enters, A leaves,
    B leaves): the collector stays off until the last one leaves, then is on again."""
    import gc

    from impl.gcpause import paused_gc
    assert gc.isenabled()
    a, b = paused_gc(), paused_gc()
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    assert not gc.isenabled()  # B is still building its entries
    b.__exit__(None, None, None)
    assert gc.isenabled()


@pytest.mark.parametrize("target, open_cost, per_split", [
    ("128mb", "4mb", [8]),  # everything fits: one split per bucket (the shortcut)
    ("10mb", "4mb", [2, 2, 2, 2]),  # two files of weight 4 MB per split
    ("9mb", "1b", [8]),  # tiny files, weight = size: all fit
    ("1b", "1b", [1] * 8),  # nothing fits with another: one file per split
])
def test_append_files_are_packed_into_target_size_splits(local_catalog, target, open_cost, per_split):
    """Greedy packing in file order, each file weighing max(size, open cost)."""
    t = local_catalog.create_table("db.p", schema=SCHEMA, options={
        "bucket": "1", "bucket-key": "id", "source.split.target-size": target,
        "source.split.open-file-cost": open_cost})
    for i in range(8):
        write(t, pa.table({"dt": ["d"], "id": [i]}, schema=SCHEMA))
    splits = local_catalog.get_table("db.p").new_read_builder().new_scan().plan().splits()
    assert [len(s.files) for s in splits] == per_split
    every = [f.file_name for s in splits for f in s.files]
    assert len(set(every)) == 8

"""The partition index in the header of impl's Avro manifests (impl.format.partition_blocks).

A partition-filtered read through the index decodes only the blocks holding the kept partitions;
it must give exactly the entries the long way gives (the whole partition column first), for any
order of entries, and a read through an index that does not agree with the file must fall back
to the long way, never answer with the index's word.
"""

from __future__ import annotations

import base64
import io
import json
from collections import Counter

import fastavro
import pytest
from core_helpers import memory_root
from hypothesis import given, settings
from hypothesis import strategies as st
from test_avro import _entry

from impl.data.binary_row import encode_row
from impl.data.types import BIGINT
from impl.format import avro_columns, avro_encode, partition_blocks
from impl.fs.paths import TablePaths
from impl.manifest import columnar_entries
from impl.manifest.manifest_file import ManifestFile


def _partition(i: int) -> bytes:
    return encode_row([i], [BIGINT()])


def _without_index(data: bytes) -> bytes:
    head = avro_encode.read_header(data)
    return avro_encode.header(head.metadata["avro.schema"], head.metadata["avro.codec"].decode(),
                              head.sync_marker) + data[head.end:]


def _written(partition_of_each: list[int]):
    """A manifest ManifestFile wrote of entries in partitions ``partition_of_each`` (in that
    order), with its bytes, meta and entries."""
    fio, root = memory_root()
    paths = TablePaths(root)
    entries = [_entry(f"data-{i:04d}-{'x' * 40}.parquet", bucket=i % 3, partition=_partition(p))
               for i, p in enumerate(partition_of_each)]
    mf = ManifestFile(fio, paths, [BIGINT()])
    (meta,) = mf.write(entries)
    data = fio.read_bytes(paths.manifest_path(meta.file_name))
    return fio, paths, meta, data, entries


@given(st.lists(st.integers(1, 9), min_size=1, max_size=12), st.data())
@settings(max_examples=60, deadline=None)
def test_an_index_decodes_to_the_entries_of_each_partition_in_each_block(block_counts, data):
    partitions = data.draw(st.lists(st.sampled_from([b"a", b"b", b"", b"\x00c"]),
                                    min_size=sum(block_counts), max_size=sum(block_counts)))
    value = partition_blocks.encode(block_counts, partitions)
    assert value is not None  # at most 4 partitions x 12 blocks: under the cap
    index = partition_blocks.decode(value, block_counts)
    starts = [sum(block_counts[:b]) for b in range(len(block_counts) + 1)]
    for p in set(partitions):
        in_blocks = {b: n for b in range(len(block_counts))
                     if (n := partitions[starts[b]:starts[b + 1]].count(p))}
        assert dict(index.blocks[p]) == in_blocks
        assert index.entries([p]) == partitions.count(p)
        assert index.blocks_of([p]) == sorted(in_blocks)
    assert set(index.blocks) == set(partitions)


def test_an_index_that_does_not_count_the_blocks_is_refused():
    counts = [2, 3]
    good = json.loads(partition_blocks.encode(counts, [b"a", b"a", b"a", b"b", b"b"]))
    assert good["blocks"] == [[0, 2, 1, 1], [1, 2]]

    def encoded(**changes) -> bytes:
        return json.dumps({**good, **changes}).encode()

    for bad in (encoded(blocks=[[0, 2, 1, 1], [1, 1]]),  # block 1 holds 3 records, 2 counted
                encoded(blocks=[[0, 2, 1, 1], [2, 2]]),  # no block 2
                encoded(blocks=[[0, 2, 1, 1, 1, 0], [1, 2]]),  # a block listed twice
                encoded(blocks=[[0, 2, 1], [1, 2]]),  # a block without its count
                encoded(partitions=[good["partitions"][0]] * 2),  # a partition listed twice
                encoded(partitions=good["partitions"][:1])):
        with pytest.raises(ValueError):
            partition_blocks.decode(bad, counts)
    assert partition_blocks.decode(encoded(version=2), counts) is None  # a newer writer's: not known
    assert partition_blocks.decode(None, counts) is None


def test_an_index_is_left_out_when_it_would_weigh_on_the_file():
    many = [bytes([i % 256, i // 256]) for i in range(600)]
    assert partition_blocks.encode([1] * 600, many) is None  # a partition per entry, one per block
    assert partition_blocks.encode([600], many) is None  # 600 partitions in one block
    assert partition_blocks.encode([300, 300], sorted(many[:20] * 30)) is not None
    with pytest.raises(ValueError):
        partition_blocks.encode([2], [b"a"])


@pytest.mark.parametrize("order", ["grouped", "interleaved"])
def test_a_partition_filtered_read_through_the_index_equals_the_long_way(monkeypatch, order):
    ids = [i * 5 // 600 for i in range(600)] if order == "grouped" else [i % 5 for i in range(600)]
    fio, paths, meta, data, entries = _written(ids)
    head = avro_encode.read_header(data)
    assert partition_blocks.KEY in head.metadata  # ManifestFile writes the index
    blocks = avro_columns.decode_blocks(data).counts
    assert len(blocks) > 5  # several blocks: the index has blocks to skip
    fio_u, root_u = memory_root()
    (unpartitioned,) = ManifestFile(fio_u, TablePaths(root_u)).write(entries)
    unindexed = fio_u.read_bytes(TablePaths(root_u).manifest_path(unpartitioned.file_name))
    assert partition_blocks.KEY not in avro_encode.read_header(unindexed).metadata  # no partition to index
    # every other reader of Avro keeps the file's own header keys and reads the entries
    assert [r["_FILE"]["_FILE_NAME"] for r in fastavro.reader(io.BytesIO(data))] == [e.file.file_name for e in entries]

    decoded: list[int] = []
    original = avro_columns.read_columns
    monkeypatch.setattr(avro_columns, "read_columns",
                        lambda d, *a, **k: decoded.append(len(d.counts)) or original(d, *a, **k))
    for wanted in ({2}, {0, 4}, {7}, set(range(5))):
        keep = {_partition(p) for p in wanted}.__contains__
        decoded.clear()
        indexed = columnar_entries.partition_entries(data, keep)
        used = list(decoded)
        long_way = columnar_entries.partition_entries(_without_index(data), keep)
        assert indexed == long_way
        kept, partitions, total = indexed
        assert [e for _, e in kept] == [e for e in entries if keep(e.partition)]
        assert [entries[i] for i, _ in kept] == [e for _, e in kept]
        assert partitions == {_partition(p) for p in range(5)} and total == 600
        # the index path decodes the kept partitions' blocks only, and no partition column first
        expect = len({b for b, count in enumerate(blocks) if _blocks_holding(ids, blocks, b) & wanted})
        assert used == ([expect] if expect else [])
        # and the public reader agrees
        assert ManifestFile(fio, paths, [BIGINT()]).read_manifest(meta, keep) == [e for e in entries if keep(e.partition)]


def _blocks_holding(ids: list[int], counts: tuple[int, ...], block: int) -> set[int]:
    start = sum(counts[:block])
    return set(ids[start:start + counts[block]])


def test_an_index_that_lies_about_the_blocks_falls_back_to_the_long_way():
    """Partitions swapped in an index whose counts still add up block by block: the read finds
    fewer entries in the blocks the index names than it promised, and decodes the long way."""
    ids = [i * 2 // 300 for i in range(300)]  # partition 0 then 1
    _, _, _, data, entries = _written(ids)
    head = avro_encode.read_header(data)
    doc = json.loads(head.metadata[partition_blocks.KEY])
    assert [base64.b64decode(p) for p in doc["partitions"]] == [_partition(0), _partition(1)]
    counts = avro_columns.decode_blocks(data).counts
    assert sum(doc["blocks"][0][1::2]) == Counter(ids)[0]
    doc["partitions"].reverse()  # the index now puts partition 1's entries where partition 0's are
    lying = avro_encode.header(head.metadata["avro.schema"], head.metadata["avro.codec"].decode(), head.sync_marker,
                               {partition_blocks.KEY: json.dumps(doc).encode()}) + data[head.end:]
    assert partition_blocks.decode(json.dumps(doc).encode(), counts) is not None  # it counts the blocks
    for p in (0, 1):
        keep = _partition(p).__eq__
        assert columnar_entries._through_index(avro_columns.decode_blocks(lying), keep) is None
        kept, _, _ = columnar_entries.partition_entries(lying, keep)
        assert [e for _, e in kept] == [e for e in entries if keep(e.partition)]

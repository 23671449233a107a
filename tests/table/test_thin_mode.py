"""``data-file.thin-mode``: primary-key data files without the ``_KEY_`` copies of the key.

Paimon's ``KeyValueThinDataFileWriterImpl`` writes ``_SEQUENCE_NUMBER, _VALUE_KIND, <values>``;
readers take the key from the value columns of a file that has no ``_KEY_`` columns. A table
written in thin mode must read exactly as its twin written in the default mode, through every
path that reads files back (merge on read, compaction, lookup for deletion vectors and the
lookup changelog, the first-row engine), and its files' metadata (key range, key statistics,
sequence range) must be the same.
"""

from __future__ import annotations

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from table_helpers import read, sort_rows, write

from impl.read.scan import SnapshotReader

pytest.importorskip("impl.mergetree")

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])
KEY = ["dt", "name"]


def _file_columns(path: str) -> list[str]:
    if path.endswith(".parquet"):
        return pq.read_schema(path).names
    if path.endswith(".orc"):
        return orc.ORCFile(path).schema.names
    with open(path, "rb") as f:
        return [fld["name"] for fld in fastavro.reader(f).writer_schema["fields"]]


def _metas(table) -> list[tuple]:
    """What a file's metadata says of its keys and rows, file by file in key order per bucket."""
    out = []
    for e in SnapshotReader(table.core).live_entries(table.latest_snapshot()):
        f = e.file
        out.append((e.partition, e.bucket, f.level, f.row_count, f.min_key, f.max_key, f.key_stats,
                    f.min_sequence_number, f.max_sequence_number, f.delete_row_count))
    return sorted(out, key=repr)


def _batches(seed: int):
    """Upserts and deletes of keys that repeat across batches, in two partitions."""
    rng = np.random.default_rng(seed)
    for round_ in range(7):
        n = 60
        ids = rng.integers(0, 80, n)
        data = pa.table({"dt": ["d1" if i % 3 else "d2" for i in ids], "id": pa.array(ids, pa.int64()),
                         "name": [f"k{i:03d}" for i in ids], "v": rng.random(n)})
        kinds = np.where(rng.random(n) < (0.2 if round_ else 0.0), 3, 0).astype(np.int8)  # -D on some
        yield data, kinds


@pytest.mark.parametrize("options", [
    {},
    {"file.format": "orc"},
    {"file.format": "avro"},
    {"deletion-vectors.enabled": "true"},
    {"changelog-producer": "lookup"},
    {"merge-engine": "first-row"},
    {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"num-sorted-run.compaction-trigger": "2", "changelog-producer": "input"},
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_a_thin_table_reads_as_its_default_twin(local_catalog, options):
    opts = {"bucket": "2", **options}
    thick = local_catalog.create_table("db.thick", schema=SCHEMA, primary_keys=KEY, partition_keys=["dt"],
                                       options=opts)
    thin = local_catalog.create_table("db.thin", schema=SCHEMA, primary_keys=KEY, partition_keys=["dt"],
                                      options={**opts, "data-file.thin-mode": "true"})
    first_row = options.get("merge-engine") == "first-row"
    for data, kinds in _batches(3):
        if first_row:
            kinds = np.zeros_like(kinds)  # the first-row engine takes no deletes
        for t in (thick, thin):
            write(t, data, row_kinds=kinds)
        assert sort_rows(read(thin)) == sort_rows(read(thick))
    for t in (thick, thin):
        t.compact(full=True)
    assert sort_rows(read(thin)) == sort_rows(read(thick))
    assert read(thin).num_rows > 0
    assert _metas(thin) == _metas(thick)
    files = [f.path for f in thin.file_io.walk_files(thin.path) if "/bucket-" in f.path and "/data-" in f.path
             or "/changelog-" in f.path]
    assert files
    for path in files:
        columns = _file_columns(path)
        assert not [c for c in columns if c.startswith("_KEY_")], path
        assert columns[:2] == ["_SEQUENCE_NUMBER", "_VALUE_KIND"], path
    thick_files = [f.path for f in thick.file_io.walk_files(thick.path) if "/data-" in f.path]
    assert thick_files and all(_file_columns(p)[:2] == ["_KEY_name", "_SEQUENCE_NUMBER"] for p in thick_files)
    if "changelog-producer" in options:
        changes = _changelog(thin)
        assert changes and sorted(changes, key=repr) == sorted(_changelog(thick), key=repr)


def _changelog(table) -> list[dict]:
    """Every change of the table's history (its changelog files, for the changelog producers)."""
    latest = table.latest_snapshot().id
    return table.copy({"incremental-between": f"0,{latest}"}).to_arrow().to_pylist()


def test_thin_mode_is_an_option_of_primary_key_tables(local_catalog):
    t = local_catalog.create_table("db.t", schema=SCHEMA, primary_keys=KEY, partition_keys=["dt"],
                                   options={"bucket": "1", "data-file.thin-mode": "true"})
    assert t.core.merge_tree_options.data_file_thin_mode is True
    with pytest.raises(Exception, match="data-file.thin-mode"):
        local_catalog.create_table("db.bad", schema=SCHEMA, primary_keys=KEY,
                                   options={"bucket": "1", "data-file.thin-mode": "maybe"})

"""impl's Parquet reads open files through ``impl.format.parquet_open.open_parquet``: pyarrow's
private reader (it takes a memory pool), or the public ``pq.ParquetFile`` when the private class
is missing or its signature differs (another pyarrow). Both paths read the same rows: whole
files, chosen columns (nested ones, a name with a dot) and streamed batches."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from impl.format import parquet_open
from impl.format.parquet_data import ParquetReader


def _file(tmp_path) -> str:
    n = 3000
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([{"a": i, "b": f"x{i}"} for i in range(n)]),
        "tags": pa.array([[str(i), None] if i % 3 else None for i in range(n)], pa.list_(pa.string())),
        "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "a.b": pa.array([i * 0.5 for i in range(n)]),
        "v": pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int32()),
    })
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, row_group_size=1000)
    return path


def _reads(path: str) -> list[pa.Table]:
    out = []
    with open(path, "rb") as f:
        reader = ParquetReader(f, path)
        out.append(reader.read())
        for columns in (["v", "a.b"], ["m", "s"], ["tags"], ["s", "id", "a.b"]):
            out.append(reader.read(columns))
            out.append(pa.concat_tables(reader.iter_batches(columns, 700)))
        out.append(pa.concat_tables(reader.iter_batches(None, 1000)))
    return out


class _OtherSignature:
    """A private reader class of another pyarrow: no ``memory_pool`` argument."""

    def __init__(self):
        pass


@pytest.mark.parametrize("replacement", [None, _OtherSignature], ids=["missing", "other-signature"])
def test_the_public_fallback_reads_the_same_rows(tmp_path, monkeypatch, replacement):
    path = _file(tmp_path)
    with open(path, "rb") as f:
        assert not isinstance(parquet_open.open_parquet(f, pa.default_memory_pool()), parquet_open.PublicReader)
    private = _reads(path)
    monkeypatch.setattr(parquet_open, "_PRIVATE_READER", replacement)
    with open(path, "rb") as f:
        assert isinstance(parquet_open.open_parquet(f, pa.default_memory_pool()), parquet_open.PublicReader)
    public = _reads(path)
    assert [t.column_names for t in public] == [t.column_names for t in private]
    for got, want in zip(public, private, strict=True):
        assert got.equals(want), got.column_names
    # and what pyarrow's public reader reads
    assert private[0].equals(pq.read_table(path))
    assert private[1].equals(pq.read_table(path).select(["v", "a.b"]))

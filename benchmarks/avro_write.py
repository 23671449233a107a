"""Avro data-file writing: the column-wise writer (``impl.format.avro_data.AvroWriter``) against
fastavro record by record (the writer it replaced), in the same run, on the same rows.

Two tables: the postpone benchmark's rows (BIGINT key, BIGINT, short STRING) and a wide one with
every flat type (15% nulls). Prints rows/s of each writer per codec and checks that both files
decode to the same records.

    python benchmarks/avro_write.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import io
import time

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from fastavro.write import Writer

from impl.data.types import DataField, from_arrow
from impl.format import avro_data
from impl.format.file_format import WriteOptions


def fastavro_records(table: pa.Table, fields: list[DataField], options: WriteOptions) -> bytes:
    """The previous writer: rows as Python dicts through fastavro."""
    out = io.BytesIO()
    codec = avro_data.avro_codec(options)
    writer = Writer(out, fastavro.parse_schema(avro_data.record_schema(fields)), codec=codec,
                    sync_interval=64 * 1024, compression_level=options.zstd_level if codec == "zstandard" else None)
    plain = pa.Table.from_arrays([avro_data._plain(c) for c in table.columns], names=table.column_names)
    for record in plain.to_pylist():
        writer.write(record)
    writer.flush()
    return out.getvalue()


def column_wise(table: pa.Table, fields: list[DataField], options: WriteOptions) -> bytes:
    out = io.BytesIO()
    writer = avro_data.AvroWriter(out, fields, options)
    writer.write(table)
    writer.close()
    return out.getvalue()


def postpone_rows(n: int, rng: np.random.Generator) -> pa.Table:
    ids = rng.integers(0, n, n)
    return pa.table({"id": ids, "v": ids * 3, "s": pa.array(["x1"] * n)})


def wide_rows(n: int, rng: np.random.Generator) -> pa.Table:
    def nulls(arr: pa.Array) -> pa.Array:
        return pc.if_else(pa.array(rng.random(n) < 0.15), pa.scalar(None, arr.type), arr)

    ints = rng.integers(-10 ** 9, 10 ** 9, n)
    return pa.table({
        "id": pa.array(np.arange(n)),
        "i": nulls(pa.array(ints.astype(np.int32))),
        "b": nulls(pa.array(ints * 1_000_003)),
        "f": nulls(pa.array(rng.normal(size=n).astype(np.float32))),
        "d": nulls(pa.array(rng.normal(size=n))),
        "flag": nulls(pa.array(ints % 2 == 0)),
        "s": nulls(pc.binary_join_element_wise(pa.array(["name-"] * n), pc.cast(pa.array(ints), pa.string()), "")),
        "day": nulls(pa.array((ints % 20000).astype(np.int32)).cast(pa.date32())),
        "ts": nulls(pa.array(np.abs(ints) * 1000, pa.timestamp("us"))),
        "dec": nulls(pa.array(ints).cast(pa.decimal128(19, 0)).cast(pa.decimal128(21, 2))),
    })


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    a = ap.parse_args()
    rng = np.random.default_rng(11)
    for label, table in (("postpone rows (id, v, s)", postpone_rows(a.rows, rng)),
                         ("wide (10 flat types, 15% nulls)", wide_rows(a.rows, rng))):
        fields = [DataField(i, f.name, from_arrow(f.type)) for i, f in enumerate(table.schema)]
        print(f"{label}: {table.num_rows} rows")
        for compression in ("zstd", "none", "deflate"):
            options = WriteOptions(compression=compression)
            timings = {}
            files = {}
            for name, write in (("fastavro records", fastavro_records), ("column-wise", column_wise)):
                t0 = time.perf_counter()
                files[name] = write(table, fields, options)
                timings[name] = time.perf_counter() - t0
            same = (list(fastavro.reader(io.BytesIO(files["fastavro records"])))
                    == list(fastavro.reader(io.BytesIO(files["column-wise"]))))
            old, new = timings["fastavro records"], timings["column-wise"]
            print(f"  {compression:8s} fastavro records {table.num_rows / old:12,.0f} rows/s ({old:.2f} s)   "
                  f"column-wise {table.num_rows / new:12,.0f} rows/s ({new:.2f} s)   x{old / new:.1f}   "
                  f"same records: {same}")


if __name__ == "__main__":
    main()

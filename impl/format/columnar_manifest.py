"""Manifests, manifest lists and index manifests stored as ORC (``manifest.format`` = orc) or
Parquet (``manifest.format`` = parquet) files.

Paimon Java writes the same rows in any of its file formats: a manifest holds the
``ManifestEntry`` rows (``_VERSION``, ``_KIND`` as TINYINT, ``_PARTITION``, ``_BUCKET``,
``_TOTAL_BUCKETS``, the ``_FILE`` row), a manifest list the ``ManifestFileMeta`` rows, under the
same field names as in Avro. Java picks the reader from the table's ``manifest.format`` option
(``AbstractFileStore.manifestFileFactory`` / ``manifestListFactory``), not from the file; here
the format is recognised by the file's magic bytes (``ORC`` at the start, ``PAR1`` at both ends),
so a table whose option changed still reads every file it holds.

The files are decoded with pyarrow (``pyarrow.orc`` / ``pyarrow.parquet``) into one Arrow table;
manifest entries are then built column-wise by the same code as the polars Avro path
(:func:`impl.manifest.columnar_entries.entries_of`); a shape it refuses is decoded row by row with
the Avro records' converters, which name the file in any error.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from impl.errors import CorruptMetadataError

ORC = "orc"
PARQUET = "parquet"


def format_of(data: bytes) -> str | None:
    """``orc`` or ``parquet`` for an ORC / Parquet file's bytes, None for anything else."""
    if data[:3] == b"ORC":
        return ORC
    if len(data) >= 8 and data[:4] == b"PAR1" and data[-4:] == b"PAR1":
        return PARQUET
    return None


def read_table(data: bytes, path: str) -> pa.Table:
    """The rows of an ORC or Parquet file; an unreadable one raises CorruptMetadataError(path)."""
    kind = format_of(data)
    if kind is None:
        raise CorruptMetadataError(path, "neither an ORC nor a Parquet file")
    try:
        if kind == ORC:
            from pyarrow import orc

            return orc.ORCFile(pa.BufferReader(data)).read()
        import pyarrow.parquet as pq

        return pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise CorruptMetadataError(path, f"not a readable {kind.upper()} file ({type(e).__name__}: {e})") from e


def records(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of ``table`` as dicts of the Avro records' shape (nested rows as dicts)."""
    return table.to_pylist()


# ----------------------------------------------------------------------------- writing

# Fields Paimon declares TINYINT, which Avro can only store as int (Java's ManifestEntry /
# IndexManifestEntry ``_KIND`` and DataFileMeta ``_FILE_SOURCE``): ORC and Parquet keep TINYINT.
_TINYINT_FIELDS = frozenset({"_KIND", "_FILE_SOURCE"})


def _arrow_type(avro_type: Any, name: str) -> tuple[pa.DataType, bool]:
    """(Arrow type, nullable) of a field of one of ``impl.format.avro``'s schemas."""
    if isinstance(avro_type, list):
        branches = [b for b in avro_type if b != "null"]
        t, _ = _arrow_type(branches[0], name)
        return t, True
    if isinstance(avro_type, dict):
        kind = avro_type["type"]
        if kind == "record":
            return pa.struct([_arrow_field(f) for f in avro_type["fields"]]), False
        if kind == "array":
            item, item_nullable = _arrow_type(avro_type["items"], name)
            return pa.list_(pa.field("item", item, nullable=item_nullable)), False
        if avro_type.get("logicalType") == "timestamp-millis":
            return pa.timestamp("ms"), False
        return _arrow_type(kind, name)
    if avro_type == "int":
        return (pa.int8() if name in _TINYINT_FIELDS else pa.int32()), False
    return {"long": pa.int64(), "string": pa.string(), "bytes": pa.binary(), "boolean": pa.bool_()}[avro_type], False


def _arrow_field(field: dict) -> pa.Field:
    t, nullable = _arrow_type(field["type"], field["name"])
    return pa.field(field["name"], t, nullable=nullable)


def arrow_schema(avro_schema: dict) -> pa.Schema:
    """The Arrow schema of the rows of one of ``impl.format.avro``'s record schemas."""
    return pa.schema([_arrow_field(f) for f in avro_schema["fields"]])


def write_table(fmt: str, avro_schema: dict, rows: list[dict]) -> bytes:
    """``rows`` (dicts of the Avro records' shape) as an ORC or Parquet file (zstd compressed)."""
    table = pa.Table.from_pylist(rows, schema=arrow_schema(avro_schema))
    sink = pa.BufferOutputStream()
    if fmt == ORC:
        from pyarrow import orc

        orc.write_table(table, sink, compression="zstd")
    elif fmt == PARQUET:
        import pyarrow.parquet as pq

        pq.write_table(table, sink, compression="zstd")
    else:
        raise ValueError(f"manifest format {fmt!r}")
    return sink.getvalue().to_pybytes()

"""Avro container files for manifests, manifest lists and index manifests.

Written in the codec the table's options name (:class:`AvroCodec`, Paimon's ``avro.codec`` /
``manifest.compression``: zstandard by default; null, deflate, snappy, bzip2 and xz on request),
read in any of them (fastavro; snappy through ``cramjam``, a dependency for that reason).

The schemas are exactly those Apache Paimon writes (record and field names included, see
FORMAT.md and the pypaimon 2.1.0 reference dump). Readers use each file's own writer schema
and look fields up by name, as Paimon Java's ``FieldReaderFactory.RowReader`` does: files from
Java Paimon or older writers that lack the newer nullable fields read them as None, fields
this package does not know are skipped, and record names and namespaces do not matter.

A writer schema may also be a top-level ``["null", record]`` union (pypaimon-rust 0.4.0 writes
its manifests and manifest lists so): Java's ``AvroRowDatumReader`` reads the record branch and
refuses a null row ("Cannot read a null row"); here a null row is a corrupt file.
"""

from __future__ import annotations

import functools
import io
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from impl.errors import CorruptMetadataError, InvalidOptionError


def fastavro_module() -> Any:
    """fastavro, imported on first use rather than with impl: ``import impl`` (and every
    ``paimon-py`` call) does not pay for it (and cramjam, which it imports) until an Avro file is
    read or written. The import system caches the module, so a later call is a dict lookup."""
    import fastavro

    return fastavro


@functools.cache
def _value_readers() -> tuple[Callable[..., Any], ...] | None:
    """fastavro's compiled per-value readers (read_long, read_bytes, read_record, skip_record;
    public in every fastavro >= 1.9, not documented), or None when a fastavro lacks them (then a
    manifest is filtered after decoding). Imported on first use, as :func:`fastavro_module`."""
    try:
        from fastavro._read import read_bytes, read_long, read_record, skip_record  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - a fastavro without them
        return None
    return read_long, read_bytes, read_record, skip_record

# The codecs Paimon Java can write metadata in: the names Avro's CodecFactory.fromString knows
# (exactly so: it is case-sensitive), plus Paimon's own "zstd" (any case) for zstandard.
AVRO_CODECS = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")


@dataclass(frozen=True)
class AvroCodec:
    """The Avro codec of the metadata files a table writes, as its options name it.

    ``name`` is the option's value as written and ``key`` the option it came from; it is checked
    when a file is written (:meth:`checked`), so that a table whose option Java could not write
    with still reads. ``level``: zstandard's (``file.compression.zstd-level``)."""

    name: str = "zstd"
    level: int | None = None
    key: str = "manifest.compression"

    def checked(self) -> str:
        """fastavro's codec name, or InvalidOptionError for a name Paimon Java refuses too."""
        if self.key != "avro.codec" and self.name.lower() == "zstd":
            return "zstandard"
        if self.name not in AVRO_CODECS:
            raise InvalidOptionError(f"option {self.key!r}: {self.name!r} is not an Avro codec (one of zstd, "
                                     f"{', '.join(AVRO_CODECS)}); no metadata file is written")
        return self.name


DEFAULT_CODEC = AvroCodec()


def _nullable(avro_type: Any) -> list:
    return ["null", avro_type]


def _stats_schema(name: str) -> dict:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            {"name": "_NULL_COUNTS", "type": _nullable({"type": "array", "items": _nullable("long")}), "default": None},
        ],
    }


def _opt(name: str, avro_type: Any) -> dict:
    return {"name": name, "type": _nullable(avro_type), "default": None}


DATA_FILE_META_SCHEMA = {
    "type": "record",
    "name": "DataFileMeta",
    "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats_schema("record_KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats_schema("record_VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
        _opt("_DELETE_ROW_COUNT", "long"),
        _opt("_EMBEDDED_FILE_INDEX", "bytes"),
        _opt("_FILE_SOURCE", "int"),
        _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_FIRST_ROW_ID", "long"),
        _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
        _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
    ],
}

MANIFEST_ENTRY_SCHEMA = {
    "type": "record",
    "name": "ManifestEntry",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": DATA_FILE_META_SCHEMA},
    ],
}

MANIFEST_FILE_META_SCHEMA = {
    "type": "record",
    "name": "ManifestFileMeta",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_schema("record_PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _opt("_MIN_BUCKET", "int"),
        _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"),
        _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"),
        _opt("_MAX_ROW_ID", "long"),
        _opt("_TOTAL_BUCKETS", "int"),
        _opt("_EXTRA_FILES", {"type": "array", "items": "string"}),
    ],
}

DELETION_VECTOR_META_SCHEMA = {
    "type": "record",
    "name": "DeletionVectorMeta",
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
        _opt("_CARDINALITY", "long"),
    ],
}

GLOBAL_INDEX_META_SCHEMA = {
    "type": "record",
    "name": "GlobalIndexMeta",
    "fields": [
        {"name": "_ROW_RANGE_START", "type": "long"},
        {"name": "_ROW_RANGE_END", "type": "long"},
        {"name": "_INDEX_FIELD_ID", "type": "int"},
        _opt("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
        _opt("_INDEX_META", "bytes"),
        _opt("_SOURCE_META", "bytes"),
    ],
}

INDEX_MANIFEST_ENTRY_SCHEMA = {
    "type": "record",
    "name": "IndexManifestEntry",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        _opt("_DELETIONS_VECTORS_RANGES", {"type": "array", "items": DELETION_VECTOR_META_SCHEMA}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_GLOBAL_INDEX", GLOBAL_INDEX_META_SCHEMA),
    ],
}

_PARSED: dict[int, tuple[dict, Any]] = {}


def parsed_schema(schema: dict) -> Any:
    # cached per schema object (the schemas are module constants); keyed by identity, not by
    # record name, so two schemas that share a name never get each other's parse
    cached = _PARSED.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, fastavro_module().parse_schema(schema))
        if len(_PARSED) >= 64:  # only ad-hoc schemas get here this often
            _PARSED.clear()
        _PARSED[id(schema)] = cached
    return cached[1]


class AvroBufferWriter:
    """Streams records into an in-memory Avro container; ``size_bytes`` tracks the compressed
    bytes so far (within one block), which is what rolling writers compare to their target."""

    # Small blocks keep the size estimate close to the real compressed size.
    SYNC_INTERVAL_BYTES = 16 * 1024

    def __init__(self, schema: dict, codec: AvroCodec = DEFAULT_CODEC):
        name = codec.checked()
        self._buf = io.BytesIO()
        self._writer = fastavro_module().write.Writer(self._buf, parsed_schema(schema), codec=name,
                              sync_interval=self.SYNC_INTERVAL_BYTES,
                              compression_level=codec.level if name == "zstandard" else None)

    def write(self, record: dict) -> None:
        self._writer.write(record)

    @property
    def size_bytes(self) -> int:
        return self._buf.tell()

    def finish(self) -> bytes:
        self._writer.flush()
        return self._buf.getvalue()


def write_avro(schema: dict, records: Iterable[dict], codec: AvroCodec = DEFAULT_CODEC) -> bytes:
    w = AvroBufferWriter(schema, codec)
    for r in records:
        w.write(r)
    return w.finish()


def record_schema(schema: Any) -> tuple[dict | None, int | None]:
    """(the record schema of a container's writer schema, the union branch of the record when
    every record is wrapped in a top-level union of null and the record, else None); (None,
    None) when the schema is no record.

    pypaimon-rust 0.4.0 writes ``["null", record]``, which Paimon Java's ``AvroRowDatumReader``
    reads (branch 1; a null row is an error); ``[record, "null"]`` is read here too."""
    if isinstance(schema, dict) and schema.get("type") == "record":
        return schema, None
    if isinstance(schema, list) and len(schema) == 2 and "null" in schema:
        branch = 1 - schema.index("null")
        record = schema[branch]
        if isinstance(record, dict) and record.get("type") == "record":
            return record, branch
    return None, None


def read_avro(data: bytes, path: str, expected_record: str, required_fields: Iterable[str] = ()) -> list[dict]:
    """Records of an Avro container file; anything malformed raises CorruptMetadataError(path)."""
    if not data:
        raise CorruptMetadataError(path, "file is empty")
    try:
        reader = fastavro_module().reader(io.BytesIO(data))
        schema = reader.writer_schema
        values = list(reader)
    except Exception as e:  # noqa: BLE001 - fastavro raises many kinds for garbage input
        raise CorruptMetadataError(path, f"not a readable Avro file ({type(e).__name__}: {e})") from e
    record, branch = record_schema(schema)
    records: list[dict] = []
    for v in values:
        if not isinstance(v, dict):
            if v is None and branch is not None:
                raise CorruptMetadataError(path, f"holds a null {expected_record} record")
            raise CorruptMetadataError(path, f"expected {expected_record} records, found a {type(v).__name__} value")
        records.append(v)
    name = str(record.get("name", "")) if record is not None else ""
    if name.rsplit(".", 1)[-1] != expected_record:
        # Java Paimon names its records differently; accept any record carrying the fields.
        fields = {f["name"] for f in record.get("fields", [])} if record is not None else set()
        missing = [f for f in required_fields if f not in fields]
        if missing:
            raise CorruptMetadataError(path, f"expected {expected_record} records, missing fields {missing}")
    return records


# The leading fields of a manifest entry as Paimon (Java, pypaimon and this package) writes them;
# _FILE, the large part, follows.
_ENTRY_PREFIX = (("_VERSION", "int"), ("_KIND", "int"), ("_PARTITION", "bytes"), ("_BUCKET", "int"),
                 ("_TOTAL_BUCKETS", "int"))


def read_manifest_entry_records(data: bytes, path: str, keep_partition: Callable[[bytes], bool]
                                ) -> tuple[list[tuple[int, dict]], set[bytes], int]:
    """(position in the file, record) of the ManifestEntry records of a manifest whose serialized
    partition ``keep_partition`` accepts; every partition in the file; the number of records.

    The ``_FILE`` record of every other entry is skipped undecoded: decoding it (two dozen
    fields, two stats records) is most of the cost of reading a manifest, and a one-partition
    scan of a manifest holding many partitions needs few of them. A file whose writer schema
    does not start with the usual fields is decoded in full and filtered afterwards.
    """
    if not data:
        raise CorruptMetadataError(path, "file is empty")
    try:
        readers = _value_readers()
        blocks = fastavro_module().block_reader(io.BytesIO(data))
        schema, branch = record_schema(blocks.writer_schema)
        fields = schema.get("fields", []) if schema is not None else []
        prefix = tuple((f.get("name"), f.get("type")) for f in fields[:5])
        file_type = fields[5].get("type") if len(fields) == 6 else None
        if (readers is None or prefix != _ENTRY_PREFIX or not isinstance(file_type, dict)
                or file_type.get("type") != "record" or fields[5].get("name") != "_FILE"):
            records = read_avro(data, path, "ManifestEntry", ("_KIND", "_FILE"))
            parts = [_partition_of(r, path) for r in records]
            kept = [(i, r) for i, (r, p) in enumerate(zip(records, parts, strict=True)) if keep_partition(p)]
            return kept, set(parts), len(records)
        read_long, read_bytes, read_record, skip_record = readers
        named = getattr(blocks, "_named_schemas", {})
        out: list[tuple[int, dict]] = []
        seen: set[bytes] = set()
        total = 0
        for block in blocks:
            stream = block.bytes_  # the decompressed block
            for i in range(total, total + block.num_records):
                if branch is not None and read_long(stream) != branch:  # the other branch: a null row
                    raise CorruptMetadataError(path, "holds a null ManifestEntry record")
                version = read_long(stream)
                kind = read_long(stream)
                partition = read_bytes(stream)
                bucket = read_long(stream)
                total_buckets = read_long(stream)
                seen.add(partition)
                if not keep_partition(partition):
                    skip_record(stream, file_type, named)
                    continue
                out.append((i, {"_VERSION": version, "_KIND": kind, "_PARTITION": partition, "_BUCKET": bucket,
                                "_TOTAL_BUCKETS": total_buckets, "_FILE": read_record(stream, file_type, named)}))
            total += block.num_records
    except CorruptMetadataError:
        raise
    except Exception as e:  # noqa: BLE001 - fastavro raises many kinds for garbage input
        raise CorruptMetadataError(path, f"not a readable Avro file ({type(e).__name__}: {e})") from e
    return out, seen, total


def _partition_of(record: dict, path: str) -> bytes:
    """The serialized partition of a decoded manifest entry record."""
    p = record.get("_PARTITION")
    if not isinstance(p, (bytes, bytearray, memoryview)):
        raise CorruptMetadataError(path, f"bad manifest entry (_PARTITION is {type(p).__name__})")
    return bytes(p)

"""Columnar decoding of Avro files (manifests on the planning hot path, and Avro data files),
with polars' Avro reader; :mod:`impl.manifest.columnar_entries` builds manifest entries from it.

fastavro builds one Python dict per record and converts every field on its own; for a manifest
of 100,000 entries that is most of a cold scan plan. polars decodes an Avro container in Rust
straight into Arrow columns, several times faster, and decodes only the columns asked for
(the others are skipped in Rust), so a partition-filtered plan can look at the partitions of
every entry for the cost of one column.

polars reads the null, deflate and snappy codecs only, and Paimon writes zstandard (and, on
request, bzip2 and xz): the blocks of every codec are decompressed here and handed to polars as
one block of a null-codec container of the same writer schema.

Everything here is an accelerator: :func:`available` is False without polars, and the callers
(``impl.manifest.manifest_file``) fall back to fastavro record by record whenever this module
raises, so a file polars cannot read, or a corrupt one, reads (or fails with
CorruptMetadataError) exactly as before.
"""

from __future__ import annotations

import bz2
import dataclasses
import functools
import io
import json
import lzma
import sys
import zlib
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from impl.format import avro, avro_encode

_polars: list[Any] = []  # [the polars module, or None when it is not installed], once imported


def polars_module() -> Any:
    """polars, imported on first use (importing it costs a few hundred ms, which every import of
    impl would otherwise pay), or None without it: manifests are then decoded with fastavro."""
    if not _polars:
        module: Any = None
        try:
            import polars as module
        except ImportError:  # pragma: no cover - polars is a declared dependency
            pass
        _polars.append(module)
    return _polars[0]

if sys.version_info >= (3, 14):
    from compression import zstd as _zstd
else:
    from backports import zstd as _zstd



def available() -> bool:
    """True when the columnar decoder can run (polars is importable)."""
    return polars_module() is not None


@dataclass(frozen=True)
class DecodedBlocks:
    """The blocks of one Avro container as stored (compressed with ``codec``) and its writer schema."""

    schema: Any  # the writer schema, as JSON (a dict for record files)
    codec: str
    bodies: tuple[bytes, ...]  # block bodies as stored
    counts: tuple[int, ...]  # records per block
    schema_json: bytes = b""  # the writer schema as stored in the header (a cache key)
    # the header's metadata map (the file's own keys besides codec and schema)
    metadata: Mapping[str, bytes] = dataclasses.field(default_factory=dict, compare=False, hash=False)

    @property
    def total(self) -> int:
        return sum(self.counts)

    def select(self, blocks: Iterable[int]) -> "DecodedBlocks":
        ids = list(blocks)
        return DecodedBlocks(self.schema, self.codec, tuple(self.bodies[i] for i in ids),
                             tuple(self.counts[i] for i in ids), self.schema_json, self.metadata)

    def decompressed(self) -> "DecodedBlocks":
        """The same blocks stored uncompressed (codec ``null``)."""
        if self.codec == "null":
            return self
        return DecodedBlocks(self.schema, "null", tuple(self.payload()), self.counts, self.schema_json, self.metadata)

    def payload(self) -> list[bytes]:
        """Every block decompressed, in order: together one valid block body (records do not
        straddle blocks), kept in pieces so that the container is joined in one copy."""
        if self.codec == "null":
            return list(self.bodies)
        if self.codec == "zstandard":
            # a decompressor per block (one frame each): the module's decompress() of several
            # frames copies the rest of its input after each frame, quadratic in the blocks
            new = _zstd.ZstdDecompressor
            return [new().decompress(b) for b in self.bodies]
        if self.codec == "deflate":
            return [zlib.decompress(b, -15) for b in self.bodies]
        if self.codec == "snappy":
            # Avro's snappy block: the raw snappy bytes, then the CRC32 of the uncompressed data
            # (big-endian), checked as Java's SnappyCodec does
            from cramjam import snappy

            out = [bytes(snappy.decompress_raw(b[:-4])) for b in self.bodies]
            if any(zlib.crc32(o) != int.from_bytes(b[-4:], "big") for o, b in zip(out, self.bodies, strict=True)):
                raise ValueError("snappy block checksum mismatch")
            return out
        if self.codec == "bzip2":
            return [bz2.decompress(b) for b in self.bodies]
        if self.codec == "xz":
            return [lzma.decompress(b) for b in self.bodies]
        raise ValueError(f"codec {self.codec!r}")


def decode_blocks(data: bytes) -> DecodedBlocks:
    """The header and blocks of an Avro container, undecompressed (ValueError / IndexError on a
    malformed or cut file)."""
    head = avro_encode.read_header(data)
    meta, sync, pos = head.metadata, head.sync_marker, head.end
    bodies: list[bytes] = []
    counts: list[int] = []
    while pos < len(data):
        n, pos = avro_encode.read_long(data, pos)
        size, pos = avro_encode.read_long(data, pos)
        if n < 0 or size < 0 or pos + size + 16 > len(data) or data[pos + size:pos + size + 16] != sync:
            raise ValueError("cut or malformed block")
        bodies.append(data[pos:pos + size])
        counts.append(n)
        pos += size + 16
    codec = meta.get("avro.codec", b"null").decode()
    return DecodedBlocks(json.loads(meta["avro.schema"]), codec, tuple(bodies), tuple(counts), meta["avro.schema"],
                         meta)


def null_codec_container(schema: Any, payload: list[bytes], count: int) -> bytes:
    """An uncompressed Avro container of one block: ``count`` records encoded in the
    concatenation of ``payload``; ``schema`` as JSON, or as its JSON text (bytes)."""
    sync = b"\x00" * 16  # any 16 bytes: the reader only compares them with the header's
    text = schema if isinstance(schema, bytes) else json.dumps(schema).encode()
    size = sum(len(p) for p in payload)
    return b"".join([avro_encode.header(text, "null", sync), avro_encode.varint(count), avro_encode.varint(size),
                     *payload, sync])


# A top-level union of null and a record (pypaimon-rust writes ``["null", record]``) is decoded
# as a record whose first field is this long: a union value is its branch index, an Avro long,
# then the branch's value, so the bytes of a record branch are exactly those of such a record.
# polars refuses a top-level union; a null row shows as the other index here, or makes polars fail.
_BRANCH = "__paimon_py_union_branch"


def _without_defaults(node: Any) -> Any:
    """A schema node with the ``default`` of every field dropped: polars' Avro reader refuses a
    field with a non-null default ("OutOfSpec"), and defaults play no part in decoding a file
    with its own writer schema."""
    if isinstance(node, list):
        return [_without_defaults(b) for b in node]
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if out.get("type") == "record":
        out["fields"] = [{k: _without_defaults(v) if k == "type" else v for k, v in f.items() if k != "default"}
                         for f in out.get("fields", [])]
    elif out.get("type") == "array":
        out["items"] = _without_defaults(out.get("items"))
    elif out.get("type") == "map":
        out["values"] = _without_defaults(out.get("values"))
    elif isinstance(out.get("type"), (dict, list)):
        out["type"] = _without_defaults(out["type"])
    return out


def unwrapped_schema(schema: Any) -> tuple[Any, int | None]:
    """(``schema`` as polars can decode it, the union branch every :data:`_BRANCH` value must
    equal): a top-level union of null and a record becomes the record led by a :data:`_BRANCH`
    long (see there), and field defaults are dropped (see :func:`_without_defaults`); the
    branch is None for a schema that is no such union."""
    record, branch = avro.record_schema(schema)
    if branch is None or record is None:
        return _without_defaults(schema), None
    wrapped = dict(record, fields=[{"name": _BRANCH, "type": "long"}, *record.get("fields", [])])
    return _without_defaults(wrapped), branch


@functools.lru_cache(maxsize=64)
def _polars_schema_of(schema_json: bytes) -> tuple[bytes, int | None]:
    """:func:`unwrapped_schema` of a stored writer schema, as JSON text (cached: the manifests
    of a table share a handful of writer schemas, and the conversion costs as much as a small
    manifest's decoding)."""
    schema, branch = unwrapped_schema(json.loads(schema_json))
    return json.dumps(schema).encode(), branch


def _polars_schema(decoded: DecodedBlocks) -> tuple[bytes, int | None]:
    if decoded.schema_json:
        return _polars_schema_of(decoded.schema_json)
    schema, branch = unwrapped_schema(decoded.schema)
    return json.dumps(schema).encode(), branch


def read_columns(decoded: DecodedBlocks, columns: list[str] | None = None, *, views: bool = True) -> pa.Table:
    """The records of ``decoded`` as an Arrow table (top-level ``columns`` only, if given);
    strings and binaries as views, or (``views`` False) as large strings and binaries, which
    narrow to plain ones without copying the bytes (data files: Arrow's take and join kernels
    refuse views).

    ``decoded.schema`` may be a top-level union of null and a record (ValueError on a null row)."""
    pl = polars_module()
    if pl is None:  # pragma: no cover - guarded by available()
        raise RuntimeError("polars is not installed")
    if not decoded.bodies:
        raise ValueError("no blocks")
    schema, branch = _polars_schema(decoded)
    if branch is not None and columns is not None:
        columns = [_BRANCH, *columns]
    container = null_codec_container(schema, decoded.payload(), decoded.total)
    # the newest compatibility level hands polars' string / binary views over as they are
    # (the default converts every string column to large_string: a copy of each)
    level = pl.CompatLevel.newest() if views else pl.CompatLevel.oldest()
    table = pl.read_avro(io.BytesIO(container), columns=columns).to_arrow(compat_level=level)
    if table.num_rows != decoded.total:
        raise ValueError(f"decoded {table.num_rows} records of {decoded.total}")
    if branch is not None:
        branches = table.column(_BRANCH)
        if branches.null_count or not pc.all(pc.equal(branches, branch)).as_py():
            raise ValueError("a null row in a file of a [null, record] union")
        table = table.drop_columns([_BRANCH])
    return table

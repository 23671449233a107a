"""The formats a table writes (``file.format``, ``file.compression``, their per-level overrides
and the ``orc.*`` / ``avro.*`` options), parsed and checked once per table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from impl.errors import InvalidOptionError
from impl.format.file_format import FileFormat, WriteOptions
from impl.format.formats import file_format
from impl.options.values import parse_compression, parse_file_format


def _per_level(key: str, value: str | None) -> dict[int, str]:
    """Paimon's ``<level>:<value>,...`` map options (``file.format.per.level``)."""
    out: dict[int, str] = {}
    if value is None or not str(value).strip():
        return out
    for part in str(value).split(","):
        level, sep, v = part.partition(":")
        if not sep or not level.strip().isdigit() or not v.strip():
            raise InvalidOptionError(f"option {key!r}: {part.strip()!r} is not <level>:<value>")
        out[int(level)] = v.strip().lower()
    if key == "file.format.per.level":
        for v in out.values():
            parse_file_format(key, v)
    return out


# Format options implemented (every other ``orc.*`` / ``avro.*`` key is refused by name).
ORC_OPTIONS = frozenset({
    "orc.stripe.size", "orc.row.index.stride", "orc.compress.size", "orc.dictionary.key.threshold",
    "orc.bloom.filter.columns", "orc.bloom.filter.fpp", "orc.write.batch-size", "orc.compress",
    "orc.timestamp-ltz.legacy.type", "orc.column.encoding.direct",
})
AVRO_OPTIONS = frozenset({"avro.codec", "avro.row-name-mapping"})


@dataclass(frozen=True)
class WriteFormats:
    """The formats a table writes: ``file.format`` and ``file.compression``, overridden per
    LSM level by ``file.format.per.level`` / ``file.compression.per.level`` (Paimon's
    ``CoreOptions.fileFormatPerLevel`` / ``fileCompressionPerLevel``), plus the format options."""

    default_format: str = "parquet"
    compression: str = "zstd"
    zstd_level: int | None = 1
    format_per_level: Mapping[int, str] = field(default_factory=dict)
    compression_per_level: Mapping[int, str] = field(default_factory=dict)
    format_options: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def from_options(options: Mapping[str, object]) -> "WriteFormats":
        """Parse and check the write-format options of a table (InvalidOptionError /
        UnsupportedFileFormatError naming the option)."""
        raw = {str(k): str(v) for k, v in options.items() if v is not None}
        default = parse_file_format("file.format", raw.get("file.format", "parquet"))
        compression = parse_compression("file.compression", raw.get("file.compression", "zstd"))
        level = raw.get("file.compression.zstd-level")
        per_format = _per_level("file.format.per.level", raw.get("file.format.per.level"))
        per_compression = {lv: parse_compression("file.compression.per.level", c)
                           for lv, c in _per_level("file.compression.per.level",
                                                   raw.get("file.compression.per.level")).items()}
        fmt_opts = {k: v for k, v in raw.items() if k.startswith(("orc.", "avro.", "parquet."))}
        for k in fmt_opts:
            if k.startswith("orc.") and k not in ORC_OPTIONS:
                raise InvalidOptionError(f"option {k!r} is not supported (ORC options implemented: "
                                         f"{', '.join(sorted(ORC_OPTIONS))})")
            if k.startswith("avro.") and k not in AVRO_OPTIONS:
                raise InvalidOptionError(f"option {k!r} is not supported (Avro options implemented: "
                                         f"{', '.join(sorted(AVRO_OPTIONS))})")
        out = WriteFormats(default, compression, int(level) if level is not None else 1, per_format,
                           per_compression, fmt_opts)
        for lv in {0, *per_format, *per_compression}:
            fmt, opts = out.for_level(lv)
            fmt.check_options(opts)
        return out

    def for_level(self, level: int, target_file_size: int | None = None) -> tuple[FileFormat, WriteOptions]:
        """The format and encoding of a file written at ``level`` (append files: level 0)."""
        fmt = file_format(self.format_per_level.get(level, self.default_format))
        return fmt, WriteOptions(self.compression_per_level.get(level, self.compression), self.zstd_level,
                                 self.format_options, target_file_size)



"""The formats a table writes (``file.format``, ``file.compression``, their per-level overrides
and the ``orc.*`` / ``avro.*`` options), parsed and checked once per table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from impl.errors import InvalidOptionError
from impl.format.file_format import FileFormat, OrcSettings, WriteOptions
from impl.format.formats import file_format
from impl.options import core_options as co
from impl.options.parsed import ParsedOptions

# Format options implemented (every other ``orc.*`` / ``avro.*`` key is refused by name).
ORC_OPTIONS = frozenset({o.key for o in co.CORE_OPTIONS if o.key.startswith("orc.")}) | co.ORC_ACCEPTED_KEYS
AVRO_OPTIONS = frozenset({co.AVRO_CODEC.key, "avro.row-name-mapping"})


def orc_settings(options: ParsedOptions) -> OrcSettings:
    """The ``orc.*`` options an ORC writer uses (InvalidOptionError naming a malformed one)."""
    return OrcSettings(
        stripe_size=options[co.ORC_STRIPE_SIZE], compress_size=options[co.ORC_COMPRESS_SIZE],
        row_index_stride=options[co.ORC_ROW_INDEX_STRIDE],
        dictionary_key_threshold=options[co.ORC_DICTIONARY_KEY_THRESHOLD],
        bloom_filter_columns=options[co.ORC_BLOOM_FILTER_COLUMNS], bloom_filter_fpp=options[co.ORC_BLOOM_FILTER_FPP],
        compress=options[co.ORC_COMPRESS])


@dataclass(frozen=True)
class WriteFormats:
    """The formats a table writes: ``file.format`` and ``file.compression``, overridden per
    LSM level by ``file.format.per.level`` / ``file.compression.per.level`` (Paimon's
    ``CoreOptions.fileFormatPerLevel`` / ``fileCompressionPerLevel``), plus the format options."""

    default_format: str = co.FILE_FORMAT.default
    compression: str = co.FILE_COMPRESSION.default
    zstd_level: int | None = co.FILE_COMPRESSION_ZSTD_LEVEL.default
    format_per_level: Mapping[int, str] = field(default_factory=dict)
    compression_per_level: Mapping[int, str] = field(default_factory=dict)
    format_options: Mapping[str, str] = field(default_factory=dict)
    # the orc.* options, parsed when some level writes ORC (a table writing none keeps its own)
    orc: OrcSettings | None = None

    @staticmethod
    def from_options(options: Mapping[str, object]) -> "WriteFormats":
        """Parse and check the write-format options of an option map (see :meth:`from_parsed`)."""
        return WriteFormats.from_parsed(ParsedOptions.of(options))

    @staticmethod
    def from_parsed(options: ParsedOptions) -> "WriteFormats":
        """The write formats of a table's parsed options, checked (InvalidOptionError /
        UnsupportedFileFormatError naming the option)."""
        default, compression = options[co.FILE_FORMAT], options[co.FILE_COMPRESSION]
        zstd_level = options[co.FILE_COMPRESSION_ZSTD_LEVEL]
        format_levels: Mapping[int, str] = options[co.FILE_FORMAT_PER_LEVEL]
        compression_levels: Mapping[int, str] = options[co.FILE_COMPRESSION_PER_LEVEL]
        per_format, per_compression = dict(format_levels), dict(compression_levels)
        fmt_opts = options.with_prefix("orc.", "avro.", "parquet.")
        for k in fmt_opts:
            if k.startswith("orc.") and k not in ORC_OPTIONS:
                raise InvalidOptionError(f"option {k!r} is not supported (ORC options implemented: "
                                         f"{', '.join(sorted(ORC_OPTIONS))})")
            if k.startswith("avro.") and k not in AVRO_OPTIONS:
                raise InvalidOptionError(f"option {k!r} is not supported (Avro options implemented: "
                                         f"{', '.join(sorted(AVRO_OPTIONS))})")
        orc = orc_settings(options) if "orc" in {default, *per_format.values()} else None
        out = WriteFormats(default, compression, zstd_level, per_format, per_compression, fmt_opts, orc)
        for lv in {0, *per_format, *per_compression}:
            fmt, opts = out.for_level(lv)
            fmt.check_options(opts)
        return out

    def for_level(self, level: int, target_file_size: int | None = None) -> tuple[FileFormat, WriteOptions]:
        """The format and encoding of a file written at ``level`` (append files: level 0)."""
        fmt = file_format(self.format_per_level.get(level, self.default_format))
        return fmt, WriteOptions(self.compression_per_level.get(level, self.compression), self.zstd_level,
                                 self.format_options, target_file_size, self.orc)



"""Parsers of Paimon option values, and the kinds that some options choose between.

Every parser takes the option's key (for the message) and its raw value, and returns the parsed
value or raises :class:`InvalidOptionError` naming both. Raw values are usually strings (schema
options are), but programmatic callers may pass ints or bools, which parse as themselves.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Callable, Mapping, TypeVar

from impl.errors import InvalidOptionError, UnsupportedFileFormatError
from impl.format.formats import file_format

E = TypeVar("E", bound=enum.Enum)

_SIZE_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1024, "kb": 1024, "kibibytes": 1024,
    "m": 1024**2, "mb": 1024**2, "mebibytes": 1024**2,
    "g": 1024**3, "gb": 1024**3, "gibibytes": 1024**3,
    "t": 1024**4, "tb": 1024**4,
}
_DURATION_UNITS_MS = {
    "": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_NUM_UNIT = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


# ---------------------------------------------------------------------------- kinds


class MergeEngine(enum.StrEnum):
    """``merge-engine``: how the rows of one primary key combine (Paimon's names)."""

    DEDUPLICATE = "deduplicate"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATION = "aggregation"
    FIRST_ROW = "first-row"


class ChangelogProducer(enum.StrEnum):
    """``changelog-producer``: which changelog files a primary-key table writes (Paimon's names)."""

    NONE = "none"
    INPUT = "input"
    FULL_COMPACTION = "full-compaction"
    LOOKUP = "lookup"


class StartupMode(enum.StrEnum):
    """``scan.mode``: where a read starts (Paimon's names; ``full`` is Paimon's deprecated
    name of ``latest-full``)."""

    DEFAULT = "default"
    LATEST_FULL = "latest-full"
    FULL = "full"
    LATEST = "latest"
    LATEST_DELTA = "latest-delta"
    COMPACTED_FULL = "compacted-full"
    FROM_TIMESTAMP = "from-timestamp"
    FROM_CREATION_TIMESTAMP = "from-creation-timestamp"
    FROM_FILE_CREATION_TIME = "from-file-creation-time"
    FROM_SNAPSHOT = "from-snapshot"
    FROM_SNAPSHOT_FULL = "from-snapshot-full"
    INCREMENTAL = "incremental"


class BucketFunctionType(enum.StrEnum):
    """``bucket-function.type``: how a row's bucket key picks its bucket (Paimon's names)."""

    DEFAULT = "default"  # BinaryRow hash of the bucket key
    MOD = "mod"  # floorMod of a single INT / BIGINT bucket key
    HIVE = "hive"  # Hive's bucketing hash (not implemented: refused)


class SortOrder(enum.StrEnum):
    """``sequence.field.sort-order``."""

    ASCENDING = "ascending"
    DESCENDING = "descending"


class StatsModeKind(enum.StrEnum):
    """The kind part of ``metadata.stats-mode``."""

    NONE = "none"  # no statistics
    COUNTS = "counts"  # null counts only
    FULL = "full"  # min, max and null count
    TRUNCATE = "truncate"  # full, with strings cut to a length


_STATS_MODE = re.compile(r"^(none|counts|full|truncate\((\d+)\))$")


@dataclass(frozen=True)
class StatsMode:
    """``metadata.stats-mode``: none, counts, full, or truncate(n) (strings cut to n characters)."""

    kind: StatsModeKind = StatsModeKind.TRUNCATE
    length: int = 16  # characters kept of string min/max values; only for truncate

    @staticmethod
    def parse(value: object) -> "StatsMode":
        return parse_stats_mode("metadata.stats-mode", value)


# ---------------------------------------------------------------------------- parsers


def parse_memory_size(key: str, value: object) -> int:
    """Bytes of a memory size such as ``8 mb`` (a bare number is bytes)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _NUM_UNIT.match(str(value))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _SIZE_UNITS:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not a memory size (e.g. '8 mb')")
    return int(m.group(1)) * _SIZE_UNITS[unit]


def parse_duration_millis(key: str, value: object) -> int:
    """Milliseconds of a duration such as ``10 s`` (a bare number is milliseconds)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _NUM_UNIT.match(str(value))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _DURATION_UNITS_MS:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not a duration (e.g. '10 s')")
    return int(m.group(1)) * _DURATION_UNITS_MS[unit]


def parse_int(key: str, value: object, *, minimum: int | None = None) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not an integer") from None
    if minimum is not None and n < minimum:
        raise InvalidOptionError(f"option {key!r}: {n} is below the minimum {minimum}")
    return n


def parse_float(key: str, value: object) -> float:
    try:
        return float(str(value).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not a number") from None


def parse_bool(key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    # Paimon Java's ConfigOption of type Boolean takes exactly "true" or "false" (any case); a
    # table holding "yes" or "1" would read as true here and fail to load there.
    text = str(value).strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise InvalidOptionError(f"option {key!r}: {value!r} is not a boolean (true or false)")


def parse_text(key: str, value: object) -> str:
    """The value as written (field names, partition names: case and spaces matter)."""
    return str(value)


def parse_optional_text(key: str, value: object) -> str | None:
    """The value as written, or None when it is empty (an empty field name means unset)."""
    return str(value) or None


def parse_file_prefix(key: str, value: object) -> str:
    """A file name prefix (``data-file.prefix``): no path separator, so files stay in their bucket directory."""
    text = str(value)
    if "/" in text or "\\" in text or "\0" in text:
        raise InvalidOptionError(f"option {key!r}: {text!r} holds a path separator or NUL; a file name prefix is a name")
    return text


def parse_relative_directory(key: str, value: object) -> str | None:
    """A directory under the table's (``data-file.path-directory``): relative, without empty,
    ``.`` or ``..`` components (nothing may land outside the table directory); empty means unset."""
    text = str(value)
    if not text:
        return None
    parts = text.split("/")
    if "\\" in text or "\0" in text or any(p in ("", ".", "..") for p in parts):
        raise InvalidOptionError(
            f"option {key!r}: {text!r} is not a relative directory of plain names (no leading '/', '.', '..' "
            "or empty components)")
    if parts[0] in _METADATA_DIRECTORIES:
        # data files among the table's metadata would be walked (and cleaned) as metadata
        raise InvalidOptionError(f"option {key!r}: {text!r} is inside the table's {parts[0]}/ metadata directory")
    return text


_METADATA_DIRECTORIES = frozenset({"schema", "snapshot", "manifest", "index", "tag", "branch", "statistics"})


def parse_lowercase(key: str, value: object) -> str:
    """Trimmed and lower-cased (function names, codec names: Paimon ignores their case)."""
    return str(value).strip().lower()


def parse_name_list(key: str, value: object) -> tuple[str, ...]:
    """A comma-separated list of at least one field name (spaces around names are dropped)."""
    names = split_names(value)
    if not names:
        raise InvalidOptionError(f"option {key!r}: {value!r} names no field")
    return names


def parse_names(key: str, value: object) -> tuple[str, ...]:
    """A comma-separated list of names, possibly empty (spaces around names and empty names are dropped)."""
    return split_names(value)


def split_names(value: object) -> tuple[str, ...]:
    return tuple(p.strip() for p in str(value).split(",") if p.strip())


def parse_bucket(key: str, value: object) -> int:
    """Paimon's bucket counts: ``>= 1`` (fixed), -1 (dynamic) or -2 (postpone)."""
    n = parse_int(key, value)
    if n == 0 or n < -2:
        raise InvalidOptionError(f"option {key!r}: {n} is not a valid bucket count (use >= 1, -1 or -2)")
    return n


# Paimon stores a dynamic bucket id in a Java short: ids 0..32767.
MAX_DYNAMIC_BUCKETS = 32768


def parse_max_buckets(key: str, value: object) -> int:
    """``dynamic-bucket.max-buckets``: -1 (unlimited) or 1..32768 (a bucket id is a Java short)."""
    n = parse_int(key, value)
    if n != -1 and not 1 <= n <= MAX_DYNAMIC_BUCKETS:
        raise InvalidOptionError(f"option {key!r}: {n} must be -1 (unlimited) or between 1 and {MAX_DYNAMIC_BUCKETS}")
    return n


def parse_incremental_between(key: str, value: object) -> tuple[int, int]:
    """``<start snapshot id>,<end snapshot id>`` with ``0 <= start <= end``."""
    parts = [p.strip() for p in str(value).split(",")]
    if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
        raise InvalidOptionError(f"option {key!r}: {value!r} is not '<start snapshot id>,<end snapshot id>'")
    start, end = int(parts[0]), int(parts[1])
    if start < 0 or end < start:
        raise InvalidOptionError(f"option {key!r}: need 0 <= start <= end, got {start},{end}")
    return start, end


def parse_stats_mode(key: str, value: object) -> StatsMode:
    m = _STATS_MODE.match(str(value).strip().lower())
    if not m:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not one of none, counts, full, truncate(<n>)")
    if m.group(2) is None:
        return StatsMode(StatsModeKind(m.group(1)), 0)
    length = int(m.group(2))
    if length < 1:
        raise InvalidOptionError(f"option {key!r}: truncate length must be >= 1, got {length}")
    return StatsMode(StatsModeKind.TRUNCATE, length)


# Paimon's file.compression names -> pyarrow's codec names.
COMPRESSION_CODECS: Mapping[str, str] = {
    "zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4", "brotli": "brotli",
    "none": "none", "uncompressed": "none",
}


def parse_compression(key: str, value: object) -> str:
    """A Paimon compression name, returned as the pyarrow codec that writes it."""
    name = str(value).strip().lower()
    if name not in COMPRESSION_CODECS:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not one of {', '.join(COMPRESSION_CODECS)}")
    return COMPRESSION_CODECS[name]


SPILL_CODECS = ("zstd", "lz4", "none")


def parse_spill_compression(key: str, value: object) -> str:
    """``spill-compression``: Paimon's names that Arrow IPC files can hold (lz4 is LZ4 frame)."""
    name = str(value).strip().lower()
    if name not in SPILL_CODECS:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not one of {', '.join(SPILL_CODECS)} "
                                 "(spill files are Arrow IPC, which has no lzo)")
    return name


def parse_file_format(key: str, value: object) -> str:
    """parquet, orc or avro (``impl.format.formats`` is the one list); Paimon's other
    formats are refused by name with the version that added them."""
    try:
        return file_format(str(value)).name
    except UnsupportedFileFormatError as e:
        raise InvalidOptionError(f"option {key!r}: {e}") from e


def _per_level(key: str, value: object) -> dict[int, str]:
    """Paimon's ``<level>:<value>,...`` map options (``file.format.per.level``), values lower-cased."""
    out: dict[int, str] = {}
    if value is None or not str(value).strip():
        return out
    for part in str(value).split(","):
        level, sep, v = part.partition(":")
        if not sep or not level.strip().isdigit() or not v.strip():
            raise InvalidOptionError(f"option {key!r}: {part.strip()!r} is not <level>:<value>")
        out[int(level)] = v.strip().lower()
    return out


def parse_format_per_level(key: str, value: object) -> Mapping[int, str]:
    """``file.format.per.level``: level -> format, each parquet, orc or avro (as written, lower-cased)."""
    out = _per_level(key, value)
    for v in out.values():
        parse_file_format(key, v)
    return out


def parse_compression_per_level(key: str, value: object) -> Mapping[int, str]:
    """``file.compression.per.level``: level -> the pyarrow codec of its compression."""
    return {level: parse_compression(key, c) for level, c in _per_level(key, value).items()}


# ---------------------------------------------------------------------------- parser builders


def at_least(minimum: int, parse: Callable[[str, object], int] = parse_int) -> Callable[[str, object], int]:
    """``parse``, then refuse a result below ``minimum``."""
    def parse_bounded(key: str, value: object) -> int:
        n = parse(key, value)
        if n < minimum:
            raise InvalidOptionError(f"option {key!r}: {n} is below the minimum {minimum}")
        return n
    return parse_bounded


def one_of(kind: type[E]) -> Callable[[str, object], E]:
    """Parser of an enum option: its values are the accepted names, in any case."""
    by_name = {str(member.value): member for member in kind}

    def parse_choice(key: str, value: object) -> E:
        member = by_name.get(str(value).strip().lower())
        if member is None:
            raise InvalidOptionError(f"option {key!r}: {value!r} is not one of {', '.join(by_name)}")
        return member
    return parse_choice

"""Parsing of Paimon option values (memory sizes, durations, booleans, integers).

Wrong values raise :class:`InvalidOptionError` naming the option and the value.
"""

from __future__ import annotations

import re
from typing import Mapping

from impl.errors import InvalidOptionError

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


def parse_memory_size(key: str, value: str | int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _NUM_UNIT.match(str(value))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _SIZE_UNITS:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not a memory size (e.g. '8 mb')")
    return int(m.group(1)) * _SIZE_UNITS[unit]


def parse_duration_millis(key: str, value: str | int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _NUM_UNIT.match(str(value))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _DURATION_UNITS_MS:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not a duration (e.g. '10 s')")
    return int(m.group(1)) * _DURATION_UNITS_MS[unit]


def parse_int(key: str, value: str | int, *, minimum: int | None = None) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not an integer") from None
    if minimum is not None and n < minimum:
        raise InvalidOptionError(f"option {key!r}: {n} is below the minimum {minimum}")
    return n


def parse_bool(key: str, value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise InvalidOptionError(f"option {key!r}: {value!r} is not a boolean")


def get(options: Mapping[str, str], key: str, default, parser, **kw):
    if key not in options or options[key] is None:
        return default
    return parser(key, options[key], **kw)

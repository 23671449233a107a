"""Partition directory names exactly as Paimon Java spells them: small pure functions.

A data file of partition ``(v1, v2)`` lives under ``k1=<t1>/k2=<t2>/bucket-<n>/``, where
``<ti>`` is the value's text, escaped (Paimon's ``InternalRowPartitionComputer`` and
``PartitionPathUtils.generatePartitionPath``). The text depends on ``partition.legacy-name``:

- true (Paimon's default): ``toString`` of Paimon's *internal* object: a DATE is its epoch day
  number (``19724``), a TIME its millisecond of day, a TIMESTAMP Paimon's ``Timestamp.toString``
  (a ``LocalDateTime``: ``2024-01-02T10:00``, seconds and fraction only when non-zero), a
  DECIMAL ``toPlainString``, a FLOAT / DOUBLE Java's ``Float`` / ``Double.toString``. A binary
  value's ``toString`` is ``byte[]``'s object hash (``[B@1f2e3d``), which no reader can
  reproduce: refused.
- false: a CAST to STRING: a DATE ``2024-01-02``, a TIME ``10:00:00`` (with the fraction the
  precision allows), a TIMESTAMP ``2024-01-02 10:00:00.000`` (the 9-digit fraction loses trailing
  zeros only down to the precision), a binary value its UTF-8 text. TIMESTAMP WITH LOCAL TIME
  ZONE is cast in the writer's JVM time zone, unknown here: refused.

A null value, and a text that is empty or Java whitespace only, is ``partition.default-name``.
Names and texts are then percent-escaped as Hive does (``escape_path_name``).

The values are the ones :func:`impl.data.binary_row.decode_row` gives (TIMESTAMP values may be
its exact ``(millis, nanos)`` pairs, which a datetime cannot hold beyond microseconds).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from dataclasses import dataclass
from typing import Any, Sequence

from impl.data.binary_row import date_to_days, decode_row, timestamp_to_millis_nanos
from impl.data.java_text import java_double
from impl.data.types import DataType
from impl.errors import UnsupportedPartitionValueError

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"

# Characters Paimon (like Hive's FileUtils) percent-escapes in partition directory names:
# the control characters, then these (PartitionPathUtils.CHAR_TO_ESCAPE).
_ESCAPED = frozenset('"#%\'*/:=?\\\x7f{}[]^')

# Java's Character.isWhitespace: the Unicode space separators except the no-break ones, the
# line and paragraph separators, and these ASCII controls.
_JAVA_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000")

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_MILLIS_PER_DAY = 86_400_000
_EPOCH_DATE = _dt.date(1970, 1, 1)


def escape_path_name(text: str) -> str:
    """``PartitionPathUtils.escapePathName``: ``%XX`` (upper-case hex) for each escaped character."""
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED or ord(ch) < 0x20 else ch for ch in text)


def is_java_blank(text: str) -> bool:
    """``StringUtils.isNullOrWhitespaceOnly``: empty, or Java whitespace only."""
    return all(ch in _JAVA_WHITESPACE for ch in text)


def _date(days: int, what: str) -> _dt.date:
    try:
        return _EPOCH_DATE + _dt.timedelta(days=days)
    except OverflowError:
        raise UnsupportedPartitionValueError(f"{what} partition value of epoch day {days} is outside years 1-9999") \
            from None


def _ymd(d: _dt.date) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def _time_parts(nano_of_day: int) -> tuple[int, int, int, int]:
    seconds, nano = divmod(nano_of_day, 1_000_000_000)
    return seconds // 3600, seconds // 60 % 60, seconds % 60, nano


def _timestamp_parts(value: Any) -> tuple[_dt.date, int]:
    """(date, nano of day) of a TIMESTAMP value (a datetime or ``(millis, nano of milli)``)."""
    millis, nanos = value if isinstance(value, tuple) else timestamp_to_millis_nanos(value)
    days, millis_of_day = divmod(millis, _MILLIS_PER_DAY)  # floor, as Timestamp.toLocalDateTime
    return _date(days, "TIMESTAMP"), millis_of_day * 1_000_000 + nanos


def local_date_time_text(value: Any) -> str:
    """Paimon's ``Timestamp.toString`` (``LocalDateTime.toString``): ``2024-01-02T10:00``,
    ``:ss`` when seconds or fraction are non-zero, the fraction in groups of 3 digits."""
    d, nano_of_day = _timestamp_parts(value)
    h, m, s, nano = _time_parts(nano_of_day)
    text = f"{_ymd(d)}T{h:02d}:{m:02d}"
    if s or nano:
        text += f":{s:02d}"
        if nano % 1_000_000 == 0 and nano:
            text += f".{nano // 1_000_000:03d}"
        elif nano % 1000 == 0 and nano:
            text += f".{nano // 1000:06d}"
        elif nano:
            text += f".{nano:09d}"
    return text


def timestamp_cast_text(value: Any, precision: int) -> str:
    """``DateTimeUtils.formatTimestamp``: ``2024-01-02 10:00:00.000`` (TIMESTAMP(3)); the 9-digit
    fraction loses trailing zeros only down to ``precision`` digits."""
    d, nano_of_day = _timestamp_parts(value)
    h, m, s, nano = _time_parts(nano_of_day)
    fraction = f"{nano:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    text = f"{_ymd(d)} {h:02d}:{m:02d}:{s:02d}"
    return f"{text}.{fraction}" if fraction else text


def time_cast_text(millis_of_day: int, precision: int) -> str:
    """``DateTimeUtils.formatTimestampMillis`` of a TIME: ``10:00:00``, and with a precision a
    fraction of at least one digit, cut where the rest is zero (``10:00:00.5``)."""
    time = millis_of_day % _MILLIS_PER_DAY  # Java adds days to a negative time
    h, rest = divmod(time, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    text = f"{h:02d}:{m:02d}:{s:02d}"
    if precision > 0:
        digits = []
        while precision > 0:
            digits.append(str(ms // 100))
            ms = ms % 100 * 10
            if ms == 0:
                break
            precision -= 1
        text += "." + "".join(digits)
    return text


def _float_text(value: float, t: DataType) -> str:
    """``Float`` / ``Double.toString``, where every JDK spells it alike.

    JDKs before 19 print some values with more digits than the shortest (JDK-4511638: JDK 17
    names FLOAT 123456792 ``1.23456792E8``, JDK 19 ``1.2345679E8``), and the table does not
    record the writer's JDK. Integers below 1e7 and plain spellings (``1e-3 <= |v| < 1e7``) of at
    most 6 significant digits are the same on every JDK (the old algorithm's excess digits need
    more; Hypothesis checks this against JDK 17); other values are refused rather than guessed."""
    text = java_double(value, single=t.root == "FLOAT")
    if not math.isfinite(value) or (value.is_integer() and abs(value) < 1e7):
        return text  # integral values: the old algorithm's exact-integer path
    digits = text.lstrip("-").replace(".", "").lstrip("0").removesuffix("0") if "E" not in text else None
    if digits is None or len(digits.rstrip("0")) > 6:
        raise UnsupportedPartitionValueError(
            f"a {t} partition value {text}: Paimon Java's directory name of it depends on the writer's JDK "
            "(Double.toString changed in JDK 19); only plain values of up to 6 significant digits are named")
    return text


def partition_value_text(value: Any, t: DataType, legacy: bool) -> str | None:
    """The text of one partition value before escaping, None for a null value (see the module
    docstring for the rules). UnsupportedPartitionValueError for a value Java names in a way
    nobody can reproduce, or of a type Paimon does not partition by."""
    if value is None:
        return None
    r = t.root
    if r == "BOOLEAN":
        return "true" if value else "false"
    if r in _INTEGERS:
        return str(int(value))
    if r in ("FLOAT", "DOUBLE"):
        return _float_text(float(value), t)
    if r == "DECIMAL":
        return format(decimal.Decimal(value), "f")  # Decimal.toString: BigDecimal.toPlainString
    if r in ("CHAR", "VARCHAR"):
        return str(value)
    if r in ("BINARY", "VARBINARY"):
        if legacy:
            raise UnsupportedPartitionValueError(
                f"a {t} partition value with partition.legacy-name = true: Paimon Java names its directory by "
                "byte[].toString, an object hash no reader can reproduce (set partition.legacy-name = false)")
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise UnsupportedPartitionValueError(
                f"a {t} partition value that is not UTF-8: Paimon Java names its directory with replacement "
                "characters, which this library does not reproduce") from None
    if r == "DATE":
        days = date_to_days(value)
        return str(days) if legacy else _ymd(_date(days, "DATE"))
    if r == "TIME":
        return str(int(value)) if legacy else time_cast_text(int(value), t.precision or 0)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if legacy:
            return local_date_time_text(value)
        if r == "TIMESTAMP_LTZ":
            raise UnsupportedPartitionValueError(
                f"a {t} partition value with partition.legacy-name = false: Paimon Java names its directory in "
                "the writing JVM's time zone, which the table does not record")
        return timestamp_cast_text(value, t.precision if t.precision is not None else 6)
    raise UnsupportedPartitionValueError(f"a partition value of type {t}: Paimon partitions by primitive types only")


@dataclass(frozen=True)
class PartitionNaming:
    """How one table names its partition directories: the partition columns and their types,
    ``partition.default-name`` and ``partition.legacy-name``."""

    names: tuple[str, ...]
    types: tuple[DataType, ...]
    default_name: str = DEFAULT_PARTITION_NAME
    legacy: bool = True

    @property
    def _exact(self) -> bool:
        # a datetime keeps microseconds: precisions 7-9 need the decoded (millis, nanos)
        return any(t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) > 6 for t in self.types)

    def path(self, values: Sequence[Any]) -> str:
        """``k1=v1/k2=v2`` (no trailing separator; empty for an unpartitioned table)."""
        parts = []
        for name, value, t in zip(self.names, values, self.types, strict=True):
            text = partition_value_text(value, t, self.legacy)
            if text is None or is_java_blank(text):
                text = self.default_name
            parts.append(f"{escape_path_name(name)}={escape_path_name(text)}")
        return "/".join(parts)

    def path_of_row(self, partition: bytes, where: str = "<manifest>") -> str:
        """:meth:`path` of a serialized partition BinaryRow (TIMESTAMPs decoded to the nanosecond)."""
        if not self.names:
            return ""
        return self.path(decode_row(partition, self.types, path=where, exact_timestamps=self._exact))


__all__ = ["DEFAULT_PARTITION_NAME", "PartitionNaming", "escape_path_name", "is_java_blank", "local_date_time_text",
           "partition_value_text", "time_cast_text", "timestamp_cast_text"]

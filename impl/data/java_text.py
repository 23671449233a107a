"""Java's ``toString`` of numbers, shared by every place that must spell a value as Paimon Java
does (system tables, partition directory names): small pure functions."""

from __future__ import annotations

import decimal
import math
import struct


def java_double(v: float, single: bool = False) -> str:
    """``Double.toString`` / ``Float.toString``: ``1.0``, ``1.5E10``, ``1.0E-5``, ``NaN``, ``Infinity``.

    The digits are the shortest that round-trip, as JDK 19+ prints them; older JDKs print a
    longer form for a few values (JDK-4511638, e.g. ``4.9E-324``)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    # shortest round-trip digits, as Java prints them (float32 has its own shortest form)
    text = repr(float(_as_float32(v))) if single else repr(float(v))
    exp = text.partition("e")[2]
    a = abs(v)
    if 1e-3 <= a < 1e7:
        if exp:  # repr chose an exponent where Java does not
            text = format(decimal.Decimal(text), "f")
        return text if ("." in text) else text + ".0"
    # scientific: d.dddE[-]x
    digits = decimal.Decimal(text).normalize()
    sign, ds, e = digits.as_tuple()
    assert isinstance(e, int)
    head = str(ds[0])
    tail = "".join(str(d) for d in ds[1:]) or "0"
    exponent = e + len(ds) - 1
    return f"{'-' if sign else ''}{head}.{tail}E{exponent}"


def _as_float32(v: float) -> float:
    f32 = struct.unpack("f", struct.pack("f", v))[0]
    # the shortest decimal that round-trips through float32
    for digits in range(1, 18):
        candidate = float(f"{f32:.{digits}g}")
        if struct.unpack("f", struct.pack("f", candidate))[0] == f32:
            return candidate
    return f32


__all__ = ["java_double"]

"""Paimon's bucket of every row as Spark column expressions (evaluated in the JVM, no Python UDF).

:func:`impl.spark.routing.write_dataframe` must put every row in the task of its Paimon bucket.
Computing that bucket in a Python UDF sends the bucket-key columns of every row to a Python
worker and the bucket back (a whole extra JVM -> Arrow -> Python -> JVM pass before the
shuffle). When every bucket-key field is fixed-width and lives in its BinaryRow slot as an
integer (BOOLEAN, TINYINT, SMALLINT, INT, DATE, BIGINT), the hash is a fixed sequence of 32-bit
words, so it can be computed with Spark's own arithmetic instead:

- the BinaryRow of the bucket key is its header (row-kind byte 0, then one null bit per field,
  bit ``8 + i``) followed by one 8-byte little-endian slot per field (the value, zero-extended
  from its width; 0 for a null), read as 32-bit words: exactly the bytes
  :func:`impl.table.bucket.binary_row_parts` builds;
- the hash is MurmurHash3_x86_32, seed 42, over those words (``hashBytesByWords``), then
  ``fmix(h ^ length)``; the bucket ``abs(hash % buckets)`` on the signed 32-bit hash.

Spark 4 runs in ANSI mode (integer overflow is an error), so all 32-bit arithmetic is done on
non-negative ``long`` values below 2**49: a 32 x 32-bit product modulo 2**32 is split into two
16 x 32-bit products. Each step is its own projection of temporary columns: an expression that
uses a value twice (rotations, the split products) would otherwise repeat the whole subtree and
grow exponentially with the number of words; Spark keeps such projections apart
(``CollapseProject`` does not inline a non-trivial expression referenced twice) and whole-stage
codegen fuses them into one loop.

Types outside the list (strings, floating point, decimals, timestamps), keys of more than 16
fields and type-changing keys (a Spark column whose type is not the table field's) are not
supported (:func:`supports` is False): the caller keeps the Arrow UDF.
"""

from __future__ import annotations

from typing import Sequence

from impl.format.binary_row import null_bits_size_in_bytes
from impl.format.types import DataType
from impl.spark.tables import SparkConnectorError

_M32 = 0xFFFFFFFF
_SEED = 42
# keys of up to 16 fields: the header (row kind byte, null bits 8 + i) is one 8-byte word whose
# upper half is zero (longer keys, rare, keep the Arrow UDF)
_MAX_FIELDS = 16
assert null_bits_size_in_bytes(_MAX_FIELDS) == 8

# Paimon type root -> (Spark SQL type name of a column holding it unchanged, slot width in bytes)
_FIXED_INTEGER_TYPES = {"BOOLEAN": ("boolean", 1), "TINYINT": ("tinyint", 1), "SMALLINT": ("smallint", 2),
                        "INT": ("int", 4), "DATE": ("date", 4), "BIGINT": ("bigint", 8)}


def supports(types: Sequence[DataType], spark_types: Sequence) -> bool:
    """True when :func:`with_jvm_bucket` can compute the buckets of a key of these types (table
    field types, and the Spark types of the DataFrame columns holding them)."""
    if not 0 < len(types) <= _MAX_FIELDS:
        return False
    for t, st in zip(types, spark_types, strict=True):
        entry = _FIXED_INTEGER_TYPES.get(t.root)
        if entry is None or st.simpleString() != entry[0]:
            return False
    return True


def _lit(v: int):
    from pyspark.sql import functions as F

    return F.lit(v).cast("bigint")


# The helpers below take column references (or small expressions): each uses its argument twice,
# which is harmless for a reference and doubles a subtree otherwise.


def _mul32(a, c: int):
    """``a * c mod 2**32`` for 0 <= a < 2**32 and a constant c, without overflowing a long."""
    from pyspark.sql import functions as F

    hi = F.shiftright(a, 16) * _lit(c)
    lo = a.bitwiseAND(_lit(0xFFFF)) * _lit(c)
    return (F.shiftleft(hi.bitwiseAND(_lit(0xFFFF)), 16) + lo).bitwiseAND(_lit(_M32))


def _rotl(x, r: int):
    from pyspark.sql import functions as F

    return F.shiftleft(x, r).bitwiseAND(_lit(_M32)).bitwiseOR(F.shiftright(x, 32 - r))


def _xorshift(x, r: int):
    from pyspark.sql import functions as F

    return x.bitwiseXOR(F.shiftright(x, r))


def _slot_words(col, root: str):
    """The two 32-bit words (low, high) of a field's 8-byte slot, as non-negative longs; 0 for null."""
    from pyspark.sql import functions as F

    if root == "BOOLEAN":
        v = F.when(col, _lit(1)).otherwise(_lit(0))
    elif root == "DATE":
        v = F.unix_date(col).cast("bigint")
    else:
        v = col.cast("bigint")
    v = F.coalesce(v, _lit(0))
    width = _FIXED_INTEGER_TYPES[root][1]
    if width < 8:  # the value's own bytes only (two's complement of its width), upper bytes zero
        return v.bitwiseAND(_lit((1 << (8 * width)) - 1)), _lit(0)
    return v.bitwiseAND(_lit(_M32)), F.shiftrightunsigned(v, 32)


def with_jvm_bucket(df, columns: Sequence[str], types: Sequence[DataType], num_buckets: int, name: str):
    """``df`` plus an int column ``name``: Paimon's bucket of the key in ``columns`` (table types
    ``types``), computed by Spark expressions. Only for keys :func:`supports` accepts."""
    from pyspark.sql import functions as F

    spark_types = [df.schema[c].dataType for c in columns]
    if not supports(types, spark_types):
        raise SparkConnectorError(f"bucket key types {[t.root for t in types]} (Spark columns "
                                  f"{[t.simpleString() for t in spark_types]}) are not computed in the JVM; "
                                  f"check supports() first and use the Arrow UDF otherwise")
    tmp = f"{name}__t"
    names: list[str] = []

    def project(exprs: list) -> list:
        """One projection adding ``exprs`` as temporary columns; their references."""
        nonlocal df
        new = {f"{tmp}{len(names) + i}": e for i, e in enumerate(exprs)}
        names.extend(new)
        df = df.withColumns(new)
        return [F.col(n) for n in new]

    header = _lit(0)
    for i, c in enumerate(columns):
        header = header.bitwiseOR(F.when(F.col(c).isNull(), _lit(1 << (8 + i))).otherwise(_lit(0)))
    words = [header, _lit(0)]
    for c, t in zip(columns, types, strict=True):
        words += list(_slot_words(F.col(c), t.root))
    # mixK1 of every word (independent of each other), then the mixH1 chain, one word a projection
    ws = project(words)
    ks = project([_rotl(_mul32(w, 0xCC9E2D51), 15) for w in ws])
    ks = project([_mul32(k, 0x1B873593) for k in ks])
    h = _lit(_SEED)
    for k in ks:
        (h,) = project([(_rotl(h.bitwiseXOR(k), 13) * _lit(5) + _lit(0xE6546B64)).bitwiseAND(_lit(_M32))])
    (h,) = project([_mul32(_xorshift(h.bitwiseXOR(_lit(4 * len(words))), 16), 0x85EBCA6B)])
    (h,) = project([_mul32(_xorshift(h, 13), 0xC2B2AE35)])
    (h,) = project([_xorshift(h, 16)])
    signed = F.when(h >= _lit(1 << 31), h - _lit(1 << 32)).otherwise(h)
    return df.withColumn(name, F.abs(signed % _lit(num_buckets)).cast("int")).drop(*names)


__all__ = ["supports", "with_jvm_bucket"]

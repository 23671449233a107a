"""Schema mapping between Paimon tables and Spark.

Paimon -> Spark (what ``spark.read.format("paimon_py")`` returns; NOT NULL columns are
non-nullable Spark fields):

=======================  ==========================
Paimon                   Spark
=======================  ==========================
BOOLEAN                  BooleanType
TINYINT / SMALLINT       ByteType / ShortType
INT / BIGINT             IntegerType / LongType
FLOAT / DOUBLE           FloatType / DoubleType
DECIMAL(p, s)            DecimalType(p, s)
CHAR / VARCHAR / STRING  StringType
BINARY / VARBINARY       BinaryType
DATE                     DateType
TIMESTAMP(p)             TimestampNTZType (microseconds)
TIMESTAMP_LTZ(p)         TimestampType (microseconds, UTC)
ARRAY / MAP / ROW        ArrayType / MapType / StructType
=======================  ==========================

Spark -> Paimon (a table created by ``df.write.format("paimon_py")``) goes through Spark's own
Arrow schema of the DataFrame and :func:`impl.data.types.from_arrow`.

Arrow batches handed to Spark must match ``to_arrow_schema(spark_schema)`` exactly (types and
nullability): :func:`conform_to_spark` casts them.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from impl.errors import SchemaMismatchError


def spark_type(t):
    """The Spark DataType of a Paimon :class:`impl.data.types.DataType`."""
    from pyspark.sql import types as st

    r = t.root
    simple = {
        "BOOLEAN": st.BooleanType, "TINYINT": st.ByteType, "SMALLINT": st.ShortType, "INT": st.IntegerType,
        "BIGINT": st.LongType, "FLOAT": st.FloatType, "DOUBLE": st.DoubleType, "VARCHAR": st.StringType,
        "CHAR": st.StringType, "VARBINARY": st.BinaryType, "BINARY": st.BinaryType, "DATE": st.DateType,
        "TIMESTAMP": st.TimestampNTZType, "TIMESTAMP_LTZ": st.TimestampType,
    }
    if r in simple:
        return simple[r]()
    if r == "DECIMAL":
        return st.DecimalType(t.precision, t.scale)
    if r == "ARRAY":
        elem = t.children[0]
        return st.ArrayType(spark_type(elem), containsNull=elem.nullable)
    if r == "MAP":
        k, v = t.children
        return st.MapType(spark_type(k), spark_type(v), valueContainsNull=v.nullable)
    if r == "ROW":
        return st.StructType([st.StructField(f.name, spark_type(f.type), nullable=f.type.nullable)
                              for f in t.children])
    raise SchemaMismatchError(f"Paimon type {t} has no Spark equivalent in this connector")


def spark_schema(table_schema):
    """Spark StructType of a table's columns (``impl.schema.records.TableSchema``)."""
    from pyspark.sql import types as st

    return st.StructType([st.StructField(f.name, spark_type(f.type), nullable=f.type.nullable)
                          for f in table_schema.fields])


def spark_arrow_schema(schema) -> pa.Schema:
    """The Arrow schema Spark expects from a Python data source returning ``schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def arrow_schema_for_create(schema) -> pa.Schema:
    """The pyarrow schema of a new table made from a DataFrame's Spark schema."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _strip_nullability(t):
    """A Spark type with every nested nullability flag set to True (for comparisons)."""
    from pyspark.sql import types as st

    if isinstance(t, st.ArrayType):
        return st.ArrayType(_strip_nullability(t.elementType), True)
    if isinstance(t, st.MapType):
        return st.MapType(_strip_nullability(t.keyType), _strip_nullability(t.valueType), True)
    if isinstance(t, st.StructType):
        return st.StructType([st.StructField(f.name, _strip_nullability(f.dataType), True) for f in t.fields])
    if isinstance(t, st.CharType) or isinstance(t, st.VarcharType):
        return st.StringType()
    return t


def check_write_schema(df_schema, table_schema, table_name: str) -> list[str]:
    """Check a DataFrame schema against the table.

    Returns, for each table column in table order, the DataFrame column that feeds it (names
    match case-insensitively, as in Spark SQL; order may differ). Nullability may differ: a
    nullable DataFrame column can feed a NOT NULL table column, the rows are checked when
    written. Raises SchemaMismatchError listing every difference (missing / unknown columns,
    different types)."""
    target = spark_schema(table_schema)
    by_lower: dict[str, list[Any]] = {}
    for f in df_schema.fields:
        by_lower.setdefault(f.name.lower(), []).append(f)
    problems = []
    dup = sorted(k for k, v in by_lower.items() if len(v) > 1)
    if dup:
        problems.append(f"columns {dup} appear more than once")
    table_lower = {f.name.lower() for f in target.fields}
    missing = [f.name for f in target.fields if f.name.lower() not in by_lower]
    extra = [f.name for f in df_schema.fields if f.name.lower() not in table_lower]
    if missing:
        problems.append(f"missing columns {missing}")
    if extra:
        problems.append(f"unknown columns {extra}")
    mapping = []
    for f in target.fields:
        src = by_lower.get(f.name.lower())
        if not src:
            continue
        s = src[0]
        if _strip_nullability(s.dataType) != _strip_nullability(f.dataType):
            problems.append(f"column {f.name!r} is {s.dataType.simpleString()} in the DataFrame, "
                            f"the table has {f.dataType.simpleString()}")
        mapping.append(s.name)
    if problems:
        raise SchemaMismatchError(
            f"DataFrame does not match table {table_name}: {'; '.join(problems)}. "
            f"Table schema: {target.simpleString()}; DataFrame schema: {df_schema.simpleString()}")
    return mapping


def check_read_schema(requested, table_schema, table_name: str) -> None:
    """A user-specified read schema must equal the table's (names, order, types)."""
    actual = spark_schema(table_schema)
    if [(f.name, _strip_nullability(f.dataType)) for f in requested.fields] != \
            [(f.name, _strip_nullability(f.dataType)) for f in actual.fields]:
        raise SchemaMismatchError(
            f"read schema {requested.simpleString()} does not match table {table_name} "
            f"({actual.simpleString()}); omit .schema(...) to use the table's")


def conform_to_spark(t: pa.Table | pa.RecordBatch, target: pa.Schema) -> pa.Table:
    """Cast ``t`` (columns by name) to exactly ``target``: types, and the nullability flags
    Spark checks. Raises SchemaMismatchError when a non-nullable column holds nulls."""
    if isinstance(t, pa.RecordBatch):
        t = pa.Table.from_batches([t])
    cols = []
    for f in target:
        col = t.column(f.name)
        if not col.type.equals(f.type):
            col = col.cast(f.type, safe=False) if pa.types.is_timestamp(f.type) else col.cast(f.type)
        if not f.nullable and col.null_count:
            raise SchemaMismatchError(f"column {f.name!r} is NOT NULL but read {col.null_count} null value(s)")
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=target)


__all__ = ["spark_type", "spark_schema", "spark_arrow_schema", "arrow_schema_for_create",
           "check_write_schema", "check_read_schema", "conform_to_spark"]

"""Spark's pushed filters (``pyspark.sql.datasource.Filter``) as impl predicates.

Only what can be expressed exactly is translated; anything else (nested columns, floating point
columns (NaN orders differently in Spark and Arrow), ``Not`` of something other than equality /
IN, LIKE '%x' / '%x%', literals that do not fit the column type) is left out, which only costs pruning: the reader reports every filter back to Spark as
not handled, so Spark always evaluates all of them on the rows.

SQL semantics carry over: a comparison with NULL is never true, ``Not(EqualTo(a, v))`` keeps
neither nulls nor v, ``EqualNullSafe(a, None)`` is ``a IS NULL``.
"""

from __future__ import annotations

from typing import Sequence

from impl.errors import PaimonError
from impl.predicate.predicate import Predicate, PredicateBuilder, and_all

# Spark orders NaN above every number and NaN = NaN is true; Arrow comparisons with NaN are
# false. Filters on floating point columns are left to Spark, and so are nested columns.
NOT_PUSHED_ROOTS = {"FLOAT", "DOUBLE", "ARRAY", "MAP", "ROW"}


def _column(attribute, names_by_lower: dict[str, str]) -> str | None:
    if len(attribute) != 1:
        return None  # nested field
    return names_by_lower.get(str(attribute[0]).lower())


def _literal_fits(root: str, value) -> bool:
    """Timestamp literals must carry a zone exactly when the column is TIMESTAMP_LTZ."""
    import datetime as _dt

    values = value if isinstance(value, (list, tuple)) else [value]
    for v in values:
        if isinstance(v, _dt.datetime):
            if root == "TIMESTAMP_LTZ" and v.tzinfo is None:
                return False
            if root == "TIMESTAMP" and v.tzinfo is not None:
                return False
    return True


def translate_filter(f, builder: PredicateBuilder, names_by_lower: dict[str, str],
                     roots: dict[str, str] | None = None) -> Predicate | None:
    """One Spark filter as a Predicate, or None when it has no exact translation."""
    from pyspark.sql import datasource as ds

    if roots is not None:
        inner = f.child if isinstance(f, ds.Not) else f
        col = _column(getattr(inner, "attribute", ()), names_by_lower)
        if col is None or roots.get(col) in NOT_PUSHED_ROOTS:
            return None
        if not _literal_fits(roots.get(col, ""), getattr(inner, "value", None)):
            return None
    try:
        if isinstance(f, ds.Not):
            child = f.child
            if isinstance(child, ds.EqualTo):
                col = _column(child.attribute, names_by_lower)
                if col is None or child.value is None:
                    return None
                return builder.not_equal(col, child.value)
            if isinstance(child, ds.In):
                col = _column(child.attribute, names_by_lower)
                values = list(child.value)
                if col is None or not values or any(v is None for v in values):
                    return None  # NOT IN (.., NULL) is never true: leave it to Spark
                return builder.is_not_in(col, values)
            return None
        col = _column(getattr(f, "attribute", ()), names_by_lower)
        if col is None:
            return None
        if isinstance(f, ds.IsNull):
            return builder.is_null(col)
        if isinstance(f, ds.IsNotNull):
            return builder.is_not_null(col)
        value = getattr(f, "value", None)
        if isinstance(f, ds.EqualNullSafe):
            return builder.is_null(col) if value is None else builder.equal(col, value)
        if isinstance(f, ds.In):
            values = [v for v in f.value if v is not None]
            return builder.is_in(col, values) if values else None
        if value is None:
            return None
        for spark_filter, method in ((ds.EqualTo, builder.equal), (ds.GreaterThan, builder.greater_than),
                                     (ds.GreaterThanOrEqual, builder.greater_or_equal),
                                     (ds.LessThan, builder.less_than), (ds.LessThanOrEqual, builder.less_or_equal),
                                     (ds.StringStartsWith, builder.startswith)):
            if isinstance(f, spark_filter):
                return method(col, value)
    except (PaimonError, TypeError, ValueError):
        return None  # literal does not fit the column: no pruning from this filter
    return None


def translate_filters(filters: Sequence, table_schema) -> Predicate | None:
    """The AND of every translatable filter (None if none is)."""
    builder = PredicateBuilder(table_schema)
    names = {f.name.lower(): f.name for f in table_schema.fields}
    roots = {f.name: f.type.root for f in table_schema.fields}
    preds = [p for p in (translate_filter(f, builder, names, roots) for f in filters) if p is not None]
    return and_all(preds)


__all__ = ["translate_filter", "translate_filters"]

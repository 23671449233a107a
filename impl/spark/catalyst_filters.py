"""A ``read_table`` filter (SQL string or Column) as an impl predicate, translated from Spark's
own parsed and optimized expression, so pruning sees exactly what Spark evaluates.

Why not a parser of our own: Spark's SQL has rules a second parser gets subtly wrong (backslash
escapes in string literals, ``'a\\\\b'`` is ``a\\b``; implicit casts; case-insensitive names), and a
pruning predicate that differs from the filter Spark applies drops rows Spark would keep.

How: the filter is applied to an empty DataFrame of the table's columns (an RDD-backed relation
the optimizer cannot see is empty, so the ``Filter`` survives optimization with Spark's constant
folding and cast unwrapping done). Each top-level conjunct of its condition goes through Spark's
``DataSourceStrategy.translateFilter`` (the translation Spark uses to push filters into data
sources), and the resulting ``sources.Filter`` tree is read through py4j: leaves become
``pyspark.sql.datasource`` filters and take :func:`impl.spark.filters.translate_filter`'s rules
(one home for what prunes exactly), ``And`` / ``Or`` / ``Not`` combine them. Anything without an
exact translation is left out, which only costs pruning: Spark still evaluates the whole filter.
"""

from __future__ import annotations

import datetime as dt
import logging

from impl.predicate.predicate import CompoundPredicate, Predicate, PredicateBuilder, and_all
from impl.spark.filters import translate_filter
from impl.spark.types import spark_schema

log = logging.getLogger(__name__)

# JVM objects visited per filter at most (each is a py4j round trip): a larger filter prunes with
# the part translated so far
MAX_FILTER_NODES = 2000

_LEAVES = ("EqualTo", "EqualNullSafe", "GreaterThan", "GreaterThanOrEqual", "LessThan", "LessThanOrEqual",
           "In", "IsNull", "IsNotNull", "StringStartsWith")


class _Untranslatable(Exception):
    """A value or filter kind with no exact Python counterpart (pruning only: never surfaced)."""


class _Budget:
    def __init__(self, limit: int):
        self.left = limit

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise _Untranslatable("filter too large")


def _java_value(v):
    """A ``sources.Filter`` literal as the Python value pyspark's own filter pushdown gives."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    from decimal import Decimal

    if isinstance(v, (Decimal, bytes, bytearray)):
        return bytes(v) if isinstance(v, bytearray) else v
    cls = v.getClass().getName()
    if cls == "java.sql.Date":
        return dt.date.fromisoformat(v.toLocalDate().toString())
    if cls == "java.time.LocalDate":
        return dt.date.fromisoformat(v.toString())
    if cls in ("java.sql.Timestamp", "java.time.Instant"):
        instant = v.toInstant() if cls == "java.sql.Timestamp" else v
        nanos = instant.getNano()
        if nanos % 1000:
            raise _Untranslatable("sub-microsecond timestamp")
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return epoch + dt.timedelta(seconds=instant.getEpochSecond(), microseconds=nanos // 1000)
    if cls == "java.time.LocalDateTime":
        if v.getNano() % 1000:
            raise _Untranslatable("sub-microsecond timestamp")
        return dt.datetime.fromisoformat(v.toString())
    raise _Untranslatable(cls)


def _leaf(f, name: str):
    """A leaf ``sources.Filter`` as a ``pyspark.sql.datasource`` filter."""
    from pyspark.sql import datasource as ds

    attribute = (str(f.attribute()),)
    if name in ("IsNull", "IsNotNull"):
        return getattr(ds, name)(attribute)
    if name == "In":
        return ds.In(attribute, tuple(_java_value(v) for v in f.values()))
    return getattr(ds, name)(attribute, _java_value(f.value()))


def _source_predicate(f, ctx, budget: _Budget) -> Predicate | None:
    """One ``sources.Filter`` (a JVM object) as a predicate, or None when not exactly translatable."""
    from pyspark.sql import datasource as ds

    budget.spend()
    name = f.getClass().getSimpleName()
    builder, names, roots = ctx
    if name == "And":
        return and_all([p for p in (_source_predicate(f.left(), ctx, budget),
                                    _source_predicate(f.right(), ctx, budget)) if p is not None])
    if name == "Or":
        left = _source_predicate(f.left(), ctx, budget)
        right = _source_predicate(f.right(), ctx, budget) if left is not None else None
        # an OR prunes only when both sides do: dropping one side would drop its rows
        return None if left is None or right is None else CompoundPredicate("or", (left, right))
    if name == "Not":
        child = f.child()
        child_name = child.getClass().getSimpleName()
        if child_name not in ("EqualTo", "In"):
            return None
        return translate_filter(ds.Not(_leaf(child, child_name)), builder, names, roots)
    if name not in _LEAVES:
        return None
    return translate_filter(_leaf(f, name), builder, names, roots)


def _conjuncts(expr, budget: _Budget) -> list:
    """The top-level conjuncts of a Catalyst expression (JVM objects)."""
    out, todo = [], [expr]
    while todo:
        e = todo.pop()
        budget.spend()
        if e.getClass().getSimpleName() == "And":
            todo += [e.right(), e.left()]
        else:
            out.append(e)
    return out


def spark_filter_predicate(spark, table_schema, filter_) -> Predicate | None:
    """impl's predicate of ``filter_`` (a SQL string or a Column over the columns of
    ``table_schema``) for pruning, as Spark parses and optimizes it; None when nothing of it has an
    exact translation. Raises what Spark raises for a filter it cannot parse or resolve."""
    from pyspark.sql import functions as F

    if getattr(spark, "_jsparkSession", None) is None:
        # a Spark Connect session: no optimizer to ask here (Spark still applies the filter)
        log.info("read_table filter: not used for pruning (the session has no JVM on this side)")
        return None
    column = F.expr(filter_) if isinstance(filter_, str) else filter_
    empty = spark.createDataFrame(spark.sparkContext.emptyRDD(), spark_schema(table_schema))
    plan = empty.filter(column)._jdf.queryExecution().optimizedPlan()
    if plan.nodeName() != "Filter":
        # folded away (always true, or always false: Spark then reads nothing): nothing to prune with
        return None
    jvm = spark._jvm
    strategy = getattr(jvm.org.apache.spark.sql.execution.datasources, "DataSourceStrategy$").__getattr__("MODULE$")
    ctx = (PredicateBuilder(table_schema), {f.name.lower(): f.name for f in table_schema.fields},
           {f.name: f.type.root for f in table_schema.fields})
    budget = _Budget(MAX_FILTER_NODES)
    preds: list[Predicate] = []
    try:
        for conjunct in _conjuncts(plan.condition(), budget):
            translated = strategy.translateFilter(conjunct, False)  # False: top-level columns only
            if not translated.isDefined():
                continue
            try:
                p = _source_predicate(translated.get(), ctx, budget)
            except _Untranslatable as e:
                log.debug("read_table filter: conjunct %s not used for pruning (%s)", conjunct.toString(), e)
                continue
            if p is not None:
                preds.append(p)
    except _Untranslatable:
        log.info("read_table filter: too large to translate whole; pruning with its first %d conjunct(s)",
                 len(preds))
    return and_all(preds)


__all__ = ["spark_filter_predicate", "MAX_FILTER_NODES"]

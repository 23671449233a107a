"""A table as a Polars IO source: a LazyFrame whose filters, projections and row limits reach
the read (:mod:`impl.polars` opens one by table or path).

An IO plugin (``polars.io.plugins.register_io_source``): Polars hands it the columns the query
needs, its predicate (a Polars expression) and a row limit. What of the predicate translates
(comparisons, ``is_between``, ``is_in``, ``is_null`` / ``is_not_null`` of columns with
literals, a boolean column, joined by ``&`` and ``|``; see :mod:`impl.read.pushdown` for the rules that keep the answer exact)
becomes the read's filter: partitions and files are pruned, primary-key tables merged. The
whole Polars predicate is then applied to the rows read, so an untranslated part
(``pl.col("v").str.contains(...)``, an OR with such a branch) still filters, by Polars.

Errors: an unknown column in a query is Polars' ``ColumnNotFoundError`` naming it, raised when
the query is planned; ``scan_table`` of a path without a table raises impl's
``TableNotExistError``; an error of the read itself (a data file missing, ...) is raised by
``collect()`` as impl's typed error.
"""

from __future__ import annotations

import io
import json
from typing import Any, Iterator

import pyarrow as pa

from impl._optional import require
from impl.errors import InvalidPredicateError
from impl.predicate.predicate import MAX_PREDICATE_DEPTH, Predicate
from impl.read.pushdown import (
    FLIPPED,
    PushdownScan,
    Untranslatable,
    conjunction,
    disjunction,
    leaf,
    pushed_read,
    read_columns,
)

_COMPARISONS = {"Eq": "equal", "NotEq": "not_equal", "Lt": "less_than", "LtEq": "less_or_equal",
                "Gt": "greater_than", "GtEq": "greater_or_equal"}
# is_between's ``closed`` as the comparisons of its lower and upper bound
_BETWEEN = {"Both": ("greater_or_equal", "less_or_equal"), "Left": ("greater_or_equal", "less_than"),
            "Right": ("greater_than", "less_or_equal"), "None": ("greater_than", "less_than")}
_AND = ("And", "LogicalAnd")
_OR = ("Or", "LogicalOr")


def _is_constant(node: Any) -> bool:
    """A literal, or a cast of one (Polars casts literals to the column's type)."""
    if not isinstance(node, dict) or len(node) != 1:
        return False
    ((kind, body),) = node.items()
    if kind == "Literal":
        return True
    return kind == "Cast" and isinstance(body, dict) and _is_constant(body.get("expr"))


def _constant(pl, node: dict) -> Any:
    """The value of a constant subtree, evaluated by Polars from its serialized form: a
    Python value, or a list for a list literal (``is_in``)."""
    try:
        expr = pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")
        s = pl.select(expr).to_series()
    except Exception as e:  # noqa: BLE001 - any failure only means the literal stays Polars'
        raise Untranslatable(f"literal {str(node)[:80]}: {e}") from e
    if isinstance(s.dtype, (pl.List, pl.Array)):
        if len(s) != 1:
            raise Untranslatable("list literal of several rows")
        return s[0].to_list()
    if len(s) != 1:
        return s.to_list()
    return s[0]


def to_predicate(table, expr) -> Predicate | None:
    """An impl predicate every row matching the Polars expression ``expr`` matches (None: no
    part of it translates)."""
    pl = require("polars", "impl.polars")
    try:
        tree = json.loads(expr.meta.serialize(format="json"))
    except Exception:  # noqa: BLE001 - an expression Polars cannot write out is simply not pushed
        # (RecursionError included: json.loads of a chain of more than about 450 ANDs / ORs)
        return None
    return _part(pl, table, tree)


def _part(pl, table, node: Any, depth: int = 1) -> Predicate | None:
    """The translation of ``node`` (None: untranslatable, or nested deeper than
    ``MAX_PREDICATE_DEPTH``; weaker, so safe: Polars filters the rows read itself)."""
    if depth > MAX_PREDICATE_DEPTH:
        return None
    try:
        return _translate(pl, table, node, depth)
    except (Untranslatable, InvalidPredicateError):  # InvalidPredicateError: the tree nests too deep
        return None


def _chain(node: Any, ops: tuple[str, ...]) -> list[Any]:
    """The operands, in order, of the run of ``ops`` binary expressions at ``node``: a chain
    ``a | b | ... | z`` is as deep as it is long, so it is walked without recursion."""
    out: list[Any] = []
    stack = [node]
    while stack:
        n = stack.pop()
        body = n.get("BinaryExpr") if isinstance(n, dict) and len(n) == 1 else None
        if isinstance(body, dict) and body.get("op") in ops:
            stack += [body.get("right"), body.get("left")]
        else:
            out.append(n)
    return out


def _translate(pl, table, node: Any, depth: int) -> Predicate | None:
    if not isinstance(node, dict) or len(node) != 1:
        raise Untranslatable("not an expression node")
    ((kind, body),) = node.items()
    if kind == "BinaryExpr":
        op, left, right = body.get("op"), body.get("left"), body.get("right")
        if op in _AND:
            return conjunction([_part(pl, table, n, depth + 1) for n in _chain(node, _AND)])
        if op in _OR:
            return disjunction([_part(pl, table, n, depth + 1) for n in _chain(node, _OR)])
        if op in _COMPARISONS:
            method = _COMPARISONS[op]
            if _is_constant(left) and _column(right) is not None:
                left, right, method = right, left, FLIPPED[method]
            column = _column(left)
            if column is not None and _is_constant(right):
                return leaf(table, method, column, [_constant(pl, right)])
        raise Untranslatable(f"binary {op}")
    if kind == "Function":
        inputs, function = body.get("input") or [], body.get("function")
        boolean = function.get("Boolean") if isinstance(function, dict) else None
        column = _column(inputs[0]) if inputs else None
        if column is None:
            raise Untranslatable("function not of a column")
        if boolean in ("IsNull", "IsNotNull") and len(inputs) == 1:
            return leaf(table, "is_null" if boolean == "IsNull" else "is_not_null", column)
        if isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3 \
                and _is_constant(inputs[1]) and _is_constant(inputs[2]):
            closed = (boolean["IsBetween"] or {}).get("closed")
            if closed not in _BETWEEN:
                raise Untranslatable(f"is_between(closed={closed!r})")
            low, high = _BETWEEN[closed]
            return conjunction([leaf(table, low, column, [_constant(pl, inputs[1])]),
                                leaf(table, high, column, [_constant(pl, inputs[2])])])
        if isinstance(boolean, dict) and "IsIn" in boolean and len(inputs) == 2 and _is_constant(inputs[1]):
            if (boolean["IsIn"] or {}).get("nulls_equal"):
                raise Untranslatable("is_in(nulls_equal=True)")
            values = _constant(pl, inputs[1])
            return leaf(table, "is_in", column, values if isinstance(values, list) else [values])
        raise Untranslatable(f"function {function}")
    if kind == "Column" and isinstance(body, str):  # a boolean column as the predicate
        return leaf(table, "equal", body, [True])
    raise Untranslatable(kind)


def _column(node: Any) -> str | None:
    if isinstance(node, dict) and len(node) == 1 and isinstance(node.get("Column"), str):
        return node["Column"]
    return None


class PolarsSource:
    """A table as a Polars IO source; ``scans`` records each scan Polars ran
    (:class:`impl.read.pushdown.PushdownScan`)."""

    def __init__(self, table) -> None:
        self.table = table
        self.scans: list[PushdownScan] = []

    def lazy(self):
        """A ``polars.LazyFrame`` of the table's rows (merged rows of primary-key tables)."""
        pl = require("polars", "impl.polars")
        from polars.io.plugins import register_io_source

        schema = pl.from_arrow(self.table.arrow_schema.empty_table()).schema
        return register_io_source(self._batches, schema=schema, explain_name="paimon",
                                  explain_detail=str(self.table.identifier))

    def _batches(self, with_columns: list[str] | None, predicate, n_rows: int | None,
                 _batch_size: int | None) -> Iterator[Any]:
        pl = require("polars", "impl.polars")
        names = self.table.schema.field_names
        wanted = list(with_columns) if with_columns is not None else names
        if n_rows == 0:
            return
        pushed = to_predicate(self.table, predicate) if predicate is not None else None
        filter_columns = predicate.meta.root_names() if predicate is not None else []
        # the read's limit counts rows before Polars' filter: only safe without one
        limit = n_rows if predicate is None else None
        reader, record = pushed_read(self.table, pushed, read_columns(self.table, wanted, filter_columns), limit)
        self.scans.append(record)
        produced = 0
        for batch in reader:
            df = pl.from_arrow(pa.Table.from_batches([batch]))
            if predicate is not None:
                df = df.filter(predicate)
            df = df.select(wanted)
            if n_rows is not None:
                df = df.head(n_rows - produced)
            produced += df.height
            if df.height:
                yield df
            if n_rows is not None and produced >= n_rows:
                return


__all__ = ["PolarsSource", "to_predicate"]

"""A table as a DuckDB-scannable dataset, filters and projections pushed into the read
(:mod:`impl.duckdb` registers one by table or path).

:class:`TableDataset` is a ``pyarrow.dataset.Dataset`` as far as DuckDB can tell (DuckDB scans
a dataset by calling ``type(obj).scanner(obj, columns=..., filter=...)`` with the columns the
query reads and the filters it can express as a ``pyarrow.compute.Expression``). Each call
plans a read of the table with what of the filter translates to an impl predicate
(:mod:`impl.read.pushdown`: partitions, files and columns pruned; primary-key tables merged),
and hands DuckDB a ``pyarrow.dataset.Scanner`` over those rows that applies the whole filter.
DuckDB does not filter again what it pushed into a dataset (duckdb 2.0.1's
``duckdb/_sources/pyarrow.py`` pushes every predicate it can write as an Arrow expression and
that NaN cannot satisfy, and trusts the dataset to apply it), so that last step is what keeps
the answer exact; filters DuckDB cannot push (``lower(v) = 'x'``, an OR over columns) stay in
DuckDB's plan.

Errors: a query naming an unknown column fails in DuckDB's binder (``BinderException:
Referenced column "nope" not found``); an error of the read itself (a data file missing, ...)
reaches the caller as DuckDB's ``InvalidInputException`` whose message holds impl's error
(class name and message).
"""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from impl.errors import InvalidPredicateError, UnsupportedTableFeatureError
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

# Arrow compute function names of comparisons, as impl's predicate methods
_COMPARISONS = {"equal": "equal", "not_equal": "not_equal", "less": "less_than", "less_equal": "less_or_equal",
                "greater": "greater_than", "greater_equal": "greater_or_equal"}
_AND = ("and_kleene", "and")
_OR = ("or_kleene", "or")


# ---------------------------------------------------------------------- the Expression as a tree
# pyarrow has no accessor of an Expression's structure; its serialized form (what pickling
# uses) is an Arrow IPC file: one row of literals, and schema metadata listing the nodes in
# prefix order ("call" name ... "options" i "end" name, "field_ref" name, "literal" i).
# Schema.metadata is a dict, which would lose repeated keys: the ordered pairs are read from
# the schema's Arrow C data interface export instead.

class _ArrowSchema(ctypes.Structure):
    _fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
                ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
                ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


def _metadata_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    """The schema's metadata as ordered (key, value) pairs, repeated keys kept."""
    c = _ArrowSchema()
    schema._export_to_c(ctypes.addressof(c))
    try:
        pairs = []
        if c.metadata:
            raw = ctypes.string_at(c.metadata, 4)
            n = int.from_bytes(raw, "little", signed=True)
            pos = c.metadata + 4
            for _ in range(n):
                item = []
                for _ in range(2):
                    size = int.from_bytes(ctypes.string_at(pos, 4), "little", signed=True)
                    item.append(ctypes.string_at(pos + 4, size).decode())
                    pos += 4 + size
                pairs.append((item[0], item[1]))
        return pairs
    finally:
        pa.Schema._import_from_c(ctypes.addressof(c))  # takes ownership back: releases the export


class _Node:
    """One node of an Expression: a call, a field reference or a literal."""

    def __init__(self, kind: str, value: Any, args: Sequence["_Node"] = (), options: Any = None):
        self.kind, self.value, self.args, self.options = kind, value, list(args), options

    def fields(self) -> set[str]:
        out: set[str] = set()
        stack = [self]  # not recursive: an engine's OR chain of 10,000 terms is 10,000 deep
        while stack:
            n = stack.pop()
            if n.kind == "field":
                out.add(n.value)
            stack.extend(n.args)
        return out


def expression_tree(expr: pc.Expression) -> _Node:
    """The tree of ``expr`` (:class:`Untranslatable` on a form this reader does not know).

    Read without recursion: the serialized expression lists the nodes in pre-order (a call, its
    arguments, its options, its end), and an engine's AND / OR chain of n terms is n deep."""
    buf = expr.__reduce__()[1][0]
    reader = pa.ipc.open_file(buf)
    literals = reader.read_all()
    pairs = _metadata_pairs(reader.schema)
    pos = 0
    open_calls: list[tuple[str, list[_Node]]] = []  # calls whose end is still to come, innermost last
    root: _Node | None = None

    def literal(index: str) -> pa.Scalar:
        return literals.column(int(index))[0]

    while root is None:
        if pos >= len(pairs):
            raise Untranslatable("truncated expression")
        key, value = pairs[pos]
        pos += 1
        done: _Node | None = None
        if key == "literal":
            done = _Node("literal", literal(value))
        elif key == "field_ref":
            done = _Node("field", value)
        elif key == "call":
            open_calls.append((value, []))
        else:
            raise Untranslatable(f"expression node {key!r}")
        while done is not None or (open_calls and pos < len(pairs) and pairs[pos][0] in ("end", "options")):
            if done is None:  # the innermost open call's arguments end here
                name, args = open_calls.pop()
                options = None
                if pairs[pos][0] == "options":
                    options = literal(pairs[pos][1])
                    pos += 1
                if pos >= len(pairs) or pairs[pos] != ("end", name):
                    raise Untranslatable(f"call {name!r} without its end")
                pos += 1
                done = _Node("call", name, args, options)
            if not open_calls:
                root = done
                break
            open_calls[-1][1].append(done)
            done = None
    if pos != len(pairs):
        raise Untranslatable("trailing expression nodes")
    return root


def _chain(node: _Node, names: tuple[str, ...]) -> list[_Node]:
    """The operands of the run of ``names`` calls (one associative operator) at ``node``, in
    order, without recursion."""
    out: list[_Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.kind == "call" and n.value in names:
            stack.extend(reversed(n.args))
        else:
            out.append(n)
    return out


def to_predicate(table, node: _Node, depth: int = 1) -> Predicate | None:
    """An impl predicate every row matching ``node`` matches (None: nothing translates).

    Below ``MAX_PREDICATE_DEPTH`` levels of alternating AND / OR nothing is translated (weaker,
    so safe: the engine applies its own filter to the rows read)."""
    if depth > MAX_PREDICATE_DEPTH:
        return None
    try:
        return _translate(table, node, depth)
    except (Untranslatable, InvalidPredicateError):  # InvalidPredicateError: the tree nests too deep
        return None


def _translate(table, node: _Node, depth: int) -> Predicate | None:
    if node.kind != "call":
        raise Untranslatable(node.kind)
    name, args = node.value, node.args
    if name in _AND:
        return conjunction([to_predicate(table, a, depth + 1) for a in _chain(node, _AND)])
    if name in _OR:
        return disjunction([to_predicate(table, a, depth + 1) for a in _chain(node, _OR)])
    if name == "if_else" and len(args) == 3 and args[2].kind == "literal" and not args[2].value.is_valid:
        # DuckDB's IN: if_else(is_valid(x), is_in(x, ...), null), true exactly when both are
        return conjunction([to_predicate(table, args[0], depth + 1), to_predicate(table, args[1], depth + 1)])
    if name in _COMPARISONS and len(args) == 2:
        a, b = args
        method = _COMPARISONS[name]
        if a.kind == "literal" and b.kind == "field":
            a, b, method = b, a, FLIPPED[method]
        if a.kind == "field" and b.kind == "literal":
            return leaf(table, method, a.value, [b.value.as_py()])
        raise Untranslatable(name)
    if name in ("is_null", "is_valid") and len(args) == 1 and args[0].kind == "field":
        if name == "is_null" and node.options is not None and node.options["nan_is_null"].as_py():
            raise Untranslatable("is_null(nan_is_null=true)")
        return leaf(table, "is_null" if name == "is_null" else "is_not_null", args[0].value)
    if name == "is_in" and len(args) == 1 and args[0].kind == "field" and node.options is not None:
        values = node.options["value_set"].as_py()
        if values is None or any(v is None for v in values):
            raise Untranslatable("is_in with null")  # null matching rules differ
        return leaf(table, "is_in", args[0].value, values)
    raise Untranslatable(name)


# ---------------------------------------------------------------------- the dataset


class TableDataset(ds.Dataset):
    """A table as DuckDB scans a ``pyarrow.dataset.Dataset``: each ``scanner`` call plans one
    pushed-down read. ``scans`` records each (:class:`impl.read.pushdown.PushdownScan`).

    Only the dataset methods below are implemented; the others (``join``, ``filter``, ...)
    raise :class:`UnsupportedTableFeatureError` rather than reach pyarrow's native dataset,
    which this object does not have."""

    def __init__(self, table) -> None:  # pyarrow's own constructor refuses direct construction: not called
        self._table = table
        self.scans: list[PushdownScan] = []

    @property
    def schema(self) -> pa.Schema:
        return self._table.arrow_schema

    def scanner(self, columns=None, filter=None, **_hints) -> ds.Scanner:
        """The rows of ``columns`` (all when None) matching ``filter`` (``Dataset.scanner``'s
        arguments; ``_hints`` such as batch sizes, readahead or a memory pool do not apply)."""
        names = self.schema.names
        if isinstance(columns, dict):
            raise UnsupportedTableFeatureError(f"{self._table.identifier}: a scan of computed columns ({list(columns)})")
        wanted = None if columns is None else list(columns)
        predicate: Predicate | None = None
        filter_columns: Sequence[str] = ()
        if filter is not None:
            filter_columns = names  # unless the filter's own columns are known
            try:
                tree = expression_tree(filter)
                filter_columns = sorted(tree.fields())
                unknown = [c for c in filter_columns if c not in names]
                if unknown:
                    raise InvalidPredicateError(
                        f"filter {filter}: {unknown[0]!r} is not a column of {self._table.identifier} (columns: {names})")
                predicate = to_predicate(self._table, tree)
            except Untranslatable:
                pass  # read every column; the filter below still applies
        reader, record = pushed_read(self._table, predicate, read_columns(self._table, wanted, filter_columns))
        self.scans.append(record)
        return ds.Scanner.from_batches(reader, columns=wanted if wanted is not None else names, filter=filter)

    def to_table(self, columns=None, filter=None, **hints) -> pa.Table:
        return self.scanner(columns=columns, filter=filter, **hints).to_table()

    def to_batches(self, columns=None, filter=None, **hints):
        return self.scanner(columns=columns, filter=filter, **hints).to_batches()

    def count_rows(self, filter=None, **hints) -> int:
        return self.scanner(columns=[], filter=filter, **hints).count_rows()

    def head(self, num_rows, columns=None, filter=None, **hints) -> pa.Table:
        return self.scanner(columns=columns, filter=filter, **hints).head(num_rows)

    def __reduce__(self):
        raise UnsupportedTableFeatureError("a TableDataset is not pickled: pickle the table's path instead")

    def __repr__(self) -> str:
        return f"TableDataset({self._table.identifier})"


def _unsupported(name: str):
    def method(self, *args, **kwargs):
        raise UnsupportedTableFeatureError(f"TableDataset.{name} (of pyarrow's Dataset) is not implemented")
    method.__name__ = name
    return method


for _name in ("filter", "get_fragments", "join", "join_asof", "replace_schema", "sort_by", "take"):
    setattr(TableDataset, _name, _unsupported(_name))
TableDataset.partition_expression = property(_unsupported("partition_expression"))


__all__ = ["TableDataset", "expression_tree", "to_predicate"]

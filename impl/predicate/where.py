"""``--where``: a small SQL filter parsed into impl's predicate builder, and nothing else.

Grammar (keywords in any case)::

    filter     := conjunct (OR conjunct)*
    conjunct   := primary (AND primary)*
    primary    := '(' filter ')' | column IS [NOT] NULL | column [NOT] IN '(' literal (',' literal)* ')'
                | column BETWEEN literal AND literal | operand op operand     (one side a column)
    op         := = | == | != | <> | < | <= | > | >=
    literal    := 'string' ('' escapes a quote) | number | TRUE | FALSE
    column     := name | "quoted name" | `quoted name`    (unquoted: case-insensitive)

Bounds (hostile input ends as a typed error, never a crash): parentheses nest at most
:data:`impl.predicate.predicate.MAX_PREDICATE_DEPTH` deep; a number literal has at most
:data:`MAX_NUMBER_CHARS` characters and must be finite (``1e999`` is out of every type's range);
a chain of any length of ORs / ANDs is one flat predicate node.

Anything else (LIKE, NOT before a condition, function calls, arithmetic, two columns compared,
``= NULL``) is refused with :class:`FilterSyntaxError` naming it; an unknown column or a literal
that does not fit its column is the predicate builder's :class:`InvalidPredicateError`. A string
literal compared with a DATE / TIMESTAMP / TIME column is read as that type (``'2024-01-01'``),
a number compared with a DECIMAL column exactly.
"""

from __future__ import annotations

import decimal
import math
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

import pyarrow as pa

from impl.errors import FilterSyntaxError, InvalidPredicateError
from impl.predicate.predicate import MAX_PREDICATE_DEPTH, Predicate, PredicateBuilder


class TokenKind(Enum):
    STRING = "string"
    NUMBER = "number"
    NAME = "name"  # a bare word: a keyword or a column
    QUOTED = "quoted name"
    OP = "operator"
    PUNCT = "punctuation"
    END = "end of filter"


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str  # the value: a string's content, a name, an operator
    position: int

    def is_word(self, *words: str) -> bool:
        return self.kind is TokenKind.NAME and self.text.upper() in words


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>"(?:[^"]|"")*"|`[^`]*`)
  | (?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),])
  | (?P<name>[A-Za-z_][A-Za-z0-9_$]*)
""", re.X)

# No column type holds a longer number (DECIMAL has at most 38 digits, BIGINT 19, a DOUBLE 17
# significant ones); without the bound a 5,000-digit integer hits Python's int-conversion limit
# (ValueError) and ends as an internal error.
MAX_NUMBER_CHARS = 100

KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE"})
# words a user may reasonably try, refused by name rather than as "unexpected"
_REFUSED_WORDS = frozenset({"LIKE", "ILIKE", "RLIKE", "REGEXP", "SIMILAR", "GLOB", "EXISTS", "CASE", "CAST",
                            "SELECT", "ANY", "ALL", "SOME", "XOR", "DISTINCT"})


def tokenize(text: str) -> list[Token]:
    out: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise FilterSyntaxError(text, pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        raw = m.group()
        if kind == "string":
            out.append(Token(TokenKind.STRING, raw[1:-1].replace("''", "'"), pos))
        elif kind == "quoted":
            name = raw[1:-1].replace('""', '"') if raw[0] == '"' else raw[1:-1]
            out.append(Token(TokenKind.QUOTED, name, pos))
        elif kind == "number":
            if len(raw) > MAX_NUMBER_CHARS:
                raise FilterSyntaxError(text, pos, f"a number literal of {len(raw)} characters is longer than any "
                                                   f"column type holds (at most {MAX_NUMBER_CHARS})")
            out.append(Token(TokenKind.NUMBER, raw, pos))
        elif kind == "op":
            out.append(Token(TokenKind.OP, "=" if raw == "==" else "!=" if raw == "<>" else raw, pos))
        elif kind == "punct":
            out.append(Token(TokenKind.PUNCT, raw, pos))
        elif kind == "name":
            out.append(Token(TokenKind.NAME, raw, pos))
        pos = m.end()
    out.append(Token(TokenKind.END, "", len(text)))
    return out


@dataclass(frozen=True)
class Column:
    name: str


@dataclass(frozen=True)
class Literal:
    token: Token


_COMPARISONS: dict[str, str] = {"=": "equal", "!=": "not_equal", "<": "less_than", "<=": "less_or_equal",
                                ">": "greater_than", ">=": "greater_or_equal"}
# `3 < id` is `id > 3`
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def literal_value(token: Token, arrow_type: pa.DataType | None) -> Any:
    """The Python value of a literal token for a column of ``arrow_type`` (None: unknown column,
    left to the predicate builder to refuse)."""
    if token.kind is TokenKind.STRING:
        if arrow_type is not None and (pa.types.is_temporal(arrow_type)):
            try:
                return pa.array([token.text], pa.string()).cast(arrow_type)[0].as_py()
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise InvalidPredicateError(
                    f"--where: {token.text!r} is not a value of type {arrow_type}: {e}") from e
        return token.text
    if token.kind is TokenKind.NUMBER:
        text = token.text
        if arrow_type is not None and pa.types.is_decimal(arrow_type):
            return decimal.Decimal(text)
        if re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        return float(text)
    return token.text.upper() == "TRUE"  # TRUE / FALSE


class _Parser:
    def __init__(self, text: str, builder: PredicateBuilder, schema: pa.Schema):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.builder = builder
        self.schema = schema
        self.depth = 0  # parentheses open around the current position

    # ------------------------------------------------------------------ tokens

    @property
    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        t = self.tokens[self.i]
        if t.kind is not TokenKind.END:
            self.i += 1
        return t

    def fail(self, token: Token, problem: str) -> FilterSyntaxError:
        return FilterSyntaxError(self.text, token.position, problem)

    def describe(self, token: Token) -> str:
        if token.kind is TokenKind.END:
            return "the end of the filter"
        if token.kind is TokenKind.STRING:
            return f"string '{token.text}'"
        return f"{token.kind.value} {token.text!r}"

    def expect_punct(self, text: str) -> None:
        t = self.take()
        if t.kind is not TokenKind.PUNCT or t.text != text:
            raise self.fail(t, f"expected {text!r}, found {self.describe(t)}")

    def expect_word(self, word: str) -> None:
        t = self.take()
        if not t.is_word(word):
            raise self.fail(t, f"expected {word}, found {self.describe(t)}")

    # ------------------------------------------------------------------ grammar

    def parse(self) -> Predicate:
        if self.peek.kind is TokenKind.END:
            raise self.fail(self.peek, "the filter is empty")
        p = self.filter()
        if self.peek.kind is not TokenKind.END:
            raise self.fail(self.peek, f"unexpected {self.describe(self.peek)} after a complete condition")
        return p

    def filter(self) -> Predicate:
        parts = [self.conjunct()]
        while self.peek.is_word("OR"):
            self.take()
            parts.append(self.conjunct())
        return parts[0] if len(parts) == 1 else self.builder.or_(*parts)

    def conjunct(self) -> Predicate:
        parts = [self.primary()]
        while self.peek.is_word("AND"):
            self.take()
            parts.append(self.primary())
        return parts[0] if len(parts) == 1 else self.builder.and_(*parts)

    def primary(self) -> Predicate:
        t = self.peek
        if t.kind is TokenKind.PUNCT and t.text == "(":
            if self.depth >= MAX_PREDICATE_DEPTH:  # the parser recurses once per level
                raise self.fail(t, f"parentheses nested more than {MAX_PREDICATE_DEPTH} deep")
            self.take()
            self.depth += 1
            p = self.filter()
            self.expect_punct(")")
            self.depth -= 1
            return p
        if t.is_word("NOT"):
            raise self.fail(t, "NOT before a condition is not supported (use !=, NOT IN or IS NOT NULL)")
        left = self.operand()
        op = self.peek
        if op.is_word("IS"):
            return self.is_null(self.column_of(left, op))
        if op.is_word("NOT", "IN"):
            return self.in_list(self.column_of(left, op))
        if op.is_word("BETWEEN"):
            return self.between(self.column_of(left, op))
        if op.kind is TokenKind.OP:
            self.take()
            return self.comparison(left, op, self.operand())
        if op.kind is TokenKind.NAME and op.text.upper() in _REFUSED_WORDS:
            raise self.fail(op, f"{op.text.upper()} is not supported")
        raise self.fail(op, f"expected a comparison operator, IN, BETWEEN or IS after {self.operand_text(left)}, "
                            f"found {self.describe(op)}")

    def operand(self) -> Column | Literal:
        t = self.take()
        if t.kind is TokenKind.QUOTED:
            return Column(t.text)
        if t.kind in (TokenKind.STRING, TokenKind.NUMBER):
            return Literal(t)
        if t.kind is TokenKind.NAME:
            word = t.text.upper()
            if word in ("TRUE", "FALSE"):
                return Literal(t)
            if word == "NULL":
                raise self.fail(t, "NULL is not a value to compare with (use IS NULL or IS NOT NULL)")
            if word in _REFUSED_WORDS:
                raise self.fail(t, f"{word} is not supported")
            if word in KEYWORDS:
                raise self.fail(t, f"expected a column or a literal, found keyword {word}")
            if self.peek.kind is TokenKind.PUNCT and self.peek.text == "(":
                raise self.fail(t, f"function calls ({t.text}(...)) are not supported")
            return Column(self.unquoted_column(t.text))
        raise self.fail(t, f"expected a column or a literal, found {self.describe(t)}")

    def unquoted_column(self, name: str) -> str:
        """An unquoted name is case-insensitive, as in SQL: the column of that name, else the one
        column whose name differs only in case (else the name, for the builder to refuse)."""
        names = self.schema.names
        if name in names:
            return name
        matches = [n for n in names if n.lower() == name.lower()]
        return matches[0] if len(matches) == 1 else name

    @staticmethod
    def operand_text(o: Column | Literal) -> str:
        return f"column {o.name!r}" if isinstance(o, Column) else f"literal {o.token.text!r}"

    def column_of(self, o: Column | Literal, op: Token) -> str:
        if not isinstance(o, Column):
            raise self.fail(op, f"{op.text.upper()} needs a column on its left, found {self.operand_text(o)}")
        return o.name

    def value(self, column: str, token: Token) -> Any:
        index = self.schema.get_field_index(column)
        v = literal_value(token, self.schema.field(index).type if index >= 0 else None)
        if isinstance(v, float) and math.isinf(v):  # the grammar has no infinity: the number overflowed
            raise self.fail(token, f"number {token.text} is out of the range of every column type")
        return v

    def literal(self, column: str) -> Any:
        o = self.operand()
        if not isinstance(o, Literal):
            raise self.fail(self.tokens[self.i - 1], f"comparing two columns ({column!r} and {o.name!r}) "
                                                     "is not supported")
        return self.value(column, o.token)

    def comparison(self, left: Column | Literal, op: Token, right: Column | Literal) -> Predicate:
        if self.peek.kind is TokenKind.OP:
            raise self.fail(self.peek, "chained comparisons are not supported (join conditions with AND)")
        if isinstance(left, Column) and isinstance(right, Column):
            raise self.fail(op, f"comparing two columns ({left.name!r} and {right.name!r}) is not supported")
        if isinstance(left, Literal) and isinstance(right, Literal):
            raise self.fail(op, "a comparison needs a column on one side")
        if isinstance(left, Column):
            assert isinstance(right, Literal)
            column, symbol, token = left.name, op.text, right.token
        else:
            assert isinstance(right, Column)
            column, symbol, token = right.name, _FLIPPED[op.text], left.token
        method: Callable[[str, Any], Predicate] = getattr(self.builder, _COMPARISONS[symbol])
        return method(column, self.value(column, token))

    def is_null(self, column: str) -> Predicate:
        self.take()  # IS
        negated = self.peek.is_word("NOT")
        if negated:
            self.take()
        self.expect_word("NULL")
        return self.builder.is_not_null(column) if negated else self.builder.is_null(column)

    def in_list(self, column: str) -> Predicate:
        negated = self.take().is_word("NOT")
        if negated:
            t = self.peek
            if not t.is_word("IN"):
                raise self.fail(t, f"NOT is supported only in NOT IN, found NOT {self.describe(t)}")
            self.take()
        self.expect_punct("(")
        values = [self.literal(column)]
        while self.peek.kind is TokenKind.PUNCT and self.peek.text == ",":
            self.take()
            values.append(self.literal(column))
        self.expect_punct(")")
        return self.builder.is_not_in(column, values) if negated else self.builder.is_in(column, values)

    def between(self, column: str) -> Predicate:
        self.take()  # BETWEEN
        low = self.literal(column)
        self.expect_word("AND")
        high = self.literal(column)
        return self.builder.between(column, low, high)


def parse_where(text: str, builder: PredicateBuilder, schema: pa.Schema) -> Predicate:
    """The predicate of filter ``text`` over the columns of ``schema``, built by ``builder``
    (which checks column names and literal types)."""
    return _Parser(text, builder, schema).parse()


__all__ = ["parse_where", "tokenize", "Token", "TokenKind", "literal_value"]

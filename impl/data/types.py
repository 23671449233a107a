"""Paimon data types: parsing and printing Paimon's SQL type strings, and pyarrow mapping.

Only what a table schema needs: the atomic types, plus ARRAY / MAP / ROW for value columns
(stored in schema JSON as nested objects, as Paimon does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pyarrow as pa

from impl.errors import TypeParseError, UnsupportedTypeError

MAX_LENGTH = 2147483647
# Paimon types this library does not represent, with the Paimon release that added them.
UNSUPPORTED_TYPES = {"BLOB": "1.3"}

# root names whose values fit in the 8-byte fixed slot of a BinaryRow
_FIXED = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "TIME"}


@dataclass(frozen=True)
class DataType:
    """One Paimon type. ``root`` is the canonical name (VARCHAR, CHAR, VARBINARY, BINARY,
    BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, DATE, TIME, TIMESTAMP,
    TIMESTAMP_LTZ, ARRAY, MAP, ROW)."""

    root: str
    nullable: bool = True
    length: int | None = None  # CHAR/VARCHAR/BINARY/VARBINARY
    precision: int | None = None  # DECIMAL, TIME, TIMESTAMP
    scale: int | None = None  # DECIMAL
    children: tuple = field(default=())  # ARRAY: (elem,), MAP: (key, value), ROW: DataFields

    def copy(self, nullable: bool) -> "DataType":
        return DataType(self.root, nullable, self.length, self.precision, self.scale, self.children)

    @property
    def is_string(self) -> bool:
        return self.root in ("VARCHAR", "CHAR")

    @property
    def is_binary(self) -> bool:
        return self.root in ("VARBINARY", "BINARY")

    def is_fixed_in_binary_row(self) -> bool:
        """True when the value lives entirely in the row's 8-byte slot (Paimon's isInFixedLengthPart)."""
        if self.root in _FIXED:
            return True
        if self.root == "DECIMAL":
            return (self.precision or 10) <= 18
        if self.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            return (self.precision if self.precision is not None else 6) <= 3
        return False

    # ---------------------------------------------------------------- printing

    def type_string(self) -> str:
        """Paimon's SQL string, e.g. ``STRING NOT NULL``, ``DECIMAL(10, 2)``, ``TIMESTAMP(6)``."""
        r = self.root
        if r == "VARCHAR":
            s = "STRING" if self.length in (None, MAX_LENGTH) else f"VARCHAR({self.length})"
        elif r == "VARBINARY":
            s = "BYTES" if self.length in (None, MAX_LENGTH) else f"VARBINARY({self.length})"
        elif r in ("CHAR", "BINARY"):
            s = f"{r}({self.length if self.length is not None else 1})"
        elif r == "DECIMAL":
            s = f"DECIMAL({self.precision}, {self.scale})"
        elif r == "TIME":
            s = f"TIME({self.precision if self.precision is not None else 0})"
        elif r == "TIMESTAMP":
            s = f"TIMESTAMP({self.precision if self.precision is not None else 6})"
        elif r == "TIMESTAMP_LTZ":
            s = f"TIMESTAMP({self.precision if self.precision is not None else 6}) WITH LOCAL TIME ZONE"
        elif r == "ARRAY":
            s = f"ARRAY<{self.children[0].type_string()}>"
        elif r == "MAP":
            s = f"MAP<{self.children[0].type_string()}, {self.children[1].type_string()}>"
        elif r == "ROW":
            s = "ROW<" + ", ".join(f"`{f.name}` {f.type.type_string()}" for f in self.children) + ">"
        else:
            s = r
        return s if self.nullable else s + " NOT NULL"

    def to_json(self):
        """Schema JSON form: a string for atomic types, an object for ARRAY/MAP/ROW."""
        suffix = "" if self.nullable else " NOT NULL"
        if self.root == "ARRAY":
            return {"type": "ARRAY" + suffix, "element": self.children[0].to_json()}
        if self.root == "MAP":
            return {"type": "MAP" + suffix, "key": self.children[0].to_json(), "value": self.children[1].to_json()}
        if self.root == "ROW":
            return {"type": "ROW" + suffix, "fields": [f.to_json() for f in self.children]}
        return self.type_string()

    def __str__(self) -> str:
        return self.type_string()


@dataclass(frozen=True)
class DataField:
    id: int
    name: str
    type: DataType
    description: str | None = None

    def to_json(self) -> dict:
        d = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            d["description"] = self.description
        return d

    @staticmethod
    def from_json(d: dict) -> "DataField":
        try:
            t = parse_type_json(d["type"])
        except UnsupportedTypeError as e:
            if str(e).startswith("column "):
                raise
            raise UnsupportedTypeError(f"column {d.get('name')!r} has type {d['type']!r}: {e}") from e
        except TypeParseError as e:
            raise UnsupportedTypeError(f"column {d.get('name')!r} has type {d['type']!r}, which this library "
                                       f"cannot represent ({e})") from e
        return DataField(int(d["id"]), str(d["name"]), t, d.get("description"))


# -------------------------------------------------------------------- shorthand constructors

def BOOLEAN(nullable=True): return DataType("BOOLEAN", nullable)  # noqa: E704,N802
def TINYINT(nullable=True): return DataType("TINYINT", nullable)  # noqa: E704,N802
def SMALLINT(nullable=True): return DataType("SMALLINT", nullable)  # noqa: E704,N802
def INT(nullable=True): return DataType("INT", nullable)  # noqa: E704,N802
def BIGINT(nullable=True): return DataType("BIGINT", nullable)  # noqa: E704,N802
def FLOAT(nullable=True): return DataType("FLOAT", nullable)  # noqa: E704,N802
def DOUBLE(nullable=True): return DataType("DOUBLE", nullable)  # noqa: E704,N802
def STRING(nullable=True): return DataType("VARCHAR", nullable, length=MAX_LENGTH)  # noqa: E704,N802
def BYTES(nullable=True): return DataType("VARBINARY", nullable, length=MAX_LENGTH)  # noqa: E704,N802
def DATE(nullable=True): return DataType("DATE", nullable)  # noqa: E704,N802
def TIMESTAMP(precision=6, nullable=True): return DataType("TIMESTAMP", nullable, precision=precision)  # noqa: E704,N802
def DECIMAL(precision, scale, nullable=True): return DataType("DECIMAL", nullable, precision=precision, scale=scale)  # noqa: E704,N802,E501


# -------------------------------------------------------------------- parsing

_SIMPLE = {
    "BOOLEAN": "BOOLEAN", "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INT", "INTEGER": "INT",
    "BIGINT": "BIGINT", "FLOAT": "FLOAT", "DOUBLE": "DOUBLE", "DATE": "DATE",
}
_PARAM = re.compile(r"^([A-Z ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?(\s+WITH LOCAL TIME ZONE)?$")


def parse_type(text: str) -> DataType:
    """Parse an atomic Paimon type string such as ``BIGINT NOT NULL`` or ``DECIMAL(10, 2)``."""
    s = " ".join(str(text).strip().split()).upper()
    nullable = True
    if s.endswith(" NOT NULL"):
        nullable, s = False, s[: -len(" NOT NULL")]
    elif s.endswith(" NULL"):
        s = s[: -len(" NULL")]
    if s.startswith("ARRAY<") or s.startswith("MAP<") or s.startswith("ROW<"):
        return _parse_nested(str(text).strip()).copy(nullable)
    if s in _SIMPLE:
        return DataType(_SIMPLE[s], nullable)
    if s == "VARIANT":
        return DataType("VARIANT", nullable)
    if s in UNSUPPORTED_TYPES:
        raise UnsupportedTypeError(f"type {s} (added in Paimon {UNSUPPORTED_TYPES[s]}) is not supported")
    if s == "STRING":
        return DataType("VARCHAR", nullable, length=MAX_LENGTH)
    if s == "BYTES":
        return DataType("VARBINARY", nullable, length=MAX_LENGTH)
    if s == "TIMESTAMP_LTZ":
        return DataType("TIMESTAMP_LTZ", nullable, precision=6)
    m = _PARAM.match(s)
    if not m:
        raise TypeParseError(f"unknown Paimon type {text!r}")
    name, a, b, ltz = m.group(1).strip(), m.group(2), m.group(3), m.group(4)
    a = int(a) if a is not None else None
    b = int(b) if b is not None else None
    if name in ("VARCHAR", "CHAR", "VARBINARY", "BINARY"):
        default = 1 if name in ("CHAR", "BINARY") else MAX_LENGTH
        return DataType(name, nullable, length=a if a is not None else default)
    if name in ("DECIMAL", "NUMERIC", "DEC"):
        return DataType("DECIMAL", nullable, precision=a if a is not None else 10, scale=b if b is not None else 0)
    if name == "TIME":
        return DataType("TIME", nullable, precision=a if a is not None else 0)
    if name == "TIMESTAMP":
        return DataType("TIMESTAMP_LTZ" if ltz else "TIMESTAMP", nullable, precision=a if a is not None else 6)
    if name == "TIMESTAMP_LTZ":
        return DataType("TIMESTAMP_LTZ", nullable, precision=a if a is not None else 6)
    raise TypeParseError(f"unknown Paimon type {text!r}")


def _split_top(s: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in s:
        if ch == "<" or ch == "(":
            depth += 1
        elif ch == ">" or ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur:
        parts.append("".join(cur).strip())
    return parts


def _parse_nested(text: str) -> DataType:
    head, inner = text.split("<", 1)
    inner = inner[: inner.rindex(">")]
    head = head.strip().upper()
    if head == "ARRAY":
        return DataType("ARRAY", children=(parse_type(inner),))
    if head == "MAP":
        k, v = _split_top(inner)
        return DataType("MAP", children=(parse_type(k), parse_type(v)))
    fields = []
    for i, part in enumerate(_split_top(inner)):
        if part.startswith("`"):
            name, rest = part[1:].split("`", 1)
        else:
            name, rest = part.split(None, 1)
        fields.append(DataField(i, name, parse_type(rest.strip())))
    return DataType("ROW", children=tuple(fields))


def parse_type_json(value) -> DataType:
    """Schema JSON form (string, or object for ARRAY / MAP / ROW) to a DataType."""
    if isinstance(value, str):
        return parse_type(value)
    if not isinstance(value, dict) or "type" not in value:
        raise TypeParseError(f"unknown Paimon type {value!r}")
    head = str(value["type"]).upper()
    nullable = not head.endswith("NOT NULL")
    root = head.split()[0]
    if root == "ARRAY":
        return DataType("ARRAY", nullable, children=(parse_type_json(value["element"]),))
    if root in ("MAP", "MULTISET"):
        if root == "MULTISET":
            return DataType("MAP", nullable, children=(parse_type_json(value["element"]), INT(False)))
        return DataType("MAP", nullable, children=(parse_type_json(value["key"]), parse_type_json(value["value"])))
    if root == "ROW":
        return DataType("ROW", nullable, children=tuple(DataField.from_json(f) for f in value["fields"]))
    raise TypeParseError(f"unknown Paimon type {value!r}")


# -------------------------------------------------------------------- pyarrow mapping

# VARIANT (Paimon 1.4) as its two binary parts, as Paimon keeps it (``GenericVariant``: the
# encoded value and its metadata dictionary); reading only, see impl.format.file_format.
# (the parts are nullable in Arrow: the children of a null struct slot read as null from ORC)
VARIANT_ARROW = pa.struct([pa.field("value", pa.binary()), pa.field("metadata", pa.binary())])


def to_arrow(t: DataType) -> pa.DataType:
    r = t.root
    if r == "BOOLEAN":
        return pa.bool_()
    if r == "TINYINT":
        return pa.int8()
    if r == "SMALLINT":
        return pa.int16()
    if r == "INT":
        return pa.int32()
    if r == "BIGINT":
        return pa.int64()
    if r == "FLOAT":
        return pa.float32()
    if r == "DOUBLE":
        return pa.float64()
    if r in ("VARCHAR", "CHAR"):
        return pa.string()
    if r in ("VARBINARY", "BINARY"):
        return pa.binary()
    if r == "DATE":
        return pa.date32()
    if r == "TIME":
        return pa.time32("ms") if (t.precision or 0) <= 3 else pa.time64("us")
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = t.precision if t.precision is not None else 6
        unit = "s" if p == 0 else "ms" if p <= 3 else "us" if p <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if r == "TIMESTAMP_LTZ" else None)
    if r == "DECIMAL":
        return pa.decimal128(t.precision, t.scale)
    if r == "VARIANT":
        return VARIANT_ARROW
    if r == "ARRAY":
        return pa.list_(to_arrow(t.children[0]))
    if r == "MAP":
        return pa.map_(to_arrow(t.children[0]), to_arrow(t.children[1]))
    if r == "ROW":
        return pa.struct([pa.field(f.name, to_arrow(f.type), nullable=f.type.nullable) for f in t.children])
    raise TypeParseError(f"no pyarrow type for {t}")


def from_arrow(t: pa.DataType, nullable: bool = True) -> DataType:
    if pa.types.is_boolean(t):
        return DataType("BOOLEAN", nullable)
    if pa.types.is_int8(t):
        return DataType("TINYINT", nullable)
    if pa.types.is_int16(t):
        return DataType("SMALLINT", nullable)
    if pa.types.is_int32(t):
        return DataType("INT", nullable)
    if pa.types.is_int64(t):
        return DataType("BIGINT", nullable)
    if pa.types.is_float32(t):
        return DataType("FLOAT", nullable)
    if pa.types.is_float64(t):
        return DataType("DOUBLE", nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return STRING(nullable)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return BYTES(nullable)
    if pa.types.is_fixed_size_binary(t):
        return DataType("BINARY", nullable, length=t.byte_width)
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return DataType("DATE", nullable)
    if pa.types.is_time(t):
        return DataType("TIME", nullable, precision={"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit])
    if pa.types.is_timestamp(t):
        p = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return DataType("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", nullable, precision=p)
    if pa.types.is_decimal(t):
        return DataType("DECIMAL", nullable, precision=t.precision, scale=t.scale)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return DataType("ARRAY", nullable, children=(from_arrow(t.value_type, t.value_field.nullable),))
    if pa.types.is_map(t):
        return DataType("MAP", nullable, children=(from_arrow(t.key_type, False), from_arrow(t.item_type, t.item_field.nullable)))
    if pa.types.is_struct(t):
        return DataType("ROW", nullable, children=tuple(
            DataField(i, t.field(i).name, from_arrow(t.field(i).type, t.field(i).nullable)) for i in range(t.num_fields)))
    raise TypeParseError(f"pyarrow type {t} has no Paimon equivalent")


def reassign_nested_ids(t: DataType, highest: list[int]) -> DataType:
    """``t`` with the fields of nested ROW types numbered on from ``highest`` (Paimon's ReassignFieldId:
    a field takes the next id before the fields inside its own type)."""
    if t.root == "ROW":
        children = []
        for child in t.children:
            highest[0] += 1
            fid = highest[0]
            children.append(DataField(fid, child.name, reassign_nested_ids(child.type, highest), child.description))
        return DataType(t.root, t.nullable, t.length, t.precision, t.scale, tuple(children))
    if t.root in ("ARRAY", "MAP"):
        return DataType(t.root, t.nullable, t.length, t.precision, t.scale,
                        tuple(reassign_nested_ids(c, highest) for c in t.children))
    return t

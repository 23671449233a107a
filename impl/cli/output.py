"""What a command prints: aligned text tables for a terminal (``rich`` ones when it is installed
and the output is a terminal), or one JSON document with ``--json``.

A command returns a :class:`Rows` (a table of rows) or a :class:`Document` (named values, some
of them tables). JSON, with stable keys:

- ``Rows``: ``{"columns": [name, ...], "rows": [{column: value, ...}, ...]}``;
- ``Document``: an object of its names, a table inside one as a list of row objects.

Values: integers and floats as numbers (NaN and infinities as strings), timestamps and dates
in ISO 8601 (``2024-01-01T12:00:00``), decimals as strings (exact), bytes in hex, maps as
objects, NULL as ``null``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import decimal
import enum
import json
import math
import sys
from dataclasses import dataclass
from typing import IO, Any, Iterator, Mapping

import pyarrow as pa

from impl._optional import require

NULL_TEXT = "NULL"


@dataclass(frozen=True)
class Rows:
    """A table of rows."""

    table: pa.Table


@dataclass(frozen=True)
class Document:
    """Named values (scalars, lists, mappings, :class:`Rows`), in the order given."""

    values: Mapping[str, Any]


Result = Rows | Document


class Style(enum.Enum):
    PLAIN = "plain"
    RICH = "rich"


# ---------------------------------------------------------------------------- values


def _python_columns(table: pa.Table) -> list[list[Any]]:
    """Every column as Python values; a map column as dicts (Arrow gives lists of pairs)."""
    out = []
    for field, column in zip(table.schema, table.columns, strict=True):
        values = column.to_pylist()
        if pa.types.is_map(field.type):
            values = [None if v is None else dict(v) for v in values]
        out.append(values)
    return out


def row_dicts(table: pa.Table) -> list[dict[str, Any]]:
    columns = _python_columns(table)
    names = table.column_names
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def json_value(v: Any) -> Any:
    """``v`` as a JSON value (the module docstring's rules)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, enum.Enum):
        return json_value(v.value)
    if isinstance(v, Mapping):
        return {str(k): json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [json_value(x) for x in v]
    if isinstance(v, Rows):
        return [json_value(r) for r in row_dicts(v.table)]
    return str(v)


def json_document(result: Result) -> Any:
    if isinstance(result, Rows):
        return {"columns": result.table.column_names,
                "rows": [json_value(r) for r in row_dicts(result.table)]}
    return {k: json_value(v) for k, v in result.values.items()}


def cell_text(v: Any) -> str:
    """One value as a table cell."""
    if v is None:
        return NULL_TEXT
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _dt.datetime):
        spec = "seconds" if not v.microsecond else "milliseconds" if not v.microsecond % 1000 else "auto"
        return v.isoformat(sep=" ", timespec=spec)
    if isinstance(v, (_dt.date, _dt.time, decimal.Decimal, int, float)):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v).hex()
    if isinstance(v, enum.Enum):
        return cell_text(v.value)
    if isinstance(v, (list, tuple, Mapping)):
        return json.dumps(json_value(v), ensure_ascii=False, separators=(", ", ": "))
    return str(v)


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


# ---------------------------------------------------------------------------- plain text


def plain_table(table: pa.Table, indent: str = "") -> list[str]:
    """``table`` as aligned text lines: a header, a rule, the rows (numbers right-aligned),
    and a ``(N rows)`` line."""
    names = table.column_names
    cells = [[cell_text(v) for v in col] for col in _python_columns(table)]
    widths = [max([len(n), *(len(c) for c in col)]) for n, col in zip(names, cells, strict=True)]
    right = [_numeric(f.type) for f in table.schema]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True)]
        return (indent + "  ".join(parts)).rstrip()

    out = [line(names), line(["-" * w for w in widths])]
    out.extend(line(list(row)) for row in zip(*cells, strict=True))
    n = table.num_rows
    out.append(f"{indent}({n} row{'' if n == 1 else 's'})")
    return out


def plain_document(doc: Document) -> list[str]:
    """Scalars as ``name: value`` lines (names aligned), tables and mappings under their name."""
    scalars = [k for k, v in doc.values.items() if not isinstance(v, (Rows, Mapping))]
    width = max((len(k) for k in scalars), default=0) + 1
    out: list[str] = []
    for k, v in doc.values.items():
        if isinstance(v, Rows):
            out.append(f"{k}:")
            out.extend(plain_table(v.table, indent="  "))
        elif isinstance(v, Mapping):
            out.append(f"{k}:")
            inner = max((len(str(x)) for x in v), default=0)
            out.extend(f"  {str(x).ljust(inner)}  {cell_text(y)}".rstrip() for x, y in v.items())
            if not v:
                out.append("  (none)")
        else:
            text = ", ".join(cell_text(x) for x in v) if isinstance(v, (list, tuple)) else cell_text(v)
            out.append(f"{(k + ':').ljust(width)} {text}".rstrip())
    return out


def plain_text(result: Result) -> str:
    lines = plain_table(result.table) if isinstance(result, Rows) else plain_document(result)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- rich


def _rich_table(table: pa.Table, title: str | None = None):
    rich_table = require("rich.table", "paimon-py's terminal tables", extra="cli")
    text = require("rich.text", "paimon-py's terminal tables", extra="cli").Text
    n = table.num_rows
    t = rich_table.Table(title=title, title_justify="left", caption=f"{n} row{'' if n == 1 else 's'}",
                         caption_justify="left")
    for f in table.schema:
        t.add_column(f.name, justify="right" if _numeric(f.type) else "left", overflow="fold")
    for row in zip(*_python_columns(table), strict=True):
        # Text: a value such as "[red]" is data, not rich markup
        t.add_row(*(text(cell_text(v)) for v in row))
    return t


def print_rich(result: Result, stream: IO[str]) -> None:
    console = require("rich.console", "paimon-py's terminal tables", extra="cli").Console(file=stream)
    if isinstance(result, Rows):
        console.print(_rich_table(result.table))
        return
    rich_table = require("rich.table", "paimon-py's terminal tables", extra="cli")
    grid = rich_table.Table(show_header=False, box=None)
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    nested = []
    for k, v in result.values.items():
        if isinstance(v, Rows):
            nested.append(_rich_table(v.table, title=k))
        elif isinstance(v, Mapping):
            nested.append(_rich_table(pa.table({"key": [str(x) for x in v], "value": [cell_text(y) for y in v.values()]}),
                                      title=k))
        else:
            value = ", ".join(cell_text(x) for x in v) if isinstance(v, (list, tuple)) else cell_text(v)
            grid.add_row(k, require("rich.text", "paimon-py's terminal tables", extra="cli").Text(value))
    console.print(grid)
    for t in nested:
        console.print(t)


# ---------------------------------------------------------------------------- entry points


def choose_style(requested: str, stream: IO[str]) -> Style:
    """``plain`` / ``rich`` as asked; ``auto``: rich when the stream is a terminal and rich is installed."""
    if requested == "plain":
        return Style.PLAIN
    if requested == "rich":
        require("rich", "--style rich", extra="cli")
        return Style.RICH
    if not stream.isatty():
        return Style.PLAIN
    try:
        require("rich", "terminal tables", extra="cli")
    except ImportError:
        return Style.PLAIN
    return Style.RICH


def emit(result: Result, *, as_json: bool, style: Style, stream: IO[str] | None = None) -> None:
    """Write ``result`` to ``stream`` (default: stdout) as JSON or as text of ``style``."""
    out = stream if stream is not None else sys.stdout
    if as_json:
        out.write(json.dumps(json_document(result), ensure_ascii=False, indent=2) + "\n")
    elif style is Style.RICH:
        print_rich(result, out)
    else:
        out.write(plain_text(result))


@contextlib.contextmanager
def progress(description: str, enabled: bool) -> Iterator[None]:
    """A progress bar on stderr while a long command runs (only when ``enabled``: stderr is a
    terminal and the output is not JSON). The commands are single calls into impl, which report
    no steps: the bar pulses with the elapsed time. Without rich, one line says what runs."""
    if not enabled:
        yield
        return
    try:
        rich_progress = require("rich.progress", "progress bars", extra="cli")
    except ImportError:
        print(f"{description} ...", file=sys.stderr, flush=True)
        yield
        return
    columns = (rich_progress.SpinnerColumn(), rich_progress.TextColumn("{task.description}"),
               rich_progress.BarColumn(), rich_progress.TimeElapsedColumn())
    with rich_progress.Progress(*columns, transient=True,
                                console=require("rich.console", "progress bars", extra="cli").Console(file=sys.stderr)) as p:
        p.add_task(description, total=None)
        yield


__all__ = ["Rows", "Document", "Result", "Style", "emit", "choose_style", "progress", "json_document",
           "json_value", "plain_text", "row_dicts", "cell_text"]

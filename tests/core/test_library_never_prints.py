"""The library never prints: no print() or sys.stdout / sys.stderr writes anywhere in impl/
except the command-line programs (the demo and ``paimon-py``), whose output is the point."""

from __future__ import annotations

import ast
import pathlib

import impl

# command-line programs, relative to impl/: printing is their job
COMMANDS = {"demo.py", "cli/main.py", "cli/output.py", "rest/__main__.py"}


def printing_calls(source: str) -> list[int]:
    """Line numbers of print(...) and sys.stdout/sys.stderr .write/.writelines calls."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "print":
            lines.append(node.lineno)
        elif (isinstance(f, ast.Attribute) and f.attr in ("write", "writelines")
              and isinstance(f.value, ast.Attribute) and f.value.attr in ("stdout", "stderr")
              and isinstance(f.value.value, ast.Name) and f.value.value.id == "sys"):
            lines.append(node.lineno)
    return lines


def test_printing_calls_are_found():
    assert printing_calls("import sys\nprint(1)\nsys.stdout.write('x')\nlog.info('y')\n") == [2, 3]


def test_impl_never_prints():
    root = pathlib.Path(impl.__file__).parent
    found = {str(p.relative_to(root)): lines for p in sorted(root.rglob("*.py"))
             if p.relative_to(root).as_posix() not in COMMANDS and (lines := printing_calls(p.read_text()))}
    assert found == {}

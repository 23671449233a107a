"""The specification names real code: every ``file.py::name`` in specs/ must exist.

specs/invariants.md ties each invariant to tests; if a test is renamed or removed, the table
would silently lie. This keeps it honest, and checks that the invariants are numbered 1..N
with at least one existing test (or an explicit "pending") each.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
REFERENCE = re.compile(r"\b((?:tests|impl|model|fault_injection)/[\w/]+\.py)::(\w+)")


def defined_names(path: Path) -> set[str]:
    """Top-level functions and classes, and methods of top-level classes."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names.update(n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return names


def unresolved(text: str) -> list[str]:
    missing = []
    for file, name in REFERENCE.findall(text):
        path = ROOT / file
        if not path.is_file() or name not in defined_names(path):
            missing.append(f"{file}::{name}")
    return missing


def test_every_code_reference_in_specs_exists():
    docs = sorted(SPECS.glob("*.md"))
    assert docs, "specs/ has no documents"
    missing = {doc.name: unresolved(doc.read_text()) for doc in docs}
    assert not any(missing.values()), missing


def test_invariants_are_numbered_and_each_has_a_test():
    rows = [line for line in (SPECS / "invariants.md").read_text().splitlines()
            if re.match(r"^\| \d+ \|", line)]
    numbers = [int(line.split("|")[1]) for line in rows]
    assert numbers == list(range(1, len(numbers) + 1)), numbers
    assert len(numbers) >= 10, "DESIGN.md section 5 has ten invariants"
    for line in rows:
        tests_column = line.split("|")[3]
        assert REFERENCE.search(tests_column) or "pending:" in tests_column, line


def test_the_check_catches_a_missing_test():
    assert unresolved("tests/stateful/test_specs.py::no_such_test") == ["tests/stateful/test_specs.py::no_such_test"]
    assert unresolved("tests/stateful/test_specs.py::test_every_code_reference_in_specs_exists") == []

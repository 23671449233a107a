"""The README's "Command line" section shows each command's real output.

Its Python block runs in a temporary directory; each ``paimon-py ...`` line of its bash blocks
then runs through ``main(argv)``, and what it prints must be the ``# `` comment lines below it,
up to times, uuids, the warehouse's absolute path and column widths. (tests/spark/test_readme.py
runs the same blocks as written, with the installed ``paimon-py``.)
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from impl.cli import EXIT_OK, main

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Command line"


def section_blocks() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION + "\n")
    end = text.find("\n## ", start + len(SECTION))
    body = text[start:end if end >= 0 else len(text)]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```\s*$", body, re.S | re.M)]


def commands(bash: str) -> list[tuple[list[str], list[str]]]:
    """(argv after ``paimon-py``, the output lines shown under it) of a bash block."""
    out: list[tuple[list[str], list[str]]] = []
    for line in bash.splitlines():
        if line.startswith("#"):
            assert out, f"output before any command: {line!r}"
            out[-1][1].append(line[2:] if line.startswith("# ") else line[1:])
        elif line.startswith("paimon-py "):
            out.append((shlex.split(line, comments=True)[1:], []))
        else:
            assert line.startswith("export PAIMON_WAREHOUSE=") or not line.strip(), line
    return out


def normalized(text: str) -> str:
    text = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?", "<time>", text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
    text = re.sub(r"\S*/cli-warehouse", "<warehouse>", text)
    text = re.sub(r"-{2,}", "--", text)
    return "\n".join(" ".join(line.split()) for line in text.strip("\n").splitlines())


def test_section_is_there_and_names_every_command():
    blocks = section_blocks()
    assert [b[0] for b in blocks] == ["python", "bash", "bash"]
    shown = {argv[0] for _, code in blocks if _ == "bash" for argv, _out in commands(code)}
    shown |= {argv[1] for _, code in blocks if _ == "bash" for argv, _out in commands(code) if argv[0] == "--json"}
    from impl.cli.main import build_parser

    subs = next(a for a in build_parser()._actions if a.dest == "command")
    # each command by its own name (an alias maps to the parser of the name it stands for)
    primary = {name for name, parser in subs.choices.items() if parser.prog.endswith(" " + name)}
    assert len(primary) == 23
    assert primary <= shown, sorted(primary - shown)


def test_every_command_prints_what_the_readme_shows(tmp_path, monkeypatch, capsys):
    pytest.importorskip("duckdb")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PAIMON_WAREHOUSE", "./cli-warehouse")
    namespace: dict[str, object] = {"__name__": "readme_cli"}
    ran = 0
    for language, code in section_blocks():
        if language == "python":
            exec(compile(code, "README.md (Command line)", "exec"), namespace)
            continue
        for argv, shown in commands(code):
            code_ = main(argv)
            out, err = capsys.readouterr()
            assert code_ == EXIT_OK, (argv, err)
            assert normalized(out) == normalized("\n".join(shown)), f"paimon-py {' '.join(argv)}:\n{out}"
            ran += 1
    assert ran >= 20

"""Every command's --help works without the optional libraries, and describes every option with
its default, in plain text.

The commands run in a subprocess whose interpreter refuses to import the optional libraries
(a meta-path finder inserted before anything else is imported), as on a plain ``pip install``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = ("pyspark", "pandas", "rich", "matplotlib", "moto", "s3fs", "boto3", "botocore")

COMMANDS = {
    "simulation": ["-m", "simulation"],
    "demo": ["-m", "impl.demo"],
    "cli": ["-m", "impl.cli"],
    "explore": ["-m", "fault_injection.explore"],
    "conformance": ["-m", "fault_injection.conformance"],
    "spark_cluster": ["-m", "simulation.spark_cluster"],
}

# Refuses the optional libraries, then runs the module named by argv like ``python -m``.
BLOCKER = """
import importlib.abc, runpy, sys
BLOCKED = set(sys.argv[1].split(","))
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".", 1)[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None
sys.meta_path.insert(0, Blocker())
module = sys.argv[2]
sys.argv = [module] + sys.argv[3:]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def run_blocked(module: str, *args: str, blocked: tuple[str, ...] = OPTIONAL) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", BLOCKER, ",".join(blocked), module, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def help_text(name: str) -> str:
    proc = run_blocked(COMMANDS[name][1], "--help")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return proc.stdout


def options_without_help(text: str) -> list[str]:
    """The long options of an argparse help text whose entry has no description."""
    missing = []
    entries = re.split(r"\n(?=  -)", text.split("options:", 1)[1])
    for entry in entries:
        first = entry.strip().split("\n")[0]
        names = re.findall(r"--[a-z0-9-]+", first)
        if not names or names[0] == "--help":
            continue
        # "  --opt VALUE   description" on one line, or the description on the next lines
        described = re.search(r"\S\s{2,}\S", entry.strip()) or len(entry.strip().split("\n")) > 1
        if not described:
            missing.append(names[0])
    return missing


def test_options_without_help_are_found():
    text = "usage: x\n\noptions:\n  -h, --help  show\n  --a A       the a\n  --b B\n  --c C\n              the c\n"
    assert options_without_help(text) == ["--b"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_works_without_optional_libraries_and_describes_every_option(name):
    text = help_text(name)
    assert options_without_help(text) == []
    assert "``" not in text and ":func:" not in text and ":class:" not in text  # no reStructuredText
    # every option with a default shows it ("(default: ...)", as ArgumentDefaultsHelpFormatter writes it)
    for option, default in declared_defaults(name):
        assert f"(default: {default})" in " ".join(text.split()), f"{name} {option}: default {default} not shown"


def declared_defaults(name: str) -> list[tuple[str, object]]:
    """The (option, default) pairs of a command's parser that have a meaningful default."""
    code = f"""
import argparse, json, sys
captured = []
original = argparse.ArgumentParser.parse_args
def capture(self, *a, **k):
    captured.append(self)
    raise SystemExit(0)
argparse.ArgumentParser.parse_args = capture
import runpy
sys.argv = [{COMMANDS[name][1]!r}]
try:
    runpy.run_module({COMMANDS[name][1]!r}, run_name="__main__")
except SystemExit:
    pass
out = []
for action in captured[0]._actions:
    if action.option_strings and action.help is not argparse.SUPPRESS and action.default not in (None, False, "", [], argparse.SUPPRESS):
        out.append((action.option_strings[-1], str(action.default)))
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [tuple(x) for x in json.loads(proc.stdout.strip().splitlines()[-1])]


def test_a_missing_extra_is_named():
    """Without pyspark, ``import impl.spark`` and the main job fail at once, naming the extra."""
    proc = run_blocked("impl.spark", blocked=("pyspark",))
    assert proc.returncode != 0
    assert "MissingExtraError" in proc.stderr and "'spark' extra" in proc.stderr
    proc = run_blocked("simulation", "--commits", "1", blocked=("rich",))
    assert proc.returncode == 2
    assert "'sim' extra" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_blocked("simulation", "--embedded-s3", blocked=("moto",))
    assert proc.returncode == 2
    assert "'s3-server' extra" in proc.stderr
    # paimon-py: plain tables without rich; asking for rich tables, or SQL without duckdb, names the extra
    proc = run_blocked("impl.cli", "--warehouse", "/nonexistent-warehouse", "--style", "rich", "databases",
                       blocked=("rich",))
    assert proc.returncode == 1 and "'cli' extra" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_blocked("impl.cli", "--warehouse", ".", "sql", "select 1", blocked=("duckdb",))
    assert proc.returncode == 1 and "'duckdb' extra" in proc.stderr and "Traceback" not in proc.stderr

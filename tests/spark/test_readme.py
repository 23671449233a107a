"""Every code block of README.md runs as written, top to bottom, against a temporary warehouse.

The Python blocks run in one namespace, in order, with the working directory in a temporary
directory (so ``./warehouse`` is a fresh warehouse there); their Spark lines use the test run's
local session (``impl.spark.session()`` returns the active one). The bash blocks run in that
directory with this interpreter first on PATH.

The S3 blocks name placeholders for the reader's own store. They run against the tests' moto
server (tests/_support/s3_server.py), substituted exactly here and nowhere else:

- ``"http://127.0.0.1:9000"`` -> the server's endpoint;
- ``"fs.s3.accessKeyId": "..."`` / ``"fs.s3.accessKeySecret": "..."`` -> the server's keys;
- ``s3://bucket/`` -> ``s3://<a fresh bucket>/``.

The two set-up commands ("1. Run the main job", "2. Run the tests") build a venv and run the job
or the whole suite: they are not run here. Their test asserts that they are the commands
``.ci/run`` executes (through ``.ci/readme_command.py``), then skips with that reason.

Each Python block also runs alone, twice, in a fresh directory (a reader copies one block, and
runs it again): a block that uses names another block binds says so in its first line
(``# continues ...``) and runs after the blocks that bind them (found by reading the code), the
others run by themselves. What a run leaves in its directory must be ignored by the checkout's
.gitignore, so that running the README in the checkout leaves nothing untracked.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


@dataclass(frozen=True)
class Block:
    language: str
    code: str
    line: int  # of the opening fence in README.md

    @property
    def label(self) -> str:
        return f"README.md:{self.line} ({self.language})"


def readme_blocks(text: str) -> list[Block]:
    """Every fenced block, in order (language, code, line of its opening fence)."""
    return [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in re.finditer(r"^```(\w*)\n(.*?)^```\s*$", text, re.S | re.M)]


def readme_command_module():
    spec = importlib.util.spec_from_file_location("readme_command", ROOT / ".ci" / "readme_command.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def setup_commands(text: str) -> dict[str, str]:
    """The set-up commands, by .ci/readme_command.py's names (main, tests)."""
    module = readme_command_module()
    return {which: module.command(which, text) for which in module.HEADINGS}


def bound_and_free(code: str) -> tuple[set[str], set[str]]:
    """The names a block binds (assignments, imports, loop and except targets) and the names it
    reads without binding them (neither bound in it nor builtins)."""
    bound: set[str] = set()
    loaded: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else loaded).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, loaded - bound - set(dir(builtins))


def python_blocks() -> list[Block]:
    return [b for b in readme_blocks(README.read_text()) if b.language == "python"]


def chain(blocks: list[Block], block: Block) -> list[Block]:
    """``block`` after the blocks it continues, in README order: the names it reads without
    binding come from the earlier block that binds the most of them (the nearest of equals),
    the rest likewise, and those blocks' own names in turn."""
    index = blocks.index(block)
    needed = {index}
    todo = [index]
    while todo:
        i = todo.pop()
        free = set(bound_and_free(blocks[i].code)[1])
        while free:
            j = max(range(i), key=lambda j: (len(free & bound_and_free(blocks[j].code)[0]), j), default=None)
            assert j is not None and free & bound_and_free(blocks[j].code)[0], \
                f"{blocks[i].label} reads {sorted(free)}, which no earlier block binds"
            free -= bound_and_free(blocks[j].code)[0]
            if j not in needed:
                needed.add(j)
                todo.append(j)
    return [blocks[i] for i in sorted(needed)]


def test_blocks_are_found():
    text = "a\n```python\nx = 1\n```\nb\n```bash\necho hi\n```\n"
    assert readme_blocks(text) == [Block("python", "x = 1\n", 2), Block("bash", "echo hi\n", 6)]


def test_every_block_is_python_or_bash():
    blocks = readme_blocks(README.read_text())
    assert blocks and {b.language for b in blocks} == {"python", "bash"}


@pytest.mark.parametrize("which", ["main", "tests"])
def test_setup_command_is_what_ci_runs(which):
    text = README.read_text()
    command = setup_commands(text)[which]
    assert command in [b.code.strip() for b in readme_blocks(text) if b.language == "bash"]
    assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install --upgrade pip && ")
    ci = (ROOT / ".ci" / "run").read_text()
    if which == "tests":
        assert "python3 .ci/readme_command.py tests" in ci  # .ci/run runs this very command
    pytest.skip(f"the {which!r} set-up command builds a venv and runs "
                f"{'the main job' if which == 'main' else 'the whole suite'}; .ci/run runs the README's commands")


def s3_substituted(code: str, endpoint: str, bucket: str) -> str:
    """The block with the README's S3 placeholders replaced by the test server's (module docstring)."""
    from s3_server import ACCESS_KEY, SECRET_KEY

    code = code.replace('"http://127.0.0.1:9000"', repr(endpoint))
    code = code.replace('"fs.s3.accessKeyId": "..."', f'"fs.s3.accessKeyId": {ACCESS_KEY!r}')
    code = code.replace('"fs.s3.accessKeySecret": "..."', f'"fs.s3.accessKeySecret": {SECRET_KEY!r}')
    return code.replace("s3://bucket/", f"s3://{bucket}/")


def run_bash(block: Block, cwd: Path) -> None:
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"{block.label} failed:\n{block.code}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


def test_every_block_runs_top_to_bottom(spark, s3_server, tmp_path, monkeypatch):
    text = README.read_text()
    setup = set(setup_commands(text).values())
    bucket = s3_server.new_bucket("readme")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    ran, substituted = [], []
    for block in readme_blocks(text):
        if block.code.strip() in setup:
            continue  # test_setup_command_is_what_ci_runs
        if block.language == "bash":
            run_bash(block, tmp_path)
        else:
            code = s3_substituted(block.code, s3_server.endpoint, bucket)
            if code != block.code:
                substituted.append(block.line)
            try:
                exec(compile(code, block.label, "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"{block.label} failed: {type(e).__name__}: {e}\n{code}") from e
        ran.append(block.line)
    assert len(ran) == len(readme_blocks(text)) - 2
    assert len(substituted) == 2  # both S3 blocks reached the test server, not a placeholder

    # what the blocks left behind is what their comments say
    import impl

    local = impl.Catalog("./warehouse")
    assert local.list_databases() == ["db", "demo"]
    t = local.get_table("db.t")
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 3]  # rolled back to v1, then dev's row
    assert local.get_table("db.evolving").schema.field_names == ["id", "value", "c"]  # the schema evolution block
    assert local.get_table("db.events").to_arrow().num_rows == 2
    # the Spark block's full compaction committed one COMPACT snapshot (the default one: nothing to do)
    assert [s.commit_kind.value for s in local.get_table("db.events").snapshots()][:3] == \
        ["APPEND", "APPEND", "COMPACT"]
    assert [s.commit_kind.value for s in local.get_table("db.core").snapshots()] == ["APPEND"]
    # the S3 blocks wrote to the test's store
    s3_cat = impl.Catalog(f"s3://{bucket}/warehouse", options=namespace["opts"])
    assert s3_cat.get_table("db.t").to_arrow().num_rows == 2


def test_a_block_that_continues_another_says_so():
    for block in python_blocks():
        continues = block.code.startswith("# continues ")
        free = bound_and_free(block.code)[1]
        assert continues == bool(free), (f"{block.label} reads {sorted(free)} from other blocks: its first line says "
                                         "'# continues ...'" if free else f"{block.label} continues nothing")


def needs(block_chain: list[Block]) -> set[str]:
    """What a chain of blocks needs from the test run: spark, ray, s3."""
    code = "".join(b.code for b in block_chain)
    return {need for need, mark in (("spark", "impl.spark"), ("ray", "impl.ray"), ("s3", "s3://")) if mark in code}


def run_alone_twice(block: Block, tmp_path: Path, monkeypatch, request) -> None:
    blocks = python_blocks()
    run = chain(blocks, block)
    need = needs(run)
    if "spark" in need:
        request.getfixturevalue("spark")  # the session's Spark, shared: impl.spark.session() returns it
    if "ray" in need:
        pytest.importorskip("ray")
        # the block's ray.init starts the workers; they import this checkout's impl through the raylet's environment
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    endpoint = bucket = None
    if "s3" in need:
        server = request.getfixturevalue("s3_server")
        endpoint, bucket = server.endpoint, server.new_bucket("alone")
    work = tmp_path / "fresh"
    work.mkdir()
    monkeypatch.chdir(work)
    for attempt in ("first run", "second run"):
        namespace: dict[str, object] = {"__name__": "readme"}
        for b in run:
            code = s3_substituted(b.code, endpoint, bucket) if endpoint else b.code
            try:
                exec(compile(code, b.label, "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"{block.label} alone ({attempt}; ran {[x.line for x in run]}): {b.label} "
                                     f"failed: {type(e).__name__}: {e}\n{code}") from e
    left = sorted(p.name + ("/" if p.is_dir() else "") for p in work.iterdir())
    proc = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"], input="\n".join(left),
                          capture_output=True, text=True)
    ignored = set(proc.stdout.split())
    assert [n for n in left if n not in ignored] == [], f"{block.label} leaves files .gitignore does not ignore"


def plain_blocks() -> list[Block]:
    return [b for b in python_blocks() if not needs(chain(python_blocks(), b)) & {"spark", "ray"}]


def engine_blocks() -> list[Block]:
    return [b for b in python_blocks() if b not in plain_blocks()]


@pytest.mark.parametrize("block", plain_blocks(), ids=lambda b: f"line{b.line}")
def test_each_block_runs_alone_twice_in_a_fresh_directory(block, tmp_path, monkeypatch, request):
    run_alone_twice(block, tmp_path, monkeypatch, request)


# Spark and Ray blocks, alone and twice, are minutes of jobs (the same blocks run once, top to
# bottom, in CI above): python -m pytest -m large tests/spark/test_readme.py
@pytest.mark.large
@pytest.mark.parametrize("block", engine_blocks(), ids=lambda b: f"line{b.line}")
def test_each_spark_or_ray_block_runs_alone_twice_in_a_fresh_directory(block, tmp_path, monkeypatch, request):
    run_alone_twice(block, tmp_path, monkeypatch, request)
